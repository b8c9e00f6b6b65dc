"""Random stopping's K is drawn exactly from a law within 2**-100 of the uncapped one (audit finding).

K used to be drawn by a floating-point inverse CDF with a 53-bit uniform: that law is about 1e-14 in
total variation from the capped law, and values of K near the cap could not be drawn at all (mean 10,
geometric: K <= 331 although the cap is 658 and P[K > 331] is about 2**-50), while the accountant charged
a total variation of 2**-100 for the cap alone.
"""

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from privtune.accounting import Accountant, Budget, LaplaceEvent, RepeatAndSelectEvent, rdp_math
from privtune.accounting import selection as S
from privtune.utils._random import RandomSource


class _Pinned(RandomSource):
    """Every uniform integer at the top (``high - 1``) or the bottom (0) of its range."""

    seeded = True

    def __init__(self, top: bool) -> None:
        self.top = top

    def integers_below(self, high):
        h = self._check_high(high)
        return h - 1 if self.top else np.zeros_like(h)


LAWS = [(10.0, 1.0), (5.0, 1.0), (20.0, 0.0), (10.0, 0.5), (10.0, 3.0), (5.0, math.inf)]


@pytest.mark.parametrize("mean, shape", LAWS)
def test_the_top_of_the_uniform_range_reaches_the_cap(mean, shape):
    cap, charged = S.repetition_cap(mean, shape)
    k_top = S.sample_repetitions(mean, shape=shape, random_state=_Pinned(top=True))
    assert k_top == cap  # the largest K the sampler can return is the cap itself (was 331 of 658)
    first = 0 if math.isinf(shape) else 1
    assert S.sample_repetitions(mean, shape=shape, random_state=_Pinned(top=False)) == first


def test_the_geometric_tail_beyond_the_largest_drawable_k_is_charged():
    """Geometric K: P[K > k] = (1 - gamma)**k exactly, so K <= k_top costs at least that much total variation."""
    mean, shape = 10.0, 1.0
    k_top = S.sample_repetitions(mean, shape=shape, random_state=_Pinned(top=True))
    g = rdp_math.truncated_negative_binomial_gamma(mean, shape)
    assert k_top * math.log2(1 - g) <= -100  # P[K > k_top] <= 2**-100 (was 2**-50)
    assert RepeatAndSelectEvent(event=LaplaceEvent(epsilon=1.0), mean=mean, shape=shape).truncation_mass() \
        >= (1 - Fraction(g)) ** k_top


def _uncapped(mean, shape, n):
    """The uncapped law of K on 0..n at 60 digits (the float gamma taken exactly)."""
    mp.mp.dps = 60
    if math.isinf(shape):
        m = mp.mpf(mean)
        return [mp.exp(-m) * m**k / mp.factorial(k) for k in range(n + 1)]
    g, eta = mp.mpf(rdp_math.truncated_negative_binomial_gamma(mean, shape)), mp.mpf(shape)
    norm = g ** (-eta) - 1 if shape != 0 else mp.log(1 / g)
    out, w = [mp.mpf(0)], (eta if shape != 0 else 1) * (1 - g)
    for k in range(1, n + 1):
        out.append(w / norm)
        w *= (k + eta) / (k + 1) * (1 - g)
    return out


@pytest.mark.parametrize("mean, shape", LAWS)
def test_the_law_sampled_is_within_the_charged_total_variation(mean, shape):
    law = S._repetition_law(mean, shape)
    exact = _uncapped(mean, shape, len(law.cumulative) - 1)
    weights = np.diff(np.r_[0, np.array(law.cumulative, dtype=object)])
    total = mp.mpf(law.total)
    gaps = (abs(mp.mpf(int(w)) / total - e) for w, e in zip(weights, exact, strict=True))
    tv = (mp.fsum(gaps) + (1 - mp.fsum(exact))) / 2
    assert law.deviation <= Fraction(S.REPETITION_TAIL)
    assert tv <= mp.mpf(law.deviation.numerator) / law.deviation.denominator
    assert tv > 0  # the check is not vacuous: the cap and the rounding do move the law
    assert S.repetition_cap(mean, shape)[1] == S.REPETITION_TAIL


def test_seeded_draws_are_reproducible_and_follow_the_law():
    a = S.sample_repetitions(10.0, shape=1.0, size=4000, random_state=11)
    b = S.sample_repetitions(10.0, shape=1.0, size=4000, random_state=11)
    np.testing.assert_array_equal(a, b)
    assert abs(a.mean() - 10.0) < 6 * a.std() / math.sqrt(a.size)
    acc = Accountant(Budget(10.0, 1e-20))
    acc.spend(RepeatAndSelectEvent(event=LaplaceEvent(epsilon=1.0), mean=10.0, shape=1.0))
    assert acc.spent.delta == pytest.approx((1 + math.exp(3.0)) * 2.0**-100)
