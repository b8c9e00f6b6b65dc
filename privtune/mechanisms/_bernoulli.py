r"""Exact Bernoulli(exp(-x/y)) sampling and the block-wise randomness of the exact samplers.

This module holds the bottom layer of privtune's exact integer samplers
(overview and references: :mod:`privtune.mechanisms._samplers`):

* the argument checks shared by every public sampler;
* the block sizes -- how much randomness one ``integers_below`` call draws --
  with the argument (in the comment above :func:`_block_width`) that blocks
  and overdrawn proposals leave every distribution exactly unchanged;
* Bernoulli(exp(-gamma)) draws, Canonne, Kamath & Steinke (2020), Algorithm 1:
  :func:`bernoulli_exp` and the primitives the discrete samplers build on.

The discrete Laplace and Gaussian samplers are in
:mod:`privtune.mechanisms._discrete`; the grid arithmetic of the mechanisms is in
:mod:`privtune.mechanisms._grid`.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.utils._random import RandomSource

__all__ = ["bernoulli_exp"]

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
