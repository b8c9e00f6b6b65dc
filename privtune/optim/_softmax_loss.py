r"""The losses of K > 2 classes: the multinomial loss and a smoothed Crammer & Singer hinge (internal).

:class:`SoftmaxLoss` is privtune's extension of the seed-002 trainers to more than two classes, with one weight
vector per class and per-example residual clipping; its constants and their derivation are in its docstring. The
binary margin losses it extends are in :mod:`privtune.optim._losses` (which re-exports every name of this module,
split from it in issue 39).
"""

from __future__ import annotations

import math

import numpy as np

from privtune.optim._row_sums import _weighted_row_mean

__all__ = ["MULTICLASS_HINGE", "MULTICLASS_LOSSES", "MULTINOMIAL", "SoftmaxLoss"]

#: The softmax cross-entropy of K classes (:class:`SoftmaxLoss`; the accelerated solvers only).
MULTINOMIAL = "multinomial"
#: Crammer & Singer's multiclass hinge smoothed by a softmax of width h (:class:`SoftmaxLoss` with margin 1).
MULTICLASS_HINGE = "multiclass_smoothed_hinge"
#: The losses of K > 2 classes, with one weight vector per class.
MULTICLASS_LOSSES = (MULTINOMIAL, MULTICLASS_HINGE)

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
        margin losses' (:func:`~privtune.optim._row_sums._weighted_row_mean`), one column per class: the
        rounding bound of :meth:`~privtune.optim._losses.MarginLoss.gradient` holds with ``kappa'``
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
