r"""Exact integer samplers and the grid arithmetic behind privtune's noise.

Textbook samplers compute Laplace or Gaussian noise from floating-point
uniforms (``-b * log(u)``, Box-Muller). Their outputs have holes and uneven
spacing that depend on the value being protected, and Mironov (2012) showed that
the low-order bits of such outputs can reveal the input exactly. privtune never
uses them. Noise is sampled **exactly** on the integers, using only

* uniform integers below a bound (:meth:`RandomSource.integers_below`), and
* integer arithmetic (``int64``; Python integers only where a value could
  overflow ``int64``),

following Canonne, Kamath & Steinke (2020), Algorithms 1-3:

* :func:`bernoulli_exp` draws Bernoulli(exp(-x/y)) for non-negative integers x
  and positive integers y;
* :func:`discrete_laplace` draws Z with ``P[Z = z]`` proportional to
  ``exp(-|z| den / num)``;
* :func:`discrete_gaussian` draws Z with ``P[Z = z]`` proportional to
  ``exp(-z**2 / (2 sigma2))`` for a rational ``sigma2 = num / den``.

All three are vectorised: a whole array of samples is drawn by rejection with an
"active" mask, and the loops stop as soon as no element is active. They
terminate with probability one. Randomness is consumed in *blocks* (the trials
of several rounds, or more proposals than needed, per ``integers_below`` call),
which leaves every distribution exactly unchanged: trials drawn past a row's
stopping time are independent of the ones before it and are discarded, and the
first ``m`` accepted proposals (in proposal order, chosen without looking at
their values) are i.i.d. from the target. See the comment above
:func:`_block_width` for the full argument.

Grid arithmetic (used by :mod:`privtune.mechanisms.laplace`, ``gaussian`` and
``sparse_vector``): a mechanism with continuous-equivalent scale ``s`` picks a
grid spacing ``g = s / 2**k``, rounds the value to the grid
(``round(v / g)``, an integer) and adds integer noise of scale exactly ``2**k``;
the output ``g * (round(v / g) + Z)`` is post-processing of that integer. The
rounding can move neighbouring inputs apart by up to two grid steps per
coordinate (half a step from each rounding, plus the floating-point error of
``v / g``, which is below a quarter step while ``|v / g| < 2**51``; larger
values are refused), so the mechanisms charge a sensitivity of
``Delta / g + 2 d`` (L1) or ``Delta / g + 2 sqrt(d)`` (L2) integer steps, and
choose ``k`` so that this fits inside a headroom ``eta = 2**-10`` of the
declared sensitivity: the noise is 0.1 % larger than the textbook scale, and in
exchange the stated guarantee holds *exactly*, rounding included. Every such
condition is checked in exact rational arithmetic (:class:`fractions.Fraction`).

References
----------
.. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020, arXiv:2004.00010.
.. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for
   Differential Privacy", ACM CCS 2012.
"""

from __future__ import annotations

import functools
import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.utils._random import RandomSource

__all__ = [
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
    "GRID_HEADROOM",
    "MIN_GRID_EXPONENT",
    "MAX_GRID_INDEX",
]

#: Headroom ``eta``: the sensitivity is inflated by ``1 + eta`` to pay for rounding.
GRID_HEADROOM = 2.0**-10
#: Noise on the grid always has integer scale ``2**k`` with ``k >= MIN_GRID_EXPONENT``.
MIN_GRID_EXPONENT = 10
#: Largest grid exponent the Laplace mechanisms accept (keeps draws inside ``2**62``).
MAX_LAPLACE_GRID_EXPONENT = 60
#: Largest grid exponent the Gaussian mechanism accepts (``2 sigma_grid**2 <= 2**61``).
MAX_GAUSSIAN_GRID_EXPONENT = 30
#: Values are refused when ``|v / g|`` reaches this bound (rounding stays exact below it).
MAX_GRID_INDEX = 2.0**51

_MAX_HIGH = 2**62
_INT64_MAX = 2**63 - 1


