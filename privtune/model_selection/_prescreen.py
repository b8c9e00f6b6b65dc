"""``method="prescreen"``: the candidates a private selection runs over, chosen on public training rows only.

The screening is ordinary (non-private) k-fold cross-validation on the training
rows, which are public whenever this method runs (``sensitive="validation"``
with a separate training set); it never reads a validation row and costs no
budget. :class:`privtune.model_selection.PrivateSearchCV` calls
:func:`screen_on_public_rows` before its private selection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.exceptions import InvalidParameterError
from privtune.model_selection._seeding import SCREEN, FitSeeder

__all__ = ["screen_on_public_rows"]


def screen_on_public_rows(estimator: Any, method: Any, scorer: Any, candidates: Any, X_tr: Any, y_tr: Any,
                          seeds: list[int], fit_params: Mapping[str, Any], *, n_jobs: int | None = None,
                          label: str = "method='prescreen'") -> Any:
    """The candidate set the private selection runs over, from public training rows only.

    A data-independent random subset of ``screened`` candidates is scored by
    k-fold cross-validation on the training rows (never the validation rows),
    and the ``kept`` best form the candidate set of the selection (ties keep
    candidate order). A candidate whose fit or scoring fails on the training
    rows scores the lower bound. Everything here is a function of public data
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
        The public training rows.
    seeds : list of int
        The search's stored seeds (``seeds[1]`` draws the subset and the folds).
    fit_params : mapping
        Passed to every ``fit``.
    n_jobs : int or None
        joblib workers for the screening fits.
    label : str, default="method='prescreen'"
        How messages name the method the user asked for (``method='auto'
        (resolved to 'prescreen')``).

    Returns
    -------
    CandidateSet
        The kept candidates, in their original order.

    Raises
    ------
    InvalidParameterError
        With fewer public training rows than folds (nothing is spent).

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
    folds = list(KFold(n_splits=method.screen_cv, shuffle=True,
                       random_state=int(rng.integers(2**31))).split(X_tr))

    seeder = FitSeeder(seeds, active=True)  # public rows: each fit's randomness from the stored seeds (_seeding)

    def public_score(i: int) -> float:
        scores = []
        for f, (tr, va) in enumerate(folds):
            params = candidates[int(i)]
            est = clone(estimator).set_params(**params)
            seeder.seed(est, SCREEN, params, f)  # the fitted model is discarded: nothing to put back
            try:
                est.fit(X_tr[tr], y_tr[tr], **fit_params)
                v = float(scorer.score_public(est, X_tr[va], y_tr[va]))
            except Exception:  # noqa: BLE001 - public data: a failing candidate just ranks last
                v = scorer.bounds[0]
            scores.append(v if np.isfinite(v) else scorer.bounds[0])
        return float(np.mean(scores))

    if n_jobs in (None, 1):
        public = [public_score(int(i)) for i in screened]
    else:
        from joblib import Parallel, delayed

        public = list(Parallel(n_jobs=n_jobs)(delayed(public_score)(int(i)) for i in screened))
    best = screened[np.argsort(-np.asarray(public), kind="stable")[:n_keep]]
    kept = np.sort(best)
    method.screen_info = {"screened": int(n_screen), "kept": int(n_keep), "cv_folds": int(method.screen_cv),
                          "on": "the public training rows only (no privacy cost)"}
    space = candidates.space
    codes = [c[kept] for c in candidates._codes]
    return CandidateSet._from_codes(space, codes)
