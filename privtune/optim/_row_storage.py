r"""Storage of the margin solvers' rows: the float range of the declared bounds, clipping, compaction (internal).

The rows every margin solver reads are mapped into its domain (:func:`map_into_domain`: a non-finite entry becomes
0, a row with an invalid label the zero row), clipped to the declared L1 and L2 bounds (:func:`clip_rows`), or
clipped and stored once as a column-major float32 array marked with its bounds (:func:`compact_rows`,
:class:`ClippedRows`), in the dtype that :func:`storage_dtype` picks from the public bounds (float32, float64, or a
refusal before any charge, :func:`check_storage`). The sensitivity argument these serve is in
:mod:`privtune.optim._losses` (which re-exports every name of this module, split from it in issue 39) and in
:meth:`privtune.optim._losses.MarginLoss.gradient`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = ["ClippedRows", "check_storage", "clip_rows", "compact_rows", "l1_bound_of", "map_into_domain",
           "storage_dtype", "valid_labels", "zero_non_finite"]

# Rows scaled down by clipping land this far inside the bound, so that float rounding
# of the scaled row can never push its norm above the declared bound.
_CLIP_SHRINK = 1.0 - 2.0**-40
# Rows stored in float32 (compact_rows) are scaled by this first: float32 rounds each entry within a
# relative 2**-24, so the stored rows' exact norms stay inside the bounds. A float32 row counts as over a
# bound only beyond _FLOAT32_FLAG times it (what the shrink leaves is never flagged again).
_FLOAT32_SHRINK = 1.0 - 2.0**-16
_FLOAT32_FLAG = 1.0 - 2.0**-20
# The smallest normal float32: a float32 scale factor below it would be rounded absolutely (clip_rows).
# A row more than this many times over a bound is zeroed (its float64 factor would be subnormal; _clip_factors).
_HUGE_ROW = 2.0**960
_FLOAT32_NORMAL = float(np.finfo(np.float32).tiny)

# The ranges of declared bounds in which the rows are stored in float32, in float64, or refused (storage_dtype).
# Float32: stored rows' bounds at least N 2**-109, entries at most 2**120, kappa R at least N 2**-102, kappa at
# least 2**-90, at most 2**30 columns; float64: 2**-400 and 2**400 (N = sqrt(columns) in L2, columns in L1).
_F32_LOW, _F32_HIGH, _F32_GRADIENT_LOW, _F32_KAPPA_LOW = 2.0**-109, 2.0**120, 2.0**-102, 2.0**-90
_F32_MAX_COLUMNS = 2**30
_F64_LOW, _F64_HIGH = 2.0**-400, 2.0**400

def _norm_count(count: int, norm: int) -> float:
    """``||(1, ..., 1)||`` of ``count`` entries in the L1 (``count``) or L2 (``sqrt(count)``) norm."""
    return float(count) if norm == 1 else math.sqrt(count)


def _fits(l1: float, l2: float, width: int, coefficients: int, kappa: float, kappa_l2: float, norm: int,
          low: float, high: float, gradient_low: float, kappa_low: float) -> bool:
    bounds = {1: l1, 2: l2}
    if not all(math.isfinite(b) and b > 0.0 for b in bounds.values()):
        return False
    if any(bounds[p] < _norm_count(width, p) * low for p in (1, 2)):
        return False
    if min(l1, l2) > high:
        return False
    if kappa_l2 < kappa_low:
        return False
    return kappa * bounds[norm] >= _norm_count(coefficients, norm) * gradient_low


def storage_dtype(l1: float, l2: float, width: int, *, coefficients: int, coefficient_l1: float,
                  coefficient_l2: float, norm: int) -> type | None:
    r"""The dtype in which the margin solvers store and sum the rows: float32, float64, or None (refuse).

    A function of public quantities only: the bounds ``l1``, ``l2`` of the
    rows the solver reads (intercept column included), their number of
    columns ``width`` (``d'``), the number of gradient coordinates
    ``coefficients`` (``D``: ``d'``, or ``K d'`` with K classes), the loss's
    coefficient bounds ``kappa_1``, ``kappa_2``
    (:meth:`~privtune.optim._losses.MarginLoss.coefficient_bound`) and the norm of the sensitivity
    (1: Laplace, 2: Gaussian). ``N_p(m)`` below is the norm of ``m`` ones:
    ``m`` in L1, ``sqrt(m)`` in L2.

    Returns
    -------
    numpy.float32
        If, for ``p`` in {1, 2}, ``l_p >= N_p(d') 2**-109``; the entry bound
        ``min(l1, l2) <= 2**120``; ``kappa_p l_p >= N_p(D) 2**-102`` in the
        sensitivity's norm; ``kappa_2 >= 2**-90``; and ``d' <= 2**30``.
    numpy.float64
        Otherwise, if ``l_p >= N_p(d') 2**-400``, ``min(l1, l2) <= 2**400``
        and ``kappa_p l_p >= N_p(D) 2**-400``.
    None
        Otherwise: the caller refuses the bounds before any charge.

    Notes
    -----
    **Why these ranges** (``u = 2**-24``, ``S = 1 - 2**-16`` the storage
    shrink of :func:`compact_rows`). Float32 rounds relatively (within
    ``u``) only in its normal range: below ``2**-126`` a rounded value is off
    by up to ``2**-150`` absolutely (gradual underflow), or by less than
    ``2**-126`` (flush to zero); the bounds below take ``2**-126`` per
    rounding, which covers both. Above ``(2 - 2**-23) 2**127`` a value
    becomes ``inf``.

    * *Stored rows.* A stored entry is ``fl32(fl64(x_j s))`` with ``s <= S
      (1 + 2**-52)`` (times the clip factor for a clipped row), so its
      magnitude is at most ``|x_j| S (1 + 2**-53)**3 (1 + u) + 2**-126`` and,
      by the triangle inequality, the stored row's exact norm is at most
      ``S (1 + u)(1 + eta) l_p + N_p(d') 2**-126``, where ``1 + eta`` (at most
      ``1 + 2**-22`` for ``d' <= 2**30``) bounds the float64 norm check's and
      the clip factor's rounding. This is at most ``(1 - 2**-50) l_p`` (the
      plan's bound may be the exact one rounded down by a few ulps) when
      ``l_p (2**-16 (1 - 2**-5)) >= N_p(d') 2**-126``, i.e. from
      ``l_p >= N_p(d') 2**-109`` (``d'`` counts the intercept column, whose
      stored value is rounded the same way). Below, a stored row's exact norm
      could exceed the declared bound: 5 % at ``data_norm = 1e-44`` before
      this range existed.
    * *Overflow.* Every stored entry is at most the entry bound
      ``min(l1, l2)``; a sub-block partial of :meth:`~privtune.optim._losses.MarginLoss.gradient` is
      a sum of 32 products ``c_i u_ij`` with ``|c_i| <= kappa' <= 1.5`` (the
      softmax residuals' norm is at most ``sqrt(2)``), so every intermediate
      float32 value is at most ``32 * 1.5 (1 + 2**-18) min(l1, l2) < 2**126``
      for ``min(l1, l2) <= 2**120``: no entry, product or partial sum becomes
      ``inf`` (at ``data_norm = 1e38``, before, the partial sums overflowed
      and the fit raised after its charge). The margins ``U @ w`` are not
      bounded (``w`` is any released iterate); a margin that overflows to
      ``+-inf`` has a well-defined derivative and one that becomes NaN
      (``0 * inf``) gets the derivative 0 (:meth:`~privtune.optim._losses.MarginLoss.derivative`,
      :meth:`~privtune.optim._losses.SoftmaxLoss.residuals`): a function of that row and ``w`` only.
    * *Underflow in the gradient sum.* Each of the at most ``2 * 32``
      roundings of a sub-block partial may err by ``2**-126`` absolutely,
      once for each of the two neighbouring row sets, in the replaced row's
      sub-block only: ``N_p(D) 2**-119`` in norm, at most ``2**-17`` of
      ``2 kappa_p l_p`` when ``kappa_p l_p >= N_p(D) 2**-102``, inside the
      slack of :meth:`~privtune.optim._losses.MarginLoss.gradient`. The clip value ``kappa`` itself is
      rounded to float32 relatively for ``kappa >= 2**-126``, and a softmax
      residual (scaled by ``1 - 2**-20`` before its cast) keeps its bounds when
      ``c >= sqrt(K) 2**-105``: ``kappa_2 >= 2**-90`` covers both for ``K <=
      2**20``.

    Outside the float32 range the rows are stored in float64, where the same
    arguments hold with ``2**-53`` and ``2**-1022`` for ``u`` and the underflow
    step, ``2**1024`` for the overflow, and the float64 sum's non-local
    rounding over all ``n <= 2**35`` rows (``4 n 2**-1022 N_p(D)`` at most,
    against ``2 kappa_p l_p``); the limits ``2**-400`` and ``2**400`` leave
    hundreds of binary orders of magnitude to each of them, and keep the
    squares of the float64 norm check (``x**2``, up to ``2**800``; rows far
    over the bound whose squares overflow are scaled to 0, a map of the row)
    and the smoothness ``R**2 / h`` finite. Beyond them the bounds are refused
    before any charge (nobody declares a row norm of ``1e-121``; a bound
    such as ``1e-310`` would put the float64 arithmetic in the same trouble).
    """
    for low, high, g_low, k_low, dtype, cols in (
            (_F32_LOW, _F32_HIGH, _F32_GRADIENT_LOW, _F32_KAPPA_LOW, np.float32, _F32_MAX_COLUMNS),
            (_F64_LOW, _F64_HIGH, _F64_LOW, _F64_LOW, np.float64, None)):
        if cols is not None and width > cols:
            continue
        if _fits(float(l1), float(l2), int(width), int(coefficients), float(coefficient_l1 if norm == 1
                 else coefficient_l2), float(coefficient_l2), int(norm), low, high, g_low, k_low):
            return dtype
    return None


def check_storage(l1: float, l2: float, width: int, *, coefficients: int, coefficient_l1: float,
                  coefficient_l2: float, norm: int, owner: str) -> type:
    """:func:`storage_dtype`, refusing (before any charge, from public quantities) when it returns None."""
    dtype = storage_dtype(l1, l2, width, coefficients=coefficients, coefficient_l1=coefficient_l1,
                          coefficient_l2=coefficient_l2, norm=norm)
    if dtype is None:
        raise InvalidParameterError(
            f"The declared row bounds of {owner} (L1 {l1!r}, L2 {l2!r}, over {width} column(s), any intercept "
            f"column included; loss slope bound {coefficient_l2!r}) are outside the range in which its float "
            "arithmetic keeps the stated sensitivity: every row bound must lie between sqrt(d) 2**-400 (about "
            "3.9e-121 sqrt(d); d instead of sqrt(d) in L1) and 2**400 (about 2.6e120), and max_slope times the "
            "bound above the same lower limit. Rescale the rows to a norm of order 1 and declare data_norm (and "
            "intercept_scaling) accordingly. Nothing was spent.")
    return dtype

class ClippedRows(np.ndarray):
    """A float32 (or float64) array of rows that :func:`compact_rows` stored within ``bounds = (L1, L2)`` (internal).

    :func:`clip_rows` returns it unchanged for bounds at least as large, and
    the solvers skip their finiteness check (its entries are finite by
    construction), so that the rows are not scanned again. Any slice or
    zeroing of whole rows keeps the bounds; nothing else may modify it.
    """

    bounds: tuple[float, float]

    def __array_finalize__(self, obj: object) -> None:
        self.bounds = getattr(obj, "bounds", (math.inf, math.inf))


def _clip_factors(U: np.ndarray, l1_bound: float, l2_bound: float, *, mode: str, owner: str, name: str,
                  flag: float = 1.0) -> np.ndarray | None:
    """Per-row scale factors that bring every row within both bounds, or None if no row is over.

    A row is "over" when its norm exceeds ``flag`` times a bound. Norms are
    computed in float64 whatever the dtype of ``U``. ``mode="raise"`` refuses
    rows over a bound by more than a relative ``1e-12`` (see :func:`clip_rows`).
    A row whose norm exceeds ``2**960`` times a bound (or overflows) gets the
    factor 0 (it becomes the zero row, a map of that row): its factor would
    be below float64's normal range, where rounding is absolute, and the
    scaled row could exceed the bound.
    """
    with np.errstate(all="ignore"):  # a row whose norm overflows is scaled to 0, never warned about
        n2 = np.sqrt(np.einsum("ij,ij->i", U, U, dtype=np.float64))
    lim2 = flag * l2_bound
    with np.errstate(all="ignore"):
        # a row more than 2**960 times over is zeroed: its factor would be a subnormal float, rounded absolutely
        f2 = np.where(n2 > lim2, np.where(n2 > l2_bound * _HUGE_ROW, 0.0, l2_bound / n2), 1.0)
        if l1_bound >= math.sqrt(U.shape[1]) * l2_bound:  # ||u||_1 <= sqrt(d) ||u||_2: the L1 bound cannot bind
            factor = f2
        else:
            n1 = np.abs(U).sum(axis=1, dtype=np.float64)
            f1 = np.where(n1 > flag * l1_bound, np.where(n1 > l1_bound * _HUGE_ROW, 0.0, l1_bound / n1), 1.0)
            factor = np.minimum(f1, f2)
    over = factor < 1.0
    if not over.any():
        return None
    if mode == "raise":
        tol = 1.0 - 1e-12
        if bool(np.any(factor < tol)):
            raise InvalidParameterError(
                f"Some row(s) of {name!r} passed to {owner} exceed the declared bound "
                f"(L1 norm {l1_bound!r}, L2 norm {l2_bound!r}) and clip='raise'. Scale the data to the "
                "declared bound, raise the bound, or use clip='rows'.")
    return factor


def valid_labels(z: np.ndarray, n_classes: int | None = None) -> np.ndarray:
    """Which labels the trainers take: exactly -1 or +1, or with ``n_classes`` an integer in ``0 .. K - 1``."""
    if n_classes is None:
        return (z == 1.0) | (z == -1.0)
    with np.errstate(invalid="ignore"):
        return (z >= 0.0) & (z < n_classes) & (z == np.floor(z))


def zero_non_finite(U: np.ndarray) -> np.ndarray:
    """``U`` with every non-finite entry (NaN, +-inf) replaced by 0; ``U`` itself when all are finite.

    The one map of a value defect in a feature entry (DESIGN's rule 7: never
    refused), applied alike in ``fit`` and in prediction. The caller's array
    is never modified.
    """
    finite = np.isfinite(U)
    if finite.all():
        return U
    out = U.copy(order="K")  # the layout of U, whichever entries are mapped
    out[~finite] = 0
    return out


def map_into_domain(U: np.ndarray, z: np.ndarray, n_classes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Map every row into the trainers' domain instead of refusing it for its values.

    A non-finite entry of ``U`` becomes 0; a row whose label is not exactly
    -1 or +1 (with ``n_classes``: not a class index ``0 .. K - 1``; NaN
    included) becomes the zero row with label +1 (class 0), so that it
    contributes nothing to any gradient (its gradient is ``c u = 0``). Each is
    a deterministic map of one row, so replacing one row still changes one row
    of the mapped data: the sensitivity analysis is unchanged and no refusal
    depends on a row (DESIGN's rule 7). The caller's arrays are never modified.
    """
    valid = valid_labels(z, n_classes)
    U = zero_non_finite(U)
    if not valid.all():
        U = U.copy(order="K")  # the layout of U, whichever rows are mapped (it sets the gradient's rounding)
        U[~valid] = 0
        z = np.where(valid, z, 1.0 if n_classes is None else 0.0)
    return U, z


def clip_rows(U: np.ndarray, l1_bound: float, l2_bound: float, *, mode: str, owner: str,
              name: str = "X") -> np.ndarray:
    """Scale rows so that ``||u||_1 <= l1_bound`` and ``||u||_2 <= l2_bound``.

    ``mode="rows"`` scales offending rows down; ``mode="raise"`` refuses them
    (beyond a relative tolerance of ``1e-12`` for float rounding, under which
    they are scaled). The error message contains no value of the data and no
    count of offending rows (a count is a statistic of the rows).

    A float32 ``U`` (as :func:`compact_rows` stores it) stays float32: a row is
    then treated as over when its (float64-computed) norm exceeds
    ``1 - 2**-20`` times a bound, and is scaled to ``1 - 2**-16`` times it, so
    that the float32 rounding of the scaled entries (a relative ``2**-24``
    each) cannot lift the exact norm of the stored row above the bound. That
    holds for bounds in the float32 range of :func:`storage_dtype` (the
    solvers convert float32 rows to float64 outside it); a row whose scale
    factor is below float32's normal range (a huge row, or a tiny bound) is
    scaled in float64 and then rounded to float32 once, as :func:`compact_rows`
    does (a float32 scale factor there would be rounded absolutely).
    """
    if isinstance(U, ClippedRows) and U.bounds[0] <= l1_bound and U.bounds[1] <= l2_bound:
        return U  # stored inside these bounds by compact_rows
    single = U.dtype == np.float32
    factor = _clip_factors(U, l1_bound, l2_bound, mode=mode, owner=owner, name=name,
                           flag=_FLOAT32_FLAG if single else 1.0)
    if factor is None:
        return U
    rows = np.flatnonzero(factor < 1.0)
    out = U.copy(order="K")  # the layout of U (the gradient's rounding follows it; it must not depend on the rows)
    shrink = _FLOAT32_SHRINK if single else _CLIP_SHRINK
    scale = factor[rows] * shrink
    if single and bool(np.any(scale < _FLOAT32_NORMAL)):  # a per-row map: such a row is scaled in float64
        tiny = scale < _FLOAT32_NORMAL
        out[rows[tiny]] = (U[rows[tiny]].astype(np.float64) * scale[tiny][:, None]).astype(np.float32)
        rows, scale = rows[~tiny], scale[~tiny]
    out[rows] *= scale[:, None].astype(U.dtype)  # only the offending rows are rescaled
    return out


def compact_rows(U: np.ndarray, l1_bound: float, l2_bound: float, *, mode: str, owner: str,
                 name: str = "X", intercept: float = 0.0, dtype: Any = np.float32) -> tuple[np.ndarray, float]:
    """The rows clipped as by :func:`clip_rows`, scaled by ``1 - 2**-16``, as one column-major float32 array.

    The full-batch trainers spend nearly all their time in two memory-bound
    passes over the rows per step (``U @ w`` and ``U.T @ c``); storing them in
    float32 halves that traffic, and storing them column by column (Fortran
    order, whatever the data; issue 41) makes ``U @ w`` a column-major BLAS
    product, about three times faster than on rows of 21 floats. Every row is clipped in float64 and then
    multiplied by ``1 - 2**-16`` before the cast, so that the float32 rounding
    (a relative ``2**-24`` per entry) leaves the exact norms of the stored rows
    strictly inside the declared bounds: the sensitivity analysis holds for the
    rows the solver reads. That relative argument holds only inside the
    float32 range of :func:`storage_dtype` (whose docstring gives the exact
    range and its derivation: below it float32 rounds absolutely, and a stored
    row exceeded its L2 bound by 5 % at ``1e-44``; above it entries and the
    gradient's partial sums overflow): the callers pass ``dtype`` from
    :func:`storage_dtype` applied to the declared bounds (public), and
    outside that range the rows are stored in float64 with the same shrink.
    ``U`` must be finite (the estimators map non-finite
    entries to 0 first): the result is marked finite and not checked again.
    With ``intercept > 0`` a constant column is appended
    (its stored value, also shrunk, is returned; the caller's bounds must
    include ``intercept``).

    Returns
    -------
    rows : ClippedRows of shape (n, d) or (n, d + 1), dtype float32 (or ``dtype``)
        Its ``bounds`` are the declared ones, widened by ``intercept``.
    intercept : float
        The stored value of the constant column (0.0 without one).
    """
    factor = _clip_factors(U, l1_bound, l2_bound, mode=mode, owner=owner, name=name)
    n, d = U.shape
    out = np.empty((n, d + (intercept > 0.0)), dtype=dtype, order="F")
    scale = np.full(n, _FLOAT32_SHRINK)
    if factor is not None:  # clipped rows as clip_rows leaves them (factor * _CLIP_SHRINK), then the shrink
        over = factor < 1.0
        scale[over] *= factor[over] * _CLIP_SHRINK
    np.multiply(U, scale[:, None], out=out[:, :d], casting="unsafe")
    stored = 0.0
    if intercept > 0.0:
        stored = float(np.asarray(intercept * _FLOAT32_SHRINK, dtype=dtype))
        out[:, d] = stored
    rows = out.view(ClippedRows)
    rows.bounds = (l1_bound + intercept, math.hypot(l2_bound, intercept))
    return rows, stored


def l1_bound_of(l1: float, l2: float, dim: int) -> float:
    """The L1 bound implied by both declared bounds: ``min(l1, sqrt(d) l2)``."""
    return min(l1, math.sqrt(dim) * l2)
