"""The training role's accounting: tickets, the plan charged up front, and its checks (sensitive training rows).

What :mod:`privtune.model_selection._training` describes, in code: the
throw-away per-fit accountants (:class:`FitTickets`, :class:`PrepaidFitAccountant`),
the whole training plan (:func:`training_plan`) and its charge
(:func:`charge_training_plan`), the per-fit event an estimator declares
(:func:`per_fit_event`) and the checks that every candidate's fit stays within it
(:func:`check_candidate_costs`, :func:`check_candidate_plans`), all from public
quantities, before any row is read.
"""

from __future__ import annotations

import inspect
import math
import threading
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.accounting import (
    Accountant,
    Budget,
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    RenyiEvent,
    SelfComposedEvent,
    compose_events,
)
from privtune.exceptions import BudgetExceededError, InvalidParameterError, LedgerError, PrivtuneError
from privtune.model_selection._training_pipelines import (
    check_training_estimator,
    check_training_pipeline,
    is_pipeline,
    training_steps,
)


def refuse_spent_training_study(study: Any) -> None:
    """Refuse a stored study with sensitive training rows once it holds a charge (before anything is read or spent).

    Such a study is never resumed or reloaded: its DP fits would run again and draw new noise on the training rows,
    a release its ledger never paid for. One that holds no charge yet (a run refused before its first charge) is
    started again. Reads the two ledgers' lengths and the status: public quantities.

    Raises
    ------
    InvalidParameterError
        If either role's ledger holds a charge or the study is complete.
    """
    n = len(study.ledger.entries()) + len(study.training_ledger().entries())
    if n or study.status == "complete":
        raise InvalidParameterError(
            f"Study {study.name!r} in {study.path_for_messages!r} already holds {n} charge(s) of a search whose "
            f"training rows are sensitive (status: {study.status}). Such a study is not resumed or reloaded: its DP "
            "fits would run again and draw new noise on the training rows, a release its ledger never paid for. "
            "Nothing was read or spent now, and the file keeps what the study spent. To search again, name a new "
            "study and count both spendings.")


class PrepaidFitAccountant(Accountant):
    """The accountant one candidate fit charges when the training plan was paid up front (internal).

    Its budget is one declared fit (the estimator's ``_fit_privacy_event()`` at
    the estimator's delta), so a fit that charges more than it declared is
    refused before it reads any data.
    """


class FitTickets:
    """Hands out one :class:`PrepaidFitAccountant` per planned fit; thread-safe.

    Parameters
    ----------
    budget : Budget
        What one declared fit costs.
    max_fits : int or None
        The number of fits paid for up front (None: covered by a
        random-stopping event whose K is capped by construction).
    """

    def __init__(self, budget: Budget, max_fits: int | None) -> None:
        self.budget = budget
        self.max_fits = max_fits
        self._issued = 0
        self._lock = threading.Lock()

    def accountant(self) -> PrepaidFitAccountant:
        """A fresh per-fit accountant; an internal error past the planned count (never turned into a score)."""
        with self._lock:
            if self.max_fits is not None and self._issued >= self.max_fits:
                raise PrivtuneError(
                    f"Internal error: the search asked for more than the {self.max_fits} training fits it paid for "
                    "up front; nothing more was fitted.")
            self._issued += 1
        return PrepaidFitAccountant(self.budget)


class _RunKeeper:
    """Random stopping with sensitive training rows: the model of the best run so far (internal).

    The search's objective stores each run's fitted model in ``last`` (``None``
    when the fit raised); the method calls :meth:`keep_last_run` when the run
    just scored is the best so far. Only one model is held besides the one in
    progress, so nothing here grows with the secret number of runs K.
    """

    def __init__(self) -> None:
        self.last: Any = None
        self.kept: Any = None

    def keep_last_run(self) -> None:
        self.kept = self.last



