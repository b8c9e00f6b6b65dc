"""The release method of :class:`~privtune.model_selection.PrivateSearchCV`: its construction and public checks.

:class:`_MethodSetupMixin` builds the release method from the search's checked
settings (``_make_method``: the privacy parameters derived from the search's own
budget, score bounds and sensitivity, ``method_params`` for the rest; with public
validation rows, ``sensitive="training"``, a post-processing selection of the paid
DP fits, ``_exact_gp_loop`` for the GP methods) and refuses, from public
quantities before any charge, a configuration the method cannot release with: an
``epsilon`` outside the range its releases accept (``_check_epsilon_domain``,
found by bisection on ``_release_refusal``) and, for ``random`` and ``prescreen``,
more evaluations than distinct candidates (``_check_random_coverage``).
``_config.py`` holds the parameter checks and ``privacy_plan`` that call it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from privtune.accounting import Accountant, Budget, ComposedEvent, SelfComposedEvent
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.model_selection._inputs import _max_distinct_candidates
from privtune.model_selection._plan import SearchSettings
from privtune.model_selection._scoring import BoundedScorer

#: The methods driven by a GP-UCB loop (with public validation rows: the loop on the exact scores).
_GP_LOOP_METHODS = ("gp-ucb", "gp-ucb-exact", "noisy-ucb")
_METHOD_PARAMS_WITH_SENSITIVITY = ("noisy-ucb", "random", "prescreen")


class _MethodSetupMixin:
    """The release method's construction and its public checks, for :class:`PrivateSearchCV` (see the module).

    Reads the search's parameters (``self.method``, ``self.method_params``, ``self.sensitive``, ...) and its
    ``_role_budgets`` (:class:`~privtune.model_selection._config._SearchConfigMixin`); never the data.
    """

    def _method_label(self, settings: SearchSettings) -> str:
        """``method='<asked>'``, with what ``"auto"`` resolved to (for messages; public)."""
        if self.method == "auto":
            return f"method='auto' (resolved to {settings.method!r})"
        return f"method={settings.method!r}"

    def _release_refusal(self, settings: SearchSettings, scorer: BoundedScorer, m: int, sensitivity: float,
                         candidates: Any, epsilon: float) -> Exception | None:
        """Why the validation role's releases cannot run at ``epsilon`` (None when they can); public, spends nothing.

        Builds the method at that epsilon, checks its whole plan against the role's budget (the accountant's own
        arithmetic included) and builds every release mechanism (:meth:`~privtune.bo.ReleaseMethod.check_release`).
        """
        trial = replace(settings, epsilon=float(epsilon))
        try:
            budget = self._role_budgets(trial)[0]
            method = self._make_method(trial, scorer, m, sensitivity, budget)
            Accountant(budget).check(ComposedEvent(events=tuple(ev for ev, _ in method.plan(candidates))))
            method.check_release(candidates)
        except (InvalidParameterError, BudgetExceededError, ArithmeticError) as exc:
            return exc
        return None

    def _check_epsilon_domain(self, settings: SearchSettings, scorer: BoundedScorer, m: int, sensitivity: float,
                              candidates: Any) -> None:
        """Refuse an ``epsilon`` the method cannot release at, naming the range this configuration accepts.

        Public quantities only, before any charge or evaluation. Outside a range
        that depends on the method and the configuration, a release cannot run
        or says nothing: at a tiny epsilon no exact noise grid is fine enough (a
        Laplace release needs about 2e-15 per release), so the noise could not
        be drawn after the plan was charged; at a huge one the accountant's
        arithmetic overflows (Laplace and exponential events are squared above
        about 1e154), ``noisy-ucb``'s calibration no longer fits its own plan
        (from about 1e8), or the grid is so fine that the release saturates
        (pinned near the midpoint of the score range). The accepted range is
        found by bisection on the same checks; both ends it states are
        accepted.

        Raises
        ------
        InvalidParameterError
            With the accepted range; or the configuration's own refusal when no
            power of ten from 1e-300 to 1e300 is accepted (then epsilon is not
            the cause).
        """
        eps = settings.epsilon
        exc = self._release_refusal(settings, scorer, m, sensitivity, candidates, eps)
        if exc is None:
            return

        def refused(e: float) -> bool:
            return self._release_refusal(settings, scorer, m, sensitivity, candidates, e) is not None

        # an accepted epsilon to bisect from: 1, else the nearest power of ten (by its exponent) that is accepted
        anchors = [10.0 ** k for j in range(0, 301, 4) for k in ((j, -j) if j else (0,))]
        anchor = next((a for a in anchors if not refused(a)), None)
        if anchor is None:  # no epsilon fits this configuration: epsilon is not the cause
            if isinstance(exc, ArithmeticError):  # never a bare arithmetic error
                raise InvalidParameterError(
                    f"The 'epsilon' parameter of PrivateSearchCV ({eps!r}) cannot be accounted for with "
                    f"{self._method_label(settings)}: the privacy accountant's arithmetic overflows. Nothing was read "
                    "or spent.") from None
            raise exc

        def edge(good: float, bad: float) -> float:  # geometric bisection; returns an accepted value
            if not refused(bad):
                return bad
            for _ in range(40):
                if abs(math.log(bad) - math.log(good)) < 1e-3:
                    break
                mid = math.sqrt(good) * math.sqrt(bad)
                good, bad = (mid, bad) if not refused(mid) else (good, mid)
            return good

        def shown(x: float, up: bool) -> float:  # three significant digits, rounded inwards, if still accepted
            q = 10.0 ** (math.floor(math.log10(x)) - 2)
            r = float(f"{(math.ceil(x / q) if up else math.floor(x / q)) * q:.3g}")
            return r if math.isfinite(r) and r > 0 and not refused(r) else x

        lo = shown(edge(anchor, eps if eps < anchor else 1e-300), up=True)
        hi = shown(edge(anchor, eps if eps > anchor else 1e300), up=False)
        reason = ("the privacy accountant's arithmetic overflows at this epsilon" if isinstance(exc, ArithmeticError)
                  else str(exc))
        raise InvalidParameterError(
            f"{self._method_label(settings)} accepts epsilon in [{lo:.3g}, {hi:.3g}] with this configuration; the "
            f"'epsilon' parameter of PrivateSearchCV is {eps!r}. ({reason}) Set epsilon inside that range; nothing "
            "was read or spent.") from None

    def _check_random_coverage(self, settings: SearchSettings, n_grid: int, n_built: int | None = None) -> None:
        """``method="random"`` scores n_iter *distinct* candidates: refuse a plan the candidate set cannot hold.

        Checked from public quantities before anything is spent (``n_built``: the
        size of the de-duplicated candidate set once built).
        """
        if settings.method not in ("random", "prescreen") or settings.stopping:
            return
        bound = min(settings.n_candidates + n_grid, _max_distinct_candidates(settings.space))
        if n_built is not None:
            bound = min(bound, n_built)
        if settings.n_iter > bound:
            raise InvalidParameterError(
                f"{self._method_label(settings)} scores n_iter={settings.n_iter} distinct candidates, but the "
                "candidate set holds "
                f"at most {int(bound)} (n_candidates={settings.n_candidates}"
                + (f" and a candidate_grid of {n_grid}" if n_grid else "")
                + f", de-duplicated over the search space). Lower n_iter to at most {int(bound)}, or enlarge "
                + ("n_candidates, the candidate_grid or the search space." if n_grid else
                   "n_candidates / the search space."))

    def _exact_gp_loop(self, settings: SearchSettings, params: dict[str, Any]) -> Any:
        """With public validation rows, a GP method is GP-UCB on the exact scores (no validation release to tune).

        Only the GP's ``kernel`` applies; the other parameters of the method's releases are refused, by name.
        """
        from privtune.bo._gp_method import GPMethod
        from privtune.bo.post_processing import PostProcessingSelection

        extra = sorted(set(self.method_params or {}) - {"kernel"})
        if extra:
            raise InvalidParameterError(
                f"method={settings.method!r} with sensitive='training' observes the exact scores on the public "
                f"validation rows and makes no validation release, so 'method_params' {extra} have no effect there. "
                "Only 'kernel' applies; remove the others.")
        base = {k: params[k] for k in ("epsilon", "delta", "n_iter", "score_bounds")}
        return PostProcessingSelection(GPMethod(kernel=params.get("kernel"), **base), name=settings.method)

    def _make_method(self, settings: SearchSettings, scorer: BoundedScorer, m: int, sensitivity: float,
                     budget: Budget) -> Any:
        from privtune.bo import make_method

        params: dict[str, Any] = {"epsilon": budget.epsilon, "n_iter": settings.n_iter}
        if settings.method != "lipschitz":
            params["delta"] = budget.delta
            params["score_bounds"] = scorer.bounds
        if settings.method in _METHOD_PARAMS_WITH_SENSITIVITY:
            params["score_sensitivity"] = sensitivity
        if settings.method == "lipschitz":
            params["n_validation"] = m
        # the privacy parameters are derived from the search's own settings; method_params must not replace them
        clash = sorted(set(self.method_params or {}) & (set(params) | {"score_sensitivity", "n_validation",
                                                                         "score_bounds", "delta", "run_event"}))
        if clash:
            raise InvalidParameterError(
                f"'method_params' must not set {clash}: privtune derives them from PrivateSearchCV's own settings "
                "(epsilon, delta, n_iter, scoring and score_bounds, score_sensitivity, the validation size), which "
                "the report and the ledger state. Set those parameters of PrivateSearchCV instead.")
        params.update({k: v for k, v in dict(self.method_params or {}).items() if k != "subsample"})  # the search's
        if settings.stopping and "selection" not in params:  # method="auto" with sensitive="training"
            params["selection"] = "random-stopping"
        if settings.stopping and settings.one_fit is not None and settings.cv is not None:
            # With cv a run fits one model per fold, and a row sits in the training part of all folds but its own:
            # the run's event is cv fits (conservative by one), composed with its score, and charged to both roles
            # (they overlap). With one split the roles are disjoint and accounted apart (_training_role).
            k = int(settings.cv)
            params["run_event"] = SelfComposedEvent(event=settings.one_fit, count=k, relation=settings.one_fit.relation,
                                                    label=f"the {k} fits of one run (one per fold)")
            if self.refit:  # the same event is the training role's; leave it room for the refit
                params["epsilon"] = budget.epsilon - settings.one_fit_budget.epsilon
                if params["epsilon"] <= 0:
                    raise InvalidParameterError(
                        f"epsilon={budget.epsilon!r} cannot pay for the refit (epsilon "
                        f"{settings.one_fit_budget.epsilon!r}) and the randomly stopped runs: raise epsilon, lower the "
                        "estimator's epsilon, or set refit=False.")
        if self.sensitive == "training" and settings.method in _GP_LOOP_METHODS:
            return self._exact_gp_loop(settings, params)
        try:
            method = make_method(settings.method, **params)
        except TypeError as exc:
            raise InvalidParameterError(f"Invalid 'method_params' for method={settings.method!r}"
                                        + (" (method='auto')" if self.method == "auto" else "")
                                        + f": {exc}") from None
        if self.sensitive == "training":  # public validation rows: the release is post-processing of the DP fits
            from privtune.bo.post_processing import PostProcessingSelection

            method = PostProcessingSelection(method)
        if settings.method == "lipschitz":  # Alg. 3's sensitivity assumes per-row losses in [-loss_bound, 0]
            lo, hi = scorer.bounds
            g = float(method.loss_bound)  # validated by the method (any real number type)
            if lo < -g or hi > 0.0:
                raise InvalidParameterError(
                    f"method='lipschitz' needs a score of per-row losses in [-loss_bound, 0] = [{-g!r}, 0] "
                    f"(its sensitivity rests on that bound); scoring={scorer.name!r} has bounds {scorer.bounds!r}. "
                    "Use scoring='neg_log_loss' with score_bounds=(-loss_bound, 0), or a callable declared so.")
            if sensitivity > (g / m) * (1.0 + 1e-12):  # the method's noise is g*/m-based: a larger one is ignored
                raise InvalidParameterError(
                    f"method='lipschitz' calibrates its noise to a mean of {m} per-row losses in [-loss_bound, 0] "
                    f"(sensitivity loss_bound/m = {g / m:.6g}); the score's sensitivity is {sensitivity:.6g} "
                    f"(score_sensitivity={self.score_sensitivity!r}, scoring={scorer.name!r}), so the score is not "
                    "such a mean and the method would add too little noise. Use another method, or a score that is "
                    "a mean of bounded per-row losses.")
        return method
