"""Subsampled tuning (method_params={"subsample": q}): random stopping on a secret subset, then one fit on all rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import PrivateSearchCV
from privtune.accounting import LaplaceEvent, SubsampledEvent, compose_events
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.model_selection import _subsampling
from privtune.space import Categorical

SIZES: list[int] = []  # the number of rows each fit read


class RowCounter(ClassifierMixin, BaseEstimator):
    """A declared pure-epsilon DP fit that records how many rows it read (its output does not depend on them)."""

    def __init__(self, epsilon=0.2, c=1.0, classes=(0, 1), accountant=None, relation="replace_one"):
        self.epsilon = epsilon
        self.c = c
        self.classes = classes
        self.accountant = accountant
        self.relation = relation

    def __privtune_tags__(self):
        return PrivacyTags(covers="rows", classes_param="classes")

    def _fit_privacy_event(self):
        return LaplaceEvent(epsilon=self.epsilon, relation=self.relation, label="one RowCounter fit")

    def fit(self, X, y):
        if self.accountant is not None:
            self.accountant.spend(LaplaceEvent(epsilon=self.epsilon, relation=self.relation), phase="fit",
                                  role="training")
        SIZES.append(len(X))
        self.classes_ = np.asarray(self.classes)
        self.w_ = float(self.c)
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] * self.w_ > 0).astype(int)


SPACE = {"c": Categorical([-1.0, 0.5, 1.0, 2.0])}


def _data(n=200, m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + m, 2))
    y = (X[:, 0] > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _search(q=0.25, **kw):
    params = {"selection": "random-stopping", "subsample": q}
    kw.setdefault("estimator", RowCounter())
    return PrivateSearchCV(kw.pop("estimator"), SPACE, method="random", method_params=params,
                           sensitive=kw.pop("sensitive", "training"), epsilon=kw.pop("epsilon", 5.0),
                           n_iter=kw.pop("n_iter", 4), random_state=kw.pop("random_state", 0), **kw)


def test_runs_fit_the_secret_subset_and_the_released_model_all_rows():
    X, y, Xv, yv = _data()
    SIZES.clear()
    search = _search(q=0.25).fit(X, y, X_val=Xv, y_val=yv)
    assert SIZES[:-1] and set(SIZES[:-1]) == {50}  # floor(0.25 * 200) rows in every run
    assert SIZES[-1] == 200  # the refit: all the training rows
    assert search.best_estimator_.w_ == search.best_params_["c"]
    # the plan: the amplified tuning phase and the refit, charged before the first fit
    phases = [e.phase for e in search.training_accountant_.entries]
    assert phases == ["selection (random stopping)", "refit"]
    tuning = search.training_accountant_.entries[0].event
    assert isinstance(tuning, SubsampledEvent) and (tuning.sample_size, tuning.dataset_size) == (50, 200)
    assert search.privacy_spent_["training"].epsilon <= 5.0 * (1 + 1e-9)
    assert search.privacy_spent_["validation"].epsilon == 0.0


def test_a_seeded_run_draws_the_same_subset_and_release():
    X, y, Xv, yv = _data()
    a = _search(random_state=3).fit(X, y, X_val=Xv, y_val=yv)
    b = _search(random_state=3).fit(X, y, X_val=Xv, y_val=yv)
    assert a.best_params_ == b.best_params_ and a.best_score_ == b.best_score_


def test_the_tuning_phase_costs_less_than_on_all_rows_and_the_plan_says_so():
    X, y, Xv, yv = _data()
    sub = _search(q=0.1)
    plan = sub.privacy_plan(len(yv), n_train=len(y))
    assert set(plan["training_phases"]) == {"selection (random stopping)", "refit"}
    full = PrivateSearchCV(RowCounter(), SPACE, method="random", method_params={"selection": "random-stopping"},
                           sensitive="training", epsilon=5.0, n_iter=4, random_state=0)
    whole = full.privacy_plan(len(yv))["training_phases"]["selection (random stopping)"].epsilon
    assert plan["training_phases"]["selection (random stopping)"].epsilon < 0.5 * whole
    # the per-fit epsilon it affords, and fit accepts it
    eps = sub.largest_fit_epsilon(len(yv), n_train=len(y))
    sub.set_params(estimator__epsilon=eps).fit(X, y, X_val=Xv, y_val=yv)
    assert sub.privacy_spent_["training"].epsilon <= 5.0 * (1 + 1e-9)
    with pytest.raises(InvalidParameterError, match="n_train"):
        _search().privacy_plan(len(yv))


def test_a_real_dp_estimator_end_to_end():
    X, y, Xv, yv = _data(n=400)
    X = X / np.linalg.norm(X, axis=1).max()
    Xv = Xv / max(1.0, np.linalg.norm(Xv, axis=1).max())
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1], epsilon=0.5), {"C": [0.1, 1.0, 10.0]},
                             method_params={"selection": "random-stopping", "subsample": 0.2},
                             sensitive="training", epsilon=2.0, n_iter=3, random_state=1)
    search.fit(X, y, X_val=Xv, y_val=yv)
    assert search.best_params_["C"] in (0.1, 1.0, 10.0)
    assert search.score(Xv, yv) >= 0.5
    total = compose_events([e.event for e in search.training_accountant_.entries], delta=search.delta)
    assert total.epsilon <= 2.0 * (1 + 1e-9)


@pytest.mark.parametrize(("kw", "match"), [
    ({"sensitive": "both"}, "sensitive='training'"),
    ({"sensitive": "validation"}, "sensitive='training'"),
    ({"q": 0.0}, "subsample"),
    ({"q": 1.0}, "subsample"),
    ({"estimator": RowCounter(relation="add_remove")}, "replace_one"),
])
def test_refused_before_anything_is_read(kw, match):
    X, y, Xv, yv = _data()
    SIZES.clear()
    with pytest.raises(InvalidParameterError, match=match):
        _search(**kw).fit(X, y, X_val=Xv, y_val=yv)
    assert SIZES == []


def test_refused_without_random_stopping_or_with_cv_or_too_few_rows():
    X, y, Xv, yv = _data()
    plain = PrivateSearchCV(RowCounter(), SPACE, method="random", method_params={"subsample": 0.2},
                            sensitive="training", epsilon=5.0, n_iter=4, delta=0.0)  # delta 0: no random stopping
    with pytest.raises(InvalidParameterError, match="random stopping"):
        plain.fit(X, y, X_val=Xv, y_val=yv)
    with pytest.raises(InvalidParameterError, match="cv"):
        PrivateSearchCV(RowCounter(), SPACE, method_params={"selection": "random-stopping", "subsample": 0.2},
                        sensitive="both", cv=3, epsilon=5.0, n_iter=4).fit(X, y)
    SIZES.clear()
    with pytest.raises(InvalidParameterError, match="at least 2"):
        _search(q=0.005).fit(X, y, X_val=Xv, y_val=yv)
    assert SIZES == []


def test_nothing_about_the_subset_reaches_the_outputs(monkeypatch):
    """The secret subset (which rows the runs read) is kept nowhere: no attribute of the fitted search, its pickle
    or its report holds its indices; the report states only its public size."""
    import pickle

    from privtune.model_selection import _evaluation

    drawn = []

    def recording(source, n, m):
        drawn.append(_subsampling.draw_subset(source, n, m))
        return drawn[-1]

    monkeypatch.setattr(_evaluation, "draw_subset", recording)
    X, y, Xv, yv = _data()
    search = _search().fit(X, y, X_val=Xv, y_val=yv)
    (subset,) = drawn
    assert len(subset) == 50 and len(np.unique(subset)) == 50 and subset.max() < 200
    report = search.report_.to_markdown() + json.dumps(search.report_.to_dict(), default=str)
    assert "secret subset of 50 of 200" in report  # the plan's public label, in the report's ledger
    assert ", ".join(map(str, subset[:4])) not in report and str(subset[:4].tolist())[1:-1] not in report
    held = [v for v in vars(search).values() if isinstance(v, np.ndarray)]
    held += [v for v in search.cv_results_.values() if isinstance(v, np.ndarray)]
    assert not any(v.shape == subset.shape and np.array_equal(np.sort(v.ravel()), subset) for v in held)
    blob = pickle.dumps(search)
    assert subset.astype(np.int64).tobytes() not in blob


def test_a_pandas_frame_and_a_category_target():
    pd = pytest.importorskip("pandas")
    X, y, Xv, yv = _data(n=300)
    scale = np.linalg.norm(np.r_[X, Xv], axis=1).max()
    cols = ["a", "b"]
    labels = np.array(["no", "yes"])
    Xf, Xvf = pd.DataFrame(X / scale, columns=cols), pd.DataFrame(Xv / scale, columns=cols)
    yf = pd.Series(pd.Categorical(labels[y], categories=["no", "yes"]))
    yvf = pd.Series(pd.Categorical(labels[yv], categories=["no", "yes"]))
    search = PrivateSearchCV(DPLogisticRegression(classes=["no", "yes"], epsilon=0.5), {"C": [0.1, 1.0, 10.0]},
                             method_params={"selection": "random-stopping", "subsample": 0.25},
                             sensitive="training", epsilon=2.0, n_iter=3, random_state=4)
    search.fit(Xf, yf, X_val=Xvf, y_val=yvf)
    assert set(search.predict(Xvf)) <= {"no", "yes"}
    assert search.training_accountant_.entries[0].event.sample_size == 75
