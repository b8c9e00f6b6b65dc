"""RenyiEvent: stated RDP bounds (the cap of a Rényi filter) and how the accountant composes them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from privtune.accounting import (
    Accountant,
    ComposedEvent,
    GaussianEvent,
    PoissonSampledEvent,
    RenyiEvent,
    SelfComposedEvent,
)
from privtune.accounting.budget import Budget
from privtune.accounting.events import event_from_dict
from privtune.accounting.rdp_math import rdp_to_epsilon
from privtune.exceptions import InvalidParameterError, UnsupportedEventError


def _spent(*events, relation="replace_one", delta=1e-6):
    acc = Accountant(Budget(100.0, delta), relation=relation)
    for e in events:
        acc.spend(e)
    return acc.spent.epsilon


def test_single_order_matches_the_closed_form_conversion():
    a, r, delta = 32.0, 0.5, 1e-6
    expected = r + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)  # CKS 2020, Prop. 12
    assert _spent(RenyiEvent(orders=(a,), epsilons=(r,))) == pytest.approx(expected, rel=1e-12)


def test_bound_extends_to_lower_orders_only():
    e = RenyiEvent(orders=(4.0, 16.0), epsilons=(0.3, 0.2))  # not monotone on purpose: the smaller stated bound wins
    got = e.rdp_at([1.5, 4.0, 5.0, 16.0, 17.0])
    assert got[0] == 0.2 and got[1] == 0.2 and got[2] == 0.2 and got[3] == 0.2
    assert math.isinf(got[4])
    e2 = RenyiEvent(orders=(4.0, 16.0), epsilons=(0.1, 0.2))
    assert list(e2.rdp_at([2.0, 4.0, 8.0])) == [0.1, 0.1, 0.2]


def test_zcdp_curve_equals_a_vector_gaussian_of_the_same_rho():
    rho = 0.02
    orders = tuple(float(a) for a in np.arange(2, 1025))
    z = RenyiEvent(orders=orders, epsilons=tuple(a * rho for a in orders))
    g = GaussianEvent(noise_multiplier=1 / math.sqrt(2 * rho), vector=True)  # RDP only, curve alpha * rho
    assert _spent(z) == pytest.approx(_spent(g), rel=1e-9)


def test_composition_adds_curves():
    e = RenyiEvent(orders=(8.0, 32.0), epsilons=(0.05, 0.4))
    g = GaussianEvent(noise_multiplier=4.0, vector=True)
    from privtune.accounting.rdp_math import DEFAULT_ORDERS
    curve = 3 * e.rdp_at(DEFAULT_ORDERS) + DEFAULT_ORDERS / (2 * 16.0)
    expected = rdp_to_epsilon(DEFAULT_ORDERS, curve, 1e-6)
    assert _spent(ComposedEvent(events=(SelfComposedEvent(event=e, count=3), g))) == pytest.approx(expected, rel=1e-9)
    assert _spent(e, e, e, g) == pytest.approx(expected, rel=1e-9)


def test_add_remove_to_replace_one_by_the_weak_triangle_inequality():
    e = RenyiEvent(orders=(3.0, 64.0), epsilons=(0.1, 0.5), relation="add_remove")
    r = e.as_replace_one()
    assert r.relation == "replace_one"
    assert r.orders == (1.5, 32.0)
    assert r.epsilons == pytest.approx((3 * 0.1, (1 + 63 / 62) * 0.5))
    assert _spent(e) == pytest.approx(_spent(r), rel=1e-12)  # a replace-one accountant converts it
    assert _spent(e, relation="add_remove") < _spent(r)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 4.0, 16.0, 100.0])
def test_conversion_is_an_upper_bound_for_the_gaussian(alpha):
    # Add/remove Gaussian of sensitivity 1 and std s: RDP alpha / (2 s^2); replace-one moves the mean by up to 2:
    # exact replace-one RDP 4 alpha / (2 s^2). The converted bound must not be below the exact value.
    s = 3.0
    a = 2 * alpha
    converted = RenyiEvent(orders=(a,), epsilons=(a / (2 * s * s),), relation="add_remove").as_replace_one()
    assert converted.orders == (alpha,)
    exact = 4 * alpha / (2 * s * s)
    assert converted.epsilons[0] >= exact
    assert converted.epsilons[0] <= 1.5 * exact + 1e-12 or alpha < 2  # and not absurdly loose at larger orders


def test_serialisation_round_trip_through_json():
    e = RenyiEvent(orders=(2.0, 32.0), epsilons=(0.01, 0.3), relation="add_remove", label="DP-BLSGD filter")
    assert event_from_dict(json.loads(json.dumps(e.to_dict()))) == e


@pytest.mark.parametrize("kwargs", [
    {"orders": (), "epsilons": ()},
    {"orders": (2.0,), "epsilons": (0.1, 0.2)},
    {"orders": (1.0,), "epsilons": (0.1,)},
    {"orders": (4.0, 2.0), "epsilons": (0.1, 0.1)},
    {"orders": (2.0,), "epsilons": (-0.1,)},
    {"orders": (2.0,), "epsilons": (math.inf,)},
    {"orders": "ab", "epsilons": (0.1, 0.1)},
])
def test_invalid_events_are_refused(kwargs):
    with pytest.raises(InvalidParameterError):
        RenyiEvent(**kwargs)


def test_order_two_or_below_has_no_replace_one_form():
    with pytest.raises(InvalidParameterError, match="above 2"):
        RenyiEvent(orders=(2.0,), epsilons=(0.1,), relation="add_remove").as_replace_one()


def test_sampling_around_a_stated_bound_is_refused():
    e = PoissonSampledEvent(event=RenyiEvent(orders=(8.0,), epsilons=(0.1,), relation="add_remove"),
                            sample_rate=0.1, relation="add_remove")
    with pytest.raises(UnsupportedEventError):
        _spent(e, relation="add_remove")


# -- random stopping over a stated bound (Papernot & Steinke on the stated curve) ----------------------------------

def _gaussian_as_stated(nm: float, orders=None) -> RenyiEvent:
    from privtune.accounting.rdp_math import DEFAULT_ORDERS, gaussian_rdp

    o = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)
    return RenyiEvent(orders=tuple(float(x) for x in o), epsilons=tuple(float(x) for x in gaussian_rdp(o, nm)))


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, math.inf])
@pytest.mark.parametrize("mean", [2.0, 10.0])
def test_random_stopping_over_a_stated_curve_matches_dp_accountings_gaussian(shape, mean):
    """A RenyiEvent stating a Gaussian's exact curve on the accountant's orders: the best of K runs is charged what
    dp-accounting charges for the same selection over the GaussianEvent itself (two implementations of P&S Thms 2
    and 6; the truncation term of the capped K is in both)."""
    from privtune.accounting import RepeatAndSelectEvent

    stated = _spent(RepeatAndSelectEvent(event=_gaussian_as_stated(3.0), mean=mean, shape=shape))
    reference = _spent(RepeatAndSelectEvent(event=GaussianEvent(noise_multiplier=3.0), mean=mean, shape=shape))
    assert stated == pytest.approx(reference, rel=1e-9)


def test_random_stopping_over_a_coarser_stated_curve_costs_more_never_less():
    """A bound stated at fewer orders is a weaker statement (each order takes the next stated one up; none above the
    largest): the selection's charge can only grow, and stays finite."""
    from privtune.accounting import RepeatAndSelectEvent

    dense = _spent(RepeatAndSelectEvent(event=_gaussian_as_stated(3.0), mean=5.0, shape=1.0))
    coarse = _spent(RepeatAndSelectEvent(event=_gaussian_as_stated(3.0, orders=(2.0, 4.0, 8.0, 16.0)), mean=5.0,
                                         shape=1.0))
    assert dense < coarse < math.inf


def test_random_stopping_over_a_stated_curve_composes_with_other_events():
    from privtune.accounting import LaplaceEvent, RepeatAndSelectEvent

    run = ComposedEvent(events=(_gaussian_as_stated(4.0), LaplaceEvent(epsilon=0.1)))
    ref = ComposedEvent(events=(GaussianEvent(noise_multiplier=4.0), LaplaceEvent(epsilon=0.1)))
    stated = _spent(RepeatAndSelectEvent(event=run, mean=5.0, shape=1.0), GaussianEvent(noise_multiplier=8.0))
    reference = _spent(RepeatAndSelectEvent(event=ref, mean=5.0, shape=1.0), GaussianEvent(noise_multiplier=8.0))
    assert stated == pytest.approx(reference, rel=1e-6)
