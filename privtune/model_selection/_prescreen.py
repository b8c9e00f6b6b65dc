"""``method="prescreen"``: the candidates a private selection runs over, chosen on public training rows only.

The screening is ordinary (non-private) k-fold cross-validation on the training
rows, which are public whenever this method runs (``sensitive="validation"``
with a separate training set); it never reads a validation row and costs no
budget. :class:`privtune.model_selection.PrivateSearchCV` calls
:func:`screen_on_public_rows` before its private selection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.exceptions import InvalidParameterError
from privtune.model_selection._inputs import params_at, rows
from privtune.model_selection._seeding import SCREEN, FitSeeder

__all__ = ["screen_on_public_rows"]


def screen_on_public_rows(estimator: Any, method: Any, scorer: Any, candidates: Any, X_tr: Any, y_tr: Any,
                          seeds: list[int], fit_params: Any, *, n_jobs: int | None = None,
                          label: str = "method='prescreen'", groups: Any = None,
                          on_failures: Callable[[list[tuple[Mapping[str, Any], str, Any]], int], None] | None = None,
                          ) -> Any:
    """The candidate set the private selection runs over, from public training rows only.

    A data-independent random subset of ``screened`` candidates is scored by
    k-fold cross-validation on the training rows (never the validation rows),
    and the ``kept`` best form the candidate set of the selection (ties keep
    candidate order). A candidate whose fit or scoring fails on the training
    rows (in any fold) is left out of the kept set, and ``on_failures`` is
    told (the failure is public). Everything here is a function of public data
    and the stored seeds, so a resumed study rebuilds the same set.

    Parameters
    ----------
    estimator : estimator
        The search's estimator (cloned for every fit).
    method : privtune.bo.prescreen.PrescreenedRandomSearch
        Gives ``sizes(n_candidates) -> (screened, kept)`` and ``screen_cv``;
        its ``screen_info`` is set to a public summary of the screening.
    scorer : BoundedScorer
        Scores a fitted candidate on public rows (``score_public``).
    candidates : CandidateSet
    X_tr, y_tr : array-like
        The public training rows (a DataFrame stays one: folds are taken by
        position, with its column names and dtypes).
    seeds : list of int
        The search's stored seeds (``seeds[1]`` draws the subset and the folds).
    fit_params : FitParams or mapping
        Passed to every ``fit``; a :class:`~privtune.model_selection._inputs.FitParams`'
        per-sample entries (``sample_weight``) are sliced with each fold's rows.
    n_jobs : int or None
        joblib workers for the screening fits.
    label : str, default="method='prescreen'"
        How messages name the method the user asked for (``method='auto'
        (resolved to 'prescreen')``).
    groups : array-like or None
        One group label per training row: the folds are scikit-learn's
        ``GroupKFold`` (shuffled from the seeds), so that no group is on both
        sides of a fold.
    on_failures : callable or None
        Called (before any ranking) with ``[(params, "Type: message", exc),
        ...]`` for the screened candidates whose fit or scoring raised on the
        public rows, and the number screened; it may raise (every candidate
        failed, ``error_score="raise"``). The messages and exceptions come from
        public rows only.

    Returns
    -------
    CandidateSet
        The kept candidates, in their original order.

    Raises
    ------
    InvalidParameterError
        With fewer public training rows (or groups) than folds (nothing is spent).

    Notes
    -----
    **Privacy.** Free: only public training rows, public hyperparameters and
    seeds are read.
    """
    from sklearn.model_selection import KFold

    from privtune.space._candidates import CandidateSet

    n_rows = int(X_tr.shape[0])
    if n_rows < method.screen_cv:
        raise InvalidParameterError(
            f"{label} scores candidates by {method.screen_cv}-fold cross-validation on the public "
            f"training rows, which needs at least {method.screen_cv} of them; got {n_rows}. Lower "
            "method_params['screen_cv'], pass more training rows, or use method='random'. Nothing was spent.")
    n_screen, n_keep = method.sizes(len(candidates))
    rng = np.random.default_rng([seeds[1], 7])
    screened = np.sort(rng.permutation(len(candidates))[:n_screen])
    fold_seed = int(rng.integers(2**31))
    if groups is None:
        folds = list(KFold(n_splits=method.screen_cv, shuffle=True, random_state=fold_seed).split(X_tr))
    else:
        from sklearn.model_selection import GroupKFold

        try:
            splitter = GroupKFold(n_splits=method.screen_cv, shuffle=True, random_state=fold_seed)
        except TypeError:  # scikit-learn < 1.6: GroupKFold does not shuffle (deterministic: public all the same)
            splitter = GroupKFold(n_splits=method.screen_cv)
        try:
            folds = list(splitter.split(X_tr, y_tr, groups))
        except ValueError as exc:  # fewer groups than folds: scikit-learn's own message (public groups)
            raise InvalidParameterError(
                f"{label} scores candidates by {method.screen_cv}-fold group cross-validation on the public "
                f"training rows: {exc} Lower method_params['screen_cv'], or pass more groups. Nothing was "
                "spent.") from None

    seeder = FitSeeder(seeds, active=True)  # public rows: each fit's randomness from the stored seeds (_seeding)

    def public_score(i: int) -> tuple[float, Any]:
        scores = []
        for f, (tr, va) in enumerate(folds):
            params = candidates[int(i)]
            est = clone(estimator).set_params(**params)
            seeder.seed(est, SCREEN, params, f)  # the fitted model is discarded: nothing to put back
            try:
                est.fit(rows(X_tr, tr), rows(y_tr, tr), **params_at(fit_params, tr))
                v = float(scorer.score_public(est, rows(X_tr, va), rows(y_tr, va)))
            except Exception as exc:  # noqa: BLE001 - public data: the candidate is left out, its error told
                return scorer.bounds[0], exc
            scores.append(v if np.isfinite(v) else scorer.bounds[0])
        return float(np.mean(scores)), None

    if n_jobs in (None, 1):
        results = [public_score(int(i)) for i in screened]
    else:
        from joblib import Parallel, delayed

        results = list(Parallel(n_jobs=n_jobs)(delayed(public_score)(int(i)) for i in screened))
    public = np.asarray([v for v, _ in results])
    failed = np.asarray([exc is not None for _, exc in results], dtype=bool)
    if failed.any() and on_failures is not None:
        on_failures([(candidates[int(i)], f"{type(exc).__name__}: {exc}", exc)
                     for i, (_, exc) in zip(screened, results, strict=True) if exc is not None], int(n_screen))
    ok = np.flatnonzero(~failed)
    best = screened[ok[np.argsort(-public[ok], kind="stable")[:n_keep]]]
    kept = np.sort(best)
    method.screen_info = {"screened": int(n_screen), "kept": int(len(kept)), "cv_folds": int(method.screen_cv),
                          "on": "the public training rows only (no privacy cost)"}
    space = candidates.space
    codes = [c[kept] for c in candidates._codes]
    return CandidateSet._from_codes(space, codes)
