"""``method="prescreen"``: the candidates a private selection runs over, chosen on public training rows only.

The screening is ordinary (non-private) successive halving by k-fold
cross-validation on the training rows, which are public whenever this method
runs (``sensitive="validation"`` with a separate training set); it never reads a
validation row and costs no budget. Its schedule
(:meth:`privtune.bo.prescreen.PrescreenedRandomSearch.screening_plan`) bounds
its fitting work by ``method_params["screen_budget"]``.
:class:`privtune.model_selection.PrivateSearchCV` calls
:func:`screen_on_public_rows` before its private selection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.exceptions import InvalidParameterError
from privtune.logging import get_logger
from privtune.model_selection._inputs import n_rows as count_rows
from privtune.model_selection._inputs import params_at, rows
from privtune.model_selection._progress import _Progress
from privtune.model_selection._seeding import SCREEN, FitSeeder

__all__ = ["screen_on_public_rows"]

_logger = get_logger("privtune.model_selection")


def screen_on_public_rows(estimator: Any, method: Any, scorer: Any, candidates: Any, X_tr: Any, y_tr: Any,
                          seeds: list[int], fit_params: Any, *, n_jobs: int | None = None,
                          label: str = "method='prescreen'", groups: Any = None,
                          on_failures: Callable[[list[tuple[Mapping[str, Any], str, Any]], int], None] | None = None,
                          verbose: int = 0) -> Any:
    """The candidate set the private selection runs over, from public training rows only.

    Successive halving (``method.screening_plan``): a data-independent random
    subset of the candidate set is scored by k-fold cross-validation on a
    random subsample of the training rows (never the validation rows); the
    best ``1 / halving_factor`` of each round go on to the next round's
    larger subsample (the subsamples are nested; the last is every row), and
    the ``kept`` best of the last round form the candidate set of the
    selection. Ties keep candidate order. A candidate whose fit or scoring
    fails on the training rows (in any fold of any round) goes no further and
    is never kept, and ``on_failures`` is told (the failure is public). With
    ``groups`` the screening is one round on every row (a subsample would cut
    groups). Everything here is a function of public data and the stored
    seeds, so a resumed study rebuilds the same set.

    Parameters
    ----------
    estimator : estimator
        The search's estimator (cloned for every fit).
    method : privtune.bo.prescreen.PrescreenedRandomSearch
        Gives ``screening_plan(n_candidates, n_rows)`` and ``screen_cv``; its
        ``screen_info`` is set to a public summary of the screening and its
        ``kept_public_scores`` to the kept candidates' scores in the last
        round (public: training rows only).
    scorer : BoundedScorer
        Scores a fitted candidate on public rows (``score_public``).
    candidates : CandidateSet
    X_tr, y_tr : array-like
        The public training rows (a DataFrame stays one: subsamples and folds
        are taken by position, with its column names and dtypes).
    seeds : list of int
        The search's stored seeds (``seeds[1]`` draws the subset, the
        subsamples and the folds).
    fit_params : FitParams or mapping
        Passed to every ``fit``; a :class:`~privtune.model_selection._inputs.FitParams`'
        per-sample entries (``sample_weight``) are sliced with each fit's rows.
    n_jobs : int or None
        joblib workers for the screening fits (one round at a time).
    label : str, default="method='prescreen'"
        How messages name the method the user asked for (``method='auto'
        (resolved to 'prescreen')``).
    groups : array-like or None
        One group label per training row: the folds are scikit-learn's
        ``GroupKFold`` (shuffled from the seeds), so that no group is on both
        sides of a fold; one round on every row.
    on_failures : callable or None
        Called after each round in which some candidates' fit or scoring raised
        on the public rows, before that round's ranking, with ``[(params,
        "Type: message", exc), ...]`` and the number of candidates the round
        scored; it may raise (every candidate failed, ``error_score="raise"``).
        The messages and exceptions come from public rows only.
    verbose : int, default=0
        1 shows a progress bar of the screening's fits on stderr (plain lines
        when stderr is not a terminal). The schedule and the outcome are logged
        at INFO whatever ``verbose``.

    Returns
    -------
    CandidateSet
        The kept candidates, in their original order.

    Raises
    ------
    InvalidParameterError
        With fewer public training rows (or groups) than folds, or a schedule
        that ``screen_budget`` cannot pay for (nothing is read or spent).

    Notes
    -----
    **Privacy.** Free: only public training rows, public hyperparameters and
    seeds are read. The progress display, the log lines and their timings
    describe work on public rows only.
    """
    from sklearn.model_selection import KFold

    from privtune.bo.prescreen import MAX_ROUNDS
    from privtune.space._candidates import CandidateSet

    t0 = time.perf_counter()
    n_rows = count_rows(X_tr)
    if n_rows < method.screen_cv:
        raise InvalidParameterError(
            f"{label} scores candidates by {method.screen_cv}-fold cross-validation on the public "
            f"training rows, which needs at least {method.screen_cv} of them; got {n_rows}. Lower "
            "method_params['screen_cv'], pass more training rows, or use method='random'. Nothing was spent.")
    plan = method.screening_plan(len(candidates), n_rows, label=label,
                                 max_rounds=1 if groups is not None else MAX_ROUNDS)
    rng = np.random.default_rng([seeds[1], 7])
    order = rng.permutation(len(candidates))
    fold_seed = int(rng.integers(2**31))
    row_order = rng.permutation(n_rows)  # round r's subsample: the first rows of this order (nested subsamples)

    def folds_of(n_sub: int, r: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The folds of round ``r`` on its subsample: positions in the training rows."""
        sub = np.arange(n_rows) if n_sub >= n_rows else np.sort(row_order[:n_sub])
        if groups is None:
            split = KFold(n_splits=method.screen_cv, shuffle=True, random_state=(fold_seed + r) % 2**31)
            return [(sub[tr], sub[va]) for tr, va in split.split(sub)]
        from sklearn.model_selection import GroupKFold

        try:
            splitter = GroupKFold(n_splits=method.screen_cv, shuffle=True, random_state=fold_seed)
        except TypeError:  # scikit-learn < 1.6: GroupKFold does not shuffle (deterministic: public all the same)
            splitter = GroupKFold(n_splits=method.screen_cv)
        try:
            return list(splitter.split(np.zeros((n_rows, 1)), None, groups))
        except ValueError as exc:  # fewer groups than folds: scikit-learn's own message (public groups)
            raise InvalidParameterError(
                f"{label} scores candidates by {method.screen_cv}-fold group cross-validation on the public "
                f"training rows: {exc} Lower method_params['screen_cv'], or pass more groups. Nothing was "
                "spent.") from None

    if not plan.rounds:  # the candidate set is no larger than the kept set: nothing to screen
        kept = np.sort(order[:plan.kept])
        method.screen_info = {**plan.to_dict(), "candidate_set_size": len(candidates), "failed": 0}
        method.kept_public_scores = None
        _logger.info("%s: %d candidates, no more than the %d kept: no screening fit", label, len(candidates),
                     plan.kept)
        return CandidateSet._from_codes(candidates.space, [c[kept] for c in candidates._codes])

    _logger.info("%s: screening %d of %d candidates on the public training rows (nothing spent): %d round(s) of "
                 "%d-fold cross-validation, %s rows, %d fits (the work of %.3g fits on all %d rows; "
                 "screen_budget %.3g)", label, plan.screened, len(candidates), len(plan.rounds), plan.folds,
                 "/".join(str(r) for _, r in plan.rounds), plan.fits, plan.work, n_rows, plan.budget)
    seeder = FitSeeder(seeds, active=True)  # public rows: each fit's randomness from the stored seeds (_seeding)
    progress = _Progress(plan.fits, enabled=verbose >= 1, label=f"{label}: screening on public rows")
    done = [0]

    def public_score(i: int, folds: list[tuple[np.ndarray, np.ndarray]], r: int) -> tuple[float, Any]:
        scores = []
        params = candidates[int(i)]
        for f, (tr, va) in enumerate(folds):
            est = clone(estimator).set_params(**params)
            seeder.seed(est, SCREEN, params, f, r)  # the fitted model is discarded: nothing to put back
            try:
                est.fit(rows(X_tr, tr), rows(y_tr, tr), **params_at(fit_params, tr))
                v = float(scorer.score_public(est, rows(X_tr, va), rows(y_tr, va)))
            except Exception as exc:  # noqa: BLE001 - public data: the candidate goes no further, its error told
                return scorer.bounds[0], exc
            scores.append(v if np.isfinite(v) else scorer.bounds[0])
        return float(np.mean(scores)), None

    alive = np.sort(order[:plan.screened])  # candidate indices in this round, in candidate order
    public = np.zeros(0)
    n_failed = 0
    for r, (_, n_sub) in enumerate(plan.rounds):
        folds = folds_of(n_sub, r)
        text = f"round {r + 1}/{len(plan.rounds)}"
        if n_jobs in (None, 1):
            results = []
            for i in alive:
                results.append(public_score(int(i), folds, r))
                done[0] += len(folds)
                progress.advance(done[0], f"{done[0]}/{plan.fits} fits, {text}")
        else:
            from joblib import Parallel, delayed

            results = list(Parallel(n_jobs=n_jobs)(delayed(public_score)(int(i), folds, r) for i in alive))
            done[0] += len(folds) * len(alive)
            progress.advance(done[0], f"{done[0]}/{plan.fits} fits, {text}")
        public = np.asarray([v for v, _ in results])
        failed = np.asarray([exc is not None for _, exc in results], dtype=bool)
        n_failed += int(failed.sum())
        if failed.any() and on_failures is not None:
            on_failures([(candidates[int(i)], f"{type(exc).__name__}: {exc}", exc)
                         for i, (_, exc) in zip(alive, results, strict=True) if exc is not None], len(alive))
        last = r == len(plan.rounds) - 1
        n_next = plan.kept if last else plan.rounds[r + 1][0]
        ok = np.flatnonzero(~failed)
        best = ok[np.argsort(-public[ok], kind="stable")[:n_next]]  # positions in alive, best first
        best = np.sort(best)  # back to candidate order
        alive, public = alive[best], public[best]
    progress.close()
    seconds = time.perf_counter() - t0
    method.screen_info = {**plan.to_dict(), "candidate_set_size": len(candidates), "kept": int(len(alive)),
                          "failed": int(n_failed)}
    method.kept_public_scores = tuple(float(v) for v in public)
    _logger.info("%s: screening done in %.1f s: kept %d of %d screened candidates (%d fits on public training "
                 "rows%s)", label, seconds, len(alive), plan.screened, plan.fits,
                 f"; {n_failed} failed" if n_failed else "")
    return CandidateSet._from_codes(candidates.space, [c[alive] for c in candidates._codes])
