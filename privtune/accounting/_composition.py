"""How a sequence of privacy events is composed into one (epsilon, delta) (internal).

This module holds the composition machinery behind
:class:`~privtune.accounting.accountant.Accountant` and
:func:`~privtune.accounting.accountant.compose_events`:

* ``_State``, the incremental composition state of a sequence of events (the
  basic sums ``_Sums``, the composed RDP curve, the pending and canonical PLDs,
  the exact-Gaussian precision), whose ``bound`` keeps the smallest valid
  epsilon (``_best`` breaks near-ties);
* the per-event RDP curves: ``_rdp_curve`` (cached per immutable event) and
  ``_renyi_curve`` for events built from stated RDP bounds or Poisson-subsampled
  Gaussians (``_has_renyi``);
* ``_truncation_mass`` (random stopping's capped law of K) and
  ``_gaussian_precision`` (unsampled Gaussians composed exactly);
* :data:`BUDGET_RTOL`, the relative tolerance of every budget comparison.

Which bounds are computed and why each is valid is stated in the docstring of
:mod:`privtune.accounting.accountant`, which keeps the :class:`Accountant` (the
check-then-record protocol), ``Reservation`` and ``compose_events``, and
re-exports the names above that other modules import from it. Events are mapped
to dp-accounting's RDP and PLD forms in :mod:`privtune.accounting._conversion`;
RDP curves become (epsilon, delta) in :mod:`privtune.accounting.rdp_math`; the
charges themselves are recorded by :mod:`privtune.accounting.ledger`.
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dp_accounting.rdp import RdpAccountant

from privtune.accounting._conversion import dp_relation, pld_supported, to_pld, to_rdp_event, to_relation
from privtune.accounting.amplification import subsampled_rdp
from privtune.accounting.events import (
    ComposedEvent,
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RenyiEvent,
    RepeatAndSelectEvent,
    SelfComposedEvent,
    SubsampledEvent,
)
from privtune.accounting.rdp_math import (
    DEFAULT_ORDERS,
    gaussian_epsilon_exact,
    poisson_gaussian_rdp,
    rdp_to_epsilon,
    repeat_and_select_rdp,
)
from privtune.exceptions import UnsupportedEventError

#: Relative tolerance on budget comparisons (absorbs float representation of splits).
BUDGET_RTOL = 1e-12
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


def _poisson_gaussian(event: PrivacyEvent) -> bool:
    """A Gaussian on a Poisson subsample: its curve is privtune's (valid on the lattice), not dp-accounting's."""
    return (isinstance(event, PoissonSampledEvent) and event.relation == "add_remove"
            and isinstance(event.event, GaussianEvent))


def _has_renyi(event: PrivacyEvent) -> bool:
    """Whether the curve is composed here: stated RDP bounds, Poisson-subsampled Gaussians inside, or random
    stopping with a shape in (-1, 0) (Papernot & Steinke's Thm. 2 holds there; dp-accounting refuses it)."""
    return (isinstance(event, (RenyiEvent, SubsampledEvent)) or _poisson_gaussian(event)
            or (isinstance(event, RepeatAndSelectEvent) and event.shape < 0)
            or any(_has_renyi(c) for c in event.children()))


def _renyi_curve(event: PrivacyEvent, orders: tuple[float, ...], relation: str) -> np.ndarray | None:
    """The RDP curve of an event built from :class:`RenyiEvent` s by composition (None if not expressible).

    A :class:`RenyiEvent` is its stated bound (``inf`` above its largest order); a
    Gaussian on a Poisson subsample is :func:`~privtune.accounting.rdp_math.poisson_gaussian_rdp`;
    compositions add curves, self-compositions multiply them, and any other
    event is asked of dp-accounting as usual. An event *sampled* around a stated
    RDP bound has no amplification bound here (None), except a
    :class:`SubsampledEvent`, amplified by the general theorems
    (:func:`~privtune.accounting.amplification.subsampled_rdp`). Random stopping over such
    an event (a :class:`RepeatAndSelectEvent`) is Papernot & Steinke's Theorem 2
    or 6 applied to the inner curve on the accountant's orders
    (:func:`~privtune.accounting.rdp_math.repeat_and_select_rdp`, privtune's own
    implementation, cross-checked against dp-accounting's): the theorems take
    any valid RDP bound of one run at the orders lambda and lambda-hat, and the
    inner curve is one (a stated bound at the next stated order up, ``inf``
    above the largest, where the minimum over lambda-hat simply skips it).
    dp-accounting evaluates the same theorems for the events it knows, but
    cannot take a stated curve.
    """
    if isinstance(event, RenyiEvent):
        curve = np.asarray(event.rdp_at(orders), dtype=np.float64)
    elif _poisson_gaussian(event):  # integer orders, interpolated: see rdp_math.poisson_gaussian_rdp
        inner = event.event  # type: ignore[attr-defined]
        curve = poisson_gaussian_rdp(np.asarray(orders, dtype=np.float64), event.sample_rate,  # type: ignore[attr-defined]
                                     inner.noise_multiplier)
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
    elif isinstance(event, RepeatAndSelectEvent):
        one = event.event
        run = _renyi_curve(one, orders, relation) if _has_renyi(one) else _rdp_curve_of(one, orders, relation)
        if run is None or not np.isfinite(run).any():
            return None
        curve = np.asarray(repeat_and_select_rdp(np.asarray(orders, dtype=np.float64), run, mean=event.mean,
                                                 shape=event.shape), dtype=np.float64)
    elif isinstance(event, SubsampledEvent):  # the general theorems, for any inner curve
        one = event.event
        inner = _renyi_curve(one, orders, relation) if _has_renyi(one) else _rdp_curve_of(one, orders, relation)
        if inner is None or not np.isfinite(inner).any():
            return None
        fixed = one.epsilon_delta()
        eps_inf = fixed[0] if fixed is not None and fixed[1] == 0 else math.inf
        curve = subsampled_rdp(np.asarray(orders, dtype=np.float64), inner, rate=event.sample_rate,
                               scheme=event.scheme, epsilon_inf=eps_inf)
    else:
        return None
    curve.setflags(write=False)
    return curve


def has_rdp_curve(event: PrivacyEvent) -> bool:
    """Whether the RDP accountant can bound ``event`` by a curve (dp-accounting's events, or stated RDP bounds).

    Public quantities only; used to refuse, before anything is spent, a random-stopping run whose training
    event neither is pure nor has a curve Papernot & Steinke's RDP theorems can take.
    """
    if event.is_conditional():
        return False
    if _has_renyi(event):
        curve = _rdp_curve(event, tuple(float(o) for o in DEFAULT_ORDERS), event.relation)
        return curve is not None and bool(np.isfinite(curve).any())
    return to_rdp_event(event) is not None


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
        # the cap's mass is a property of the sampler, not of the relation: read it before a conversion can drop it
        self.truncation += max(_truncation_mass(event), _truncation_mass(e))
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
        return _canonical_pld(tuple(sorted(groups.items(), key=lambda kv: repr(kv[0].to_dict()))))

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


#: How many composed canonical PLDs are kept (each holds up to a few MB of dense probabilities).
_CANONICAL_PLD_CACHE = 8


@functools.lru_cache(maxsize=_CANONICAL_PLD_CACHE)
def _canonical_pld(groups: tuple[tuple[PrivacyEvent, int], ...]) -> Any:
    """The PLD of ``groups`` (``(event, count)`` pairs in canonical order), composed once and reused.

    A search asks for the same totals many times (the running total, per-role and
    per-phase figures, the report), and repeated searches of one configuration
    compose the same multiset of events; the dense convolutions are most of the
    cost of a small search. Events are immutable and PLDs are never mutated
    (composition returns a new one), so a cached PLD is the one a fresh
    composition would build, bit for bit.
    """
    out = None
    for event, count in groups:
        p = to_pld(event, _PLD_INTERVAL)
        if count > 1:
            p = p.self_compose(count)
        out = p if out is None else out.compose(p)
    return out


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
