r"""Exact selection over public validation rows: the release is post-processing of DP fits.

With sensitive training rows and **public** validation rows
(``PrivateSearchCV(sensitive="training")``), every candidate is fitted by a DP
estimator whose runs are paid for by the training role, and its score is a
function of that fitted model and of the public validation rows. Whatever is
computed from the scores -- which candidate is best, its score, which
candidate a GP-UCB loop asks for next -- is post-processing of the DP fits
(adaptive composition for a loop: each fit's hyperparameters depend only on
earlier fits' outputs). Noise on the validation side would protect nothing: no
validation row is sensitive. So :class:`PostProcessingSelection` wraps the
method a search asked for, keeps how it chooses the candidates to fit, and
releases the **exact** best score and its candidate, charging the validation
role nothing:

* ``random`` (``selection="exponential"``): the same first ``n_iter``
  candidates of a random permutation of Lambda; the best by its exact score
  (lowest index among ties).
* ``random`` (``selection="random-stopping"``): the same secret number of runs
  K (Papernot & Steinke's law, mean ``n_iter``); the best run by its exact
  score. The training role's ``RepeatAndSelectEvent`` over the fits covers the
  whole search (P&S's theorem releases the best of the K runs by any score
  that is a post-processing of each run's output).
* the GP methods (``gp-ucb``, ``gp-ucb-exact``, ``noisy-ucb``): GP-UCB over
  Lambda observing the exact scores (Alg. 2's loop without its releases); the
  best observed candidate and its exact score.

The guarantee is the training role's, unconditional: no GP prior is assumed
anywhere (Kusner et al.'s conditional guarantees protect *validation* rows).
This is not in the source papers (Kusner et al. 2015 treat the validation
rows as the sensitive ones; Papernot & Steinke 2022 score each run privately
only when the scoring data is private too): it is the plain composition and
post-processing argument, and it is what makes tuning with sensitive training
rows cost nothing beyond its fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.accounting import Accountant, Budget, PrivacyEvent, RepeatAndSelectEvent
from privtune.accounting.selection import sample_repetitions
from privtune.bo._base import Callback, ReleaseMethod
from privtune.bo._common import ChargedObjective, argmax_first
from privtune.bo._gp_method import GPMethod
from privtune.bo.random_search import RandomSearch
from privtune.bo.release import IterationRecord, Release
from privtune.exceptions import InvalidParameterError
from privtune.space import CandidateSet
from privtune.utils._random import RandomSource

__all__ = ["PostProcessingSelection"]

#: The confidence delta of the loop's beta_t for the GP methods (no privacy meaning here: the rows it reads are
#: public); the value gp-ucb-exact uses at its default delta.
LOOP_DELTA = 0.1


class PostProcessingSelection(ReleaseMethod):
    """A release method's candidate choice, with the best candidate and its score released exactly.

    For searches whose validation rows are public and whose training rows are
    fitted by DP estimators paid for elsewhere (``PrivateSearchCV`` charges the
    training role's whole plan before the first fit).

    Parameters
    ----------
    method : RandomSearch or GPMethod
        The method the search asked for (built with the search's budget, which
        here is the training role's). Its candidate choice is kept; its
        validation releases are not made. ``lipschitz`` and ``prescreen`` are
        refused (they assume public training rows). For a GP method only the
        kernel matters (a plain ``GPMethod`` will do).
    name : str or None, default=None
        The method's name in the release (default: ``method.name``).

    Notes
    -----
    **Privacy.** Charges the (validation) accountant nothing: :meth:`plan` is
    empty. The selection and the score are exact functions of the DP fits and
    of public rows, so they are post-processing of the fits, whose events the
    caller must charge (``max_evaluations`` fits, or ``selection_event(fit)``
    with random stopping) before the first evaluation. Guarantee:
    unconditional. Random stopping's K stays secret (no history, no callback).
    """

    guarantee = "unconditional"

    def __init__(self, method: ReleaseMethod, *, name: str | None = None) -> None:
        if not isinstance(method, (RandomSearch, GPMethod)) or method.name in ("lipschitz", "prescreen"):
            raise InvalidParameterError(
                "PostProcessingSelection wraps the 'random' method or a GP method (gp-ucb, gp-ucb-exact, "
                f"noisy-ucb); got {type(method).__name__}.")
        super().__init__(epsilon=method.epsilon, delta=method.delta, n_iter=method.n_iter,
                         score_bounds=method.score_bounds)
        self.method = method
        self.name = name or method.name
        self.selection = getattr(method, "selection", None)

    @property
    def stopping(self) -> bool:
        return self.selection == "random-stopping"

    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        """Nothing: no validation row is sensitive."""
        return []

    def noise_scales(self, candidates: CandidateSet) -> dict[str, float]:
        """No noise is added to the validation side."""
        return {}

    def max_evaluations(self, candidates: CandidateSet) -> int | None:
        return self.method.max_evaluations(candidates)

    def selection_event(self, run: PrivacyEvent, label: str = "") -> RepeatAndSelectEvent:
        """Random stopping: the wrapped method's ``RepeatAndSelectEvent`` over runs of ``run`` (public)."""
        if not self.stopping:
            raise InvalidParameterError("selection_event is defined for random stopping only.")
        return self.method.selection_event(run, label=label)

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                public_observations: Sequence[Any], callback: Callback | None) -> Release:
        self._charge(accountant, [])  # an empty plan, opened like any other (the journal records it)
        if isinstance(self.method, GPMethod):
            # public: an engine that cannot be built fails before any evaluation
            self.method._engine(candidates, 0.0, LOOP_DELTA, public_observations)
            return self._gp_loop(f, candidates, accountant, source, public_observations, callback)
        if self.stopping:
            return self._stopping(f, candidates, source)
        return self._batch(f, candidates, accountant, source, callback)

    def _release(self, candidates: CandidateSet, index: int | None, score: float | None, source: RandomSource,
                 diagnostics: dict[str, Any], history: tuple[IterationRecord, ...], n_iter: int | None) -> Release:
        return Release(
            method=self.name, params=None if index is None else candidates[index], index=index, score=score,
            events=(), spent=Budget(0.0, 0.0), guarantee="unconditional", noise={},
            diagnostics={"selection": "exact (public validation rows: post-processing of the DP fits)",
                         "n_candidates": len(candidates), **diagnostics},
            history=history, n_iter=n_iter, seeded=source.seeded)

    def _batch(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
               callback: Callback | None) -> Release:
        # The same candidates as RandomSearch's exponential selection draws from the same source.
        order = source.numpy_generator().permutation(len(candidates))[: self.n_iter]
        f.pay(len(order))
        scores = f.batch(order)  # a data-independent batch: parallel when a mapper is given
        history = []
        for t, i in enumerate(order, start=1):
            rec = IterationRecord(iteration=t, params=candidates[int(i)], released_score=None, noise_std=None,
                                  epsilon_spent=self._spent(accountant))
            history.append(rec)
            if self._record(callback, rec):
                break
        k = argmax_first(np.asarray(scores))
        return self._release(candidates, int(order[k]), float(scores[k]), source, {}, tuple(history), len(scores))

    def _stopping(self, f: ChargedObjective, candidates: CandidateSet, source: RandomSource) -> Release:
        method = self.method
        k = sample_repetitions(float(method.n_iter), shape=method.stopping_shape, random_state=source)
        picks = source.integers_below(np.full(k, len(candidates), dtype=np.int64))
        f.pay(k)
        best_i, best = None, -np.inf
        for i in picks:  # one run at a time, in this process: a pool's task count would show K
            value = f(int(i))
            if value > best:
                best_i, best = int(i), value
                f.keep_last_run()  # the caller keeps this run's own output (its fitted model)
        return self._release(candidates, best_i, None if best_i is None else float(best), source,
                             {"mean_runs": method.n_iter, "stopping_shape": method.stopping_shape,
                              "note": "the number of runs K is secret and is not reported"}, (), None)

    def _gp_loop(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                 public_observations: Sequence[Any], callback: Callback | None) -> Release:
        engine = self.method._engine(candidates, 0.0, LOOP_DELTA, public_observations)
        f.pay(self.n_iter)
        best_i, best = None, -np.inf
        for t in range(1, self.n_iter + 1):
            i = engine.ask()
            value = f(i)
            engine.tell(i, value)
            if value > best:
                best_i, best = int(i), value
            rec = IterationRecord(iteration=t, params=None, released_score=None, noise_std=None,
                                  epsilon_spent=self._spent(accountant))
            if self._record(callback, rec):
                break
        return self._release(candidates, best_i, float(best), source,
                             {"loop": "GP-UCB on the exact scores", "task_correlation": self.method.task_correlation},
                             (), engine.t)

    def __repr__(self) -> str:
        return f"PostProcessingSelection({self.method!r})"
