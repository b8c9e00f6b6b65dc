"""Map privtune events to the back ends that bound them: relation changes, RDP and PLD.

Internal module. Three facts drive it:

* For an *unsampled* additive-noise mechanism (Laplace, Gaussian) the privacy
  loss depends only on the declared sensitivity under the event's relation, so
  its noise multiplier is used as is under either relation; only subsampling
  amplification depends on the relation, and the subsampled events are routed
  to a back end that uses the event's own relation.
* An event declared under add/remove is converted to replace-one by group
  privacy (a replacement is one removal and one addition): pure epsilon doubles,
  a Gaussian noise multiplier halves, (eps, delta) becomes
  (2 eps, (1 + e^eps) delta). The reverse conversion is not valid in general
  and is refused.
* Pure epsilon-DP events without a native ``dp_accounting`` form enter RDP as
  zCDP: epsilon-DP implies epsilon^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4), and
  the exponential mechanism, being epsilon-bounded-range, is
  epsilon^2/8-zCDP (Cesar & Rogers 2021, Lemma 3.2).
"""

from __future__ import annotations

import dataclasses
import functools
import math

from dp_accounting import dp_event as dpe
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.privacy_accountant import NeighboringRelation

from privtune.accounting import events as ev
from privtune.exceptions import UnsupportedEventError

__all__ = ["to_relation", "to_rdp_event", "to_pld", "pld_supported", "dp_relation"]


def dp_relation(relation: str) -> NeighboringRelation:
    """The ``dp_accounting`` relation for a privtune relation name.

    ``"offsets_linf"`` is a symmetric relation like replace-one: every event of an
    accountant with that relation is declared under it, and composition theorems
    hold for any fixed neighbouring relation, so replace-one's curves apply.
    """
    if relation == "add_remove":
        return NeighboringRelation.ADD_OR_REMOVE_ONE
    return NeighboringRelation.REPLACE_ONE


def to_relation(event: ev.PrivacyEvent, relation: str) -> ev.PrivacyEvent:
    """Express ``event`` under ``relation`` (group privacy for add/remove -> replace-one).

    A composition's own relation does not speak for the events inside it: they
    are converted one by one (an add/remove event inside a replace-one
    ``ComposedEvent`` still doubles), whatever the container says.

    Any other event with nested events (a sampling or selection wrapper) is
    bounded from its inner event's guarantee as declared, so every event nested
    in it, at any depth (inside a composition too), must be declared under the
    wrapper's own relation; otherwise :class:`UnsupportedEventError` is raised.
    (Only direct children were checked before: a replace-one
    ``SampledWithoutReplacementEvent`` around a ``ComposedEvent`` of an
    add/remove ``LaplaceEvent(1.0)`` was charged 1.0 instead of 2.0.)
    """
    if event.children() and not isinstance(event, (ev.ComposedEvent, ev.SelfComposedEvent)):
        odd = [n for c in event.children() for n in ev._other_relations(c, event.relation)]
        if odd:  # a wrapper's bound (selection, sampling) is computed for its inner event as declared
            raise UnsupportedEventError(
                f"{type(event).__name__} of relation {event.relation!r} wraps {odd} declared under another "
                "relation (at any depth, inside compositions too); declare every nested event under the "
                "wrapper's relation (convert it first).")
    if event.relation == relation:
        if isinstance(event, ev.ComposedEvent):
            inner = tuple(to_relation(e, relation) for e in event.events)
            return event if inner == event.events else dataclasses.replace(event, events=inner)
        if isinstance(event, ev.SelfComposedEvent):
            inner_one = to_relation(event.event, relation)
            return event if inner_one == event.event else dataclasses.replace(event, event=inner_one)
        return event
    if "offsets_linf" in (event.relation, relation):
        raise UnsupportedEventError(
            f"{type(event).__name__} was declared under the {event.relation!r} relation and cannot be composed in an "
            f"accountant of relation {relation!r}: seed 001's offset relation (every offset may move within its "
            "bound) and replace-one / add-remove of a record are different neighbourhoods. Use an "
            "Accountant(relation='offsets_linf') for these events, or a caller that maps records to offsets "
            "(e.g. DPChebyshevRegressor, whose events are replace-one of a target).")
    if relation == "add_remove":
        raise UnsupportedEventError(
            f"{type(event).__name__} was declared under replace-one; an add/remove accountant cannot "
            "bound it (a replace-one sensitivity does not bound the effect of adding a record)."
        )
    swap = {"relation": relation}
    if isinstance(event, ev.RenyiEvent):
        return event.as_replace_one()
    if isinstance(event, (ev.LaplaceEvent, ev.ExponentialEvent, ev.SparseVectorEvent)):
        return dataclasses.replace(event, epsilon=2 * event.epsilon, **swap)
    if isinstance(event, ev.GaussianEvent):
        return dataclasses.replace(event, noise_multiplier=event.noise_multiplier / 2, **swap)
    if isinstance(event, ev.EpsilonDeltaEvent):
        delta = min(1.0 - 1e-300, (1 + math.exp(min(event.epsilon, 700))) * event.delta)
        return dataclasses.replace(event, epsilon=2 * event.epsilon, delta=delta, **swap)
    if isinstance(event, ev.ComposedEvent):
        return dataclasses.replace(event, events=tuple(to_relation(e, relation) for e in event.events),
                                   **swap)
    if isinstance(event, ev.SelfComposedEvent):
        return dataclasses.replace(event, event=to_relation(event.event, relation), **swap)
    fixed = event.epsilon_delta()
    if fixed is not None:
        eps, delta = fixed
        return ev.EpsilonDeltaEvent(epsilon=2 * eps,
                                    delta=min(1.0 - 1e-300, (1 + math.exp(min(eps, 700))) * delta),
                                    relation=relation, guarantee=event.guarantee,
                                    label=event.label or type(event).__name__)
    raise UnsupportedEventError(
        f"{type(event).__name__} declared under add/remove has no fixed (epsilon, delta) and cannot be "
        "converted to replace-one; use an accountant with relation='add_remove'."
    )


