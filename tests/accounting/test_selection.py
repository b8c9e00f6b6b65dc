"""Private selection bounds (Liu & Talwar; Papernot & Steinke) and the secret K sampler."""

import math

import numpy as np
import pytest
from scipy import stats

from privtune.accounting import rdp_math
from privtune.accounting.selection import (
    liu_talwar_epsilon,
    papernot_steinke_epsilon,
    repeat_and_select_epsilon,
    sample_repetitions,
)
from privtune.exceptions import InvalidParameterError


def test_liu_talwar_and_pure_corollaries():
    assert liu_talwar_epsilon(0.5) == 1.0
    assert liu_talwar_epsilon(0.5, stopping="geometric") == 1.5
    assert papernot_steinke_epsilon(1.0, shape=0.0) == 2.0
    assert papernot_steinke_epsilon(1.0, shape=1.0) == liu_talwar_epsilon(1.0, stopping="geometric")
    with pytest.raises(InvalidParameterError, match="'stopping'"):
        liu_talwar_epsilon(1.0, stopping="never")
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        liu_talwar_epsilon(0.0)


# landscape.md Appendix B, computed there with dp_accounting main @ b5b0286e
@pytest.mark.parametrize("shape,expected", [(0.0, 2.009), (0.5, 2.509), (1.0, 3.009), (math.inf, 5.616)])
def test_papernot_steinke_golden_own_implementation(shape, expected):
    got = repeat_and_select_epsilon(rdp_math.laplace_rdp(None, 1.0), mean=10, shape=shape, delta=1e-6)
    assert got == pytest.approx(expected, abs=2e-3)


def test_own_implementation_agrees_with_dp_accounting():
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    orders = rdp_math.DEFAULT_ORDERS
    for shape in (0.0, 0.5, 1.0, 2.0):
        for mean in (3.0, 30.0):
            ref = RdpAccountant(orders=list(orders))
            ref.compose(dp_event.RepeatAndSelectDpEvent(dp_event.LaplaceDpEvent(2.0), mean, shape))
            ours = repeat_and_select_epsilon(rdp_math.laplace_rdp(orders, 0.5), mean=mean, shape=shape,
                                             delta=1e-6, orders=orders)
            assert ours == pytest.approx(ref.get_epsilon(1e-6), rel=1e-6)


def test_laplace_rdp_is_below_the_pure_bound():
    a = np.array([1.5, 2.0, 10.0, 100.0])
    assert np.all(rdp_math.laplace_rdp(a, 1.0) <= rdp_math.pure_dp_rdp(a, 1.0) + 1e-12)
    assert np.all(rdp_math.pure_dp_rdp(a, 1.0) <= np.minimum(1.0, a / 2) + 1e-12)


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 3.0])
def test_tnb_gamma_inverts_mean(eta):
    for mean in (1.5, 10.0, 200.0):
        g = rdp_math.truncated_negative_binomial_gamma(mean, eta)
        assert rdp_math.truncated_negative_binomial_mean(eta, g) == pytest.approx(mean, rel=1e-9)


@pytest.mark.statistical
@pytest.mark.parametrize("shape", [0.0, 1.0, math.inf])
def test_sample_repetitions_distribution(shape):
    """H0: K follows the stated law. Chi-square over bins of expected count >= 20; alpha = 1e-4.

    n = 20000 draws detect a 5 % change of the mean (e.g. the geometric's gamma off by 5 %) with
    power > 0.99 at this alpha.
    """
    rng = np.random.default_rng(7)
    mean, n = 5.0, 20_000
    ks = sample_repetitions(mean, shape=shape, size=n, random_state=rng)
    if math.isinf(shape):
        pmf = stats.poisson(mean).pmf(np.arange(0, 60))
    elif shape == 1.0:
        pmf = np.r_[0.0, stats.geom(1 / mean).pmf(np.arange(1, 200))]
    else:
        gamma = rdp_math.truncated_negative_binomial_gamma(mean, 0.0)
        pmf = np.r_[0.0, stats.logser(1 - gamma).pmf(np.arange(1, 400))]
    expected = pmf * n
    keep = expected >= 20
    observed = np.bincount(ks, minlength=len(pmf))[: len(pmf)]
    obs = np.r_[observed[keep], observed[~keep].sum() + (ks >= len(pmf)).sum()]
    exp = np.r_[expected[keep], n - expected[keep].sum()]
    p = stats.chisquare(obs, exp).pvalue
    assert p > 1e-4
    assert abs(ks.mean() - mean) < 6 * ks.std() / math.sqrt(n)


def test_sample_repetitions_secure_by_default_and_validated():
    k = sample_repetitions(4.0, shape=1.0)
    assert isinstance(k, int) and k >= 1
    assert [sample_repetitions(4.0, shape=1.0, random_state=3) for _ in range(2)] == [
        sample_repetitions(4.0, shape=1.0, random_state=3)] * 2
    assert sample_repetitions(4.0, shape=0.0, size=5, random_state=1).shape == (5,)
    with pytest.raises(InvalidParameterError, match="'mean'"):
        sample_repetitions(1.0, shape=1.0)
