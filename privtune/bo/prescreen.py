r"""``prescreen``: screen candidates on the public training rows, then select privately among the best.

privtune's extension (not in Kusner et al.). When only the validation rows are
sensitive, the training rows are public, and anything computed from them alone
is free: ``PrivateSearchCV`` ranks candidates by k-fold cross-validation *on
the training rows only*, keeps the ``keep`` best (``n_iter`` by default), and
this method then spends the whole budget as ``random`` does -- one
exponential-mechanism selection among the kept candidates on the sensitive
validation rows and a Laplace release of the winner's score.

The screening is successive halving on the public rows (as scikit-learn's
``HalvingRandomSearchCV`` does, with a schedule of its own): a data-independent
random subset of the candidate set is cross-validated on a random subsample of
a third of the training rows, and the best third go on to all the rows, where
the ``keep`` best are kept (``screen_rounds`` rounds at most, 2 by default: one
halving; one round when the rows are few). Its cost is bounded by
``screen_budget``, in fits on all the public training rows (a fit on r of the n
rows counts r / n); the default, ``8 * keep``, is twice the fitting work of
scikit-learn's ``RandomizedSearchCV(n_iter, cv=5)`` (5 ``n_iter`` fits on 4/5
of the rows). :meth:`PrescreenedRandomSearch.screening_plan` gives the
schedule from public sizes, before any fit.

Privacy: the kept set is a function of public data (the training rows, the
declared space, the seeds), so the guarantee is ``random``'s, unconditional
pure epsilon-DP (replace-one of a validation row), with the same two events.
It is refused when the training rows are sensitive (the screening would read
them without privacy) and with cross-validation (``cv=``), where training and
validation rows are the same.

What it buys: the structure of the search space (how good each region is on the
training data) is used for free, so the private selection runs among strong
candidates; measured in ``benchmarks/prescreen_utility.py`` and
``benchmarks/privacy_utility.py`` (part A).
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
from privtune.utils._validation import check_integer, check_real

__all__ = ["PrescreenedRandomSearch", "ScreeningPlan", "SCREEN_BUDGET_PER_KEPT", "SCREEN_ROUNDS"]

#: The default ``screen_budget`` per kept candidate, in fits on all the public training rows: 8 (twice the
#: 4 fits' worth of rows -- 5 fits on 4/5 of them -- that ``RandomizedSearchCV(cv=5)`` spends per candidate).
SCREEN_BUDGET_PER_KEPT = 8.0

#: The default ``screen_rounds``: one halving. A fit on a subsample saves time in proportion to its rows only for
#: some estimators: HistGradientBoostingClassifier took 0.46 s on 1 000 rows and 1.07 s on 13 000, so deeper
#: halving multiplies small fits that cost almost as much as full ones.
SCREEN_ROUNDS = 2

#: The most rounds ``screen_rounds`` may ask for.
MAX_ROUNDS = 8


@dataclass(frozen=True)
class ScreeningPlan:
    """The schedule of ``prescreen``'s screening, from public sizes only.

    Attributes
    ----------
    rounds : tuple of (int, int)
        ``(candidates, rows)`` per round: each of ``candidates`` is
        cross-validated (``folds`` fits) on a random subsample of ``rows``
        public training rows; the best ``1 / factor`` go on to the next round,
        and the best ``kept`` of the last one (on all the rows) are kept. Empty
        when the candidate set is no larger than ``kept`` (nothing to screen).
    kept : int
        Candidates the private selection runs over.
    folds : int
        Folds of every round's cross-validation.
    n_rows : int
        Public training rows.
    budget : float
        The bound on ``work``.
    """

    rounds: tuple[tuple[int, int], ...]
    kept: int
    folds: int
    n_rows: int
    budget: float

    @property
    def screened(self) -> int:
        """Candidates the first round scores (all kept candidates when nothing is screened)."""
        return self.rounds[0][0] if self.rounds else self.kept

    @property
    def fits(self) -> int:
        """Number of screening fits (``folds`` per candidate and round)."""
        return self.folds * sum(n for n, _ in self.rounds)

    @property
    def work(self) -> float:
        """The screening's fitting work in fits on all the public training rows (at most ``budget``).

        Each fit of a round on ``rows`` rows trains on the ``folds - 1`` other
        folds, so a round costs ``candidates (folds - 1) rows / n_rows``.
        """
        return sum(n * (self.folds - 1) * r for n, r in self.rounds) / max(self.n_rows, 1)

    def to_dict(self) -> dict[str, Any]:
        """The public summary a release's diagnostics carry."""
        return {"screened": int(self.screened), "kept": int(self.kept), "cv_folds": int(self.folds),
                "rounds": [[int(n), int(r)] for n, r in self.rounds], "fits": int(self.fits),
                "work_in_full_fits": round(float(self.work), 6), "budget_in_full_fits": float(self.budget),
                "on": "the public training rows only (no privacy cost)"}


