r"""``prescreen``: screen candidates on the public training rows, then select privately among the best.

privtune's extension (not in Kusner et al.). When only the validation rows are
sensitive, the training rows are public, and anything computed from them alone
is free: ``PrivateSearchCV`` ranks a data-independent random subset of the
candidate set by k-fold cross-validation *on the training rows only*, keeps the
``keep`` best (``n_iter`` by default), and this method then spends the whole
budget as ``random`` does -- one exponential-mechanism selection among the kept
candidates on the sensitive validation rows and a Laplace release of the
winner's score.

The screening's cost is bounded by ``screen_budget``, a number of fits (each on
the training rows but one fold): by default ``max(128, 12 * keep)``, 2.4 times
the ``5 * n_iter`` fits of scikit-learn's ``RandomizedSearchCV(n_iter, cv=5)``
from ``n_iter = 11`` (and 2 folds of 64 candidates at least, as many candidates
as the screening before issue 38 looked at), never more than that screening
(``3 * max(64, 4 * n_iter)`` fits).
For any estimator whose fit does not get slower on fewer rows, the screening
then takes at most ``screen_budget`` times one fit on all the training rows.
Within the budget the screening looks at as many candidates as it can with
2-fold cross-validation, and uses 3 folds only when the budget pays for them on
every screened candidate: on ``benchmarks/privacy_utility/privacy_utility.py``'s part-A tasks,
64 candidates at 2 folds kept as good a set as 64 at 3 folds, and a better one
than 33 at 3 (docs/methods.md). Successive halving on
subsamples of the rows (scikit-learn's ``HalvingRandomSearchCV``) was measured
and not adopted: it spends *more* fits for the same breadth (the survivors are
fitted again), which costs estimators whose fit time barely depends on the rows
(``HistGradientBoostingClassifier``: 0.46 s on 1 000 rows, 1.07 s on 13 000).
:meth:`PrescreenedRandomSearch.screening_plan` gives the schedule from public
sizes, before any fit.

Privacy: the kept set is a function of public data (the training rows, the
declared space, the seeds), so the guarantee is ``random``'s, unconditional
pure epsilon-DP (replace-one of a validation row), with the same two events.
It is refused when the training rows are sensitive (the screening would read
them without privacy) and with cross-validation (``cv=``), where training and
validation rows are the same.

What it buys: the structure of the search space (how good each region is on the
training data) is used for free, so the private selection runs among strong
candidates; measured in ``benchmarks/privacy_utility/prescreen_utility.py`` and
``benchmarks/privacy_utility/privacy_utility.py`` (part A).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from privtune.bo._common import split_budget
from privtune.bo.random_search import RandomSearch
from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_integer

__all__ = ["PrescreenedRandomSearch", "ScreeningPlan", "SCREEN_BUDGET_PER_KEPT", "SCREEN_BUDGET_MIN", "SCREEN_FOLDS"]

#: The default ``screen_budget`` per kept candidate, in fits: 12, 2.4 times the 5 fits per candidate of
#: ``RandomizedSearchCV(cv=5)``.
SCREEN_BUDGET_PER_KEPT = 12

#: The default ``screen_budget``'s floor: 2 folds of 64 candidates, the 64 the screening before issue 38 looked at
#: (at 3 folds) for ``n_iter <= 16``. With it the default is never more than that screening's 3 max(64, 4 n_iter).
SCREEN_BUDGET_MIN = 128

#: With ``screen_cv=None``, the folds of the screening: 2, or up to 3 when the whole screened set fits the budget.
SCREEN_FOLDS = (2, 3)


@dataclass(frozen=True)
class ScreeningPlan:
    """The schedule of ``prescreen``'s screening, from public sizes only.

    Attributes
    ----------
    screened : int
        Candidates cross-validated on the public training rows (0 when the
        candidate set is no larger than ``kept``: nothing to screen).
    kept : int
        Candidates the private selection runs over.
    folds : int
        Folds of the cross-validation (each fit trains on all the rows but one fold).
    n_rows : int
        Public training rows.
    budget : int
        The bound on ``fits``.
    """

    screened: int
    kept: int
    folds: int
    n_rows: int
    budget: int

    @property
    def fits(self) -> int:
        """Number of screening fits: ``folds`` per screened candidate (at most ``budget``)."""
        return self.folds * self.screened

    def to_dict(self) -> dict[str, Any]:
        """The public summary a release's diagnostics carry."""
        return {"screened": int(self.screened), "kept": int(self.kept), "cv_folds": int(self.folds),
                "fits": int(self.fits), "budget_fits": int(self.budget),
                "on": "the public training rows only (no privacy cost)"}


