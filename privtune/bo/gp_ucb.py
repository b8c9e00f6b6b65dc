r"""``gp-ucb``: Kusner et al. (2015) Algorithm 1, exactly as the paper states it.

GP-UCB runs for T iterations on the **raw** validation scores; only two things
are released:

* lambda~ by the exponential mechanism on the posterior mean mu_T over Lambda,
  with sensitivity ``Delta = 2 sqrt(beta_{T+1}) + c`` (Thm. 1; Cor. 1);
* v~ = max_t v_t + Laplace noise of scale
  ``sqrt(C1 beta_T gamma_T) / (epsilon sqrt(T)) + c / epsilon + q / epsilon`` (Thm. 3; Cor. 2).

Each is (epsilon_i, delta_i)-DP **conditionally** on the GP prior of Assumption 1
(all validation sets' score functions jointly GP(0, k1 (x) k2) with the
*declared* kernels), with probability at least 1 - delta_i over that prior; both
together are (eps_sel + eps_score, delta_sel + delta_score)-DP by basic
composition. The guarantee is labelled ``"conditional"`` everywhere.

What is safe to show. The trajectory lambda_1..lambda_T, the posterior mean
mu_T and anything computed from them (the entropy or top-decile mass of the
actual selection distribution) depend on raw scores and are **not** released.
The diagnostics are data-independent: the EM weight per score unit, the noise
scale of v~ in score units, the utility bounds of Thms. 2 and 4, and the
best-case selectivity of the EM (if the top decile of Lambda beat the rest by
the whole score range). Section 7 of the spec explains why these are sobering:
at epsilon ~ 1 the EM is close to uniform and the noise on v~ is about ten prior
standard deviations, whatever the validation size.

Departures from the paper. (1) gamma_T is the greedy information gain over
Lambda divided by (1 - 1/e), a valid upper bound (the paper leaves gamma_T
abstract). (2) The loop's beta_t uses the smaller of the two releases' deltas, and the
score release's Thm. 3 regret term uses that same beta_T (an earlier version used the score's own delta there:
about 3 % too little noise with an uneven split).
(3) Scores are clipped to the declared bounds and mapped to the GP axis by the
declared affine map before the observation noise is added. (4) Public tasks
(k1 (x) k2 with more tasks) may warm-start the posterior; they are independent
of the private validation set, so Thm. 1's argument is unchanged.
(5) alpha_t is drawn exactly from the discrete Gaussian on the grid
sigma 2**-20 (integer parameter s = 2**20; :func:`observation_noise`), not from
a continuous Gaussian: its point masses differ from those of N(0, sigma^2)
rounded to that grid by a relative (z^2 / s^2 - 1) / (24 s^2), a total
variation of order 1e-14, and the rounding moves an observation by at most
sigma 2**-21 -- the order of the posterior's own float arithmetic, and not
counted in the theorems.

The observations. Alg. 1 observes v_t = f(lambda_t) + alpha_t with alpha_t
i.i.d. N(0, sigma^2), sigma > 0 (GP units), and its theorems (through
Srinivas et al.'s Lemma 5.1, which needs f given the history to be
N(mu_{t-1}, sigma_{t-1}^2), i.e. Gaussian observation noise of exactly the
variance the posterior assumes) are proved for that. So the loop *adds* that
noise: each observation is the objective's score, clipped and mapped to GP
units, plus a fresh draw alpha_t ~ N(0, sigma^2) with sigma = ``noise_std``,
drawn from the search's noise source (secure unless the run is seeded; a
seeded run is exactly reproducible), independently of the data and of every
other draw, one per observation -- a candidate visited again gets a fresh
alpha_t. The posterior is updated with v_t and v* = max_t v_t is the maximum
of these noisy observations, as in Alg. 1 (Thm. 3's q term is the price of
that noise in the score release). Under ``PrivateSearchCV`` f(lambda) is the
score of the first fit at lambda (a candidate visited again is fitted again
but keeps its first score), so f is one fixed function even when each fit
draws fresh DP noise. The observations alpha_t never leave the search: like
the trajectory, they are neither released nor shown.

What the conditional guarantee is about, and where its model breaks. The
theorems are proved for f one draw of the declared prior (GP units: mean at
the midpoint of the score bounds, standard deviation half their range);
delta is a probability over that draw and the alpha_t. One departure from
that model remains, and the theorems are not proven for a run where it bites:
clipping. A draw of the prior leaves the declared bounds with probability
2 Phi(-1) ~ 0.32 at each lambda; the loop then observes the bound plus
alpha_t, not f(lambda) + alpha_t (and a bounded score function is no GP draw
at all). Alg. 2 (:class:`~privtune.bo.GPUCBExact`, noise-free observations by
design) shares it.

The (epsilon, delta) of this method *is* that theorem, so it is a claim under
the model (hence "conditional"), which privtune cannot check without reading
the private scores; the utility bounds (Thms. 2, 4) rest on the same model.
The unconditional methods do not depend on the GP being right: ``noisy-ucb``'s
GP only post-processes Gaussian releases, ``lipschitz``'s only picks which
lambda to visit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.accounting import Accountant, EpsilonDeltaEvent, PrivacyEvent, compose_events
from privtune.bo._base import Callback, randomise_on_grid
from privtune.bo._common import ChargedObjective, best_case_selection, split_budget
from privtune.bo._gp_method import GPMethod
from privtune.bo.constants import kusner_constants, score_utility_bound, selection_utility_bound
from privtune.bo.release import IterationRecord, Release
from privtune.exceptions import InvalidParameterError
from privtune.gp import MultiTaskKernel
from privtune.mechanisms import Exponential, Laplace
from privtune.mechanisms._samplers import discrete_gaussian
from privtune.space import CandidateSet
from privtune.utils._random import RandomSource
from privtune.utils._validation import check_real

__all__ = ["GPUCB", "observation_noise"]

#: The exact grid samplers add a 2**-10 headroom to the textbook noise scale.
GRID_HEADROOM_FACTOR = 1.0 + 2.0**-10

#: alpha_t lies on the grid ``noise_std * 2**-OBSERVATION_GRID_EXPONENT`` (discrete Gaussian of parameter 2**k).
OBSERVATION_GRID_EXPONENT = 20

#: The score release's check (:meth:`GPUCB.check_release`) covers a maximum of noisy observations up to
#: ``1 + OBSERVATION_REACH * noise_std`` in GP units (P(|alpha_t| > 8 sigma) < 1.3e-15 per observation). Beyond it
#: the release is clipped to its grid's range, a 1-Lipschitz map that keeps the guarantee.
OBSERVATION_REACH = 8.0


def observation_noise(source: RandomSource, noise_std: float, size: int) -> np.ndarray:
    """Alg. 1's observation noise: ``size`` i.i.d. draws of N(0, noise_std**2), in GP units.

    Drawn exactly with integer arithmetic from ``source`` (secure unless the
    run is seeded): ``alpha = noise_std * 2**-k * Z`` with ``Z`` the discrete
    Gaussian of parameter ``2**k`` (``k = 20``; Canonne, Kamath & Steinke
    2020), whose variance equals ``4**k`` in double precision. The lattice
    spacing ``noise_std * 2**-20`` is far below anything the posterior resolves.

    Parameters
    ----------
    source : RandomSource
        The search's noise source.
    noise_std : float in (0, inf)
        sigma (GP units).
    size : int
        Number of draws (one per planned observation).

    Returns
    -------
    ndarray of float64, shape (size,)
    """
    k = OBSERVATION_GRID_EXPONENT
    z = discrete_gaussian(4**k, 1, int(size), source)
    return z.astype(np.float64) * (float(noise_std) * 2.0**-k)


class GPUCB(GPMethod):
    """Kusner et al. Algorithm 1 (noisy observations).

    Parameters
    ----------
    epsilon : float in (0, inf)
        Total epsilon of the two releases (lambda~ and v~).
    delta : float in (0, 1)
        Total delta of the two releases (each release's guarantee holds with
        probability at least 1 - its delta under the GP prior).
    n_iter : int
        T, the number of GP-UCB iterations (evaluations of the objective).
    score_bounds : (float, float), default=(0.0, 1.0)
        Declared score range; it fixes the GP's output scale (prior standard
        deviation = half the range).
    kernel : MultiTaskKernel or None
        Declared k1 (x) k2; ``None`` is Matern-5/2 with lengthscale 0.2 and
        ``task_correlation=0.95`` (Kusner et al.'s estimate).
    noise_std : float in (0, inf), default=0.1
        sigma, the observation noise (GP units: prior sd = 1). The loop adds
        N(0, sigma^2) noise to every observation (Alg. 1's alpha_t), and the
        posterior assumes exactly that variance; in score units its standard
        deviation is ``noise_std`` times half the score range.
    selection_share : float in (0, 1), default=0.5
        Share of (epsilon, delta) given to lambda~; the rest goes to v~.
    confidence : float in (0, 1), default=0.95
        Confidence of the reported utility bounds.

    Notes
    -----
    **Privacy.** Charges two ``EpsilonDeltaEvent``s labelled ``conditional``
    (phases ``"selection"`` and ``"score_release"``, role ``"validation"``),
    before the first evaluation. Relation: replace-one (Kusner Def. 1: one
    validation record swapped); the validation size, the candidate set, the
    kernel, sigma and the score bounds are public. The guarantee is the paper's
    theorem for observations f(lambda_t) + alpha_t, alpha_t ~ N(0, sigma^2),
    of an unbounded prior draw f: the loop adds that noise itself (from the
    run's noise source, one fresh draw per observation) and releases the
    maximum of the noisy observations, but it observes scores clipped to the
    declared bounds, so the guarantee is not proven where a draw leaves the
    bounds (see the module docstring).

    References
    ----------
    .. [KGGW15] M. Kusner, J. Gardner, R. Garnett and K. Weinberger,
       "Differentially Private Bayesian Optimization", ICML 2015.
    """

    name = "gp-ucb"
    guarantee = "conditional"

    def __init__(self, *, epsilon: float, delta: float, n_iter: int, score_bounds: tuple[float, float] = (0.0, 1.0),
                 kernel: MultiTaskKernel | None = None, noise_std: float = 0.1, selection_share: float = 0.5,
                 confidence: float = 0.95) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_bounds=score_bounds, kernel=kernel)
        owner = type(self).__name__
        if self.delta == 0:
            raise InvalidParameterError(
                f"The 'delta' parameter of {owner} must be in (0, 1): Kusner et al.'s guarantees hold with "
                "probability 1 - delta under the GP prior. Got 0.0; use method='lipschitz' or 'random' for "
                "pure epsilon-DP.")
        self.noise_std = check_real(noise_std, "noise_std", low=0.0, owner=owner)
        self.selection_share = check_real(selection_share, "selection_share", low=0.0, high=1.0, owner=owner)
        self.confidence = check_real(confidence, "confidence", low=0.0, high=1.0, owner=owner)
        self.budgets = split_budget(self.epsilon, self.delta, self.selection_share, owner)

    @property
    def noise_var(self) -> float:
        return self.noise_std**2

    def constants(self, candidates: CandidateSet, n_iter: int | None = None) -> dict[str, dict[str, float]]:
        """Alg. 1's constants for the selection and the score release (GP units), from public inputs."""
        T = self.n_iter if n_iter is None else n_iter
        g = self.gamma_T(candidates, T, self.noise_var)
        out = {}
        for name, b in zip(("selection", "score"), self.budgets, strict=False):
            # Thm. 1 (selection) rests on the confidence bound of Srinivas et al.'s Lemma 5.1, which holds for any
            # sequence of queries: its beta_{T+1} is taken at the selection's own delta. Thm. 3 (score) bounds the
            # regret of the loop that ran, so its beta_T is the loop's (at loop_delta).
            out[name] = kusner_constants(n_candidates=len(candidates), n_iter=T, delta=b.delta,
                                         task_correlation=self.task_correlation, noise_std=self.noise_std,
                                         gamma_T=g, epsilon=b.epsilon,
                                         beta_delta=self.loop_delta if name == "score" else None)
        return out

    @property
    def loop_delta(self) -> float:
        """The delta of the loop's beta_t: the smaller of the two releases' deltas."""
        return min(b.delta for b in self.budgets)

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
        lap = Laplace(epsilon=sc.epsilon, sensitivity=consts["score"]["laplace_scale"] * sc.epsilon, random_state=0)
        # max_t v_t in GP units: a clipped score in [-1, 1] plus alpha_t
        return [("score release", lap, 1.0 + OBSERVATION_REACH * self.noise_std)]

    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        sel, sc = self.budgets
        return [
            (EpsilonDeltaEvent(epsilon=sel.epsilon, delta=sel.delta, guarantee="conditional",
                               label="exponential mechanism on the GP posterior mean (Kusner Alg. 1)"), "selection"),
            (EpsilonDeltaEvent(epsilon=sc.epsilon, delta=sc.delta, guarantee="conditional",
                               label="Laplace noise on the best observed score (Kusner Alg. 1)"), "score_release"),
        ]

    def _loop(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant,
              public_observations: Sequence[Any], callback: Callback | None, noise_var: float,
              noise: np.ndarray | None = None):
        """GP-UCB for T iterations; returns the engine and the observations v_t told to it (GP units, private).

        ``noise`` holds alpha_1..alpha_T (GP units), added to each clipped score
        before the update (Alg. 1); ``None`` observes the scores exactly (Alg. 2).
        """
        engine = self._engine(candidates, noise_var, self.loop_delta, public_observations)
        f.pay(self.n_iter)  # all T evaluations are covered by the two releases charged up front
        observed: list[float] = []  # GP units, raw (private): used only for the score release
        for t in range(1, self.n_iter + 1):
            i = engine.ask()
            v = f(i)
            if noise is None:
                engine.tell(i, v)
                observed.append(self._to_gp(v))
            else:
                z = self._to_gp(v) + float(noise[t - 1])  # v_t = f(lambda_t) + alpha_t
                engine.tell(i, self._to_scores(z))
                observed.append(z)
            if callback is None:  # nothing to tell: no record (the accountant's bound costs ~0.3 ms to compute)
                continue
            rec = IterationRecord(iteration=t, params=None, released_score=None, noise_std=None,
                                  epsilon_spent=self._spent(accountant))
            if self._record(callback, rec):
                break
        return engine, observed

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                public_observations: Sequence[Any], callback: Callback | None) -> Release:
        self.constants(candidates)  # computed (and gamma_T cached) before any access
        plan = self.plan(candidates)
        self._engine(candidates, self.noise_var, self.loop_delta, public_observations)  # public: fails before paying
        self._charge(accountant, plan)
        # Alg. 1's alpha_1..alpha_T, i.i.d. N(0, sigma^2), drawn up front from the search's noise source:
        # independent of the data and of the path (a revisited candidate gets a fresh one).
        alphas = observation_noise(source, self.noise_std, self.n_iter)
        engine, observed = self._loop(f, candidates, accountant, public_observations, callback, self.noise_var,
                                      alphas)
        T = engine.t
        consts = self.constants(candidates, T)
        sel, sc = self.budgets
        em = Exponential(epsilon=sel.epsilon, sensitivity=consts["selection"]["em_sensitivity"], random_state=source)
        index = em.select(engine.mean())
        s = consts["score"]
        sensitivity = s["laplace_scale"] * sc.epsilon  # Thm. 3's sensitivity of max_t v_t
        lap = Laplace(epsilon=sc.epsilon, sensitivity=sensitivity, random_state=source)
        score = self._to_scores(randomise_on_grid(lap, max(observed)))  # v* = max_t v_t, the noisy observations
        return self._release(candidates, index, score, plan, consts, T, lap, source)

    def _release(self, candidates, index, score, plan, consts, T, lap, source) -> Release:
        sel, sc = self.budgets
        h = self.half_range
        selc, scc = consts["selection"], consts["score"]
        return Release(
            method=self.name, params=candidates[index], index=int(index), score=float(score),
            events=tuple(e for e, _ in plan), spent=compose_events([e for e, _ in plan], delta=self.delta),
            guarantee="conditional",
            noise={"score_laplace_scale": lap.scale * h, "score_noise_std": math.sqrt(2) * lap.scale * h,
                   "selection_em_weight_per_score_unit": sel.epsilon / (2 * selc["em_sensitivity"] * h)},
            utility_bounds={
                "confidence": self.confidence,
                "selection_gap": selection_utility_bound(selc, n_candidates=len(candidates), epsilon=sel.epsilon,
                                                         delta=sel.delta, confidence=self.confidence) * h,
                "score_error": score_utility_bound(scc, n_iter=T, epsilon=sc.epsilon, delta=sc.delta,
                                                   confidence=self.confidence) * h,
                "statement": (f"With probability >= {self.confidence} under the GP prior: mu_T(lambda~) >= "
                              "f(lambda*) - selection_gap (Thm. 2) and |v~ - f(lambda*)| <= score_error (Thm. 4), "
                              "in score units."),
            },
            diagnostics={"constants_selection": selc, "constants_score": scc,
                         "n_candidates": len(candidates), "task_correlation": self.task_correlation,
                         **best_case_selection(sel.epsilon / (2 * selc["em_sensitivity"]), 2.0, len(candidates))},
            history=(), n_iter=T, seeded=source.seeded,
        )
