"""Every warning of ``PrivateSearchCV.fit`` names the line that called ``fit``, as scikit-learn's warnings do."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from privtune import PrivateSearchCV
from privtune.linear_model import DPLogisticRegression
from privtune.space import Categorical, Real


class _FailsForOdd(ClassifierMixin, BaseEstimator):
    def __init__(self, k: int = 0) -> None:
        self.k = k

    def fit(self, X, y):
        if self.k % 2:
            raise ValueError("odd k cannot be fitted")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] > 0).astype(int)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=240) > 0).astype(int)
    return X[:160], y[:160], X[160:], y[160:]


SEARCHES = {
    "pre-flight failure": lambda: PrivateSearchCV(
        _FailsForOdd(), {"k": Categorical([1, 2, 3])}, method="random", n_candidates=0,
        candidate_grid=[{"k": 1}, {"k": 3}, {"k": 2}], n_iter=2, random_state=0),
    "screening failure": lambda: PrivateSearchCV(
        _FailsForOdd(), {"k": Categorical(list(range(10)))}, n_candidates=10, n_iter=3, random_state=0),
    "low utility, public training rows": lambda: PrivateSearchCV(
        LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, method="random", epsilon=1e-3, n_iter=4,
        n_candidates=16, random_state=0),
    "low utility, prescreen": lambda: PrivateSearchCV(
        LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, epsilon=1e-3, n_iter=4, n_candidates=16,
        random_state=0),
    "low utility, sensitive training rows": lambda: PrivateSearchCV(
        DPLogisticRegression(epsilon=0.02, classes=[0, 1], data_norm=3.0), {"C": Real(0.01, 10.0, log=True)},
        method="random", sensitive="both", epsilon=0.1, n_iter=2, n_candidates=8, random_state=0),
}


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_warnings_name_the_line_that_called_fit(name):
    X_tr, y_tr, X_v, y_v = _data()
    search = SEARCHES[name]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)  # the line every warning must name
    ours = [w for w in caught if "privtune" in type(w.message).__module__ or "FitFailed" in w.category.__name__]
    assert ours, "the scenario must warn"
    for w in ours:
        assert w.filename == __file__, (w.category.__name__, w.filename, w.lineno)