def charge_training_plan(acc: Accountant, plan: list[tuple[PrivacyEvent, str]], own: Accountant | None = None,
                         *, validation_plan: list[tuple[PrivacyEvent, str]] | None = None) -> None:
    """Charge the training plan to the estimator's own accountant, then to the search's; before the first fit.

    Both were checked by :meth:`_TrainingRoleMixin._training_role`; each charge
    checks again (another search sharing ``own`` may have charged it since).

    * ``own`` first, in **one** ledger entry (the plan composed): either all of
      it is recorded or nothing, and if it cannot pay, nothing is recorded
      anywhere. It is the accountant other searches may share, so the likelier
      to refuse.
    * Then ``acc``, event by event, as before. If that fails (its ledger cannot
      record, e.g. a stored study's file), no row has been read and ``own``
      keeps a charge for fits that never ran: it records more than was spent,
      never less. The error says so.

    Parameters
    ----------
    acc : Accountant
        The search's training accountant (``training_accountant_``).
    plan : list of (PrivacyEvent, phase)
        :func:`training_plan`'s charges.
    own : Accountant or None
        The estimator's own accountant (:func:`estimator_accountant`).
    validation_plan : list of (PrivacyEvent, phase) or None
        The validation role's plan when ``own`` is also the search's
        validation accountant: the two plans are then checked together on it
        (sequential composition, a valid and conservative bound), so that one
        it cannot pay for is refused before either is charged.

    Raises
    ------
    BudgetExceededError
        If ``own`` cannot pay (nothing spent anywhere), or ``acc`` cannot (then
        ``own`` keeps its charge; nothing was read).
    LedgerError
        If a ledger cannot record a charge (likewise).
    """
    if not plan:
        return
    events = tuple(ev for ev, _ in plan)
    if own is not None:
        if validation_plan:
            both = events + tuple(ev for ev, _ in validation_plan)
            try:
                own.check(ComposedEvent(events=both, relation=own.relation))
            except BudgetExceededError as exc:
                raise BudgetExceededError(
                    "The estimator's own accountant is also the search's accountant: it cannot pay for both the "
                    f"training plan and the validation releases. {exc} Give the estimator and the search separate "
                    "accountants (the roles' rows are disjoint, so their guarantees are not added), or raise its "
                    "budget.", requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling) from None
        label = f"the training plan of a PrivateSearchCV ({', '.join(phase for _, phase in plan)})"
        try:
            own.spend(ComposedEvent(events=events, relation=own.relation, label=label),
                      phase="PrivateSearchCV training plan", role="training")
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"The estimator's own accountant cannot pay for the search's training plan: {exc} Nothing was read, "
                "and nothing was charged to the search's training accountant either.", requested=exc.requested,
                spent=exc.spent, ceiling=exc.ceiling) from None
    try:
        reservation = acc.reserve(events)
        for ev, phase in plan:
            acc.spend(ev, phase=phase, role="training", reservation=reservation)
    except (BudgetExceededError, LedgerError) as exc:
        if own is None:
            raise
        note = (f"{exc} The estimator's own accountant was charged the whole training plan just before: it keeps "
                "that charge although no fit ran and no row was read (it records more than was spent, never less).")
        if isinstance(exc, BudgetExceededError):
            raise BudgetExceededError(note, requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling) from exc
        raise LedgerError(note) from exc


def declares_by_size(estimator: Any) -> bool:
    """Whether the estimator's (or a pipeline's DP steps') declared fit depends on the number of rows (public).

    Such an estimator's ``_fit_privacy_event`` takes ``n_samples`` and, without it, returns a size-free bound
    (privtune's DP-SGD and MLP classifiers: their sampling rate and step count follow ``n``).
    """
    if is_pipeline(estimator):
        return any(declares_by_size(step) for _, kind, step in training_steps(estimator) if kind in ("dp", "final"))
    method = getattr(estimator, "_fit_privacy_event", None)
    if method is None:
        return False
    try:
        return "n_samples" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def per_fit_event(estimator: Any, n_samples: int | None = None) -> tuple[PrivacyEvent, Budget]:
    """The declared event of one fit and its (epsilon, delta) at the estimator's delta (public).

    For a pipeline (:func:`training_steps`): its DP steps' events in order, composed
    (one step: that step's own), at the sum of the steps' deltas. ``n_samples``: the number of rows every fit
    reads, when public and fixed (one split); an estimator whose declaration depends on it
    (:func:`declares_by_size`) then declares the exact event of a fit on that many rows.
    """
    if is_pipeline(estimator):
        parts = [per_fit_event(step, n_samples) for _, kind, step in training_steps(estimator)
                 if kind in ("dp", "final")]
        if len(parts) == 1:
            return parts[0]
        names = [name for name, kind, _ in training_steps(estimator) if kind in ("dp", "final")]
        event = ComposedEvent(events=tuple(ev for ev, _ in parts), relation=parts[-1][0].relation,
                              label=f"one fit of the pipeline's DP steps ({', '.join(names)})")
        delta = math.fsum(b.delta for _, b in parts)
        return event, compose_events([event], delta=delta)
    event = (estimator._fit_privacy_event(n_samples=int(n_samples))
             if n_samples is not None and declares_by_size(estimator) else estimator._fit_privacy_event())
    if not isinstance(event, PrivacyEvent):
        raise InvalidParameterError(
            f"{type(estimator).__name__}._fit_privacy_event() must return a privtune PrivacyEvent.")
    fixed = event.epsilon_delta()
    delta = float(estimator.get_params(deep=False).get("delta") or 0.0) if fixed is None else fixed[1]
    budget = compose_events([event], delta=delta) if fixed is None else Budget(*fixed)
    return event, budget


