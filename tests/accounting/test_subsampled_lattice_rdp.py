"""Poisson-subsampled Gaussian events: privtune's curve holds for its lattice (discrete) Gaussian.

privtune's Gaussian noise is a discrete Gaussian on a lattice, and neighbouring outputs differ by an integer shift.
For a Poisson subsample the continuous Gaussian's RDP (Mironov, Talwar & Zhang 2019) transfers to the lattice at
integer orders (every integer moment of the likelihood ratio is the continuous one), but not at fractional orders:
the exact lattice divergence can exceed dp-accounting's fractional-order value. privtune therefore computes the
integer orders and interpolates the cumulant in between (``rdp_math.poisson_gaussian_rdp``). These tests compute
the exact lattice divergences by summing over the lattice (float64 log-sum-exp; the truncation at 60 standard
deviations leaves less than exp(-1800) of the mass out).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp
from scipy.special import logsumexp

from privtune.accounting import compose_events
from privtune.accounting._conversion import pld_supported, to_pld
from privtune.accounting.events import GaussianEvent, LaplaceEvent, PoissonSampledEvent, SelfComposedEvent
from privtune.accounting.rdp_math import DEFAULT_ORDERS, poisson_gaussian_rdp, rdp_to_epsilon


def lattice_divergences(s: float, shift: int | tuple[int, ...], q: float, alpha: float,
                        width: float = 60.0) -> tuple[float, float]:
    """Exact D_alpha(mix || mu_0) and D_alpha(mu_0 || mix) on Z^d, mix = (1-q) mu_0 + q mu_shift.

    ``shift`` is an integer (d = 1) or an integer vector; the sums run over ``width`` standard deviations
    (and one more unit per unit of the largest shift) around the origin in every coordinate.
    """
    vec = np.atleast_1d(np.asarray(shift, dtype=float))
    r = int(width * s) + int(width) + int(np.max(np.abs(vec)))
    axis = np.arange(-r, r + 1, dtype=float)
    grid = np.stack(np.meshgrid(*([axis] * vec.size), indexing="ij"), axis=-1)
    log_p0 = -np.sum(grid * grid, axis=-1) / (2 * s * s)
    log_p0 -= logsumexp(log_p0)
    log_p1 = -np.sum((grid - vec) ** 2, axis=-1) / (2 * s * s)
    log_p1 -= logsumexp(log_p1)  # the same normaliser: an integer shift of a lattice sum
    log_mix = np.logaddexp(math.log1p(-q) + log_p0, math.log(q) + log_p1)
    add = logsumexp(alpha * log_mix + (1 - alpha) * log_p0) / (alpha - 1)
    remove = logsumexp(alpha * log_p0 + (1 - alpha) * log_mix) / (alpha - 1)
    return float(add), float(remove)


@pytest.mark.parametrize("q", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("nm", [0.25, 0.6, 1.0, 2.0, 8.0])
def test_integer_orders_match_dp_accounting(q, nm):
    orders = np.array([2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0, 256.0, 1024.0])
    ours = poisson_gaussian_rdp(orders, q, nm)
    ref = dp_rdp._compute_rdp_poisson_subsampled_gaussian(q, nm, orders)
    finite = np.isfinite(ref)
    np.testing.assert_allclose(ours[finite], np.minimum(ref[finite], orders[finite] / (2 * nm * nm)), rtol=1e-9)


def test_fractional_orders_are_the_chord_of_the_integer_ones():
    q, nm = 0.1, 1.0
    ints = poisson_gaussian_rdp(np.array([2.0, 3.0]), q, nm)
    mid = poisson_gaussian_rdp(np.array([2.25]), q, nm)[0]
    assert mid == pytest.approx((0.75 * ints[0] * 1 + 0.25 * ints[1] * 2) / 1.25, rel=1e-12)
    # below order 2 the chord from order 1 (cumulant 0) is the order-2 value
    assert poisson_gaussian_rdp(np.array([1.5]), q, nm)[0] == pytest.approx(ints[0], rel=1e-12)
    # non-decreasing in the order, capped by the unsampled Gaussian
    curve = poisson_gaussian_rdp(DEFAULT_ORDERS, q, nm)
    assert np.all(np.diff(curve) >= -1e-12)
    assert np.all(curve <= DEFAULT_ORDERS / (2 * nm * nm) + 1e-15)
    assert poisson_gaussian_rdp(np.array([2.0]), 0.0, nm)[0] == 0.0
    assert poisson_gaussian_rdp(np.array([2.0]), 1.0, nm)[0] == pytest.approx(1.0)
    assert poisson_gaussian_rdp(np.array([2.0]), 0.5, 0.0)[0] == math.inf


def test_the_lattice_exceeds_the_continuous_fractional_formula_but_not_privtunes_curve():
    # s = 0.5 grid steps, shift 2 (noise multiplier 0.25), q = 0.5, order 1.5: the case that motivates the curve
    s, shift, q, alpha = 0.5, 2, 0.5, 1.5
    add, remove = lattice_divergences(s, shift, q, alpha)
    logging.disable(logging.WARNING)  # dp-accounting warns when its fractional series does not converge
    try:
        continuous = float(dp_rdp._compute_rdp_poisson_subsampled_gaussian(q, s / shift, [alpha])[0])
    finally:
        logging.disable(logging.NOTSET)
    assert add > continuous + 1e-6  # 9.9260536 against 9.9260502: dp-accounting's value is not a bound here
    assert poisson_gaussian_rdp(np.array([alpha]), q, s / shift)[0] >= add
    assert remove <= add


@pytest.mark.parametrize("s, shift", [(0.8, 1), (1.0, 2), (2.0, 3), (4.0, 1)])
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5])
def test_curve_bounds_both_directions_on_the_lattice(s, shift, q):
    orders = np.array([1.5, 2.0, 2.5, 3.0, 7.3, 8.0, 16.0])
    curve = poisson_gaussian_rdp(orders, q, s / shift)
    for alpha, bound in zip(orders, curve, strict=True):
        add, remove = lattice_divergences(s, shift, q, float(alpha))
        assert max(add, remove) <= bound * (1 + 1e-9) + 1e-13, (alpha, add, remove, bound)
        assert remove <= add * (1 + 1e-9) + 1e-13, (alpha, add, remove)


def test_accountant_uses_the_lattice_curve_and_no_continuous_pld():
    step = PoissonSampledEvent(event=GaussianEvent(noise_multiplier=1.0, vector=True, relation="add_remove"),
                               sample_rate=0.1, relation="add_remove")
    run = SelfComposedEvent(event=step, count=300, relation="add_remove")
    spent = compose_events([run], delta=1e-6, relation="add_remove")
    expected = rdp_to_epsilon(DEFAULT_ORDERS, 300 * poisson_gaussian_rdp(DEFAULT_ORDERS, 0.1, 1.0), 1e-6)
    assert spent.epsilon == pytest.approx(expected, rel=1e-9)
    scalar = PoissonSampledEvent(event=GaussianEvent(noise_multiplier=1.0, relation="add_remove"),
                                 sample_rate=0.1, relation="add_remove")
    assert not pld_supported(scalar) and to_pld(scalar, 1e-4) is None


def test_subsampled_laplace_pld_is_the_amplified_pure_epsilon():
    event = PoissonSampledEvent(event=LaplaceEvent(epsilon=1.0, relation="add_remove"), sample_rate=0.2,
                                relation="add_remove")
    amplified = math.log1p(0.2 * math.expm1(1.0))
    assert pld_supported(event)
    pld = to_pld(event, 1e-4)
    assert pld.get_epsilon_for_delta(0.0) == pytest.approx(amplified, abs=1e-3)
    assert compose_events([event], delta=0.0, relation="add_remove").epsilon <= amplified + 1e-3


@pytest.mark.parametrize("s, shift", [(0.5, (1, 1)), (0.8, (2, 1)), (2.0, (1, 1)), (1.0, (3, 1))])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_curve_bounds_both_directions_for_a_vector_shift(s, shift, q):
    # privtune's vector noise is a discrete Gaussian on Z^d and a neighbour shifts it by an integer vector whose
    # L2 norm is the sensitivity: the remove direction is not covered by the integer-moment identity (its exponent
    # is negative), so it is checked here exactly, off the axes, where the lattice is not a rotated line.
    orders = np.array([1.5, 2.0, 3.0, 7.3, 16.0])
    curve = poisson_gaussian_rdp(orders, q, s / math.hypot(*shift))
    for alpha, bound in zip(orders, curve, strict=True):
        add, remove = lattice_divergences(s, shift, q, float(alpha), width=40.0)  # 40 sd: < exp(-800) left out
        assert remove <= add * (1 + 1e-9) + 1e-13, (alpha, add, remove)
        assert add <= bound * (1 + 1e-9) + 1e-13, (alpha, add, bound)
