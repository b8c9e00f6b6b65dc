r"""Margin losses of the seed-002 trainers and their public constants; every loss and row helper keeps its name here.

This module holds :class:`MarginLoss`. Issue 39 split the rest into focused modules, whose names all stay
importable from here (objects pickled under ``privtune.optim._losses`` still load):
:mod:`~privtune.optim._softmax_loss` (:class:`SoftmaxLoss`, the losses of K classes with clipped residuals -- the
multinomial loss and a smoothed Crammer & Singer hinge -- privtune's extension for the classifiers with more than
two classes; its constants are in its own docstring), :mod:`~privtune.optim._row_sums` (the sum over rows of the
gradients, :func:`_weighted_row_mean`) and :mod:`~privtune.optim._row_storage` (row clipping, compaction, the float
range of the declared bounds). A test that monkeypatches one of their globals patches the module defining it.
Everything below is about the margin losses.

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

import numpy as np

from privtune.exceptions import InvalidParameterError

# Re-exported (issue 39 split them out of this module): every name keeps its import path, and a class pickled
# under privtune.optim._losses (SoftmaxLoss, ClippedRows) is found here.
from privtune.optim._row_storage import (  # noqa: F401
    _CLIP_SHRINK,
    _F32_GRADIENT_LOW,
    _F32_HIGH,
    _F32_KAPPA_LOW,
    _F32_LOW,
    _F32_MAX_COLUMNS,
    _F64_HIGH,
    _F64_LOW,
    _FLOAT32_FLAG,
    _FLOAT32_NORMAL,
    _FLOAT32_SHRINK,
    _HUGE_ROW,
    ClippedRows,
    _clip_factors,
    _fits,
    _norm_count,
    check_storage,
    clip_rows,
    compact_rows,
    l1_bound_of,
    map_into_domain,
    storage_dtype,
    valid_labels,
    zero_non_finite,
)
from privtune.optim._row_sums import (  # noqa: F401
    _BLOCK_BYTES,
    _GRADIENT_SHRINK,
    _SUB_ROWS,
    _SUM_BUDGET,
    _block_rows,
    _check_rows,
    _chunk_partials,
    _max_rows,
    _sub_block_sums,
    _weighted_row_mean,
    _weighted_row_sum,
)
from privtune.optim._softmax_loss import (  # noqa: F401
    _RESIDUAL_SHRINK,
    MULTICLASS_HINGE,
    MULTICLASS_LOSSES,
    MULTINOMIAL,
    SoftmaxLoss,
)

__all__ = ["LOSSES", "MULTICLASS_HINGE", "MULTICLASS_LOSSES", "MULTINOMIAL", "MarginLoss", "SoftmaxLoss", "get_loss",
           "check_storage", "clip_rows", "compact_rows", "map_into_domain", "storage_dtype", "valid_labels",
           "zero_non_finite"]

LOSSES = ("logistic", "smoothed_hinge")


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

    def _derivative_inplace(self, margin: np.ndarray) -> None:
        """:meth:`derivative` written into ``margin`` (a float array): the same operations, hence the same values."""
        if self.name == "logistic":
            margin *= 0.5
            np.tanh(margin, out=margin)
            margin -= 1.0
            margin *= 0.5
            np.fmax(margin, -min(self.max_slope, 1.0), out=margin)
            return
        np.subtract(1.0, margin, out=margin)
        margin /= self.smoothing
        np.fmax(margin, 0.0, out=margin)
        np.fmin(margin, 1.0, out=margin)
        np.negative(margin, out=margin)
        if self.max_slope < 1.0:
            np.fmax(margin, -self.max_slope, out=margin)

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
        cache; 8 MiB for float32 rows, where the per-block calls cost more than
        the cache saves). In a block, the margins ``U_b w`` and the clipped derivatives
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
        ``U_b w`` does not mix rows; its rounding follows the layout of ``U``
        -- float32 rows in Fortran order are read as they are, every other
        array is made C-contiguous first -- and no code path lets the rows
        choose the layout (:func:`_weighted_row_mean`), so it cannot differ
        between neighbours), and
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
        zt = z.astype(U.dtype if U.dtype in (np.float32, np.float64) else np.float64, copy=False)

        def coefficients(Ub: np.ndarray, start: int, wd: np.ndarray) -> np.ndarray:
            zb = zt[start:start + Ub.shape[0]]
            c = np.matmul(Ub, wd)
            c *= zb
            self._derivative_inplace(c)
            c *= zb
            return c

        g = _weighted_row_mean(U, w, coefficients)
        return g + alpha * w if alpha else g

    def _gradient_pm1(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> np.ndarray:
        """:meth:`gradient` with ``alpha = 0`` for labels known to be exactly -1 or +1 (the solvers' mapped labels).

        For the logistic loss on float32 rows the label is folded into the
        derivative, two passes over the margins fewer: with ``t = tanh(m / 2)``
        (``m = u^T w`` unsigned), ``z phi_kappa'(z m) = clip((t - z) / 2, -kappa,
        kappa)`` because ``tanh`` is odd and ``z**2 = 1``; the rows are summed
        with ``2 c_i`` and the result halved (exact). Each operation is the
        sign-flipped or power-of-two-scaled twin of one in :meth:`gradient`, so
        the result has the same bits (``tests/optim/test_gradient_fast_path.py``
        checks it against the reference formula), except that a NaN margin
        (only an iterate beyond float32's range makes one) gets ``c = -kappa``
        whatever the label, instead of ``-kappa z``: also inside the
        coefficient bound ``|c| <= kappa`` the sensitivity analysis uses, and a
        function of the row, its label and ``w`` only. Every other case is
        :meth:`gradient`.
        """
        if self.name != "logistic" or U.dtype != np.float32:
            return self.gradient(w, U, z, 0.0)
        zt = z.astype(np.float32, copy=False)
        bound = 2.0 * min(self.max_slope, 1.0)

        def coefficients(Ub: np.ndarray, start: int, wd: np.ndarray) -> np.ndarray:
            t = np.matmul(Ub, wd)  # m / 2: wd is w / 2 in float32
            np.tanh(t, out=t)
            t -= zt[start:start + Ub.shape[0]]
            np.fmax(t, -bound, out=t)  # a NaN margin gets -2 kappa
            np.fmin(t, bound, out=t)
            return t

        return _weighted_row_mean(U, 0.5 * np.asarray(w, dtype=np.float64), coefficients, coefficient_scale=0.5)

    def objective(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> float:
        """``(1/n) sum phi(z_i u_i^T w) + (alpha / 2) ||w||^2`` (evaluation only)."""
        return float(np.mean(self.value(z * (U @ w))) + 0.5 * alpha * float(w @ w))


def get_loss(loss: str, smoothing: float, owner: str, max_slope: float = 1.0) -> MarginLoss:
    if loss not in LOSSES:
        raise InvalidParameterError(
            f"The 'loss' parameter of {owner} must be one of {list(LOSSES)}. Got {loss!r} instead.")
    return MarginLoss(loss, smoothing, max_slope)
