"""The estimator's own ``accountant`` with sensitive training rows (issue 37, item 4).

Each fit of a training-sensitive search charges a throw-away prepaid accountant (the plan is paid up front), so the
accountant the user gave the estimator was silently bypassed: ``DPLogisticRegression(accountant=cap)`` stayed at 0
while three searches spent 3 x 0.54 on its rows. The search now charges its whole training plan to that accountant
too, before the first fit reads a row, so it works as a cap shared across searches on the same rows.
"""

import math

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from privtune import BudgetExceededError, InvalidParameterError, PrivateSearchCV
from privtune.accounting import Accountant, Budget, EpsilonDeltaEvent, LaplaceEvent
from privtune.base import PrivacyTags
from privtune.exceptions import LedgerError
from privtune.space import Categorical, Real

FITS: list[int] = []  # what the test (not the search's outputs) can see: how many fits ran


class CappedDP(ClassifierMixin, BaseEstimator):
    """Declares a pure-epsilon fit and charges its accountant with it (not private itself: the search is tested)."""

    def __init__(self, epsilon=0.1, c=1.0, classes=(0, 1), accountant=None, clip="rows"):
        self.epsilon = epsilon
        self.c = c
        self.classes = classes
        self.accountant = accountant
        self.clip = clip

    def __privtune_tags__(self):
        return PrivacyTags(covers="rows", classes_param="classes", raises_on_rows=self.clip == "raise")

    def _fit_privacy_event(self):
        return EpsilonDeltaEvent(epsilon=self.epsilon, label="one CappedDP fit")

    def fit(self, X, y):
        acc = self.accountant if self.accountant is not None else Accountant(Budget(self.epsilon, 0.0))
        acc.spend(LaplaceEvent(epsilon=self.epsilon), phase="fit", role="training")
        FITS.append(1)
        self.accountant_ = acc
        self.classes_ = np.asarray(self.classes)
        self.w_ = float(self.c)
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] * self.w_ > 0).astype(int)


SPACE = {"c": Categorical([-1.0, 0.5, 1.0, 2.0])}


