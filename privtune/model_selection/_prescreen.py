"""``method="prescreen"``: the candidates a private selection runs over, chosen on public training rows only.

The screening is ordinary (non-private) k-fold cross-validation on the training
rows, which are public whenever this method runs (``sensitive="validation"``
with a separate training set); it never reads a validation row and costs no
budget. Its schedule (:meth:`privtune.bo.prescreen.PrescreenedRandomSearch.screening_plan`)
makes at most ``method_params["screen_budget"]`` fits.
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
from privtune.model_selection._plan import SearchData, SearchPlan
from privtune.model_selection._progress import _Progress
from privtune.model_selection._seeding import SCREEN, FitSeeder, keeps_random_states, unset_random_states

__all__ = ["screen_on_public_rows"]

_logger = get_logger("privtune.model_selection")


def screen_on_public_rows(plan: SearchPlan, data: SearchData, *, n_jobs: int | None = None,
                          label: str = "method='prescreen'",
                          on_failures: Callable[[list[tuple[Mapping[str, Any], str, Any]], int], None] | None = None
                          ) -> Any:
    """The candidate set the private selection runs over, from public training rows only.

    A data-independent random subset of the candidate set (``screened`` of
    ``method.screening_plan``) is scored by k-fold cross-validation on the
    training rows (never the validation rows), and the ``kept`` best form the
    candidate set of the selection (ties keep candidate order). A candidate
    whose fit or scoring fails on the training rows (in any fold) is never
    kept, and ``on_failures`` is told (the failure is public). Everything here
    is a function of public data and the stored seeds, so a resumed study
    rebuilds the same set.

    Parameters
    ----------
    plan : SearchPlan
        The search's plan, its candidate set and seeds drawn (``_candidates``).
        Read from it: ``fit_estimator`` (the estimator cloned for every fit),
        ``method``, ``scorer``, ``candidates``, ``seeds`` and
        ``settings.verbose``, described below.
    data : SearchData
        The parts of the data: read from it are ``X_tr``, ``y_tr``,
        ``fit_params`` and ``groups``, described below (never a validation row).
    n_jobs : int or None
        joblib workers for the screening fits.
    label : str, default="method='prescreen'"
        How messages name the method the user asked for (``method='auto'
        (resolved to 'prescreen')``).
    on_failures : callable or None
        Called (before any ranking) with ``[(params, "Type: message", exc),
        ...]`` for the screened candidates whose fit or scoring raised on the
        public rows, and the number screened; it may raise (every candidate
        failed, ``error_score="raise"``). The messages and exceptions come from
        public rows only.

    What the screening reads from ``plan`` and ``data``:

    estimator : estimator (``plan.fit_estimator``)
        The search's estimator (cloned for every fit).
    method : privtune.bo.prescreen.PrescreenedRandomSearch (``plan.method``)
        Gives ``screening_plan(n_candidates, n_rows)``; its ``screen_info`` is
        set to a public summary of the screening and its
        ``kept_public_scores`` to the kept candidates' cross-validated scores
        (public: training rows only; ``None`` when nothing was screened).
    scorer : BoundedScorer (``plan.scorer``)
        Scores a fitted candidate on public rows (``score_public``).
    candidates : CandidateSet (``plan.candidates``)
    X_tr, y_tr : array-like (``data.X_tr``, ``data.y_tr``)
        The public training rows (a DataFrame stays one: folds are taken by
        position, with its column names and dtypes).
    seeds : list of int (``plan.seeds``)
        The search's stored seeds (``seeds[1]`` draws the subset and the folds).
    fit_params : FitParams or mapping (``data.fit_params``)
        Passed to every ``fit``; a :class:`~privtune.model_selection._inputs.FitParams`'
        per-sample entries (``sample_weight``) are sliced with each fold's rows.
    groups : array-like or None (``data.groups``)
        One group label per training row: the folds are scikit-learn's
        ``GroupKFold`` (shuffled from the seeds), so that no group is on both
        sides of a fold.
    verbose : int (``plan.settings.verbose``)
        1 shows a progress bar of the screening's fits on stderr (plain lines
        when stderr is not a terminal). The plan and the outcome are logged at
        INFO whatever ``verbose``.

    Returns
    -------
    CandidateSet
        The kept candidates, in their original order.

    Raises
    ------
    InvalidParameterError
        With fewer public training rows (or groups) than folds, or a
        ``screen_budget`` that cannot pay for the screening (nothing is read or
        spent).

    Notes
    -----
    **Privacy.** Free: only public training rows, public hyperparameters and
    seeds are read. The progress display, the log lines and their timings
    describe work on public rows only.
    """
    from sklearn.model_selection import KFold

    from privtune.space._candidates import CandidateSet

    estimator, method, scorer, candidates, seeds = (plan.fit_estimator, plan.method, plan.scorer, plan.candidates,
                                                   plan.seeds)
    X_tr, y_tr, fit_params, groups, verbose = data.X_tr, data.y_tr, data.fit_params, data.groups, plan.settings.verbose
    t0 = time.perf_counter()
    n_rows = count_rows(X_tr)
    screening = method.screening_plan(len(candidates), n_rows, label=label)
    rng = np.random.default_rng([seeds[1], 7])
    order = rng.permutation(len(candidates))
    fold_seed = int(rng.integers(2**31))

    def keep_only(idx: np.ndarray) -> Any:
        return CandidateSet._from_codes(candidates.space, [c[idx] for c in candidates._codes])

    if screening.screened == 0:  # the candidate set is no larger than the kept set: nothing to screen
        method.screen_info = {**screening.to_dict(), "candidate_set_size": len(candidates), "failed": 0}
        method.kept_public_scores = None
        _logger.info("%s: %d candidates, no more than the %d kept: no screening fit", label, len(candidates),
                     screening.kept)
        return keep_only(np.sort(order[:screening.kept]))
    if n_rows < screening.folds:
        raise InvalidParameterError(
            f"{label} scores candidates by {screening.folds}-fold cross-validation on the public "
            f"training rows, which needs at least {screening.folds} of them; got {n_rows}. "
            + ("Lower method_params['screen_cv'], pass" if screening.folds > 2 else "Pass")
            + " more training rows, or use method='random'. Nothing was spent.")
    if groups is None:
        folds = list(KFold(n_splits=screening.folds, shuffle=True, random_state=fold_seed).split(np.zeros((n_rows, 1))))
    else:
        from sklearn.model_selection import GroupKFold

        try:
            splitter = GroupKFold(n_splits=screening.folds, shuffle=True, random_state=fold_seed)
        except TypeError:  # scikit-learn < 1.6: GroupKFold does not shuffle (deterministic: public all the same)
            splitter = GroupKFold(n_splits=screening.folds)
        try:
            folds = list(splitter.split(np.zeros((n_rows, 1)), None, groups))
        except ValueError as exc:  # fewer groups than folds: scikit-learn's own message (public groups)
            raise InvalidParameterError(
                f"{label} scores candidates by {screening.folds}-fold group cross-validation on the public "
                f"training rows: {exc} Lower method_params['screen_cv'], or pass more groups. Nothing was "
                "spent.") from None

    _logger.info("%s: screening %d of %d candidates by %d-fold cross-validation on the %d public training rows "
                 "(nothing spent): %d fits (screen_budget %d), keeping the best %d", label, screening.screened,
                 len(candidates), screening.folds, n_rows, screening.fits, screening.budget, screening.kept)
    seeder = FitSeeder(seeds, active=True)  # public rows: each fit's randomness from the stored seeds (_seeding)
    progress = _Progress(screening.fits, enabled=verbose >= 1, label=f"{label}: screening on public rows")
    # The random_state parameters left at None, read once: a candidate that only sets plain values keeps them, and
    # two deep get_params per fit cost as much as a small fit (the same seeds either way).
    base = clone(estimator)
    base_params, base_unset = base.get_params(deep=True), unset_random_states(base)

    # Each fold's rows of a numpy array, sliced once; every fit gets its own copy (a fit may write into its input:
    # StandardScaler(copy=False)). Other containers are sliced at every fit.
    sliced = [[rows(a, part) if type(a) is np.ndarray else None for a in (X_tr, y_tr) for part in (tr, va)]
              for tr, va in folds]

    def fold_rows(f: int, which: int) -> Any:
        cached = sliced[f][which]
        if cached is not None:
            return cached.copy(order="K")
        return rows((X_tr, y_tr)[which // 2], folds[f][which % 2])

    def public_score(i: int) -> tuple[float, Any]:
        scores = []
        params = candidates[int(i)]
        unset = base_unset if keeps_random_states(base_params, params) else None
        for f, (tr, _) in enumerate(folds):
            est = clone(estimator).set_params(**params)
            seeder.seed(est, SCREEN, params, f, unset=unset)  # the fitted model is discarded: nothing to put back
            try:
                est.fit(fold_rows(f, 0), fold_rows(f, 2), **params_at(fit_params, tr))
                v = float(scorer.score_public(est, fold_rows(f, 1), fold_rows(f, 3)))
            except Exception as exc:  # noqa: BLE001 - public data: the candidate is left out, its error told
                return scorer.bounds[0], exc
            scores.append(v if np.isfinite(v) else scorer.bounds[0])
        return float(np.mean(scores)), None

    screened = np.sort(order[:screening.screened])
    if n_jobs in (None, 1):
        results = []
        for j, i in enumerate(screened, start=1):
            results.append(public_score(int(i)))
            progress.advance(j * screening.folds, f"{j * screening.folds}/{screening.fits} fits")
    else:
        from joblib import Parallel, delayed

        results = list(Parallel(n_jobs=n_jobs)(delayed(public_score)(int(i)) for i in screened))
        progress.advance(screening.fits, f"{screening.fits}/{screening.fits} fits")
    progress.close()
    public = np.asarray([v for v, _ in results])
    failed = np.asarray([exc is not None for _, exc in results], dtype=bool)
    if failed.any() and on_failures is not None:
        on_failures([(candidates[int(i)], f"{type(exc).__name__}: {exc}", exc)
                     for i, (_, exc) in zip(screened, results, strict=True) if exc is not None], screening.screened)
    ok = np.flatnonzero(~failed)
    best = np.sort(ok[np.argsort(-public[ok], kind="stable")[:screening.kept]])  # positions in screened, in order
    method.screen_info = {**screening.to_dict(), "candidate_set_size": len(candidates), "kept": int(len(best)),
                          "failed": int(failed.sum())}
    method.kept_public_scores = tuple(float(v) for v in public[best])
    _logger.info("%s: screening done in %.1f s: kept %d of %d screened candidates (%d fits on public training "
                 "rows%s)", label, time.perf_counter() - t0, len(best), screening.screened, screening.fits,
                 f"; {int(failed.sum())} failed" if failed.any() else "")
    return keep_only(screened[best])
