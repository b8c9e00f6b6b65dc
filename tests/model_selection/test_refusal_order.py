"""Refusals that must leave nothing behind (found by a review of issue 37's changes)."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.space import Real


def _rows(n=400):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None]
    return X, (X[:, 0] > 0).astype(int)


def test_a_validation_plan_the_search_cannot_pay_charges_the_estimators_accountant_nothing():
    X, y = _rows()
    own = Accountant(Budget(100.0, 1e-3))
    val = Accountant(Budget(1.0, 1e-5))
    s = PrivateSearchCV(DPLogisticRegression(epsilon=0.5, accountant=own, classes=[0, 1]),
                        {"C": Real(0.1, 10, log=True)}, method="random", n_iter=3, epsilon=1.0, sensitive="both",
                        validation_size=0.3, accountant=val)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.fit(X, y)
    spent, entries = own.spent, len(own.ledger)
    with pytest.raises(BudgetExceededError):
        s.fit(X, y)  # the validation accountant is spent: refused before the estimator's accountant is charged
    assert own.spent == spent and len(own.ledger) == entries


def test_an_epsilon_refused_up_front_leaves_no_study_behind(tmp_path):
    X, y = _rows(300)
    path = tmp_path / "s.sqlite"

    def search(eps):
        return PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10, log=True)}, method="random", n_iter=3,
                               epsilon=eps, validation_size=0.3, random_state=0, storage=path, study_name="x")

    with pytest.raises(InvalidParameterError, match="accepts epsilon in"):
        search(1e-300).fit(X, y)
    s = search(1.0).fit(X, y)  # the name was locked to the refused configuration
    assert s.privacy_spent_["validation"].epsilon == pytest.approx(1.0)
