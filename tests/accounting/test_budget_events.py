"""Budget and privacy events: validation, order, serialisation."""

import math

import pytest

from privtune.accounting import (
    Budget,
    ComposedEvent,
    EpsilonDeltaEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    SparseVectorEvent,
    ThresholdSelectionEvent,
    event_from_dict,
)
from privtune.exceptions import InvalidParameterError


@pytest.mark.parametrize("eps", [-1.0, math.nan, "1", None, True])
def test_budget_rejects_bad_epsilon(eps):
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of Budget"):
        Budget(eps, 0.0)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 1.5, math.nan, math.inf])
def test_budget_rejects_bad_delta(delta):
    msg = r"'delta' parameter of Budget must be a float in the range \[0.0, 1.0\)"
    with pytest.raises(InvalidParameterError, match=msg):
        Budget(1.0, delta)


def test_budget_partial_order_and_roundtrip():
    a, b, c = Budget(1, 1e-6), Budget(2, 1e-5), Budget(0.5, 1e-4)
    assert a <= b and a < b and b >= a and not (a <= c) and not (c <= a)
    assert Budget.from_dict(Budget(math.inf, 1e-6).to_dict()) == Budget(math.inf, 1e-6)
    assert tuple(a) == (1.0, 1e-6)


ALL_EVENTS = [
    LaplaceEvent(epsilon=0.5),
    GaussianEvent(noise_multiplier=1.3, label="scores"),
    ExponentialEvent(epsilon=0.2, guarantee="conditional"),
    SparseVectorEvent(epsilon=0.1, relation="add_remove"),
    EpsilonDeltaEvent(epsilon=1.0, delta=1e-7),
    PoissonSampledEvent(event=GaussianEvent(noise_multiplier=1.0, relation="add_remove"), sample_rate=0.01,
                        relation="add_remove"),
    SampledWithoutReplacementEvent(event=LaplaceEvent(epsilon=1.0), dataset_size=100, sample_size=10),
    ComposedEvent(events=(LaplaceEvent(epsilon=0.1), GaussianEvent(noise_multiplier=2.0))),
    SelfComposedEvent(event=LaplaceEvent(epsilon=0.1), count=7),
    RepeatAndSelectEvent(event=LaplaceEvent(epsilon=1.0), mean=10, shape=math.inf),
    ThresholdSelectionEvent(event=LaplaceEvent(epsilon=1.0), stop_probability=0.1),
]


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: type(e).__name__)
def test_event_roundtrip_and_immutability(event):
    import json

    assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        event.label = "changed"


def test_event_validation_messages():
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of LaplaceEvent"):
        LaplaceEvent(epsilon=0.0)
    with pytest.raises(InvalidParameterError, match="'relation' parameter of GaussianEvent must be one of"):
        GaussianEvent(noise_multiplier=1.0, relation="swap")
    with pytest.raises(InvalidParameterError, match="'guarantee'"):
        LaplaceEvent(epsilon=1.0, guarantee="maybe")
    with pytest.raises(InvalidParameterError, match="'sample_size' parameter"):
        SampledWithoutReplacementEvent(event=LaplaceEvent(epsilon=1.0), dataset_size=5, sample_size=6)
    with pytest.raises(InvalidParameterError, match="pure epsilon-DP base"):
        ThresholdSelectionEvent(event=GaussianEvent(noise_multiplier=1.0), stop_probability=0.5)
    with pytest.raises(InvalidParameterError, match="unknown type"):
        event_from_dict({"type": "nope"})


def test_fixed_guarantees():
    assert SelfComposedEvent(event=LaplaceEvent(epsilon=0.1), count=7).epsilon_delta() == pytest.approx((0.7, 0.0))
    assert GaussianEvent(noise_multiplier=1.0).epsilon_delta() is None
    # amplification by subsampling without replacement (seed 002 eq. 3.3)
    e = SampledWithoutReplacementEvent(event=LaplaceEvent(epsilon=1.0), dataset_size=100, sample_size=10)
    assert e.epsilon_delta()[0] == pytest.approx(math.log(1 + 0.1 * (math.e - 1)))
    assert RepeatAndSelectEvent(event=LaplaceEvent(epsilon=1.0), mean=10, shape=0.5).epsilon_delta() == (2.5, 0.0)
    assert ThresholdSelectionEvent(event=LaplaceEvent(epsilon=1.0), stop_probability=0.1).epsilon_delta() == (2.0, 0.0)
    assert ComposedEvent(events=(ExponentialEvent(epsilon=0.2, guarantee="conditional"),)).is_conditional()
