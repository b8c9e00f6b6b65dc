r"""Differentially private linear SVM: a smoothed (Huber) hinge loss on the Kuru et al. (2022) solvers."""

from __future__ import annotations

from typing import Any

from privtune.accounting.accountant import Accountant
from privtune.linear_model._logistic import (
    _COMMON_ATTRS_DOC,
    _COMMON_PARAMS_DOC,
    _PRIVACY_DOC,
    _SCALING_DOC,
    _ClippedLinearMixin,
    _DPMarginClassifier,
)
from privtune.utils._validation import check_real

__all__ = ["DPLinearSVC"]


class DPLinearSVC(_ClippedLinearMixin, _DPMarginClassifier):
    __doc__ = r"""Linear SVM with a smoothed hinge loss and differential privacy; a multiclass hinge for K > 2 classes.

    (epsilon, delta)-DP by default (Gaussian noise, privtune's extension);
    ``noise="laplace"`` gives pure epsilon-DP.

    The loss of a margin ``m = z (w^T x + b)`` is the Huber-smoothed hinge
    ``0`` for ``m >= 1``, ``(1 - m)^2 / (2 h)`` for ``1 - h < m < 1`` and
    ``1 - m - h / 2`` below, with ``h = smoothing``; it is ``1/h``-smooth, which
    the accelerated solvers need (the plain hinge is not smooth).

    Parameters
    ----------""" + _COMMON_PARAMS_DOC.replace("MAX_SLOPE_DEFAULT", "1.0").replace("MAX_SLOPE_NOTE", "") + """
    data_norm : float in (0, inf), default=1.0
        Declared bound on the norm of every row of ``X``, in the norm the
        noise needs: **L2** with the default Gaussian noise, **L1** with
        ``noise="laplace"``. Rows above it are scaled down (``clip="rows"``)
        or refused (``clip="raise"``); the same clipping is applied in
        ``predict``. The declared bounds
        (intercept column included) must lie between about ``sqrt(d) 4e-121``
        and ``2.6e120`` (float64's safe range; refused before any charge
        otherwise); inside float32's safe range (about ``sqrt(d) 3e-33`` to
        ``1.3e36``, with ``max_slope`` times the bound at least about
        ``sqrt(d) 2e-31``) the rows are stored in float32, else in float64
        (:func:`privtune.optim._losses.storage_dtype`).
    data_norm_l2 : float in (0, inf) or None, default=None
        Optional declared L2 bound: with Gaussian noise it overrides
        ``data_norm``; with Laplace noise it tightens ``L = R_2**2 / h + 1/(C n)``.
    clip : {"rows", "raise"}, default="rows"
    smoothing : float in (0, inf), default=1.0
        Width ``h`` of the quadratic part of the loss.

    Attributes
    ----------""" + _COMMON_ATTRS_DOC + """

    See Also
    --------
    privtune.linear_model.DPLogisticRegression
    privtune.svm.DPSVC : RBF kernel through public random Fourier features.

    Notes
    -----""" + _PRIVACY_DOC + """ The per-example L1 sensitivity of the
    gradient is ``2 kappa (data_norm + intercept_scaling)`` with
    ``kappa = max_slope`` (the clipped loss derivative lies in ``[-kappa, 0]``).""" + _SCALING_DOC.replace(
        "CLIPPED_TO", "every row is clipped to ``data_norm`` (L2 with Gaussian noise, L1 with Laplace)") + """

    The smoothed hinge is not in the paper (which treats logistic regression);
    the algorithms and their privacy analysis apply unchanged to any smooth
    loss with a bounded derivative.

    References
    ----------
    .. [KBGY22] N. Kuru, S. I. Birbil, M. Gürbüzbalaban and S. Yıldırım,
       "Differentially Private Accelerated Optimization Algorithms", SIAM J.
       Optim. 32(2), 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.svm import DPLinearSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(5000, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPLinearSVC(epsilon=1.0, C=10.0, random_state=0).fit(X, y)
    >>> round(clf.privacy_spent_.epsilon, 2), clf.privacy_spent_.delta, clf.score(X, y) > 0.8
    (1.0, 1e-06, True)
    """

    _loss = "smoothed_hinge"

    def __init__(self, epsilon: float = 1.0, *, solver: str = "nag", horizon: str = "auto", C: float = 1.0,
                 data_norm: float = 1.0, data_norm_l2: float | None = None, smoothing: float = 1.0,
                 fit_intercept: bool = True, intercept_scaling: float = 0.5, batch_size: int | None = None,
                 max_iter: int = 100, step_scale: float = 1.0, initial_gap: float | None = None, max_slope: float = 1.0,
                 clip: str = "rows", classes: Any = None,
                 random_state: Any = None, accountant: Accountant | None = None, noise: str = "gaussian",
                 delta: float = 1e-6) -> None:
        self.noise = noise
        self.delta = delta
        self.epsilon = epsilon
        self.solver = solver
        self.horizon = horizon
        self.C = C
        self.data_norm = data_norm
        self.data_norm_l2 = data_norm_l2
        self.smoothing = smoothing
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.step_scale = step_scale
        self.initial_gap = initial_gap
        self.max_slope = max_slope
        self.clip = clip
        self.classes = classes
        self.random_state = random_state
        self.accountant = accountant

    def _validate_extra(self, owner: str) -> dict[str, Any]:
        out = super()._validate_extra(owner)
        out["smoothing"] = check_real(self.smoothing, "smoothing", low=0.0, owner=owner)
        return out
