r"""Exact discrete Laplace and discrete Gaussian samplers.

:func:`discrete_laplace` (Canonne, Kamath & Steinke 2020, Algorithm 2) and
:func:`discrete_gaussian` (Algorithm 3), drawn by vectorised rejection with
overdrawn proposals, on top of the Bernoulli(exp(-gamma)) primitives and block
sizes of :mod:`privtune.mechanisms._bernoulli`, where the exactness argument for
blocks and overdraws is given. Overview and references:
:mod:`privtune.mechanisms._samplers`; grid arithmetic: :mod:`privtune.mechanisms._grid`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._bernoulli import (
    _BERNOULLI_E1_COST,
    _INT64_MAX,
    _MAX_HIGH,
    _ROUND_COST,
    _bernoulli_exp_fraction,
    _bernoulli_exp_minus_one,
    _bernoulli_exp_split,
    _block_width,
    _check_positive_int,
    _check_size,
    _check_source,
    _proposal_count,
)
from privtune.utils._random import RandomSource

__all__ = ["discrete_laplace", "discrete_gaussian"]


# --------------------------------------------------------------------------------------
# discrete Laplace -- CKS20 Algorithm 2
# --------------------------------------------------------------------------------------
#: The geometric sampler takes an unplanned round (which would time-stamp a large output) with probability at
#: most 2**-_TIMING_BITS per call.
_TIMING_BITS = 40


def _safe_width(rows: int, bits: int) -> int:
    """Smallest ``w`` with ``rows exp(-w) <= 2**-bits``: ``ceil(bits ln 2 + ln rows)``."""
    w = math.ceil(bits * math.log(2.0) + math.log(rows))
    while rows * math.exp(-w) > 2.0**-bits:  # guard the float rounding of the logs
        w += 1
    return w


def _slots(mean: float, bits: int) -> int:
    """Smallest ``R >= mean`` whose Chernoff bound ``exp(-mu) (e mu / R)**R`` on ``P[X >= R]`` is ``<= 2**-bits``.

    ``X`` is binomial (or any sum of independent Bernoullis) with mean at most ``mu``.
    """
    target = -bits * math.log(2.0)

    def log_tail(r: int) -> float:
        return -mean + r * (1.0 + math.log(mean) - math.log(r)) if mean > 0.0 else -math.inf

    lo, hi = max(1, math.ceil(mean)), max(2, math.ceil(mean) + 1)
    while log_tail(hi) > target:
        hi *= 2
    while lo < hi:  # log_tail decreases in r above the mean
        mid = (lo + hi) // 2
        if log_tail(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@functools.lru_cache(maxsize=4096)
def _geometric_plan(n: int) -> tuple[int, int, int]:
    """``(w1, slots, w2)``: the fixed blocks of :func:`_geometric_exp_minus_one` for ``n`` draws.

    Either one block of ``w1 = ceil(40 ln 2 + ln n)`` columns (``slots = 0``),
    or a narrower first block of ``w1`` columns and always a second one of
    ``slots`` rows of ``w2`` columns, where ``slots`` exceeds the number of rows
    that survive the first block except with probability ``2**-41`` and
    ``slots exp(-w2) <= 2**-41``. The cheaper of the candidates is chosen, in
    the cost model of :func:`~privtune.mechanisms._bernoulli._block_width`.
    """
    w_single = _safe_width(n, _TIMING_BITS)
    best, best_cost = (w_single, 0, 0), float(n * w_single)
    for w1 in range(1, w_single):
        mean = n * math.exp(-w1)
        slots = _slots(mean, _TIMING_BITS + 1)
        w2 = _safe_width(slots, _TIMING_BITS + 1)
        cost = n * w1 + slots * w2 + _ROUND_COST / _BERNOULLI_E1_COST
        if cost < best_cost:
            best, best_cost = (w1, slots, w2), cost
    return best


def _leading_successes(n: int, width: int, source: RandomSource) -> tuple[np.ndarray, np.ndarray]:
    """Counts of leading successes in ``n`` rows of ``width`` Bernoulli(exp(-1)) trials, and the rows
    whose trials all succeeded."""
    ok = _bernoulli_exp_minus_one(n * width, source).reshape(n, width)
    v = ok.argmin(axis=1).astype(np.int64)                  # leading successes (0 if all succeeded)
    going = np.flatnonzero((v == 0) & ok[:, 0])
    v[going] = width
    return v, going


def _geometric_exp_minus_one(n: int, source: RandomSource, *, planned: bool = True) -> np.ndarray:
    """Number of Bernoulli(exp(-1)) successes before the first failure (``n`` draws).

    Blocked: an ``(n, w)`` matrix of independent Bernoulli(exp(-1)) trials is
    drawn at once (one :func:`_bernoulli_exp_minus_one` call, itself one
    ``integers_below`` call but for probability ``1/20!``); each row counts its
    leading successes, and only rows whose ``w`` trials all succeeded
    (probability ``exp(-w)``) go on with fresh trials. Trials after a row's
    first failure are discarded; they are independent of the prefix, so the
    count has the sequential law.

    Timing. The count is (``1/t`` of) the magnitude of a discrete Laplace
    output, so whether a further round -- an observable extra sampler call --
    happens must not depend on it. The blocks follow :func:`_geometric_plan`
    ``(n)``, a function of ``n`` alone: one block of ``ceil(40 ln 2 + ln n)``
    columns (28 for one draw), or, for many draws, a narrower first block and
    *always* a second block of a fixed number of rows (``slots``) handed in
    order to the rows still going (unused rows are discarded: their trials
    are independent of everything else, so the law is unchanged). The number
    of calls and of uniforms drawn is then a function of ``n`` only, except
    with probability at most ``2**-40`` per call (more survivors than slots,
    or a slot row that succeeds throughout), when the remaining rows continue
    as before. Before this, one draw had a 7-column block, and every output
    with ``|noise| >= 7`` scales took a second round.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not planned:  # only after an event of probability <= 2**-40: the cost-optimal block
        v, going = _leading_successes(n, _block_width("geometric", n, 0), source)
        if going.size:
            v[going] += _geometric_exp_minus_one(going.size, source, planned=False)
        return v
    w1, slots, w2 = _geometric_plan(n)
    v, going = _leading_successes(n, w1, source)
    if slots:
        v2, going2 = _leading_successes(slots, w2, source)  # always drawn, whatever survived
        used = going[:slots]
        v[used] += v2[:used.size]
        later = list(used[going2[going2 < used.size]]) + list(going[slots:])
        going = np.asarray(later, dtype=np.int64)
    if going.size:  # probability <= 2**-40
        v[going] += _geometric_exp_minus_one(going.size, source, planned=False)
    return v


