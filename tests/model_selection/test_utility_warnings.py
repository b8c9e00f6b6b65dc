"""A configuration whose release would say next to nothing is flagged before any data is read (issue 11)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.exceptions import LowUtilityWarning
from privtune.model_selection._utility import utility_warnings
from privtune.space import Real

SPACE = {"C": Real(0.1, 10.0, log=True)}


@pytest.mark.parametrize("method", ["random", "noisy-ucb"])
def test_plan_warns_in_the_random_pick_regime_and_not_at_real_budgets(method):
    small = PrivateSearchCV(SVC(), SPACE, method=method, epsilon=0.1, n_iter=20).privacy_plan(160)
    assert small["warnings"] and all(isinstance(w, str) for w in small["warnings"])
    real = PrivateSearchCV(SVC(), SPACE, method=method, epsilon=1.0, n_iter=20).privacy_plan(1000)
    assert real["warnings"] == []


def test_thresholds():
    assert utility_warnings({"selection_em_weight_per_score_unit": 10.0}, (0.0, 1.0))  # 5 % gap: e^0.5 < 2
    assert not utility_warnings({"selection_em_weight_per_score_unit": 20.0}, (0.0, 1.0))  # e^1 > 2
    assert utility_warnings({"score_noise_std": 0.3}, (0.0, 1.0))
    assert not utility_warnings({"score_noise_std": 0.2}, (0.0, 1.0))
    assert not utility_warnings({"score_noise_std": 0.3}, (-4.0, 0.0))  # relative to the declared range


class _Recorder(ClassifierMixin, BaseEstimator):
    """Counts the warnings already issued when it is first fitted."""

    seen: list[int] = []

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def fit(self, X, y):
        _Recorder.seen.append(len(_Recorder.log))
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    log: list = []


def test_fit_warns_before_reading_any_data():
    """``random`` warns before its first fit (``prescreen`` warns after its free public screening, before any
    validation row: tests/model_selection/test_prescreen_cost.py)."""
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    _Recorder.seen.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LowUtilityWarning)
        _Recorder.log = caught
        PrivateSearchCV(_Recorder(), SPACE, method="random", epsilon=0.05, n_iter=5, validation_size=0.5,
                        random_state=0).fit(X, y)
    low = [w for w in caught if issubclass(w.category, LowUtilityWarning)]
    assert low and "random pick" in str(low[0].message)
    assert _Recorder.seen and _Recorder.seen[0] >= 1  # the warning came before the first fit
