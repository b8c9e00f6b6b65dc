r"""``lipschitz``: Kusner et al. (2015) Algorithm 3, without the GP assumption.

Setting (Kusner §5). The inner model is trained on *public* training data by
minimising ``(lambda/2) ||w||^2 + (1/n) sum l(w, x_i, y_i)`` with l convex and
1-Lipschitz in w (logistic, hinge); the single hyperparameter is the
regularisation strength lambda in [lambda_min, lambda_max]; the score is
``f_V(w_lambda) = -(1/m) sum_i g(w_lambda, x_i, y_i)`` with a validation loss g that
is L-Lipschitz in w and bounded by g* (ramp loss, normalised sigmoid). These
are declarations the user makes about their estimator and scorer; privtune
cannot check them, and the guarantee holds only if they are true.

Released (both pure epsilon-DP, **unconditional**):

* v~ = f_BO + Laplace noise of scale
  ``(1/epsilon) (g*/m + (lambda_max - lambda_min) L / (lambda_max lambda_min))``,
  with f_BO the best score of T GP-UCB iterations (Alg. 3; Thm. 7; Cor. 4).
  Any acquisition may choose the lambda_t: privacy does not depend on them.
* lambda~ by the exponential mechanism over Lambda with per-lambda sensitivity
  ``g*/m`` -- it needs the score of every candidate, so every candidate is
  evaluated; a candidate the BO loop visited keeps the score of its first fit,
  so every candidate's score is the one of its first fit, whatever the loop
  visited. Alg. 3 itself releases only the score; this part is DESIGN.md's
  addition.

The path term ``(lambda_max - lambda_min) L / (lambda_max lambda_min)`` does not
shrink with m: the method pays off only for narrow lambda ranges.

Departure from the paper: the per-lambda term is ``g*/m``, not the paper's
``min(g*/m, L/(m lambda_min))``. The ``L/(m lambda_min)`` branch (which would be
``2L/(m lambda_min)`` under replace-one) holds only if every validation row has
``||x|| <= 1`` and the same ``g(0, x, y)``; privtune cannot enforce either on
sensitive rows (they are not norm-clipped, and a row on which the estimator
fails gets ``g*`` from row isolation), and one such row moved f_BO by 4.5
times that sensitivity. See
:func:`privtune.bo.constants.lipschitz_constants`.

The path term is the paper's and rests on the declared L holding on every
validation row (g L-Lipschitz in w there): a declaration about the data that
privtune does not enforce. Rows outside that domain make the score of one data
set jump between two lambdas, and then a single replaced row that changes which
lambdas the raw-score loop visits moves f_BO by that jump (measured: 13.8
times the sensitivity). This is an **open problem**: privtune has no bound on
f_BO's sensitivity when the declared L fails on some row, and does not claim
one. The declaration must hold for every possible row, which the user can make
true inside the estimator (a step that scales each row to norm <= 1, such as
scikit-learn's ``Normalizer``, before a linear model with a margin loss); a row
on which the estimator fails scores the same at every lambda (the worst value,
or the isolating view's fixed fallback), which keeps the path term valid.

The GP-UCB loop behind f_BO only chooses which lambda to visit (any
acquisition keeps the guarantee), so clipped scores that no GP draw produces
cost utility only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.accounting import Accountant, ExponentialEvent, LaplaceEvent, PrivacyEvent, compose_events
from privtune.bo._base import Callback
from privtune.bo._common import ChargedObjective, best_case_selection, split_budget
from privtune.bo._gp_method import GPMethod
from privtune.bo.constants import lipschitz_constants, lipschitz_score_utility_bound
from privtune.bo.release import IterationRecord, Release
from privtune.exceptions import InvalidParameterError
from privtune.gp import MultiTaskKernel
from privtune.mechanisms import Exponential, Laplace
from privtune.space import CandidateSet, Real
from privtune.utils._random import RandomSource
from privtune.utils._validation import check_integer, check_real

__all__ = ["LipschitzRelease"]


class LipschitzRelease(GPMethod):
    """Kusner et al. Algorithm 3 (Lipschitz and convex; pure epsilon-DP, no GP assumption).

    Parameters
    ----------
    epsilon : float in (0, inf)
        Total epsilon (score release plus, if ``select``, the selection).
    n_iter : int
        T, the number of BO iterations behind f_BO.
    regularization : str
        Name of the single hyperparameter in the search space: the L2
        regularisation strength lambda of the training objective.
    lambda_bounds : (float, float)
        (lambda_min, lambda_max), 0 < lambda_min < lambda_max; the search space's
        ``Real`` dimension must lie inside it.
    lipschitz : float in (0, inf)
        L, the Lipschitz constant of the validation loss g in w.
    loss_bound : float in (0, inf)
        g*, the maximum of g. Scores are ``-mean g`` and lie in ``[-g*, 0]``.
    n_validation : int
        m, the public size of the validation set.
    kernel : MultiTaskKernel or None
        Kernel of the GP-UCB loop (privacy does not depend on it).
    noise_std : float in (0, inf), default=0.1
    select : bool, default=True
        Also release lambda~ by the exponential mechanism over Lambda.
    selection_share : float in (0, 1), default=0.5
        Share of epsilon for lambda~ when ``select``.
    confidence : float in (0, 1), default=0.95

    Notes
    -----
    **Privacy.** Pure epsilon-DP, unconditional, replace-one on the validation
    data (training data public, as in Kusner §5). Charges a ``LaplaceEvent`` (phase
    ``"score_release"``) and, if ``select``, an ``ExponentialEvent`` (phase
    ``"selection"``) before the first evaluation. The BO trajectory depends on raw
    scores and is not shown. The per-lambda sensitivity is ``g*/m`` (not the
    paper's ``min(g*/m, L/(m lambda_min))``: see
    :func:`privtune.bo.constants.lipschitz_constants`); the path term needs the
    declared ``lipschitz`` to hold on every validation row, which privtune does
    not enforce (an open problem: rows outside that domain moved f_BO by 13.8
    times the sensitivity, and no bound is claimed for them).
    """

    name = "lipschitz"
    guarantee = "unconditional"

    def __init__(self, *, epsilon: float, n_iter: int, regularization: str, lambda_bounds: tuple[float, float],
                 lipschitz: float, loss_bound: float, n_validation: int, kernel: MultiTaskKernel | None = None,
                 noise_std: float = 0.1, select: bool = True, selection_share: float = 0.5,
                 confidence: float = 0.95) -> None:
        owner = "LipschitzRelease"
        g = check_real(loss_bound, "loss_bound", low=0.0, owner=owner)
        super().__init__(epsilon=epsilon, delta=0.0, n_iter=n_iter, score_bounds=(-g, 0.0), kernel=kernel)
        if not isinstance(regularization, str):
            raise InvalidParameterError(f"The 'regularization' parameter of {owner} must be a str.")
        self.regularization = regularization
        if not (isinstance(lambda_bounds, (tuple, list)) and len(lambda_bounds) == 2):
            raise InvalidParameterError(f"The 'lambda_bounds' parameter of {owner} must be (lambda_min, lambda_max).")
        lo = check_real(lambda_bounds[0], "lambda_bounds[0]", low=0.0, owner=owner)
        hi = check_real(lambda_bounds[1], "lambda_bounds[1]", low=lo, owner=owner)
        self.lambda_bounds = (lo, hi)
        self.lipschitz = check_real(lipschitz, "lipschitz", low=0.0, owner=owner)
        self.loss_bound = g
        self.n_validation = check_integer(n_validation, "n_validation", low=1, owner=owner)
        self.noise_std = check_real(noise_std, "noise_std", low=0.0, owner=owner)
        self.select = bool(select)
        self.selection_share = check_real(selection_share, "selection_share", low=0.0, high=1.0, owner=owner)
        self.confidence = check_real(confidence, "confidence", low=0.0, high=1.0, owner=owner)

    def _budgets(self) -> tuple[float, float]:
        if not self.select:
            return 0.0, self.epsilon
        sel, sc = split_budget(self.epsilon, 0.0, self.selection_share, type(self).__name__)
        return sel.epsilon, sc.epsilon

    def constants(self) -> dict[str, float]:
        """Thm. 7 / Chaudhuri-Vinterbo sensitivities and the Laplace scale, in score units."""
        return lipschitz_constants(n_validation=self.n_validation, epsilon=self._budgets()[1],
                                   lipschitz=self.lipschitz, loss_bound=self.loss_bound,
                                   lambda_min=self.lambda_bounds[0], lambda_max=self.lambda_bounds[1])

    def _check_space(self, candidates: CandidateSet) -> None:
        names = list(candidates.space.names)
        if names != [self.regularization]:
            raise InvalidParameterError(
                f"LipschitzRelease needs a search space with the single hyperparameter {self.regularization!r} (the "
                f"L2 regularisation strength, Kusner Alg. 3). Got {names}.")
        if not isinstance(candidates.space[self.regularization], Real):
            raise InvalidParameterError(f"{self.regularization!r} must be a Real dimension for LipschitzRelease.")
        vals = np.array([p[self.regularization] for p in candidates.params], dtype=float)
        lo, hi = self.lambda_bounds
        if vals.min() < lo or vals.max() > hi:
            raise InvalidParameterError(
                f"Every candidate {self.regularization!r} must lie in lambda_bounds=[{lo!r}, {hi!r}]; the candidate "
                f"set spans [{vals.min()!r}, {vals.max()!r}].")

    def noise_scales(self, candidates: CandidateSet) -> dict[str, float]:
        c = self.constants()
        lap = c["laplace_scale"] * (1.0 + 2.0**-10)
        out = {"score_laplace_scale": lap, "score_noise_std": math.sqrt(2) * lap}
        if self.select:
            out["selection_em_weight_per_score_unit"] = self._budgets()[0] / (2 * c["per_lambda_sensitivity"])
        return out

    def max_evaluations(self, candidates: CandidateSet) -> int:
        """``n_iter`` BO evaluations plus, with ``select``, every candidate (an upper bound)."""
        return self.n_iter + (len(candidates) if self.select else 0)

    def _release_mechanisms(self, candidates: CandidateSet) -> list[tuple[str, Any, float]]:
        consts = self.constants()
        eps_sel, eps_sc = self._budgets()
        if self.select:
            Exponential(epsilon=eps_sel, sensitivity=consts["per_lambda_sensitivity"], random_state=0)
        return [("score release", Laplace(epsilon=eps_sc, sensitivity=consts["sensitivity"], random_state=0),
                 self.half_range)]

    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        eps_sel, eps_sc = self._budgets()
        out = []
        if self.select:
            out.append((ExponentialEvent(epsilon=eps_sel, label="exponential mechanism over the candidate set "
                                         "(Chaudhuri & Vinterbo per-lambda sensitivity)"), "selection"))
        out.append((LaplaceEvent(epsilon=eps_sc, label="Laplace noise on the best BO score (Kusner Alg. 3)"),
                    "score_release"))
        return out

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                public_observations: Sequence[Any], callback: Callback | None) -> Release:
        self._check_space(candidates)
        consts = self.constants()
        plan = self.plan(candidates)
        engine = self._engine(candidates, self.noise_std**2, 0.5, public_observations)  # public: before paying
        self._charge(accountant, plan)
        scores: dict[int, float] = {}  # raw (private)
        f.pay(self.n_iter)
        best = -math.inf
        for t in range(1, self.n_iter + 1):
            i = engine.ask()
            # Every iteration fits (all n_iter are paid for): how many distinct candidates the secret trajectory
            # visited must not show as a count of fits (an estimator's side effects, its output on stdout). A
            # revisited candidate keeps its first score, as in Alg. 3.
            v = f(i)
            v = scores.setdefault(i, v)
            engine.tell(i, v)
            best = max(best, v)
            rec = IterationRecord(iteration=t, params=None, released_score=None, noise_std=None,
                                  epsilon_spent=self._spent(accountant))
            if self._record(callback, rec):
                break
        eps_sel, eps_sc = self._budgets()
        lap = Laplace(epsilon=eps_sc, sensitivity=consts["sensitivity"], random_state=source)
        score = self._release_score(lap, best)
        index, params = None, None
        if self.select:
            # Every candidate, visited or not: the batch's size (a count of tasks a worker pool shows) must not
            # tell how many the raw-score path visited. max_evaluations counts them all.
            every = list(range(len(candidates)))
            f.pay(len(every))
            batch = f.batch(every)
            # Each candidate's score is its first fit's: the loop's for a visited candidate, the batch's (its first
            # fit) for the others. The batch refits a visited candidate as its (visits + 1)-th run, and a fit's
            # derived seed depends on that count (a randomised estimator fits a different model), so its batch value
            # would depend on the secret trajectory and move by more than g*/m between neighbours.
            first = [scores.get(i, v) for i, v in zip(every, batch, strict=True)]
            em = Exponential(epsilon=eps_sel, sensitivity=consts["per_lambda_sensitivity"], random_state=source)
            index = em.select(np.array(first))
            params = candidates[index]
        events = tuple(e for e, _ in plan)
        return Release(
            method=self.name, params=params, index=index, score=score, events=events,
            spent=compose_events(events, delta=0.0), guarantee="unconditional",
            noise={"score_laplace_scale": lap.scale, "score_noise_std": math.sqrt(2) * lap.scale,
                   **({"selection_em_weight_per_score_unit": eps_sel / (2 * consts["per_lambda_sensitivity"])}
                      if self.select else {})},
            utility_bounds={"confidence": self.confidence,
                            "score_error_vs_f_BO": lipschitz_score_utility_bound(consts, confidence=self.confidence),
                            "statement": (f"With probability >= {self.confidence}: |v~ - f_BO| <= "
                                          "score_error_vs_f_BO (Thm. 8), in score units.")},
            diagnostics={"constants": consts, "n_candidates": len(candidates),
                         **(best_case_selection(eps_sel / (2 * consts["per_lambda_sensitivity"]), self.loss_bound,
                                                len(candidates)) if self.select else {})},
            history=(), n_iter=engine.t, seeded=source.seeded)
