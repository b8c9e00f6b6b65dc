r"""Margin losses of the seed-002 trainers, their public constants, and row clipping.

(:class:`SoftmaxLoss`, the losses of K classes with clipped residuals -- the multinomial loss and a smoothed
Crammer & Singer hinge -- is privtune's extension for the classifiers with more than two classes; its constants are
in its own docstring. Everything below is about the margin losses.)

Both losses are functions of the margin ``m = z u^T w`` of a row ``u`` with label
``z`` in {-1, +1}; the gradient of one example's data term is ``phi'(m) z u``.

* ``"logistic"``: :math:`\phi(m) = \log(1 + e^{-m})`, :math:`\phi'(m) = -\sigma(-m) \in (-1, 0)`,
  :math:`0 < \phi'' \le 1/4`.
* ``"smoothed_hinge"`` (Huber-smoothed hinge, width ``h > 0``):
  :math:`\phi(m) = 0` for ``m >= 1``, :math:`(1 - m)^2 / (2h)` for ``1 - h < m < 1``,
  :math:`1 - m - h/2` for ``m <= 1 - h``; :math:`\phi'(m) \in [-1, 0]`, :math:`\phi'' \le 1/h`.

**Slope clipping** (``max_slope = kappa`` in (0, 1]; privtune's extension, not in
the paper, which has ``kappa = 1``): the derivative is clipped,
``phi_kappa'(m) = max(phi'(m), -kappa)``. Since ``phi'`` is non-decreasing, so is
the clipped derivative: it is the derivative of the convex loss ``phi_kappa``
equal to ``phi`` where ``|phi'| <= kappa`` and continued linearly with slope
``-kappa`` below (for logistic with ``kappa = 1/2``: ``phi`` for ``m >= 0`` and
``ln 2 - m / 2`` for ``m < 0``). ``phi_kappa'' <= phi''``, so the smoothness
bound below still holds, and every per-example gradient has ``|c| <= kappa``:
the sensitivities below are multiplied by ``kappa``. This is per-example
gradient clipping (as in DP-SGD) expressed as a loss, so the solvers still
minimise a convex, smooth objective.

**L1 sensitivity (derivation).** For rows with ``||u||_1 <= R_1`` and any labels,
the per-example gradients of the data term are ``c u`` and ``c' u'`` with
``|c|, |c'| <= kappa`` (``kappa = 1`` without slope clipping), so for every ``w``

.. math:: \|c u - c' u'\|_1 \le |c| \|u\|_1 + |c'| \|u'\|_1 \le 2 \kappa R_1 =: S_1 .

The L2 regulariser is the same for every example and cancels. Replacing one row
of a batch of ``m`` rows therefore moves the batch-mean gradient by at most
``S_1 / m`` in L1 norm. (For logistic the supremum ``2 R_1`` is approached but not
attained; for the smoothed hinge it is attained, with ``u' = -u``.) If an L2 bound
``R_2`` is declared as well, ``||u||_1 <= sqrt(d) R_2`` and ``R_1`` is replaced by
``min(R_1, sqrt(d) R_2)``.

**Smoothness (public).** The Hessian of the data term is
``(1/n) sum phi''(m_i) u_i u_i^T``, whose largest eigenvalue is at most
``max phi'' * R_2**2``; so ``L = R_2**2 / 4 + mu`` (logistic) or
``R_2**2 / h + mu`` (smoothed hinge), with ``R_2 <= R_1`` when no L2 bound is
declared. This replaces the paper's data-derived ``L`` (spec P10).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = ["LOSSES", "MULTICLASS_HINGE", "MULTICLASS_LOSSES", "MULTINOMIAL", "MarginLoss", "SoftmaxLoss", "get_loss",
           "check_storage", "clip_rows", "compact_rows", "map_into_domain", "storage_dtype", "valid_labels",
           "zero_non_finite"]

LOSSES = ("logistic", "smoothed_hinge")
#: The softmax cross-entropy of K classes (:class:`SoftmaxLoss`; the accelerated solvers only).
MULTINOMIAL = "multinomial"
#: Crammer & Singer's multiclass hinge smoothed by a softmax of width h (:class:`SoftmaxLoss` with margin 1).
MULTICLASS_HINGE = "multiclass_smoothed_hinge"
#: The losses of K > 2 classes, with one weight vector per class.
MULTICLASS_LOSSES = (MULTINOMIAL, MULTICLASS_HINGE)
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
# MarginLoss.gradient works through the rows in blocks of about this many bytes (fits in a core's L2 cache).
_BLOCK_BYTES = 1 << 19
# Float32 rows are summed in float32 over sub-blocks of this many consecutive rows (fixed by position), and the
# sub-blocks' partial sums in float64 (see MarginLoss.gradient, "Sensitivity of the computed gradient").
_SUB_ROWS = 32
# MarginLoss.gradient multiplies the data term's mean by this factor: the relative slack 2**-13 pays for the
# rounding of the sum over rows (float32 within the replaced row's sub-block, float64 everywhere) ...
_GRADIENT_SHRINK = 1.0 - 2.0**-13
# ... provided that n * (float64 rounding depth) <= _SUM_BUDGET (then n * gamma64_depth <= 2**-16 (1 + 2**-15)).
_SUM_BUDGET = 2**37

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
    (:meth:`MarginLoss.coefficient_bound`) and the norm of the sensitivity
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
      ``min(l1, l2)``; a sub-block partial of :meth:`MarginLoss.gradient` is
      a sum of 32 products ``c_i u_ij`` with ``|c_i| <= kappa' <= 1.5`` (the
      softmax residuals' norm is at most ``sqrt(2)``), so every intermediate
      float32 value is at most ``32 * 1.5 (1 + 2**-18) min(l1, l2) < 2**126``
      for ``min(l1, l2) <= 2**120``: no entry, product or partial sum becomes
      ``inf`` (at ``data_norm = 1e38``, before, the partial sums overflowed
      and the fit raised after its charge). The margins ``U @ w`` are not
      bounded (``w`` is any released iterate); a margin that overflows to
      ``+-inf`` has a well-defined derivative and one that becomes NaN
      (``0 * inf``) gets the derivative 0 (:meth:`MarginLoss.derivative`,
      :meth:`SoftmaxLoss.residuals`): a function of that row and ``w`` only.
    * *Underflow in the gradient sum.* Each of the at most ``2 * 32``
      roundings of a sub-block partial may err by ``2**-126`` absolutely,
      once for each of the two neighbouring row sets, in the replaced row's
      sub-block only: ``N_p(D) 2**-119`` in norm, at most ``2**-17`` of
      ``2 kappa_p l_p`` when ``kappa_p l_p >= N_p(D) 2**-102``, inside the
      slack of :meth:`MarginLoss.gradient`. The clip value ``kappa`` itself is
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


def _max_rows() -> int:
    """The largest number of rows :meth:`MarginLoss.gradient` accepts (``2**37 / 4``; the budget needs depth >= 4)."""
    return _SUM_BUDGET // 4


def _check_rows(n: int) -> None:
    if n > _max_rows():
        raise InvalidParameterError(
            f"The margin-loss gradient supports at most {_max_rows()} rows per batch (its float64 sum's "
            f"rounding must stay inside the sensitivity's slack); got {n}.")


def _block_rows(n: int, d: int, itemsize: int) -> int:
    """Rows per block of :meth:`MarginLoss.gradient` (about 512 KiB of rows; ``n`` and ``d`` are public).

    Float32 rows: a multiple of ``_SUB_ROWS``, so that the sub-blocks are the
    same runs of ``_SUB_ROWS`` rows (counted from row 0) whatever the block
    size. Float64 rows: also ``n (rows + 3) <= 2**37``, which bounds the float64
    rounding of the one-level sum.

    Raises
    ------
    InvalidParameterError
        If ``n > 2**37 / 4``.
    """
    _check_rows(n)
    if itemsize == 4:
        return max(_SUB_ROWS, _BLOCK_BYTES // (4 * max(d, 1)) // _SUB_ROWS * _SUB_ROWS)
    return min(max(256, _BLOCK_BYTES // (itemsize * max(d, 1))), _SUM_BUDGET // max(n, 1) - 3)


def _chunk_partials(n: int, partials: int) -> int:
    """Float64 chunk length for the sub-blocks' partials: at most ``partials``, and ``n (chunk + 2) <= 2**37``."""
    _check_rows(n)
    return max(1, min(partials, _SUM_BUDGET // max(n, 1) - 2))


def _sub_block_sums(c: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """``out[k] = c[32k:32k+32] @ rows[32k:32k+32]`` for every sub-block of ``_SUB_ROWS`` rows, in ``rows``' dtype.

    One BLAS vector-matrix product per sub-block (numpy's stacked ``matmul``),
    on that sub-block's derivatives and rows only; a last, shorter sub-block
    gets its own product. ``out`` has ``ceil(len(c) / _SUB_ROWS)`` rows.
    """
    b = _SUB_ROWS
    m, d = rows.shape
    full = m // b
    if full:
        np.matmul(c[:full * b].reshape(full, 1, b), rows[:full * b].reshape(full, b, d), out=out[:full, None, :])
    if m > full * b:
        out[full] = c[full * b:] @ rows[full * b:]


class MarginLoss:
    """A margin loss ``phi(z u^T w)`` with its public constants (internal)."""

    def __init__(self, name: str, smoothing: float = 1.0, max_slope: float = 1.0) -> None:
        self.name = name
        self.smoothing = float(smoothing)
        self.max_slope = float(max_slope)

    def _knee(self) -> float:
        """The margin below which the slope is clipped (``-inf`` without clipping)."""
        k = self.max_slope
        if k >= 1.0:
            return -math.inf
        if self.name == "logistic":
            return math.log((1.0 - k) / k)  # sigma(-m) = k
        return 1.0 - k * self.smoothing  # (1 - m) / h = k

    def derivative(self, margin: np.ndarray) -> np.ndarray:
        """``phi_kappa'(margin)``, in ``[-max_slope, 0]``; a NaN margin (``0 * inf`` in ``U @ w``) gets a value in it.

        ``+-inf`` margins have their limits (0 and ``-kappa``). A NaN margin,
        which only a released iterate beyond the rows' float range can cause,
        gets ``-kappa`` (logistic) or 0 (smoothed hinge): ``np.fmax`` /
        ``np.fmin`` ignore a NaN operand, at the cost of the clip the
        derivative has anyway (one more pass over the margins for the
        unclipped logistic loss). A function of the row and ``w`` only, inside
        the coefficient bound: the sensitivity analysis holds whatever ``w`` is.
        """
        if self.name == "logistic":
            d = 0.5 * (np.tanh(0.5 * margin) - 1.0)  # -sigma(-m), in [-1, 0]; tanh is faster than expit
            return np.fmax(d, -min(self.max_slope, 1.0))  # the clip; a NaN margin gets -kappa
        d = -np.fmin(np.fmax((1.0 - margin) / self.smoothing, 0.0), 1.0)  # np.clip's values; a NaN margin gets 0
        return d if self.max_slope >= 1.0 else np.fmax(d, -self.max_slope)

    def _raw_value(self, margin: np.ndarray) -> np.ndarray:
        if self.name == "logistic":
            return np.logaddexp(0.0, -margin)
        h = self.smoothing
        r = 1.0 - margin
        return np.where(r <= 0.0, 0.0, np.where(r < h, r * r / (2.0 * h), r - h / 2.0))

    def value(self, margin: np.ndarray) -> np.ndarray:
        """``phi_kappa(margin)`` (for evaluation and tests only; never released)."""
        margin = np.asarray(margin, dtype=float)
        knee = self._knee()
        if not math.isfinite(knee):
            return self._raw_value(margin)
        at_knee = float(self._raw_value(np.array([knee]))[0])
        return np.where(margin >= knee, self._raw_value(np.maximum(margin, knee)),
                        at_knee + self.max_slope * (knee - margin))

    def coefficient_bound(self, norm: int) -> float:
        """Bound on one example's coefficient ``|phi_kappa'|``: ``kappa`` in either norm."""
        del norm
        return self.max_slope

    def curvature_bound(self) -> float:
        """``sup phi''``: 1/4 (logistic) or 1/h (smoothed hinge)."""
        return 0.25 if self.name == "logistic" else 1.0 / self.smoothing

    def value_bound(self, margin_bound: float) -> float:
        """``sup phi(m)`` over ``|m| <= margin_bound`` (``phi`` is decreasing)."""
        return float(self.value(np.array([-margin_bound]))[0])

    def gradient(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> np.ndarray:
        r"""``(1 - 2**-13)`` times the mean gradient of ``phi(z u^T w)`` over the rows of ``U``, plus ``alpha w``.

        The rows are read block by block (about 512 KiB of rows, so that each
        block's second product reads the rows the first has just brought into
        cache). In a block, the margins ``U_b w`` and the clipped derivatives
        ``c_i`` (times the labels) run in ``U``'s dtype. The **sum over rows**
        ``sum_i c_i u_i`` depends on the dtype:

        * float32 rows (:func:`compact_rows`, the estimators' default): the rows
          are cut, by position, into sub-blocks of ``b = 32`` consecutive rows
          (rows ``32k .. 32k + 31``; the last one may be shorter). Each
          sub-block's partial sum ``P_k`` is computed in float32 by a BLAS
          product of its own 32 derivatives and rows (numpy's stacked
          ``matmul``, one vector-matrix product per sub-block); the partials
          are converted (exactly) to float64 and summed in float64, in chunks
          of ``C`` partials (a BLAS product with a vector of ones) whose sums
          are added with :func:`math.fsum` (correctly rounded).
        * float64 rows (other dtypes are converted to float64 first): each
          block's ``c_b^T U_b`` runs in float64 and the blocks' sums are added
          with :func:`math.fsum`.

        (The summation is :func:`_weighted_row_mean`, which
        :meth:`SoftmaxLoss.gradient` applies to each class's column of
        coefficients.)

        The sum is then divided by ``n`` and multiplied by ``1 - s``,
        ``s = 2**-13``.

        Raises
        ------
        InvalidParameterError
            If ``U`` has more than ``2**37 / 4`` rows (``n`` is public).

        Notes
        -----
        **Sensitivity of the computed gradient.** The trainers add noise
        calibrated to the sensitivity of the *exact* mean,
        ``Delta = 2 kappa R / n`` (L2 or L1, ``R`` the rows' bound in that
        norm), so the *computed* means of two neighbouring row sets must differ
        by at most ``Delta``: the mechanisms' own headroom (``2**-10``) is used
        up by their grid rounding. Float rounding in the sum over rows breaks
        this without care: one replaced row changes the rounding of every later
        partial sum, and with a float32 sum over blocks of rows (privtune before
        the audit) the computed difference reached ``1.0027 Delta``
        (n = 200 000, d = 2). The data term is therefore multiplied by
        ``1 - s``, ``s = 2**-13`` (a deviation from the paper's gradient: the
        solvers minimise ``(1 - s)`` times the data term plus the regulariser,
        i.e. a regularisation ``1 / (1 - s)`` times stronger, a relative change
        of 1.2e-4 -- far below the DP noise), and the rounding is bounded as
        follows, for ``alpha = 0`` (the trainers add the public regulariser's
        gradient after the noise) and labels in {-1, +1}.

        *Notation.* ``c_i`` is the computed derivative of row ``i`` times its
        label; it depends on row ``i``, its position and ``w`` only (the margin
        of row ``i`` is computed from row ``i`` and ``w``: the BLAS product
        ``U_b w`` does not mix rows, and ``U`` is made C-contiguous first, so
        that its layout cannot differ between neighbours), and
        ``|c_i| <= kappa' = kappa (1 + 2**-24)`` (the float32 rounding of the
        clip value). ``u_32 = 2**-24``,
        ``u_64 = 2**-53``, ``gamma^p_k = k u_p / (1 - k u_p)``; absolute values
        and inequalities of vectors are per coordinate, ``||.||`` is the norm of
        the sensitivity (L2 or L1), and for any set ``S`` of rows
        ``||sum_{i in S} |c_i| |u_i| || <= sum_{i in S} |c_i| ||u_i|| <= |S| kappa' R``
        (triangle inequality). ``X = sum_i c_i u_i`` exactly,
        ``T = sum_i |c_i| |u_i|``, and ``H`` is the output.

        *Float32 rows.* (1) A partial is an inner product of length at most
        ``b`` per coordinate, computed in float32 in an unknown order (fused
        multiply-adds or not): ``|P_k - X_k| <= gamma^32_b T_k`` with ``X_k``,
        ``T_k`` the sums over the sub-block (Higham 2002, eq. (3.5)).
        (2) The partials are exact in float64; a chunk's sum (any order, at
        most ``C - 1`` roundings per term), ``fsum``, the division by ``n`` and
        the factor ``1 - s`` multiply every partial by at most ``C + 2``
        factors ``1 + delta``, ``|delta| <= u_64``; so (Higham's Lemma 3.3), with
        ``Q = sum_k P_k``,
        ``|H - (1 - s) Q / n| <= (1 - s) gamma^64_{C+2} sum_k |P_k| / n`` and
        ``sum_k |P_k| <= (1 + gamma^32_b) T``. (3) Two neighbouring row sets
        differ in one row, in sub-block ``k*``. Every other sub-block has the
        same rows and the same derivatives at the same positions and offsets,
        and its partial is the same BLAS computation on the same values: it is
        the same float32 vector, bit for bit (the sub-blocks are fixed by
        position, not by the data;
        ``tests/optim/test_gradient_sensitivity.py`` checks that a partial does
        not change when any other row changes, nor with the array's address in
        memory). So ``Q - Q' = P_k* - P'_k*`` and
        ``||Q - Q'|| <= ||c u - c' u'|| + gamma^32_b (||T_k*|| + ||T'_k*||) <= 2 kappa' R (1 + b gamma^32_b)``.
        (4) Hence

        .. math:: \|H - H'\| \le (1 - s)(1 + 2^{-24})\,\Delta\,
                  \bigl(1 + b\gamma^{32}_b + n\gamma^{64}_{C+2}(1 + \gamma^{32}_b)\bigr).

        The first rounding term is local: relative to ``Delta`` it is about
        ``b**2 2**-24``, whatever ``n`` (``32 gamma^32_32 <= 2**-14 (1 + 2**-18)``).
        The second is the float64 sum's, about ``n C 2**-53``: ``C`` is chosen
        so that ``n (C + 2) <= 2**37`` (for ``n <= 2**37 / 4``; at n = 80 000 one
        chunk holds all 2 500 partials), hence ``n gamma^64_{C+2} <= 2**-16 (1 + 2**-15)``.
        The right-hand side is then at most
        ``(1 - 2**-13)(1 + 2**-24)(1 + 2**-14 + 2**-16 + 2**-30) Delta < (1 - 2**-15) Delta``
        (checked in exact arithmetic by the tests).

        *Float64 rows.* A block of ``B`` rows is an inner product of length
        ``B`` per coordinate in float64; with ``fsum``, the division and the
        factor: ``|H - (1 - s) X / n| <= (1 - s) gamma^64_{B+3} T / n``, and
        ``X - X'`` is one row's term, so
        ``||H - H'|| <= (1 - s)(1 + 2**-24) Delta (1 + n gamma^64_{B+3})``; the
        block is at most ``2**37 / n - 3`` rows, so this is below
        ``(1 - 2**-15) Delta`` too, without any assumption on the order of the
        operations.

        *Underflow and overflow* (the bounds above are relative; float32 is
        relative only in its normal range). A float32 rounding whose result is
        below ``2**-126`` errs by up to ``2**-150`` absolutely (by less than
        ``2**-126`` with flush-to-zero): at most ``2 * 32`` such errors per
        coordinate of the replaced row's sub-block, for each neighbour, add at
        most ``N(D) 2**-119`` (``N(D)`` the norm of ``D`` ones, ``D`` the
        gradient's coordinates) to ``||Q - Q'||``, i.e. at most ``2**-17`` to
        the bracket when ``kappa R >= N(D) 2**-102``; with it the bracket is
        still at most ``(1 - 2**-13)(1 + 2**-24)(1 + 2**-14 + 2**-16 + 2**-30 +
        2**-17) < 1 - 2**-15`` (checked in exact arithmetic by the tests). The
        partials cannot overflow when the entries are at most ``2**120``. The
        rows are stored in float32 only within those ranges
        (:func:`storage_dtype`, which the solvers' plan applies to the
        declared bounds: public); elsewhere they are stored in float64, whose
        arguments hold with hundreds of binary orders of magnitude to spare,
        or the bounds are refused before any charge. The margins ``U_b w``
        are not bounded: an infinite one has a well-defined derivative and a
        NaN one gets a fixed value inside ``[-kappa, 0]``
        (:meth:`derivative`), so ``c_i`` still depends on row ``i`` and ``w``
        only.

        References
        ----------
        .. [Hig02] N. J. Higham, "Accuracy and Stability of Numerical
           Algorithms", 2nd ed., SIAM 2002, sections 3.1 and 4.2.
        """
        def coefficients(Ub: np.ndarray, start: int, wd: np.ndarray) -> np.ndarray:
            zb = z[start:start + Ub.shape[0]].astype(Ub.dtype, copy=False)
            c = self.derivative(zb * (Ub @ wd))
            c *= zb
            return c

        g = _weighted_row_mean(U, w, coefficients)
        return g + alpha * w if alpha else g

    def objective(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> float:
        """``(1/n) sum phi(z_i u_i^T w) + (alpha / 2) ||w||^2`` (evaluation only)."""
        return float(np.mean(self.value(z * (U @ w))) + 0.5 * alpha * float(w @ w))



#: Softmax residuals are scaled to this share of the clip norm before their float32 rounding, so that the
#: rounded coefficients' L2 and L1 norms stay below the clip (and 2) for any number of classes below 2**20.
_RESIDUAL_SHRINK = 1.0 - 2.0**-20


class SoftmaxLoss:
    r"""The multinomial (softmax cross-entropy) loss of K classes, with per-example residual clipping (internal).

    The model has one weight vector per class, ``W`` (``K x d``, flattened row
    by row as the solvers' ``w``); a row ``u`` with class ``y`` has logits
    ``W u``, probabilities ``p = softmax(W u)`` and the gradient
    ``(p - e_y) u^T`` of its cross-entropy. **Residual clipping** (privtune's
    extension, the multinomial analogue of ``max_slope``): the residual
    ``r = p - e_y`` is scaled down to the L2 norm
    ``c = min((kappa / kappa_0) r_0, sqrt(2))`` when it is longer, with ``r_0``
    the norm of ``r`` at ``W = 0`` (public: it depends on K, the margin and
    ``h`` only) and ``kappa_0`` the binary loss's default ``max_slope`` (1/2
    for logistic, 1 for the hinge): at its default an estimator clips nothing
    at the start, as in the binary case. For the multinomial loss ``p`` is
    uniform at ``W = 0``, ``r_0 = sqrt((K - 1) / K)`` and
    ``c = 2 kappa sqrt((K - 1) / K)``; for ``K = 2`` it is the binary logistic
    clip ``|phi'| <= 1/2``. ``sqrt(2)`` is the largest norm ``r`` can have.

    **Multiclass smoothed hinge** (``margin = 1``, ``smoothing = h``; the SVMs'
    loss for ``K > 2``, privtune's extension): the same with the logits
    ``(W u + 1 - e_y) / h`` and the loss ``h`` times their cross-entropy,
    ``h log(1 + sum_{j != y} exp((1 + w_j.u - w_y.u) / h))``, a smooth upper
    bound of Crammer & Singer's hinge ``max(0, max_{j != y} 1 + w_j.u - w_y.u)``
    within ``h ln K``. Its gradient is again ``(p - e_y) u^T`` with ``p`` the
    softmax of those logits, so every bound below holds with the smoothness
    divided by ``h``.

    **Sensitivity.** One example's gradient ``r u^T`` has Frobenius norm
    ``|r| |u| <= c R_2`` and entrywise L1 norm ``|r|_1 |u|_1 <= min(2, sqrt(K) c) R_1``
    (``|p - e_y|_1 = 2 (1 - p_y) <= 2``, and scaling down keeps it so); replacing
    one row moves the mean by at most twice that over ``n``
    (:meth:`coefficient_bound`). **Smoothness.** The Jacobian of the clipped
    residual field is that of ``p`` (``diag(p) - p p^T``, operator norm at most
    1/2) composed with a 1-Lipschitz map, so the data gradient is
    ``R_2**2 / 2``-Lipschitz in ``W``. With clipping the field is in general not
    the gradient of a loss; the privacy analysis does not need it to be, and the
    solvers' step ``1 / L`` still uses that Lipschitz bound.
    """

    def __init__(self, n_classes: int, max_slope: float = 1.0, *, margin: float = 0.0,
                 smoothing: float = 1.0) -> None:
        self.n_classes = int(n_classes)
        self.max_slope = float(max_slope)
        self.margin = float(margin)
        self.smoothing = float(smoothing)
        self.name = MULTINOMIAL if self.margin == 0.0 else MULTICLASS_HINGE
        # The clip scales the residual's norm at W = 0 (public: K, margin, h) by max_slope over the binary loss's
        # default max_slope (1/2 logistic, 1 hinge): at its default, an estimator clips nothing at the start.
        start = np.full((1, self.n_classes), self.margin / self.smoothing)
        start[0, 0] = 0.0
        p = np.exp(start - start.max())
        p /= p.sum()
        p[0, 0] -= 1.0
        self.start_norm = float(np.sqrt(np.sum(p * p)))
        default_slope = 0.5 if self.margin == 0.0 else 1.0
        self.clip = min(self.max_slope / default_slope * self.start_norm, math.sqrt(2.0))

    def coefficient_bound(self, norm: int) -> float:
        """Bound on one example's coefficients ``r``: ``c`` in L2 (``norm=2``), ``min(2, sqrt(K) c)`` in L1."""
        if norm == 2:
            return self.clip
        return min(2.0, math.sqrt(self.n_classes) * self.clip)

    def curvature_bound(self) -> float:
        """``1 / (2 h)``: the largest eigenvalue of ``diag(p) - p p^T`` is at most 1/2."""
        return 0.5 / self.smoothing

    def value_bound(self, margin_bound: float) -> float:
        """``sup`` of the loss over scores ``W u`` of absolute value at most ``mb``: ``h ln K + 2 mb + margin``."""
        return self.smoothing * math.log(self.n_classes) + 2.0 * margin_bound + self.margin

    def _logits(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The softmax's logits ``(W u + margin (1 - e_y)) / h`` (float64), row by row."""
        z = np.asarray(scores, dtype=np.float64)
        if self.margin:
            z = z + self.margin
            z[np.arange(z.shape[0]), labels] -= self.margin
        return z / self.smoothing if self.smoothing != 1.0 else z

    def residuals(self, logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The clipped residuals ``r_i`` (float64) of rows with these logits and class indices, row by row.

        A row whose residual is not a number (an infinite logit, which only a
        released ``W`` beyond the rows' float range can cause) gets the residual
        0: a function of that row and ``W`` only, inside the bounds.
        """
        z = np.asarray(logits, dtype=np.float64)
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(p.shape[0]), labels] -= 1.0
        norms = np.sqrt(np.einsum("ij,ij->i", p, p))
        target = self.clip * _RESIDUAL_SHRINK
        scale = np.where(norms > target, target / np.maximum(norms, 1e-300), _RESIDUAL_SHRINK)
        out = p * scale[:, None]
        nan = np.isnan(norms)
        if nan.any():  # a non-finite logit (a released W beyond the float range, ``inf - inf``): residual 0
            out[nan] = 0.0
        return out

    def gradient(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> np.ndarray:
        """``(1 - 2**-13)`` times the mean of the clipped ``r_i u_i^T`` over the rows, flattened, plus ``alpha w``.

        ``z`` holds each row's class index in ``0 .. K - 1`` (as floats).
        Each row's logits (one BLAS product of the block with ``W^T``, which
        does not mix rows), probabilities and clipped residual depend on that
        row, its position and ``W`` only; the residuals are rounded to the
        rows' dtype, every one inside the bounds of :meth:`coefficient_bound`
        (they are scaled by ``1 - 2**-20`` first). The sum over rows is then the
        margin losses' (:func:`_weighted_row_mean`), one column per class: the
        rounding bound of :meth:`MarginLoss.gradient` holds with ``kappa'``
        replaced by the coefficient bound, since for any set of rows
        ``|| [sum_i |r_ik| |u_i|]_k || <= sum_i |r_i| |u_i|`` (Frobenius with L2,
        entrywise L1 with L1).
        """
        K = self.n_classes
        idx = np.asarray(z).astype(np.int64)

        def coefficients(Ub: np.ndarray, start: int, wd: np.ndarray) -> np.ndarray:
            rows_idx = idx[start:start + Ub.shape[0]]
            r = self.residuals(self._logits(Ub @ wd.reshape(K, -1).T, rows_idx), rows_idx)
            return r.astype(Ub.dtype)

        g = _weighted_row_mean(U, w, coefficients, columns=K).ravel()
        return g + alpha * w if alpha else g

    def objective(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> float:
        """Mean loss (unclipped) plus ``(alpha / 2) ||w||^2`` (evaluation only)."""
        idx = np.asarray(z).astype(np.int64)
        scores = np.asarray(U, dtype=np.float64) @ np.asarray(w, dtype=np.float64).reshape(self.n_classes, -1).T
        logits = self._logits(scores, idx)
        lse = np.logaddexp.reduce(logits, axis=1)
        ce = lse - logits[np.arange(logits.shape[0]), idx]
        return float(self.smoothing * np.mean(ce) + 0.5 * alpha * float(w @ w))


def _weighted_row_mean(U: np.ndarray, w: np.ndarray, coefficients: Any, columns: int = 0) -> np.ndarray:
    """``(1 - 2**-13) / n`` times ``sum_i c_i u_i`` (or ``sum_i c_i u_i^T`` for coefficient rows ``c_i`` in R^K).

    ``coefficients(U_b, start, w_b)`` returns the coefficients of the block of
    rows ``U_b`` starting at row ``start``, in ``U_b``'s dtype: shape
    ``(rows,)`` when ``columns == 0``, else ``(rows, columns)``; ``w_b`` is
    ``w`` in that dtype. Each row's coefficients must depend on that row, its
    position and ``w`` only. The summation is the one whose rounding
    :meth:`MarginLoss.gradient` bounds (float32 sub-blocks of 32 rows fixed by
    position, float64 chunks, ``fsum``), applied to each column; the result has
    shape ``(d,)`` or ``(columns, d)``. Blocks are processed one at a time, so
    the sums read the rows the coefficients have just brought into cache.
    """
    # one layout whatever the caller's (a Fortran-ordered float32 array stays so until clip_rows copies it,
    # which depends on the rows): the margins' rounding then depends on the values only
    U = np.ascontiguousarray(U, dtype=U.dtype if U.dtype in (np.float32, np.float64) else np.float64)
    with np.errstate(all="ignore"):  # no warning may depend on a row (an overflowing margin is mapped, see above)
        return _weighted_row_sum(U, w, coefficients, columns)


def _weighted_row_sum(U: np.ndarray, w: np.ndarray, coefficients: Any, columns: int) -> np.ndarray:
    """The body of :func:`_weighted_row_mean` (``U`` C-contiguous float32 or float64)."""
    dt = U.dtype
    wd = w.astype(dt, copy=False)  # beyond float32's range an entry becomes inf: the margins map it
    n, d = U.shape
    rows = _block_rows(n, d, U.itemsize)
    single = dt == np.float32
    k_cols = max(columns, 1)
    if single:  # float32 partials of the sub-blocks, in row order, per column
        partials = np.empty((k_cols, -(-n // _SUB_ROWS), d), dtype=np.float32)
    else:
        parts = np.zeros((k_cols, max(1, -(-n // rows)), d))
    k = 0
    for block, start in enumerate(range(0, n, rows)):
        Ub = U[start:start + rows]
        c = coefficients(Ub, start, wd)
        c = c.reshape(-1, 1) if not columns else c
        count = -(-Ub.shape[0] // _SUB_ROWS)
        for col in range(k_cols):
            cb = np.ascontiguousarray(c[:, col])
            if single:  # rows is a multiple of _SUB_ROWS: the sub-blocks start at multiples of it from row 0
                _sub_block_sums(cb, Ub, partials[col, k:k + count])
            else:
                parts[col, block] = cb @ Ub
        k += count
    totals = np.empty((k_cols, d))
    for col in range(k_cols):
        if single:  # exact conversion; float64 sums of chunks of partials, any order
            exact = partials[col].astype(np.float64)
            chunk = _chunk_partials(n, exact.shape[0])
            ones = np.ones(chunk)
            sums = np.array([ones[:min(chunk, exact.shape[0] - i)] @ exact[i:i + chunk]
                             for i in range(0, exact.shape[0], chunk)]).reshape(-1, d)
            if sums.shape[0] == 0:
                sums = np.zeros((1, d))
        else:
            sums = parts[col]
        if sums.shape[0] == 1:
            totals[col] = sums[0]
        else:
            totals[col] = np.array([math.fsum(v) for v in sums.T.tolist()])
    g = (totals / n) * _GRADIENT_SHRINK
    return g if columns else g[0]

def get_loss(loss: str, smoothing: float, owner: str, max_slope: float = 1.0) -> MarginLoss:
    if loss not in LOSSES:
        raise InvalidParameterError(
            f"The 'loss' parameter of {owner} must be one of {list(LOSSES)}. Got {loss!r} instead.")
    return MarginLoss(loss, smoothing, max_slope)


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
    return U if finite.all() else np.where(finite, U, U.dtype.type(0))


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
        U = np.where(valid[:, None], U, U.dtype.type(0))
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
    out = U.copy()
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
    """The rows clipped as by :func:`clip_rows`, scaled by ``1 - 2**-16``, as one C-contiguous float32 array.

    The full-batch trainers spend nearly all their time in two memory-bound
    passes over the rows per step (``U @ w`` and ``U.T @ c``); storing them in
    float32 halves that traffic. Every row is clipped in float64 and then
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
    out = np.empty((n, d + (intercept > 0.0)), dtype=dtype)
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
