r"""The model side of DP-BLSGD (seed 003, Chen & Lee): per-example objectives, clipped batch means, checks (internal).

This module holds what :func:`privtune.optim.line_search.dp_blsgd` and
:func:`privtune.optim.line_search.noisy_backtracking_line_search` read of a
model, and nothing that draws noise:

* :class:`PerExampleObjective`, the protocol a model implements (per-example
  data losses and gradients, optional declared public bounds), and
  :class:`MarginObjective`, a linear model with a margin loss;
* the clipped batch means through which every data access goes
  (:func:`_clipped_gradient_mean`, :func:`_clipped_loss_mean`): per-example
  gradients clipped in L2 and losses clipped to ``[0, C_obj]``, divided by the
  public divisor, with non-finite rows zeroed or clipped one by one (row
  isolation), so the declared sensitivities hold whatever the objective returns;
* the argument checks shared by the line search and the trainer.

Both public classes are re-exported by :mod:`privtune.optim.line_search`, whose
module docstring states the privacy argument. The other pieces:
:mod:`privtune.optim.line_search._step` (NOISYBTLS, one private line search),
:mod:`privtune.optim.line_search._loop` (the plan and the DP-BLSGD loop) and
:mod:`privtune.optim.line_search._accounting` (events, filters, calibration).
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.optim._losses import MarginLoss, clip_rows, get_loss, map_into_domain
from privtune.optim._sums import blocked_sum
from privtune.utils._validation import check_integer, check_real, entrywise_float, label_entries, public_shape


# ----------------------------------------------------------------------------- the objective protocol
@runtime_checkable
class PerExampleObjective(Protocol):
    """What :func:`dp_blsgd` needs of a model: per-example data losses and their gradients.

    Attributes
    ----------
    n_samples : int
        Number of rows (public).
    n_params : int
        Length of the flat parameter vector ``w`` (public).

    Notes
    -----
    ``per_example_gradients(w, idx)`` returns an array of shape
    ``(len(idx), n_params)``: the gradient of each example's **data** loss at
    ``w`` (no regulariser, not clipped). ``per_example_losses(w, idx)`` returns
    shape ``(len(idx),)``: each example's data loss at ``w``, which must be
    ``>= 0`` (no regulariser, not clipped). Each example's returned values
    must depend on that example, its position in ``idx`` and ``w`` only, not
    on the values of the other rows (true of row-wise numpy/BLAS/torch
    products, which do not mix rows): the sums' rounding argument
    (:mod:`privtune.optim._sums`) needs it. An objective may also define

    * ``smoothness``: a declared, public bound on the smoothness of the mean
      data loss, used only for the default ``eta0``;
    * ``gradient_bound``: a declared, public bound on every per-example
      gradient's L2 norm, **enforced by the objective** (e.g. by clipping rows
      to a declared norm); :func:`dp_blsgd` then clips gradients at
      ``min(clip_grad, gradient_bound)``, which changes nothing in the data
      term and lowers the noise (the events are relative to the sensitivity,
      so the charge is unchanged), and uses it as the losses' Lipschitz
      constant for the trust region (``trust_region``);
    * ``validate()``: reads the data and maps it into the objective's domain;
      :func:`dp_blsgd` calls it after the charge (write-ahead), so it must not
      refuse data for its values -- a refusal that depends on a row is a
      release the charge does not cover.
    """

    n_samples: int
    n_params: int

    def per_example_gradients(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray: ...

    def per_example_losses(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray: ...


class MarginObjective:
    r"""A linear model with a margin loss ``phi(y_i x_i^T w)`` as a :class:`PerExampleObjective`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Sensitive rows. Only ``X.shape`` is read at construction; values are read
        by :meth:`validate` (called by :func:`dp_blsgd` after the charge)
        or at the first loss or gradient.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}. Values are never refused (a refusal would depend
        on a row): a row whose label is anything else (NaN included) becomes
        the zero row and contributes nothing, and a non-finite entry of ``X``
        counts as 0 (:func:`~privtune.optim._losses.map_into_domain`).
    loss : {"logistic", "smoothed_hinge"}, default="logistic"
        ``log(1 + e**-m)``, or the Huber-smoothed hinge of width ``smoothing``
        (:class:`privtune.optim._losses.MarginLoss`).
    smoothing : float in (0, inf), default=0.5
        Width ``h`` of the smoothed hinge: quadratic on ``(1 - h, 1)``, zero above
        1. The paper's Huberized hinge with ``hbar`` is quadratic on
        ``[1 - hbar, 1 + hbar]``, i.e. privtune's with ``h = 2 hbar`` applied to
        ``m - hbar``; ``h = 0.5`` is the value the paper names.
    data_norm : float in (0, inf) or None, default=None
        Declared bound on the L2 norm of every row; rows above it are scaled
        down to it when the data is read. ``None``: the caller has bounded the
        rows (or not); DP-BLSGD's sensitivities come from gradient and loss
        clipping and do not need this bound. It gives the public smoothness
        bound used for the default step size.

    Attributes
    ----------
    n_samples, n_params : int
    smoothness : float or None
        ``sup phi'' * data_norm**2`` (1/4 for logistic, ``1/h`` for the smoothed
        hinge), or None without ``data_norm``.

    Notes
    -----
    Per-example gradient ``phi'(m_i) y_i x_i``; loss ``phi(m_i) >= 0``. No
    intercept: append a constant column to ``X`` for one.
    """

    def __init__(self, X: Any, y: Any, loss: str = "logistic", *, smoothing: float = 0.5,
                 data_norm: float | None = None) -> None:
        owner = "MarginObjective"
        if hasattr(X, "tocsr") or getattr(getattr(X, "dtype", None), "kind", None) == "c":
            raise InvalidParameterError(f"The 'X' parameter of {owner} must be a dense array of real numbers "
                                        "(sparse or complex input is not supported).")
        shape = public_shape(X)  # the structure only: an odd entry cannot make this raise
        if len(shape) != 2 or int(shape[0]) < 1 or int(shape[1]) < 1:
            raise InvalidParameterError(f"The 'X' parameter of {owner} must be a non-empty 2-D array; got shape "
                                        f"{tuple(shape)}.")
        self.n_samples = int(shape[0])
        self.n_params = int(shape[1])
        y = label_entries(y)  # a list's entries each read on their own
        y_shape = public_shape(y)  # public: one label per row
        if len(y_shape) != 1 or y_shape[0] != self.n_samples:
            raise InvalidParameterError(f"The 'y' parameter of {owner} must be 1-D with one label per row of X "
                                        f"({self.n_samples}); got shape {tuple(y_shape)}.")
        h = check_real(smoothing, "smoothing", low=0.0, owner=owner)
        self.loss: MarginLoss = get_loss(loss, h, owner)
        self.data_norm = None if data_norm is None else check_real(data_norm, "data_norm", low=0.0, owner=owner)
        if self.data_norm is not None and not 2.0**-400 <= self.data_norm <= 2.0**400:
            raise InvalidParameterError(
                f"The 'data_norm' parameter of {owner} must lie between 2**-400 and 2**400 (about 3.9e-121 and "
                f"2.6e120): beyond, float64 can no longer hold the clipped rows' norms, the smoothness "
                f"data_norm**2 or the gradients' clipping exactly enough. Got {data_norm!r}; rescale the rows.")
        self._X, self._y = X, y
        self._U: np.ndarray | None = None
        self._z: np.ndarray | None = None

    @property
    def smoothness(self) -> float | None:
        if self.data_norm is None:
            return None
        return self.loss.curvature_bound() * self.data_norm**2

    @property
    def gradient_bound(self) -> float | None:
        """``sup |phi'| * data_norm`` (= ``data_norm``): every per-example gradient's L2 norm is at most this."""
        return self.data_norm

    def validate(self) -> None:
        """Read the data and map it into the domain: a non-finite entry becomes 0, a row whose label is not -1 or +1
        becomes the zero row (it contributes nothing), rows are clipped to ``data_norm``.

        Nothing is refused for its values (a refusal would depend on a row); only a
        non-numeric dtype or a shape that changed while being read is refused.
        """
        if self._U is not None:
            return
        owner = "MarginObjective"
        try:  # entry by entry where there is no numeric dtype: an entry that is not a number becomes NaN
            U = np.array(entrywise_float(self._X), dtype=np.float64)
            z = np.array(entrywise_float(self._y), dtype=np.float64)
        except (TypeError, ValueError):  # a structure numpy cannot hold (ragged nesting)
            raise InvalidParameterError(f"'X' and 'y' passed to {owner} must be rectangular arrays.") from None
        if U.shape != (self.n_samples, self.n_params):
            raise InvalidParameterError(f"The 'X' parameter of {owner} changed shape while being read.")
        if z.ndim != 1 or z.shape[0] != self.n_samples:
            raise InvalidParameterError(f"The 'y' parameter of {owner} must be 1-D with one label per row of X "
                                        f"({self.n_samples}); got shape {z.shape}.")
        U, z = map_into_domain(U, z)
        if self.data_norm is not None:
            U = clip_rows(U, math.sqrt(self.n_params) * self.data_norm, self.data_norm, mode="rows", owner=owner)
        self._U, self._z = U, z

    def _rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.validate()
        return self._U[idx], self._z[idx]  # type: ignore[index]

    def per_example_gradients(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``phi'(y_i x_i^T w) y_i x_i`` for the rows ``idx``, shape ``(len(idx), n_params)``."""
        U, z = self._rows(idx)
        coef = self.loss.derivative(z * (U @ w)) * z
        return coef[:, None] * U

    def per_example_losses(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``phi(y_i x_i^T w)`` for the rows ``idx``, shape ``(len(idx),)``."""
        U, z = self._rows(idx)
        return self.loss.value(z * (U @ w))

    def __repr__(self) -> str:
        return (f"MarginObjective(n_samples={self.n_samples}, n_params={self.n_params}, loss={self.loss.name!r}, "
                f"data_norm={self.data_norm!r})")


# ----------------------------------------------------------------------------- data access (internal)
#: A row whose per-example gradient is computed longer than this multiple of the clip is zeroed like a non-finite one,
#: so that the clipping factor ``clip / ||g||`` stays a normal float (relative rounding; see ``clip_norm_bound``).
_HUGE_GRADIENT = 2.0**960


def _clipped_gradient_mean(objective: Any, w: np.ndarray, idx: np.ndarray, clip: float, divisor: float,
                           d: int) -> np.ndarray:
    """``(1/divisor) sum_idx clip(grad l_i(w), clip)``; non-finite rows count as zero (row isolation).

    The clipped gradients are summed by :func:`privtune.optim._sums.blocked_sum`
    (blocks of 4 096 rows by position, added with ``math.fsum``; one BLAS
    product up to 4 096 rows), whose rounding the caller's sensitivity factor
    :func:`privtune.optim._sums.rounding_factor` pays for, with the clipping's
    own float error (:func:`privtune.optim._sums.clip_norm_bound`). A row whose
    computed gradient norm exceeds ``2**960`` times the clip is zeroed, like a
    non-finite one (a per-row map). No floating-point warning is emitted (one
    could depend on a row).
    """
    if idx.size == 0:
        return np.zeros(d)
    with np.errstate(all="ignore"):
        G = np.asarray(objective.per_example_gradients(w, idx), dtype=np.float64)
        if G.shape != (idx.size, d):
            raise InvalidParameterError(
                "per_example_gradients of the objective must return an array of shape (len(idx), n_params).")
        bad = ~np.all(np.isfinite(G), axis=1)
        if bad.any():
            G = np.where(bad[:, None], 0.0, G)
        norms = np.sqrt(np.einsum("ij,ij->i", G, G))
        factor = np.minimum(1.0, clip / np.where(norms > 0.0, norms, 1.0))
        huge = norms > clip * _HUGE_GRADIENT
        if huge.any():
            factor = np.where(huge, 0.0, factor)
        total = blocked_sum(idx.size, lambda a, b: factor[a:b] @ G[a:b])
        return total / divisor


def _clipped_losses(objective: Any, w: np.ndarray, idx: np.ndarray, clip: float) -> np.ndarray:
    """``min(max(l_i(w), 0), clip)`` for the rows ``idx`` (exact clipping; NaN counts as ``clip``)."""
    with np.errstate(all="ignore"):
        L = np.asarray(objective.per_example_losses(w, idx), dtype=np.float64).reshape(-1)
    if L.shape != (idx.size,):
        raise InvalidParameterError("per_example_losses of the objective must return an array of shape (len(idx),).")
    return np.clip(np.where(np.isnan(L), clip, L), 0.0, clip)


def _clipped_loss_mean(objective: Any, w: np.ndarray, idx: np.ndarray, clip: float, divisor: float) -> float:
    """``(1/divisor) sum_idx min(max(l_i(w), 0), clip)``; NaN counts as ``clip`` (row isolation).

    Summed by :func:`privtune.optim._sums.blocked_sum` (``np.sum`` up to 4 096 rows).
    """
    if idx.size == 0:
        return 0.0
    L = _clipped_losses(objective, w, idx, clip)
    return float(blocked_sum(idx.size, lambda a, b: float(L[a:b].sum()))) / divisor


# ----------------------------------------------------------------------------- declared public bounds
def _declared(objective: Any, name: str) -> float | None:
    """A positive finite public bound the objective declares (``smoothness``, ``gradient_bound``), else None."""
    value = getattr(objective, name, None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


# ----------------------------------------------------------------------------- validation helpers
def _objective_shape(objective: Any, owner: str) -> tuple[int, int]:
    if not isinstance(objective, PerExampleObjective):
        raise InvalidParameterError(
            f"The 'objective' parameter of {owner} must provide n_samples, n_params, per_example_gradients "
            f"and per_example_losses (the PerExampleObjective protocol). Got {type(objective).__name__}.")
    n = check_integer(objective.n_samples, "objective.n_samples", low=1, owner=owner)
    d = check_integer(objective.n_params, "objective.n_params", low=1, owner=owner)
    return n, d


def _vector(value: Any, d: int, name: str, owner: str) -> np.ndarray:
    try:
        v = np.array(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be an array of floats.") from None
    if v.shape != (d,) or not np.all(np.isfinite(v)):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a finite 1-D array of length {d}.")
    return v