def to_rdp_event(event: ev.PrivacyEvent) -> dpe.DpEvent | None:
    """A ``dp_accounting`` event for the RDP accountant, or None if RDP cannot bound it."""
    if event.guarantee == "conditional":
        return None
    if isinstance(event, ev.LaplaceEvent):
        return dpe.LaplaceDpEvent(1.0 / event.epsilon)
    if isinstance(event, ev.GaussianEvent):
        return dpe.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, ev.ExponentialEvent):
        return dpe.ZCDpEvent(event.epsilon**2 / 8)
    if isinstance(event, (ev.SparseVectorEvent, ev.ThresholdSelectionEvent)) or (
        isinstance(event, ev.EpsilonDeltaEvent) and event.delta == 0
    ):
        eps = event.epsilon_delta()[0]  # type: ignore[index]
        return dpe.ZCDpEvent(eps**2 / 2)
    if isinstance(event, ev.PoissonSampledEvent) and event.relation == "add_remove":
        if isinstance(event.event, ev.GaussianEvent):  # not dp-accounting's curve: rdp_math.poisson_gaussian_rdp
            return None
        inner = to_rdp_event(event.event)
        return None if inner is None else dpe.PoissonSampledDpEvent(event.sample_rate, inner)
    if isinstance(event, ev.SampledWithoutReplacementEvent) and event.relation == "replace_one":
        inner = to_rdp_event(event.event)
        return None if inner is None else dpe.SampledWithoutReplacementDpEvent(
            event.dataset_size, event.sample_size, inner)
    if isinstance(event, ev.RepeatAndSelectEvent):
        inner = to_rdp_event(event.event)
        return None if inner is None else dpe.RepeatAndSelectDpEvent(inner, event.mean, event.shape)
    if isinstance(event, ev.ComposedEvent):
        parts = [to_rdp_event(e) for e in event.events]
        if any(p is None for p in parts):
            return None
        return _merged_gaussian(parts, [1] * len(parts)) or dpe.ComposedDpEvent(parts)
    if isinstance(event, ev.SelfComposedEvent):
        inner = to_rdp_event(event.event)
        if inner is None:
            return None
        return _merged_gaussian([inner], [event.count]) or dpe.SelfComposedDpEvent(inner, event.count)
    return None


def _merged_gaussian(parts: list[dpe.DpEvent], counts: list[int]) -> dpe.GaussianDpEvent | None:
    """One Gaussian with the same RDP curve as a composition of plain Gaussians, else None.

    The RDP of a Gaussian of multiplier ``s`` is ``alpha / (2 s**2)`` at every order, so
    ``counts[i]`` copies of Gaussians ``s_i`` compose to the Gaussian of multiplier
    ``(sum_i counts[i] / s_i**2) ** -1/2`` exactly (same curve, far fewer terms for the
    accountant to evaluate).
    """
    if not parts or not all(type(p) is dpe.GaussianDpEvent and p.noise_multiplier > 0 for p in parts):
        return None
    precision = math.fsum(c / (p.noise_multiplier * p.noise_multiplier) for p, c in zip(parts, counts, strict=True))
    return dpe.GaussianDpEvent(1.0 / math.sqrt(precision))


