"""One budget, one ledger: accountants sharing a ledger, copies and pickles of an accountant.

Audit findings: (R1) two ``Accountant`` objects on one ledger object each enforced the budget against
their own charges only, so 0.8 + 0.8 was spent against a budget of 1.0; (clone) an accountant deep-copied
by scikit-learn's ``clone`` (``cross_val_score`` clones the estimator for every fold) became a second,
independent budget, and the user's accountant recorded nothing; an accountant pickled to another process
could spend the same budget again.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

from privtune.accounting import Accountant, Budget, InMemoryLedger, LaplaceEvent, SQLiteLedger
from privtune.accounting.ledger import DetachedLedger
from privtune.exceptions import BudgetExceededError, LedgerError


def _ledgers(tmp_path):
    return [InMemoryLedger(), SQLiteLedger(tmp_path / "one.sqlite", study="s")]


@pytest.mark.parametrize("kind", [0, 1], ids=["in_memory", "sqlite"])
def test_two_accountants_on_one_ledger_share_its_budget(tmp_path, kind):
    led = _ledgers(tmp_path)[kind]
    a, b = Accountant(Budget(1.0), ledger=led), Accountant(Budget(1.0), ledger=led)
    a.spend(LaplaceEvent(epsilon=0.8))
    assert b.spent.epsilon == pytest.approx(0.8) and len(b) == 1  # b counts a's charge
    with pytest.raises(BudgetExceededError):
        b.spend(LaplaceEvent(epsilon=0.8))
    with pytest.raises(BudgetExceededError):
        b.check(LaplaceEvent(epsilon=0.8))
    b.spend(LaplaceEvent(epsilon=0.2))
    assert len(led) == 2 and a.spent.epsilon == pytest.approx(1.0)
    assert Accountant(Budget(10.0), ledger=led).spent.epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("kind", [0, 1], ids=["in_memory", "sqlite"])
def test_ledger_append_is_a_compare_and_swap(tmp_path, kind):
    led = _ledgers(tmp_path)[kind]
    led.append(LaplaceEvent(epsilon=0.1), expected_index=0)
    with pytest.raises(LedgerError, match="in between"):
        led.append(LaplaceEvent(epsilon=0.1), expected_index=0)  # a stale view: refused, nothing recorded
    assert len(led) == 1
    assert led.append(LaplaceEvent(epsilon=0.1), expected_index=1).index == 1


def test_a_stale_accountant_cannot_record_a_charge(tmp_path):
    """The accountant passes the count its check saw; a ledger that grew after the check refuses the charge."""
    led = InMemoryLedger()
    a, b = Accountant(Budget(1.0), ledger=led), Accountant(Budget(1.0), ledger=led)
    b_state = b._state
    a.spend(LaplaceEvent(epsilon=0.8))
    b._synced = lambda: b_state  # b's check runs on the view it had before a's charge (a race)
    with pytest.raises(LedgerError):
        b.spend(LaplaceEvent(epsilon=0.8))
    assert len(led) == 1


def test_a_second_sqlite_handle_on_the_same_study_cannot_append(tmp_path):
    path = tmp_path / "two.sqlite"
    first, second = SQLiteLedger(path, study="s"), SQLiteLedger(path, study="s")
    first.append(LaplaceEvent(epsilon=0.5))
    with pytest.raises(LedgerError):
        Accountant(Budget(1.0), ledger=second).spend(LaplaceEvent(epsilon=0.8))
    assert len(SQLiteLedger(path, study="s")) == 1


def test_a_deep_copied_accountant_is_the_same_budget():
    acc = Accountant(Budget(1.0))
    assert copy.deepcopy(acc) is acc and copy.copy(acc) is acc
    holder = copy.deepcopy({"accountant": acc, "other": [1]})
    assert holder["accountant"] is acc


def test_clone_and_cross_val_score_charge_the_users_accountant():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from privtune.linear_model import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X = X / np.abs(X).sum(1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(100.0, 1e-5))
    est = DPLogisticRegression(epsilon=1.0, delta=1e-7, classes=[0, 1], accountant=acc, random_state=0)
    assert clone(est).accountant is acc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cross_val_score(est, X, y, cv=3)
    assert len(acc) == 3  # every fold's fit is charged to the one budget (was 0)
    tight = Accountant(Budget(1.0, 1e-6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_val_score(est.set_params(accountant=tight), X, y, cv=3)
    assert len(tight) == 1 and np.isnan(scores).sum() == 2  # the budget pays for one fit; the others refused


@pytest.mark.parametrize("kind", [0, 1], ids=["in_memory", "sqlite"])
def test_a_pickled_accountant_reports_but_cannot_spend(tmp_path, kind):
    acc = Accountant(Budget(1.0), ledger=_ledgers(tmp_path)[kind])
    acc.spend(LaplaceEvent(epsilon=0.5), phase="p")
    again = pickle.loads(pickle.dumps(acc))
    assert again.spent == acc.spent and again.spent_by_phase() == acc.spent_by_phase()
    assert isinstance(again.ledger, DetachedLedger)
    with pytest.raises(LedgerError, match="read-only snapshot"):
        again.spend(LaplaceEvent(epsilon=0.5))  # a second copy of the budget: refused, nothing spent
    assert again.spent == acc.spent
    acc.spend(LaplaceEvent(epsilon=0.5))  # the original still spends
    assert acc.spent.epsilon == pytest.approx(1.0)