class PrescreenedRandomSearch(RandomSearch):
    """``random``'s private selection over candidates screened on public training rows.

    Parameters
    ----------
    epsilon, delta, n_iter, score_sensitivity, score_bounds, selection_share
        As :class:`~privtune.bo.RandomSearch` (exponential selection only).
    screen_budget : float or None, default=None
        Bound on the screening's fitting work, in fits on all the public
        training rows (a fit on r of the n rows counts r / n). ``None``:
        ``8 * keep`` (:data:`SCREEN_BUDGET_PER_KEPT`), twice the work of
        ``RandomizedSearchCV(n_iter, cv=5)`` when ``keep = n_iter``. A budget
        too small for the cheapest screening (the best ``keep`` of ``keep + 1``
        candidates on all the rows: ``(keep + 1) (screen_cv - 1)``) is refused
        before any fit.
    screen_size : int or None, default=None
        How many candidates (a data-independent random subset of the
        candidate set) the first round scores; ``None``: as many as the budget
        allows, at most the candidate set. Given, the schedule has the fewest
        rounds that fit the budget (refused when none does).
    screen_cv : int, default=3
        Folds of each round's cross-validation on the training rows.
    keep : int or None, default=None
        How many of the best-screened candidates the private selection runs
        over; ``None``: ``n_iter`` (then every kept candidate is scored on the
        validation rows).
    halving_factor : int, default=3
        Each round keeps the best ``1 / halving_factor`` of its candidates
        for a subsample ``halving_factor`` times larger (scikit-learn's
        ``factor``).
    screen_rounds : int, default=2
        At most this many rounds (1: every screened candidate on all the
        rows; more: deeper halving, which pays for estimators whose fit time
        grows with the rows, such as kernel SVMs).
    screen_min_rows : int, default=100
        The smallest subsample a round may use (fewer rounds when the training
        rows are few; with at most ``halving_factor * screen_min_rows`` rows
        every screened candidate is cross-validated on all of them).

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
                 screen_budget: float | None = None, screen_size: int | None = None, screen_cv: int = 3,
                 keep: int | None = None, halving_factor: int = 3, screen_rounds: int = SCREEN_ROUNDS,
                 screen_min_rows: int = 100) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_sensitivity=score_sensitivity,
                         score_bounds=score_bounds, selection="exponential", selection_share=selection_share)
        owner = type(self).__name__
        self.screen_size = None if screen_size is None else check_integer(screen_size, "screen_size", low=1,
                                                                          owner=owner)
        self.screen_cv = check_integer(screen_cv, "screen_cv", low=2, high=100, owner=owner)
        self.keep = None if keep is None else check_integer(keep, "keep", low=1, owner=owner)
        if self.keep is not None and self.keep < self.n_iter:
            raise InvalidParameterError(
                f"The 'keep' parameter of {owner} must be >= n_iter={self.n_iter} (the selection scores n_iter of "
                f"the kept candidates). Got {keep!r} instead.")
        self.screen_budget = None if screen_budget is None else check_real(screen_budget, "screen_budget", low=0.0,
                                                                           owner=owner)
        self.halving_factor = check_integer(halving_factor, "halving_factor", low=2, high=1000, owner=owner)
        self.screen_min_rows = check_integer(screen_min_rows, "screen_min_rows", low=1, owner=owner)
        self.screen_rounds = check_integer(screen_rounds, "screen_rounds", low=1, high=MAX_ROUNDS, owner=owner)
        self.screen_info: dict[str, Any] = {}
        self.kept_public_scores: tuple[float, ...] | None = None  # set by the screening (public rows only)

    # -- the schedule (public sizes only) ---------------------------------------------------------
    def kept_size(self) -> int:
        """How many candidates the selection runs over (``keep``, else ``n_iter``) before the set's size caps it."""
        return self.keep if self.keep is not None else self.n_iter

    def budget(self) -> float:
        """``screen_budget``, or its default ``8 * keep`` (fits on all the public training rows)."""
        return self.screen_budget if self.screen_budget is not None else SCREEN_BUDGET_PER_KEPT * self.kept_size()

    def _sizes(self, n0: int, n_rounds: int) -> list[int]:
        sizes = [n0]
        for _ in range(n_rounds - 1):
            sizes.append(math.ceil(sizes[-1] / self.halving_factor))
        return sizes

    def _rows(self, n_rows: int, n_rounds: int) -> list[int]:
        return [n_rows if i == n_rounds - 1 else n_rows // self.halving_factor ** (n_rounds - 1 - i)
                for i in range(n_rounds)]

    def _cost(self, sizes: Sequence[int], rows: Sequence[int], n_rows: int) -> float:
        return sum(n * (self.screen_cv - 1) * r for n, r in zip(sizes, rows, strict=True)) / n_rows

    def screening_plan(self, n_candidates: int, n_rows: int, *, label: str = "method='prescreen'",
                       max_rounds: int = MAX_ROUNDS) -> ScreeningPlan:
        """The screening's schedule for ``n_candidates`` candidates and ``n_rows`` public training rows.

        Among schedules of 1 to ``screen_rounds`` rounds whose first
        subsample holds at least ``screen_min_rows`` rows (one round always
        qualifies: it uses all the rows), each round keeping the best
        ``ceil(1 / halving_factor)`` of its candidates and the last one more
        than ``keep``, the plan screens the most candidates whose work fits
        the budget (ties: the fewest rounds). Public sizes only.

        Parameters
        ----------
        n_candidates : int
            Size of the candidate set (public).
        n_rows : int
            Number of public training rows.
        label : str, default="method='prescreen'"
            How a refusal names the method the user asked for.
        max_rounds : int, default=MAX_ROUNDS
            At most this many rounds, and at most ``screen_rounds`` (1: no
            halving, e.g. with groups).

        Returns
        -------
        ScreeningPlan

        Raises
        ------
        InvalidParameterError
            When no schedule fits ``screen_budget`` (nothing is read or spent).
        """
        keep = min(self.kept_size(), n_candidates)
        cap = n_candidates if self.screen_size is None else min(n_candidates, self.screen_size)
        budget = self.budget()
        if cap <= keep:  # nothing to screen: the whole (capped) set is the selection's
            return ScreeningPlan(rounds=(), kept=min(keep, cap), folds=self.screen_cv, n_rows=n_rows, budget=budget)
        floor = max(self.screen_min_rows, self.screen_cv)
        best: tuple[int, int] | None = None  # (screened, rounds)
        cheapest = math.inf
        for n_rounds in range(1, max(1, min(int(max_rounds), self.screen_rounds)) + 1):
            rows = self._rows(n_rows, n_rounds)
            if n_rounds > 1 and rows[0] < floor:
                break

            def fits(n0: int, n_rounds: int = n_rounds, rows: list[int] = rows) -> bool:
                sizes = self._sizes(n0, n_rounds)
                return sizes[-1] > keep and self._cost(sizes, rows, n_rows) <= budget * (1 + 1e-12)

            # the last round must hold more than keep: ceil(n0 / factor**(rounds - 1)) > keep
            lowest = keep * self.halving_factor ** (n_rounds - 1) + 1
            if lowest > cap:
                break
            if self.screen_size is not None:  # the first round's size is given: the fewest rounds that afford it
                cheapest = min(cheapest, self._cost(self._sizes(cap, n_rounds), rows, n_rows))
                if fits(cap):
                    best = (cap, n_rounds)
                    break
                continue
            cheapest = min(cheapest, self._cost(self._sizes(lowest, n_rounds), rows, n_rows))
            if not fits(lowest):
                continue
            lo, hi = lowest, cap  # the largest first round that fits (the work grows with it)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
            if best is None or lo > best[0]:
                best = (lo, n_rounds)
            if lo == cap:
                break
        if best is None:
            what = (f"screening screen_size={self.screen_size} candidates" if self.screen_size is not None
                    else f"keeping the best {keep} of {keep + 1} candidates")
            raise InvalidParameterError(
                f"{label}: {what} by {self.screen_cv}-fold cross-validation on the {n_rows} public "
                f"training rows costs at least {cheapest:.4g} fits on all of them, over "
                f"method_params['screen_budget']={budget:.4g}. Raise screen_budget to at least {cheapest:.4g}"
                + (", lower screen_size" if self.screen_size is not None else "")
                + ", lower screen_cv, or use method='random'. Nothing was read or spent.")
        n0, n_rounds = best
        sizes, rows = self._sizes(n0, n_rounds), self._rows(n_rows, n_rounds)
        return ScreeningPlan(rounds=tuple(zip(sizes, rows, strict=True)), kept=keep, folds=self.screen_cv,
                             n_rows=n_rows, budget=budget)

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
