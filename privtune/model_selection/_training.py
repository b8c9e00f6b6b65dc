"""The training role of a private search: every DP fit is paid for up front, in one visible plan.

When training rows are sensitive (``sensitive="training"`` or ``"both"``), each
candidate is fitted by a privtune DP estimator. If every fit charged a shared
accountant as it ran, the ledger would count the fits, and the count can depend
on the data: on the raw-score trajectory (a method that reuses a candidate's
score), on a fit that raises for one row, or on the secret number of runs K of a
randomly stopped search (Papernot & Steinke's bound needs K secret). So:

* The whole training plan is charged to the (visible) training accountant
  **before the first fit**, from public quantities only: ``n_fits`` repetitions
  of the estimator's declared per-fit event (``_fit_privacy_event()``) and the
  refit; with random stopping, the search's one ``RepeatAndSelectEvent`` (which
  covers every run's fit) and the refit.
* Each fit then charges a private, throw-away :class:`PrepaidFitAccountant`
  whose budget is exactly one declared fit: a fit that charges more than its
  declaration is refused (``BudgetExceededError``, which aborts the search - it
  is never turned into a score), and a fit beyond the planned count is an
  internal error. Nothing of these per-fit accountants reaches any output.

The ledger, ``privacy_spent_["training"]``, the report and the logs are then
the same for every pair of neighbouring data sets.

The estimator's own ``accountant`` (``DPLogisticRegression(accountant=cap)``),
which the tickets replace in every fit, is charged the same whole plan, in one
entry, before the search's training accountant and before the first fit
(:func:`charge_training_plan`): it works as a cap shared across searches on the
same rows, and a plan it cannot pay for is refused before anything is read or
spent anywhere (:func:`estimator_accountant` refuses what cannot be charged).

A scikit-learn ``Pipeline`` is accepted when its last step is such a DP
estimator and every step before it is data-independent (stateless, or fitted
on public data and wrapped in ``sklearn.frozen.FrozenEstimator``) or DP itself
(:class:`privtune.preprocessing.DPStandardScaler`): one fit's event is the
composition of its DP steps' events, charged up front like any other, and a
step that reads the rows otherwise is refused by name (:func:`training_steps`).
Such a pipeline is fitted step by step (:func:`fit_training`) so that no row's
value can make its fit fail.

With public training rows (``sensitive="validation"``) no fit reads a
sensitive row, and the estimator's accountants (nested ones too) are charged
nothing: the search fits clones without them, serially or in workers alike,
and gives them back on ``best_estimator_`` (:func:`public_fit_accountants`).

This module holds the search's training role (:class:`_TrainingRoleMixin`);
the accounting (tickets, the plan, its charge) is in ``_training_accounting.py``,
the estimators and pipelines fitted on sensitive rows in ``_training_pipelines.py``
and the estimator's own accountants in ``_fit_accountants.py``. Every name this
module held before they were split out is still importable from here.
"""

from __future__ import annotations

import math
from typing import Any

from sklearn.base import clone

from privtune.accounting import Accountant, Budget
from privtune.accounting.ledger import Ledger
from privtune.exceptions import BudgetExceededError, InvalidParameterError, PrivtuneError

# re-exported: the names this module held before its concepts got their own modules (issue 39)
from privtune.model_selection._fit_accountants import (  # noqa: F401 - re-exported
    _sets_accountant,
    estimator_accountant,
    public_fit_accountants,
    without_accountants,
)
from privtune.model_selection._plan import SearchSettings
from privtune.model_selection._subsampling import tuning_event
from privtune.model_selection._training_accounting import (  # noqa: F401 - re-exported
    FitTickets,
    PrepaidFitAccountant,
    _bounded_by,
    _final_step,
    _fit_label,
    _plan_refusal,
    _RunKeeper,
    charge_training_plan,
    check_candidate_costs,
    check_candidate_plans,
    declares_by_size,
    fit_epsilon_param,
    floor_digits,
    is_finite_budget,
    per_fit_event,
    refuse_spent_training_study,
    training_plan,
    unaffordable_message,
)
from privtune.model_selection._training_pipelines import (  # noqa: F401 - re-exported
    _STEP_KINDS,
    _check_training_pipeline,
    _dense_rows,
    _fit_param_keys,
    _is_frozen,
    _probe_step,
    _requires_fit,
    _step_kind,
    check_training_estimator,
    check_training_pipeline,
    fit_training,
    is_pipeline,
    isolated_transform,
    public_probe,
    set_fit_accountant,
    training_steps,
)
from privtune.utils._validation import check_real