def to_pld(event: ev.PrivacyEvent, interval: float) -> pld_lib.PrivacyLossDistribution | None:
    """A pessimistic privacy-loss distribution for ``event``, or None if PLD cannot bound it.

    Events are immutable and PLDs are never mutated (composition returns a new
    one), so the curve of each (event, interval) is built once and reused: the
    same few events are bounded many times in a search (check, spend, totals,
    per-phase totals).
    """
    try:
        return _to_pld_cached(event, interval)
    except TypeError:  # an unhashable event (a field holding a list): build it afresh
        return _to_pld(event, interval)


def _to_pld(event: ev.PrivacyEvent, interval: float) -> pld_lib.PrivacyLossDistribution | None:
    if event.guarantee == "conditional":
        return None
    if isinstance(event, ev.LaplaceEvent):
        return pld_lib.from_laplace_mechanism(1.0 / event.epsilon, value_discretization_interval=interval)
    if isinstance(event, ev.GaussianEvent):
        if event.noise_multiplier == 0 or event.vector:  # a vector of discrete Gaussians: RDP only
            return None
        return pld_lib.from_gaussian_mechanism(event.noise_multiplier, value_discretization_interval=interval)
    if isinstance(event, (ev.ExponentialEvent, ev.SparseVectorEvent, ev.EpsilonDeltaEvent,
                          ev.ThresholdSelectionEvent)):
        eps, delta = event.epsilon_delta()  # type: ignore[misc]
        return pld_lib.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(eps, delta),
                                               value_discretization_interval=interval)
    if isinstance(event, ev.PoissonSampledEvent) and event.relation == "add_remove":
        # privtune's noise is discrete (a lattice): the continuous Laplace / Gaussian curves of a *subsampled*
        # mechanism are not proven for it. A subsampled pure-DP event is bounded by its amplified epsilon
        # (valid for every epsilon-DP mechanism); a subsampled Gaussian by RDP only.
        if isinstance(event.event, ev.LaplaceEvent):
            eps, _ = event.epsilon_delta()  # type: ignore[misc]
            return pld_lib.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(eps, 0.0),
                                                   value_discretization_interval=interval)
        return None
    if isinstance(event, ev.ComposedEvent):
        out = None
        for e in event.events:
            p = to_pld(e, interval)
            if p is None:
                return None
            out = p if out is None else out.compose(p)
        return out
    if isinstance(event, ev.SelfComposedEvent):
        if event.count == 0:
            return None
        inner = to_pld(event.event, interval)
        return None if inner is None else inner.self_compose(event.count)
    return None


_to_pld_cached = functools.lru_cache(maxsize=1024)(_to_pld)


#: Above this epsilon a PLD cannot be built in floating point (dp-accounting computes exp(epsilon)); such events
#: are bounded by basic composition (and RDP where it applies) instead.
_PLD_MAX_EPSILON = 500.0


def pld_supported(event: ev.PrivacyEvent) -> bool:
    """Whether :func:`to_pld` can bound ``event`` (cheap: builds nothing)."""
    if event.guarantee == "conditional":
        return False
    fixed = event.epsilon_delta()
    if fixed is not None and fixed[0] > _PLD_MAX_EPSILON:
        return False
    if isinstance(event, ev.LaplaceEvent):
        return True
    if isinstance(event, ev.GaussianEvent):
        return event.noise_multiplier > 0 and not event.vector
    if isinstance(event, (ev.ExponentialEvent, ev.SparseVectorEvent, ev.EpsilonDeltaEvent,
                          ev.ThresholdSelectionEvent)):
        return True
    if isinstance(event, ev.PoissonSampledEvent):
        return event.relation == "add_remove" and isinstance(event.event, ev.LaplaceEvent)
    if isinstance(event, ev.ComposedEvent):
        return bool(event.events) and all(pld_supported(e) for e in event.events)
    if isinstance(event, ev.SelfComposedEvent):
        return event.count > 0 and pld_supported(event.event)
    return False
