"""A wrapper's relation check looks at every nested event, not only its direct children (audit finding R2).

A sampling or selection wrapper is bounded from its inner event's guarantee *as declared*; a
``ComposedEvent`` inside it sums its parts' declared epsilons whatever their relation. An add/remove
``LaplaceEvent(1.0)`` (2.0 under replace-one) hidden one level down inside a replace-one wrapper was
charged 1.0 (sampling without replacement), 3.0 (best of K, eta = 1; should be 6.0) or 2.0 (threshold
selection; should be 4.0).
"""

import pytest

from privtune.accounting import (
    Accountant,
    Budget,
    ComposedEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    ThresholdSelectionEvent,
    compose_events,
)
from privtune.exceptions import InvalidParameterError, UnsupportedEventError

AR = LaplaceEvent(epsilon=1.0, relation="add_remove")
RO = LaplaceEvent(epsilon=1.0)


@pytest.mark.parametrize("wrap", [lambda e: ComposedEvent(events=(e,)),
                                  lambda e: SelfComposedEvent(event=e, count=1),
                                  lambda e: ComposedEvent(events=(SelfComposedEvent(event=e, count=2),))],
                         ids=["composed", "self_composed", "two_levels"])
def test_sampling_wrappers_refuse_a_nested_event_of_another_relation(wrap):
    with pytest.raises(InvalidParameterError, match="nested"):
        SampledWithoutReplacementEvent(event=wrap(AR), dataset_size=10, sample_size=10)
    inner = wrap(RO)
    inner = ComposedEvent(events=inner.events, relation="add_remove") if isinstance(inner, ComposedEvent) else \
        SelfComposedEvent(event=RO, count=1, relation="add_remove")
    with pytest.raises(InvalidParameterError, match="nested"):
        PoissonSampledEvent(event=inner, sample_rate=0.5, relation="add_remove")


@pytest.mark.parametrize("make", [
    lambda inner: RepeatAndSelectEvent(event=inner, mean=3.0, shape=1.0),
    lambda inner: ThresholdSelectionEvent(event=inner, stop_probability=0.1),
], ids=["repeat_and_select", "threshold"])
def test_selection_wrappers_refuse_a_nested_add_remove_event(make):
    ev = make(ComposedEvent(events=(AR,)))
    for relation in ("replace_one", "add_remove"):
        with pytest.raises(UnsupportedEventError, match="at any depth"):
            compose_events([ev], delta=0.0, relation=relation)
    with pytest.raises(UnsupportedEventError):
        Accountant(Budget(100.0, 1e-6)).spend(ev)


def test_a_nested_replace_one_event_in_an_add_remove_wrapper_is_refused():
    ev = RepeatAndSelectEvent(event=ComposedEvent(events=(RO,), relation="add_remove"), mean=3.0, shape=1.0,
                              relation="add_remove")
    for relation in ("replace_one", "add_remove"):
        with pytest.raises(UnsupportedEventError):
            compose_events([ev], delta=0.0, relation=relation)


def test_consistent_nesting_is_still_charged_as_before():
    # replace-one throughout: (2 + 1) * 1.0
    ev = RepeatAndSelectEvent(event=ComposedEvent(events=(RO,)), mean=3.0, shape=1.0)
    assert compose_events([ev], delta=0.0).epsilon == pytest.approx(3.0)
    # add/remove throughout, charged in a replace-one accountant: group privacy doubles the whole 3.0
    ev = RepeatAndSelectEvent(event=ComposedEvent(events=(AR,), relation="add_remove"), mean=3.0, shape=1.0,
                              relation="add_remove")
    assert compose_events([ev], delta=0.0).epsilon == pytest.approx(6.0)
    assert compose_events([ev], delta=0.0, relation="add_remove").epsilon == pytest.approx(3.0)
    # a replace-one composition of an add/remove event, at top level, is still converted part by part
    assert compose_events([ComposedEvent(events=(AR,))], delta=0.0).epsilon == pytest.approx(2.0)
    ok = SampledWithoutReplacementEvent(event=ComposedEvent(events=(RO, RO)), dataset_size=10, sample_size=10)
    assert compose_events([ok], delta=0.0).epsilon == pytest.approx(2.0)
