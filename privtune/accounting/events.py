"""Immutable privacy events: *what happened*, separate from *how it is bounded*.

Every access to sensitive data is described by one event before it happens. An
event carries

* its parameters (a noise multiplier, an epsilon, a sampling rate, ...),
* ``relation``: the neighbouring relation its sensitivity refers to,
  ``"replace_one"`` (privtune's default, the relation of seeds 000-002 and 004)
  or ``"add_remove"`` (seed 003's subsampled trainers), and
* ``guarantee``: ``"unconditional"``, or ``"conditional"`` for releases whose
  guarantee holds only under an assumption (Kusner et al. Alg. 1/2 hold under the
  GP prior of their Assumption 1, with probability at least 1 - delta).

Events are frozen dataclasses with a JSON-safe :meth:`~PrivacyEvent.to_dict`
and :func:`event_from_dict`, so that a ledger can store them durably and a study
can be resumed. Noise parameters are *relative to the declared sensitivity*
(as in ``dp_accounting``): a Gaussian event's ``noise_multiplier`` is
sigma / L2-sensitivity.

The module is pure bookkeeping: it never touches data and never draws noise.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = [
    "RELATIONS",
    "GUARANTEES",
    "PrivacyEvent",
    "LaplaceEvent",
    "GaussianEvent",
    "ExponentialEvent",
    "SparseVectorEvent",
    "EpsilonDeltaEvent",
    "PoissonSampledEvent",
    "SampledWithoutReplacementEvent",
    "ComposedEvent",
    "SelfComposedEvent",
    "RepeatAndSelectEvent",
    "ThresholdSelectionEvent",
    "RenyiEvent",
    "event_from_dict",
]

#: Neighbouring relations. ``"offsets_linf"`` is seed 001's (Han et al. eq. 4): two offset vectors of a piecewise
#: affine objective differ in at most ``n_changed`` entries, each by at most a declared bound; its events compose
#: only with events of the same relation.
RELATIONS = ("replace_one", "add_remove", "offsets_linf")
GUARANTEES = ("unconditional", "conditional")

_REGISTRY: dict[str, type[PrivacyEvent]] = {}


def _check_choice(value: Any, name: str, choices: tuple[str, ...], owner: str) -> str:
    if value not in choices:
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be one of {list(choices)}. Got {value!r} instead."
        )
    return value


@dataclass(frozen=True, kw_only=True)
class PrivacyEvent:
    """Base class of all privacy events.

    Parameters
    ----------
    relation : {"replace_one", "add_remove"}, default="replace_one"
        Neighbouring relation under which the event's sensitivity was declared.
    guarantee : {"unconditional", "conditional"}, default="unconditional"
        Whether the event's guarantee holds unconditionally or only under a
        modelling assumption (see the module docstring).
    label : str, default=""
        Free text for humans (which release, which phase). Must never contain a
        private value.
    """

    kind: ClassVar[str] = "event"

    relation: str = "replace_one"
    guarantee: str = "unconditional"
    label: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.kind] = cls

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_choice(self.relation, "relation", RELATIONS, owner)
        _check_choice(self.guarantee, "guarantee", GUARANTEES, owner)
        if not isinstance(self.label, str):
            raise InvalidParameterError(f"The 'label' parameter of {owner} must be a str.")

    # -- what the accountant asks ------------------------------------------------
    def epsilon_delta(self) -> tuple[float, float] | None:
        """The fixed (epsilon, delta) guarantee of this event, or None if it has none.

        Events with a whole privacy curve (the Gaussian mechanism) return None
        and are bounded through RDP or PLD accounting instead.
        """
        return None

    def children(self) -> tuple[PrivacyEvent, ...]:
        """Events nested inside this one (for composed, sampled and selection events)."""
        return ()

    def is_conditional(self) -> bool:
        """True if this event or any nested event has a conditional guarantee."""
        return self.guarantee == "conditional" or any(c.is_conditional() for c in self.children())

    # -- serialisation -------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict; :func:`event_from_dict` inverts it exactly."""
        out: dict[str, Any] = {"type": self.kind}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, PrivacyEvent):
                v = v.to_dict()
            elif isinstance(v, tuple) and v and isinstance(v[0], PrivacyEvent):
                v = [e.to_dict() for e in v]
            elif isinstance(v, float) and math.isinf(v):
                v = "inf"
            out[f.name] = v
        return out


