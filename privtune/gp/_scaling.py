"""A data-independent map between score units and the GP's standardised scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_real

__all__ = ["ScoreScale"]


class ScoreScale:
    """Affine map from declared score bounds ``[lower, upper]`` onto ``[-1, 1]``.

    ``z = (v - mid) / half_range`` with ``mid = (lower + upper) / 2`` and
    ``half_range = (upper - lower) / 2``; the inverse is
    ``v = mid + half_range * z``. Variances scale by ``half_range**2``.

    The GP has prior mean 0 and prior variance ``k(λ, λ) = 1`` on the ``z``
    scale, i.e. prior mean ``mid`` and prior standard deviation ``half_range``
    in score units. Kusner et al.'s constants (β_t, c, q, the EM weights, the
    Laplace scales) are in these standardised units; multiply by
    ``half_range`` to express them in score units.

    The bounds are declared (e.g. ``(0, 1)`` for accuracy), never read off the
    observed scores: standardising by observed private values would leak them.
    Values outside the bounds are accepted (noisy scores may leave them).

    Parameters
    ----------
    lower, upper : float
        Finite declared bounds of the score, ``lower < upper``.
    """

    def __init__(self, lower: float, upper: float) -> None:
        lo = check_real(lower, "lower", owner="ScoreScale")
        hi = check_real(upper, "upper", owner="ScoreScale")
        if not lo < hi or not np.isfinite(hi - lo):
            raise InvalidParameterError(
                "The 'lower' and 'upper' parameters of ScoreScale must satisfy lower < upper "
                f"with a finite difference. Got lower={lower!r}, upper={upper!r} instead."
            )
        self.lower, self.upper = lo, hi
        self.mid = lo + (hi - lo) / 2.0
        self.half_range = (hi - lo) / 2.0

    @classmethod
    def coerce(cls, bounds: Any, name: str = "score_bounds") -> ScoreScale:
        """Accept a :class:`ScoreScale` or a ``(lower, upper)`` pair."""
        if isinstance(bounds, ScoreScale):
            return bounds
        try:
            lower, upper = bounds
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"The {name!r} parameter must be a ScoreScale or a (lower, upper) pair. "
                f"Got {bounds!r} instead."
            ) from None
        return cls(lower, upper)

    def to_scaled(self, v: Any) -> Any:
        """Score units → standardised units: ``(v - mid) / half_range``."""
        return (np.asarray(v, dtype=np.float64) - self.mid) / self.half_range

    def to_scores(self, z: Any) -> Any:
        """Standardised units → score units: ``mid + half_range * z``."""
        return self.mid + self.half_range * np.asarray(z, dtype=np.float64)

    def variance_to_scaled(self, var: Any) -> Any:
        """A variance in score units² → standardised units: ``var / half_range**2``."""
        return np.asarray(var, dtype=np.float64) / self.half_range**2

    def variance_to_scores(self, var: Any) -> Any:
        """A variance in standardised units → score units²: ``var * half_range**2``."""
        return np.asarray(var, dtype=np.float64) * self.half_range**2

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScoreScale) and (self.lower, self.upper) == (
            other.lower, other.upper)

    def __hash__(self) -> int:
        return hash((self.lower, self.upper))

    def __repr__(self) -> str:
        return f"ScoreScale(lower={self.lower!r}, upper={self.upper!r})"