def _data(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    return X[: n // 2], y[: n // 2], X[n // 2:], y[n // 2:]


def _search(cap, **kw):
    kw = {"sensitive": "both", "epsilon": 1.0, "delta": 1e-6, "n_iter": 3, "n_candidates": 4, "random_state": 0,
          **kw}
    return PrivateSearchCV(CappedDP(epsilon=0.1, accountant=cap), SPACE, **kw)


@pytest.mark.parametrize("kw", [
    {},  # random, exponential selection: n_iter fits, no refit
    {"method": "gp-ucb", "n_iter": 2},  # a refit is a new fit
    {"method": "noisy-ucb", "n_iter": 2},
    {"method_params": {"selection": "random-stopping"}},  # one RepeatAndSelectEvent
    {"cv": 2, "n_iter": 2},  # overlapping roles, split budget
], ids=["random", "gp-ucb", "noisy-ucb", "random-stopping", "cv"])
def test_the_estimators_own_accountant_is_charged_the_whole_training_plan(kw):
    X_tr, y_tr, X_v, y_v = _data()
    cap = Accountant(Budget(10.0, 1e-5))
    s = _search(cap, **kw)
    if "cv" in kw:
        s.fit(np.vstack([X_tr, X_v]), np.concatenate([y_tr, y_v]))
    else:
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(cap.entries) == 1 and cap.entries[0].role == "training"  # one entry: all of the plan or nothing
    want = s.training_accountant_.spent
    assert math.isclose(cap.spent.epsilon, want.epsilon, rel_tol=1e-9) and cap.spent.epsilon > 0
    assert math.isclose(cap.spent.delta, want.delta, rel_tol=1e-9, abs_tol=1e-300)
    # privacy_spent_ stays this search's own spending; the plan on the cap is the same figure
    assert s.privacy_spent_["training"] == want
    # the released model carries the user's accountant again (a later fit of it charges the cap, not a spent ticket)
    assert s.best_estimator_.accountant is cap


def test_a_cap_shared_across_searches_refuses_the_search_it_cannot_pay_for_before_any_fit(tmp_path):
    X_tr, y_tr, X_v, y_v = _data()
    cap = Accountant(Budget(0.65, 0.0))  # each search's plan: 3 fits of 0.1 = 0.3
    for seed in range(2):
        _search(cap, random_state=seed).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert cap.spent.epsilon == pytest.approx(0.6)
    FITS.clear()
    path = tmp_path / "study.db"
    third = _search(cap, random_state=2, storage=str(path), study_name="third")
    with pytest.raises(BudgetExceededError, match="estimator's own accountant"):
        third.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == []  # nothing was read
    assert cap.spent.epsilon == pytest.approx(0.6) and len(cap.entries) == 2  # nothing spent on the cap
    from privtune.accounting.ledger import SQLiteLedger

    for name in ("third", "third::training"):  # nor on the search's own ledgers
        assert SQLiteLedger(str(path), study=name).entries() == ()


def test_privacy_plan_refuses_what_the_estimators_accountant_cannot_pay_for():
    cap = Accountant(Budget(0.25, 0.0))
    with pytest.raises(BudgetExceededError, match="estimator's own accountant"):
        _search(cap).privacy_plan(30)
    assert cap.entries == ()


def test_issue_37_three_searches_of_dp_logistic_regression_charge_the_cap():
    """The issue's case: each search spends 0.54 on the training rows (three Gaussian fits at 0.3); the cap of 0.85
    pays for two searches (six fits compose to 0.78) and refuses the third (nine: 0.97) before it reads a row."""
    from privtune.linear_model import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    cap = Accountant(Budget(0.85, 1e-6))
    est = DPLogisticRegression(epsilon=0.3, classes=[0, 1], accountant=cap, max_iter=5)
    every_fit = Accountant(Budget(math.inf, 1e-6))  # what the two searches spent on the rows, composed
    for seed in range(2):
        s = PrivateSearchCV(est, {"C": Real(0.1, 10, log=True)}, sensitive="both", n_iter=3, n_candidates=8,
                            random_state=seed).fit(X[:60], y[:60], X_val=X[60:], y_val=y[60:])
        assert s.privacy_spent_["training"].epsilon == pytest.approx(0.5373498, rel=1e-6)
        for entry in s.training_accountant_.entries:
            every_fit.spend(entry.event)
    assert cap.spent.epsilon == pytest.approx(every_fit.spent.epsilon, rel=1e-9)  # 0.78, was 0
    assert cap.spent.epsilon == pytest.approx(0.7774820, rel=1e-6)
    with pytest.raises(BudgetExceededError, match="estimator's own accountant"):
        PrivateSearchCV(est, {"C": Real(0.1, 10, log=True)}, sensitive="both", n_iter=3, n_candidates=8,
                        random_state=2).fit(X[:60], y[:60], X_val=X[60:], y_val=y[60:])
    assert len(cap.entries) == 2


def test_when_the_second_charge_fails_the_first_errs_on_the_side_of_more_spend(monkeypatch):
    """The cap is charged first (it is the one other searches share); if the search's own training ledger then
    cannot record the plan, no row is read and the cap keeps the charge (it over-records, never under-records),
    and the message says so."""
    X_tr, y_tr, X_v, y_v = _data()
    cap = Accountant(Budget(10.0, 0.0))
    real_spend = Accountant.spend

    def failing_spend(self, event, **kw):
        if self is not cap and kw.get("role") == "training":
            raise LedgerError("disk full (simulated)")
        return real_spend(self, event, **kw)

    monkeypatch.setattr(Accountant, "spend", failing_spend)
    FITS.clear()
    with pytest.raises(LedgerError, match="estimator's own accountant") as info:
        _search(cap).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "disk full" in str(info.value)
    assert FITS == []
    assert cap.spent.epsilon == pytest.approx(0.3)  # recorded: more than was spent (nothing), never less


def test_the_same_accountant_for_both_roles_is_checked_for_both_plans_before_either_charge():
    """One accountant as the search's validation accountant and the estimator's: the two plans compose on it
    (sequentially, a valid and conservative bound); one it cannot pay for is refused before either is charged."""
    X_tr, y_tr, X_v, y_v = _data()
    shared = Accountant(Budget(1.2, 1e-6))  # the training plan (0.3) fits, and the validation plan (1.0), not both
    FITS.clear()
    with pytest.raises(BudgetExceededError, match="both"):
        _search(shared, accountant=shared).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == [] and shared.entries == ()
    roomy = Accountant(Budget(1.5, 1e-6))
    s = _search(roomy, accountant=roomy).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert roomy.spent.epsilon == pytest.approx(1.3)
    assert s.privacy_spent_["validation"].epsilon == pytest.approx(1.0)


def test_a_search_space_over_the_accountant_is_refused_before_anything_is_spent():
    cap, other = Accountant(Budget(10.0, 0.0)), Accountant(Budget(10.0, 0.0))
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(CappedDP(accountant=cap), {"accountant": Categorical([cap, other])}, sensitive="both",
                        n_iter=2, n_candidates=2, candidate_grid=[{"accountant": cap}, {"accountant": other}],
                        random_state=0)
    FITS.clear()
    with pytest.raises(InvalidParameterError, match="accountant"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == [] and cap.entries == () and other.entries == ()


def test_an_accountant_that_is_not_a_privtune_accountant_is_refused():
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(InvalidParameterError, match="accountant"):
        _search(object()).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_a_pipeline_around_an_estimator_holding_an_accountant_charges_it_the_plan():
    """A stateless step before the DP estimator is accepted (issue 38; it was refused): the estimator's accountant
    is charged the whole training plan, in one entry, and the fitted pipeline's step holds it again."""
    cap = Accountant(Budget(10.0, 0.0))
    pipe = make_pipeline(FunctionTransformer(), CappedDP(accountant=cap))
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(pipe, {"cappeddp__c": Categorical([0.5, 1.0])}, sensitive="both", n_iter=2, n_candidates=2,
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(cap.entries) == 1 and cap.spent.epsilon == pytest.approx(0.2)  # two fits at 0.1 (no refit)
    assert s.best_estimator_.steps[-1][1].accountant is cap


def test_public_training_rows_charge_the_estimators_accountant_nothing():
    """With public training rows no fit reads a sensitive row: the estimator's accountant is charged nothing (each
    fit charged it before, and its ledger counted the fits), with a warning; best_estimator_ carries it again.
    (tests/model_selection/test_public_rows_estimator_accountant.py: serial and parallel runs alike.)"""
    from privtune.exceptions import PrivtuneWarning

    X_tr, y_tr, X_v, y_v = _data()
    cap = Accountant(Budget(10.0, 0.0))
    FITS.clear()
    with pytest.warns(PrivtuneWarning, match="is not charged"):
        s = PrivateSearchCV(CappedDP(epsilon=0.1, accountant=cap), SPACE, sensitive="validation", method="random",
                            n_iter=3, n_candidates=4, random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert cap.entries == () and s.training_accountant_ is None
    assert len(FITS) == 5  # the pre-flight fit, three candidates and the refit, each charging an accountant of its own
    assert s.best_estimator_.accountant is cap and s.best_estimator_.accountant_ is not cap


def test_a_cap_that_refuses_at_charge_time_leaves_the_search_ledger_untouched(tmp_path):
    """The cap is checked with the plan, then charged first: if another search charged it in between, so that it
    now refuses, the search's own (stored) training ledger records nothing."""
    from privtune.accounting.ledger import SQLiteLedger
    from privtune.model_selection._training import charge_training_plan

    one = EpsilonDeltaEvent(epsilon=0.1)
    plan = [(one, "fits"), (one, "refit")]
    cap = Accountant(Budget(0.3, 0.0))
    cap.spend(LaplaceEvent(epsilon=0.15))  # another search, after this one's check
    acc = Accountant(Budget(1.0, 0.0), ledger=SQLiteLedger(str(tmp_path / "s.db"), study="s::training"))
    with pytest.raises(BudgetExceededError, match="nothing was charged to the search's training accountant"):
        charge_training_plan(acc, plan, cap)
    assert acc.entries == () and len(cap.entries) == 1
    charge_training_plan(acc, plan, Accountant(Budget(0.2, 0.0)))  # exactly the plan: one entry on each
    assert [e.phase for e in acc.entries] == ["fits", "refit"]


def test_largest_fit_epsilon_respects_the_estimators_accountant():
    cap = Accountant(Budget(0.3, 0.0))
    cap.spend(LaplaceEvent(epsilon=0.15))  # 0.15 left for the three fits of the plan: 0.05 each
    eps = _search(cap).largest_fit_epsilon(30)
    assert eps == pytest.approx(0.05, rel=1e-3) and eps <= 0.05 * (1 + 1e-12)
    assert len(cap.entries) == 1  # nothing charged