def event_from_dict(data: dict[str, Any]) -> PrivacyEvent:
    """Rebuild an event from :meth:`PrivacyEvent.to_dict` output.

    Raises
    ------
    InvalidParameterError
        If the dict does not describe a known event type.
    """
    if not isinstance(data, dict) or data.get("type") not in _REGISTRY:
        raise InvalidParameterError(f"Not a serialised privacy event: unknown type {data.get('type')!r}."
                                    if isinstance(data, dict) else "Not a serialised privacy event.")
    cls = _REGISTRY[data["type"]]
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        v = data[f.name]
        if f.name == "event":
            v = event_from_dict(v)
        elif f.name == "events":
            v = tuple(event_from_dict(e) for e in v)
        elif v == "inf" and f.name not in ("label", "guarantee", "relation"):  # numbers only: a label may be "inf"
            v = math.inf
        kwargs[f.name] = v
    return cls(**kwargs)


@dataclass(frozen=True, kw_only=True)
class LaplaceEvent(PrivacyEvent):
    """Laplace (or discrete Laplace) noise calibrated to pure ``epsilon``-DP.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Sensitivity / scale: the event is ``(epsilon, 0)``-DP.
    """

    kind: ClassVar[str] = "laplace"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="LaplaceEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class GaussianEvent(PrivacyEvent):
    """Gaussian (or discrete Gaussian) noise with ``noise_multiplier`` = sigma / L2-sensitivity.

    It has no single (epsilon, delta): the accountant converts its privacy curve
    (RDP or PLD) at the delta the budget allows.

    ``vector=True`` marks discrete Gaussian noise on **several coordinates**.
    Its Renyi divergence is exactly the continuous one's, ``alpha D**2 / (2 sigma**2)``
    for an integer shift of L2 norm D: Canonne, Kamath & Steinke (2020) prove
    ``D_alpha(N_Z(mu, s**2) || N_Z(nu, s**2)) <= alpha (mu - nu)**2 / (2 s**2)`` for
    one coordinate, and the Renyi divergence of product distributions is the
    sum over coordinates (independent noise), which sums the squared shifts.
    Its (epsilon, delta) privacy curve, however, is proven equal to the
    continuous Gaussian's only for one coordinate. So a vector event is
    accounted through RDP only (never PLD or the exact Gaussian curve).
    """

    kind: ClassVar[str] = "gaussian"
    noise_multiplier: float
    vector: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "noise_multiplier",
                           check_real(self.noise_multiplier, "noise_multiplier", low=0.0,
                                      owner="GaussianEvent"))
        if not isinstance(self.vector, bool):
            raise InvalidParameterError(f"The 'vector' parameter of GaussianEvent must be a bool. Got {self.vector!r}.")


