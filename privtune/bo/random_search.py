r"""``random``: data-independent candidates with a private selection.

Two selections:

* ``selection="exponential"`` (validation data sensitive, training public): the
  first ``n_iter`` candidates of a random permutation of Lambda (data-independent)
  are scored; lambda~ is drawn by the exponential mechanism over their scores
  with the scorer's sensitivity, and v~ is lambda~'s score plus fresh Laplace noise.
  Pure (eps_sel + eps_score)-DP, unconditional.
* ``selection="random-stopping"`` (Papernot & Steinke 2022; Liu & Talwar 2019):
  a secret K is drawn from a truncated negative binomial with mean ``n_iter`` and
  shape eta; K candidates drawn uniformly from Lambda are each run and scored
  privately (Laplace on the score, plus the declared ``run_event`` of a DP
  training run, if any), and only the best noisy candidate is released. For a
  pure epsilon_run-DP run the whole search is (2 + eta) epsilon_run-DP; a run
  with an RDP event (Gaussian DP training) is bounded through the full Theorem 2
  (RDP) of Papernot & Steinke. With DP inner trainers and one accountant this
  covers training and validation data together (``PrivateSearchCV`` accounts the
  two roles apart when their rows are disjoint: :meth:`RandomSearch.selection_event`).

What is safe to show. With the exponential selection the evaluated candidates
are data-independent (shown); their scores and the selection distribution are
not. With random stopping **nothing but the final release** may be shown: the
number of runs K must stay secret (its secrecy is part of the guarantee), so
there is no per-iteration history, callbacks are not called, and the ledger
holds a single ``RepeatAndSelectEvent``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.accounting import (
    Accountant,
    Budget,
    ComposedEvent,
    ExponentialEvent,
    LaplaceEvent,
    PrivacyEvent,
    RepeatAndSelectEvent,
    compose_events,
)
from privtune.accounting._composition import has_rdp_curve
from privtune.accounting.selection import sample_repetitions
from privtune.bo._base import Callback, ReleaseMethod
from privtune.bo._common import ChargedObjective, best_case_selection, split_budget
from privtune.bo.release import IterationRecord, Release
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.mechanisms import Exponential, Laplace
from privtune.space import CandidateSet
from privtune.utils._random import RandomSource
from privtune.utils._validation import check_real

__all__ = ["RandomSearch"]

_SELECTIONS = ("exponential", "random-stopping")


def _is_pure(event: PrivacyEvent) -> bool:
    fixed = event.epsilon_delta()
    return fixed is not None and fixed[1] == 0


class RandomSearch(ReleaseMethod):
    """Random search with a private selection of the best candidate.

    Parameters
    ----------
    epsilon : float in (0, inf)
    delta : float in [0, 1), default=0.0
        Unused by the exponential selection (pure epsilon). Random stopping needs
        delta > 0: its capped law of K costs ``(1 + e**eps) 2**-100`` of delta
        (:func:`privtune.accounting.selection.repetition_cap`).
    n_iter : int
        Number of candidates scored (``"exponential"``) or the mean of K
        (``"random-stopping"``, must be >= 2).
    score_sensitivity : float in (0, inf)
        Declared sensitivity of one score under replace-one.
    score_bounds : (float, float), default=(0.0, 1.0)
    selection : {"exponential", "random-stopping"}, default="exponential"
    selection_share : float in (0, 1), default=0.5
        ``"exponential"`` only: share of epsilon for the selection.
    stopping_shape : float in [0, inf), default=1.0
        ``"random-stopping"`` only: eta (0 logarithmic: cost 2 eps_run; 1 geometric: 3 eps_run).
    run_event : PrivacyEvent or None, default=None
        ``"random-stopping"`` only: the event of one training run with a DP inner
        trainer (training data sensitive), charged to the same accountant as the
        scores. A pure-DP event's epsilon is taken out of each run's budget
        (``epsilon / (2 + eta)``) before the score's Laplace noise; any other event
        the RDP accountant can bound (e.g. the ``GaussianEvent`` of a Gaussian DP
        fit) leaves the score the largest Laplace epsilon for which the whole
        ``RepeatAndSelectEvent`` still fits ``(epsilon, delta)`` (found by
        bisection on the accountant's own check, from public quantities).

    Notes
    -----
    **Privacy.** Unconditional, replace-one. ``"exponential"`` is pure
    epsilon-DP and charges an ``ExponentialEvent`` (phase ``"selection"``) and a
    ``LaplaceEvent`` (phase ``"score_release"``) before the first evaluation;
    ``"random-stopping"`` charges one ``RepeatAndSelectEvent`` (phase
    ``"selection"``) before the first run: ``(epsilon, delta)`` with
    ``delta > 0`` for the capped law of K (pure epsilon plus that delta for pure
    runs; RDP-converted for a run with an RDP ``run_event``). The runs are
    evaluated one at a time in this process, whatever ``mapper`` is given: a
    pool's task count would show the secret K.
    """

    name = "random"
    guarantee = "unconditional"

    def __init__(self, *, epsilon: float, n_iter: int, score_sensitivity: float, delta: float = 0.0,
                 score_bounds: tuple[float, float] = (0.0, 1.0), selection: str = "exponential",
                 selection_share: float = 0.5, stopping_shape: float = 1.0,
                 run_event: PrivacyEvent | None = None) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_bounds=score_bounds)
        owner = type(self).__name__
        if selection not in _SELECTIONS:
            raise InvalidParameterError(
                f"The 'selection' parameter of {owner} must be one of {list(_SELECTIONS)}. Got {selection!r} instead.")
        self.selection = selection
        self.score_sensitivity = check_real(score_sensitivity, "score_sensitivity", low=0.0, owner=owner)
        self.selection_share = check_real(selection_share, "selection_share", low=0.0, high=1.0, owner=owner)
        self.stopping_shape = check_real(stopping_shape, "stopping_shape", low=0.0, closed="left", owner=owner)
        if run_event is not None and (not isinstance(run_event, PrivacyEvent) or run_event.is_conditional()
                                      or (not _is_pure(run_event) and not has_rdp_curve(run_event))):
            raise InvalidParameterError(
                f"The 'run_event' parameter of {owner} must be None or the PrivacyEvent of one training run that is "
                "pure epsilon-DP or bounded by the RDP accountant (e.g. a GaussianEvent), unconditionally. "
                f"Got a {type(run_event).__name__}"
                + (f" ({run_event.label})." if isinstance(run_event, PrivacyEvent) and run_event.label else "."))
        self.run_event = run_event
        self._score_eps: float | None = None
        if selection == "random-stopping":
            if self.delta == 0:
                raise InvalidParameterError(
                    f"Random stopping needs delta > 0 in {owner}: K is drawn from Papernot & Steinke's law capped "
                    "at a public maximum, which adds a delta of (1 + e^eps) 2**-100 (below 1e-28 for eps <= 4.8) to "
                    "the pure bound. Pass e.g. delta=1e-12.")
            if self.n_iter < 2:
                raise InvalidParameterError(f"The 'n_iter' parameter of {owner} (the mean number of runs) must be "
                                            f">= 2 with random stopping. Got {n_iter!r}.")
            if self.score_epsilon() <= 0:
                raise InvalidParameterError(
                    f"The budget (epsilon={self.epsilon!r}, delta={self.delta!r}) cannot cover random stopping: the "
                    f"best of a secret number of runs of the training event ({type(self.run_event).__name__}"
                    f"{', ' + self.run_event.label if self.run_event.label else ''}) alone already "
                    "exceeds it (for a pure-DP run, (2 + eta) times its epsilon). Lower the run's (the "
                    "estimator's) epsilon, or raise epsilon.")

    def selection_event(self, run: PrivacyEvent, label: str = "") -> RepeatAndSelectEvent:
        """The ``RepeatAndSelectEvent`` of this search's law of K over runs of ``run`` (public).

        ``PrivateSearchCV`` charges the training role with
        ``selection_event(one_fit)`` when the training and validation rows are
        disjoint: against a training row, each run's noisy score is a
        post-processing of its DP fit (the validation rows are fixed), so the
        run is exactly as private as the fit, and Papernot & Steinke's bound
        applies to it with the same K.
        """
        return RepeatAndSelectEvent(event=run, mean=float(self.n_iter), shape=self.stopping_shape,
                                    label=label or "best of a secret number of runs (Papernot & Steinke 2022)")

    def score_epsilon(self) -> float:
        """Random stopping: the epsilon of each run's Laplace score release (public; computed once).

        ``epsilon / (2 + eta)`` without a ``run_event``, minus the run event's
        epsilon for a pure one; for an RDP run event, the largest value (by
        bisection, 60 halvings of a geometric bracket) for which the
        accountant's check of the whole ``RepeatAndSelectEvent`` against
        ``(epsilon, delta)`` passes, 0 if none does.
        """
        if self._score_eps is None:
            per_run = self.epsilon / (2.0 + self.stopping_shape)
            if self.run_event is None:
                self._score_eps = per_run
            elif _is_pure(self.run_event):
                self._score_eps = per_run - self.run_event.epsilon_delta()[0]
            else:
                self._score_eps = self._largest_score_epsilon(per_run)
        return self._score_eps

    def _largest_score_epsilon(self, upper: float) -> float:
        ceiling = Accountant(Budget(self.epsilon, self.delta))

        def fits(eps_score: float) -> bool:
            try:
                ceiling.check(self._run_selection(eps_score))
            except BudgetExceededError:
                return False
            return True

        if fits(upper):  # the bracket's top: the score's share without a training event (conservative)
            return upper
        lo, hi = upper * 1e-9, upper
        if not fits(lo):
            return 0.0
        for _ in range(60):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
            if hi <= lo * (1.0 + 1e-9):
                break
        return lo

    def _run_selection(self, eps_score: float) -> RepeatAndSelectEvent:
        run: PrivacyEvent = LaplaceEvent(epsilon=eps_score, label="noisy score of one run")
        if self.run_event is not None:
            run = ComposedEvent(events=(self.run_event, run), label="one training run and its noisy score")
        return self.selection_event(run)

    def noise_scales(self, candidates: CandidateSet) -> dict[str, float]:
        h = 1.0 + 2.0**-10
        if self.selection == "exponential":
            eps_sel, eps_sc = (e.epsilon for e, _ in self.plan(candidates))
            lap = self.score_sensitivity / eps_sc * h
            return {"score_laplace_scale": lap, "score_noise_std": math.sqrt(2) * lap,
                    "selection_em_weight_per_score_unit": eps_sel / (2 * self.score_sensitivity)}
        lap = self.score_sensitivity / self.score_epsilon() * h
        return {"score_laplace_scale": lap, "score_noise_std": math.sqrt(2) * lap}

    def _release_mechanisms(self, candidates: CandidateSet) -> list[tuple[str, Any, float]]:
        if self.selection == "exponential":
            eps_sel, eps_sc = (e.epsilon for e, _ in self.plan(candidates))
            Exponential(epsilon=eps_sel, sensitivity=self.score_sensitivity, random_state=0)
            return [("score release", Laplace(epsilon=eps_sc, sensitivity=self.score_sensitivity, random_state=0),
                     self.half_range)]
        return [("noisy score of each run",
                 Laplace(epsilon=self.score_epsilon(), sensitivity=self.score_sensitivity, random_state=0),
                 self.half_range)]

    def max_evaluations(self, candidates: CandidateSet) -> int | None:
        """``min(n_iter, |Lambda|)``; ``None`` with random stopping (K is secret, covered by its event)."""
        return min(self.n_iter, len(candidates)) if self.selection == "exponential" else None

    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        if self.selection == "exponential":
            sel, sc = split_budget(self.epsilon, 0.0, self.selection_share, type(self).__name__)
            return [(ExponentialEvent(epsilon=sel.epsilon, label="exponential mechanism over random candidates"),
                     "selection"),
                    (LaplaceEvent(epsilon=sc.epsilon, label="score of the selected candidate"), "score_release")]
        return [(self._run_selection(self.score_epsilon()), "selection")]

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                public_observations: Sequence[Any], callback: Callback | None) -> Release:
        plan = self.plan(candidates)
        self._charge(accountant, plan)
        events = tuple(e for e, _ in plan)
        spent = compose_events(events, delta=self.delta)
        if self.selection == "exponential":
            return self._exponential(f, candidates, accountant, source, callback, plan, events, spent)
        return self._stopping(f, candidates, source, events, spent)

    def _exponential(self, f, candidates, accountant, source, callback, plan, events, spent) -> Release:
        order = source.numpy_generator().permutation(len(candidates))[: self.n_iter]
        f.pay(len(order))
        all_scores = f.batch(order)  # a data-independent batch: parallel when a mapper is given
        scores, history = [], []
        for t, i in enumerate(order, start=1):
            scores.append(all_scores[t - 1])
            rec = IterationRecord(iteration=t, params=candidates[int(i)], released_score=None, noise_std=None,
                                  epsilon_spent=self._spent(accountant))
            history.append(rec)
            if self._record(callback, rec):
                break
        eps_sel, eps_sc = (e.epsilon for e in events)
        em = Exponential(epsilon=eps_sel, sensitivity=self.score_sensitivity, random_state=source)
        k = em.select(np.asarray(scores))
        index = int(order[k])
        lap = Laplace(epsilon=eps_sc, sensitivity=self.score_sensitivity, random_state=source)
        score = self._release_score(lap, scores[k])
        return Release(
            method=self.name, params=candidates[index], index=index, score=score, events=events, spent=spent,
            guarantee="unconditional",
            noise={"score_laplace_scale": lap.scale, "score_noise_std": math.sqrt(2) * lap.scale,
                   "selection_em_weight_per_score_unit": eps_sel / (2 * self.score_sensitivity)},
            diagnostics={"selection": "exponential", "n_candidates": len(candidates),
                         **best_case_selection(eps_sel / (2 * self.score_sensitivity),
                                               self.score_bounds[1] - self.score_bounds[0], len(scores))},
            history=tuple(history), n_iter=len(scores), seeded=source.seeded)

    def _stopping(self, f, candidates, source, events, spent) -> Release:
        k = sample_repetitions(float(self.n_iter), shape=self.stopping_shape, random_state=source)
        lap = Laplace(epsilon=self.score_epsilon(), sensitivity=self.score_sensitivity, random_state=source)
        picks = source.integers_below(np.full(k, len(candidates), dtype=np.int64))
        f.pay(k)
        best_i, best_noisy = None, -math.inf
        for i in picks:  # one run at a time, in this process: a pool's task count would show K
            noisy = self._release_score(lap, f(int(i)))
            if noisy > best_noisy:
                best_i, best_noisy = int(i), noisy
                f.keep_last_run()  # the caller may keep this run's own output (e.g. its fitted model)
        return Release(
            method=self.name, params=candidates[best_i], index=best_i, score=best_noisy, events=events, spent=spent,
            guarantee="unconditional",
            noise={"score_laplace_scale": lap.scale, "score_noise_std": math.sqrt(2) * lap.scale},
            diagnostics={"selection": "random-stopping", "mean_runs": self.n_iter,
                         "stopping_shape": self.stopping_shape,
                         "n_candidates": len(candidates),
                         "note": "the number of runs K is secret and is not reported"},
            history=(), n_iter=None, seeded=source.seeded)
