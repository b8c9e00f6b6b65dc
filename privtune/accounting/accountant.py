"""The privacy accountant: check before spending, record before touching data.

:class:`Accountant` holds a :class:`~privtune.accounting.Budget`, a neighbouring
relation and a :class:`~privtune.accounting.ledger.Ledger`. Its protocol:

1. ``check(event)`` -- would the ledger plus ``event`` stay within the budget?
   Raises :class:`~privtune.exceptions.BudgetExceededError` otherwise, changing
   nothing. Use it to validate a whole planned search before any data is read.
2. ``spend(event)`` -- check, then append the event to the ledger *durably*, then
   return. Call it **before** the data access it pays for (write-ahead).

How the total is bounded
------------------------
For the events in the ledger, the accountant computes every valid bound it can
and keeps the smallest epsilon (each is a valid guarantee for the same
composed mechanism, so the minimum is one too):

* **basic** composition: the sums of the events' fixed (epsilon, delta)
  (available when every event has one);
* **RDP** through ``dp_accounting.rdp.RdpAccountant`` for every event it can
  bound, plus basic composition for the others, converted at the delta left
  by the latter;
* **PLD** through ``dp_accounting``'s privacy-loss distributions (pessimistic
  discretisation), likewise;
* **exact Gaussian**: unsampled Gaussian events compose exactly into one
  Gaussian mechanism with ``1/nm**2 = sum 1/nm_i**2`` (Dong, Roth & Su 2019),
  whose exact privacy curve (Balle & Wang 2018) gives the epsilon; the other
  events by basic composition.

Events whose guarantee is *conditional* (Kusner et al. Alg. 1/2) are only ever
composed by basic composition, and make the total conditional
(:attr:`Accountant.guarantee`).

The PLD bound is the tightest but costs tens of milliseconds per composition,
so ``check`` first tries the cheap bounds and computes the PLD one (lazily and
incrementally) only when they do not fit; ``spent`` always uses all three.

Adaptivity. Each bound above is a composition theorem for a sequence of events
(privacy curves) fixed before the first data access. *Which* data each
mechanism reads may still be chosen from earlier outputs (which candidate a
noisy observation scores): composing fixed privacy curves, or mechanisms each
dominated by one, holds under adaptive choice of the mechanisms (Dong, Roth &
Su 2019 for trade-off functions; Zhu, Dong & Wang 2022, Thm. 10 for dominating
pairs, hence PLDs; Mironov 2017, Prop. 1 for RDP). privtune charges an
accountant only in that setting:

* every search fixes its events before it reads a row: its whole plan is
  checked, and reserved (:meth:`reserve`), before the first access, from
  public quantities only, and a resumed study replays the same plan;
* a training plan charges copies of one fit event, fixed up front, that
  dominates every candidate's fit;
* the line-search trainers adapt their per-step budgets inside a Rényi or zCDP
  filter of their own at one order fixed in advance (Feldman & Zrnic 2021,
  Thm. 3.1) and charge its cap here, once, before the run;
* a callback that stops ``noisy-ucb`` early does not change its plan: the
  observations it will not run are charged at the stop, as planned (the same
  events, phase ``"observations_not_run"``), so the ledger holds the plan
  fixed up front, whose total bounds the stopped run (each planned slot holds
  a mechanism dominated by its event; after the stop, a constant).

So within a search, :meth:`check` and :meth:`spend` compare a composition of
events fixed in advance with the budget, and every bound, PLD included, is
valid. The accountant is **not** a privacy *filter* for adaptively chosen
privacy parameters (Rogers et al. 2016) -- a later event's parameters (an
epsilon, a noise multiplier, whether to run it at all) chosen from earlier
outputs, as when you share one accountant among several searches or fits and
set each after seeing the results of the ones before. Filters are proven for
basic composition (Rogers et al. 2016), for Rényi DP at one order fixed in
advance (Feldman & Zrnic 2021) and for Gaussian mechanisms in Gaussian DP
(Smith & Thakurta 2022), but not for PLD composition in general, nor for the
smallest of several bounds, or of several Rényi orders chosen after the fact,
which ``method="auto"`` and ``method="rdp"`` take. For such use,
``Accountant(method="basic")`` (events with a fixed (epsilon, delta)) is a
valid filter; otherwise decide the whole sequence first and :meth:`reserve` it
before the first access.

Floating point. Totals may exceed the budget by a relative ``1e-12`` (so that a
split such as 0.1 + 0.2 of a budget of 0.3 is accepted); ``spent`` always
reports the true total, never the rounded one.

Layout. The composition itself (the incremental state behind ``check`` and
``spent``, the per-event RDP curves, :data:`BUDGET_RTOL`) is in
:mod:`privtune.accounting._composition`; the ledgers that record the charges in
:mod:`privtune.accounting.ledger`. This module keeps the :class:`Accountant`,
:class:`Reservation` and :func:`compose_events`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from typing import Any

from privtune.accounting._composition import BUDGET_RTOL, _State
from privtune.accounting._composition import _best as _best  # tests
from privtune.accounting._composition import _rdp_curve as _rdp_curve  # optim.line_search._accounting
from privtune.accounting._composition import _Sums as _Sums  # pickles of an Accountant made before the split
from privtune.accounting.budget import Budget
from privtune.accounting.events import RELATIONS, PrivacyEvent
from privtune.accounting.ledger import InMemoryLedger, Ledger, LedgerEntry
from privtune.accounting.rdp_math import DEFAULT_ORDERS
from privtune.exceptions import BudgetExceededError, InvalidParameterError

__all__ = ["Accountant", "Reservation", "compose_events", "BUDGET_RTOL"]

_METHODS = ("auto", "basic", "rdp", "pld", "gaussian")


def _as_budget(budget: Any) -> Budget:
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, tuple) and len(budget) == 2:
        return Budget(*budget)
    raise InvalidParameterError(
        f"The 'budget' parameter of Accountant must be a Budget or an (epsilon, delta) tuple. Got {budget!r}.")


class Accountant:
    """Tracks privacy spent against a budget; refuses any charge that would exceed it.

    Parameters
    ----------
    budget : Budget or tuple (epsilon, delta)
        The total allowed. ``Budget(math.inf, delta)`` tracks without a ceiling.
    relation : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation of the guarantee. Events declared under
        add/remove are converted to replace-one by group privacy.
    ledger : Ledger or None, default=None
        Where charges are recorded. ``None`` uses a fresh
        :class:`~privtune.accounting.ledger.InMemoryLedger`. A ledger that
        already holds entries (a resumed study) is replayed, so past charges
        count against the budget.
    method : {"auto", "basic", "rdp", "pld", "gaussian"}, default="auto"
        Which composition bounds to use; ``"auto"`` takes the tightest valid one.
    orders : array-like or None, default=None
        RDP orders; ``None`` uses :data:`privtune.accounting.rdp_math.DEFAULT_ORDERS`.

    Attributes
    ----------
    budget : Budget
    spent : Budget
        Total privacy spent so far (tightest valid bound).
    remaining : Budget
        ``budget - spent`` componentwise, floored at 0.
    guarantee : {"unconditional", "conditional"}
    ledger : Ledger

    Raises
    ------
    BudgetExceededError
        At construction, never; from :meth:`check` / :meth:`spend` when the
        total would exceed the budget.

    Notes
    -----
    **Privacy.** The accountant itself spends nothing: it is the gate every
    data access must pass. Its totals are functions of public quantities only
    (event parameters), so they may be logged and reported.

    **Adaptivity.** The totals compose a sequence of events fixed in advance
    (the mechanisms may be chosen adaptively, their privacy parameters may not),
    which is how every privtune search charges it. Used as a privacy filter --
    later events' parameters chosen from earlier outputs, e.g. one accountant
    shared by searches you set up one after another -- only
    ``method="basic"`` is a proven filter here; PLD composition and the
    minimum over bounds are not (see the module docstring).

    Examples
    --------
    >>> from privtune.accounting import Accountant, Budget, LaplaceEvent
    >>> acc = Accountant(Budget(1.0, 0.0))
    >>> _ = acc.spend(LaplaceEvent(epsilon=0.4), phase="selection")
    >>> acc.spent
    Budget(epsilon=0.4, delta=0.0)
    >>> acc.remaining.epsilon
    0.6
    """

    def __init__(
        self,
        budget: Budget | tuple[float, float],
        *,
        relation: str = "replace_one",
        ledger: Ledger | None = None,
        method: str = "auto",
        orders: Iterable[float] | None = None,
    ) -> None:
        self._budget = _as_budget(budget)
        if relation not in RELATIONS:
            raise InvalidParameterError(
                f"The 'relation' parameter of Accountant must be one of {list(RELATIONS)}. Got {relation!r} instead.")
        if method not in _METHODS:
            raise InvalidParameterError(
                f"The 'method' parameter of Accountant must be one of {list(_METHODS)}. Got {method!r} instead.")
        if ledger is not None and not isinstance(ledger, Ledger):
            raise InvalidParameterError(
                f"The 'ledger' parameter of Accountant must be a Ledger. Got {type(ledger).__name__}.")
        self.relation = relation
        self.method = method
        self._orders = tuple(float(o) for o in (DEFAULT_ORDERS if orders is None else orders))
        self._ledger = InMemoryLedger() if ledger is None else ledger
        self._lock = threading.RLock()
        self._state = self._new_state()
        for entry in self._ledger.entries():
            self._state = self._state.extended(entry.event)
        self._spent_cache: tuple[int, Budget] | None = None

    def _new_state(self) -> _State:
        methods = ("basic", "gaussian", "rdp", "pld") if self.method == "auto" else (self.method,)
        return _State(self.relation, self._orders, methods)

    # -- public read-only views -------------------------------------------------------
    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The ledger's entries, in order."""
        return self._ledger.entries()

    def __len__(self) -> int:
        with self._lock:
            return self._synced().n

    def _synced(self) -> _State:
        """The composition state, first extended by charges another accountant recorded on the same ledger.

        Call with ``self._lock`` held. A ledger only grows; each entry is folded
        in once. The charge itself is protected by :meth:`Ledger.append`'s
        compare-and-swap (``expected_index``), so a charge that races this
        re-read is refused, never recorded unchecked.
        """
        n = len(self._ledger)
        if n != self._state.n:
            entries = self._ledger.entries()
            if len(entries) < self._state.n:
                from privtune.exceptions import LedgerError

                raise LedgerError(
                    f"The ledger holds {len(entries)} charge(s) but this accountant counted {self._state.n}: it "
                    "was truncated or replaced. Nothing was spent.")
            state = self._state
            for entry in entries[state.n:]:
                state = state.extended(entry.event)
            self._state = state
        return self._state

    @property
    def guarantee(self) -> str:
        """``"conditional"`` if any charged event's guarantee is conditional, else ``"unconditional"``."""
        with self._lock:
            return "conditional" if self._synced().conditional else "unconditional"

    @property
    def spent(self) -> Budget:
        with self._lock:
            self._synced()
            if self._spent_cache is None or self._spent_cache[0] != self._state.n:
                eps, delta, _ = self._state.bound(self._budget.delta)
                if eps > self._budget.epsilon * (1 + BUDGET_RTOL):  # the tie-break preferred a pure bound over
                    e2, d2, _ = self._state.bound(self._budget.delta,  # one that fits: report the one that fits
                                                  epsilon_ceiling=self._budget.epsilon)
                    if e2 < eps:
                        eps, delta = e2, d2
                self._spent_cache = (self._state.n, Budget(eps, min(delta, math.nextafter(1.0, 0.0))))
            return self._spent_cache[1]

    @property
    def remaining(self) -> Budget:
        s = self.spent
        return Budget(max(0.0, self._budget.epsilon - s.epsilon), max(0.0, self._budget.delta - s.delta))

    def get_epsilon(self, delta: float) -> float:
        """The epsilon spent so far at a given delta (tightest valid bound)."""
        if not 0 <= delta < 1:
            raise InvalidParameterError(
                f"The 'delta' parameter of get_epsilon must be in [0, 1). Got {delta!r} instead.")
        with self._lock:
            eps, d, _ = self._synced().bound(delta)
        return eps if d <= delta * (1 + BUDGET_RTOL) else math.inf

    # -- the protocol -----------------------------------------------------------------
    def check(self, event: PrivacyEvent) -> Budget:
        """Raise :class:`BudgetExceededError` if charging ``event`` would exceed the budget.

        Nothing is recorded and nothing changes, whatever the outcome. The
        total is the tightest valid bound (PLD included) on the ledger's events
        followed by ``event``, valid when that sequence of events was fixed
        before the first data access, as in every privtune search (which
        reserves its whole plan up front). It is not a privacy-filter bound for
        an ``event`` whose parameters were chosen from earlier outputs (use
        ``method="basic"`` for that; see the module docstring).

        Parameters
        ----------
        event : PrivacyEvent

        Returns
        -------
        Budget
            The total that would be spent after the charge.
        """
        with self._lock:
            return self._trial(event)[1]

    def _trial(self, event: PrivacyEvent) -> tuple[_State, Budget]:
        if not isinstance(event, PrivacyEvent):
            raise InvalidParameterError(f"Only PrivacyEvent objects can be charged; got {type(event).__name__}.")
        trial = self._synced().extended(event)
        eps, delta, _ = trial.bound(self._budget.delta, epsilon_ceiling=self._budget.epsilon)
        total = Budget(eps, min(delta, math.nextafter(1.0, 0.0)))
        if not (eps <= self._budget.epsilon * (1 + BUDGET_RTOL)
                and delta <= self._budget.delta * (1 + BUDGET_RTOL)):
            spent = self.spent
            hint = ""
            if self._budget.delta == 0 and (math.isinf(eps) or delta > 0):
                hint = (" This event needs delta > 0 (e.g. the Gaussian mechanism, or random stopping's capped law "
                        "of the number of runs, which costs a delta of (1 + e^eps) 2**-100) but the budget's delta "
                        "is 0.")
            raise BudgetExceededError(
                f"Charging {_describe(event)} would bring the privacy spent to epsilon={eps:.6g}, "
                f"delta={delta:.3g}, over the budget epsilon={self._budget.epsilon:.6g}, "
                f"delta={self._budget.delta:.3g} (already spent epsilon={spent.epsilon:.6g}, "
                f"delta={spent.delta:.3g}). Nothing was spent.{hint}",
                requested=Budget(min(eps, math.inf), min(delta, math.nextafter(1.0, 0.0))),
                spent=spent, ceiling=self._budget,
            )
        return trial, total

    def reserve(self, events: Iterable[PrivacyEvent]) -> Reservation:
        """Check a whole plan of events now; spending them later, in order, skips re-checking.

        Composition is monotone, so every prefix of a plan that fits the budget
        fits too. :meth:`spend` with ``reservation=`` therefore records the next
        planned event without recomputing the bound (the PLD bound of a long
        plan costs tens of milliseconds per event), as long as nothing else was
        charged in between; otherwise it falls back to the full check.

        Parameters
        ----------
        events : iterable of PrivacyEvent
            The plan, in the order it will be spent.

        Returns
        -------
        Reservation

        Raises
        ------
        BudgetExceededError
            If the whole plan does not fit; nothing is recorded.
        """
        from privtune.accounting.events import ComposedEvent

        planned = tuple(events)
        with self._lock:
            if planned:  # composed under this accountant's relation (each event converted as it would be alone)
                self._trial(ComposedEvent(events=planned, relation=self.relation))
            return Reservation(planned, start=self._state.n, owner=self)

    def spend(self, event: PrivacyEvent, *, phase: str = "", role: str | None = None,
              reservation: Reservation | None = None) -> LedgerEntry:
        """Check ``event`` against the budget and record it durably. Call **before** the data access.

        Parameters
        ----------
        event : PrivacyEvent
            The charge.
        phase : str, default=""
            The phase it pays for (reported per phase).
        role : str or None, default=None
            The sensitive data role it touches (``"validation"``, ``"training"``).

        Returns
        -------
        LedgerEntry

        Raises
        ------
        BudgetExceededError
            If the total would exceed the budget; the ledger is unchanged.
        LedgerError
            If the ledger cannot record the charge; nothing was spent and the
            data must not be accessed.
        """
        if not isinstance(phase, str):
            raise InvalidParameterError(f"The 'phase' parameter of spend must be a str. Got {phase!r}.")
        with self._lock:
            self._synced()  # count what other accountants on this ledger charged (a shared ledger, one budget)
            if reservation is not None and reservation._covers(event, self._state.n, self):
                if not isinstance(event, PrivacyEvent):  # pragma: no cover - covers() implies it
                    raise InvalidParameterError("Only PrivacyEvent objects can be charged.")
                trial = self._state.extended(event)  # bound already checked for the whole plan
            else:
                trial, _ = self._trial(event)
            # durable before returning; compare-and-swap: refused if the ledger grew since the check
            entry = self._ledger.append(event, phase=phase, role=role, expected_index=self._state.n)
            self._state = trial
            if reservation is not None:
                reservation._advance(event, self._state.n)
            return entry

    # -- breakdowns -----------------------------------------------------------------------
    def spent_where(self, predicate: Callable[[LedgerEntry], bool], *, delta: float | None = None) -> Budget:
        """Privacy spent by the subset of entries selected by ``predicate``.

        Use it for per-phase or per-role figures: ``acc.spent_where(lambda e: e.role == "validation")``.
        """
        events = [e.event for e in self._ledger.entries() if predicate(e)]
        return compose_events(events, delta=self._budget.delta if delta is None else delta,
                              relation=self.relation, method=self.method, orders=self._orders)

    def spent_by_phase(self) -> dict[str, Budget]:
        """Privacy spent per phase, in order of first appearance."""
        phases = list(dict.fromkeys(e.phase for e in self._ledger.entries()))
        return {p: self.spent_where(lambda e, p=p: e.phase == p) for p in phases}

    def __repr__(self) -> str:
        return (f"Accountant(budget={self._budget!r}, relation={self.relation!r}, "
                f"n_events={self._state.n}, ledger={type(self._ledger).__name__})")

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        """The accountant itself: it is a handle on one budget, and a copy would be a second budget.

        scikit-learn's ``clone`` deep-copies the parameters that are not
        estimators, so before this every clone of an estimator holding an
        accountant (each fold of ``cross_val_score``, each ``clone`` of a
        ``PrivateSearchCV``) charged a fresh copy, and the user's accountant
        recorded nothing. Clones now share the accountant (``clone``'s identity
        check accepts it), and their fits are charged to the one budget.
        """
        memo[id(self)] = self
        return self

    def __copy__(self) -> Accountant:
        """The accountant itself (see :meth:`__deepcopy__`)."""
        return self

    def __getstate__(self) -> dict[str, Any]:
        """Pickle as a read-only snapshot: the copy reports what was spent but cannot spend.

        A pickled accountant travels to another process (joblib workers) or to
        disk; a copy that could spend would be a second, independent budget. So
        every ledger travels as a :class:`~privtune.accounting.ledger.DetachedLedger`:
        :meth:`spend` on the unpickled copy raises
        :class:`~privtune.exceptions.LedgerError` (nothing spent). For a
        :class:`~privtune.accounting.ledger.SQLiteLedger` the study can be
        reopened by its path; an in-memory ledger cannot be continued elsewhere.
        """
        state = self.__dict__.copy()
        state["_lock"] = None
        if hasattr(self._ledger, "detached"):  # a database connection cannot travel, nor a second budget
            state["_ledger"] = self._ledger.detached()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