def _bounded_by(event: PrivacyEvent, one_fit: PrivacyEvent, ticket: PrepaidFitAccountant) -> bool:
    """Whether ``one_fit`` bounds ``event`` in every composition, not only at one (epsilon, delta) (public).

    The plan composes ``n_fits`` copies of ``one_fit``, so a candidate's fit is
    covered only if ``one_fit`` *dominates* it: every privacy profile (or every
    Rényi order, for curves composed in RDP) of the candidate is at most
    ``one_fit``'s, and adaptive composition of dominated mechanisms is then
    bounded by composing the dominating one (Zhu, Dong & Wang 2022, Thm. 10;
    Mironov 2017, Prop. 1 for RDP). Costing at most one fit at the
    estimator's delta is not enough: a pure-epsilon Laplace fit at the
    epsilon of one Gaussian fit composes far worse than Gaussian fits do
    (eight of them: 7.9 against 3.1). The rules, each exact:

    * the same event;
    * a Gaussian (same relation and kind) with at least ``one_fit``'s noise
      multiplier;
    * any event when ``one_fit`` is a fixed (epsilon, delta) or Laplace
      guarantee and the candidate satisfies it: the (epsilon, delta) pair's
      profile is the largest of every mechanism with that guarantee;
    * a Rényi curve at most ``one_fit``'s at each of its orders;
    * for a pipeline's composed event, the same number of steps, each the same
      event or a Gaussian with at least the noise multiplier of ``one_fit``'s
      (the candidate's composition is then a post-processing of ``one_fit``'s,
      step by step).

    Anything else is refused by the caller (it may be cheaper, but privtune
    cannot show it).
    """
    if event == one_fit:
        return True
    if event.relation != one_fit.relation or event.is_conditional() and not one_fit.is_conditional():
        return False
    if isinstance(one_fit, ComposedEvent):  # a pipeline's DP steps: step by step, by the exact rules only
        return (isinstance(event, ComposedEvent) and len(event.events) == len(one_fit.events)
                and all(e == o or (isinstance(o, GaussianEvent) and isinstance(e, GaussianEvent)
                                   and e.vector == o.vector and e.relation == o.relation
                                   and e.noise_multiplier >= o.noise_multiplier)
                        for e, o in zip(event.events, one_fit.events, strict=True)))
    if isinstance(one_fit, GaussianEvent):
        return (isinstance(event, GaussianEvent) and event.vector == one_fit.vector
                and event.noise_multiplier >= one_fit.noise_multiplier)
    if isinstance(one_fit, (EpsilonDeltaEvent, LaplaceEvent)):
        if isinstance(one_fit, LaplaceEvent) and not isinstance(event, LaplaceEvent):
            return False  # a Laplace fit is composed on its own curve, tighter than (epsilon, 0)'s
        try:
            ticket.check(event)
        except BudgetExceededError:
            return False
        return True
    if isinstance(one_fit, RenyiEvent) and isinstance(event, RenyiEvent):
        bound = np.asarray(event.rdp_at(np.asarray(one_fit.orders)), dtype=float)
        return bool(np.all(bound <= np.asarray(one_fit.epsilons, dtype=float)))
    return False


