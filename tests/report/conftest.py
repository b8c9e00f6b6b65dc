"""Fixtures of the report tests: small seeded SVC searches on breast cancer with a held-out validation set."""

from __future__ import annotations

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.space import Real

SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}
SEED = 7


@pytest.fixture(scope="session")
def data():
    """(X_train, y_train, X_val, y_val): the validation rows are the sensitive ones."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_tr, X_val, y_tr, y_val = train_test_split(X, y, test_size=0.3, random_state=0)
    return X_tr, y_tr, X_val, y_val


def fit_search(data, method: str, *, random_state=SEED, **kwargs) -> PrivateSearchCV:
    """A small seeded PrivateSearchCV fitted with an explicit sensitive validation set."""
    X_tr, y_tr, X_val, y_val = data
    params = {"epsilon": 1.0, "delta": 1e-6, "n_iter": 6, "n_candidates": 32, "random_state": random_state}
    params.update(kwargs)
    search = PrivateSearchCV(SVC(random_state=0), SPACE, method=method, **params)
    return search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)


@pytest.fixture(scope="session")
def searches(data):
    """One fitted search per method used by the tests (session-wide: fitting is the slow part)."""
    return {m: fit_search(data, m) for m in ("random", "noisy-ucb", "gp-ucb")}


@pytest.fixture(scope="session")
def fit(data):
    """``fit(method, **kwargs)``: fit a fresh search (for reruns and custom scorers)."""
    return lambda method, **kwargs: fit_search(data, method, **kwargs)
