"""The privacy budget: an immutable (epsilon, delta) pair with a partial order."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privtune.utils._validation import check_delta, check_real

__all__ = ["Budget"]


@dataclass(frozen=True)
class Budget:
    """An (epsilon, delta) differential-privacy budget.

    Parameters
    ----------
    epsilon : float in [0, inf]
        Privacy-loss bound. ``0`` is allowed for an amount *spent* (nothing yet);
        ``inf`` for a non-private run.
    delta : float in [0, 1), default=0.0
        Failure probability.

    Notes
    -----
    Budgets are compared componentwise: ``a <= b`` when both ``a.epsilon <=
    b.epsilon`` and ``a.delta <= b.delta``. This is a partial order, so
    ``not (a <= b)`` does not imply ``b <= a``.

    Examples
    --------
    >>> from privtune.accounting import Budget
    >>> Budget(1.0, 1e-6) <= Budget(2.0, 1e-5)
    True
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real(self.epsilon, "epsilon", low=0.0, closed="left",
                                                       allow_inf=True, owner="Budget"))
        object.__setattr__(self, "delta", check_delta(self.delta, owner="Budget"))

    def __le__(self, other: Any) -> bool:
        if not isinstance(other, Budget):
            return NotImplemented
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def __ge__(self, other: Any) -> bool:
        if not isinstance(other, Budget):
            return NotImplemented
        return other <= self

    def __lt__(self, other: Any) -> bool:
        if not isinstance(other, Budget):
            return NotImplemented
        return self <= other and self != other

    def __gt__(self, other: Any) -> bool:
        if not isinstance(other, Budget):
            return NotImplemented
        return other < self

    def __iter__(self):
        yield self.epsilon
        yield self.delta

    @property
    def is_pure(self) -> bool:
        """True when ``delta == 0``."""
        return self.delta == 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``inf`` as the string ``"inf"``)."""
        return {"epsilon": "inf" if math.isinf(self.epsilon) else self.epsilon, "delta": self.delta}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Budget:
        """Inverse of :meth:`to_dict`."""
        eps = data["epsilon"]
        return cls(math.inf if eps == "inf" else eps, data.get("delta", 0.0))

    def __repr__(self) -> str:
        return f"Budget(epsilon={self.epsilon!r}, delta={self.delta!r})"