def check_candidate_costs(estimator: Any, candidates: Any, one_fit: PrivacyEvent, one_budget: Budget,
                          *, owner: str = "PrivateSearchCV", n_samples: int | None = None) -> None:
    """Refuse a search space holding a candidate the training plan does not cover (public, nothing spent).

    The training plan pays for every fit at the estimator's own declaration,
    and each fit charges a :class:`PrepaidFitAccountant` of exactly that
    budget. A space over a hyperparameter that prices the fit (the
    estimator's ``epsilon``, ``delta``, ``noise``, ``solver``, ...) could hold
    a candidate whose fit costs more: more than one ticket (the ticket would
    refuse it and abort the search, and with a raw-score method whether that
    candidate is ever fitted depends on the sensitive validation rows), or no
    more than one ticket but more than the plan once composed (see
    :func:`_bounded_by`). A space over what the guarantee itself rests on
    (``clip``, the declared label set) could hold a candidate whose fit reads
    or refuses rows by value. So every candidate is checked now, from the
    hyperparameters alone, as the estimator itself was
    (:func:`check_training_estimator`).

    Raises
    ------
    InvalidParameterError
        If some candidate's configuration does not protect training rows, or
        its declared fit is not covered by the estimator's own declaration.
    """
    name = type(estimator).__name__
    ticket = PrepaidFitAccountant(one_budget)
    cleared: set[Any] = set()
    for params in candidates.params:
        candidate = clone(estimator).set_params(**params)
        try:
            check_training_estimator(candidate, owner=owner)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{exc} (The search space's candidate {params} sets it.)") from None
        event = per_fit_event(candidate, n_samples)[0]
        try:
            if event == one_fit or event in cleared:
                continue
        except TypeError:  # an unhashable event: checked every time
            pass
        if not _bounded_by(event, one_fit, ticket):
            declared = per_fit_event(candidate, n_samples)[1]
            raise InvalidParameterError(
                f"With sensitive training rows, every candidate fit is paid for at {name}'s own declaration "
                f"(epsilon={one_budget.epsilon:.4g}, delta={one_budget.delta:.3g} for one fit, composed over the "
                f"search's fits), but the candidate {params} declares a fit of epsilon={declared.epsilon:.4g}, "
                f"delta={declared.delta:.3g} that this declaration does not bound once composed (a different kind "
                "of noise, or more of it). Search over hyperparameters that do not price the fit, or set the "
                "estimator's own privacy parameters to the largest the space allows, with the same noise and "
                "solver.") from None
        try:
            cleared.add(event)
        except TypeError:
            pass


def check_candidate_plans(estimator: Any, candidates: Any, train_sizes: Any, n_features: int, *,
                          like: Any = None, fit_params: Any = None) -> None:
    """Build every candidate's training plan from public sizes before the search charges anything.

    A DP estimator that offers ``_check_fit_plan(n_samples, n_features)`` (privtune's
    margin classifiers and ``DPMLPClassifier``) refuses there a configuration that no exact noise grid or
    float can hold; called by its own ``fit`` that refusal spends nothing, but inside
    a search every fit is prepaid, so it would come after the training role's
    charge (public parameters only, so no leak; the plan's budget would be lost).
    ``train_sizes``: every training-part size a fit can see (folds, the refit).
    A pipeline is checked step by step (:func:`check_training_pipeline`, on a
    public probe row like ``like``, the training table, or zeros of
    ``n_features``; its fit parameters), each DP step at the width it receives.

    Raises
    ------
    InvalidParameterError
        The first candidate's refusal, naming the candidate.
    """
    pipeline = is_pipeline(estimator)
    if not pipeline and not callable(getattr(estimator, "_check_fit_plan", None)):
        return
    like = np.zeros((1, int(n_features))) if like is None else like
    seen: set[Any] = set()
    for params in candidates.params:
        candidate = clone(estimator).set_params(**params)
        key = repr(sorted(candidate.get_params(deep=pipeline).items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        try:
            if pipeline:
                widths = check_training_pipeline(candidate, like, fit_params)
                planned = [(step, w) for (_, kind, step), w in zip(training_steps(candidate), widths, strict=True)
                           if kind in ("dp", "final")]
            else:
                planned = [(candidate, int(n_features))]
            for step, width in planned:
                if callable(getattr(step, "_check_fit_plan", None)):
                    for n in sorted(set(train_sizes)):
                        step._check_fit_plan(int(n), int(width))
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{exc} (The search space's candidate {params} sets it.)") from None


def training_plan(one_fit: PrivacyEvent, *, n_fits: int, refit: bool,
                  stopping_event: PrivacyEvent | None = None) -> list[tuple[PrivacyEvent, str]]:
    """The training role's charges, in order, from public quantities only.

    Parameters
    ----------
    one_fit : PrivacyEvent
        One fit's declared event.
    n_fits : int
        Candidate fits of the search (ignored with ``stopping_event``).
    refit : bool
        Whether ``best_estimator_`` is refitted on the training rows.
    stopping_event : PrivacyEvent or None
        Random stopping: the search's ``RepeatAndSelectEvent``, which covers
        every run's fit whatever K is.

    Returns
    -------
    list of (PrivacyEvent, phase)
    """
    plan: list[tuple[PrivacyEvent, str]] = []
    if stopping_event is not None:
        plan.append((stopping_event, "selection (random stopping)"))
    elif n_fits > 0:
        plan.append((SelfComposedEvent(event=one_fit, count=n_fits, relation=one_fit.relation,
                                       label=f"{n_fits} candidate fits"), "fits"))
    if refit:
        plan.append((one_fit, "refit"))
    return plan


def floor_digits(x: float, digits: int = 4) -> float:
    """``x`` rounded *down* to ``digits`` significant digits (a printed budget a user copies must not round up)."""
    if not (math.isfinite(x) and x > 0):
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - (digits - 1))
    return float(f"{math.floor(x / step) * step:.{digits}g}")


def _final_step(estimator: Any) -> tuple[str, Any]:
    """``("", estimator)``, or a pipeline's last step ``(name, step)``."""
    if is_pipeline(estimator) and estimator.steps:
        return estimator.steps[-1][0], estimator.steps[-1][1]
    return "", estimator


def fit_epsilon_param(estimator: Any) -> str | None:
    """The name (for ``set_params``) of the parameter that prices one fit: ``"epsilon"`` (a pipeline's last
    step's: ``"dplogisticregression__epsilon"``); None if there is none."""
    name, final = _final_step(estimator)
    if not hasattr(final, "get_params") or "epsilon" not in final.get_params(deep=False):
        return None
    return f"{name}__epsilon" if name else "epsilon"


def _fit_label(estimator: Any, epsilon: Any = None) -> str:
    """``DPLogisticRegression(epsilon=1.0)``: the estimator (a pipeline's last step) as the user writes it."""
    _, final = _final_step(estimator)
    if fit_epsilon_param(estimator) is None:
        label = type(final).__name__
    else:
        value = final.get_params(deep=False)["epsilon"] if epsilon is None else epsilon
        label = f"{type(final).__name__}(epsilon={value!r})"
    if is_pipeline(estimator):
        before = [_fit_label(step) for _, kind, step in training_steps(estimator) if kind == "dp"]
        if before:
            label += f" (after {', '.join(before)} in the pipeline)"
    return label


def unaffordable_message(exc: Exception, *, n_fits: int | None, one_fit_budget: Budget, budget: Budget,
                         refit: bool = True, estimator: Any = None, largest: float | None = None,
                         why_no_figure: str | None = None) -> str:
    """A refusal in Python's vocabulary: what the plan is, the per-fit epsilon set, the largest that fits (public).

    Parameters
    ----------
    largest : float or None
        The largest per-fit ``epsilon`` whose plan fits (already rounded down
        and checked), or None with ``why_no_figure`` saying why there is none.
    """
    label = _fit_label(estimator) if estimator is not None else "the estimator"
    what = (f"{n_fits} candidate fits" if n_fits is not None else "the randomly stopped runs (a fit each)")
    plan = (f"{what}{' and the refit' if refit else ''} of {label} (each an (epsilon={one_fit_budget.epsilon:.4g}, "
            f"delta={one_fit_budget.delta:.3g})-DP fit)")
    msg = (f"The training role cannot pay for its plan within the training budget epsilon={budget.epsilon:.4g}, "
           f"delta={budget.delta:.3g}: {plan}. {str(exc).replace(' Nothing was spent.', '')}")
    key = fit_epsilon_param(estimator) if estimator is not None else None
    others = "lower n_iter" + (", set refit=False" if refit else "") + ", or raise PrivateSearchCV's epsilon"
    if largest is not None and key is not None:
        msg += (f" The largest per-fit epsilon this plan affords is {largest:.4g}: use "
                f"{_fit_label(estimator, largest)} (search.set_params(estimator__{key}={largest:.4g})), or {others}.")
    else:
        msg += f" Lower {label}'s per-fit epsilon{f' ({why_no_figure})' if why_no_figure else ''}, or {others}."
    return msg + " Nothing was read or spent."


def _plan_refusal(plan: list[tuple[PrivacyEvent, str]], acc: Accountant,
                  own: Accountant | None) -> tuple[BudgetExceededError, bool] | None:
    """Why the training plan cannot be paid: (the refusal, whether the estimator's own accountant refused), or None.

    Checks only (nothing is charged): the training budget first, then the
    estimator's own accountant, as :func:`charge_training_plan` will charge them.
    """
    events = tuple(ev for ev, _ in plan)
    try:
        acc.check(ComposedEvent(events=events))
    except BudgetExceededError as exc:
        return exc, False
    if own is not None:
        try:
            own.check(ComposedEvent(events=events, relation=own.relation))
        except BudgetExceededError as exc:
            return exc, True
    return None


def is_finite_budget(budget: Budget) -> bool:
    return math.isfinite(budget.epsilon)
