"""What a private search returns: releases, iteration records and their privacy labels.

Everything in a :class:`Release` or an :class:`IterationRecord` is either a
differentially private release, a post-processing of releases, or a function
of public, declared quantities only. Raw scores computed on sensitive data are
never stored here: the objects are safe to log, pass to callbacks, serialise
into reports and show in ``cv_results_``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from privtune.accounting.budget import Budget
from privtune.accounting.events import PrivacyEvent

__all__ = ["FrozenDict", "IterationRecord", "Release"]


class FrozenDict(dict):
    """A read-only dict (picklable, JSON-serialisable, unlike ``MappingProxyType``)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("this mapping is read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __ior__(self, other: Any) -> Any:  # pragma: no cover - |= is also a mutation
        raise TypeError("this mapping is read-only")


def _freeze(d: Any) -> FrozenDict:
    return FrozenDict({k: _freeze(v) if isinstance(v, dict) and not isinstance(v, FrozenDict) else v
                       for k, v in dict(d or {}).items()})


@dataclass(frozen=True)
class IterationRecord:
    """One iteration of a search, as a callback or a report may see it.

    Parameters
    ----------
    iteration : int
        1-based iteration number.
    params : mapping or None
        The hyperparameters evaluated, or None when the trajectory itself is not
        releasable (``gp-ucb``, ``gp-ucb-exact`` and ``lipschitz`` choose their
        points from raw scores; only their final releases are private).
    released_score : float or None
        The privatised score of this evaluation (``noisy-ucb``), else None.
    noise_std : float or None
        Standard deviation of the noise in ``released_score`` (score units).
    epsilon_spent : float
        Cumulative epsilon charged so far (public).
    """

    iteration: int
    params: Any
    released_score: float | None
    noise_std: float | None
    epsilon_spent: float

    def __post_init__(self) -> None:
        if self.params is not None:
            object.__setattr__(self, "params", _freeze(self.params))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IterationRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(iteration=d["iteration"], params=d["params"], released_score=d["released_score"],
                   noise_std=d["noise_std"], epsilon_spent=d["epsilon_spent"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"iteration": self.iteration, "params": None if self.params is None else dict(self.params),
                "released_score": self.released_score, "noise_std": self.noise_std,
                "epsilon_spent": self.epsilon_spent}


@dataclass(frozen=True)
class Release:
    """The private output of one search.

    Attributes
    ----------
    method : str
        The release method (``"gp-ucb"``, ``"gp-ucb-exact"``, ``"lipschitz"``,
        ``"noisy-ucb"``, ``"random"``).
    params : mapping or None
        lambda~, the released hyperparameters (None only for a Poisson random
        stopping that drew K = 0).
    index : int or None
        lambda~'s index in the candidate set.
    score : float or None
        v~, the released score in score units (None when the method releases none).
    events : tuple of PrivacyEvent
        Every event charged for this search, in order.
    spent : Budget
        Their composition.
    guarantee : {"unconditional", "conditional"}
        ``"conditional"`` for Kusner Alg. 1/2: the guarantee holds only under the
        declared GP prior (Assumption 1), with probability at least 1 - delta.
    noise : mapping
        Public noise scales of each release, in score units.
    utility_bounds : mapping
        The paper's utility theorems as confidence statements (score units), where
        the method has them.
    diagnostics : mapping
        Data-independent quantities or post-processing of releases only (see each
        method's docstring for what is safe to show).
    history : tuple of IterationRecord
        Per-iteration records (releasable fields only).
    n_iter : int or None
        Iterations actually run (None when it is secret: random stopping).
    seeded : bool
        True if noise came from a seeded generator: reproducible, **not for release**.
    """

    method: str
    params: Any
    index: int | None
    score: float | None
    events: tuple[PrivacyEvent, ...]
    spent: Budget
    guarantee: str
    noise: Any = field(default_factory=dict)
    utility_bounds: Any = field(default_factory=dict)
    diagnostics: Any = field(default_factory=dict)
    history: tuple[IterationRecord, ...] = ()
    n_iter: int | None = 0
    seeded: bool = False

    def __post_init__(self) -> None:
        if self.params is not None:
            object.__setattr__(self, "params", _freeze(self.params))
        for name in ("noise", "utility_bounds", "diagnostics"):
            object.__setattr__(self, name, _freeze(getattr(self, name)))
        object.__setattr__(self, "events", tuple(self.events))
        object.__setattr__(self, "history", tuple(self.history))

    @property
    def seed_policy(self) -> str:
        """``"seeded (reproducible, not for release)"`` or ``"secure"``."""
        return "seeded (reproducible, not for release)" if self.seeded else "secure"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Release:
        """Inverse of :meth:`to_dict` (used to restore a completed search from study storage)."""
        from privtune.accounting.events import event_from_dict

        def num(v: Any) -> Any:
            return float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v

        def clean(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return num(v)

        return cls(method=d["method"], params=d["params"], index=d["index"], score=num(d["score"]),
                   events=tuple(event_from_dict(e) for e in d["events"]), spent=Budget.from_dict(d["spent"]),
                   guarantee=d["guarantee"], noise=clean(d["noise"]), utility_bounds=clean(d["utility_bounds"]),
                   diagnostics=clean(d["diagnostics"]),
                   history=tuple(IterationRecord.from_dict(h) for h in d["history"]), n_iter=d["n_iter"],
                   seeded=d["seed_policy"] != "secure")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (no raw private value is held, so nothing is dropped)."""
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return repr(v)
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            return v

        return clean({
            "method": self.method, "params": None if self.params is None else dict(self.params),
            "index": self.index, "score": self.score, "events": [e.to_dict() for e in self.events],
            "spent": self.spent.to_dict(), "guarantee": self.guarantee, "noise": dict(self.noise),
            "utility_bounds": dict(self.utility_bounds), "diagnostics": dict(self.diagnostics),
            "history": [h.to_dict() for h in self.history], "n_iter": self.n_iter,
            "seed_policy": self.seed_policy,
        })
