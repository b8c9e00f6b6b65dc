"""Shared machinery of the release methods (internal).

* :class:`ChargedObjective` -- the only path from a release method to the
  user's objective. It refuses any call that has not been paid for (the method
  must charge the accountant first), clips every score to the declared bounds
  (rule: bounds are enforced, never read off the data) and maps a non-finite
  score to the lower bound (like scikit-learn's ``error_score``), without ever
  echoing the value.
* budget splitting and up-front validation of a whole plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from privtune.accounting import Budget
from privtune.exceptions import InvalidParameterError, PrivtuneError
from privtune.utils._validation import check_real

__all__ = ["ChargedObjective", "split_budget", "check_objective", "best_case_selection"]

ROLE = "validation"


class ChargedObjective:
    """Wraps ``objective(params) -> score``; calls it only for accesses already charged."""

    def __init__(self, objective: Callable[[Mapping[str, Any]], float], candidates: Any,
                 lower: float, upper: float, mapper: Callable[..., list[Any]] | None = None) -> None:
        self._objective = objective
        self._candidates = candidates
        self._lower, self._upper = float(lower), float(upper)
        self._mapper = mapper
        self._paid = 0
        self._used = 0

    def pay(self, n: int) -> None:
        """Record that ``n`` more accesses have been charged to the accountant."""
        self._paid += int(n)

    @property
    def accesses(self) -> int:
        return self._used

    def __call__(self, index: int) -> float:
        self._take(1)
        return self._clip(self._objective(dict(self._candidates[index])))

    def batch(self, indices: Sequence[int]) -> list[float]:
        """Evaluate several candidates, in parallel when a mapper was given; results in order."""
        indices = [int(i) for i in indices]
        self._take(len(indices))
        params = [dict(self._candidates[i]) for i in indices]
        values = (self._mapper(self._objective, params) if self._mapper is not None
                  else [self._objective(p) for p in params])
        return [self._clip(v) for v in values]

    def keep_last_run(self) -> None:
        """Tell the objective that its last evaluation is the one to keep (random stopping's best run so far).

        Calls the objective's own ``keep_last_run()`` if it has one (``PrivateSearchCV``
        keeps that run's fitted model as ``best_estimator_``); nothing else. The
        objective never learns why, nor any score.
        """
        hook = getattr(self._objective, "keep_last_run", None)
        if callable(hook):
            hook()

    def _take(self, n: int) -> None:
        if self._used + n > self._paid:
            raise PrivtuneError("Internal error: an evaluation of the sensitive objective was not paid for; "
                                "nothing was evaluated.")
        self._used += n

    def _clip(self, value: Any) -> float:
        # A value that is not a finite real number scores the lower bound, never an error: on a raw-score path
        # whether such a value is met depends on the sensitive data (the candidates visited).
        try:
            v = float(value)
        except (TypeError, ValueError, ArithmeticError):
            return self._lower
        if not math.isfinite(v):
            return self._lower
        return min(self._upper, max(self._lower, v))


def check_objective(objective: Any) -> None:
    if not callable(objective):
        raise InvalidParameterError("The 'objective' parameter must be a callable params -> score. "
                                    f"Got {type(objective).__name__}.")


def split_budget(epsilon: float, delta: float, share: float, owner: str) -> tuple[Budget, Budget]:
    """Split (epsilon, delta) into ``share`` and ``1 - share`` (each part strictly positive)."""
    s = check_real(share, "selection_share", low=0.0, high=1.0, owner=owner)
    first = Budget(epsilon * s, delta * s)
    second = Budget(epsilon * (1.0 - s), delta * (1.0 - s))
    return first, second


def best_case_selection(weight: float, gap: float, n: int) -> dict[str, float]:
    """Data-independent picture of an exponential mechanism's selectivity.

    The selection distribution if the top decile of ``n`` candidates beat all
    others by ``gap`` (in the units the weight applies to): its mass on the top
    decile and its entropy relative to uniform. A function of public quantities
    only, so safe to report for every method -- unlike the entropy of the actual
    EM distribution, which depends on the raw scores.
    """
    k = max(1, n // 10)
    rest = n - k
    a = weight * gap  # log-odds of one top candidate against one other
    # mass on the top decile: k e^a / (k e^a + rest), computed without overflow
    mass = 1.0 / (1.0 + (rest / k) * math.exp(-a)) if rest else 1.0
    # entropy of the distribution: top candidates have log p_top, others log p_top - a
    log_norm = math.log(k) + a + math.log1p((rest / k) * math.exp(-a)) if rest else math.log(k)
    log_p_top = a - log_norm
    ent = -(mass * log_p_top + (1.0 - mass) * (log_p_top - a))
    return {"top_decile_mass_best_case": mass, "top_decile_mass_uniform": k / n,
            "entropy_ratio_best_case": ent / math.log(n) if n > 1 else 0.0}


def argmax_first(values: np.ndarray) -> int:
    """Index of the maximum, lowest index among ties (deterministic)."""
    return int(np.argmax(values))
