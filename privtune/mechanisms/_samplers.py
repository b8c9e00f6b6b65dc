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
terminate with probability one.

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


def _bernoulli_exp_fraction(num: np.ndarray, den: np.ndarray, source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for ``0 <= num <= den`` (CKS20 Alg. 1, gamma <= 1).

    For K = 1, 2, ... draw A ~ Bernoulli(gamma / K) until A = 0; return [K is odd].
    """
    out = np.empty(num.shape, dtype=bool)
    active = np.arange(num.size)
    num_a, den_a = num, den
    k = 1
    while active.size:
        a = _bernoulli_ratio(num_a, den_a, k, source)
        stop = ~a
        out[active[stop]] = bool(k % 2)
        active, num_a, den_a = active[a], num_a[a], den_a[a]
        k += 1
    return out


def _bernoulli_exp_minus_one(n: int, source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(-1)), ``n`` independent draws.

    CKS20 Alg. 1 with gamma = 1; its first trial (A ~ Bernoulli(1/1)) always
    succeeds, so the loop starts at K = 2 without drawing it.
    """
    out = np.empty(n, dtype=bool)
    active = np.arange(n)
    k = 2
    while active.size:
        a = source.integers_below(np.full(active.size, k, dtype=np.int64)) == 0
        out[active[~a]] = bool(k % 2)
        active = active[a]
        k += 1
    return out


def _bernoulli_exp_split(whole: np.ndarray, rem: np.ndarray, den: np.ndarray,
                         source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(-(whole + rem/den))) with ``0 <= rem < den`` (CKS20 Alg. 1).

    ``floor(gamma)`` Bernoulli(exp(-1)) trials, stopping at the first failure,
    then one Bernoulli(exp(-(gamma - floor(gamma)))).
    """
    flat_whole = whole.reshape(-1)
    out = np.ones(flat_whole.shape, dtype=bool)
    active = np.flatnonzero(flat_whole > 0)
    remaining = flat_whole[active]
    while active.size:
        ok = _bernoulli_exp_minus_one(active.size, source)
        out[active[~ok]] = False
        active, remaining = active[ok], remaining[ok] - 1
        more = remaining > 0
        active, remaining = active[more], remaining[more]
    idx = np.flatnonzero(out)
    if idx.size:
        out[idx] = _bernoulli_exp_fraction(rem.reshape(-1)[idx], den.reshape(-1)[idx], source)
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
    """Number of Bernoulli(exp(-1)) successes before the first failure (``n`` draws)."""
    v = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        ok = _bernoulli_exp_minus_one(active.size, source)
        active = active[ok]
        v[active] += 1
    return v


def _discrete_laplace_flat(t: int, s: int, n: int, source: RandomSource) -> np.ndarray:
    out: np.ndarray = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    t_arr_cache: dict[int, np.ndarray] = {}
    while todo.size:
        m = todo.size
        t_arr = t_arr_cache.get(m)
        if t_arr is None:
            t_arr = np.full(m, t, dtype=np.int64)
            t_arr_cache.clear()
            t_arr_cache[m] = t_arr
        u = source.integers_below(t_arr)                       # U uniform on {0, ..., t-1}
        d = _bernoulli_exp_fraction(u, t_arr, source)          # D ~ Bernoulli(exp(-U/t))
        idx, u = todo[d], u[d]
        retry = [todo[~d]]
        if idx.size:
            v = _geometric_exp_minus_one(idx.size, source)     # V ~ Geometric(1 - exp(-1))
            if t * (int(v.max()) + 1) <= _INT64_MAX:
                x = u + t * v                                  # X = U + t V
                y = x // s                                     # Y = floor(X / s)
            else:  # astronomically rare: exact Python integers
                x = u.astype(object) + t * v.astype(object)
                y = x // s
            b = source.bernoulli_half(idx.size)                # sign
            reject = b & (y == 0)                              # avoid counting 0 twice
            z = np.where(b, -y, y)
            keep = ~reject
            if z.dtype == object and out.dtype != object:
                out = out.astype(object)
            out[idx[keep]] = z[keep]
            retry.append(idx[reject])
        todo = np.concatenate(retry) if len(retry) > 1 else retry[0]
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
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        y = _discrete_laplace_flat(t, 1, m, source)
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
        accept = _bernoulli_exp_split(whole, rem, np.full(m, den, dtype=np.int64), source)
        vals = y[accept]
        out[todo[accept]] = vals.astype(np.int64) if vals.dtype == object else vals
        todo = todo[~accept]
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
    eps, delta_l1 = Fraction(epsilon), Fraction(sensitivity)
    for k in range(MIN_GRID_EXPONENT, max_exponent + 1):
        g = math.ldexp(scale, -k)
        if g <= 0.0:
            break
        if delta_l1 / Fraction(g) + 2 * dim <= eps * 2**k:
            return k, g
    raise InvalidParameterError(
        f"{owner} cannot place {dim} coordinate(s) on an exact noise grid at epsilon={epsilon!r} "
        f"(it would need a grid exponent above {max_exponent}); use fewer coordinates or a "
        "larger epsilon."
    )


def gaussian_grid(*, sigma: float, sensitivity: float, noise_multiplier: float, dim: int,
                  owner: str) -> tuple[int, float]:
    """Smallest ``k >= 10`` and ``g = sigma / 2**k`` with ``2**k / (Delta/g + 2 sqrt(dim)) >= nm``.

    Checked exactly: with ``A = 2**k / nm - Delta/g`` the condition is
    ``A >= 0`` and ``A**2 >= 4 dim``. Discrete Gaussian noise of scale
    ``2**k`` on an integer query of L2 sensitivity ``Delta/g + 2 sqrt(dim)``
    then has noise multiplier at least ``nm``.
    """
    nm, delta_l2 = Fraction(noise_multiplier), Fraction(sensitivity)
    for k in range(MIN_GRID_EXPONENT, MAX_GAUSSIAN_GRID_EXPONENT + 1):
        g = math.ldexp(sigma, -k)
        if g <= 0.0:
            break
        a = Fraction(2**k) / nm - delta_l2 / Fraction(g)
        if a >= 0 and a * a >= 4 * dim:
            return k, g
    raise InvalidParameterError(
        f"{owner} cannot place {dim} coordinate(s) on an exact noise grid (it would need a grid "
        f"exponent above {MAX_GAUSSIAN_GRID_EXPONENT}); use fewer coordinates."
    )


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
