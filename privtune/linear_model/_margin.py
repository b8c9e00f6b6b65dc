r"""The shared base of privtune's DP margin classifiers: validation, the public plan, the charge, the fit.

:class:`_DPMarginClassifier` is the scikit-learn classifier around the seed-002 trainers
(:func:`privtune.optim.dp_accelerated`) and seed 003's line search (:func:`privtune.optim.dp_blsgd`): it validates
the parameters, plans the run from public quantities, refuses what public information can reveal before any charge,
charges the fit to its accountant, clips and stores the rows, and runs the solver. :class:`_ClippedLinearMixin` adds
the features of the linear models (the rows clipped to ``data_norm``). They serve
:class:`privtune.linear_model.DPLogisticRegression`, :class:`privtune.svm.DPLinearSVC` and
:class:`privtune.svm.DPSVC` (split from ``privtune.linear_model._logistic`` in issue 39, which re-exports every
name of this module; a test that monkeypatches a trainer these classes call patches it here).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from privtune.accounting.accountant import Accountant, compose_events
from privtune.accounting.budget import Budget
from privtune.accounting.events import EpsilonDeltaEvent, GaussianEvent, PrivacyEvent
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError, PrivtuneError
from privtune.linear_model._classifier import _LinearClassifier
from privtune.linear_model._input import _numeric_rows, _numeric_table, _public_shape
from privtune.optim._losses import (
    _FLOAT32_SHRINK,
    MULTICLASS_HINGE,
    MULTINOMIAL,
    ClippedRows,
    check_storage,
    clip_rows,
    compact_rows,
    get_loss,
    zero_non_finite,
)
from privtune.optim.accelerated import dp_accelerated, gaussian_run_multiplier
from privtune.optim.accelerated._plan import _make_plan as _make_accelerated_plan
from privtune.optim.accelerated._schedules import HORIZONS, SOLVERS
from privtune.optim.line_search import MarginObjective, blsgd_privacy_event, dp_blsgd
from privtune.optim.line_search._loop import _check_grids as _check_line_search_grids
from privtune.optim.line_search._loop import _make_plan as _make_line_search_plan
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real, label_entries

__all__ = ["ESTIMATOR_SOLVERS", "LINE_SEARCH", "_ClippedLinearMixin", "_DPMarginClassifier"]


_CLIPS = ("rows", "raise")
_NOISES = ("gaussian", "laplace")
#: Seed 003's solver (Chen & Lee): DP-BLGD, a full-batch private Armijo line search with adaptive budgets.
LINE_SEARCH = "line-search"
ESTIMATOR_SOLVERS = (*SOLVERS, LINE_SEARCH)
_LINE_SEARCH_PLACEHOLDER_N = 1000
#: The K-class counterpart of each margin loss: one weight vector per class, one run with the fit's budget.
_MULTICLASS_LOSS = {"logistic": MULTINOMIAL, "smoothed_hinge": MULTICLASS_HINGE}


class _DPMarginClassifier(_LinearClassifier):
    """Shared ``fit`` / ``predict`` of privtune's margin classifiers (internal).

    Two classes: one run of the solver on the margin loss ``_loss``. ``K > 2``
    classes: one run on its K-class counterpart (:data:`_MULTICLASS_LOSS`: the
    softmax cross-entropy for the logistic loss, Crammer & Singer's hinge
    smoothed by a softmax for the smoothed hinge), one weight vector per class,
    with the fit's whole budget.
    Subclasses set ``_loss`` and implement :meth:`_feature_bounds`,
    :meth:`_features` and :meth:`_validate_extra`.
    """

    _loss = "logistic"

    def _multiclass(self) -> bool:
        """Every solver but the line search (whose zCDP filter caps one run) fits ``K > 2`` classes."""
        return self.solver != LINE_SEARCH

    # -- hooks ------------------------------------------------------------------------
    def _validate_extra(self, owner: str) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _feature_bounds(self, n_features: int) -> tuple[float, float]:  # pragma: no cover - abstract
        """Declared (L1, L2) bounds on the rows of the feature matrix."""
        raise NotImplementedError

    def _features(self, X: np.ndarray, *, fitting: bool) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _planned_features(self, n_samples: int, n_features: int) -> tuple[int, float, float]:
        """``(width, L1, L2)`` of the feature matrix ``fit`` will build, from public sizes only."""
        raise NotImplementedError  # pragma: no cover - abstract

    # -- validation -------------------------------------------------------------------
    def _validate_common(self, owner: str) -> dict[str, Any]:
        if not isinstance(self.solver, str) or self.solver not in ESTIMATOR_SOLVERS:
            raise InvalidParameterError(
                f"The 'solver' parameter of {owner} must be one of {list(ESTIMATOR_SOLVERS)}. Got {self.solver!r} "
                "instead.")
        if not isinstance(self.horizon, str) or self.horizon not in HORIZONS:
            raise InvalidParameterError(
                f"The 'horizon' parameter of {owner} must be one of {list(HORIZONS)}. Got {self.horizon!r} "
                "instead.")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The 'fit_intercept' parameter of {owner} must be a bool. Got {self.fit_intercept!r} instead.")
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise InvalidParameterError(
                f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. "
                f"Got {type(self.accountant).__name__} instead.")
        if not isinstance(self.noise, str) or self.noise not in _NOISES:
            raise InvalidParameterError(
                f"The 'noise' parameter of {owner} must be one of {list(_NOISES)}. Got {self.noise!r} instead.")
        if self.noise == "gaussian":
            delta = check_delta(self.delta, owner=owner, allow_zero=False)
        else:
            delta = check_delta(self.delta, owner=owner)  # validated, unused: the Laplace run is pure
        if self.solver == LINE_SEARCH and self.noise != "gaussian":
            raise InvalidParameterError(
                f"solver='line-search' of {owner} adds Gaussian noise to the gradients (its line search is a "
                f"Laplace sparse vector): use noise='gaussian' (the default). Got noise={self.noise!r}.")
        if self.solver == LINE_SEARCH and self.batch_size is not None:
            raise InvalidParameterError(
                f"solver='line-search' of {owner} runs on the full batch (DP-BLGD): its up-front privacy event must "
                "not depend on the number of rows, which a mini-batch filter's order does. Use "
                f"privtune.optim.dp_blsgd for mini-batches. Got batch_size={self.batch_size!r}.")
        if self.noise == "gaussian" and self.batch_size is not None:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {owner} must be None with noise='gaussian' (mini-batches are "
                f"only accounted for Laplace noise). Got {self.batch_size!r} instead.")
        out = {
            "delta": delta,
            "epsilon": check_epsilon(self.epsilon, owner=owner),
            "C": check_real(self.C, "C", low=0.0, owner=owner),
            "intercept_scaling": check_real(self.intercept_scaling, "intercept_scaling", low=0.0, owner=owner),
            "max_iter": check_integer(self.max_iter, "max_iter", low=1, high=100_000, owner=owner),
            "step_scale": check_real(self.step_scale, "step_scale", low=0.0, high=1.0, closed="right",
                                     owner=owner),
            "batch_size": None if self.batch_size is None else check_integer(self.batch_size, "batch_size",
                                                                             low=1, owner=owner),
            "initial_gap": None if self.initial_gap is None else check_real(self.initial_gap, "initial_gap",
                                                                            low=0.0, owner=owner),
            "max_slope": check_real(self.max_slope, "max_slope", low=0.0, high=1.0, closed="right", owner=owner),
        }
        if self.solver == LINE_SEARCH and self._declared_classes() > 2:
            raise InvalidParameterError(
                f"solver='line-search' of {owner} fits two classes only (its zCDP filter's cap is one run's); "
                f"got {self._declared_classes()} declared classes. Use the default solver for more classes.")
        self._check_classes_param(owner)
        out.update(self._validate_extra(owner))
        return out

    def _declared_classes(self) -> int:
        """Number of declared ``classes`` (2 when undeclared or invalid: ``_check_classes_param`` refuses those)."""
        try:
            k = 2 if self.classes is None else int(np.asarray(self.classes).shape[0])
        except (TypeError, ValueError, IndexError):
            k = 2
        return max(k, 2)


    # -- planning -------------------------------------------------------------------------
    def _fit_privacy_event(self) -> PrivacyEvent:
        """An event that composes exactly like the charge of one ``fit``, from the hyperparameters only.

        With Gaussian noise a fit charges one Gaussian event per step whose
        precisions sum to that of one Gaussian calibrated at
        ``(epsilon (1 - 1e-3), delta)``, whatever the horizon ``T*`` (which
        depends on the data's shape and ``C``); that Gaussian is returned
        (:func:`privtune.optim.accelerated.gaussian_run_multiplier`, shared
        with the solver).
        With Laplace noise the steps' costs sum to ``epsilon``, and
        ``EpsilonDeltaEvent(epsilon, 0)`` bounds the charge. Callers (the
        search's up-front plan) use it to refuse an unaffordable plan before any
        data is read. Nothing is spent.

        Raises
        ------
        InvalidParameterError
            For a hyperparameter outside its domain (the checks of ``fit``).
        """
        owner = type(self).__name__
        params = self._validate_common(owner)
        if self.solver == LINE_SEARCH:
            return self._line_search_event(params)
        if self.noise == "gaussian":
            nm = gaussian_run_multiplier(params["epsilon"], params["delta"])
            return GaussianEvent(noise_multiplier=nm, vector=True, label=f"one {owner} fit (Gaussian)")
        return EpsilonDeltaEvent(epsilon=params["epsilon"], label=f"one {owner} fit (Laplace)")

    def _line_search_event(self, params: dict[str, Any]) -> PrivacyEvent:
        """The zCDP filter's cap of a full-batch DP-BLGD run: a function of (epsilon, delta) only.

        :func:`privtune.optim.blsgd_privacy_event` with ``sampling="full"`` does
        not depend on the number of rows (the filter caps the zCDP total at the
        largest ``rho`` converting to ``(epsilon, delta)``); the row count given
        here is a placeholder, and ``fit`` checks that the run's own event is
        this one.
        """
        return self._line_search_event_for(_LINE_SEARCH_PLACEHOLDER_N, params)

    def _line_search_event_for(self, n: int, params: dict[str, Any]) -> PrivacyEvent:
        event = blsgd_privacy_event(n, **self._line_search_kwargs(params))
        return dataclasses.replace(event, label=f"one {type(self).__name__} fit (line search, DP-BLGD zCDP filter)")

    def _line_search_kwargs(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"epsilon": params["epsilon"], "delta": params["delta"], "sampling": "full", "mode": "adaptive"}

    def _fit_line_search(self, U: np.ndarray, z: np.ndarray, r2: float, params: dict[str, Any],
                         event: PrivacyEvent) -> Any:
        """Run DP-BLGD (charged already): clipped slope ``max_slope`` as per-example gradient clipping."""
        n = U.shape[0]
        kwargs = self._line_search_kwargs(params)
        objective = MarginObjective(U, z, loss=self._loss, smoothing=params.get("smoothing", 1.0), data_norm=r2)
        return dp_blsgd(objective, np.zeros(U.shape[1]), clip_grad=params["max_slope"] * r2,
                        l2=1.0 / (params["C"] * n), accountant=None, random_state=self.random_state,
                        phase=type(self).__name__, **kwargs)

    def _horizon_floor(self) -> float:
        """``horizon_floor`` of the solver's ``horizon="auto"``.

        See :func:`privtune.optim.accelerated._schedules.auto_horizon`.
        """
        return 0.0

    def _accelerated_kwargs(self, params: dict[str, Any], n: int, r1: float, r2: float,
                            n_classes: int = 2) -> dict[str, Any]:
        """The keyword arguments of :func:`dp_accelerated` for a fit on ``n`` rows of ``n_classes`` (public)."""
        gaussian = self.noise == "gaussian"
        multiclass = n_classes > 2
        return dict(solver=self.solver, epsilon=params["epsilon"], alpha=1.0 / (params["C"] * n), data_norm=r1,
                    data_norm_l2=r2, loss=_MULTICLASS_LOSS[self._loss] if multiclass else self._loss,
                    n_classes=n_classes if multiclass else None, smoothing=params.get("smoothing", 1.0),
                    n_iter=params["max_iter"], batch_size=params["batch_size"], step_scale=params["step_scale"],
                    initial_gap=params["initial_gap"], max_slope=params["max_slope"], clip="rows",
                    noise=self.noise, delta=params["delta"] if gaussian else None, horizon=self.horizon,
                    output="last" if self.horizon == "paper" else "tail_average",
                    horizon_floor=self._horizon_floor())

    def _public_plan(self, n: int, d: int, params: dict[str, Any], owner: str,
                     n_classes: int | None = None) -> tuple[int, float, float]:
        """Build the solver's whole plan from public quantities, before the charge; return ``(width, R1, R2)``.

        (:meth:`_planned_storage` also returns the rows' storage dtype.)
        """
        return self._planned_storage(n, d, params, owner, n_classes)[:3]

    def _planned_storage(self, n: int, d: int, params: dict[str, Any], owner: str,
                         n_classes: int | None = None) -> tuple[int, float, float, Any]:
        """:meth:`_public_plan`, returning ``(width, R1, R2, dtype)``: the plan and how the rows are stored.

        ``fit`` used to charge first and plan inside the solver, so a public
        misconfiguration that no exact noise grid or float can hold (``epsilon``
        of 1e-30, ``intercept_scaling`` of 1e200, a ``C`` so small that the step
        schedule overflows) was refused after the charge: no leak (public
        parameters only), but the fit's budget was lost. The same plan is now
        built here first, so such a fit is refused with nothing spent. The
        plan's noise draws nothing (a fixed seed is passed to it). ``n_classes``:
        the number of classes (``None``: from the declared ``classes``).
        ``dtype``: how the rows are stored (float32 inside float32's safe range
        of the declared bounds, else float64; :func:`privtune.optim._losses.storage_dtype`).
        Declared bounds (``data_norm``, ``data_norm_l2``, ``intercept_scaling``)
        outside float64's safe range, about 4e-121 to 2.6e120, are refused here,
        with nothing spent.
        """
        n_classes = self._declared_classes() if n_classes is None else n_classes
        width, r1, r2 = self._planned_features(n, d)
        if self.fit_intercept:
            s = params["intercept_scaling"]
            width, r1, r2 = width + 1, r1 + s, math.sqrt(r2 * r2 + s * s)
        if not (math.isfinite(r1) and math.isfinite(r2)):
            raise InvalidParameterError(
                f"The declared row bounds of {owner} overflow a float (L1 {r1!r}, L2 {r2!r}, intercept column "
                "included): use a smaller data_norm or intercept_scaling. Nothing was spent.")
        if self.solver == LINE_SEARCH:
            # float64 rows: the float64 range only (the margin loss's constants; the run clips gradients at kappa R_2)
            loss = get_loss(self._loss, params.get("smoothing", 1.0), owner, params["max_slope"])
            check_storage(math.sqrt(width) * r2, r2, width, coefficients=width, coefficient_l1=loss.max_slope,
                          coefficient_l2=loss.max_slope, norm=2, owner=owner)
            dtype: Any = np.float64
            ls_params = {**self._line_search_kwargs(params), "clip_grad": params["max_slope"] * r2,
                         "l2": 1.0 / (params["C"] * n)}
            _check_line_search_grids(_make_line_search_plan(n, ls_params, owner), width,
                                     check_random_state(0, owner=owner))
        else:
            kwargs = self._accelerated_kwargs(params, n, r1, r2, n_classes)
            coefficients = width * (kwargs["n_classes"] or 1)  # one weight vector per class beyond two
            dtype = _make_accelerated_plan(n=n, d=coefficients, accountant=None, owner=owner, x0=None, masg_p=1,
                                           random_state=0, check_only=True, **kwargs)
        return width, r1, r2, dtype

    def _check_fit_plan(self, n_samples: int, n_features: int) -> None:
        """Refuse, from public sizes alone, a configuration whose solver plan cannot be built (nothing spent).

        What ``fit`` checks before its charge (:meth:`_public_plan`), for a
        search that prepays its fits and must refuse such a candidate before
        it charges the plan.
        """
        owner = type(self).__name__
        self._public_plan(n_samples, n_features, self._validate_common(owner), owner)

    # -- fit ----------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> _DPMarginClassifier:
        """Fit the model with a DP solver (Laplace or Gaussian noise) and charge its privacy cost.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (sensitive).
        y : array-like of shape (n_samples,)
            Class labels (sensitive): two classes, or more.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            For a hyperparameter outside its domain, a public defect of the
            inputs (shapes, ``batch_size > n_samples``), or a configuration
            whose solver plan no exact noise grid or float can hold (e.g.
            ``epsilon=1e-30``, ``intercept_scaling=1e200``, declared bounds
            outside float64's safe range, about ``4e-121`` to ``2.6e120``; the
            whole plan is built from public sizes first); nothing is spent.
            Refused after the charge (the run is paid for: whether to refuse
            depends on the rows): rows over the declared bound with
            ``clip="raise"`` and, without declared ``classes``, a target that
            is not a class target or has one class (more than two classes with
            ``solver="line-search"``). With ``classes=None`` and more than two
            classes in ``y``, the runs' plan is checked again once the classes
            are read (a refusal then comes after the charge). Non-finite
            entries are mapped to 0, not refused.
        BudgetExceededError
            If the accountant cannot pay for the run; nothing is spent.

        Notes
        -----
        **Privacy.** See the class docstring: ``(epsilon, 0)``-DP under
        replace-one for the released model (and every iterate), or
        ``(epsilon, delta)``-DP with ``noise="gaussian"``; the composed event
        (Laplace or Gaussian events, one per step) is charged once before the
        first gradient.
        """
        owner = type(self).__name__
        params = self._validate_common(owner)
        y = label_entries(y)  # a list's entries each read on their own
        n, d = _public_shape(X, y, owner)
        if params["batch_size"] is not None and params["batch_size"] > n:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {owner} must be at most n_samples={n}. "
                f"Got {params['batch_size']!r} instead.")
        gaussian = self.noise == "gaussian"
        acc = self.accountant
        if acc is None:
            if gaussian:
                acc = Accountant(Budget(params["epsilon"], params["delta"]), method="rdp")
            else:
                acc = Accountant(Budget(params["epsilon"], 0.0), method="basic")
        event = self._fit_privacy_event()
        if self.solver == LINE_SEARCH and self._line_search_event_for(n, params) != event:
            raise PrivtuneError(f"Internal error: {owner}'s line-search event depends on n_samples; nothing spent.")
        planned = self._planned_storage(n, d, params, owner)  # refuses a plan no grid or float can hold, unspent
        acc.spend(event, phase=owner, role="training")  # write-ahead, before any value of X or y is read
        X, y = _numeric_rows(self, X, y, owner)
        index, usable = self._label_index(y, owner)
        n_classes = int(self.classes_.shape[0])
        if n_classes > 2 and self.classes is None:  # the label set was read (public under classes=None's condition)
            planned = self._planned_storage(n, d, params, owner, n_classes)
        z = np.where(usable & (index == 1), 1.0, -1.0)
        X = zero_non_finite(X)  # a non-finite entry is mapped to 0, row by row
        s = params["intercept_scaling"] if self.fit_intercept else 0.0
        coef_scale, s_used = 1.0, s
        if self.solver == LINE_SEARCH:
            U = self._features(X, fitting=True)
            r1, r2 = self._feature_bounds(X.shape[1])
            if self.fit_intercept:
                U = np.hstack((U, np.full((n, 1), s)))
        else:  # the accelerated solvers read float32 rows (half the memory traffic per step) where floats allow
            U, s_used = self._compact_features(X, s, planned[3])
            r1, r2 = self._feature_bounds(X.shape[1])
            coef_scale = _FLOAT32_SHRINK
        if self.fit_intercept:
            r1, r2 = r1 + s, math.sqrt(r2 * r2 + s * s)
        if (U.shape[1], r1, r2) != planned[:3]:  # public quantities only: the same on every neighbour
            raise PrivtuneError(f"Internal error: {owner}'s features differ from its public plan {planned[:3]}.")
        if not usable.all():  # a label outside the declared classes: the row contributes nothing
            U = U if isinstance(U, ClippedRows) else U.copy()  # compact_rows's rows are already a private copy
            U[~usable] = 0.0
            z = np.where(usable, z, 1.0)
        if self.solver == LINE_SEARCH:
            res = self._fit_line_search(U, z, r2, params, event)
        else:  # two classes: labels +1 / -1; more: class indices, one weight vector per class
            labels = z if n_classes == 2 else np.where(usable, index, 0).astype(np.float64)
            res = dp_accelerated(U, labels, accountant=None, random_state=self.random_state, phase=owner,
                                 **self._accelerated_kwargs(params, n, r1, r2, n_classes))  # charged above
        W = res.x.reshape(1 if n_classes == 2 else n_classes, -1)
        if self.fit_intercept:  # the model of the stored rows, for the rows predict sees (coef_scale, s_used)
            self.coef_ = W[:, :-1] * coef_scale
            self.intercept_ = W[:, -1] * s_used
        else:
            self.coef_ = W * coef_scale
            self.intercept_ = np.zeros(W.shape[0])
        self.n_iter_ = res.n_iter
        self.privacy_spent_ = (Budget(res.epsilon, res.delta) if self.solver != LINE_SEARCH
                               else compose_events([event], delta=params["delta"]))
        self.privacy_event_ = event
        self.accountant_ = acc
        self.optimize_result_ = res
        return self

    def _compact_features(self, X: np.ndarray, intercept: float, dtype: Any = np.float32) -> tuple[np.ndarray, float]:
        """The training features as float32 rows (with the intercept column), and the stored intercept value.

        See :func:`privtune.optim._losses.compact_rows`: every row is scaled by
        ``1 - 2**-16`` so that float32 rounding keeps it inside the declared
        bounds; ``fit`` multiplies ``coef_`` back by that factor. ``dtype``:
        the plan's (float64 where the declared bounds are outside float32's
        safe range; the same shrink).
        """
        F = self._features(X, fitting=True)  # first: it may draw the (public) feature map the bounds depend on
        r1, r2 = self._feature_bounds(X.shape[1])
        return compact_rows(F, r1, r2, mode="rows", owner=type(self).__name__, intercept=intercept, dtype=dtype)

    # -- prediction -----------------------------------------------------------------------
    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of the classes (post-processing, no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A non-finite entry (NaN, +-inf) counts as 0, as it does in ``fit``:
            the row is scored as training saw such a row, and the score stays
            finite.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the signed score of ``classes_[1]``. More: each
            class's score ``coef_[k] . x + intercept_[k]`` (``predict`` takes
            the largest).
        """
        check_is_fitted(self, "coef_")
        X = zero_non_finite(_numeric_table(self, X, type(self).__name__, reset=False))  # as fit maps them
        F = self._features(X, fitting=False)
        if self.coef_.shape[0] == 1:
            return F @ self.coef_[0] + self.intercept_[0]
        return F @ self.coef_.T + self.intercept_

    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers whole training rows; ``classes`` declares the label set (:mod:`privtune.base`)."""
        raises = getattr(self, "clip", "rows") == "raise"  # DPSVC has no clip: its random features are bounded
        return PrivacyTags(covers="rows", classes_param="classes", raises_on_rows=raises)


class _ClippedLinearMixin:
    """Linear features: rows clipped to the declared bounds (in fit and in predict)."""

    def _validate_extra(self, owner: str) -> dict[str, Any]:
        if self.clip not in _CLIPS:
            raise InvalidParameterError(
                f"The 'clip' parameter of {owner} must be one of {list(_CLIPS)}. Got {self.clip!r} instead.")
        check_real(self.data_norm, "data_norm", low=0.0, owner=owner)
        if self.data_norm_l2 is not None:
            check_real(self.data_norm_l2, "data_norm_l2", low=0.0, owner=owner)
        return {}

    def _feature_bounds(self, n_features: int) -> tuple[float, float]:
        return self._bounds_now(n_features)

    def _planned_features(self, n_samples: int, n_features: int) -> tuple[int, float, float]:
        return (n_features, *self._bounds_now(n_features))

    def _bounds_now(self, n_features: int) -> tuple[float, float]:
        """Declared ``(L1, L2)`` row bounds. Gaussian noise needs the L2 bound only: ``data_norm_l2``,
        else ``data_norm``, with the implied (never binding) L1 bound ``sqrt(d) R_2``."""
        if self.noise == "gaussian":
            r2 = float(self.data_norm if self.data_norm_l2 is None else self.data_norm_l2)
            return math.sqrt(max(n_features, 1)) * r2, r2
        r1 = float(self.data_norm)
        r2 = r1 if self.data_norm_l2 is None else min(r1, float(self.data_norm_l2))
        return r1, r2

    def _features(self, X: np.ndarray, *, fitting: bool) -> np.ndarray:
        r1, r2 = self._bounds_now(X.shape[1])
        mode = self.clip if fitting else "rows"
        return clip_rows(X, r1, r2, mode=mode, owner=type(self).__name__)

    def _compact_features(self, X: np.ndarray, intercept: float, dtype: Any = np.float32) -> tuple[np.ndarray, float]:
        """Clipping, the float32 cast and the intercept column in one pass over ``X`` (``clip`` applies)."""
        r1, r2 = self._bounds_now(X.shape[1])
        return compact_rows(X, r1, r2, mode=self.clip, owner=type(self).__name__, intercept=intercept,
                            dtype=dtype)