__all__ = ["PrepaidFitAccountant", "FitTickets", "charge_training_plan", "check_candidate_costs",
           "check_training_estimator", "estimator_accountant", "per_fit_event", "public_fit_accountants",
           "refuse_spent_training_study", "training_plan", "without_accountants"]


class _TrainingRoleMixin:
    """PrivateSearchCV's training role: which fits it pays for, and the plan charged before any row is read."""

    def _reuses_selected_fit(self, settings: SearchSettings, method: Any, n_folds: int) -> bool:
        """Whether ``best_estimator_`` is the selected candidate's own DP fit instead of a new fit (public rule).

        With sensitive training rows, one split (no ``cv``) and a method whose
        release is always one of the candidates it fitted (``random``), the
        selected candidate's model was already fitted on exactly the training
        rows a refit would use, with the same estimator: releasing it is
        post-processing of outputs already paid for (every fit's DP release and
        the private selection), so the training role pays for no refit and each
        fit can have a larger share of the budget. With random stopping it is the
        selected *run's* own fit (the same candidate can run more than once):
        Papernot & Steinke's bound covers the best run's whole output, its model
        included.
        """
        return (self.refit and self.sensitive != "validation" and n_folds == 1 and method.name == "random"
                and settings.subsample is None)  # subsampled tuning: the runs saw a subset; the refit sees all

    def largest_fit_epsilon(self, n_validation: int, n_classes: int | None = None, *, rtol: float = 1e-4,
                            n_train: int | None = None) -> float:
        """The largest per-fit ``epsilon`` of the estimator whose training plan fits the budget -- without any data.

        With sensitive training rows every candidate fit is paid for up front at
        the estimator's own declaration, so the estimator's ``epsilon`` decides
        whether the plan fits the training budget (k Gaussian fits compose to
        about sqrt(k) times one; Laplace fits add up; random stopping costs a
        small multiple of one fit whatever the mean number of runs). This
        searches that ``epsilon`` by bisection on :meth:`privacy_plan`, so it
        is exactly the figure ``fit`` would accept (within the training budget,
        and within what the estimator's own ``accountant`` has left, if it
        holds one): set it with ``search.set_params(estimator__epsilon=...)``.

        Parameters
        ----------
        n_validation : int
            As for :meth:`privacy_plan` (public).
        n_classes : int or None, default=None
            As for :meth:`privacy_plan`.
        rtol : float in (0, 0.1], default=1e-4
            The returned value is within this relative distance below the
            largest affordable one (geometric bisection).
        n_train : int or None, default=None
            As for :meth:`privacy_plan`: the training rows every fit reads (one
            split), for estimators whose declared fit depends on it (the MLP,
            DP-SGD). Without it their size-free bound is planned, and the figure
            is smaller than what ``fit`` accepts on a known number of rows.

        Returns
        -------
        float
            An ``epsilon`` whose whole plan :meth:`privacy_plan` accepts.

        Raises
        ------
        InvalidParameterError
            If the training rows are public (``sensitive="validation"``), the
            estimator has no ``epsilon`` parameter, the search space sets it,
            or the configuration is invalid for another reason.
        BudgetExceededError
            If not even a per-fit epsilon a millionth of the training budget
            fits (e.g. too many fits for the budget): lower ``n_iter``.

        Notes
        -----
        **Privacy.** Nothing is read and nothing is spent: every figure comes
        from the configuration and the public validation size.
        """
        owner = "PrivateSearchCV.largest_fit_epsilon"
        tol = check_real(rtol, "rtol", low=0.0, high=0.1, closed="right", owner=owner)
        if self.sensitive == "validation":
            raise InvalidParameterError(
                f"{owner}: the training rows are public (sensitive='validation'), so fits spend nothing and any "
                "per-fit epsilon fits.")
        key = fit_epsilon_param(self.estimator)
        if key is None:
            raise InvalidParameterError(
                f"{owner}: {type(_final_step(self.estimator)[1]).__name__} has no 'epsilon' parameter to choose.")
        settings = self._validate_params()
        if key in settings.space.names:
            raise InvalidParameterError(f"{owner}: the search space sets the estimator's {key!r} itself.")
        top = self._role_budgets(settings)[1].epsilon

        def fits(eps: float) -> bool:
            trial = clone(self).set_params(**{f"estimator__{key}": eps})
            try:
                trial.privacy_plan(n_validation, n_classes, n_train=n_train)
            except PrivtuneError:
                return False
            return True

        lo = top * 1e-6
        trial = clone(self).set_params(**{f"estimator__{key}": lo})
        try:
            trial.privacy_plan(n_validation, n_classes, n_train=n_train)
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"{owner}: not even a per-fit epsilon of {lo:.3g} (a millionth of the training budget) fits this "
                f"plan: lower n_iter, or raise epsilon. ({exc})", requested=exc.requested, spent=exc.spent,
                ceiling=exc.ceiling) from None
        except InvalidParameterError:
            # An estimator calibrated to its epsilon may refuse a tiny one (DP-SGD's exact event at n_train: no
            # noise multiplier reaches it): the smallest power-of-ten share of the budget it accepts, if any
            lo = next((top * 10.0**-k for k in range(5, -1, -1) if fits(top * 10.0**-k)), None)
            if lo is None:
                raise
        # any other error at the smallest epsilon is a configuration error: raised above, as privacy_plan's
        if fits(top):
            return float(top)
        hi = top
        while hi > lo * (1.0 + tol):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return float(lo)

    def _largest_affordable(self, settings: SearchSettings, method: Any, candidates: Any, budget: Budget,
                            n_fits: int | None, refit_fit: bool, n_folds: int) -> tuple[float | None, str | None]:
        """The largest per-fit epsilon whose training plan both accountants accept, rounded down (public).

        The same plan as :meth:`_training_role` builds (the same fits, refit and
        random-stopping event), at a trial ``epsilon`` of the estimator, checked
        against the training budget and the estimator's own accountant: so the
        figure is what ``fit`` accepts (the validation role does not depend on
        the estimator's epsilon, except with ``cv`` and random stopping, where a
        run's event is the validation release's too: there no figure is given,
        :meth:`largest_fit_epsilon` answers from the validation size). Bisection
        to a relative 1e-4, as :meth:`largest_fit_epsilon`, then rounded down to
        four significant digits (and checked again).

        Returns
        -------
        (float or None, str or None)
            The figure, or None and why there is none (for the message).
        """
        key = fit_epsilon_param(self.estimator)
        if key is None:
            return None, None
        if any(str(n) == key or str(n).endswith("__" + key) for n in settings.space.names):
            return None, "the search space sets it: narrow its range"
        if settings.stopping and n_folds > 1:
            return None, "search.largest_fit_epsilon(n_validation) gives the largest this plan affords"
        own = settings.own_accountant

        def fits(eps: float) -> bool:
            try:
                trial = clone(self.estimator).set_params(**{key: eps})
                one_fit = per_fit_event(trial, settings.fit_rows)[0]
                if settings.subsample is not None:
                    tuning_fit = (per_fit_event(trial, settings.tuning_rows)[0] if declares_by_size(trial)
                                  else one_fit)
                    event = tuning_event(method, tuning_fit, settings.train_rows, settings.tuning_rows)
                else:
                    event = (method.selection_event(one_fit, label="best of a secret number of DP fits")
                             if settings.stopping else None)
                plan = training_plan(one_fit, n_fits=n_fits or 0, refit=refit_fit, stopping_event=event)
                return _plan_refusal(plan, Accountant(budget), own) is None
            except (PrivtuneError, ArithmeticError, ValueError, TypeError):
                return False

        top = budget.epsilon if math.isfinite(budget.epsilon) else 1e6
        lo = top * 1e-6
        if not fits(lo):
            others = any(kind == "dp" for _, kind, _ in training_steps(self.estimator))
            return None, (f"not even a per-fit epsilon of {lo:.3g} fits this plan: lower n_iter"
                          + (" or the epsilon of the pipeline's other DP steps" if others else "") + " first")
        if fits(top):
            return floor_digits(top), None
        hi = top
        while hi > lo * (1.0 + 1e-4):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        shown = floor_digits(lo)
        return (shown if shown > 0 and fits(shown) else lo), None

    def _training_role(self, settings: SearchSettings, method: Any, candidates: Any, budget: Budget,
                       n_folds: int = 1, ledger: Ledger | None = None
                       ) -> tuple[Accountant | None, list[Any], FitTickets | None]:
        """The training accountant, its whole plan (checked now, before any row is read) and the fits' tickets.

        ``ledger``: where the training accountant records its charges (a stored study's training ledger, empty:
        :func:`refuse_spent_training_study`); ``None``: in memory.

        Raises
        ------
        BudgetExceededError
            If the training budget cannot pay for the plan (nothing spent); the
            message names what to change.
        """
        if self.sensitive == "validation":
            return None, [], None
        one_fit, one_budget = settings.one_fit, settings.one_fit_budget
        check_candidate_costs(self.estimator, candidates, one_fit, one_budget, n_samples=settings.fit_rows)
        n_evals = method.max_evaluations(candidates)
        stopping = settings.stopping
        n_fits = None if stopping else n_evals * n_folds
        stopping_event = None
        if settings.subsample is not None:  # random stopping on a secret subset of m rows, amplified (_subsampling)
            check_candidate_costs(self.estimator, candidates, settings.tuning_fit, settings.tuning_fit_budget,
                                  n_samples=settings.tuning_rows)
            stopping_event = tuning_event(method, settings.tuning_fit, settings.train_rows, settings.tuning_rows)
        elif stopping and n_folds == 1:
            # Disjoint roles: against a training row each run is exactly as private as its fit (its noisy score
            # is a post-processing of the fitted model, the validation rows being fixed), so the training role's
            # bound is Papernot & Steinke's over runs of the fit alone, with the same secret K.
            stopping_event = method.selection_event(one_fit, label="best of a secret number of DP fits "
                                                                   "(Papernot & Steinke 2022)")
        elif stopping:  # cv: the roles overlap; the method's event covers a whole run (its fits and its score)
            stopping_event = method.plan(candidates)[0][0]
        refit_fit = self.refit and not self._reuses_selected_fit(settings, method, n_folds)
        plan = training_plan(one_fit, n_fits=n_fits or 0, refit=refit_fit, stopping_event=stopping_event)
        acc = Accountant(budget, ledger=ledger)
        own = settings.own_accountant
        if plan:
            refusal = _plan_refusal(plan, acc, own)
            if refusal is not None:
                exc, by_own = refusal
                largest, why = self._largest_affordable(settings, method, candidates, budget, n_fits, refit_fit,
                                                        n_folds)
                if by_own:  # the estimator's own accountant pays the same plan (charge_training_plan)
                    figure = (f" The largest per-fit epsilon it affords is {largest:.4g}: use "
                              f"{_fit_label(self.estimator, largest)}." if largest is not None else "")
                    text = ("The estimator's own accountant (its 'accountant' parameter), which a search on "
                            "sensitive training rows charges its whole training plan as well, cannot pay for it: "
                            f"{exc} Nothing was read or spent.{figure} Raise that accountant's budget, lower "
                            f"{_fit_label(self.estimator)}'s per-fit epsilon or n_iter, or give the estimator a "
                            "fresh accountant.")
                else:
                    text = unaffordable_message(exc, n_fits=n_fits, one_fit_budget=one_budget, budget=budget,
                                                refit=refit_fit, estimator=self.estimator, largest=largest,
                                                why_no_figure=why)
                err = BudgetExceededError(text, requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling)
                # for the command line, which says the same in its configuration's keys
                err.largest_fit_epsilon = largest  # type: ignore[attr-defined]
                err.accountant_refusal = str(exc)  # type: ignore[attr-defined]
                raise err from None
        return acc, plan, FitTickets(settings.tuning_fit_budget or one_budget, n_fits)