@dataclass(frozen=True, kw_only=True)
class ExponentialEvent(PrivacyEvent):
    """The exponential mechanism at pure ``epsilon``-DP.

    It is also epsilon-bounded-range, hence ``epsilon**2 / 8``-zCDP
    (Cesar & Rogers 2021), which the RDP accountant uses.
    """

    kind: ClassVar[str] = "exponential"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="ExponentialEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class SparseVectorEvent(PrivacyEvent):
    """One run of the sparse vector technique (AboveThreshold) at pure ``epsilon``-DP.

    The cost does not depend on how many queries were answered below the
    threshold, only on the (declared) maximum number of positive answers, which
    is already reflected in ``epsilon``.
    """

    kind: ClassVar[str] = "sparse_vector"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="SparseVectorEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class EpsilonDeltaEvent(PrivacyEvent):
    """A mechanism known only to be ``(epsilon, delta)``-DP.

    Used for releases with a closed-form guarantee and no finer curve, and for
    conditional releases (Kusner Alg. 1/2: ``guarantee="conditional"``).
    """

    kind: ClassVar[str] = "epsilon_delta"
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="EpsilonDeltaEvent"))
        object.__setattr__(self, "delta", check_delta(self.delta, owner="EpsilonDeltaEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, self.delta)


def _amplify_pure(epsilon: float, rate: float) -> float:
    # log(1 + rate (e^eps - 1)), stable for small and large epsilon.
    if rate <= 0:
        return 0.0
    if epsilon > 700:  # log(q e^eps + (1 - q)) without overflow; never below the exact value
        a, b = epsilon + math.log(rate), (math.log1p(-rate) if rate < 1 else -math.inf)
        hi, lo = max(a, b), min(a, b)
        return hi + math.log1p(math.exp(lo - hi))
    return math.log1p(rate * math.expm1(epsilon))


@dataclass(frozen=True, kw_only=True)
class PoissonSampledEvent(PrivacyEvent):
    """``event`` run on a Poisson subsample (each record kept with ``sample_rate``).

    Amplification by Poisson subsampling is analysed under add/remove; use this
    event with ``relation="add_remove"``. For a pure epsilon-DP base the fixed
    guarantee is ``log(1 + q (e^eps - 1))`` (Li, Qardaji & Su 2012; Balle et al.
    2018, Thm. 8).
    """

    kind: ClassVar[str] = "poisson_sampled"
    event: PrivacyEvent
    sample_rate: float

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_event(self.event, "event", "PoissonSampledEvent")
        odd = _other_relations(self.event, "add_remove")
        if self.relation != "add_remove" or odd:
            raise InvalidParameterError(
                "PoissonSampledEvent: amplification by Poisson subsampling is analysed under add/remove; declare "
                "the event and its inner event (and every event nested in it) with relation='add_remove' (under "
                "replace-one the amplified bound does not hold in general). Got relation="
                f"{self.relation!r}, inner relation={self.event.relation!r}"
                + (f", nested events of another relation: {odd}." if odd else "."))
        object.__setattr__(self, "sample_rate",
                           check_real(self.sample_rate, "sample_rate", low=0.0, high=1.0,
                                      closed="right", owner="PoissonSampledEvent"))

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)

    def epsilon_delta(self) -> tuple[float, float] | None:
        base = self.event.epsilon_delta()
        if base is None:
            return None
        eps, delta = base
        return (_amplify_pure(eps, self.sample_rate), self.sample_rate * delta)


@dataclass(frozen=True, kw_only=True)
class SampledWithoutReplacementEvent(PrivacyEvent):
    """``event`` run on ``sample_size`` records drawn without replacement from ``dataset_size``.

    Under replace-one, an (eps, delta)-DP base becomes
    ``(log(1 + (m/n)(e^eps - 1)), (m/n) delta)``-DP (Balle, Barthe & Gaboardi 2018,
    Thm. 9; eq. (3.3) of seed 002).
    """

    kind: ClassVar[str] = "sampled_without_replacement"
    event: PrivacyEvent
    dataset_size: int
    sample_size: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_event(self.event, "event", "SampledWithoutReplacementEvent")
        odd = _other_relations(self.event, "replace_one")
        if self.relation != "replace_one" or odd:
            raise InvalidParameterError(
                "SampledWithoutReplacementEvent: amplification by sampling without replacement is analysed under "
                "replace-one (fixed n); declare the event and its inner event (and every event nested in it) with "
                f"relation='replace_one'. Got relation={self.relation!r}, inner relation={self.event.relation!r}"
                + (f", nested events of another relation: {odd}." if odd else "."))
        n = check_integer(self.dataset_size, "dataset_size", low=1, owner="SampledWithoutReplacementEvent")
        m = check_integer(self.sample_size, "sample_size", low=1, high=n,
                          owner="SampledWithoutReplacementEvent")
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "sample_size", m)

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)

    def epsilon_delta(self) -> tuple[float, float] | None:
        base = self.event.epsilon_delta()
        if base is None:
            return None
        rate = self.sample_size / self.dataset_size
        eps, delta = base
        return (_amplify_pure(eps, rate), rate * delta)


@dataclass(frozen=True, kw_only=True)
class ComposedEvent(PrivacyEvent):
    """Sequential (possibly adaptive) composition of several events."""

    kind: ClassVar[str] = "composed"
    events: tuple[PrivacyEvent, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))
        super().__post_init__()
        for e in self.events:
            _check_event(e, "events", "ComposedEvent")

    def children(self) -> tuple[PrivacyEvent, ...]:
        return self.events

    def epsilon_delta(self) -> tuple[float, float] | None:
        parts = [e.epsilon_delta() for e in self.events]
        if any(p is None for p in parts):
            return None
        return (math.fsum(p[0] for p in parts), math.fsum(p[1] for p in parts))  # type: ignore[index]


@dataclass(frozen=True, kw_only=True)
class SelfComposedEvent(PrivacyEvent):
    """``count`` sequential repetitions of ``event``."""

    kind: ClassVar[str] = "self_composed"
    event: PrivacyEvent
    count: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_event(self.event, "event", "SelfComposedEvent")
        object.__setattr__(self, "count", check_integer(self.count, "count", low=0,
                                                        owner="SelfComposedEvent"))

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)

    def epsilon_delta(self) -> tuple[float, float] | None:
        base = self.event.epsilon_delta()
        if base is None:
            return None
        return (self.count * base[0], self.count * base[1])


