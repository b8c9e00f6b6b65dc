"""Distribution tests of privtune's mechanisms and exact samplers.

Conventions (style-models.md section 3.16): every test states its null hypothesis
H0, its statistic, its per-test level alpha = 1e-4 and its sample size with the
power against a named alternative. There are 16 test cases (19 statistics), so
the family-wise false-alarm rate per seed is at most 1.9e-3 (Bonferroni). Seeds
are fixed, so CI is deterministic; a nightly sweep over seeds should stay quiet
at that rate.

Powers were computed offline from the exact alternative distributions: for
chi-square tests with the non-central chi-square (non-centrality
``n * sum (p_alt - p0)**2 / p0``), for KS tests from the exact sup-distance
between the CDFs against the KS critical value (and confirmed by simulation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from privtune.mechanisms import (
    Exponential,
    Gaussian,
    Laplace,
    SparseVector,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
)
from privtune.utils import check_random_state

pytestmark = pytest.mark.statistical

ALPHA = 1e-4


def _source(seed: int):
    return check_random_state(np.random.default_rng(seed))


def _chisquare(counts: np.ndarray, probs: np.ndarray) -> float:
    """p-value of Pearson's chi-square goodness-of-fit (probs sum to one)."""
    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() * np.asarray(probs, dtype=float)
    assert expected.min() >= 5.0, "bins must have expected counts >= 5"
    return float(stats.chisquare(counts, expected).pvalue)


