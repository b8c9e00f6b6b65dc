"""Hypothesis properties of the accountant."""

import math

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from privtune.accounting import (
    BUDGET_RTOL,
    Accountant,
    Budget,
    EpsilonDeltaEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    SelfComposedEvent,
    compose_events,
)
from privtune.exceptions import BudgetExceededError

eps_st = st.floats(min_value=1e-3, max_value=3.0)
events_st = st.one_of(
    st.builds(lambda e: LaplaceEvent(epsilon=e), eps_st),
    st.builds(lambda e: ExponentialEvent(epsilon=e), eps_st),
    st.builds(lambda nm: GaussianEvent(noise_multiplier=nm), st.floats(min_value=0.5, max_value=20.0)),
    st.builds(lambda e, d: EpsilonDeltaEvent(epsilon=e, delta=d), eps_st, st.floats(min_value=0, max_value=1e-7)),
)


@given(st.lists(events_st, min_size=0, max_size=6), events_st)
def test_composition_is_monotone(events, extra):
    """Adding any event never lowers the epsilon spent at a fixed delta."""
    before = compose_events(events, delta=1e-5, method="rdp").epsilon
    after = compose_events(events + [extra], delta=1e-5, method="rdp").epsilon
    assert after >= before - 1e-9


@given(events_st, st.integers(min_value=1, max_value=6))
def test_self_composition_equals_repetition(event, k):
    a = compose_events([SelfComposedEvent(event=event, count=k)], delta=1e-5, method="rdp").epsilon
    b = compose_events([event] * k, delta=1e-5, method="rdp").epsilon
    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


class AccountantMachine(RuleBasedStateMachine):
    """Random check/spend sequences never let spent exceed the budget; refusals change nothing."""

    @initialize(eps=st.floats(min_value=0.1, max_value=5.0), delta=st.sampled_from([0.0, 1e-6, 1e-3]))
    def make(self, eps, delta):
        self.acc = Accountant(Budget(eps, delta), method="rdp" if delta else "basic")
        self.n = 0

    @rule(event=events_st)
    def spend(self, event):
        before_len, before = len(self.acc.ledger), self.acc.spent
        try:
            self.acc.spend(event)
            self.n += 1
        except BudgetExceededError:
            assert len(self.acc.ledger) == before_len and self.acc.spent == before

    @rule(event=events_st)
    def check(self, event):
        n = len(self.acc.ledger)
        try:
            self.acc.check(event)
        except BudgetExceededError:
            pass
        assert len(self.acc.ledger) == n

    @invariant()
    def within_budget(self):
        if not hasattr(self, "acc"):
            return
        s, b = self.acc.spent, self.acc.budget
        assert s.epsilon <= b.epsilon * (1 + BUDGET_RTOL) and s.delta <= b.delta * (1 + BUDGET_RTOL)
        assert len(self.acc.ledger) == self.n


TestAccountantMachine = AccountantMachine.TestCase
