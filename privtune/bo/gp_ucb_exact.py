r"""``gp-ucb-exact``: Kusner et al. (2015) Algorithm 2 (noise-free observations).

The loop is GP-UCB with noise-free observations (a GP noise variance of 0, with
the posterior's documented jitter only where a pivot would vanish). Released:

* lambda~ by Alg. 1's exponential mechanism with q = 0 (Thms. 1-2 hold with q = 0);
* f~ = max_{2 <= t <= T} f(lambda_t) + Laplace noise of scale
  ``(A / epsilon) exp(-2 tau / (log 2)^(d/4)) + c / epsilon`` with
  ``c = 2 sqrt((1 - k1) log(2 |Lambda| / delta))`` (Thm. 5; Cor. 3).

The guarantee is **conditional**: on Assumption 1 (the GP prior) and on the
exponential-regret bound of de Freitas, Smola & Zoghi (2012) holding with the
*declared* constants A and tau (the paper gives no values; they must come from
the user's knowledge of f, never from the private scores).

What f is. The loop observes the objective's values clipped to the declared
bounds, with no noise (as Alg. 2 assumes). Under ``PrivateSearchCV``, f(lambda)
is the score of the first fit at lambda (a candidate visited again is fitted
again but keeps its first score), so f is one fixed function even when fits
draw fresh DP noise. The prior's draw is unbounded (standard deviation half the
score range): where it leaves the declared bounds (probability 2 Phi(-1) ~ 0.32
at each lambda) the loop observes the bound instead, outside the model the
theorems are proved for; see :mod:`privtune.bo.gp_ucb` and docs/methods.md.

Departure from the paper. de Freitas et al.'s method is GP-UCB with a
branch-and-bound shrinking of the search region; privtune runs plain GP-UCB over
the finite candidate set. The sensitivity bound of Thm. 5 is a statement about
the regret of the optimiser, so with plain GP-UCB it holds only insofar as the
declared A and tau bound *its* regret: this is part of the declared assumption,
and the docs say so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from privtune.accounting import Accountant, EpsilonDeltaEvent, PrivacyEvent, compose_events
from privtune.bo._base import Callback, randomise_on_grid
from privtune.bo._common import ChargedObjective, best_case_selection
from privtune.bo.constants import beta_t, exact_score_utility_bound, kusner_exact_constants
from privtune.bo.gp_ucb import GPUCB, GRID_HEADROOM_FACTOR
from privtune.bo.release import Release
from privtune.exceptions import InvalidParameterError
from privtune.gp import MultiTaskKernel
from privtune.mechanisms import Exponential, Laplace
from privtune.space import CandidateSet
from privtune.utils._random import RandomSource
from privtune.utils._validation import check_real

__all__ = ["GPUCBExact"]


class GPUCBExact(GPUCB):
    """Kusner et al. Algorithm 2: noise-free observations, de Freitas constants A and tau.

    Parameters
    ----------
    epsilon, delta, n_iter, score_bounds, kernel, selection_share, confidence
        As for :class:`~privtune.bo.GPUCB` (``n_iter >= 2``).
    A : float in [0, inf)
        de Freitas et al.'s regret constant (GP units), declared.
    tau : float in [0, inf)
        de Freitas et al.'s rate constant, declared.

    Notes
    -----
    **Privacy.** Two conditional ``EpsilonDeltaEvent``s (selection, score
    release), charged before the first evaluation; relation replace-one.
    """

    name = "gp-ucb-exact"

    def __init__(self, *, epsilon: float, delta: float, n_iter: int, A: float, tau: float,
                 score_bounds: tuple[float, float] = (0.0, 1.0), kernel: MultiTaskKernel | None = None,
                 selection_share: float = 0.5, confidence: float = 0.95) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_bounds=score_bounds, kernel=kernel,
                         noise_std=1.0, selection_share=selection_share, confidence=confidence)
        if self.n_iter < 2:
            raise InvalidParameterError("The 'n_iter' parameter of GPUCBExact must be >= 2 (f~ is a maximum over "
                                        f"t = 2..T). Got {n_iter!r}.")
        self.A = check_real(A, "A", low=0.0, closed="left", owner="GPUCBExact")
        self.tau = check_real(tau, "tau", low=0.0, closed="left", owner="GPUCBExact")
        self.noise_std = 0.0

    @property
    def noise_var(self) -> float:
        return 0.0

    def constants(self, candidates: CandidateSet, n_iter: int | None = None) -> dict[str, dict[str, float]]:
        T = self.n_iter if n_iter is None else n_iter
        sel, sc = self.budgets
        n = len(candidates)
        c_sel = 2.0 * math.sqrt((1.0 - self.task_correlation) * math.log(3.0 * n / sel.delta))
        bT1 = beta_t(T + 1, n_candidates=n, delta=sel.delta)
        selection = {"beta_T": beta_t(T, n_candidates=n, delta=sel.delta), "beta_T1": bT1, "c": c_sel, "q": 0.0,
                     "em_sensitivity": 2.0 * math.sqrt(bT1) + c_sel}
        selection["em_weight"] = sel.epsilon / (2.0 * selection["em_sensitivity"])
        score = kusner_exact_constants(n_candidates=n, delta=sc.delta, task_correlation=self.task_correlation,
                                       A=self.A, tau=self.tau, n_dims=candidates.n_dims, epsilon=sc.epsilon)
        return {"selection": selection, "score": score}

    def noise_scales(self, candidates: CandidateSet) -> dict[str, float]:
        c = self.constants(candidates)
        sel = self.budgets[0]
        lap = c["score"]["laplace_scale"] * self.half_range * GRID_HEADROOM_FACTOR
        return {"score_laplace_scale": lap, "score_noise_std": math.sqrt(2) * lap,
                "selection_em_weight_per_score_unit": sel.epsilon / (2 * c["selection"]["em_sensitivity"]
                                                                     * self.half_range)}

    def _release_mechanisms(self, candidates: CandidateSet) -> list[tuple[str, Any, float]]:
        consts = self.constants(candidates)
        sel, sc = self.budgets
        Exponential(epsilon=sel.epsilon, sensitivity=consts["selection"]["em_sensitivity"], random_state=0)
        lap = Laplace(epsilon=sc.epsilon, sensitivity=consts["score"]["sensitivity"], random_state=0)
        return [("score release", lap, 1.0)]  # max_t f(lambda_t) in GP units, in [-1, 1]

    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        sel, sc = self.budgets
        return [
            (EpsilonDeltaEvent(epsilon=sel.epsilon, delta=sel.delta, guarantee="conditional",
                               label="exponential mechanism on the GP posterior mean (Kusner Alg. 2, q = 0)"),
             "selection"),
            (EpsilonDeltaEvent(epsilon=sc.epsilon, delta=sc.delta, guarantee="conditional",
                               label="Laplace noise on the best observed score (Kusner Alg. 2, de Freitas A, tau)"),
             "score_release"),
        ]

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                public_observations: Sequence[Any], callback: Callback | None) -> Release:
        consts = self.constants(candidates)
        plan = self.plan(candidates)
        self._engine(candidates, 0.0, self.loop_delta, public_observations)  # public: fails before paying
        self._charge(accountant, plan)
        engine, observed = self._loop(f, candidates, accountant, public_observations, callback, 0.0)
        T = engine.t
        consts = self.constants(candidates, T)
        sel, sc = self.budgets
        em = Exponential(epsilon=sel.epsilon, sensitivity=consts["selection"]["em_sensitivity"], random_state=source)
        index = em.select(engine.mean())
        lap = Laplace(epsilon=sc.epsilon, sensitivity=consts["score"]["sensitivity"], random_state=source)
        best = max(observed[1:]) if len(observed) >= 2 else observed[0]
        score = self._to_scores(randomise_on_grid(lap, best))
        h = self.half_range
        return Release(
            method=self.name, params=candidates[index], index=int(index), score=float(score),
            events=tuple(e for e, _ in plan), spent=compose_events([e for e, _ in plan], delta=self.delta),
            guarantee="conditional",
            noise={"score_laplace_scale": lap.scale * h, "score_noise_std": math.sqrt(2) * lap.scale * h,
                   "selection_em_weight_per_score_unit": sel.epsilon / (2 * consts["selection"]["em_sensitivity"] * h)},
            utility_bounds={
                "confidence": self.confidence,
                "score_error": exact_score_utility_bound(consts["score"], epsilon=sc.epsilon, delta=sc.delta,
                                                         confidence=self.confidence) * h,
                "statement": (f"With probability >= {self.confidence} under the GP prior and de Freitas et al.'s "
                              "regret bound with the declared A, tau: |f~ - f(lambda*)| <= score_error (Thm. 6), "
                              "in score units."),
            },
            diagnostics={"constants_selection": consts["selection"], "constants_score": consts["score"],
                         "n_candidates": len(candidates), "task_correlation": self.task_correlation,
                         **best_case_selection(consts["selection"]["em_weight"], 2.0, len(candidates))},
            history=(), n_iter=T, seeded=source.seeded,
        )
