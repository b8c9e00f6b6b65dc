"""Amplification by subsampling of any RDP curve (privtune.accounting.amplification) and SubsampledEvent.

The general theorems (Zhu & Wang 2019, Thm. 6; Wang, Balle & Kasiviswanathan
2019, Thm. 9) are cross-checked against independent computations:

* the exact Rényi divergences of a subsampled Laplace count, computed here by
  quadrature in log space on the worst-case pair (one record's count moves by
  1), in both directions -- the bound must never be below them, and a broken
  twin (the rate taken three times too small) must be caught below them;
* the exact curve of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang
  2019; privtune's poisson_gaussian_rdp, itself checked against dp-accounting)
  and dp-accounting's Gaussian-specific sampling-without-replacement bound
  (Wang et al. Thm. 27, tighter than Thm. 9): never below them, equal at order 2
  for Poisson (where Theorem 6 is exact).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from privtune.accounting import (
    Accountant,
    Budget,
    GaussianEvent,
    LaplaceEvent,
    RepeatAndSelectEvent,
    SubsampledEvent,
    compose_events,
    event_from_dict,
)
from privtune.accounting.amplification import subsampled_rdp
from privtune.accounting.rdp_math import DEFAULT_ORDERS, gaussian_rdp, laplace_rdp, poisson_gaussian_rdp
from privtune.exceptions import InvalidParameterError

INTEGER_ORDERS = np.arange(2.0, 33.0)


def _log_laplace(x: np.ndarray, mu: float, b: float) -> np.ndarray:
    return -np.abs(x - mu) / b - math.log(2 * b)


def _exact_subsampled_laplace(eps: float, rate: float, alpha: float) -> float:
    """max of D_alpha(P||Q), D_alpha(Q||P) for P = Lap(0, b), Q = (1 - rate) Lap(0, b) + rate Lap(1, b)."""
    b = 1.0 / eps
    x = np.linspace(-60 * b, 1 + 60 * b, 400_001)
    dx = x[1] - x[0]
    lp = _log_laplace(x, 0.0, b)
    lq = np.logaddexp(math.log1p(-rate) + lp, math.log(rate) + _log_laplace(x, 1.0, b))
    out = []
    for a, c in ((lp, lq), (lq, lp)):
        log_int = logsumexp(alpha * a + (1 - alpha) * c) + math.log(dx)
        out.append(log_int / (alpha - 1))
    return max(out)


@pytest.mark.parametrize("scheme", ["poisson", "without_replacement"])
@pytest.mark.parametrize(("eps", "rate"), [(0.5, 0.05), (1.0, 0.1), (2.0, 0.2), (3.0, 0.5)])
def test_never_below_the_exact_subsampled_laplace_and_catches_a_broken_twin(scheme, eps, rate):
    curve = laplace_rdp(INTEGER_ORDERS, eps)
    bound = subsampled_rdp(INTEGER_ORDERS, curve, rate=rate, scheme=scheme, epsilon_inf=eps)
    twin = subsampled_rdp(INTEGER_ORDERS, curve, rate=rate / 3, scheme=scheme, epsilon_inf=eps)
    exact = np.array([_exact_subsampled_laplace(eps, rate, a) for a in INTEGER_ORDERS])
    assert np.all(bound >= exact * (1 - 1e-4))  # quadrature error (~1e-5 at the kinks); Poisson: equal at order 2
    assert np.all(bound <= curve + 1e-15)  # never above the unsampled curve
    assert np.any(twin < exact * (1 - 1e-3))  # a rate three times too small claims less than the truth
    # informative: within a small factor of the truth at low orders (where DP conversions use it)
    assert bound[0] <= 4.5 * exact[0]


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 2.0), (0.3, 0.8), (0.5, 4.0)])
def test_poisson_general_bound_against_the_exact_gaussian_curve(q, sigma):
    orders = np.asarray(DEFAULT_ORDERS)
    general = subsampled_rdp(orders, gaussian_rdp(orders, sigma), rate=q, scheme="poisson")
    exact = poisson_gaussian_rdp(orders, q, sigma)
    assert np.all(general >= exact * (1 - 1e-9))
    two = subsampled_rdp(np.array([2.0]), gaussian_rdp(np.array([2.0]), sigma), rate=q, scheme="poisson")
    assert two[0] == pytest.approx(poisson_gaussian_rdp(np.array([2.0]), q, sigma)[0], rel=1e-9)


@pytest.mark.parametrize(("n", "m", "sigma"), [(1000, 10, 1.0), (1000, 100, 2.0), (500, 250, 3.0)])
def test_without_replacement_general_bound_against_dp_accounting_gaussian(n, m, sigma):
    from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_sample_wor_gaussian

    orders = INTEGER_ORDERS
    general = subsampled_rdp(orders, gaussian_rdp(orders, sigma), rate=m / n, scheme="without_replacement")
    specific = np.asarray(_compute_rdp_sample_wor_gaussian(m / n, sigma, orders))
    # dp-accounting does not cap its bound by the unsampled curve (above it at n=500, m=250, order 3); both are valid
    assert np.all(general >= np.minimum(specific, gaussian_rdp(orders, sigma)) * (1 - 1e-6))


def test_edges_and_monotone_in_the_rate():
    orders = np.asarray(DEFAULT_ORDERS)
    inner = gaussian_rdp(orders, 1.5)
    np.testing.assert_array_equal(subsampled_rdp(orders, inner, rate=1.0, scheme="poisson"), inner)
    np.testing.assert_array_equal(subsampled_rdp(orders, inner, rate=0.0, scheme="without_replacement"), 0 * inner)
    previous = np.zeros_like(orders)
    for rate in (0.01, 0.05, 0.2, 0.6):
        cur = subsampled_rdp(orders, inner, rate=rate, scheme="without_replacement")
        assert np.all(cur >= previous - 1e-12)
        previous = cur
    # inner curve unknown (inf) above some order: inf there, finite below
    partial = np.where(orders > 10, np.inf, inner)
    out = subsampled_rdp(orders, partial, rate=0.1, scheme="poisson")
    assert np.all(np.isfinite(out[orders <= 10])) and np.all(np.isinf(out[orders > 10]))
    with pytest.raises(InvalidParameterError, match="scheme"):
        subsampled_rdp(orders, inner, rate=0.1, scheme="shuffle")
    with pytest.raises(InvalidParameterError, match="rate"):
        subsampled_rdp(orders, inner, rate=1.5, scheme="poisson")


def test_subsampled_event_checks_round_trips_and_amplifies():
    run = GaussianEvent(noise_multiplier=2.0)
    rs = RepeatAndSelectEvent(event=run, mean=5.0, shape=1.0)
    sub = SubsampledEvent(event=rs, dataset_size=1000, sample_size=100)
    assert sub.sample_rate == pytest.approx(0.1)
    assert event_from_dict(json.loads(json.dumps(sub.to_dict()))) == sub
    whole = compose_events([rs], delta=1e-6).epsilon
    amplified = compose_events([sub], delta=1e-6).epsilon
    assert amplified < 0.5 * whole
    # the whole set (m = n): exactly the unsampled event
    full = SubsampledEvent(event=rs, dataset_size=1000, sample_size=1000)
    assert compose_events([full], delta=1e-6).epsilon == pytest.approx(whole, rel=1e-12)
    # random stopping's capped law of K still adds its mass to delta (a nested RepeatAndSelectEvent)
    acc = Accountant(Budget(10.0, 1e-6))
    acc.spend(sub)
    assert acc.spent.delta <= 1e-6
    with pytest.raises(InvalidParameterError, match="replace_one"):
        SubsampledEvent(event=rs, dataset_size=1000, sample_size=100, relation="add_remove")
    with pytest.raises(InvalidParameterError, match="add_remove"):
        SubsampledEvent(event=rs, scheme="poisson", sample_rate=0.1, relation="add_remove")  # inner replace-one
    with pytest.raises(InvalidParameterError, match="sample_size"):
        SubsampledEvent(event=rs, dataset_size=10, sample_size=11)
    poisson = SubsampledEvent(event=LaplaceEvent(epsilon=1.0, relation="add_remove"), scheme="poisson",
                              sample_rate=0.1, relation="add_remove")
    assert poisson.epsilon_delta()[0] == pytest.approx(math.log1p(0.1 * math.expm1(1.0)))
