"""``method="prescreen"``: screening on public training rows only, then random's private selection (issue 11)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_breast_cancer
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.space import Real

SPACE = {"C": Real(1e-2, 1e3, log=True)}


class Threshold(ClassifierMixin, BaseEstimator):
    """Predicts 1 when feature 0 exceeds log10(C): on the training rows, C near 1 is best (public, known)."""

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] > np.log10(self.C)).astype(int)


def _data(seed=0, n=600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (X[:, 0] > 0).astype(int)


def test_kept_candidates_are_the_best_on_the_training_rows_and_ignore_the_validation_rows():
    X, y = _data()
    Xv, yv = _data(1, 200)
    search = PrivateSearchCV(Threshold(), SPACE, method="prescreen", epsilon=1.0, n_iter=5, n_candidates=64,
                             random_state=0)
    search.fit(X, y, X_val=Xv, y_val=yv)
    kept = [p["C"] for p in search.candidates_.params]
    assert len(kept) == 5 and search.release_.diagnostics["prescreen"]["kept"] == 5
    assert max(abs(np.log10(c)) for c in kept) < 1.0  # the screened winners sit around C = 1 (threshold 0)
    # an adversarial validation set (labels flipped, values replaced) leaves the kept set unchanged
    again = PrivateSearchCV(Threshold(), SPACE, method="prescreen", epsilon=1.0, n_iter=5, n_candidates=64,
                            random_state=0)
    again.fit(X, y, X_val=Xv * 1000.0, y_val=1 - yv)
    assert [p["C"] for p in again.candidates_.params] == kept
    np.testing.assert_array_equal(again.candidates_.X, search.candidates_.X)


def test_costs_what_random_costs_and_says_so():
    X, y = load_breast_cancer(return_X_y=True)
    kwargs = dict(epsilon=0.7, n_iter=6, n_candidates=32, validation_size=0.3, random_state=1)
    pre = PrivateSearchCV(SVC(random_state=0), SPACE, method="prescreen", **kwargs).fit(X, y)
    ran = PrivateSearchCV(SVC(random_state=0), SPACE, method="random", **kwargs).fit(X, y)
    assert [e.event.to_dict() for e in pre.ledger_] == [e.event.to_dict() for e in ran.ledger_]
    assert pre.guarantee_ == "unconditional" and pre.privacy_spent_ == ran.privacy_spent_
    assert pre.privacy_plan(170)["total"] == ran.privacy_plan(170)["total"]
    assert "public training rows" in pre.report_.to_dict()["candidates"]["source"]


@pytest.mark.parametrize("kwargs", [dict(sensitive="both"), dict(sensitive="training"),
                                    dict(sensitive="both", cv=3)])
def test_refused_when_the_training_rows_are_sensitive(kwargs):
    X, y = _data()
    search = PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), SPACE, method="prescreen",
                             n_iter=3, validation_size=0.3, **kwargs)
    with pytest.raises(InvalidParameterError, match="public training rows"):
        search.fit(X, y)


def test_keep_and_screen_parameters_are_checked():
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="keep"):
        PrivateSearchCV(Threshold(), SPACE, method="prescreen", n_iter=5, method_params={"keep": 2},
                        validation_size=0.3).fit(X, y)
    wide = PrivateSearchCV(Threshold(), SPACE, method="prescreen", n_iter=3, n_candidates=32, validation_size=0.3,
                           method_params={"keep": 8, "screen_size": 16, "screen_cv": 2}, random_state=0).fit(X, y)
    assert len(wide.candidates_) == 8 and wide.release_.diagnostics["prescreen"]["screened"] == 16


def test_default_method_auto_resolves_from_public_parameters():
    """``method="auto"`` (the default) is prescreen with public training rows apart from validation, else random."""
    X, y = _data(3)
    search = PrivateSearchCV(Threshold(), SPACE, epsilon=1.0, n_iter=5, random_state=0)
    assert search.method == "auto" and search.privacy_plan(300)["method"] == "prescreen"
    search.fit(X[:300], y[:300], X_val=X[300:], y_val=y[300:])
    assert search.method_ == "prescreen" and search.report_.to_dict()["method"] == "prescreen"
    # an explicit random-only selection keeps random
    stop = PrivateSearchCV(Threshold(), SPACE, epsilon=1.0, delta=1e-6, n_iter=5,
                           method_params={"selection": "exponential"})
    assert stop.privacy_plan(300)["method"] == "random"
    # sensitive training rows (or cv): random, never a screening that would read them without privacy
    for kw in ({"sensitive": "both"}, {"sensitive": "both", "cv": 3}):
        both = PrivateSearchCV(DPLogisticRegression(epsilon=0.05, classes=[0, 1]), {"C": Real(0.1, 10.0, log=True)},
                               epsilon=1.0, delta=1e-6, n_iter=3, **kw)
        assert both.privacy_plan(300)["method"] == "random"
    both.fit(X, y)
    assert both.method_ == "random"