class Reservation:
    """A plan of events checked as a whole by :meth:`Accountant.reserve` (see there)."""

    def __init__(self, events: tuple[PrivacyEvent, ...], *, start: int, owner: Accountant | None = None) -> None:
        self.events = events
        self._next = 0
        self._expected_n = start
        self._owner = owner  # a reservation covers spends on the accountant that checked it, and no other

    def _covers(self, event: PrivacyEvent, n: int, accountant: Accountant | None = None) -> bool:
        return (accountant is self._owner and n == self._expected_n and self._next < len(self.events)
                and self.events[self._next] == event)

    def _advance(self, event: PrivacyEvent, n: int) -> None:
        if self._next < len(self.events) and self.events[self._next] == event and n == self._expected_n + 1:
            self._next += 1
            self._expected_n = n
        else:
            self._expected_n = -1  # broken sequence: later spends are fully checked

    @property
    def remaining(self) -> int:
        """Planned events not yet spent."""
        return len(self.events) - self._next

    def __repr__(self) -> str:
        return f"Reservation(n_events={len(self.events)}, spent={self._next})"


def _describe(event: PrivacyEvent) -> str:
    fixed = event.epsilon_delta()
    what = type(event).__name__ + (f" ({event.label})" if event.label else "")
    if fixed is not None:
        return f"{what} with epsilon={fixed[0]:.6g}, delta={fixed[1]:.3g}"
    if hasattr(event, "noise_multiplier"):
        return f"{what} with noise_multiplier={event.noise_multiplier:.6g}"
    return what


def compose_events(
    events: Iterable[PrivacyEvent],
    *,
    delta: float,
    relation: str = "replace_one",
    method: str = "auto",
    orders: Iterable[float] | None = None,
) -> Budget:
    """The privacy spent by a sequence of events, without any ceiling.

    Parameters
    ----------
    events : iterable of PrivacyEvent
    delta : float in [0, 1)
        The delta at which curve-based events are converted.
    relation, method, orders
        As for :class:`Accountant`.

    Returns
    -------
    Budget
    """
    acc = Accountant(Budget(math.inf, delta), relation=relation, method=method, orders=orders)
    state = acc._state
    for e in events:
        state = state.extended(e)
    eps, d, _ = state.bound(delta)
    return Budget(eps, min(d, math.nextafter(1.0, 0.0)))