@dataclass(frozen=True, kw_only=True)
class RepeatAndSelectEvent(PrivacyEvent):
    """Papernot & Steinke (2022) private selection with a random number of runs K.

    ``event`` is one candidate run (train and score, itself DP); K is drawn from a
    truncated negative binomial with ``shape`` = eta (0 logarithmic, 1 geometric)
    or a Poisson distribution (``shape=inf``) with the given ``mean``, and only the
    best of the K runs is released.

    For a pure epsilon-DP base and a truncated-negative-binomial K the result is
    ``(2 + eta) epsilon``-DP (P&S Thm. 2, corollary; eta = 1 is Liu & Talwar's 3
    epsilon). The RDP accountant uses the full Theorems 2 and 6.

    Those bounds are for the uncapped law of K. privtune samples K exactly
    (integer arithmetic) from the law conditioned on ``K <= max_runs``, held at
    2**-160 resolution (:func:`privtune.accounting.selection.repetition_cap`),
    proven within total variation ``truncation_mass()`` (2**-100, covering the
    cap's tail and the rounding) of it, so the accountant adds
    ``(1 + e**eps) * truncation_mass()`` to the delta of any total that
    contains this event (a coupling of the two laws). :meth:`epsilon_delta`
    is the uncapped bound, like every other event's own guarantee.
    """

    kind: ClassVar[str] = "repeat_and_select"
    event: PrivacyEvent
    mean: float
    shape: float

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_event(self.event, "event", "RepeatAndSelectEvent")
        mean = check_real(self.mean, "mean", low=1.0, closed="neither", owner="RepeatAndSelectEvent")
        shape = check_real(self.shape, "shape", low=-1.0, closed="neither", allow_inf=True,
                           owner="RepeatAndSelectEvent")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "shape", shape)

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)

    def max_runs(self) -> int:
        """The hard cap on K of the law privtune samples from."""
        from privtune.accounting.selection import repetition_cap

        return repetition_cap(self.mean, self.shape)[0]

    def truncation_mass(self) -> float:
        """An upper bound on the total variation between the law of K sampled and the uncapped law."""
        from privtune.accounting.selection import repetition_cap

        return repetition_cap(self.mean, self.shape)[1]

    def epsilon_delta(self) -> tuple[float, float] | None:
        base = self.event.epsilon_delta()
        if base is None or base[1] > 0 or math.isinf(self.shape):
            return None
        return ((2.0 + self.shape) * base[0], 0.0)


@dataclass(frozen=True, kw_only=True)
class ThresholdSelectionEvent(PrivacyEvent):
    """Liu & Talwar (2019) Alg. 1: run candidates until one beats a public threshold.

    After each run below the threshold the loop stops with probability
    ``stop_probability``. For a pure epsilon-DP base the whole procedure is
    ``2 epsilon``-DP (Liu & Talwar 2019, known-threshold selection; the guarantee
    OpenDP implements as ``make_select_private_candidate``).
    """

    kind: ClassVar[str] = "threshold_selection"
    event: PrivacyEvent
    stop_probability: float

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_event(self.event, "event", "ThresholdSelectionEvent")
        object.__setattr__(self, "stop_probability",
                           check_real(self.stop_probability, "stop_probability", low=0.0, high=1.0,
                                      closed="right", owner="ThresholdSelectionEvent"))
        base = self.event.epsilon_delta()
        if base is None or base[1] > 0:
            raise InvalidParameterError(
                "ThresholdSelectionEvent needs a pure epsilon-DP base event (Liu & Talwar 2019); "
                f"got {type(self.event).__name__}."
            )

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)

    def epsilon_delta(self) -> tuple[float, float]:
        base = self.event.epsilon_delta()
        assert base is not None
        return (2.0 * base[0], 0.0)


