r"""Differentially private non-convex binary classifiers trained with Gao & Wright's second-order methods.

:class:`DPNonConvexClassifier` is a scikit-learn classifier whose ``fit`` runs
:func:`privtune.optim.second_order.dp_second_order` (OPT, OPT-LS, OPT-B and the
two-phase 2OPT variants, seed 004) on the clipped, intercept-augmented training
rows, for the sigmoid loss or the log-loss with a non-convex regulariser, and
charges the run to a privacy accountant before any value of the data is read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from privtune.accounting.accountant import Accountant, compose_events
from privtune.accounting.budget import Budget
from privtune.accounting.events import EpsilonDeltaEvent, GaussianEvent, PrivacyEvent
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError
from privtune.linear_model._classifier import _LinearClassifier, _LogisticProbaMixin
from privtune.linear_model._input import _numeric_rows, _numeric_table, _public_shape
from privtune.linear_model._logistic import _SCALING_DOC
from privtune.mechanisms.gaussian import calibrate_rdp_gaussian
from privtune.optim._losses import clip_rows, zero_non_finite
from privtune.optim.second_order import (
    CALIBRATION_SLACK,
    VARIANTS,
    dp_second_order,
    second_order_privacy_event,
)
from privtune.optim.second_order._nonconvex import LOSSES, NonconvexLoss
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real, label_entries

__all__ = ["DPNonConvexClassifier"]

_EIGENSOLVERS = ("dense", "lanczos")
#: The declared full-batch event's noise multiplier is this much below the calibrated one, so that its RDP curve
#: lies strictly above every run's (which equals it up to float rounding of the per-mechanism split).
_DECLARED_MARGIN = 1e-9


def _arithmetic_cause(exc: BaseException) -> BaseException | None:
    """The float failure behind ``exc`` (itself, or the cause the plan's refusal wraps), or None for a refusal."""
    if not isinstance(exc, InvalidParameterError):
        return exc if isinstance(exc, (ArithmeticError, ValueError)) else None
    cause = exc.__cause__
    if isinstance(cause, (ArithmeticError, ValueError)) and not isinstance(cause, InvalidParameterError):
        return cause
    return None


class DPNonConvexClassifier(_LogisticProbaMixin, _LinearClassifier):
    __doc__ = r"""Binary classifier, non-convex loss, privately trained to a second-order point (Gao & Wright 2023).

    ``fit`` looks for an approximate second-order stationary point of

    .. math:: f(w) = \frac1n \sum_i l(y_i u_i^\top w) + r(w)

    where ``u_i`` is row ``x_i`` clipped to L2 norm ``data_norm`` (and, with
    ``fit_intercept``, augmented with the constant ``intercept_scaling``), with
    :func:`privtune.optim.second_order.dp_second_order`. It is
    ``(epsilon, delta)``-DP under replace-one (see Notes).

    Parameters
    ----------
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit`` (with ``delta``).
    delta : float in (0, 1), default=1e-6
        The delta of the guarantee (the paper's ``1/n`` is too weak for a tuner).
    loss : {"sigmoid", "nonconvex_logistic"}, default="sigmoid"
        ``"sigmoid"``: ``l(m) = 1 / (1 + e^m)`` with ``r(w) = (l2/2)||w||^2``
        (Gao & Wright App. E.3). ``"nonconvex_logistic"``:
        ``l(m) = log(1 + e^-m)`` with the Tukey-type regulariser
        ``r(w) = l2 sum_j w_j^2 / (1 + w_j^2)`` (section 4).
    solver : {"2opt-ls", "2opt", "2opt-b", "opt-ls", "opt", "opt-b"}, default="2opt-ls"
        The variant of :func:`~privtune.optim.second_order.dp_second_order`:
        short steps (``"opt"``, Alg. 1), private SVT line searches
        (``"opt-ls"``, Alg. 2-3), mini-batches drawn without replacement
        (``"opt-b"``, App. B); the ``"2"`` prefix is the two-phase strategy
        (section 3.4: ``floor(sqrt(T))`` iterations on 75 % of the budget, then,
        if no point was certified, ``T`` iterations on the rest).
    tolerance : float in (0, inf), default=0.01
        ``alpha``: the run stops early when its noisy tests certify an
        ``(alpha, sqrt(M alpha))``-second-order point. It also sets the
        paper's horizon ``T = gap / MIN_DEC`` (about ``1 / alpha^2``), which
        ``max_iter`` caps; at the defaults the cap decides ``T`` (see
        ``max_iter``) and ``alpha`` is only the stopping test. Privacy-neutral
        (the budget is fixed). Too large a value certifies the starting point
        itself: with the previous default 0.07 the sigmoid loss stopped at
        ``w = 0`` (chance accuracy) on 3 of 6 benchmark sets (at every
        epsilon >= 0.3 on 14 000 rows of 20 features), because the sigmoid
        loss is flat there (``l''(0) = 0``).
    data_norm : float in (0, inf), default=1.0
        ``R``, the declared L2 bound of every row of ``X``. Rows above it are
        scaled down to it, in ``fit`` and in ``predict`` (never refused). Every
        sensitivity and constant (``B_g``, ``B_H``, ``G``, ``M``) derives from it.
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling`` to every row; its
        weight times ``intercept_scaling`` is ``intercept_``. The solver's row
        bound is ``sqrt(data_norm^2 + intercept_scaling^2)``, so the intercept is
        paid for honestly. The intercept is regularised like the other weights.
    intercept_scaling : float in (0, inf), default=0.5
        The constant feature (as in :class:`DPLogisticRegression`).
    l2 : float in [0, inf), default=1e-3
        ``lam`` of the regulariser (the paper's ``10^-3``).
    batch_size : int in [1, n_samples] or None, default=None
        Mini-batch size ``m`` of the ``"-b"`` solvers (None: ``max(1, n // 50)``);
        must be None for the full-batch solvers.
    eigensolver : {"dense", "lanczos"}, default="dense"
        Smallest eigenpair of the released noisy Hessian (post-processing).
    max_iter : int in [1, 1000000], default=5
        Cap on the horizon ``T`` (the noise is calibrated for the capped
        ``T``; a two-phase solver runs ``floor(sqrt(T))`` iterations, then
        ``T``). privtune's default, not the paper's rule: the run's noise
        grows like ``sqrt(T)`` and on a few thousand rows the paper's
        ``T`` (hundreds to thousands of iterations) drowns the gradient. Chosen
        by measurement (``benchmarks/trainers/nonconvex_defaults.py``) over 6 sets
        (breast cancer, 398 training rows; digits 0-4 vs 5-9, 1 257 rows,
        64 features; ``make_classification`` with 1 050 / 2 100 / 4 200 /
        14 000 rows and 30 / 10 / 5 / 20 features; rows standardised and
        clipped to norm 1), both losses, epsilon 0.1 ... 10, 7 seeds, against
        10, 20 and the old 2000 (with ``tolerance`` 0.07). With 5 the median
        accuracy was non-decreasing in epsilon (within 0.03) in all 12
        set/loss pairs; the old defaults collapsed to chance (a certified
        ``w = 0``) on 3 sets. Sigmoid loss: within 2.5 points of the noiseless
        model (epsilon 1000, 200 iterations) from epsilon 3 on every set;
        log-loss: within 2.5 points at epsilon 10 except digits (0.850
        against 0.891).
    classes : pair of labels or None, default=None
        Declared label set. With it nothing is read to decide the labels, and a
        row whose label is not in it contributes nothing (its row is zeroed:
        no gradient, Hessian or line-search difference) instead of being
        refused. ``None`` reads the two labels from ``y`` (see Notes); a
        training-sensitive :class:`~privtune.model_selection.PrivateSearchCV`
        requires ``classes``.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` gives cryptographically secure noise; an int makes the fit
        reproducible and **not for release**.
    accountant : Accountant or None, default=None
        Charged with the run before any value of ``X`` or ``y`` is read.
        ``None``: a fresh ``Accountant(Budget(epsilon, delta))``, exposed as
        ``accountant_``. :func:`sklearn.base.clone` deep-copies this parameter.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    n_iter_ : int
        Iterations run (each released a noisy gradient; at most
        ``floor(sqrt(T)) + T`` for the two-phase solvers).
    certified_ : bool
        True when the run stopped at a point that its noisy tests certified as
        an ``(alpha, sqrt(M alpha))``-second-order point (noisy gradient norm at
        most ``alpha / 1.1`` and noisy smallest Hessian eigenvalue at least
        ``-sqrt(M alpha) / 1.1``). Computed from released values only; it is
        a guarantee on ``f`` only when the noise is small (Gao & Wright, Thm 4).
    privacy_spent_ : Budget
        The accountant's bound on the charged event at ``delta``
        (``epsilon' <= epsilon (1 - 1e-3)``).
    privacy_event_ : PrivacyEvent
        The event charged (:func:`~privtune.optim.second_order.second_order_privacy_event`
        for this data shape).
    accountant_ : Accountant
        The accountant charged (the given one, or the estimator's own).
    optimize_result_ : SecondOrderResult
        The solver's result (released quantities only).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.

    See Also
    --------
    privtune.optim.second_order.dp_second_order : the solver.
    privtune.linear_model.DPLogisticRegression : convex logistic regression (seed 002).

    Notes
    -----
    **Privacy.** ``fit`` is ``(epsilon, delta)``-DP under the **replace-one**
    relation (training sets of the same public size ``n`` differing in one
    row, features and label); the guarantee covers ``coef_``, ``intercept_``,
    ``n_iter_``, ``certified_`` and everything in ``optimize_result_``. Public:
    ``n``, ``n_features``, every hyperparameter, the declared bound
    ``data_norm``, the label set (with ``classes``) and the starting point
    ``w0 = 0``. With ``classes=None`` the two labels are read from ``y``: the
    guarantee then holds between neighbouring datasets that both contain both
    labels (declare ``classes`` to remove this condition). The event charged,
    once and before the first value is read, is
    ``second_order_privacy_event(n, n_features + fit_intercept, ...)``: per
    iteration of each phase (worst case, ``T_p`` iterations paid in full), a
    Gaussian noisy gradient of L2 sensitivity ``2 B_g / n``, a Gaussian noisy
    symmetric Hessian of Frobenius sensitivity ``2 B_H sqrt(d) / n`` and, with
    line search, one AboveThreshold run (``SparseVectorEvent``) on queries of
    sensitivity ``min(2 B_g ||step||, 2 B) / n``; the mini-batch solvers use
    ``m`` for ``n`` and charge sampling without replacement (replace-one RDP of
    Wang, Balle & Kasiviswanathan). The constants come from the row bound of
    the augmented rows ``R' = sqrt(data_norm^2 + intercept_scaling^2)``
    (``B_g = R'/4``, ``B_H = sqrt(3) R'^2 / 18`` for the sigmoid loss;
    ``R'`` and ``R'^2 / 4`` for the log-loss), enforced by clipping. See
    :func:`~privtune.optim.second_order.dp_second_order` for the noise and
    the calibration.""" + _SCALING_DOC.replace(
        "CLIPPED_TO", "every row is clipped to the L2 norm ``data_norm``") + r"""

    **What a search is told** (``_fit_privacy_event()``, no arguments, used by
    :class:`~privtune.model_selection.PrivateSearchCV` before it knows ``n``).
    Full-batch solvers: the calibration gives every run the RDP curve
    ``a rho`` of one Gaussian of multiplier ``calibrate_rdp_gaussian(epsilon
    (1 - 1e-3), delta)``, whatever ``n``, ``d`` and ``T`` (the per-iteration
    Gaussians and the sparse vectors' ``eps^2 / 2`` zCDP add up to ``rho``); the
    declared event is that Gaussian with its multiplier lowered by a relative
    ``1e-9`` (strictly more pessimistic), so ``k`` declared fits compose
    exactly like ``k`` real ones. Mini-batch solvers: the subsampled curve
    depends on ``n`` through ``m / n``, and the declared event is
    ``EpsilonDeltaEvent(epsilon, delta)``, which bounds every run (each is
    calibrated to at most ``(epsilon (1 - 1e-3), delta)``), as
    :class:`~privtune.neural_network.DPMLPClassifier` does.

    **Deviations from the paper** (besides those of the solver): the starting
    point is ``w0 = 0`` (public). A public seeded random ``w0`` (``N(0, I / d)``)
    was measured too and did not learn better (the same medians within 0.03 on
    the three benchmark sets; when the tolerance is too large the run is
    certified at the random point, at chance accuracy, just as at 0); so the
    data-free, seed-free 0 is used. The initial gap is the authors' declared
    0.5 (data-independent), not the paper's non-private ``f(w0) + |z|``. The
    Hessian sensitivity is the paper's Frobenius bound with ``sqrt(d)``.
    ``predict_proba`` is the sigmoid of the margin for both losses (for the
    log-loss it is the model's probability; for the sigmoid loss a monotone
    score without calibration).

    References
    ----------
    .. [GW23] C. Gao and S. J. Wright, "Differentially Private Optimization for
       Smooth Nonconvex ERM", arXiv:2302.04972, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.linear_model import DPNonConvexClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 3)) / 2
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPNonConvexClassifier(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    >>> clf.privacy_spent_.epsilon <= 1.0, clf.coef_.shape
    (True, (1, 3))
    """

    def __init__(self, epsilon: float = 1.0, *, delta: float = 1e-6, loss: str = "sigmoid",
                 solver: str = "2opt-ls", tolerance: float = 0.01, data_norm: float = 1.0,
                 fit_intercept: bool = True, intercept_scaling: float = 0.5, l2: float = 1e-3,
                 batch_size: int | None = None, eigensolver: str = "dense", max_iter: int = 5,
                 classes: Any = None, random_state: Any = None, accountant: Accountant | None = None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.loss = loss
        self.solver = solver
        self.tolerance = tolerance
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.l2 = l2
        self.batch_size = batch_size
        self.eigensolver = eigensolver
        self.max_iter = max_iter
        self.classes = classes
        self.random_state = random_state
        self.accountant = accountant

    # -- validation (public quantities only) -------------------------------------------------
    def _validate(self, owner: str) -> dict[str, Any]:
        def choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
            if not isinstance(value, str) or value not in choices:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be one of {list(choices)}. Got {value!r} instead.")
            return value

        p: dict[str, Any] = {
            "epsilon": check_epsilon(self.epsilon, owner=owner),
            "delta": check_delta(self.delta, owner=owner, allow_zero=False),
            "loss": choice(self.loss, "loss", LOSSES),
            "variant": choice(self.solver, "solver", VARIANTS),
            "tolerance": check_real(self.tolerance, "tolerance", low=0.0, owner=owner),
            "data_norm": check_real(self.data_norm, "data_norm", low=0.0, owner=owner),
            "intercept_scaling": check_real(self.intercept_scaling, "intercept_scaling", low=0.0, owner=owner),
            "l2": check_real(self.l2, "l2", low=0.0, closed="left", owner=owner),
            "eigensolver": choice(self.eigensolver, "eigensolver", _EIGENSOLVERS),
            "max_iter": check_integer(self.max_iter, "max_iter", low=1, high=1_000_000, owner=owner),
        }
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The 'fit_intercept' parameter of {owner} must be a bool. Got {self.fit_intercept!r} instead.")
        p["minibatch"] = p["variant"].endswith("-b")
        if self.batch_size is None:
            p["batch_size"] = None
        elif not p["minibatch"]:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {owner} must be None for solver={p['variant']!r} (full batch); "
                f"mini-batches are the '-b' solvers ('opt-b', '2opt-b'). Got {self.batch_size!r} instead.")
        else:
            p["batch_size"] = check_integer(self.batch_size, "batch_size", low=1, owner=owner)
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise InvalidParameterError(
                f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. "
                f"Got {type(self.accountant).__name__} instead.")
        self._check_classes_param(owner)
        s = p["intercept_scaling"] if self.fit_intercept else 0.0
        p["row_bound"] = math.hypot(p["data_norm"], s)
        return p

    def _solver_kwargs(self, p: dict[str, Any]) -> dict[str, Any]:
        return dict(variant=p["variant"], loss=p["loss"], epsilon=p["epsilon"], delta=p["delta"],
                    tolerance=p["tolerance"], data_norm=p["row_bound"], l2=p["l2"], batch_size=p["batch_size"],
                    eigensolver=p["eigensolver"], max_iter=p["max_iter"])

    # -- planning -------------------------------------------------------------------------------
    def _fit_privacy_event(self) -> PrivacyEvent:
        """An event that composes at least as pessimistically as the charge of any ``fit``, for every ``n``.

        Computed from the hyperparameters only (how
        :class:`~privtune.model_selection.PrivateSearchCV` asks, before it knows
        the size of each fold). Full-batch solvers: a ``GaussianEvent`` whose
        RDP curve lies (by a relative ``2e-9``) above the common curve of every
        run; mini-batch solvers: ``EpsilonDeltaEvent(epsilon, delta)`` (see the
        class Notes).

        Returns
        -------
        PrivacyEvent

        Raises
        ------
        InvalidParameterError
            For a hyperparameter outside its domain (the checks of ``fit``).

        Notes
        -----
        **Privacy.** Spends nothing and reads no data.
        """
        owner = type(self).__name__
        p = self._validate(owner)
        if p["minibatch"]:
            return EpsilonDeltaEvent(epsilon=p["epsilon"], delta=p["delta"],
                                     label=f"one {owner} fit (bound for any number of rows)")
        nm = calibrate_rdp_gaussian(epsilon=p["epsilon"] * (1.0 - CALIBRATION_SLACK), delta=p["delta"])
        return GaussianEvent(noise_multiplier=nm * (1.0 - _DECLARED_MARGIN), vector=True,
                             label=f"one {owner} fit (full batch: the common RDP curve of every run)")

    def _planned_event(self, n: int, d: int, p: dict[str, Any], kwargs: dict[str, Any], owner: str) -> PrivacyEvent:
        """The run's event (``second_order_privacy_event``), or an InvalidParameterError before anything is spent.

        Public quantities only. Hyperparameters of extreme magnitude (``data_norm`` or
        ``tolerance`` near 1e300, an ``epsilon`` or ``delta`` that the mini-batch
        calibration cannot handle) make the plan's float arithmetic overflow,
        underflow to a zero divisor or leave a logarithm's domain; each is refused
        here, naming the parameters, instead of surfacing as a raw ArithmeticError or
        ValueError (or, for a full-batch ``delta`` next to 1, as a RuntimeError of the
        solver after the charge).
        """
        values = (f"epsilon={p['epsilon']!r}, delta={p['delta']!r}, tolerance={p['tolerance']!r}, "
                  f"data_norm={p['data_norm']!r}, intercept_scaling={p['intercept_scaling']!r}, l2={p['l2']!r}, "
                  f"solver={p['variant']!r}, batch_size={p['batch_size']!r}, max_iter={p['max_iter']!r}")
        try:
            c = NonconvexLoss(p["loss"], p["row_bound"], p["l2"]).constants()
            finite = all(math.isfinite(x) for x in (c.B_g, c.B_H, c.G, c.M))
        except ArithmeticError:
            finite = False
        if not finite:
            raise InvalidParameterError(
                f"The 'data_norm', 'intercept_scaling' and 'l2' parameters of {owner} give loss constants that "
                f"overflow a float: the Hessian-Lipschitz constant M grows like R'^3 with the row bound "
                f"R' = hypot(data_norm, intercept_scaling) = {p['row_bound']!r}, and G like R'^2 + l2 "
                f"(l2={p['l2']!r}). "
                "Hint: rescale the features so that their rows have a norm of order 1 (then data_norm around 1) "
                "and keep l2 small. Nothing was spent.")
        try:
            event = second_order_privacy_event(n, d, **kwargs)
            charged = None if p["minibatch"] else compose_events([event], delta=p["delta"]).epsilon
        except (ArithmeticError, ValueError) as exc:
            arithmetic = _arithmetic_cause(exc)
            if arithmetic is None:
                raise
            cause = f"{type(arithmetic).__name__}: {arithmetic}"
            if self._horizon_fails(n, d, kwargs):
                raise InvalidParameterError(
                    f"The 'tolerance' parameter of {owner} gives a horizon T = gap / MIN_DEC that a float cannot "
                    f"compute ({cause}): MIN_DEC, about min(tolerance^2 / G, tolerance^1.5 / sqrt(M)) with G and M "
                    f"from data_norm, intercept_scaling and l2, overflows or underflows to 0. Got {values}. "
                    "Hint: use a tolerance of moderate size (e.g. 1e-6 to 1); the run is capped at max_iter "
                    "iterations anyway. Nothing was spent.") from exc
            hint = ("the mini-batch calibration (subsampled RDP of sampling without replacement) fails numerically "
                    "for a small epsilon (below about 0.07 at delta=1e-6), a delta above about 0.01 and an extreme "
                    "epsilon; use a larger epsilon, a smaller delta or a full-batch solver ('opt', 'opt-ls', "
                    "'2opt', '2opt-ls')" if p["minibatch"] else "use a moderate epsilon and a small delta (e.g. 1e-6)")
            raise InvalidParameterError(
                f"The 'epsilon' and 'delta' parameters of {owner} are outside the range where the noise "
                f"calibration of solver={p['variant']!r} can be computed ({cause}). Got {values}. Hint: {hint}. "
                "Nothing was spent.") from exc
        if charged is not None and not charged <= p["epsilon"] * (1.0 + 1e-12):
            # the solver checks the same composition after the run (a RuntimeError after the charge): refuse now
            raise InvalidParameterError(
                f"The 'epsilon' and 'delta' parameters of {owner} are outside the range where the Gaussian "
                f"calibration is reliable: the calibrated run is worth epsilon={charged!r} > epsilon={p['epsilon']!r} "
                f"at delta={p['delta']!r} (this happens for a delta next to 1). Got {values}. "
                "Hint: use a small delta (e.g. 1e-6, well below 1 / n_samples). Nothing was spent.")
        return event

    @staticmethod
    def _horizon_fails(n: int, d: int, kwargs: dict[str, Any]) -> bool:
        """Whether the plan also fails on the full batch at epsilon=1, delta=1e-6 (then the horizon is at fault)."""
        probe = {**kwargs, "variant": kwargs["variant"].replace("-b", ""), "batch_size": None, "epsilon": 1.0,
                 "delta": 1e-6}
        try:
            second_order_privacy_event(n, d, **probe)
        except (ArithmeticError, ValueError) as exc:
            return _arithmetic_cause(exc) is not None
        return False

    # -- fit ----------------------------------------------------------------------------------
    def _rows(self, X: np.ndarray, p: dict[str, Any]) -> np.ndarray:
        """Rows clipped to ``data_norm`` (non-finite entries mapped to 0), with the intercept column."""
        U = clip_rows(zero_non_finite(X), math.inf, p["data_norm"], mode="rows", owner=type(self).__name__)
        if self.fit_intercept:
            U = np.hstack((U, np.full((U.shape[0], 1), p["intercept_scaling"])))
        return U

    def fit(self, X: Any, y: Any) -> DPNonConvexClassifier:
        """Train the classifier with a DP second-order solver and charge its privacy cost.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (sensitive).
        y : array-like of shape (n_samples,)
            Binary labels (sensitive).

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            For a hyperparameter outside its domain, hyperparameters of a
            magnitude the plan's float arithmetic cannot handle (e.g.
            ``tolerance=1e300``, ``data_norm=1e300``), or a public defect of
            the inputs (shapes, ``batch_size > n_samples``); nothing is spent.
            Without declared ``classes``, a target that is not binary is
            refused after the charge.
        BudgetExceededError
            If the accountant cannot pay for the run; raised before any value of
            ``X`` or ``y`` is read, with nothing spent.

        Notes
        -----
        **Privacy.** ``(epsilon, delta)``-DP under replace-one (see the class
        Notes): the run's whole worst-case event, computed from the public
        shape and the hyperparameters, is charged once to the accountant
        before any value of ``X`` or ``y`` is read; the solver then runs with
        no accountant (already paid for).
        """
        owner = type(self).__name__
        p = self._validate(owner)
        y = label_entries(y)  # a list's entries each read on their own
        n, d = _public_shape(X, y, owner)
        if p["batch_size"] is not None and p["batch_size"] > n:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {owner} must be at most n_samples={n}. "
                f"Got {p['batch_size']!r} instead.")
        kwargs = self._solver_kwargs(p)
        event = self._planned_event(n, d + int(bool(self.fit_intercept)), p, kwargs, owner)
        acc = self.accountant
        if acc is None:
            acc = Accountant(Budget(p["epsilon"], p["delta"]))
        acc.spend(event, phase=owner, role="training")  # write-ahead, before any value of X or y is read
        X, y = _numeric_rows(self, X, y, owner)
        z, usable = self._encode_labels(y, owner)
        U = self._rows(X, p)
        if not usable.all():  # a label outside the declared classes: the row contributes nothing
            U = U.copy()
            U[~usable] = 0.0
            z = np.where(usable, z, 1.0)
        res = dp_second_order(U, z, accountant=None, random_state=self.random_state, phase=owner,  # charged above
                              clip="rows", **kwargs)
        w = res.x
        if self.fit_intercept:
            self.coef_ = w[:-1].reshape(1, -1).copy()
            self.intercept_ = np.array([w[-1] * p["intercept_scaling"]])
        else:
            self.coef_ = w.reshape(1, -1).copy()
            self.intercept_ = np.zeros(1)
        self.n_iter_ = int(res.n_iter)
        self.certified_ = bool(res.certified)
        self.privacy_spent_ = Budget(res.epsilon, res.delta)
        self.privacy_event_ = event
        self.accountant_ = acc
        self.optimize_result_ = res
        return self

    # -- prediction (post-processing, no privacy cost) -----------------------------------------
    def decision_function(self, X: Any) -> np.ndarray:
        """Signed score of the positive class ``classes_[1]``: the margin ``x^T coef + intercept``.

        Rows are clipped to ``data_norm`` first, as in ``fit``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        owner = type(self).__name__
        X = zero_non_finite(_numeric_table(self, X, owner, reset=False))
        R = check_real(self.data_norm, "data_norm", low=0.0, owner=owner)
        return clip_rows(X, math.inf, R, mode="rows", owner=owner) @ self.coef_[0] + self.intercept_[0]

    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers whole training rows; ``classes`` declares the label set (:mod:`privtune.base`)."""
        return PrivacyTags(covers="rows", classes_param="classes")