# --------------------------------------------------------------------------------------
# argument handling
# --------------------------------------------------------------------------------------
def _check_source(source: Any, owner: str) -> RandomSource:
    if not isinstance(source, RandomSource):
        raise InvalidParameterError(
            f"The 'source' parameter of {owner} must be a privtune RandomSource "
            f"(see privtune.utils.check_random_state). Got {type(source).__name__} instead."
        )
    return source


def _check_positive_int(value: Any, name: str, owner: str, high: int = _MAX_HIGH) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= high:
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be an int in the range [1, {high}]. "
            f"Got {value!r} instead."
        )
    return int(value)


def _check_size(size: Any, owner: str) -> tuple[int, ...]:
    items = (size,) if isinstance(size, numbers.Integral) else size
    if not isinstance(items, tuple) or any(
        isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0 for s in items
    ):
        raise InvalidParameterError(
            f"The 'size' parameter of {owner} must be a non-negative int or a tuple of "
            f"non-negative ints. Got {size!r} instead."
        )
    return tuple(int(s) for s in items)


def _as_int_array(value: Any, name: str, owner: str, *, low: int, high: int | None) -> np.ndarray:
    """An int64 array (or an object array of Python ints when int64 cannot hold it)."""
    where = f"The {name!r} parameter of {owner}"
    arr = np.asarray(value)
    if arr.dtype == object:
        flat = arr.reshape(-1).tolist()
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in flat):
            raise InvalidParameterError(f"{where} must be an array of integers.")
        ints = [int(v) for v in flat]
        if ints and (min(ints) < low or (high is not None and max(ints) > high)):
            hi = "inf" if high is None else high
            raise InvalidParameterError(f"{where} must have entries in the range [{low}, {hi}].")
        if not ints or max(abs(v) for v in ints) <= _INT64_MAX:
            return np.asarray(ints, dtype=np.int64).reshape(arr.shape)
        out = np.empty(len(ints), dtype=object)
        out[:] = ints
        return out.reshape(arr.shape)
    if arr.dtype.kind not in "iu":
        raise InvalidParameterError(f"{where} must be an array of integers. Got dtype {arr.dtype}.")
    if arr.dtype.kind == "u" and arr.size and arr.max() > _INT64_MAX:
        return _as_int_array(arr.astype(object), name, owner, low=low, high=high)
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < low or (high is not None and arr.max() > high)):
        raise InvalidParameterError(
            f"{where} must have entries in the range [{low}, {'inf' if high is None else high}]."
        )
    return arr


# --------------------------------------------------------------------------------------
# block sizes -- how much randomness one integers_below call draws
# --------------------------------------------------------------------------------------
# The samplers below are loops of rejection / stopping-time rounds. Calling
# integers_below once per round on the shrinking active set costs a fixed
# overhead per call that dominates for moderate sizes, so every loop draws its
# trials in *blocks*: the trials of several consecutive rounds in one call.
#
# Exactness (why blocks and overdraws do not change any distribution):
#
# * Stopping times. A row of a block holds independent trials T_1, T_2, ... of
#   the original sequential algorithm; the row's stopping time tau (its first
#   failure, or the number of trials it needs) depends only on T_1, ..., T_tau.
#   Trials after tau are drawn but never used, and since they are independent of
#   T_1, ..., T_tau, the used prefix has exactly the law it has in the
#   sequential algorithm. Rows that have not stopped within the block (all
#   trials succeeded) continue with fresh independent trials from where they
#   are, exactly as the sequential loop would.
# * Overdrawn proposals. In a rejection sampler, proposals are i.i.d. and each
#   is accepted independently; conditionally on the accept/reject pattern, the
#   accepted values are i.i.d. from the target. Drawing more proposals than
#   needed and keeping the first ``m`` accepted ones in proposal order (a rule
#   that looks only at the accept/reject pattern, never at the values) therefore
#   gives ``m`` i.i.d. target samples; the surplus is discarded.
# * Block widths and proposal counts are chosen from the *number* of active rows
#   (floating-point estimates of cost are used for that choice only); they never
#   look at the values drawn, and no acceptance decision involves a float.
#
# A fixed seed gives a fixed output (every choice is a deterministic function of
# the draws), but the output differs from the one-call-per-round sampler because
# randomness is consumed in a different order.