def _laplace_acceptance(t: int, s: int) -> float:
    """Estimated acceptance rate of one CKS20 Alg. 2 proposal (sizes overdraws only)."""
    p_d = -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))        # P[D = 1]
    p_zero = -math.expm1(-s / t)                                   # P[Y = 0]
    return p_d * (1.0 - 0.5 * p_zero)


def _laplace_candidates(t: int, s: int, m: int, source: RandomSource) -> np.ndarray:
    """The accepted outputs of ``m`` independent CKS20 Alg. 2 proposals, in proposal order.

    The result is a 1-d array of i.i.d. discrete Laplace samples whose length
    is random (it depends only on the accept/reject pattern).
    """
    if 2 * t <= _MAX_HIGH:  # U uniform on {0..t-1} and a fair sign B from one uniform on {0..2t-1}
        r = source.integers_below(np.full(m, 2 * t, dtype=np.int64))
        u, b = r >> 1, (r & 1).astype(bool)
    else:
        u = source.integers_below(np.full(m, t, dtype=np.int64))
        b = source.bernoulli_half(m)
    d = _bernoulli_exp_fraction(u, t, source)                # D ~ Bernoulli(exp(-U/t))
    u, b = u[d], b[d]
    if u.size == 0:
        return np.empty(0, dtype=np.int64)
    v = _geometric_exp_minus_one(u.size, source)           # V ~ Geometric(1 - exp(-1))
    if t * (int(v.max()) + 1) <= _INT64_MAX:
        y = (u + t * v) // s                                # Y = floor((U + t V) / s)
    else:  # astronomically rare: exact Python integers
        y = (u.astype(object) + t * v.astype(object)) // s
    keep = ~(b & (y == 0))                                  # avoid counting 0 twice
    z = np.where(b, -y, y)
    return z[keep]