@dataclass(frozen=True, kw_only=True)
class RenyiEvent(PrivacyEvent):
    r"""A Rényi-DP guarantee stated at a few orders: ``(orders[i], epsilons[i])``-RDP for every ``i``.

    This is how a run whose mechanisms were chosen *adaptively* (budgets raised
    by a test on earlier releases) is charged: a Rényi filter fixed in advance
    (Feldman & Zrnic 2021, Thm. 3.1) stops the run before the running RDP
    total at a pre-chosen order exceeds its cap, and the whole run is then
    ``(order, cap)``-RDP, whatever the adaptive choices were. The event is the
    cap, a public, data-independent quantity.

    Bounding other orders: Rényi divergence is non-decreasing in the order
    (van Erven & Harremoës 2014, Thm. 3), so a bound at order ``a`` bounds
    every order ``alpha <= a``; an accountant evaluating the event at order
    ``alpha`` takes the smallest ``epsilons[i]`` with ``orders[i] >= alpha``,
    and no bound (``inf``) above the largest order. The event has no fixed
    (epsilon, delta) of its own (RDP accounting only; no PLD).

    Relation change (add/remove -> replace-one): a replacement is a removal and
    an addition, and the weak triangle inequality of Rényi divergence
    (Mironov 2017, Prop. 11, with ``p = q = 2``) gives
    :math:`D_\alpha(P\|R) \le \frac{\alpha - 1/2}{\alpha - 1} D_{2\alpha}(P\|Q) + D_{2\alpha-1}(Q\|R)`.
    With both terms bounded by the add/remove bound at order ``a = 2 alpha``
    (monotonicity again), an ``(a, e)`` add/remove guarantee becomes an
    ``(a / 2, (1 + (a - 1) / (a - 2)) e)`` replace-one guarantee, for ``a > 2``
    (:meth:`as_replace_one`).

    Parameters
    ----------
    orders : tuple of float, each > 1, strictly increasing
    epsilons : tuple of float, each >= 0, same length
    """

    kind: ClassVar[str] = "renyi"
    orders: tuple[float, ...]
    epsilons: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = "RenyiEvent"
        try:
            orders = tuple(float(a) for a in self.orders)
            eps = tuple(float(e) for e in self.epsilons)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"The 'orders' and 'epsilons' of {owner} must be sequences of numbers.") from None
        if not orders or len(orders) != len(eps):
            raise InvalidParameterError(f"{owner} needs as many epsilons as orders, and at least one of each.")
        increasing = all(b > a for a, b in zip(orders, orders[1:], strict=False))
        if any(not math.isfinite(a) or a <= 1 for a in orders) or not increasing:
            raise InvalidParameterError(f"The orders of {owner} must be finite, > 1 and strictly increasing.")
        if any(not math.isfinite(e) or e < 0 for e in eps):
            raise InvalidParameterError(f"The epsilons of {owner} must be finite and >= 0.")
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "epsilons", eps)

    def rdp_at(self, orders: Any) -> Any:
        """The RDP bound at each of ``orders`` (``inf`` above the largest stated order)."""
        import numpy as np

        a = np.asarray(orders, dtype=float)
        stated = np.asarray(self.orders)
        # the smallest stated epsilon among the stated orders >= alpha (epsilons need not be monotone)
        suffix_min = np.minimum.accumulate(np.asarray(self.epsilons)[::-1])[::-1]
        idx = np.searchsorted(stated, a, side="left")
        out = np.full(a.shape, np.inf)
        ok = idx < stated.size
        out[ok] = suffix_min[idx[ok]]
        return out

    def as_replace_one(self) -> RenyiEvent:
        """This add/remove guarantee stated under replace-one (weak triangle inequality; see above)."""
        if self.relation == "replace_one":
            return self
        if self.relation != "add_remove":
            raise InvalidParameterError(f"RenyiEvent of relation {self.relation!r} has no replace-one form.")
        pairs = [(a / 2.0, (1.0 + (a - 1.0) / (a - 2.0)) * e)
                 for a, e in zip(self.orders, self.epsilons, strict=True) if a > 2.0]
        if not pairs:
            raise InvalidParameterError(
                "An add/remove RenyiEvent needs an order above 2 to be stated under replace-one "
                "(the conversion halves the order).")
        return RenyiEvent(orders=tuple(a for a, _ in pairs), epsilons=tuple(e for _, e in pairs),
                          relation="replace_one", guarantee=self.guarantee, label=self.label)


def _other_relations(event: PrivacyEvent, relation: str) -> list[str]:
    """Names of ``event`` and of every event nested in it, at any depth, not declared under ``relation``.

    A wrapper's bound (sampling amplification, private selection) is computed
    from its inner event's own guarantee *as declared*: an event nested under a
    ``ComposedEvent`` or ``SelfComposedEvent`` inside the wrapper counts as much
    as a direct child (a composition's ``epsilon_delta`` sums its parts'
    declared values whatever their relation).
    """
    out: list[str] = []
    stack = [event]
    while stack:
        e = stack.pop()
        if e.relation != relation:
            out.append(type(e).__name__)
        stack.extend(e.children())
    return out


def _check_event(value: Any, name: str, owner: str) -> None:
    if not isinstance(value, PrivacyEvent):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be a PrivacyEvent. Got {type(value).__name__}."
        )



