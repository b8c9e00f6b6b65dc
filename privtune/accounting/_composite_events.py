"""Events built on other events: amplification by sampling, composition and private selection.

* :class:`PoissonSampledEvent`, :class:`SampledWithoutReplacementEvent`: an event
  run on a random subsample (amplification by sampling); :class:`SubsampledEvent`:
  any event with an RDP curve on a secret subsample (the general theorems);
* :class:`ComposedEvent`, :class:`SelfComposedEvent`: sequential composition;
* :class:`RepeatAndSelectEvent`, :class:`ThresholdSelectionEvent`: private
  selection among candidate runs (Papernot & Steinke 2022; Liu & Talwar 2019).

A wrapper checks the relation of every event nested in it
(:func:`~privtune.accounting._event_base._other_relations`). The events of one
mechanism are in :mod:`privtune.accounting._mechanism_events`. Split out of
:mod:`privtune.accounting.events` (issue 39), which re-exports every name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from privtune.accounting._event_base import PrivacyEvent, _check_event, _other_relations
from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_integer, check_real


def _amplified(event: PrivacyEvent, rate: float) -> tuple[float, float] | None:
    """The fixed guarantee of an (eps, delta) ``event`` run on a subsample of the given rate (None if it has none):
    ``(log(1 + rate (e^eps - 1)), rate delta)`` (Balle, Barthe & Gaboardi 2018, Thms. 8 and 9)."""
    base = event.epsilon_delta()
    if base is None:
        return None
    eps, delta = base
    return (_amplify_pure(eps, rate), rate * delta)


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
        return _amplified(self.event, self.sample_rate)


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
        return _amplified(self.event, self.sample_size / self.dataset_size)


@dataclass(frozen=True, kw_only=True)
class SubsampledEvent(PrivacyEvent):
    """Any ``event`` run on a secret random subsample, bounded by the general amplification theorems.

    :class:`PoissonSampledEvent` and :class:`SampledWithoutReplacementEvent` are
    accounted by dp-accounting's curves, which exist for Gaussian inner events
    only (a subsampled pure-DP event gets its amplified fixed epsilon). This
    event bounds *any* inner event with an RDP curve -- e.g. a whole
    random-stopping tuning phase (:class:`RepeatAndSelectEvent`) run on a subset
    of the training rows (Koskela & Kulkarni 2023) -- by the theorems that hold
    for every mechanism (:func:`privtune.accounting.amplification.subsampled_rdp`):

    * ``scheme="without_replacement"`` (``relation="replace_one"``):
      ``sample_size`` of ``dataset_size`` records, uniformly (Wang, Balle &
      Kasiviswanathan 2019, Thm. 9);
    * ``scheme="poisson"`` (``relation="add_remove"``): each record kept with
      ``sample_rate`` (Zhu & Wang 2019, Thm. 6).

    Its fixed guarantee, for an (eps, delta) inner event, is the amplified
    ``(log(1 + r (e^eps - 1)), r delta)`` with ``r`` the sampling rate (Balle,
    Barthe & Gaboardi 2018, Thms. 8 and 9).
    """

    kind: ClassVar[str] = "subsampled"
    event: PrivacyEvent
    scheme: str = "without_replacement"
    dataset_size: int = 0
    sample_size: int = 0
    sample_rate: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = "SubsampledEvent"
        _check_event(self.event, "event", owner)
        wanted = {"poisson": "add_remove", "without_replacement": "replace_one"}
        if self.scheme not in wanted:
            raise InvalidParameterError(
                f"The 'scheme' parameter of {owner} must be 'poisson' or 'without_replacement'. Got {self.scheme!r}.")
        relation = wanted[self.scheme]
        odd = _other_relations(self.event, relation)
        if self.relation != relation or odd:
            raise InvalidParameterError(
                f"{owner}: scheme={self.scheme!r} is analysed under relation={relation!r}; declare the event and "
                f"every event nested in it with that relation. Got relation={self.relation!r}"
                + (f", nested events of another relation: {odd}." if odd else "."))
        if self.scheme == "poisson":
            object.__setattr__(self, "sample_rate", check_real(self.sample_rate, "sample_rate", low=0.0, high=1.0,
                                                               closed="right", owner=owner))
        else:
            n = check_integer(self.dataset_size, "dataset_size", low=1, owner=owner)
            m = check_integer(self.sample_size, "sample_size", low=1, high=n, owner=owner)
            object.__setattr__(self, "dataset_size", n)
            object.__setattr__(self, "sample_size", m)
            object.__setattr__(self, "sample_rate", m / n)

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)

    def epsilon_delta(self) -> tuple[float, float] | None:
        return _amplified(self.event, self.sample_rate)


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
