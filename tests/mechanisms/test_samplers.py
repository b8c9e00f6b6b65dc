"""Unit tests of the exact integer samplers and grid helpers (privtune.mechanisms._samplers)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import _discrete as discrete_module
from privtune.mechanisms import _samplers as samplers_module
from privtune.mechanisms import bernoulli_exp, discrete_gaussian, discrete_laplace
from privtune.mechanisms._samplers import (
    GRID_HEADROOM,
    MIN_GRID_EXPONENT,
    _bernoulli_exp_minus_one,
    _gaussian_rejection_constants,
    _geometric_exp_minus_one,
    gaussian_grid,
    laplace_grid,
    round_to_grid,
)
from privtune.utils import check_random_state
from privtune.utils._random import RandomSource, SeededRandomSource


class IntegersOnlySource(RandomSource):
    """A source implementing only ``integers_below``; every other primitive fails.

    The samplers must run on it: they may use nothing but exact uniform integers
    (``bernoulli_half`` is derived from ``integers_below`` by the base class).
    """

    seeded = True

    def __init__(self, seed: int) -> None:
        self._gen = np.random.default_rng(seed)
        self.calls = 0

    def integers_below(self, high):
        h = self._check_high(high)
        self.calls += 1
        return self._gen.integers(0, h, dtype=np.int64) if h.size else np.empty(h.shape, np.int64)

    def uniform53(self, size):  # pragma: no cover - must not be called
        raise AssertionError("the exact samplers must not use float uniforms")


def _source(gen: np.random.Generator) -> SeededRandomSource:
    return check_random_state(gen)


# --------------------------------------------------------------------------------------
# bernoulli_exp
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (-1, 1, r"The 'x' parameter of bernoulli_exp must have entries in the range \[0, inf\]"),
        (1, 0, r"The 'y' parameter of bernoulli_exp must have entries in the range \[1, "),
        (1, 2**62 + 1, r"The 'y' parameter of bernoulli_exp must have entries in the range \[1, "),
        (0.5, 1, r"The 'x' parameter of bernoulli_exp must be an array of integers"),
        (1, [1.0], r"The 'y' parameter of bernoulli_exp must be an array of integers"),
        ([1, 2, 3], [1, 2], r"must have broadcastable shapes"),
        (np.array([1, "a"], dtype=object), 1, r"The 'x' parameter of bernoulli_exp must be an "),
    ],
)
def test_bernoulli_exp_refuses_bad_input_without_drawing(generator, x, y, match):
    source = _source(generator)
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=match):
        bernoulli_exp(x, y, source)
    assert generator.bit_generator.state == before


def test_bernoulli_exp_refuses_non_source():
    with pytest.raises(InvalidParameterError, match=r"The 'source' parameter of bernoulli_exp"):
        bernoulli_exp(1, 1, np.random.default_rng(0))


def test_bernoulli_exp_shapes_and_edge_values():
    source = IntegersOnlySource(0)
    out = bernoulli_exp(np.zeros((3, 4), dtype=np.int64), 7, source)
    assert out.shape == (3, 4) and out.dtype == bool and out.all()  # exp(0) = 1
    # gamma = 10**6: probability exp(-1e6) == 0 in any run
    assert not bernoulli_exp(np.full(1000, 10**6), 1, source).any()
    # numerators beyond int64 are handled exactly with Python integers
    assert not bernoulli_exp(np.array([2**80, 2**70], dtype=object), 3, source).any()
    assert bernoulli_exp(np.array([], dtype=np.int64), 1, source).shape == (0,)
    assert source.calls > 0


def test_bernoulli_exp_mean_is_close_to_exp_minus_gamma():
    # Coarse sanity check (the statistical suite has the exact tests): 5 standard errors.
    source = _source(np.random.default_rng(1))
    n = 40_000
    for x, y in [(1, 3), (1, 1), (7, 2)]:
        p = math.exp(-x / y)
        mean = bernoulli_exp(np.full(n, x), y, source).mean()
        assert abs(mean - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_bernoulli_exp_large_denominator_uses_exact_two_stage_draw():
    # y * K > 2**62 forces the (Bernoulli(x/y) AND Bernoulli(1/K)) path.
    source = _source(np.random.default_rng(2))
    y = 2**61 + 1
    out = bernoulli_exp(np.full(20_000, y - 1), y, source)  # gamma ~ 1
    assert abs(out.mean() - math.exp(-1)) < 5 * math.sqrt(0.25 / 20_000)


def test_bernoulli_exp_is_reproducible():
    a = bernoulli_exp(np.arange(100) % 9, 4, _source(np.random.default_rng(5)))
    b = bernoulli_exp(np.arange(100) % 9, 4, _source(np.random.default_rng(5)))
    assert np.array_equal(a, b)


# --------------------------------------------------------------------------------------
# discrete Laplace and discrete Gaussian
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 1, 10), r"The 'scale_num' parameter of discrete_laplace must be an int in the range "
                     r"\[1, 4611686018427387904\]. Got 0 instead."),
        ((1, -2, 10), r"The 'scale_den' parameter of discrete_laplace must be an int"),
        ((1.5, 1, 10), r"The 'scale_num' parameter of discrete_laplace must be an int"),
        ((True, 1, 10), r"The 'scale_num' parameter of discrete_laplace must be an int"),
        ((2**62 + 1, 1, 10), r"The 'scale_num' parameter of discrete_laplace"),
        ((1, 1, -1), r"The 'size' parameter of discrete_laplace must be a non-negative int"),
        ((1, 1, 2.0), r"The 'size' parameter of discrete_laplace must be a non-negative int"),
        ((1, 1, (2, -1)), r"The 'size' parameter of discrete_laplace"),
    ],
)
def test_discrete_laplace_refuses_bad_input_without_drawing(generator, args, match):
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=match):
        discrete_laplace(*args, _source(generator))
    assert generator.bit_generator.state == before


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 1, 10), r"The 'sigma2_num' parameter of discrete_gaussian must be an int"),
        ((1, 0, 10), r"The 'sigma2_den' parameter of discrete_gaussian must be an int"),
        ((2.0, 1, 10), r"The 'sigma2_num' parameter of discrete_gaussian must be an int"),
        ((2, 1, "3"), r"The 'size' parameter of discrete_gaussian"),
        ((2**62, 3, 10), r"needs exact denominators beyond 2\*\*62"),
    ],
)
def test_discrete_gaussian_refuses_bad_input_without_drawing(generator, args, match):
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=match):
        discrete_gaussian(*args, _source(generator))
    assert generator.bit_generator.state == before


def test_samplers_use_only_integers_below():
    source = IntegersOnlySource(3)
    z = discrete_laplace(3, 2, 1000, source)
    w = discrete_gaussian(5, 3, (10, 10), source)
    assert z.dtype == np.int64 and z.shape == (1000,)
    assert w.dtype == np.int64 and w.shape == (10, 10)


def test_samplers_shapes_and_empty():
    source = _source(np.random.default_rng(0))
    assert discrete_laplace(4, 1, (2, 3), source).shape == (2, 3)
    assert discrete_laplace(4, 1, 0, source).shape == (0,)
    assert discrete_gaussian(4, 1, (0, 5), source).shape == (0, 5)


def test_samplers_are_reproducible_and_seed_dependent():
    a = discrete_laplace(2**10, 1, 500, _source(np.random.default_rng(7)))
    b = discrete_laplace(2**10, 1, 500, _source(np.random.default_rng(7)))
    c = discrete_laplace(2**10, 1, 500, _source(np.random.default_rng(8)))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    g1 = discrete_gaussian(4**10, 1, 500, _source(np.random.default_rng(7)))
    g2 = discrete_gaussian(4**10, 1, 500, _source(np.random.default_rng(7)))
    assert np.array_equal(g1, g2)


def test_discrete_laplace_is_symmetric_integer_with_right_scale():
    source = _source(np.random.default_rng(11))
    z = discrete_laplace(2**10, 1, 200_000, source)
    p = math.exp(-(2.0**-10))
    var = 2 * p / (1 - p) ** 2
    assert abs(z.mean()) < 5 * math.sqrt(var / z.size)
    assert abs(z.var() / var - 1) < 0.03


def test_discrete_laplace_huge_scale_stays_exact():
    # t = 2**62: U + t V overflows int64 as soon as V >= 1, so Python ints are used.
    z = discrete_laplace(2**62, 1, 200, _source(np.random.default_rng(4)))
    vals = [int(v) for v in z.tolist()]
    assert all(isinstance(v, int) for v in vals)
    assert np.median(np.abs(np.asarray(vals, dtype=float))) > 2.0**58


def test_discrete_gaussian_rejection_constants():
    # sigma = 2**10 exactly: t = sigma, sigma**2/t = 2**10, exponent (|Y| - 2**10)**2 / 2**21
    assert _gaussian_rejection_constants(4**10, 1) == (2**10, 1, 2**10, 1, 2**21)
    # sigma**2 = 2: t = floor(sqrt 2) + 1 = 2, sigma**2/t = 1, exponent (|Y| - 1)**2 / 4
    assert _gaussian_rejection_constants(2, 1) == (2, 1, 1, 1, 4)
    # sigma**2 = 5/3: t = 2, sigma**2/t = 5/6; exponent (6|Y| - 5)**2 * 3 / (2*5*36)
    t, q, p, mult, den = _gaussian_rejection_constants(5, 3)
    assert (t, q, p) == (2, 6, 5)
    assert Fraction(mult, den) == Fraction(3, 2 * 5 * 36)


def test_discrete_gaussian_large_sigma_uses_exact_integers():
    # sigma = 2**28: (|Y| - 2**28)**2 can exceed int64, forcing the Python-int path.
    z = discrete_gaussian(4**28, 1, 2000, _source(np.random.default_rng(9)))
    assert z.dtype == np.int64
    assert abs(z.std() / 2**28 - 1) < 0.1


# --------------------------------------------------------------------------------------
# grid helpers
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [1, 3, 1000, 10**6])
@pytest.mark.parametrize("epsilon", [0.01, 1.0, 50.0])
def test_laplace_grid_is_exact_and_smallest(dim, epsilon):
    sens = 0.7
    scale = sens * (1 + GRID_HEADROOM) / epsilon
    k, g = laplace_grid(scale=scale, sensitivity=sens, epsilon=epsilon, dim=dim, owner="t")
    assert k >= MIN_GRID_EXPONENT and g == math.ldexp(scale, -k)
    assert Fraction(sens) / Fraction(g) + 2 * dim <= Fraction(epsilon) * 2**k
    if k > MIN_GRID_EXPONENT:
        g1 = math.ldexp(scale, -(k - 1))
        assert Fraction(sens) / Fraction(g1) + 2 * dim > Fraction(epsilon) * 2 ** (k - 1)
    # and the brief's sufficient condition 2 d g <= eta Delta holds at the chosen k
    assert 2 * dim * g <= GRID_HEADROOM * sens * (1 + 1e-12)


@pytest.mark.parametrize("dim", [1, 2, 10_000])
def test_gaussian_grid_is_exact(dim):
    nm, sens = 3.7306316348159374, 2.5
    sigma = nm * sens * (1 + GRID_HEADROOM) * (1 + 2**-50)
    k, g = gaussian_grid(sigma=sigma, sensitivity=sens, noise_multiplier=nm, dim=dim, owner="t")
    assert k >= MIN_GRID_EXPONENT and g == math.ldexp(sigma, -k)
    a = Fraction(2**k) / Fraction(nm) - Fraction(sens) / Fraction(g)
    assert a >= 0 and a * a >= 4 * dim


def test_grid_refuses_impossible_dimension():
    with pytest.raises(InvalidParameterError, match=r"cannot place .* on an exact noise grid"):
        laplace_grid(scale=1e-6, sensitivity=1e-9, epsilon=1e-3, dim=10**15, owner="Laplace")
    with pytest.raises(InvalidParameterError, match=r"cannot place .* on an exact noise grid"):
        gaussian_grid(sigma=1.0, sensitivity=1.0, noise_multiplier=1.0, dim=10**18, owner="G")


def test_round_to_grid_clips_private_values_beyond_exact_range_and_refuses_public_ones():
    """A private value past 2**51 grid steps is clipped, never refused: the refusal would come after the charge
    and could depend on one row (DESIGN rule 7). A public value (a declared threshold) is still refused."""
    assert round_to_grid(np.array([0.49, 0.51, -2.5]), 1.0, "value", "X").tolist() == [0, 1, -2]
    top = 2**51 - 1
    assert round_to_grid(np.array([2.0**51, -1e300, 2.0**60]), 1.0, "value", "X").tolist() == [top, -top, top]
    # g tiny enough that value / g overflows to infinity: still clipped
    assert round_to_grid(np.array([1e300]), 1e-300, "value", "X").tolist() == [top]
    with pytest.raises(InvalidParameterError, match=r"The 'value' parameter of X is too large"):
        round_to_grid(np.array([2.0**51]), 1.0, "value", "X", public=True)
    with pytest.raises(InvalidParameterError, match=r"too large"):
        round_to_grid(np.array([np.nan]), 1.0, "value", "X")


@pytest.mark.parametrize("g", [1.0, 2.0**-10, 3.7e-9, 1e-200])
def test_round_to_grid_keeps_the_rounding_bound_across_the_clip(g):
    """The mechanisms charge |round(v/g) - round(v'/g)| <= |v - v'| / g + 2 per coordinate. Checked in exact
    rationals on pairs straddling the clip: one below the limit, one above, and both above."""
    rng = np.random.default_rng(0)
    limit = Fraction(2**51) * Fraction(g)
    for _ in range(2000):
        u = limit * (1 + Fraction(int(rng.integers(-2000, 2000)), 10**6))
        w = u + Fraction(float(rng.exponential(4.0))) * Fraction(g)
        a, b = float(u), float(w)
        ra, rb = round_to_grid(np.array([a, b]), g, "value", "X").tolist()
        assert abs(rb - ra) <= abs(Fraction(b) - Fraction(a)) / Fraction(g) + 2
        assert abs(ra) <= 2**51 - 1 and abs(rb) <= 2**51 - 1


# --------------------------------------------------------------------------------------
# block sampling (several rounds of randomness per integers_below call)
# --------------------------------------------------------------------------------------
# Statistical tests below: each states H0 and uses a per-test level alpha = 1e-4 with a
# fixed seed (deterministic in CI). The block widths depend on the number of rows, so
# the samples are drawn in many calls of moderate size -- the regime with wide blocks.
ALPHA = 1e-4


def _seeded(seed: int) -> SeededRandomSource:
    return SeededRandomSource(np.random.default_rng(seed))


def _chisquare_pvalue(counts, probs) -> float:
    from scipy import stats

    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() * np.asarray(probs, dtype=float)
    assert expected.min() >= 5.0
    return float(stats.chisquare(counts, expected).pvalue)


def _binom_pvalue(hits: int, n: int, p: float) -> float:
    from scipy import stats

    return float(stats.binomtest(hits, n, p).pvalue)


class ScriptedSource(RandomSource):
    """Seeded source whose first ``len(script)`` calls are answered by ``script``.

    ``script[i]`` maps the array of bounds of call ``i`` to the values returned
    (they must lie below the bounds); later calls are seeded uniforms. Used to
    force the rare "every trial of the block succeeded" continuation branches.
    """

    seeded = True

    def __init__(self, seed: int, script) -> None:
        self._gen = np.random.default_rng(seed)
        self._script = list(script)
        self.highs: list[np.ndarray] = []

    def integers_below(self, high):
        h = self._check_high(high)
        self.highs.append(h.copy())
        if self._script:
            out = np.asarray(self._script.pop(0)(h), dtype=np.int64)
            assert out.shape == h.shape and (out >= 0).all() and (out < h).all()
            return out
        return self._gen.integers(0, h, dtype=np.int64) if h.size else np.empty(h.shape, np.int64)


_E1_SUCCESS = math.factorial(20) // 6   # K* = 3 (odd): a Bernoulli(exp(-1)) success


@pytest.mark.statistical
def test_bernoulli_exp_minus_one_frequency_in_blocks():
    # H0: _bernoulli_exp_minus_one is Bernoulli(exp(-1)); exact binomial test, alpha = 1e-4,
    # n = 2e5 draws in 2000 calls of 100.
    source = _seeded(101)
    hits = sum(int(_bernoulli_exp_minus_one(100, source).sum()) for _ in range(2000))
    assert _binom_pvalue(hits, 200_000, math.exp(-1)) > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize("size", [7, 300, 20_000])
def test_geometric_exp_minus_one_pmf_in_blocks(size):
    # H0: P[V = v] = (1 - e^-1) e^-v; Pearson chi-square on v = 0..8 and v >= 9, alpha = 1e-4,
    # about 1.2e5 draws in calls of the given size (different block widths).
    source = _seeded(202 + size)
    calls = max(1, 120_000 // size)
    v = np.concatenate([_geometric_exp_minus_one(size, source) for _ in range(calls)])
    counts = np.bincount(np.minimum(v, 9), minlength=10)
    probs = np.array([(1 - math.exp(-1)) * math.exp(-k) for k in range(9)] + [math.exp(-9)])
    assert _chisquare_pvalue(counts, probs) > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize(("x", "y"), [(3, 10), (1, 1), (27, 10)])
@pytest.mark.parametrize("size", [1, 60, 5000])
def test_bernoulli_exp_frequency_in_blocks(x, y, size):
    # H0: bernoulli_exp(x, y) is Bernoulli(exp(-x/y)) (gamma = 0.3, 1, 2.7); exact binomial
    # test, alpha = 1e-4, about 6e4 draws in calls of the given size (2e4 for size 1).
    source = _seeded(x * 1000 + y + size)
    calls = 20_000 if size == 1 else 60_000 // size
    hits = sum(int(bernoulli_exp(np.full(size, x), y, source).sum()) for _ in range(calls))
    assert _binom_pvalue(hits, calls * size, math.exp(-x / y)) > ALPHA


def _laplace_pmf_binned(num: int, den: int, lo: int, hi: int) -> np.ndarray:
    p = math.exp(-den / num)
    z = np.arange(lo, hi + 1)
    inner = (1 - p) / (1 + p) * p ** np.abs(z)
    tail = p ** (hi + 1) / (1 + p)              # P[Z > hi] = P[Z < -hi] for lo = -hi
    return np.concatenate([[tail], inner, [tail]])


def _gaussian_pmf_binned(s2: float, lo: int, hi: int) -> np.ndarray:
    z = np.arange(-400, 401)
    w = np.exp(-(z.astype(float) ** 2) / (2 * s2))
    w /= math.fsum(w)
    return np.concatenate([[w[z < lo].sum()], w[(z >= lo) & (z <= hi)], [w[z > hi].sum()]])


def _bins(z: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.bincount(np.clip(z, lo - 1, hi + 1) - (lo - 1), minlength=hi - lo + 3)


@pytest.mark.statistical
@pytest.mark.parametrize(("num", "den", "hi", "size"), [(3, 2, 9, 31), (1, 1, 5, 3), (7, 1, 25, 500)])
def test_discrete_laplace_pmf_in_blocks(num, den, hi, size):
    # H0: P[Z = z] proportional to exp(-|z| den / num); Pearson chi-square over -hi..hi plus
    # pooled tails, alpha = 1e-4, about 8e4 draws in calls of the given size.
    source = _seeded(num * 10 + den + size)
    calls = max(1, 80_000 // size)
    z = np.concatenate([discrete_laplace(num, den, size, source) for _ in range(calls)])
    assert _chisquare_pvalue(_bins(z, -hi, hi), _laplace_pmf_binned(num, den, -hi, hi)) > ALPHA


@pytest.mark.statistical
@pytest.mark.parametrize(("a", "b", "hi", "size"), [(2, 1, 4, 93), (5, 3, 3, 1), (16, 1, 11, 210)])
def test_discrete_gaussian_pmf_in_blocks(a, b, hi, size):
    # H0: P[Z = z] proportional to exp(-z**2 b / (2 a)); Pearson chi-square over -hi..hi plus
    # pooled tails, alpha = 1e-4, about 8e4 draws in calls of the given size (2e4 for size 1).
    source = _seeded(a * 10 + b + size)
    calls = 20_000 if size == 1 else 80_000 // size
    z = np.concatenate([discrete_gaussian(a, b, size, source) for _ in range(calls)])
    assert _chisquare_pvalue(_bins(z, -hi, hi), _gaussian_pmf_binned(a / b, -hi, hi)) > ALPHA


@pytest.mark.statistical
def test_samplers_fill_over_many_rounds(monkeypatch):
    # Force one proposal per round (every call then needs many rejection rounds) and check
    # the pmf: H0 as in the tests above, chi-square at alpha = 1e-4 each, 1.5e4 draws.
    calls = []

    def one_proposal(needed, acceptance):
        calls.append(needed)
        return 1

    monkeypatch.setattr(discrete_module, "_proposal_count", one_proposal)
    source = _seeded(77)
    z = np.concatenate([discrete_laplace(3, 2, 30, source) for _ in range(500)])
    assert _chisquare_pvalue(_bins(z, -8, 8), _laplace_pmf_binned(3, 2, -8, 8)) > ALPHA
    n_laplace = len(calls)
    w = np.concatenate([discrete_gaussian(2, 1, 30, source) for _ in range(500)])
    assert _chisquare_pvalue(_bins(w, -4, 4), _gaussian_pmf_binned(2.0, -4, 4)) > ALPHA
    # the patch reached both samplers, and with one proposal per round each call needed many rounds
    assert n_laplace >= 500 * 30 and len(calls) - n_laplace >= 500 * 30


@pytest.mark.statistical
def test_bernoulli_exp_minus_one_continuation_branch():
    # Force r = 0 (all 19 trials K = 2..20 succeeded, probability 1/20!) for every draw; the
    # chain must continue from K = 21 with fresh trials. H0: the result is then
    # Bernoulli(P[K* odd | K* > 20]); exact binomial test, alpha = 1e-4, n = 2e4.
    n = 20_000
    source = ScriptedSource(5, [lambda h: np.zeros_like(h)])
    out = _bernoulli_exp_minus_one(n, source)
    assert len(source.highs) >= 2 and int(source.highs[1].min()) == 21
    f20 = Fraction(math.factorial(20))
    p_odd = sum(f20 / math.factorial(k - 1) - f20 / math.factorial(k) for k in range(21, 60, 2))
    assert _binom_pvalue(int(out.sum()), n, float(p_odd)) > ALPHA


@pytest.mark.statistical
def test_bernoulli_exp_fraction_continuation_branch():
    # Force every trial of the first block of bernoulli_exp(x=1, y=2) (gamma = 1/2) to succeed
    # (all draws 0 < 1): the rows continue at K = w + 1. H0: the result is Bernoulli(
    # P[K* odd | K* > w]) with P[K* > k] = gamma^k / k!; exact binomial test, alpha = 1e-4.
    n = 20_000
    width = samplers_module._block_width("chain", n, 1)
    source = ScriptedSource(6, [lambda h: np.zeros_like(h)])
    out = bernoulli_exp(np.full(n, 1), 2, source)
    assert source.highs[0].shape == ((n, width) if width > 1 else (n,))
    assert len(source.highs) >= 2
    gamma = Fraction(1, 2)

    def tail(k):  # P[K* > k]
        return gamma**k / math.factorial(k)

    p_odd = sum(tail(k - 1) - tail(k) for k in range(width + 1, width + 40) if k % 2) / tail(width)
    assert _binom_pvalue(int(out.sum()), n, float(p_odd)) > ALPHA


@pytest.mark.statistical
def test_geometric_and_split_continuation_branches():
    # Force the first block of Bernoulli(exp(-1)) trials to be all successes.
    # (a) geometric: every row continues, and V - w is again Geometric(1 - e^-1) (H0;
    #     chi-square on 0..6 and >= 7, alpha = 1e-4, n = 5e4).
    n = 50_000
    width = discrete_module._geometric_plan(n)[0]  # the first block of the timing-safe plan
    source = ScriptedSource(8, [lambda h: np.full(h.shape, _E1_SUCCESS)])
    v = _geometric_exp_minus_one(n, source)
    assert v.min() >= width
    counts = np.bincount(np.minimum(v - width, 7), minlength=8)
    probs = np.array([(1 - math.exp(-1)) * math.exp(-k) for k in range(7)] + [math.exp(-7)])
    assert _chisquare_pvalue(counts, probs) > ALPHA
    # (b) bernoulli_exp(x, 1) with whole part x > cap: after a forced all-success batch of
    #     cap trials the rows need x - cap more; H0: the result is Bernoulli(exp(-(x - cap)));
    #     exact binomial test, alpha = 1e-4, n = 5e4.
    cap = samplers_module._block_width("geometric", n, 0)
    x = cap + 1
    source = ScriptedSource(9, [lambda h: np.full(h.shape, _E1_SUCCESS)])
    out = bernoulli_exp(np.full(n, x), 1, source)
    assert source.highs[0].size == n * cap
    assert _binom_pvalue(int(out.sum()), n, math.exp(-(x - cap))) > ALPHA


def test_block_widths_adapt_to_the_number_of_rows():
    # Few rows: wide blocks (continuation rare); very many rows: one or two columns,
    # close to the sequential loop (few surplus draws).
    assert samplers_module._block_width("chain", 50, 1) >= 5
    assert samplers_module._block_width("chain", 10**7, 1) <= 2
    assert samplers_module._block_width("geometric", 50, 0) >= 5
    assert samplers_module._block_width("geometric", 10**7, 0) <= 2
    assert samplers_module._proposal_count(1, 0.5) >= 2
    assert samplers_module._proposal_count(100, 1.0) == 100


def test_block_sampling_is_reproducible_and_uses_few_calls():
    a = discrete_gaussian(4**17, 1, 93, IntegersOnlySource(3))
    src = IntegersOnlySource(3)
    b = discrete_gaussian(4**17, 1, 93, src)
    assert np.array_equal(a, b)
    assert src.calls <= 20          # the one-call-per-round sampler needed about 150


def _counting(seed: int):
    """A seeded source that counts its integers_below calls and uniforms."""
    source = _seeded(seed)
    inner = source.integers_below
    tally = {"calls": 0, "uniforms": 0}

    def counted(high):
        out = inner(high)
        tally["calls"] += 1
        tally["uniforms"] += int(np.size(out))
        return out

    source.integers_below = counted
    return source, tally


@pytest.mark.parametrize("size", [1, 3, 40, 2000])
def test_geometric_draws_do_not_depend_on_the_output(size):
    """Timing: the number of sampler calls and of uniforms drawn is the same whatever the counts drawn.

    Before the fix, one draw had a 7-column block and every count >= 7 (a discrete Laplace output of at
    least 7 scales) took one more call. 4000 draws of one value see about 4 counts >= 7; calls of 40 and
    2000 draws use the two-block plan, whose second block is always drawn."""
    source, tally = _counting(77 + size)
    seen = set()
    biggest = 0
    for _ in range(4000 if size == 1 else 200 if size < 2000 else 20):
        tally["calls"] = tally["uniforms"] = 0
        v = _geometric_exp_minus_one(size, source)
        seen.add((tally["calls"], tally["uniforms"]))
        biggest = max(biggest, int(v.max()))
    assert len(seen) == 1, seen
    assert biggest >= 7  # large counts were drawn: the test measures something
    w1, slots, w2 = discrete_module._geometric_plan(size)
    assert seen == {(1 + (slots > 0), size * w1 + slots * w2)}
    if slots:  # more survivors than slots, or a slot row succeeding throughout: <= 2**-41 each
        assert slots * math.exp(-w2) <= 2.0**-41
    else:
        assert size * math.exp(-w1) <= 2.0**-40


@pytest.mark.statistical
@pytest.mark.parametrize("size", [1, 50, 5000])
def test_geometric_timing_safe_plan_keeps_the_law(size):
    # H0: P[V = v] = (1 - e^-1) e^-v under the timing-safe plans (one wide block; two blocks with a fixed
    # second one); Pearson chi-square on v = 0..8 and v >= 9, alpha = 1e-4, about 6e4 draws.
    source = _seeded(303 + size)
    v = np.concatenate([_geometric_exp_minus_one(size, source) for _ in range(max(1, 60_000 // size))])
    counts = np.bincount(np.minimum(v, 9), minlength=10)
    probs = np.array([(1 - math.exp(-1)) * math.exp(-k) for k in range(9)] + [math.exp(-9)])
    assert _chisquare_pvalue(counts, probs) > ALPHA