def _integer_bins(z: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Counts of z < lo, z = lo..hi, z > hi."""
    inner = np.bincount(np.clip(z, lo - 1, hi + 1) - (lo - 1), minlength=hi - lo + 3)
    return inner


def _discrete_laplace_pmf_binned(num: int, den: int, lo: int, hi: int) -> np.ndarray:
    p = math.exp(-den / num)
    z = np.arange(lo, hi + 1)
    inner = (1 - p) / (1 + p) * p ** np.abs(z)
    left = p ** (-(lo - 1)) / (1 + p) if lo - 1 < 0 else 1 - p ** (lo) / (1 + p)
    right = p ** (hi + 1) / (1 + p)
    return np.concatenate([[left], inner, [right]])


def _discrete_gaussian_pmf_binned(s2: float, lo: int, hi: int) -> np.ndarray:
    z = np.arange(-400, 401)
    w = np.exp(-(z.astype(float) ** 2) / (2 * s2))
    w /= math.fsum(w)
    inner = w[(z >= lo) & (z <= hi)]
    return np.concatenate([[w[z < lo].sum()], inner, [w[z > hi].sum()]])


# --------------------------------------------------------------------------------------
# mechanism-level Kolmogorov-Smirnov tests
# --------------------------------------------------------------------------------------
def test_laplace_mechanism_matches_continuous_laplace():
    """H0: Laplace(eps=1, Delta=1).randomise(0.3) ~ 0.3 + Laplace(scale=mech.scale).

    Statistic: one-sample Kolmogorov-Smirnov on n = 2e5 coordinates of one
    vector release, at alpha = 1e-4 (critical D = 0.0050). The noise is discrete
    Laplace on the grid g = scale / 2**29 chosen for d = 2e5; its CDF differs from
    the continuous one by at most about g / scale ~ 2e-9, and the rounding of 0.3
    to the grid moves it by less than that, so at this n KS cannot tell the grid
    from the continuum. Power: a scale wrong by 5 % gives a sup-distance of 0.0090
    between the CDFs, rejected with power > 0.999.
    """
    mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=101)
    n = 200_000
    out = mech.randomise(np.full(n, 0.3))
    assert mech.scale / mech.grid_spacing(n) >= 2**10
    p = stats.kstest(out, stats.laplace(loc=0.3, scale=mech.scale).cdf).pvalue
    assert p > ALPHA


def test_gaussian_mechanism_matches_continuous_normal():
    """H0: Gaussian(eps=1, delta=1e-5, Delta=1).randomise(-2.1) ~ N(-2.1, sigma**2).

    Statistic: one-sample KS on n = 2e5 coordinates at alpha = 1e-4 (critical
    D = 0.0050). The noise is a discrete Gaussian with sigma_grid = 2**22 steps;
    the discretisation changes the CDF by about 1 / (sqrt(2 pi) sigma_grid) < 1e-6,
    invisible at this n. Power: sigma wrong by 5 % gives a sup-distance of 0.0118,
    rejected with power > 0.999.
    """
    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=202)
    n = 200_000
    out = mech.randomise_each(np.full(n, -2.1))
    p = stats.kstest(out, stats.norm(loc=-2.1, scale=mech.sigma).cdf).pvalue
    assert p > ALPHA


# --------------------------------------------------------------------------------------
# exact pmf of the integer samplers
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("num", "den", "lo", "hi", "seed"), [(3, 2, -12, 12, 1), (5, 1, -30, 30, 2)])
def test_discrete_laplace_pmf(num, den, lo, hi, seed):
    """H0: discrete_laplace(num, den) has pmf proportional to exp(-|z| den / num).

    Statistic: Pearson chi-square over the integers lo..hi plus two pooled tails
    (all expected counts >= 5), n = 2e5 draws, alpha = 1e-4. Power: a scale wrong
    by 5 % gives non-centrality 530 (scale 3/2) and 502 (scale 5), so power
    > 0.999 in both cases.
    """
    z = discrete_laplace(num, den, 200_000, _source(seed))
    probs = _discrete_laplace_pmf_binned(num, den, lo, hi)
    assert _chisquare(_integer_bins(z, lo, hi), probs) > ALPHA


@pytest.mark.parametrize(("a", "b", "lo", "hi", "seed"), [(2, 1, -5, 5, 3), (5, 3, -4, 4, 4)])
def test_discrete_gaussian_pmf(a, b, lo, hi, seed):
    """H0: discrete_gaussian(a, b) has pmf proportional to exp(-z**2 b / (2 a)).

    sigma**2 = 2 exercises the integer-t path (t = 2, sigma**2/t = 1) and
    sigma**2 = 5/3 the general rational one (t = 2, sigma**2/t = 5/6).
    Statistic: Pearson chi-square over lo..hi plus pooled tails, n = 2e5,
    alpha = 1e-4. Power: sigma wrong by 5 % gives non-centrality ~ 1060, power
    > 0.999.
    """
    z = discrete_gaussian(a, b, 200_000, _source(seed))
    probs = _discrete_gaussian_pmf_binned(a / b, lo, hi)
    assert _chisquare(_integer_bins(z, lo, hi), probs) > ALPHA


@pytest.mark.parametrize(("x", "y"), [(1, 3), (1, 1), (2, 1), (7, 2), (5, 11)])
def test_bernoulli_exp_frequency(x, y):
    """H0: bernoulli_exp(x, y) is Bernoulli(exp(-x/y)).

    Cases cover gamma < 1, gamma = 1 and gamma > 1 with integer and fractional
    parts. Statistic: exact two-sided binomial test on n = 1e5 draws,
    alpha = 1e-4. Power: against a 3 % error in the exponent (exp(-1.03 gamma))
    the power is 0.87 for gamma = 1/3 and above 0.95 for the other cases.
    """
    n = 100_000
    hits = int(bernoulli_exp(np.full(n, x), y, _source(10 * x + y)).sum())
    assert stats.binomtest(hits, n, math.exp(-x / y)).pvalue > ALPHA


def test_sampler_and_mechanism_variances():
    """H0: sample variances equal the closed forms.

    Discrete Laplace with scale t = 2**10: Var = 2 p / (1 - p)**2, p = exp(-1/t).
    Discrete Gaussian with sigma**2 = 3: Var = sum z**2 w(z) / sum w(z) (series).
    Laplace mechanism: Var = Laplace.variance(size); Gaussian mechanism:
    Var = sigma**2. Statistic: z = (s**2 - Var) / SE with SE = sqrt((m4 - s**4)/n)
    from the sample fourth moment, n = 2e5 each, two-sided alpha = 1e-4 per
    statistic (|z| < 3.89; four statistics, so this test's level is 4e-4).
    Power: a variance wrong by 5 % gives |z| ~ 10 (Laplace, kurtosis 6) and
    ~ 16 (Gaussian): power > 0.999.
    """
    n = 200_000
    zcrit = stats.norm.isf(ALPHA / 2)

    def zstat(sample: np.ndarray, var: float) -> float:
        c = sample - sample.mean()
        s2 = c @ c / (n - 1)
        m4 = np.mean(c**4)
        return (s2 - var) / math.sqrt((m4 - s2 * s2) / n)

    t = 2**10
    p = math.exp(-1 / t)
    z = discrete_laplace(t, 1, n, _source(21)).astype(float)
    assert abs(zstat(z, 2 * p / (1 - p) ** 2)) < zcrit

    grid = np.arange(-200, 201, dtype=float)
    w = np.exp(-(grid**2) / 6.0)
    var_dg = float(grid**2 @ w / w.sum())
    z = discrete_gaussian(3, 1, n, _source(22)).astype(float)
    assert abs(zstat(z, var_dg)) < zcrit

    lap = Laplace(epsilon=0.5, sensitivity=1.0, random_state=23)
    assert abs(zstat(lap.randomise(np.zeros(n)), lap.variance(n))) < zcrit

    gauss = Gaussian(epsilon=0.5, delta=1e-6, sensitivity=1.0, random_state=24)
    assert abs(zstat(gauss.randomise_each(np.zeros(n)), gauss.variance())) < zcrit


# --------------------------------------------------------------------------------------
# exponential mechanism
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_selection_frequencies_small(monotonic):
    """H0: Exponential.select draws index i with probability probabilities(u)[i].

    Five candidates with utilities (0, 1, 2, 2, 4), eps = 1, Delta = 1.
    Statistic: Pearson chi-square over the 5 indices, n = 2e4 selections,
    alpha = 1e-4. Power: the classic bug of using the other weight factor
    (eps u / Delta instead of eps u / (2 Delta), or vice versa) gives
    non-centrality 6000 (resp. 10500): power > 0.999.
    """
    u = np.array([0.0, 1.0, 2.0, 2.0, 4.0])
    mech = Exponential(epsilon=1.0, sensitivity=1.0, monotonic=monotonic,
                       random_state=31 + monotonic)
    n = 20_000
    picks = np.array([mech.select(u) for _ in range(n)])
    counts = np.bincount(picks, minlength=u.size)
    assert _chisquare(counts, mech.probabilities(u)) > ALPHA


def test_exponential_selection_frequencies_many_candidates():
    """H0: with 2000 candidates, selections follow probabilities() (binned in 10 blocks).

    Utilities rise linearly from 0 to 8 (eps = 1, Delta = 1), so the blocks'
    probabilities range from 0.9 % to 34 %, exercising the exact integer
    cumulative sums and the binary search over many entries. Statistic: Pearson
    chi-square over 10 blocks of 200 indices, n = 2e4, alpha = 1e-4. Power: a
    weight factor wrong by 10 % (exp(0.55 u) instead of exp(0.5 u)) gives
    non-centrality ~ 123: power > 0.999.
    """
    u = np.linspace(0.0, 8.0, 2000)
    mech = Exponential(epsilon=1.0, sensitivity=1.0, random_state=33)
    n = 20_000
    picks = np.array([mech.select(u) for _ in range(n)])
    counts = np.bincount(picks // 200, minlength=10)
    probs = mech.probabilities(u).reshape(10, 200).sum(axis=1)
    assert _chisquare(counts, probs) > ALPHA


# --------------------------------------------------------------------------------------
# sparse vector
# --------------------------------------------------------------------------------------
def _dlap_sf(m: np.ndarray, t: int) -> np.ndarray:
    """P[nu >= m] for nu discrete Laplace with scale t (pmf prop. to exp(-|z|/t))."""
    p = math.exp(-1.0 / t)
    m = np.asarray(m, dtype=float)
    return np.where(m >= 1, p ** np.maximum(m, 1) / (1 + p), 1 - p ** np.maximum(1 - m, 0) / (1 + p))


def _svt_exact_index_distribution(svt: SparseVector, queries: list[float]) -> np.ndarray:
    """Exact law of the released index of the implemented (integer) AboveThreshold.

    T_hat = round(T/g) + Z_T with Z_T ~ DLap(2**k); query i is "above" iff
    round(q_i/g) + nu_i >= T_hat with nu_i ~ DLap(2**(k+1)). Summed over every
    Z_T in +-45 * 2**k (the rest has mass below 1e-19). Returns P[I = i] for each i
    and, last, P[no "above"].
    """
    g, k = svt.grid_spacing, svt._k
    t_thr, t_q = 2**k, 2 ** (k + 1)
    zmax = 45 * t_thr
    zt = np.arange(-zmax, zmax + 1)
    pt = math.exp(-1.0 / t_thr)
    w = (1 - pt) / (1 + pt) * pt ** np.abs(zt).astype(float)
    t_hat = int(np.rint(svt.threshold / g)) + zt
    alive = np.ones_like(w)
    out = []
    for q in queries:
        above = _dlap_sf(t_hat - int(np.rint(q / g)), t_q)
        out.append(float(np.sum(w * alive * above)))
        alive = alive * (1 - above)
    out.append(float(np.sum(w * alive)))
    return np.asarray(out)


def _svt_continuous_index_distribution(scale_t: float, scale_q: float, threshold: float,
                                       queries: list[float]) -> np.ndarray:
    """The same law for continuous Laplace noise, by numerical integration over T_hat."""
    f_t = stats.laplace(loc=threshold, scale=scale_t).pdf

    def integrand(tau: float, i: int | None) -> float:
        val = f_t(tau)
        stop = len(queries) if i is None else i
        for q in queries[:stop]:
            val *= stats.laplace.cdf(tau - q, scale=scale_q)
        if i is not None:
            val *= stats.laplace.sf(tau - queries[i], scale=scale_q)
        return val

    points = sorted({threshold, *queries})
    res = [integrate.quad(integrand, -60, 60, args=(i,), points=points, limit=200,
                          epsabs=1e-12)[0] for i in range(len(queries))]
    res.append(integrate.quad(integrand, -60, 60, args=(None,), points=points, limit=200,
                              epsabs=1e-12)[0])
    return np.asarray(res)


def test_sparse_vector_index_distribution():
    """H0: the index released by SparseVector.run follows its exact law.

    Setting: eps = 1, Delta = 1, T = 0, queries (-2, -1, 0, 0.5, 1, -3, 2); the
    law of the first "above" index (or None) is computed exactly for the integer
    mechanism by summation over the noisy threshold, and agrees with the
    continuous-Laplace AboveThreshold (numerical integration) to 1e-4, i.e. the
    grid does not change it visibly. Statistic: Pearson chi-square over the 8
    outcomes, n = 8000 runs, alpha = 1e-4. Power: a query noise of Lap(2 Delta/eps)
    instead of Lap(4 Delta/eps) (the most common SVT bug) gives non-centrality
    ~ 720, and a threshold noise drawn afresh per query instead of once per run
    gives ~ 450: power > 0.999 against both.
    """
    queries = [-2.0, -1.0, 0.0, 0.5, 1.0, -3.0, 2.0]
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=41)
    exact = _svt_exact_index_distribution(svt, queries)
    assert math.isclose(exact.sum(), 1.0, rel_tol=1e-12)
    eta = 2.0**-10
    cont = _svt_continuous_index_distribution(2 * (1 + eta), 4 * (1 + eta), 0.0, queries)
    np.testing.assert_allclose(exact, cont, atol=1e-4)

    n = 8000
    results = [svt.run(queries) for _ in range(n)]
    counts = np.bincount([len(queries) if r is None else r for r in results],
                         minlength=len(queries) + 1)
    assert _chisquare(counts, exact) > ALPHA