class PrescreenedRandomSearch(RandomSearch):
    """``random``'s private selection over candidates screened on public training rows.

    Parameters
    ----------
    epsilon, delta, n_iter, score_sensitivity, score_bounds, selection_share
        As :class:`~privtune.bo.RandomSearch` (exponential selection only).
    screen_budget : int or None, default=None
        The most fits the screening may make (each on the public training rows
        but one fold). ``None``: ``max(128, 12 * keep)``
        (:data:`SCREEN_BUDGET_MIN`, :data:`SCREEN_BUDGET_PER_KEPT`), 2.4 times
        the fits of ``RandomizedSearchCV(n_iter, cv=5)`` when ``keep = n_iter
        >= 11``. A budget that cannot screen more candidates than it
        keeps (below ``2 * (keep + 1)``, or ``screen_cv * (keep + 1)`` with
        fixed folds) is refused before any fit.
    screen_size : int or None, default=None
        How many candidates (a data-independent random subset of the
        candidate set) are screened; ``None``: as many as the budget allows,
        at most the candidate set. Refused when the budget cannot pay for them.
    screen_cv : int or None, default=None
        Folds of the cross-validation on the training rows. ``None``: 2, or 3
        when the budget pays for 3 folds of every screened candidate (the
        most candidates first: measured, breadth beat folds at equal cost).
    keep : int or None, default=None
        How many of the best-screened candidates the private selection runs
        over; ``None``: ``n_iter`` (then every kept candidate is scored on the
        validation rows).

    Notes
    -----
    **Privacy.** As ``random``: an ``ExponentialEvent`` (phase ``"selection"``)
    and a ``LaplaceEvent`` (phase ``"score_release"``), unconditional. The
    screening reads only public training rows and charges nothing; its
    schedule (:meth:`screening_plan`) depends on public sizes only.
    """

    name = "prescreen"

    def __init__(self, *, epsilon: float, n_iter: int, score_sensitivity: float, delta: float = 0.0,
                 score_bounds: tuple[float, float] = (0.0, 1.0), selection_share: float = 0.5,
                 screen_budget: int | None = None, screen_size: int | None = None, screen_cv: int | None = None,
                 keep: int | None = None) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_sensitivity=score_sensitivity,
                         score_bounds=score_bounds, selection="exponential", selection_share=selection_share)
        owner = type(self).__name__
        self.screen_size = None if screen_size is None else check_integer(screen_size, "screen_size", low=1,
                                                                          owner=owner)
        self.screen_cv = None if screen_cv is None else check_integer(screen_cv, "screen_cv", low=2, high=100,
                                                                      owner=owner)
        self.keep = None if keep is None else check_integer(keep, "keep", low=1, owner=owner)
        if self.keep is not None and self.keep < self.n_iter:
            raise InvalidParameterError(
                f"The 'keep' parameter of {owner} must be >= n_iter={self.n_iter} (the selection scores n_iter of "
                f"the kept candidates). Got {keep!r} instead.")
        self.screen_budget = None if screen_budget is None else check_integer(screen_budget, "screen_budget",
                                                                              low=1, owner=owner)
        self.screen_info: dict[str, Any] = {}
        self.kept_public_scores: tuple[float, ...] | None = None  # set by the screening (public rows only)

    # -- the schedule (public sizes only) ---------------------------------------------------------
    def kept_size(self) -> int:
        """How many candidates the selection runs over (``keep``, else ``n_iter``) before the set's size caps it."""
        return self.keep if self.keep is not None else self.n_iter

    def budget(self) -> int:
        """``screen_budget``, or its default ``max(128, 12 * keep)`` fits."""
        if self.screen_budget is not None:
            return self.screen_budget
        return max(SCREEN_BUDGET_MIN, SCREEN_BUDGET_PER_KEPT * self.kept_size())

    def min_folds(self) -> int:
        """The fewest folds a screening may use (``screen_cv``, or 2 when it is left to the budget)."""
        return self.screen_cv if self.screen_cv is not None else SCREEN_FOLDS[0]

    def screening_plan(self, n_candidates: int, n_rows: int, *, label: str = "method='prescreen'") -> ScreeningPlan:
        """The screening's schedule for ``n_candidates`` candidates and ``n_rows`` public training rows.

        The most candidates (at most ``screen_size`` and the candidate set)
        that ``screen_budget`` pays for at the fewest folds (``screen_cv``, or
        2), then, with ``screen_cv=None``, the most folds up to 3 (and the
        rows) that the budget pays for on all of them. No screening (no fit) when the
        candidate set is no larger than the kept set. Public sizes only.

        Parameters
        ----------
        n_candidates : int
            Size of the candidate set (public).
        n_rows : int
            Number of public training rows.
        label : str, default="method='prescreen'"
            How a refusal names the method the user asked for.

        Returns
        -------
        ScreeningPlan

        Raises
        ------
        InvalidParameterError
            When the budget cannot screen more candidates than are kept, or
            cannot pay for ``screen_size`` (nothing is read or spent).
        """
        keep = min(self.kept_size(), n_candidates)
        cap = n_candidates if self.screen_size is None else min(n_candidates, self.screen_size)
        budget = self.budget()
        if cap <= keep:  # nothing to screen: the whole (capped) set is the selection's
            return ScreeningPlan(screened=0, kept=min(keep, cap), folds=self.min_folds(), n_rows=n_rows,
                                 budget=budget)
        low = self.min_folds()
        screened = cap if self.screen_size is not None else min(cap, budget // low)
        if screened <= keep or screened * low > budget:
            need = low * (screened if self.screen_size is not None else keep + 1)
            what = (f"screening screen_size={self.screen_size} candidates" if self.screen_size is not None
                    else f"screening more than the {keep} candidates it keeps")
            raise InvalidParameterError(
                f"{label}: {what} by {low}-fold cross-validation on the public training rows takes at least {need} "
                f"fits, over method_params['screen_budget']={budget}. Raise screen_budget to at least {need}"
                + (", lower screen_size" if self.screen_size is not None else "")
                + ", or use method='random'. Nothing was read or spent.")
        folds = low if self.screen_cv is not None else max(low, min(SCREEN_FOLDS[1], budget // screened, n_rows))
        return ScreeningPlan(screened=screened, kept=keep, folds=folds, n_rows=n_rows, budget=budget)

    # -- what the selection faces ------------------------------------------------------------------
    def expected_shortfall(self, public_scores: Sequence[float]) -> float:
        """How far below the best of ``public_scores`` the selection lands on average, if they were its input.

        The exponential mechanism of this search (its epsilon and
        sensitivity) applied to the kept candidates' screening scores (public:
        cross-validation on the training rows) as a stand-in for their
        validation scores; with ``keep > n_iter`` averaged over 256 random
        subsets of ``n_iter`` (a fixed seed: public and reproducible). In score
        units.
        """
        s = np.asarray(public_scores, dtype=float)
        if s.size == 0:
            return 0.0
        weight = self.selection_weight()
        best = float(np.max(s))

        def shortfall(sub: np.ndarray) -> float:
            z = weight * (sub - np.max(sub))
            p = np.exp(z)
            p /= p.sum()
            return best - float(p @ sub)

        n = min(self.n_iter, s.size)
        if n == s.size:
            return shortfall(s)
        rng = np.random.default_rng(0)
        return float(np.mean([shortfall(s[rng.permutation(s.size)[:n]]) for _ in range(256)]))

    def selection_weight(self) -> float:
        """The exponential mechanism's weight per score unit, ``eps_sel / (2 sensitivity)`` (public)."""
        eps_sel = split_budget(self.epsilon, 0.0, self.selection_share, type(self).__name__)[0].epsilon
        return eps_sel / (2.0 * self.score_sensitivity)

    def low_utility_warnings(self, candidates: Any, bounds: tuple[float, float]) -> list[str]:
        """Plain-words warnings for what this search's releases face (public quantities only).

        The released score's noise is judged as for every method
        (:func:`privtune.model_selection._utility.utility_warnings`). The
        selection is judged by what it runs over: once the screening has run,
        by :meth:`expected_shortfall` on the kept candidates' public screening
        scores (a selection that is close to a random pick costs nothing when
        the kept candidates score alike), warning when it reaches
        ``SELECTION_GAP`` of the score range; before the screening (no public
        scores yet) as for ``random``.
        """
        from privtune.model_selection._utility import SELECTION_GAP, utility_warnings

        noise = dict(self.noise_scales(candidates))
        if self.kept_public_scores is None:
            return utility_warnings(noise, bounds)
        noise.pop("selection_em_weight_per_score_unit", None)
        out = utility_warnings(noise, bounds)
        lo, hi = float(bounds[0]), float(bounds[1])
        span = hi - lo
        if not (math.isfinite(span) and span > 0):
            return out
        short = self.expected_shortfall(self.kept_public_scores)
        if short >= SELECTION_GAP * span:
            scores = np.asarray(self.kept_public_scores, dtype=float)
            out.insert(0, (
                f"the private selection among the {len(scores)} candidates the screening kept is close to a random "
                f"pick at this budget, and they differ on the public training rows (cross-validated scores from "
                f"{float(scores.min()):.4g} to {float(scores.max()):.4g}): applied to those scores it would fall "
                f"{short:.3g} ({short / span:.0%} of the score range) short of the best of them on average. Raise "
                "epsilon, enlarge the validation set, or lower n_iter (the selection then runs over fewer, better "
                "screened candidates)."))
        return out

    def _search(self, f, candidates, accountant, source, public_observations, callback):  # noqa: ANN001
        release = super()._search(f, candidates, accountant, source, public_observations, callback)
        return replace(release, diagnostics={**release.diagnostics, "selection": "exponential after prescreen",
                                             "prescreen": dict(self.screen_info)})
