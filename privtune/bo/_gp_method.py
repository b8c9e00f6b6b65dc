"""Shared set-up of the GP-driven release methods (internal): kernel, posterior, engine, gamma_T."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.bo._base import ReleaseMethod
from privtune.bo.engine import UCBEngine
from privtune.exceptions import InvalidParameterError
from privtune.gp import GPPosterior, InputKernel, MultiTaskKernel, TaskKernel, gamma_T
from privtune.space import CandidateSet

__all__ = ["GPMethod", "DEFAULT_TASK_CORRELATION"]

#: Kusner et al. (2015) found k1(V, V') = 0.95 the most likely value on their data (Figure 1).
#: Estimate yours on public data with :func:`privtune.gp.estimate_task_correlation`.
DEFAULT_TASK_CORRELATION = 0.95


class GPMethod(ReleaseMethod):
    """A release method driven by GP-UCB over the candidate set."""

    def __init__(self, *, kernel: MultiTaskKernel | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kernel is None:
            kernel = MultiTaskKernel(InputKernel(0.2), TaskKernel(DEFAULT_TASK_CORRELATION))
        if not isinstance(kernel, MultiTaskKernel):
            raise InvalidParameterError(
                f"The 'kernel' parameter of {type(self).__name__} must be a privtune.gp.MultiTaskKernel "
                "(it declares k1(V, V'), which the guarantee needs) or None. "
                f"Got {type(kernel).__name__}.")
        self.kernel = kernel

    @property
    def task_correlation(self) -> float:
        return float(self.kernel.task_correlation)

    def _posterior(self, candidates: CandidateSet, noise_var: float, capacity: int = 32) -> GPPosterior:
        return GPPosterior(candidates, self.kernel, noise_var=noise_var, score_bounds=self.score_bounds,
                           capacity=capacity)

    def _engine(self, candidates: CandidateSet, noise_var: float, delta: float,
                public_observations: Sequence[Any]) -> UCBEngine:
        # Room for every planned observation up front: the factor never reallocates inside the loop.
        capacity = len(public_observations) + int(self.n_iter) + 1
        engine = UCBEngine(self._posterior(candidates, noise_var, capacity), delta=delta)
        engine.tell_public(public_observations)
        return engine

    def gamma_T(self, candidates: CandidateSet, T: int, noise_var: float) -> float:
        """The information-gain bound used: greedy / (1 - 1/e) over the candidate set (data-independent)."""
        return _gamma_cached(candidates, self.kernel, T, noise_var)


_GAMMA_CACHE: dict[tuple, float] = {}


def _gamma_cached(candidates: CandidateSet, kernel: MultiTaskKernel, T: int, noise_var: float) -> float:
    # Keyed on the candidates' contents (never on id(), which Python reuses): a stale, smaller gamma_T would
    # shrink gp-ucb's Laplace noise below what the guarantee needs.
    X = np.ascontiguousarray(candidates.X, dtype=np.float64)
    key = (hashlib.sha256(X.tobytes()).hexdigest(), X.shape, repr(kernel), int(T), float(noise_var))
    if key not in _GAMMA_CACHE:
        if len(_GAMMA_CACHE) > 32:
            _GAMMA_CACHE.clear()
        _GAMMA_CACHE[key] = float(gamma_T(candidates.X, T, noise_var, kernel=kernel).bound)
    return _GAMMA_CACHE[key]
