"""The base of every privacy event: :class:`PrivacyEvent`, its relations and guarantees, and their serialisation.

An event carries, besides its own parameters,

* ``relation``: the neighbouring relation its sensitivity refers to,
  ``"replace_one"`` (privtune's default, the relation of seeds 000-002 and 004),
  ``"add_remove"`` (seed 003's subsampled trainers) or ``"offsets_linf"``
  (seed 001's offset vectors), and
* ``guarantee``: ``"unconditional"``, or ``"conditional"`` for releases whose
  guarantee holds only under an assumption (Kusner et al. Alg. 1/2 hold under the
  GP prior of their Assumption 1, with probability at least 1 - delta).

Every subclass registers its ``kind`` when it is defined, so that
:func:`event_from_dict` can rebuild any event from :meth:`PrivacyEvent.to_dict`
(a ledger stores events as that JSON). The event types themselves are in
:mod:`privtune.accounting._mechanism_events` and
:mod:`privtune.accounting._composite_events`; :mod:`privtune.accounting.events`
re-exports them all (split out of it by issue 39), and importing any module of
:mod:`privtune.accounting` imports it, so every type is registered.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from privtune.exceptions import InvalidParameterError

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
