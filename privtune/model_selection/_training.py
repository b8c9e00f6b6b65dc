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

With public training rows (``sensitive="validation"``) no fit reads a
sensitive row, and the estimator's accountants (nested ones too) are charged
nothing: the search fits clones without them, serially or in workers alike,
and gives them back on ``best_estimator_`` (:func:`public_fit_accountants`).
"""

from __future__ import annotations

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
from privtune.accounting.ledger import Ledger
from privtune.base import PrivacyTags, get_privacy_tags
from privtune.exceptions import BudgetExceededError, InvalidParameterError, LedgerError, PrivtuneError
from privtune.utils._validation import check_real

__all__ = ["PrepaidFitAccountant", "FitTickets", "charge_training_plan", "check_candidate_costs",
           "check_training_estimator", "estimator_accountant", "per_fit_event", "public_fit_accountants",
           "refuse_spent_training_study", "training_plan", "without_accountants"]


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


def check_training_estimator(estimator: Any, *, owner: str = "PrivateSearchCV") -> PrivacyTags:
    """Refuse an estimator whose declared guarantee does not cover sensitive training rows.

    Returns
    -------
    PrivacyTags

    Raises
    ------
    InvalidParameterError
        If the estimator declares no :class:`~privtune.base.PrivacyTags`, covers
        labels only, can refuse data because of a row's value, leaves its label
        set undeclared, or declares no per-fit privacy event.
    """
    name = type(estimator).__name__
    tags = get_privacy_tags(estimator)
    if tags is None:
        raise InvalidParameterError(
            f"{owner}: the training data is declared sensitive, but {name} declares no privacy guarantee of its own "
            "(no __privtune_tags__): fitting it would leak its training rows. Use a privtune DP estimator (e.g. "
            "privtune.linear_model.DPLogisticRegression), or sensitive='validation' if the training data is public.")
    if tags.covers != "rows":
        raise InvalidParameterError(
            f"{owner}: {name}'s guarantee covers the labels only (its features are public by assumption), so it "
            "cannot protect sensitive training rows: the features of every training row would leak. Use it with "
            "sensitive='validation' (public training data), or a DP estimator whose guarantee covers whole rows.")
    params = estimator.get_params(deep=False)
    if tags.raises_on_rows:
        raise InvalidParameterError(
            f"{owner}: {name}'s configuration makes fit refuse data because of a row's values (e.g. clip='raise'), "
            "so whether a fit fails would depend on one sensitive training row. Use clip='rows' (rows are clipped "
            "to the declared bound instead).")
    if tags.classes_param is not None and params.get(tags.classes_param) is None:
        raise InvalidParameterError(
            f"{owner}: with sensitive training data, declare {name}'s label set ({tags.classes_param}=[...]): "
            "otherwise each fit reads the set of labels off the sensitive rows.")
    if "accountant" not in params:
        raise InvalidParameterError(
            f"{owner}: {name} declares privacy tags but takes no 'accountant' parameter to charge its fits to.")
    if not callable(getattr(estimator, "_fit_privacy_event", None)):
        raise InvalidParameterError(
            f"{owner}: {name} declares no per-fit privacy event (_fit_privacy_event), so the search cannot charge "
            "its training fits up front.")
    return tags


def _sets_accountant(name: str) -> bool:
    return name == "accountant" or name.endswith("__accountant")


def public_fit_accountants(estimator: Any, space_names: Any, *, owner: str = "PrivateSearchCV") -> dict[str, Any]:
    """The accountants on an estimator whose training rows are public, which the search leaves uncharged (public).

    With ``sensitive="validation"`` the training rows are public: a fit reads
    no sensitive row, so there is nothing to charge for it. The search fits
    clones without these accountants (:func:`without_accountants`; each DP fit
    then charges a throw-away accountant of its own) and gives them back on
    ``best_estimator_``. Charging them fit by fit made serial and parallel
    runs differ (a worker process holds a read-only copy of an in-memory
    accountant and raised ``LedgerError``) and made the ledger count the fits,
    which with random stopping is the secret number of runs.

    Parameters
    ----------
    estimator : estimator
        The search's estimator.
    space_names : iterable of str
        The hyperparameters of the search space.

    Returns
    -------
    dict of {str: object}
        Every ``accountant`` parameter (``accountant`` or ``<step>__accountant``,
        from ``get_params(deep=True)``) that is not None, by name.

    Raises
    ------
    InvalidParameterError
        If the search space sets an ``accountant``: each candidate's fit would
        charge the accountant it names, which the search cannot account for.
    """
    setters = sorted(n for n in space_names if _sets_accountant(str(n)))
    if setters:
        raise InvalidParameterError(
            f"{owner}: the search space sets {', '.join(setters)}. The fits of a search read no sensitive row when "
            "the training rows are public (sensitive='validation'), so no accountant of theirs is charged; with "
            "sensitive training rows every fit is paid for up front. Remove it from the search space (and give "
            "the estimator one accountant with sensitive='both' if the training rows are sensitive). Nothing was "
            "read or spent.")
    try:
        params = estimator.get_params(deep=True)
    except Exception:  # noqa: BLE001 - an estimator without deep params: look at its own only
        params = estimator.get_params(deep=False)
    return {name: value for name, value in params.items() if _sets_accountant(str(name)) and value is not None}


def without_accountants(estimator: Any, accountants: dict[str, Any]) -> Any:
    """A clone of ``estimator`` with each of ``accountants`` set to None (``estimator`` itself when there are none)."""
    if not accountants:
        return estimator
    return clone(estimator).set_params(**{name: None for name in accountants})


def estimator_accountant(estimator: Any, space_names: Any, *, owner: str = "PrivateSearchCV") -> Accountant | None:
    """The accountant the user gave a training-sensitive search's estimator, which the search charges too (public).

    With sensitive training rows every fit charges a throw-away prepaid
    accountant in place of the estimator's ``accountant`` (see the module), so
    the search charges that accountant the whole training plan itself, up
    front (:func:`charge_training_plan`). It is the object on the user's
    estimator: :func:`sklearn.base.clone` hands every clone that same
    :class:`~privtune.accounting.Accountant` (its ``__deepcopy__`` returns
    itself), so the clones cannot be charged in its place.

    Parameters
    ----------
    estimator : estimator
        The search's estimator (``PrivateSearchCV.estimator``), already checked
        by :func:`check_training_estimator` (a ``Pipeline`` is refused there:
        it declares no guarantee of its own).
    space_names : iterable of str
        The hyperparameters of the search space.

    Returns
    -------
    Accountant or None
        ``None`` when the estimator holds no accountant.

    Raises
    ------
    InvalidParameterError
        If the search space sets an ``accountant`` (each candidate would name
        its own, and none of them is what its fit charges), or the estimator's
        ``accountant`` is not a privtune :class:`~privtune.accounting.Accountant`
        (the search could not charge it the plan).
    """
    setters = sorted(n for n in space_names if _sets_accountant(str(n)))
    if setters:
        raise InvalidParameterError(
            f"{owner}: the search space sets {', '.join(setters)}. With sensitive training rows every fit is paid "
            "for up front, charged to the search's training accountant and to the estimator's own accountant, so a "
            "candidate's accountant would never be the one its fit charges. Give the estimator one accountant "
            "(estimator.set_params(accountant=...)) and remove it from the search space. Nothing was read or spent.")
    own = estimator.get_params(deep=False).get("accountant")
    if own is None:
        return None
    if not isinstance(own, Accountant):
        raise InvalidParameterError(
            f"{owner}: {type(estimator).__name__}'s 'accountant' is a {type(own).__name__}, not a privtune "
            "Accountant, so the search cannot charge it the training plan (every fit of a search on sensitive "
            "training rows is paid for up front). Pass a privtune.accounting.Accountant, or accountant=None.")
    return own


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


def per_fit_event(estimator: Any) -> tuple[PrivacyEvent, Budget]:
    """The declared event of one fit and its (epsilon, delta) at the estimator's delta (public)."""
    event = estimator._fit_privacy_event()
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
    * a Rényi curve at most ``one_fit``'s at each of its orders.

    Anything else is refused by the caller (it may be cheaper, but privtune
    cannot show it).
    """
    if event == one_fit:
        return True
    if event.relation != one_fit.relation or event.is_conditional() and not one_fit.is_conditional():
        return False
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
                          *, owner: str = "PrivateSearchCV") -> None:
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
        event = candidate._fit_privacy_event()
        try:
            if event == one_fit or event in cleared:
                continue
        except TypeError:  # an unhashable event: checked every time
            pass
        if not _bounded_by(event, one_fit, ticket):
            declared = per_fit_event(candidate)[1]
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


def check_candidate_plans(estimator: Any, candidates: Any, train_sizes: Any, n_features: int) -> None:
    """Build every candidate's training plan from public sizes before the search charges anything.

    A DP estimator that offers ``_check_fit_plan(n_samples, n_features)`` (privtune's
    margin classifiers and ``DPMLPClassifier``) refuses there a configuration that no exact noise grid or
    float can hold; called by its own ``fit`` that refusal spends nothing, but inside
    a search every fit is prepaid, so it would come after the training role's
    charge (public parameters only, so no leak; the plan's budget would be lost).
    ``train_sizes``: every training-part size a fit can see (folds, the refit).

    Raises
    ------
    InvalidParameterError
        The first candidate's refusal, naming the candidate.
    """
    if not callable(getattr(estimator, "_check_fit_plan", None)):
        return
    seen: set[Any] = set()
    for params in candidates.params:
        candidate = clone(estimator).set_params(**params)
        key = repr(sorted(candidate.get_params(deep=False).items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        for n in sorted(set(train_sizes)):
            try:
                candidate._check_fit_plan(int(n), int(n_features))
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


def fit_epsilon_param(estimator: Any) -> str | None:
    """The name (for ``set_params``) of the parameter that prices one fit, ``"epsilon"``; None if there is none."""
    return "epsilon" if "epsilon" in estimator.get_params(deep=False) else None


def _fit_label(estimator: Any, epsilon: Any = None) -> str:
    """``DPLogisticRegression(epsilon=1.0)``: the estimator as the user writes it, at its or the given epsilon."""
    key = fit_epsilon_param(estimator)
    if key is None:
        return type(estimator).__name__
    value = estimator.get_params(deep=False)[key] if epsilon is None else epsilon
    return f"{type(estimator).__name__}({key}={value!r})"


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


class _TrainingRoleMixin:
    """PrivateSearchCV's training role: which fits it pays for, and the plan charged before any row is read."""

    def _reuses_selected_fit(self, cfg: dict[str, Any], method: Any, n_folds: int) -> bool:
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
        return self.refit and self.sensitive != "validation" and n_folds == 1 and method.name == "random"

    def largest_fit_epsilon(self, n_validation: int, n_classes: int | None = None, *, rtol: float = 1e-4) -> float:
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
        if "epsilon" not in self.estimator.get_params(deep=False):
            raise InvalidParameterError(
                f"{owner}: {type(self.estimator).__name__} has no 'epsilon' parameter to choose.")
        cfg = self._validate_params()
        if "epsilon" in cfg["space"].names:
            raise InvalidParameterError(f"{owner}: the search space sets the estimator's 'epsilon' itself.")
        top = self._role_budgets(cfg)[1].epsilon

        def fits(eps: float) -> bool:
            trial = clone(self).set_params(estimator__epsilon=eps)
            try:
                trial.privacy_plan(n_validation, n_classes)
            except PrivtuneError:
                return False
            return True

        lo = top * 1e-6
        trial = clone(self).set_params(estimator__epsilon=lo)
        try:
            trial.privacy_plan(n_validation, n_classes)
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"{owner}: not even a per-fit epsilon of {lo:.3g} (a millionth of the training budget) fits this "
                f"plan: lower n_iter, or raise epsilon. ({exc})", requested=exc.requested, spent=exc.spent,
                ceiling=exc.ceiling) from None
        # any other error at the smallest epsilon is a configuration error: raised above, as privacy_plan's
        if fits(top):
            return float(top)
        hi = top
        while hi > lo * (1.0 + tol):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return float(lo)

    def _largest_affordable(self, cfg: dict[str, Any], method: Any, candidates: Any, budget: Budget,
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
        if any(str(n) == key or str(n).endswith("__" + key) for n in cfg["space"].names):
            return None, "the search space sets it: narrow its range"
        if cfg["stopping"] and n_folds > 1:
            return None, "search.largest_fit_epsilon(n_validation) gives the largest this plan affords"
        own = cfg.get("own_accountant")

        def fits(eps: float) -> bool:
            try:
                trial = clone(self.estimator).set_params(**{key: eps})
                one_fit = per_fit_event(trial)[0]
                event = (method.selection_event(one_fit, label="best of a secret number of DP fits")
                         if cfg["stopping"] else None)
                plan = training_plan(one_fit, n_fits=n_fits or 0, refit=refit_fit, stopping_event=event)
                return _plan_refusal(plan, Accountant(budget), own) is None
            except (PrivtuneError, ArithmeticError, ValueError, TypeError):
                return False

        top = budget.epsilon if math.isfinite(budget.epsilon) else 1e6
        lo = top * 1e-6
        if not fits(lo):
            return None, (f"not even a per-fit epsilon of {lo:.3g} fits this plan: lower n_iter first")
        if fits(top):
            return floor_digits(top), None
        hi = top
        while hi > lo * (1.0 + 1e-4):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        shown = floor_digits(lo)
        return (shown if shown > 0 and fits(shown) else lo), None

    def _training_role(self, cfg: dict[str, Any], method: Any, candidates: Any, budget: Budget,
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
        one_fit, one_budget = cfg["one_fit"], cfg["one_fit_budget"]
        check_candidate_costs(self.estimator, candidates, one_fit, one_budget)
        n_evals = method.max_evaluations(candidates)
        stopping = cfg["stopping"]
        n_fits = None if stopping else n_evals * n_folds
        stopping_event = None
        if stopping and n_folds == 1:
            # Disjoint roles: against a training row each run is exactly as private as its fit (its noisy score
            # is a post-processing of the fitted model, the validation rows being fixed), so the training role's
            # bound is Papernot & Steinke's over runs of the fit alone, with the same secret K.
            stopping_event = method.selection_event(one_fit, label="best of a secret number of DP fits "
                                                                   "(Papernot & Steinke 2022)")
        elif stopping:  # cv: the roles overlap; the method's event covers a whole run (its fits and its score)
            stopping_event = method.plan(candidates)[0][0]
        refit_fit = self.refit and not self._reuses_selected_fit(cfg, method, n_folds)
        plan = training_plan(one_fit, n_fits=n_fits or 0, refit=refit_fit, stopping_event=stopping_event)
        acc = Accountant(budget, ledger=ledger)
        own = cfg.get("own_accountant")
        if plan:
            refusal = _plan_refusal(plan, acc, own)
            if refusal is not None:
                exc, by_own = refusal
                largest, why = self._largest_affordable(cfg, method, candidates, budget, n_fits, refit_fit, n_folds)
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
        return acc, plan, FitTickets(one_budget, n_fits)
