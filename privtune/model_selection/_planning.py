"""PrivateSearchCV's stages before any row is read: the plan, the study, the candidates, the run.

``_plan`` (the settings and the inputs' public structure and sizes) ->
``_open_study`` (the stored study, once every check that can refuse the
configuration has run) -> ``_candidates`` (seeds, split or folds, candidate set)
-> ``_open_run`` (the validation accountant, its plan checked before any fit).
Everything here reads the inputs' public structure and sizes only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from privtune.accounting import Accountant, ComposedEvent
from privtune.exceptions import InvalidParameterError
from privtune.model_selection._inputs import (
    check_estimator_type,
    check_sensitive_structure,
    frame_kind,
    n_columns,
    n_rows,
)
from privtune.model_selection._plan import SearchData, SearchPlan, SearchRun, SearchSettings
from privtune.model_selection._proxy import check_proxy
from privtune.model_selection._scoring import BoundedScorer
from privtune.model_selection._subsampling import tuning_rows
from privtune.model_selection._training import (
    declares_by_size,
    is_pipeline,
    per_fit_event,
    public_probe,
    refuse_spent_training_study,
    without_accountants,
)
from privtune.space import candidate_set
from privtune.utils._random import check_random_state


def _ships_by_dtype(a: Any) -> bool:
    """Whether ``a`` pickles whatever its values, judged from its dtype(s) alone (public structure): numbers and
    strings do; an object array or column may hold a cell that cannot be pickled. Apply it to the caller's own
    containers: anything without a dtype (a list) counts as object, since its element type is read from entries.
    A pandas or polars DataFrame is judged column by column, a Series by its one dtype (pandas' ``str``,
    ``category`` of such values, nullable ``Int64`` / ``boolean``: yes; ``object``: no)."""
    if a is None:
        return True
    if frame_kind(a) is not None:  # a table: one dtype per column
        return all(_dtype_ships(d) for d in a.dtypes)
    return _dtype_ships(getattr(a, "dtype", None))


def _dtype_ships(dtype: Any) -> bool:
    """One dtype of numpy, pandas (its extension dtypes) or polars: do its values always pickle?"""
    if dtype is None:
        return False
    if type(dtype).__module__.split(".", 1)[0] == "polars":  # typed columns; only Object holds Python objects
        return "object" not in str(dtype).lower()
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biufcUSMm"
    categories = getattr(dtype, "categories", None)
    if categories is not None:  # pandas category: its categories' own dtype
        return _dtype_ships(getattr(categories, "dtype", None))
    if type(dtype).__name__ == "StringDtype":  # pandas' str: strings (and its missing-value marker) only
        return True
    numpy_dtype = getattr(dtype, "numpy_dtype", None)  # pandas' nullable Int64 / Float64 / boolean
    return isinstance(numpy_dtype, np.dtype) and numpy_dtype.kind in "biufcUSMm"


class _SearchPlanningMixin:
    """PrivateSearchCV's planning stages: what is decided before any data access (public inputs only)."""

    def _plan(self, settings: SearchSettings, X: Any, y: Any, X_val: Any, y_val: Any,
              fit_params: Mapping[str, Any], proxy: tuple[Any, Any] = (None, None)) -> tuple[SearchPlan, SearchData]:
        """The search's plan from the settings and the inputs' public structure; the parts of the data, unsplit.

        Everything here can refuse the configuration, before the study row is created and before any value is
        read (the inputs' structure and sizes only); it sets ``score_sensitivity_``.
        """
        # With public training rows the estimator's accountants are charged nothing: every fit (screening,
        # candidates, refit; here or in a worker) is of a clone without them, and best_estimator_ gets them back.
        fit_estimator = without_accountants(self.estimator, settings.public_fit_accountants)
        source = check_random_state(self.random_state, owner="PrivateSearchCV")
        # Whether workers may be processes is judged from the containers *as passed* (public structure): a list's
        # element type, or the types each part of a validation_size split gets, are read from the entries.
        ships = all(_ships_by_dtype(a) for a in (X, y, X_val, y_val))
        X_tr, y_tr, X_v, y_v = self._validate_data(X, y, X_val, y_val)
        params, groups = self._fit_params(settings, fit_params, n_rows(X_tr),
                                          split=X_v is None and settings.cv is None)
        proxy_rows = check_proxy(*proxy, X_tr)
        if proxy_rows is not None and settings.method == "prescreen":
            raise InvalidParameterError(
                f"{self._method_label(settings)} ranks the candidates on the public training rows; X_proxy/y_proxy "
                "would rank them a second time, on other rows. Use method='random' (or another method) to rank them "
                "on the proxy rows, or drop X_proxy/y_proxy. Nothing was read or spent.")
        data = SearchData(X_tr, y_tr, X_v, y_v, params, groups, proxy_rows)
        scorer: BoundedScorer = settings.scorer
        # K from the training labels only when they are public *and* apart from the validation rows: before a
        # validation_size split, y still holds the validation labels (K must not depend on them).
        n_classes = self._n_classes(settings, y_tr if X_v is not None else None)
        if scorer.aggregate == "balanced":  # the score averages over at least the K its sensitivity assumes
            scorer = scorer.with_n_classes(n_classes)
        m, n_train, sensitivity = self._sizes(settings, scorer, n_classes, data)
        settings = self._sized_fit(settings, n_train)  # one split: the exact event of a fit on n_train rows
        self.score_sensitivity_ = sensitivity
        budget, train_budget = self._role_budgets(settings)  # with cv the roles overlap: split, compose at the end
        # Everything that can refuse the configuration runs before a study row is created (and before any data).
        check_estimator_type(self.estimator, scorer)  # a regressor under accuracy: public, refused now
        probe = None
        if self.sensitive != "validation":  # no fit can be tried on sensitive rows: what their structure shows
            check_sensitive_structure(self.estimator, X, y)  # the containers as passed (a list: its entries decide)
            # A pipeline's steps are run on one public probe row before the charge and in every fit: built once from
            # the container as passed, never from a part of a split (each part's types are read off its own rows)
            probe = public_probe(X) if is_pipeline(self.estimator) else None
        method = self._make_method(settings, scorer, m, sensitivity, budget)
        self._check_random_coverage(settings, len(settings.grid or ()))
        return SearchPlan(settings=settings, source=source, fit_estimator=fit_estimator, ships=ships, scorer=scorer,
                          n_classes=n_classes, n_validation=m, n_train=n_train, sensitivity=sensitivity,
                          budget=budget, train_budget=train_budget, method=method, training_probe=probe), data

    def _sized_fit(self, settings: SearchSettings, n_train: int) -> SearchSettings:
        """With sensitive training rows and one split, one fit's declared event at the training part's size.

        An estimator whose declaration depends on the number of rows (:func:`declares_by_size`: DP-SGD, the MLP)
        declares a size-free bound before the rows are known (``privacy_plan``, ``_validate_params``); every fit
        of a one-split search reads exactly ``n_train`` rows (public), so the plan charges the exact event of such
        a fit instead (at most the bound, and an RDP curve that composes and that random stopping can use). With
        ``cv`` the folds' sizes differ by a row and the size-free bound stays. With subsampled tuning
        (``method_params["subsample"]``) it also fixes the tuning subset's size m and one tuning fit's event at m
        rows (``tuning_rows``, ``tuning_fit``).

        Raises
        ------
        InvalidParameterError
            Random stopping over an event it cannot bound, or a tuning subset of fewer than 2 rows, before anything
            is read or spent.
        """
        if settings.one_fit is None or settings.cv is not None:
            return settings
        if declares_by_size(self.estimator):
            one_fit, one_budget = per_fit_event(self.estimator, n_train)
            if settings.stopping:
                self._check_stopping_run(one_fit, one_budget)
            settings = replace(settings, one_fit=one_fit, one_fit_budget=one_budget, fit_rows=int(n_train))
        if settings.subsample is not None:  # subsampled tuning: the runs fit m = floor(q n) rows (_subsampling)
            m = tuning_rows(settings.subsample, int(n_train))
            tuning_fit, tuning_budget = (per_fit_event(self.estimator, m) if declares_by_size(self.estimator)
                                         else (settings.one_fit, settings.one_fit_budget))
            self._check_stopping_run(tuning_fit, tuning_budget)
            settings = replace(settings, tuning_rows=m, train_rows=int(n_train), tuning_fit=tuning_fit,
                               tuning_fit_budget=tuning_budget)
        return settings

    def _sizes(self, settings: SearchSettings, scorer: BoundedScorer, n_classes: int,
               data: SearchData) -> tuple[int, int, float]:
        """(m, the training rows, one score's sensitivity), from the public sizes: a split's, the folds' or the
        validation set's."""
        X_tr, X_v, k = data.X_tr, data.X_v, settings.cv
        if k is not None:
            if X_v is not None:
                raise InvalidParameterError("Pass either cv or X_val/y_val to PrivateSearchCV.fit, not both.")
            n = X_tr.shape[0]
            if n < 2 * k:
                raise InvalidParameterError(f"cv={k} needs at least {2 * k} samples (2 per fold); got {n}.")
            m, n_train = n // k, n - (n + k - 1) // k  # the smallest validation fold, the smallest training part
            # one row sits in one validation fold: the mean over k folds moves by at most 1/k of a fold's sensitivity
            return m, n_train, scorer.sensitivity(m, n_classes) / k
        if X_v is None:
            if settings.validation_size is None:
                raise InvalidParameterError(
                    "PrivateSearchCV.fit got no validation set. Either pass the sensitive validation rows "
                    "explicitly (fit(X_train, y_train, X_val=..., y_val=...)), or ask for a split of X with "
                    "validation_size=<share in (0, 1)> (a random split that never looks at values; e.g. 0.3). "
                    "With sensitive training data you can also use cv=<k> (cross-validation, sensitive='both').")
            m = self._split_sizes(X_tr.shape[0], settings.validation_size)
            n_train = X_tr.shape[0] - m
        else:
            m, n_train = int(X_v.shape[0]), int(X_tr.shape[0])
        return m, n_train, scorer.sensitivity(m, n_classes)

    def _open_study(self, plan: SearchPlan, data: SearchData) -> Any:
        """The stored study (``storage``), opened once every check that can refuse the configuration has run.

        None without ``storage``. Its row stores the public configuration only. A study of a search on sensitive
        training rows that holds a charge is refused (and closed) here, before anything is read or spent.
        """
        if self.storage is None:
            return None
        from privtune.storage import StudyStorage

        settings = plan.settings
        # an epsilon outside the method's domain must not leave a study row behind (its name would be locked to
        # the refused configuration): checked first on a candidate set of the same public size, before the
        # study is opened (and again below on the study's own candidates)
        probe = candidate_set(settings.space, settings.n_candidates, grid=settings.grid,
                              random_state=np.random.default_rng(0))
        self._check_epsilon_domain(settings, plan.scorer, plan.n_validation, plan.sensitivity, probe)

        n_features = n_columns(data.X_tr)
        name = self.study_name or "default"
        existed = self._check_resume(name)
        study = StudyStorage(self.storage).open(name, self._public_config(settings, plan.n_validation,
                                                                          (plan.n_train, n_features)))
        if self.sensitive != "validation":
            try:
                refuse_spent_training_study(study)  # one that holds a charge: refused, resume or not
                if existed and not self.resume:  # one refused before its first charge: started again on request
                    raise InvalidParameterError(
                        f"Study {name!r} already exists in {study.path_for_messages!r} (status: {study.status}) "
                        "and holds no charge yet (a search on sensitive training rows refused before its first "
                        "charge). Pass resume=True to start it again, or name a new study (study_name=...). "
                        "Nothing was read or spent.")
            except BaseException:
                study.close()
                raise
        return study

    def _candidates(self, plan: SearchPlan, data: SearchData, study: Any) -> tuple[SearchPlan, SearchData]:
        """The plan completed with its seeds, folds and candidate set; the data split (by position) if asked.

        Non-noise randomness (the split, the candidate set) is data-independent. A study stores its seeds so that
        a resumed run rebuilds exactly the same split and candidates, even with secure noise. The candidate set is
        checked again (the random method's coverage, epsilon's domain) and the candidates lacking the scorer's
        prediction method are left out, all before any charge.
        """
        settings = plan.settings
        seeds = study.get("seeds") if study is not None else None
        if seeds is None:
            seeds = [int(g.integers(2**63)) for g in (plan.source.numpy_generator(), plan.source.numpy_generator())]
            if study is not None:
                study.put("seeds", seeds)
        folds = None
        if settings.cv is not None:
            from sklearn.model_selection import KFold

            folds = list(KFold(n_splits=settings.cv, shuffle=True, random_state=seeds[0] % 2**32).split(data.X_tr))
        elif data.X_v is None:
            X_tr, y_tr, X_v, y_v, tr = self._split(data.X_tr, data.y_tr, plan.n_validation,
                                                   np.random.default_rng(seeds[0]), positions=True)
            # sample_weight: the training part's own rows
            data = replace(data, X_tr=X_tr, y_tr=y_tr, X_v=X_v, y_v=y_v, fit_params=data.fit_params.restricted(tr))
        candidates = candidate_set(settings.space, settings.n_candidates, grid=settings.grid,
                                   random_state=np.random.default_rng(seeds[1]))
        self._check_random_coverage(settings, len(settings.grid or ()), len(candidates))
        self._check_epsilon_domain(settings, plan.scorer, plan.n_validation, plan.sensitivity,
                                   candidates)  # before any charge
        candidates = self._without_response_method(plan.scorer, candidates)  # neg_log_loss: predict_proba
        return replace(plan, seeds=seeds, folds=folds, candidates=candidates), data

    def _open_run(self, plan: SearchPlan, study: Any) -> SearchRun:
        """The validation role's accountant (the study's ledger, yours, or a new one), its plan checked before any
        fit; the search's clock starts (``search_time_``: the screening or pre-flight included)."""
        journal = None
        if study is not None:
            journal = study.journal()
            accountant = Accountant(plan.budget, ledger=study.ledger)
        else:
            accountant = self.accountant if self.accountant is not None else Accountant(plan.budget)
        self._check_affordable(plan.method, plan.candidates, accountant, journal)  # before any fit
        return SearchRun(study=study, journal=journal, accountant=accountant, t_start=time.perf_counter())

    def _check_resume(self, name: str) -> bool:
        """Refuse to open an existing study without ``resume=True``, or a missing one with it (nothing written).

        As the command line's ``--resume``: fitting again on a study that exists
        continues it (a completed one returns its stored release, whatever data
        is passed now), so it takes an explicit ``resume=True``. A study of a
        search on sensitive training rows is left to the caller: one that holds
        a charge is refused in any case
        (:func:`~privtune.model_selection._training.refuse_spent_training_study`),
        one that holds none needs ``resume=True`` too. Returns whether the study
        exists.
        """
        import os

        from privtune.storage import StudyStorage
        from privtune.storage._sqlite import _path_from

        path = _path_from(self.storage)
        state = None
        if os.path.exists(path):
            storage = StudyStorage(self.storage)
            try:
                state = storage.status(name)
            finally:
                storage.close()
        if self.resume and state is None:
            raise InvalidParameterError(
                f"resume=True: there is no study {name!r} in {path!r} to resume. Set resume=False to start it (or "
                "check storage and study_name). Nothing was read or spent.")
        if not self.resume and state is not None and self.sensitive == "validation":
            raise InvalidParameterError(
                f"Study {name!r} already exists in {path!r} (status: {state}). Fitting it again continues it: a "
                "running study resumes where it stopped, and a completed one returns its stored release without "
                "reading the data you pass now. Pass resume=True to continue it explicitly (what it spent is never "
                "spent again), or name a new study (study_name=...) to search again. Nothing was read or spent.")
        return state is not None

    @staticmethod
    def _check_affordable(method: Any, candidates: Any, accountant: Accountant, journal: Any) -> None:
        """Refuse a validation plan the accountant cannot pay before any fit (the method charges it later).

        A resumed study's charges already made (its journal's paid prefix) are
        not checked again.

        Raises
        ------
        BudgetExceededError
            Nothing read or spent.
        """
        plan = method.plan(candidates)
        paid = len(journal.paid_prefix(accountant)) if journal is not None else 0
        rest = tuple(ev for ev, _ in plan[paid:])
        if rest:
            accountant.check(ComposedEvent(events=rest))
