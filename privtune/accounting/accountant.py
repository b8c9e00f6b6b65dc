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

Adaptivity. privtune fixes every noise parameter of a search before its first
data access (the budget split is validated up front), the setting in which PLD
and RDP composition are valid. The accountant is also a privacy *filter*: each
``spend`` re-checks the running total, which for basic composition and RDP
remains valid when later parameters depend on earlier outputs (Rogers et al.
2016; Feldman & Zrnic 2021).

Floating point. Totals may exceed the budget by a relative ``1e-12`` (so that a
split such as 0.1 + 0.2 of a budget of 0.3 is accepted); ``spent`` always
reports the true total, never the rounded one.
"""

from __future__ import annotations

import copy
import functools
import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dp_accounting.rdp import RdpAccountant

from privtune.accounting._conversion import dp_relation, pld_supported, to_pld, to_rdp_event, to_relation
from privtune.accounting.budget import Budget
from privtune.accounting.events import (
    RELATIONS,
    ComposedEvent,
    GaussianEvent,
    PrivacyEvent,
    RenyiEvent,
    SelfComposedEvent,
)
from privtune.accounting.ledger import InMemoryLedger, Ledger, LedgerEntry
from privtune.accounting.rdp_math import DEFAULT_ORDERS, gaussian_epsilon_exact, rdp_to_epsilon
from privtune.exceptions import BudgetExceededError, InvalidParameterError, UnsupportedEventError

__all__ = ["Accountant", "Reservation", "compose_events", "BUDGET_RTOL"]

#: Relative tolerance on budget comparisons (absorbs float representation of splits).
BUDGET_RTOL = 1e-12
_METHODS = ("auto", "basic", "rdp", "pld", "gaussian")
_PLD_INTERVAL = 1e-4


@dataclass
class _Sums:
    eps: list[float] = field(default_factory=list)
    delta: list[float] = field(default_factory=list)
    valid: bool = True  # False once an event without a fixed guarantee lands here

    def add(self, fixed: tuple[float, float] | None) -> None:
        if fixed is None:
            self.valid = False
        else:
            self.eps.append(fixed[0])
            self.delta.append(fixed[1])

    def total(self) -> tuple[float, float]:
        return math.fsum(self.eps), math.fsum(self.delta)

    def copy(self) -> _Sums:
        return _Sums(list(self.eps), list(self.delta), self.valid)


def _rdp_curve(event: PrivacyEvent, orders: tuple[float, ...], relation: str) -> np.ndarray | None:
    """The RDP curve of one event (cached per immutable event; computed afresh for an unhashable one)."""
    try:
        return _rdp_curve_cached(event, orders, relation)
    except TypeError:  # a field holding a list: not hashable, not cacheable
        return _rdp_curve_of(event, orders, relation)


def _rdp_curve_of(event: PrivacyEvent, orders: tuple[float, ...], relation: str) -> np.ndarray | None:
    """The RDP curve of one event over ``orders`` (dp-accounting's), or None if RDP cannot bound it.

    Events are immutable, so their curves are computed once and cached: a
    search that charges the same Gaussian event 300 times composes one curve
    300 times by addition instead of asking dp-accounting 300 times (the
    accounting was the search's hot spot). The returned array is read-only.
    """
    if _has_renyi(event):  # stated RDP bounds: composed here by adding curves (dp-accounting has no such event)
        return _renyi_curve(event, orders, relation)
    rdp_event = to_rdp_event(event)
    if rdp_event is None:
        return None
    acc = RdpAccountant(orders=list(orders), neighboring_relation=dp_relation(relation))
    if not acc.supports(rdp_event):
        return None
    acc.compose(rdp_event)
    curve = np.array(acc._rdp, dtype=np.float64)  # dp-accounting keeps the composed curve here  # noqa: SLF001
    curve.setflags(write=False)
    return curve


_rdp_curve_cached = functools.lru_cache(maxsize=4096)(_rdp_curve_of)


def _has_renyi(event: PrivacyEvent) -> bool:
    return isinstance(event, RenyiEvent) or any(_has_renyi(c) for c in event.children())


def _renyi_curve(event: PrivacyEvent, orders: tuple[float, ...], relation: str) -> np.ndarray | None:
    """The RDP curve of an event built from :class:`RenyiEvent` s by composition (None if not expressible).

    A :class:`RenyiEvent` is its stated bound (``inf`` above its largest order);
    compositions add curves, self-compositions multiply them, and any other
    event is asked of dp-accounting as usual. An event *sampled* around a stated
    RDP bound has no amplification bound here (None).
    """
    if isinstance(event, RenyiEvent):
        curve = np.asarray(event.rdp_at(orders), dtype=np.float64)
    elif isinstance(event, ComposedEvent):
        parts = [_renyi_curve(e, orders, relation) if _has_renyi(e) else _rdp_curve_of(e, orders, relation)
                 for e in event.events]
        if any(p is None for p in parts):
            return None
        curve = np.sum(parts, axis=0) if parts else np.zeros(len(orders))
    elif isinstance(event, SelfComposedEvent):
        inner = _renyi_curve(event.event, orders, relation)
        if inner is None:
            return None
        curve = inner * event.count if event.count else np.zeros(len(orders))
    else:
        return None
    curve.setflags(write=False)
    return curve


class _State:
    """Incremental composition state of a sequence of events (internal)."""

    def __init__(self, relation: str, orders: Any, methods: tuple[str, ...]) -> None:
        self.relation = relation
        self.methods = methods
        self.n = 0
        self.conditional = False
        self.basic = _Sums()
        self.rdp_fixed = _Sums()
        self.orders = tuple(float(o) for o in orders)
        self.rdp = np.zeros(len(self.orders))  # the composed RDP curve: a sum of cached per-event curves
        self.rdp_count = 0
        self.pld_fixed = _Sums()
        self.pld = None
        self.pld_pending: list[PrivacyEvent] = []
        self.pld_all: tuple[PrivacyEvent, ...] = ()  # every PLD-bounded event, for the canonical total
        self.gauss_fixed = _Sums()
        self.gauss_precision = 0.0  # sum of 1 / noise_multiplier**2 over unsampled Gaussian events
        self.pld_non_gaussian = 0  # PLD-bounded events that are not unsampled Gaussians
        self.truncation = 0.0  # total variation between the capped laws of K sampled and the uncapped ones

    def extended(self, event: PrivacyEvent) -> _State:
        new = copy.copy(self)
        new.basic = self.basic.copy()
        new.rdp_fixed = self.rdp_fixed.copy()
        new.pld_fixed = self.pld_fixed.copy()
        new.gauss_fixed = self.gauss_fixed.copy()
        new.pld_pending = list(self.pld_pending)
        new.rdp = self.rdp.copy()
        new._add(event)
        return new

    def _add(self, event: PrivacyEvent) -> None:
        e = to_relation(event, self.relation)
        self.truncation += _truncation_mass(e)
        fixed = e.epsilon_delta()
        conditional = e.is_conditional()
        if conditional and fixed is None:
            raise UnsupportedEventError(
                f"{type(e).__name__} is conditional but has no fixed (epsilon, delta); conditional "
                "guarantees can only be composed by basic composition.")
        self.conditional |= conditional
        self.basic.add(fixed)
        # The RDP curve is only composed when an RDP bound can be asked for (it is the costliest part).
        curve = None if conditional or "rdp" not in self.methods else _rdp_curve(e, self.orders, self.relation)
        if curve is not None:
            self.rdp = self.rdp + curve  # RDP composes by adding curves
            self.rdp_count += 1
        else:
            self.rdp_fixed.add(fixed)
        if not conditional and pld_supported(e):
            self.pld_pending.append(e)
            self.pld_all = self.pld_all + (e,)
        else:
            self.pld_fixed.add(fixed)
        precision = None if conditional else _gaussian_precision(e)
        if pld_supported(e) and not conditional and precision is None:
            self.pld_non_gaussian += 1
        if precision is not None:
            self.gauss_precision += precision
        else:
            self.gauss_fixed.add(fixed)
        self.n += 1
        if not (self.basic.valid or self.rdp_fixed.valid or self.pld_fixed.valid or self.gauss_fixed.valid):
            raise UnsupportedEventError(f"No accounting method available here can bound {type(e).__name__}.")

    # -- bounds -------------------------------------------------------------------------
    def _flush_pld(self) -> Any:
        # Runs of identical events are self-composed (one FFT power instead of k convolutions).
        i, pending = 0, self.pld_pending
        while i < len(pending):
            j = i
            while j + 1 < len(pending) and pending[j + 1] == pending[i]:
                j += 1
            p = to_pld(pending[i], _PLD_INTERVAL)
            if j > i:
                p = p.self_compose(j - i + 1)
            self.pld = p if self.pld is None else self.pld.compose(p)
            i = j + 1
        self.pld_pending = []
        return self.pld

    def canonical_pld(self) -> Any:
        """The PLD of all events, independent of the order they arrived in (composition commutes).

        Equal events are self-composed once per group and the groups composed in a
        fixed order, so the reported total does not depend on scheduling (threads,
        resumption); the incremental state used by ``check`` may differ from it in
        the last digits, and both are valid pessimistic bounds.
        """
        from collections import Counter

        groups = Counter(self.pld_all)
        out = None
        for event in sorted(groups, key=lambda e: repr(e.to_dict())):
            p = to_pld(event, _PLD_INTERVAL)
            if groups[event] > 1:
                p = p.self_compose(groups[event])
            out = p if out is None else out.compose(p)
        return out

    def options(self, delta_budget: float, *, cheap_only: bool, canonical: bool = False,
                pld_only: bool = False) -> list[tuple[float, float, str]]:
        out: list[tuple[float, float, str]] = []
        if self.n == 0:
            return [(0.0, 0.0, "basic")]
        if not pld_only:
            out += self._cheap_options(delta_budget)
        exact_gaussian_dominates = ("gaussian" in self.methods and self.gauss_precision > 0
                                    and self.pld_non_gaussian == 0)
        if not cheap_only and "pld" in self.methods and self.pld_fixed.valid and not exact_gaussian_dominates:
            eps_f, delta_f = self.pld_fixed.total()
            if self.pld is None and not self.pld_pending:
                out.append((eps_f, delta_f, "pld"))
            elif delta_budget - delta_f > 0:
                pld = self.canonical_pld() if canonical else self._flush_pld()
                out.append((eps_f + max(0.0, pld.get_epsilon_for_delta(delta_budget - delta_f)),
                            delta_budget, "pld"))
        return out

    def _cheap_options(self, delta_budget: float) -> list[tuple[float, float, str]]:
        """Basic composition, RDP and the exact Gaussian bound (no PLD)."""
        out: list[tuple[float, float, str]] = []
        if "basic" in self.methods and self.basic.valid:
            eps, delta = self.basic.total()
            out.append((eps, delta, "basic"))
        if "rdp" in self.methods and self.rdp_fixed.valid:
            eps_f, delta_f = self.rdp_fixed.total()
            if self.rdp_count == 0:
                out.append((eps_f, delta_f, "rdp"))
            elif delta_budget - delta_f > 0:
                out.append((eps_f + rdp_to_epsilon(np.asarray(self.orders), self.rdp, delta_budget - delta_f),
                            delta_budget, "rdp"))
        if "gaussian" in self.methods and self.gauss_fixed.valid and self.gauss_precision > 0:
            eps_f, delta_f = self.gauss_fixed.total()
            if delta_budget - delta_f > 0:
                mu = math.sqrt(self.gauss_precision)
                out.append((eps_f + gaussian_epsilon_exact(mu, delta_budget - delta_f), delta_budget, "gaussian"))
        return out

    def bound(self, delta_budget: float, *, epsilon_ceiling: float | None = None) -> tuple[float, float, str]:
        """Smallest-epsilon valid bound; stops early once a cheap bound fits the ceiling.

        Random stopping's capped law of K is within total variation
        ``self.truncation`` of the uncapped law the bounds are proven for, so
        ``(1 + e**eps) * truncation`` is added to each bound's delta.
        """
        if self.truncation > 0:
            return self._bound_with_truncation(delta_budget, epsilon_ceiling)
        return self._bound(delta_budget, epsilon_ceiling=epsilon_ceiling)

    def _bound_with_truncation(self, delta_budget: float,
                               epsilon_ceiling: float | None) -> tuple[float, float, str]:
        def extra(eps: float) -> float:
            return (1.0 + math.exp(min(eps, 700.0))) * self.truncation

        # Leave the truncation term room in the delta budget (a fixed point: the term is tiny unless eps is huge).
        slack = delta_budget
        for _ in range(3):
            eps, delta, how = self._bound(max(0.0, slack), epsilon_ceiling=epsilon_ceiling)
            total = delta + extra(eps)
            if total <= delta_budget * (1 + BUDGET_RTOL) or slack <= 0:
                break
            slack = delta_budget - extra(eps)
        return eps, total, how

    def _bound(self, delta_budget: float, *, epsilon_ceiling: float | None = None) -> tuple[float, float, str]:
        fits = lambda o: (epsilon_ceiling is not None and o[0] <= epsilon_ceiling * (1 + BUDGET_RTOL)  # noqa: E731
                          and o[1] <= delta_budget * (1 + BUDGET_RTOL))
        cheap = self.options(delta_budget, cheap_only=True)
        if epsilon_ceiling is not None and any(fits(o) for o in cheap):
            return _best([o for o in cheap if fits(o)])
        canonical = epsilon_ceiling is None  # a reported total: make it independent of arrival order
        allopts = cheap + self.options(delta_budget, cheap_only=False, canonical=canonical, pld_only=True)
        allopts = [o for o in allopts if o[1] <= delta_budget * (1 + BUDGET_RTOL)]
        if not allopts:
            return (math.inf, delta_budget, "none")
        if epsilon_ceiling is not None and any(fits(o) for o in allopts):
            return _best([o for o in allopts if fits(o)])  # a check: any bound within the ceiling will do
        return _best(allopts)


def _best(options: list[tuple[float, float, str]]) -> tuple[float, float, str]:
    """The smallest epsilon; among bounds near it, the one using least delta.

    All options are valid bounds on the same mechanism, so any choice is sound;
    the tie-break keeps a pure-DP run reported as (eps, 0) rather than as
    (eps - 1e-6, delta). "Near" is within a relative 1e-3 of the smallest
    epsilon, or within the delta the option saves (so that a tiny pure budget,
    epsilon = 1e-9, is reported as (1e-9, 0), not as (0, 1e-6)).
    """
    best = min(options, key=lambda o: (o[0], o[1]))
    near = [o for o in options if o[0] <= best[0] * (1 + 1e-3) + max(0.0, best[1] - o[1])]
    return min(near, key=lambda o: (o[1], o[0]))


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
        return self._state.n

    @property
    def guarantee(self) -> str:
        """``"conditional"`` if any charged event's guarantee is conditional, else ``"unconditional"``."""
        return "conditional" if self._state.conditional else "unconditional"

    @property
    def spent(self) -> Budget:
        with self._lock:
            if self._spent_cache is None or self._spent_cache[0] != self._state.n:
                eps, delta, _ = self._state.bound(self._budget.delta)
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
        eps, d, _ = self._state.bound(delta)
        return eps if d <= delta * (1 + BUDGET_RTOL) else math.inf

    # -- the protocol -----------------------------------------------------------------
    def check(self, event: PrivacyEvent) -> Budget:
        """Raise :class:`BudgetExceededError` if charging ``event`` would exceed the budget.

        Nothing is recorded and nothing changes, whatever the outcome.

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
        trial = self._state.extended(event)
        eps, delta, _ = trial.bound(self._budget.delta, epsilon_ceiling=self._budget.epsilon)
        total = Budget(eps, min(delta, math.nextafter(1.0, 0.0)))
        if not (eps <= self._budget.epsilon * (1 + BUDGET_RTOL)
                and delta <= self._budget.delta * (1 + BUDGET_RTOL)):
            spent = self.spent
            hint = ""
            if self._budget.delta == 0 and (math.isinf(eps) or delta > 0):
                hint = (" This event needs delta > 0 (e.g. the Gaussian mechanism, or random stopping's capped law "
                        "of the number of runs, which costs a delta below 1e-28) but the budget's delta is 0.")
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
            if planned:
                self._trial(ComposedEvent(events=planned))
            return Reservation(planned, start=self._state.n)

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
            if reservation is not None and reservation._covers(event, self._state.n):
                if not isinstance(event, PrivacyEvent):  # pragma: no cover - covers() implies it
                    raise InvalidParameterError("Only PrivacyEvent objects can be charged.")
                trial = self._state.extended(event)  # bound already checked for the whole plan
            else:
                trial, _ = self._trial(event)
            entry = self._ledger.append(event, phase=phase, role=role)  # durable before returning
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

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        if hasattr(self._ledger, "detached"):  # a database connection cannot travel: keep a read-only snapshot
            state["_ledger"] = self._ledger.detached()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


def _truncation_mass(event: PrivacyEvent) -> float:
    """Total variation between the capped and uncapped laws of K of every random-stopping event inside ``event``."""
    from privtune.accounting.events import RepeatAndSelectEvent, SelfComposedEvent

    if isinstance(event, RepeatAndSelectEvent):
        return event.truncation_mass()
    inner = math.fsum(_truncation_mass(c) for c in event.children())
    return inner * event.count if isinstance(event, SelfComposedEvent) else inner


def _gaussian_precision(event: PrivacyEvent) -> float | None:
    """sum 1/nm**2 if ``event`` is made only of unsampled Gaussian events, else None."""
    if isinstance(event, GaussianEvent):  # the exact Gaussian curve is proven for one coordinate only
        return 1.0 / event.noise_multiplier**2 if event.noise_multiplier > 0 and not event.vector else None
    if isinstance(event, ComposedEvent):
        parts = [_gaussian_precision(e) for e in event.events]
        return None if not parts or any(p is None for p in parts) else math.fsum(parts)
    if isinstance(event, SelfComposedEvent):
        inner = _gaussian_precision(event.event)
        return None if inner is None or event.count == 0 else event.count * inner
    return None


class Reservation:
    """A plan of events checked as a whole by :meth:`Accountant.reserve` (see there)."""

    def __init__(self, events: tuple[PrivacyEvent, ...], *, start: int) -> None:
        self.events = events
        self._next = 0
        self._expected_n = start

    def _covers(self, event: PrivacyEvent, n: int) -> bool:
        return (n == self._expected_n and self._next < len(self.events) and self.events[self._next] == event)

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
