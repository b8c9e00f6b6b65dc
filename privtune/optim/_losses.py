r"""Margin losses of the seed-002 trainers, their public constants, and row clipping.

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

__all__ = ["LOSSES", "MarginLoss", "get_loss", "clip_rows", "compact_rows", "map_into_domain"]

LOSSES = ("logistic", "smoothed_hinge")
# Rows scaled down by clipping land this far inside the bound, so that float rounding
# of the scaled row can never push its norm above the declared bound.
_CLIP_SHRINK = 1.0 - 2.0**-40
# Rows stored in float32 (compact_rows) are scaled by this first: float32 rounds each entry within a
# relative 2**-24, so the stored rows' exact norms stay inside the bounds. A float32 row counts as over a
# bound only beyond _FLOAT32_FLAG times it (what the shrink leaves is never flagged again).
_FLOAT32_SHRINK = 1.0 - 2.0**-16
_FLOAT32_FLAG = 1.0 - 2.0**-20
# MarginLoss.gradient works through the rows in blocks of about this many bytes (fits in a core's L2 cache).
_BLOCK_BYTES = 1 << 19
# MarginLoss.gradient multiplies the data term's mean by this factor: the relative slack 2**-16 pays for the
# float64 rounding of the sum over rows (see MarginLoss.gradient, "Sensitivity of the computed gradient").
_GRADIENT_SHRINK = 1.0 - 2.0**-16
# ... provided that n * (rows per block + 4) <= _SUM_BUDGET (then n * gamma_{rows + 3} <= 2**-17).
_SUM_BUDGET = 2**36


def _block_rows(n: int, d: int, itemsize: int) -> int:
    """Rows per block of :meth:`MarginLoss.gradient`: about 512 KiB, and ``n (rows + 4) <= 2**36``.

    Raises
    ------
    InvalidParameterError
        If ``n > 2**36 / 5`` (no block size keeps the float64 sum's rounding
        inside the slack; ``n`` is public).
    """
    rows = max(256, _BLOCK_BYTES // (itemsize * max(d, 1)))
    limit = _SUM_BUDGET // max(n, 1) - 4
    if limit < 1:
        raise InvalidParameterError(
            f"The margin-loss gradient supports at most {_SUM_BUDGET // 5} rows per batch (its float64 sum's "
            f"rounding must stay inside the sensitivity's slack); got {n}.")
    return min(rows, limit)


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
        """``phi_kappa'(margin)``, in ``[-max_slope, 0]``."""
        if self.name == "logistic":
            d = 0.5 * (np.tanh(0.5 * margin) - 1.0)  # -sigma(-m), in [-1, 0]; tanh is faster than expit
        else:
            d = -np.clip((1.0 - margin) / self.smoothing, 0.0, 1.0)
        return d if self.max_slope >= 1.0 else np.maximum(d, -self.max_slope)

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

    def curvature_bound(self) -> float:
        """``sup phi''``: 1/4 (logistic) or 1/h (smoothed hinge)."""
        return 0.25 if self.name == "logistic" else 1.0 / self.smoothing

    def value_bound(self, margin_bound: float) -> float:
        """``sup phi(m)`` over ``|m| <= margin_bound`` (``phi`` is decreasing)."""
        return float(self.value(np.array([-margin_bound]))[0])

    def gradient(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> np.ndarray:
        r"""``(1 - 2**-16)`` times the mean gradient of ``phi(z u^T w)`` over the rows of ``U``, plus ``alpha w``.

        The margins ``U_b w`` run in ``U``'s dtype (float32 rows from
        :func:`compact_rows` halve the memory traffic), block by block of
        about 512 KiB of rows, so that each block's second product reads the
        rows the first has just brought into cache. The second product, the
        **sum over rows**, is always accumulated in float64: a float32 block is
        copied (exactly) into a float64 buffer and ``c_b^T U_b`` runs in
        float64, the blocks' sums are added with :func:`math.fsum` (correctly
        rounded), then divided by ``n``.

        Notes
        -----
        **Sensitivity of the computed gradient.** The trainers add noise calibrated to the sensitivity of the *exact*
        mean, ``Delta = 2 kappa R / n`` (L2 or L1 with ``R`` the rows' bound in
        that norm), so the *computed* means of two neighbouring row sets must
        differ by at most ``Delta``: the mechanisms' own headroom
        (``2**-10``) is used up by their grid rounding. Float rounding in the sum
        over rows breaks this without care: one replaced row changes the
        rounding of every later partial sum, and with float32 accumulation
        (privtune before this change) the computed difference reached
        ``1.0027 Delta`` (n = 200 000, d = 2). The data term is therefore
        multiplied by ``1 - s``, ``s = 2**-16`` (a deviation from the paper's
        gradient: the solvers minimise ``(1 - s)`` times the data term plus the
        regulariser, a relative change of 1.5e-5), and the rounding is bounded
        as follows, for ``alpha = 0`` (the trainers add the public
        regulariser's gradient after the noise) and labels in {-1, +1}.

        Let ``c_i`` be the computed (clipped) derivative of row ``i``; it depends
        on row ``i``, its position and ``w`` only, whatever the precision of the
        margin, and ``|c_i| <= kappa (1 + 2**-24)`` (the float32 rounding of the
        clip value). Let ``X = sum_i c_i u_i`` (exact), ``T_j = sum_i |c_i u_ij|``
        and ``u = 2**-53``, ``gamma_k = k u / (1 - k u)``. A block of at most
        ``b`` rows is an inner product of length ``b`` per coordinate, computed
        with error at most ``gamma_b`` times its ``T`` in any evaluation order
        (Higham 2002, eq. (3.5); the products of float32 values are even exact
        in float64); ``fsum``, the division by ``n`` and the factor ``1 - s``
        round once each. So (Higham's Lemma 3.3) the output ``H`` satisfies
        ``|H_j - (1 - s) X_j / n| <= (1 - s) gamma_{b+3} T_j / n``, and, by the
        triangle inequality over rows,
        ``||H - (1 - s) X / n|| <= (1 - s) gamma_{b+3} max_i |c_i| ||u_i||``
        in L2 and in L1. Two neighbouring row sets differ in one term of
        ``X``, by at most ``2 max |c| R``, hence

        .. math:: \|H - H'\| \le (1 - s)(1 + n \gamma_{b+3})(1 + 2^{-24})\, \Delta .

        The block size is chosen so that ``n (b + 4) <= 2**36``, which gives
        ``n gamma_{b+3} <= 2**-17 = s / 2`` and the right-hand side at most
        ``(1 - 2**-17 + 2**-24) Delta < Delta``. The default block (512 KiB of
        rows: 6 241 float32 rows at ``d = 21``) satisfies it up to
        ``n = 1.1e7`` rows; larger ``n`` get smaller blocks (slower, still
        sound), and ``n > 2**36 / 5`` is refused. (Without the factor, the
        float64 bound alone would be ``Delta (1 + n gamma_{b+3})``, above
        ``Delta`` by about ``n b 2**-53`` relative, e.g. 7e-7 at ``n = 1e6``
        with 6 241-row blocks: no float sum is within ``Delta`` without a
        slack.) ``tests/optim/test_gradient_sensitivity.py`` measures the
        neighbouring pairs that broke the float32 sum.

        References
        ----------
        .. [Hig02] N. J. Higham, "Accuracy and Stability of Numerical
           Algorithms", 2nd ed., SIAM 2002, sections 3.1 and 4.2.
        """
        dt = U.dtype
        wd = w.astype(dt, copy=False)
        zd = z.astype(dt, copy=False)
        n, d = U.shape
        rows = _block_rows(n, d, U.itemsize)
        single = dt != np.float64
        buf = np.empty((min(rows, n), d)) if single else None
        parts = np.zeros((max(1, -(-n // rows)), d))
        for k, start in enumerate(range(0, n, rows)):
            Ub, zb = U[start:start + rows], zd[start:start + rows]
            c = self.derivative(zb * (Ub @ wd))
            c *= zb
            if single:  # exact copy to float64; float64 products (exact for float32 inputs) and sums
                block = buf[:Ub.shape[0]]
                np.copyto(block, Ub)
                parts[k] = c.astype(np.float64) @ block
            else:
                parts[k] = c @ Ub
        if parts.shape[0] == 1:
            total = parts[0]
        else:
            total = np.array([math.fsum(col) for col in parts.T.tolist()])
        g = (total / n) * _GRADIENT_SHRINK
        return g + alpha * w if alpha else g

    def objective(self, w: np.ndarray, U: np.ndarray, z: np.ndarray, alpha: float) -> float:
        """``(1/n) sum phi(z_i u_i^T w) + (alpha / 2) ||w||^2`` (evaluation only)."""
        return float(np.mean(self.value(z * (U @ w))) + 0.5 * alpha * float(w @ w))


def get_loss(loss: str, smoothing: float, owner: str, max_slope: float = 1.0) -> MarginLoss:
    if loss not in LOSSES:
        raise InvalidParameterError(
            f"The 'loss' parameter of {owner} must be one of {list(LOSSES)}. Got {loss!r} instead.")
    return MarginLoss(loss, smoothing, max_slope)


class ClippedRows(np.ndarray):
    """A float32 array of rows that :func:`compact_rows` stored within ``bounds = (L1, L2)`` (internal).

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
    """
    with np.errstate(all="ignore"):  # a row whose norm overflows is scaled to 0, never warned about
        n2 = np.sqrt(np.einsum("ij,ij->i", U, U, dtype=np.float64))
    lim2 = flag * l2_bound
    with np.errstate(all="ignore"):
        f2 = np.where(n2 > lim2, l2_bound / n2, 1.0)
        if l1_bound >= math.sqrt(U.shape[1]) * l2_bound:  # ||u||_1 <= sqrt(d) ||u||_2: the L1 bound cannot bind
            factor = f2
        else:
            n1 = np.abs(U).sum(axis=1, dtype=np.float64)
            factor = np.minimum(np.where(n1 > flag * l1_bound, l1_bound / n1, 1.0), f2)
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


def map_into_domain(U: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map every row into the trainers' domain instead of refusing it for its values.

    A non-finite entry of ``U`` becomes 0; a row whose label is not exactly
    -1 or +1 (NaN included) becomes the zero row with label +1, so that it
    contributes nothing to any margin-loss gradient. Each is a deterministic
    map of one row, so replacing one row still changes one row of the mapped
    data: the sensitivity analysis is unchanged and no refusal depends on a
    row (DESIGN's rule 7). The caller's arrays are never modified.
    """
    valid = (z == 1.0) | (z == -1.0)
    finite = np.isfinite(U)
    if not finite.all():
        U = np.where(finite, U, U.dtype.type(0))
    if not valid.all():
        U = np.where(valid[:, None], U, U.dtype.type(0))
        z = np.where(valid, z, 1.0)
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
    each) cannot lift the exact norm of the stored row above the bound.
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
    out[rows] *= (factor[rows] * shrink)[:, None].astype(U.dtype)  # only the offending rows are rescaled
    return out


def compact_rows(U: np.ndarray, l1_bound: float, l2_bound: float, *, mode: str, owner: str,
                 name: str = "X", intercept: float = 0.0) -> tuple[np.ndarray, float]:
    """The rows clipped as by :func:`clip_rows`, scaled by ``1 - 2**-16``, as one C-contiguous float32 array.

    The full-batch trainers spend nearly all their time in two memory-bound
    passes over the rows per step (``U @ w`` and ``U.T @ c``); storing them in
    float32 halves that traffic. Every row is clipped in float64 and then
    multiplied by ``1 - 2**-16`` before the cast, so that the float32 rounding
    (a relative ``2**-24`` per entry) leaves the exact norms of the stored rows
    strictly inside the declared bounds: the sensitivity analysis holds for the
    rows the solver reads. ``U`` must be finite (the estimators map non-finite
    entries to 0 first): the result is marked finite and not checked again.
    With ``intercept > 0`` a constant column is appended
    (its stored value, also shrunk, is returned; the caller's bounds must
    include ``intercept``).

    Returns
    -------
    rows : ClippedRows of shape (n, d) or (n, d + 1), dtype float32
        Its ``bounds`` are the declared ones, widened by ``intercept``.
    intercept : float
        The stored value of the constant column (0.0 without one).
    """
    factor = _clip_factors(U, l1_bound, l2_bound, mode=mode, owner=owner, name=name)
    n, d = U.shape
    out = np.empty((n, d + (intercept > 0.0)), dtype=np.float32)
    scale = np.full(n, _FLOAT32_SHRINK)
    if factor is not None:  # clipped rows as clip_rows leaves them (factor * _CLIP_SHRINK), then the shrink
        over = factor < 1.0
        scale[over] *= factor[over] * _CLIP_SHRINK
    np.multiply(U, scale[:, None], out=out[:, :d], casting="unsafe")
    stored = 0.0
    if intercept > 0.0:
        stored = float(np.float32(intercept * _FLOAT32_SHRINK))
        out[:, d] = stored
    rows = out.view(ClippedRows)
    rows.bounds = (l1_bound + intercept, math.hypot(l2_bound, intercept))
    return rows, stored


def l1_bound_of(l1: float, l2: float, dim: int) -> float:
    """The L1 bound implied by both declared bounds: ``min(l1, sqrt(d) l2)``."""
    return min(l1, math.sqrt(dim) * l2)
