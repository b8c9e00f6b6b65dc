"""Relations inside compositions, sampled events, reservations and the ledger's head (accounting audit findings).

Each test failed on the code before the fix.
"""

from __future__ import annotations

import math
import sqlite3

import pytest

from privtune.accounting import Accountant, Budget, compose_events
from privtune.accounting.events import (
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    event_from_dict,
)
from privtune.accounting.ledger import SQLiteLedger
from privtune.exceptions import BudgetExceededError, InvalidParameterError, LedgerError

AR_LAPLACE = LaplaceEvent(epsilon=1.0, relation="add_remove")  # 2.0 under replace-one (group privacy)


@pytest.mark.parametrize("wrap", [lambda e: ComposedEvent(events=(e,)), lambda e: SelfComposedEvent(event=e, count=1)],
                         ids=["composed", "self-composed"])
def test_an_add_remove_event_inside_a_replace_one_composition_still_doubles(wrap):
    assert compose_events([AR_LAPLACE], delta=0.0).epsilon == pytest.approx(2.0)
    assert compose_events([wrap(AR_LAPLACE)], delta=0.0).epsilon == pytest.approx(2.0)  # was 1.0


def test_a_reservation_checks_each_event_as_the_accountant_would():
    acc = Accountant(Budget(1.5, 0.0))
    with pytest.raises(BudgetExceededError):
        acc.check(AR_LAPLACE)
    with pytest.raises(BudgetExceededError):  # reserve accepted it, and the reserved spend recorded 2.0 > 1.5
        acc.reserve([AR_LAPLACE])
    assert acc.spent.epsilon == 0.0
    ar = Accountant(Budget(1.5, 0.0), relation="add_remove")  # raised UnsupportedEventError before
    r = ar.reserve([AR_LAPLACE])
    ar.spend(AR_LAPLACE, reservation=r)
    assert ar.spent.epsilon == pytest.approx(1.0)


def test_a_reservation_covers_only_the_accountant_that_made_it():
    a, b = Accountant(Budget(10.0, 0.0)), Accountant(Budget(0.5, 0.0))
    r = a.reserve([LaplaceEvent(epsilon=5.0)])
    with pytest.raises(BudgetExceededError):  # b recorded 5.0 against 0.5 before
        b.spend(LaplaceEvent(epsilon=5.0), reservation=r)
    assert b.spent.epsilon == 0.0


def test_sampled_events_refuse_the_relation_their_amplification_is_not_proven_for():
    with pytest.raises(InvalidParameterError, match="add/remove"):
        PoissonSampledEvent(event=LaplaceEvent(epsilon=1.0), sample_rate=0.01)  # replace-one: 0.017 claimed
    with pytest.raises(InvalidParameterError, match="add/remove"):
        PoissonSampledEvent(event=GaussianEvent(noise_multiplier=1.0), sample_rate=0.01, relation="add_remove")
    with pytest.raises(InvalidParameterError, match="replace-one"):
        SampledWithoutReplacementEvent(event=AR_LAPLACE, dataset_size=100, sample_size=10, relation="add_remove")
    ok = PoissonSampledEvent(event=AR_LAPLACE, sample_rate=0.01, relation="add_remove")
    assert ok.epsilon_delta()[0] == pytest.approx(math.log1p(0.01 * math.expm1(1.0)))


def test_random_stopping_keeps_its_truncation_delta_through_a_relation_change():
    ev = RepeatAndSelectEvent(event=AR_LAPLACE, mean=10, shape=1.0, relation="add_remove")
    assert ev.truncation_mass() > 0
    with pytest.raises(BudgetExceededError):  # was accepted as (6.0, 0) under a pure budget
        Accountant(Budget(100.0, 0.0)).check(ev)


def test_pure_amplification_never_falls_below_the_exact_value_at_huge_epsilon():
    from privtune.accounting.events import _amplify_pure
    # exact log(q e^eps + 1 - q) from mpmath at 50 digits
    assert _amplify_pure(701.0, 1e-310) == pytest.approx(2.756964763795987e-06, rel=1e-12)  # was -12.8
    assert _amplify_pure(701.0, 1e-300) >= 10.224508372851462


def test_a_label_reading_inf_round_trips():
    ev = LaplaceEvent(epsilon=1.0, label="inf")
    assert event_from_dict(ev.to_dict()) == ev


def test_random_stopping_with_a_large_mean_is_planned_quickly():
    from privtune.accounting.selection import _repetition_law, _repetition_pmf
    _repetition_law.cache_clear()
    pmf = _repetition_pmf(400.0, 0.0)  # took minutes: every step re-summed every weight
    assert pmf.sum() == pytest.approx(1.0)


def test_a_ledger_whose_head_was_removed_is_refused(tmp_path):
    path = str(tmp_path / "l.sqlite")
    led = SQLiteLedger(path, study="s")
    for _ in range(3):
        led.append(LaplaceEvent(epsilon=1.0))
    led.close()
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM privtune_ledger WHERE idx = 2")
    conn.execute("DELETE FROM privtune_ledger_head")  # was adopted as a 'legacy' ledger of 2 charges
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="no recorded head"):
        SQLiteLedger(path, study="s").entries()


def test_spent_reports_a_bound_that_fits_the_budget_it_was_checked_against():
    acc = Accountant(Budget(2.9996, 1e-4))
    for _ in range(3):
        acc.spend(LaplaceEvent(epsilon=1.0))  # accepted through the PLD bound (2.9992, 1e-4)
    assert acc.spent.epsilon <= 2.9996 and acc.spent.delta <= 1e-4  # was reported as (3.0, 0)
    assert acc.remaining.epsilon > 0
    # a pure budget still reports the pure total
    pure = Accountant(Budget(3.0, 0.0))
    for _ in range(3):
        pure.spend(LaplaceEvent(epsilon=1.0))
    assert pure.spent == Budget(3.0, 0.0)


def test_a_wrapper_refuses_an_inner_event_of_another_relation():
    """RepeatAndSelectEvent (replace-one) around an add/remove Laplace(1) was charged as if the inner event were
    replace-one (2.27 instead of 3.40)."""
    from privtune.exceptions import UnsupportedEventError
    ev = RepeatAndSelectEvent(event=AR_LAPLACE, mean=10, shape=1.0)
    with pytest.raises(UnsupportedEventError, match="declared under another relation"):
        Accountant(Budget(100.0, 1e-6)).check(ev)