#: Estimated cost of one more round (one integers_below call and the numpy
#: bookkeeping around it), in units of the cost of one uniform integer.
_ROUND_COST = 1024.0
#: Largest number of columns of one block.
_MAX_WIDTH = 10
#: Cost of one Bernoulli(exp(-1)) trial drawn in a block, in uniforms (cost model only).
_BERNOULLI_E1_COST = 1.5
#: Safety margin, in standard deviations, of the number of overdrawn proposals.
_PROPOSAL_Z = 2.5


def _block_width(kind: str, rows: int, start: int) -> int:
    """Columns per block for ``rows`` active rows (a pure function of the row count).

    ``kind == "chain"``: the trials ``A_k ~ Bernoulli(gamma/k)``, ``k = start, ...``
    of CKS20 Alg. 1; a row survives column ``k`` with probability at most ``1/k``.
    ``kind == "geometric"``: Bernoulli(exp(-1)) trials; survival ``exp(-1)`` per column.
    The width minimises an estimate of (uniforms drawn) + ``_ROUND_COST`` x
    (expected further rounds): wide blocks for few rows, where the per-call
    overhead dominates, and narrow ones (down to the one-column sequential loop)
    for very many rows, where surplus draws would dominate.
    """
    bucket = rows if rows < 256 else 256 + rows.bit_length()
    return _block_width_cached(kind, bucket, min(start, 24))


@functools.lru_cache(maxsize=4096)
def _block_width_cached(kind: str, bucket: int, start: int) -> int:
    n = float(bucket) if bucket < 256 else float(2 ** (bucket - 256))
    if kind == "chain":
        cell = 1.0
        ratios = [1.0 / max(start + j, 1) for j in range(_MAX_WIDTH + 64)]
    else:
        cell = _BERNOULLI_E1_COST
        ratios = [math.exp(-1.0)] * (_MAX_WIDTH + 64)
    survive, surv = [], 1.0
    for r in ratios:
        surv *= r
        survive.append(surv)                  # P(a row is still running after j+1 columns)
    best, best_cost = 1, math.inf
    for width in range(1, _MAX_WIDTH + 1):
        tail = survive[width - 1:]
        further_rounds = sum(min(1.0, n * s) for s in tail)
        cost = cell * n * (width + sum(tail)) + _ROUND_COST * further_rounds
        if cost < best_cost:
            best, best_cost = width, cost
    return best


def _proposal_count(needed: int, acceptance: float) -> int:
    """Proposals to draw so that ``needed`` of them are accepted with high probability.

    The smallest ``m`` with ``m a - z sqrt(m a (1 - a)) >= needed`` (``z = 2.5``)
    for an estimated acceptance rate ``a``; a shortfall only costs another round.
    """
    a = min(max(acceptance, 0.02), 1.0)
    spread = _PROPOSAL_Z * math.sqrt(a * (1.0 - a))
    root = (spread + math.sqrt(spread * spread + 4.0 * a * needed)) / (2.0 * a)
    return max(needed, math.ceil(root * root))