def _discrete_laplace_flat(t: int, s: int, n: int, source: RandomSource) -> np.ndarray:
    out: np.ndarray = np.empty(n, dtype=np.int64)
    filled = 0
    acceptance = _laplace_acceptance(t, s)
    while filled < n:
        need = n - filled
        z = _laplace_candidates(t, s, _proposal_count(need, acceptance), source)[:need]
        if z.dtype == object and out.dtype != object:
            out = out.astype(object)
        out[filled:filled + z.size] = z
        filled += z.size
    if out.dtype == object and max(abs(int(v)) for v in out.tolist()) <= _INT64_MAX:
        out = out.astype(np.int64)
    return out


def discrete_laplace(scale_num: int, scale_den: int, size: int | tuple[int, ...],
                     source: RandomSource) -> np.ndarray:
    r"""Exact samples of the discrete Laplace distribution with scale ``scale_num / scale_den``.

    ``P[Z = z]`` is proportional to ``exp(-|z| * scale_den / scale_num)`` on the
    integers.

    Parameters
    ----------
    scale_num : int in [1, 2**62]
        Numerator ``t`` of the scale.
    scale_den : int in [1, 2**62]
        Denominator ``s`` of the scale.
    size : int or tuple of int
        Output shape.
    source : RandomSource
        Uniform randomness.

    Returns
    -------
    ndarray of int64
        (An object array of Python ints in the astronomically unlikely case that
        a sample does not fit in ``int64``.)

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain. Nothing is drawn.

    Notes
    -----
    Canonne, Kamath & Steinke (2020), Algorithm 2, vectorised by rejection:
    ``U`` uniform on ``{0, ..., t-1}``, accepted with probability
    ``exp(-U/t)``; ``V`` the number of Bernoulli(exp(-1)) successes before a
    failure; ``Y = floor((U + t V) / s)``; a fair sign ``B``, rejecting
    ``B = 1, Y = 0``; return ``(1 - 2B) Y``. Every step is exact integer
    arithmetic. The variance is ``2 p / (1 - p)**2`` with ``p = exp(-s/t)``.

    Each round draws more proposals than still needed (sized from an estimate
    of the acceptance rate, so that one round usually suffices) and keeps the
    first accepted ones in proposal order. Accepted proposals are i.i.d. from
    the target and the choice looks only at which proposals were accepted, never
    at their values, so the output is exactly i.i.d. discrete Laplace; the
    surplus is discarded. The same holds for the blocks of Bernoulli trials
    inside each proposal (see :func:`bernoulli_exp`).

    References
    ----------
    .. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian
       for Differential Privacy", NeurIPS 2020.
    """
    owner = "discrete_laplace"
    t = _check_positive_int(scale_num, "scale_num", owner)
    s = _check_positive_int(scale_den, "scale_den", owner)
    shape = _check_size(size, owner)
    _check_source(source, owner)
    n = math.prod(shape)
    return _discrete_laplace_flat(t, s, n, source).reshape(shape)


# --------------------------------------------------------------------------------------
# discrete Gaussian -- CKS20 Algorithm 3
# --------------------------------------------------------------------------------------
def _gaussian_rejection_constants(a: int, b: int) -> tuple[int, int, int, int, int]:
    """Constants of CKS20 Alg. 3 for sigma**2 = a / b.

    Returns ``(t, q, p, mult, den)`` such that the acceptance probability of a
    discrete Laplace(t) proposal Y is ``exp(-(|Y| q - p)**2 * mult / den)``,
    which equals ``exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2))`` with
    ``p / q = sigma**2 / t`` in lowest terms.
    """
    m = a // b
    r = math.isqrt(m)
    # t = sigma when sigma is an integer (e.g. a power of two), else floor(sigma) + 1.
    t = r if (a % b == 0 and r * r == m and r >= 1) else r + 1
    g1 = math.gcd(a, b * t)
    p, q = a // g1, (b * t) // g1              # sigma**2 / t = p / q
    # gamma = (|Y| q - p)**2 / q**2 * b / (2 a) = (|Y| q - p)**2 * mult / den
    num_c, den_c = b, 2 * a * q * q
    g2 = math.gcd(num_c, den_c)
    return t, q, p, num_c // g2, den_c // g2


