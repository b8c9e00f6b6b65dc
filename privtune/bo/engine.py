"""The GP-UCB ask/tell engine (Kusner et al. Alg. 1's loop, Srinivas et al.'s beta schedule).

The engine sees exactly what its release method hands it: raw scores for
``gp-ucb`` (Alg. 1 runs on raw scores and privatises only its two final
releases), privatised scores for ``noisy-ucb``. It never logs, prints or stores
anything but the GP posterior, and proposes candidates deterministically (the
lowest index among ties), so given identical observations it proposes identical
candidates whatever produced them (post-processing invariance).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from privtune.bo.constants import beta_t
from privtune.gp import GPPosterior
from privtune.utils._validation import check_delta, check_integer

__all__ = ["UCBEngine"]


class UCBEngine:
    """Ask/tell GP-UCB over a finite candidate set.

    Parameters
    ----------
    posterior : GPPosterior
        The posterior over the candidate set (declared kernel, noise, bounds).
    delta : float in (0, 1)
        The delta in ``beta_t = 2 log(|Lambda| t^2 pi^2 / (3 delta))``.

    Notes
    -----
    ``ask`` returns ``argmax_lambda mu_{t-1}(lambda) + sqrt(beta_t) sigma_{t-1}(lambda)``
    with t the number of private observations so far plus one (Kusner eq. 3).
    Public-task observations inform the posterior but do not advance t.
    """

    def __init__(self, posterior: GPPosterior, *, delta: float) -> None:
        self.posterior = posterior
        self.delta = check_delta(delta, owner="UCBEngine", allow_zero=False)
        self.t = 0  # private observations told so far

    @property
    def n_candidates(self) -> int:
        return self.posterior.n_candidates

    def beta(self, t: int) -> float:
        """beta_t for this engine's |Lambda| and delta."""
        return beta_t(t, n_candidates=self.n_candidates, delta=self.delta)

    def ask(self) -> int:
        """The next candidate index (GP-UCB, lowest index among ties)."""
        return self.posterior.ucb_argmax(self.beta(self.t + 1))  # argmax of ucb(beta), computed in place

    def tell(self, index: int, value: float, *, noise_var: float | None = None) -> None:
        """Condition on a private-task observation at candidate ``index``."""
        self.posterior.add_observation(index, value, task=0, noise_var=noise_var)
        self.t += 1

    def tell_public(self, observations: Iterable[tuple[int, Any, float]]) -> None:
        """Condition on public-task observations ``(task >= 1, encoded x, value)``; t does not advance."""
        for task, x, value in observations:
            task = check_integer(task, "task", low=1, owner="UCBEngine.tell_public")
            self.posterior.add_observation_at(np.asarray(x, dtype=float), value, task=task)

    def mean(self) -> np.ndarray:
        """Posterior mean over the candidates (GP units)."""
        return self.posterior.mean

    def __repr__(self) -> str:
        return f"UCBEngine(n_candidates={self.n_candidates}, t={self.t}, delta={self.delta!r})"