# --------------------------------------------------------------------------------------
# Bernoulli(exp(-gamma)) -- CKS20 Algorithm 1
# --------------------------------------------------------------------------------------
def _bernoulli_ratio(num: np.ndarray, den: np.ndarray, k: int, source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(num / (den * k)) element-wise, for ``0 <= num <= den``."""
    limit = _MAX_HIGH // k
    if den.size == 0 or int(den.max()) <= limit:
        return source.integers_below(den * k) < num
    # Rare: den * k would leave the range of integers_below. Bernoulli(num/den) AND
    # Bernoulli(1/k) are independent and their conjunction has probability num/(den k).
    out = np.empty(den.shape, dtype=bool)
    small = den <= limit
    if small.any():
        out[small] = source.integers_below(den[small] * k) < num[small]
    big = ~small
    out[big] = (source.integers_below(den[big]) < num[big]) & (
        source.integers_below(np.full(int(big.sum()), k, dtype=np.int64)) == 0
    )
    return out


def _bernoulli_exp_fraction(num: np.ndarray, den: np.ndarray | int, source: RandomSource,
                            start: int = 1) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for 1-d ``0 <= num <= den`` (CKS20 Alg. 1, gamma <= 1).

    For K = 1, 2, ... draw A ~ Bernoulli(gamma / K) until A = 0; return [K is odd].
    ``den`` is an array or one int for all rows; ``start > 1`` resumes the chain
    at ``K = start`` (for rows known to have reached it).

    Blocked: one ``integers_below`` call draws the trials of columns
    ``K = k, ..., k + w - 1`` for every active row (``A_K`` is
    ``integers_below(den K) < num``); each row stops at its first failure, and
    only rows whose ``w`` trials all succeeded (probability at most
    ``1 / (k (k+1) ... (k+w-1))``) go on to the next block. The trials after a
    row's stopping time are independent of those before it and are discarded,
    so the law of the result is that of the sequential algorithm. When
    ``den (k + w - 1)`` would exceed ``2**62`` the round falls back to one
    column drawn by :func:`_bernoulli_ratio` (the exact two-stage draw).
    """
    scalar = not isinstance(den, np.ndarray)
    out = np.empty(num.size, dtype=bool)
    active: np.ndarray | None = None          # None: every row
    num_a, den_a = num, den
    k = start
    while num_a.size:
        m = num_a.size
        width = _block_width("chain", m, k)
        last = k + width - 1
        den_max = int(den_a) if scalar else int(den_a.max())
        if width > 1 and den_max <= _MAX_HIGH // last:
            ks = np.arange(k, last + 1, dtype=np.int64)
            if scalar:
                highs = np.empty((m, width), dtype=np.int64)
                highs[:] = ks * int(den_a)
            else:
                highs = den_a[:, None] * ks[None, :]
            trials = source.integers_below(highs) < num_a[:, None]
            first = trials.argmin(axis=1)                     # first failure (0 if none)
            result = ((k + first) & 1).astype(bool)
            going = (first == 0) & trials[:, 0]               # all w trials succeeded
            k = last + 1
        else:
            dens = np.full(m, den_a, dtype=np.int64) if scalar else den_a
            going = _bernoulli_ratio(num_a, dens, k, source)
            result = np.full(m, bool(k % 2))
            k += 1
        # Rows still going get a provisional value here, overwritten in a later round.
        if active is None:
            out[:] = result
        else:
            out[active] = result
        if not going.any():
            break
        active = np.flatnonzero(going) if active is None else active[going]
        num_a = num_a[going]
        if not scalar:
            den_a = den_a[going]
    return out


#: Bernoulli(exp(-1)) chain: one uniform below 20! (< 2**62) decides its trials K = 2, ..., 20.
_E1_LAST = 20
_E1_BOUND = math.factorial(_E1_LAST)
#: ``20! / k!`` for ``k = 20, 19, ..., 2`` (ascending).
_E1_THRESHOLDS = np.array([_E1_BOUND // math.factorial(k) for k in range(_E1_LAST, 1, -1)], dtype=np.int64)


def _bernoulli_exp_minus_one(n: int, source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(-1)), ``n`` independent draws.

    CKS20 Alg. 1 with gamma = 1: with ``A_K ~ Bernoulli(1/K)`` independent,
    ``K* = min{K : A_K = 0}`` and the result is ``[K* odd]``. The first trial
    (``A_1 ~ Bernoulli(1)``) always succeeds, so only ``P[K* > k] = 1/k!``
    matters.

    Blocked: one uniform ``r`` on ``{0, ..., 20! - 1}`` per draw stands for the
    trials ``K = 2, ..., 20`` at once: set ``K* = min{k >= 2 : r >= 20!/k!}``.
    Since the thresholds ``20!/k!`` are integers decreasing in ``k``,
    ``P[K* > k] = P[r < 20!/k!] = 1/k!`` exactly for ``k <= 20`` -- the law of
    the sequential stopping index (and ``K*`` is read off with one binary search
    over the 19 thresholds, in integers). Only ``r = 0`` (probability ``1/20!``)
    means all 19 trials succeeded; such rows continue the chain from
    ``K = 21`` with fresh trials (:func:`_bernoulli_exp_fraction` with
    ``num = den = 1``), as the sequential loop would.
    """
    if n == 0:
        return np.empty(0, dtype=bool)
    r = source.integers_below(np.full(n, _E1_BOUND, dtype=np.int64))
    # searchsorted = #{k in 2..20 : 20!/k! <= r}, so K* = 21 - searchsorted.
    out = (np.searchsorted(_E1_THRESHOLDS, r, side="right") & 1) == 0
    rest = np.flatnonzero(r == 0)
    if rest.size:  # probability 1/20! per draw
        out[rest] = _bernoulli_exp_fraction(np.ones(rest.size, dtype=np.int64), 1, source,
                                            start=_E1_LAST + 1)
    return out


def _bernoulli_exp_split(whole: np.ndarray, rem: np.ndarray, den: np.ndarray | int,
                         source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(-(whole + rem/den))) with ``0 <= rem < den`` (CKS20 Alg. 1).

    ``floor(gamma)`` Bernoulli(exp(-1)) trials, stopping at the first failure,
    then one Bernoulli(exp(-(gamma - floor(gamma)))).

    Blocked: a row that still needs ``r`` Bernoulli(exp(-1)) successes gets
    ``min(r, w)`` of them in one batch (all rows' trials in one draw) and fails
    if any of them fails; only the event "all succeeded" is used, which has the
    same probability ``exp(-min(r, w))`` as in the sequential loop (trials after
    a first failure are discarded). Rows with ``r > w`` and no failure continue.
    """
    flat_whole = whole.reshape(-1)
    out = np.ones(flat_whole.shape, dtype=bool)
    active = np.flatnonzero(flat_whole > 0)
    remaining = flat_whole[active]
    while active.size:
        cap = _block_width("geometric", active.size, 0)
        need = np.where(remaining > cap, cap, remaining).astype(np.int64)
        ok = _bernoulli_exp_minus_one(int(need.sum()), source)
        if ok.size == need.size:  # every row needs exactly one trial
            passed = ok
        else:
            passed = np.logical_and.reduceat(ok, np.cumsum(need) - need)  # segments are non-empty
        out[active[~passed]] = False
        remaining = remaining - need
        going = passed & (remaining > 0)
        active, remaining = active[going], remaining[going]
    idx = np.flatnonzero(out)
    if idx.size:
        dens = den if not isinstance(den, np.ndarray) else den.reshape(-1)[idx]
        out[idx] = _bernoulli_exp_fraction(rem.reshape(-1)[idx], dens, source)
    return out.reshape(whole.shape)


def bernoulli_exp(x: Any, y: Any, source: RandomSource) -> np.ndarray:
    r"""Exact Bernoulli(exp(-x / y)) samples, element-wise.

    Parameters
    ----------
    x : array_like of int, entries in [0, inf)
        Numerators. Python integers beyond ``int64`` are accepted.
    y : array_like of int, entries in [1, 2**62]
        Denominators; broadcast against ``x``.
    source : RandomSource
        Uniform randomness; only :meth:`~RandomSource.integers_below` is used.

    Returns
    -------
    ndarray of bool
        ``out[i]`` is True with probability ``exp(-x[i] / y[i])`` exactly.

    Raises
    ------
    InvalidParameterError
        If ``x`` or ``y`` is not an integer array in its domain. Nothing is drawn.

    Notes
    -----
    Canonne, Kamath & Steinke (2020), Algorithm 1. For ``gamma = x / y <= 1``:
    draw ``A ~ Bernoulli(gamma / K)`` for ``K = 1, 2, ...`` (as
    ``integers_below(y K) < x``) until ``A = 0`` and return whether ``K`` is odd.
    For ``gamma > 1``: ``floor(gamma)`` Bernoulli(exp(-1)) trials, stopping at
    the first failure, then one Bernoulli(exp(-(gamma - floor(gamma)))). The
    number of uniforms used is random but has all moments finite.

    The trials of several consecutive ``K`` are drawn in one call (a block per
    row); trials after a row's first failure are independent of the ones
    before it and are discarded, so the law is exactly that of the sequential
    algorithm. Seeded outputs are reproducible.

    References
    ----------
    .. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian
       for Differential Privacy", NeurIPS 2020.
    """
    owner = "bernoulli_exp"
    _check_source(source, owner)
    xa = _as_int_array(x, "x", owner, low=0, high=None)
    ya = _as_int_array(y, "y", owner, low=1, high=_MAX_HIGH)
    try:
        xa, ya = np.broadcast_arrays(xa, ya)
    except ValueError:
        raise InvalidParameterError(
            f"The 'x' and 'y' parameters of {owner} must have broadcastable shapes; "
            f"got {np.shape(xa)} and {np.shape(ya)}."
        ) from None
    ya = np.ascontiguousarray(ya, dtype=np.int64)
    if xa.dtype == object:
        whole = xa // ya.astype(object)
        rem = (xa % ya.astype(object)).astype(np.int64)
        if whole.size == 0 or max(whole.reshape(-1).tolist()) <= _INT64_MAX:
            whole = whole.astype(np.int64)
    else:
        whole, rem = np.divmod(xa, ya)
    return _bernoulli_exp_split(np.ascontiguousarray(whole), np.ascontiguousarray(rem), ya, source)


# --------------------------------------------------------------------------------------
# discrete Laplace -- CKS20 Algorithm 2
# --------------------------------------------------------------------------------------
def _geometric_exp_minus_one(n: int, source: RandomSource) -> np.ndarray:
    """Number of Bernoulli(exp(-1)) successes before the first failure (``n`` draws).

    Blocked: an ``(n, w)`` matrix of independent Bernoulli(exp(-1)) trials is
    drawn at once (one :func:`_bernoulli_exp_minus_one` call, itself one
    ``integers_below`` call but for probability ``1/20!``); each row counts its
    leading successes, and only rows whose ``w`` trials all succeeded
    (probability ``exp(-w)``) go on to add a fresh count. Trials after a row's
    first failure are discarded; they are independent of the prefix, so the
    count has the sequential law.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    width = _block_width("geometric", n, 0)
    ok = _bernoulli_exp_minus_one(n * width, source).reshape(n, width)
    v = ok.argmin(axis=1).astype(np.int64)                  # leading successes (0 if all succeeded)
    going = np.flatnonzero((v == 0) & ok[:, 0])
    if going.size:
        v[going] = width + _geometric_exp_minus_one(going.size, source)
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


# --------------------------------------------------------------------------------------
# grid helpers shared by the mechanisms
# --------------------------------------------------------------------------------------
def laplace_grid(*, scale: float, sensitivity: float, epsilon: float, dim: int,
                 owner: str, max_exponent: int = MAX_LAPLACE_GRID_EXPONENT) -> tuple[int, float]:
    """Smallest ``k >= 10`` and ``g = scale / 2**k`` with ``(Delta/g + 2 dim) / 2**k <= epsilon``.

    The inequality is checked exactly (rationals). Discrete Laplace noise of
    scale ``2**k`` on an integer query whose L1 sensitivity is at most
    ``Delta/g + 2 dim`` is then ``epsilon``-DP.
    """
    found = _laplace_grid_cached(float(scale), float(sensitivity), float(epsilon), int(dim), int(max_exponent))
    if found is None:
        raise InvalidParameterError(
            f"{owner} cannot place {dim} coordinate(s) on an exact noise grid at epsilon={epsilon!r} "
            f"(it would need a grid exponent above {max_exponent}); use fewer coordinates or a "
            "larger epsilon."
        )
    return found


@functools.lru_cache(maxsize=4096)
def _laplace_grid_cached(scale: float, sensitivity: float, epsilon: float, dim: int,
                         max_exponent: int) -> tuple[int, float] | None:
    """The search behind :func:`laplace_grid`, memoised (None when no grid exists)."""
    eps, delta_l1 = Fraction(epsilon), Fraction(sensitivity)
    for k in range(MIN_GRID_EXPONENT, max_exponent + 1):
        g = math.ldexp(scale, -k)
        if g <= 0.0:
            break
        if delta_l1 / Fraction(g) + 2 * dim <= eps * 2**k:
            return k, g
    return None


def gaussian_grid(*, sigma: float, sensitivity: float, noise_multiplier: float, dim: int,
                  owner: str) -> tuple[int, float]:
    """Smallest ``k >= 10`` and ``g = sigma / 2**k`` with ``2**k / (Delta/g + 2 sqrt(dim)) >= nm``.

    Checked exactly: with ``A = 2**k / nm - Delta/g`` the condition is
    ``A >= 0`` and ``A**2 >= 4 dim``. Discrete Gaussian noise of scale
    ``2**k`` on an integer query of L2 sensitivity ``Delta/g + 2 sqrt(dim)``
    then has noise multiplier at least ``nm``.
    """
    found = _gaussian_grid_cached(float(sigma), float(sensitivity), float(noise_multiplier), int(dim))
    if found is None:
        raise InvalidParameterError(
            f"{owner} cannot place {dim} coordinate(s) on an exact noise grid (it would need a grid "
            f"exponent above {MAX_GAUSSIAN_GRID_EXPONENT}); use fewer coordinates."
        )
    return found


@functools.lru_cache(maxsize=4096)
def _gaussian_grid_cached(sigma: float, sensitivity: float, noise_multiplier: float,
                          dim: int) -> tuple[int, float] | None:
    """The search behind :func:`gaussian_grid`, memoised (None when no grid exists)."""
    nm, delta_l2 = Fraction(noise_multiplier), Fraction(sensitivity)
    for k in range(MIN_GRID_EXPONENT, MAX_GAUSSIAN_GRID_EXPONENT + 1):
        g = math.ldexp(sigma, -k)
        if g <= 0.0:
            break
        a = Fraction(2**k) / nm - delta_l2 / Fraction(g)
        if a >= 0 and a * a >= 4 * dim:
            return k, g
    return None


def round_to_grid(values: np.ndarray, g: float, name: str, owner: str) -> np.ndarray:
    """``round(values / g)`` as int64, refusing ``|values / g| >= 2**51`` (exactness limit)."""
    scaled = values / g
    if scaled.size and not np.all(np.abs(scaled) < MAX_GRID_INDEX):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} is too large for the exact noise grid: "
            f"|{name}| / grid spacing must stay below 2**51 (grid spacing {g!r}). "
            "Rescale the query or clip it to its declared range."
        )
    return np.rint(scaled).astype(np.int64)


def grid_to_float(base: np.ndarray, noise: np.ndarray, g: float) -> np.ndarray:
    """``g * (base + noise)`` as float64 (post-processing of the integer release)."""
    big = noise.dtype == object or (
        noise.size and int(np.abs(noise).max()) + int(np.abs(base).max()) > _INT64_MAX
    )
    if big:  # exact Python integers, then one rounding to float
        total = base.astype(object) + noise.astype(object)
        return np.asarray([g * float(v) for v in total.tolist()], dtype=np.float64)
    return g * (base + noise).astype(np.float64)


class _Frozen:
    """Mixin for immutable mechanisms: ``__slots__`` plus a refusing ``__setattr__``."""

    __slots__ = ()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead.")

    def __getstate__(self) -> dict[str, Any]:
        names = [n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())]
        return {n: getattr(self, n) for n in names if hasattr(self, n)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