@functools.lru_cache(maxsize=256)
def _gaussian_acceptance(a: int, b: int, t: int) -> float:
    """Estimated acceptance rate of the CKS20 Alg. 3 test (sizes overdraws only)."""
    sigma2 = a / b
    c = sigma2 / t
    if t <= 256:
        ys = np.arange(64 * t + 64, dtype=np.float64)
        w = np.exp(-ys / t)
        w[1:] *= 2.0
        rate = float((w * np.exp(-((ys - c) ** 2) / (2.0 * sigma2))).sum() / w.sum())
    else:  # continuous approximation, accurate for large t
        rate = math.sqrt(2.0 * math.pi * sigma2) / (2.0 * t) * math.exp(-sigma2 / (2.0 * t * t))
    return min(max(rate, 0.02), 1.0)


def _gaussian_accept(y: np.ndarray, q: int, p: int, mult: int, den: int,
                     source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(-(|y| q - p)**2 mult / den)) for each proposal ``y``."""
    m = y.size
    ay = np.abs(y) if y.dtype != object else np.asarray([abs(int(v)) for v in y], dtype=object)
    big = max(int(ay.max()) * q + p, p) ** 2 * mult > _INT64_MAX if m else False
    if big:  # exact Python integers for the few elements that need them
        diff = ay.astype(object) * q - p
        x = diff * diff * mult
        whole = x // den
        rem = (x % den).astype(np.int64)
        if max(whole.tolist()) <= _INT64_MAX:
            whole = whole.astype(np.int64)
    else:
        diff = ay * q - p
        whole, rem = np.divmod(diff * diff * mult, den)
    return _bernoulli_exp_split(whole, rem, den, source)


def discrete_gaussian(sigma2_num: int, sigma2_den: int, size: int | tuple[int, ...],
                      source: RandomSource) -> np.ndarray:
    r"""Exact samples of the discrete Gaussian with ``sigma**2 = sigma2_num / sigma2_den``.

    ``P[Z = z]`` is proportional to ``exp(-z**2 / (2 sigma**2))`` on the integers.

    Parameters
    ----------
    sigma2_num : int in [1, 2**62]
        Numerator of the variance parameter ``sigma**2``.
    sigma2_den : int in [1, 2**62]
        Denominator of ``sigma**2``.
    size : int or tuple of int
        Output shape.
    source : RandomSource
        Uniform randomness.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain, or if the exact rejection step
        would need denominators beyond ``2**62``. Nothing is drawn.

    Notes
    -----
    Canonne, Kamath & Steinke (2020), Algorithm 3: propose ``Y`` from the
    discrete Laplace with integer scale ``t`` (``t = sigma`` when sigma is an
    integer, as for the powers of two the mechanisms use; otherwise
    ``floor(sigma) + 1``; any positive integer gives the exact target) and accept
    with probability ``exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2))``, whose
    exponent is formed as an exact rational and passed to the exact
    Bernoulli(exp(-x/y)) sampler. The variance is below ``sigma**2`` and equal to
    it up to a relative error of order ``exp(-2 pi**2 sigma**2)``.

    Each round overdraws Laplace proposals (sized from an estimate of the
    overall acceptance rate, so that one round usually suffices), tests all of
    them, and keeps the first accepted ones in proposal order; since accepted
    proposals are i.i.d. from the target and the choice depends only on the
    accept/reject pattern, the output is exactly i.i.d. discrete Gaussian.

    References
    ----------
    .. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian
       for Differential Privacy", NeurIPS 2020.
    """
    owner = "discrete_gaussian"
    a = _check_positive_int(sigma2_num, "sigma2_num", owner)
    b = _check_positive_int(sigma2_den, "sigma2_den", owner)
    shape = _check_size(size, owner)
    _check_source(source, owner)
    t, q, p, mult, den = _gaussian_rejection_constants(a, b)
    if den > _MAX_HIGH or t > _MAX_HIGH:
        raise InvalidParameterError(
            f"The variance {a}/{b} given to {owner} needs exact denominators beyond 2**62; "
            "use a smaller sigma or a power-of-two grid."
        )
    n = math.prod(shape)
    out = np.empty(n, dtype=np.int64)
    filled = 0
    acceptance = _laplace_acceptance(t, 1) * _gaussian_acceptance(a, b, t)
    while filled < n:
        need = n - filled
        y = _laplace_candidates(t, 1, _proposal_count(need, acceptance), source)
        if y.size == 0:
            continue
        vals = y[_gaussian_accept(y, q, p, mult, den, source)][:need]
        out[filled:filled + vals.size] = vals.astype(np.int64) if vals.dtype == object else vals
        filled += vals.size
    return out.reshape(shape)
