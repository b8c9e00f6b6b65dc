"""PrivateSearchCV's evaluation stage: the training role checked, the objective, the charge, the method's run.

``_training`` (the training role: its accountant, whole plan and tickets,
checked) -> ``_evaluation`` (the objective and how its records are shown and
delivered; nothing run) -> ``_pay`` (the training plan, before the first fit)
-> ``_evaluate`` (the release method's run: each release charged before its
access).
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.accounting import ComposedEvent
from privtune.exceptions import BudgetExceededError, LedgerError, PrivtuneError
from privtune.logging import get_logger
from privtune.model_selection._inputs import _params_key, n_columns, n_rows, rows
from privtune.model_selection._parallel import make_mapper
from privtune.model_selection._plan import SearchData, SearchPlan, SearchRun, TrainingRole
from privtune.model_selection._progress import _Progress
from privtune.model_selection._seeding import CANDIDATE, FitSeeder
from privtune.model_selection._subsampling import draw_subset
from privtune.model_selection._training import (
    _RunKeeper,
    charge_training_plan,
    check_candidate_plans,
    fit_training,
    set_fit_accountant,
)

_logger = get_logger("privtune.model_selection")


class CandidateFitError(PrivtuneError, RuntimeError):
    """Fitting a candidate failed and ``error_score="raise"`` asked to stop (public training data only).

    The message names the candidate and the exception's type, never its text
    (which may quote data values).
    """


@dataclass(frozen=True)
class _Evaluation:
    """How one search evaluates its candidates (internal; built by ``_evaluation``, nothing run yet).

    ``objective`` fits a candidate on the training rows and scores it on the
    validation rows; ``callback`` receives each record (``deliver`` shows and
    passes it on; ``deferred`` holds them back along a raw-score path);
    ``mapper`` maps a batch over workers (None: in this process); ``quiet``
    silences the run's warnings; ``progress`` is the local display;
    ``seeder``, ``runs`` and ``fitted`` are what the refit reads afterwards
    (each fit's seeds, random stopping's kept run, the fitted candidates).
    """

    objective: Callable[[Mapping[str, Any]], float]
    callback: Callable[[Any], bool]
    deliver: Callable[[Any], bool]
    deferred: list[Any] | None
    mapper: Callable[..., list[Any]] | None
    quiet: bool
    progress: _Progress
    seeder: FitSeeder
    runs: _RunKeeper | None
    fitted: dict[str, Any]


#: Methods whose evaluation trajectory (hence amount of work) depends on raw scores.
_RAW_TRAJECTORY = ("gp-ucb", "gp-ucb-exact", "lipschitz")


class _SearchEvaluationMixin:
    """PrivateSearchCV's evaluation stage: the objective over the rows, paid for before the first fit."""

    def _training(self, plan: SearchPlan, data: SearchData, run: SearchRun) -> TrainingRole:
        """The training role: its accountant, its whole plan (checked, not charged) and the fits' tickets.

        With sensitive training rows every candidate's solver plan is checked too, from public sizes, before
        anything is charged. Public training rows: no accountant, an empty plan.
        """
        durable = run.study.training_ledger() if run.study is not None and self.sensitive != "validation" else None
        train_acc, train_plan, tickets = self._training_role(plan.settings, plan.method, plan.candidates,
                                                             plan.train_budget, plan.n_folds, ledger=durable)
        if train_acc is not None:  # every candidate's solver plan, from public sizes, before anything is charged
            X_tr, folds = data.X_tr, plan.folds
            sizes = {len(part) for part, _ in folds} if folds else set()
            if plan.settings.tuning_rows is not None:  # subsampled tuning: the runs fit m rows
                sizes.add(plan.settings.tuning_rows)
            check_candidate_plans(self.estimator, plan.candidates, sizes | {n_rows(X_tr)}, n_columns(X_tr),
                                  like=X_tr if plan.training_probe is None else plan.training_probe,
                                  fit_params=data.fit_params)
        return TrainingRole(accountant=train_acc, plan=train_plan, tickets=tickets,
                            reuse=self._reuses_selected_fit(plan.settings, plan.method, plan.n_folds))

    def _evaluation(self, plan: SearchPlan, data: SearchData, role: TrainingRole) -> _Evaluation:
        """The objective the method evaluates (:meth:`_objective`), how it is mapped over workers, and how its
        records are shown and delivered; nothing is fitted or charged here."""
        settings, method, candidates = plan.settings, plan.method, plan.candidates
        tickets = role.tickets
        # Each fit's own random_state, derived from the stored seeds when left at None (see _seeding): always with
        # public training rows; with sensitive ones only in a seeded search (else each DP fit's noise is secure).
        seeder = FitSeeder(plan.seeds, active=self.sensitive == "validation" or bool(plan.source.seeded))
        evaluate_here = self._evaluates_here(plan)
        objective, runs, fitted = self._objective(plan, data, role, seeder)

        # The scorer silences warnings while it reads validation rows; Python's warning filters are process-wide,
        # so with threads (n_jobs) another thread's exit could restore them mid-scoring; a DP fit reads sensitive
        # training rows; and along a raw-score path (or random stopping's secret number of runs) even the public
        # fits' warnings tell which candidates were fitted: in these cases the whole run is silenced, here and in
        # every worker process (which does not inherit this process's filters).
        quiet = (self.sensitive != "validation" or self.n_jobs not in (None, 1)
                 or method.name in _RAW_TRAJECTORY or settings.stopping)
        # In threads: fits that charge the shared training accountant, and sensitive rows whose cells may not
        # pickle (an object array: whether shipping them to a process fails would depend on one cell).
        threads = tickets is not None or not plan.ships
        mapper = make_mapper(self.n_jobs, threads=threads, quiet=quiet) if not evaluate_here else None
        # A progress display on the local terminal, never part of a release. The GP methods report each
        # (released) iteration; ``random`` with the exponential selection counts the evaluations of its fixed,
        # data-independent batch when they run in this process. Random stopping shows nothing: its number of
        # runs K is secret.
        batch = method.name in ("random", "prescreen")  # a fixed batch, then the selection: records come last
        counts = batch and getattr(method, "selection", None) == "exponential" and mapper is None
        verbose = settings.verbose
        shown = verbose >= 1 and (not batch or counts)
        progress = _Progress((method.max_evaluations(candidates) or settings.n_iter) if counts else settings.n_iter,
                             shown, show_time=method.name not in _RAW_TRAJECTORY)  # no clock on a secret path
        if counts and shown:
            inner_objective, n_done = objective, [0]

            def objective(params: Mapping[str, Any]) -> float:  # noqa: F811 - the same objective, counted
                value = inner_objective(params)
                n_done[0] += 1
                progress.evaluated(n_done[0])
                return value

        if runs is not None:
            objective.keep_last_run = runs.keep_last_run  # type: ignore[attr-defined] - the method's hook
        user_callbacks = list(self.callbacks or [])

        def deliver(record: Any) -> bool:
            if not batch:  # random's records all arrive after its batch (counted above)
                progress(record)
            if verbose >= 2:
                _logger.info("iteration %d: epsilon spent %.4g, released score %s", record.iteration,
                             record.epsilon_spent, record.released_score)
            stop = False
            for cb in user_callbacks:
                stop = bool(cb(record)) or stop
            return stop

        # Along a raw-score path the moment each record arrives would time each step of the secret trajectory
        # (which candidates were fitted and scored): its records are held back and delivered after the loop.
        deferred: list[Any] | None = [] if method.name in _RAW_TRAJECTORY else None

        def callback(record: Any) -> bool:
            if deferred is not None:
                deferred.append(record)
                return False
            return deliver(record)

        return _Evaluation(objective=objective, callback=callback, deliver=deliver, deferred=deferred,
                           mapper=mapper, quiet=quiet, progress=progress, seeder=seeder, runs=runs, fitted=fitted)

    def _evaluates_here(self, plan: SearchPlan) -> bool:
        """Whether the evaluations run in this process, without a worker pool (public rule)."""
        # In this process (no mapper): random stopping's secret number of runs K, or the raw-score path's final
        # batch, would be a count of tasks a worker pool (a dask scheduler's task stream) shows.
        in_process = plan.settings.stopping or plan.method.name in _RAW_TRAJECTORY
        return self.n_jobs in (None, 1) or in_process

    def _objective(self, plan: SearchPlan, data: SearchData, role: TrainingRole,
                   seeder: FitSeeder) -> tuple[Callable[[Mapping[str, Any]], float], _RunKeeper | None, dict[str, Any]]:
        """The objective: fit a candidate on the training rows (each fold's with ``cv``), score it on the validation
        rows; with the random-stopping run keeper and the fitted candidates the refit may reuse.

        The closures below take what they use from local names, never the plan itself: the objective travels to
        worker processes, and the method holds the study's connection.
        """
        settings, method = plan.settings, plan.method
        X_tr, y_tr, X_v, y_v, fit_params = data.X_tr, data.y_tr, data.X_v, data.y_v, data.fit_params
        folds, scorer, tickets, reuse = plan.folds, plan.scorer, role.tickets, role.reuse
        # Subsampled tuning: every run fits the same secret subset of m rows. The subset is drawn here (it reads
        # no data; its place among the source's draws keeps seeded runs reproducible), its rows are copied at the
        # first evaluation, after _fit_search has charged the training plan (rule 1: no access before the charge).
        subset = (draw_subset(plan.source, n_rows(X_tr), settings.tuning_rows)
                  if settings.tuning_rows is not None else None)
        tuning_part: list[tuple[Any, Any, Any]] = []
        # (random stopping runs in this process, so the lock never travels to a worker; None keeps the objective
        # picklable for the other methods' worker processes)
        tuning_lock = threading.Lock() if subset is not None else None

        def training_rows() -> tuple[Any, Any, Any]:
            """The rows every run fits (the subset's, copied once on first use), their targets and fit params."""
            if subset is None:
                return X_tr, y_tr, fit_params
            with tuning_lock:  # type: ignore[union-attr]
                if not tuning_part:
                    tuning_part.append((rows(X_tr, subset), rows(y_tr, subset), fit_params.restricted(subset)))
            return tuning_part[0]

        runs_of: dict[str, int] = {}  # how often each candidate ran, when runs are counted in this process
        # Evaluated here, without a worker pool (see _evaluation), runs are counted for their seeds; workers cannot
        # share a count, so a candidate evaluated again there gets the same seed (the same fit).
        count_runs = self._evaluates_here(plan) and method.name not in _RAW_TRAJECTORY  # (see objective; no
        # closure over the method itself, which holds the study's connection and must not travel to workers)
        estimator = plan.fit_estimator  # self.estimator, without its accountants when the training rows are public
        error_score = self.error_score
        fitted: dict[str, Any] = {}  # candidate -> its DP fit, when best_estimator_ reuses the selected one
        fitted_lock = threading.Lock() if reuse else None  # fits run in threads then (their accountants are shared)
        # Random stopping runs in this process, one run at a time, and may run a candidate more than once: the
        # model kept is the selected *run's* (the method says when the last run is the best so far), never a list
        # of all K runs (its length would be K).
        runs = _RunKeeper() if reuse and settings.stopping else None

        probe = plan.training_probe  # a pipeline's public probe row with sensitive training rows (see fit)

        def fit_and_score(params: Mapping[str, Any], Xa: Any, ya: Any, Xb: Any, yb: Any, fold: int = 0,
                          run: int = 0, fold_params: Mapping[str, Any] | None = None) -> float:
            est = clone(estimator).set_params(**params)
            derived = seeder.seed(est, CANDIDATE, params, fold, run)
            if tickets is not None:  # a throw-away accountant: this fit was paid for up front
                set_fit_accountant(est, tickets.accountant())
            try:
                fit_training(est, Xa, ya, tickets is not None, _probe=probe,
                             **(fit_params.at() if fold_params is None else fold_params))
            except (BudgetExceededError, LedgerError):
                raise  # a fit charging more than it declared: a contract violation, never turned into a score
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - its text may quote data values; never kept
                if error_score == "raise":  # only with public training data (refused otherwise)
                    raise CandidateFitError(
                        f"Fitting the candidate {dict(params)!r} failed with {type(exc).__name__} "
                        "(error_score='raise'). Fit this candidate on your (public) training data to see the "
                        "error; privtune never repeats an estimator's message, which may quote data values."
                    ) from None
                return scorer.bounds[0]  # the training data alone decides this (public, or covered by a DP fit)
            if runs is not None or fitted_lock is not None:
                # The model that may become best_estimator_ is a copy taken *before* any validation row reaches
                # it: an estimator that keeps state from predict (a cache, a call counter) would otherwise hand
                # the sensitive validation rows back with the released model. It carries no derived seed.
                kept = copy.deepcopy(est)
                seeder.unseed(kept, derived)
                if runs is not None:
                    runs.last = kept
                else:
                    with fitted_lock:  # type: ignore[union-attr]
                        fitted[_params_key(params)] = kept
            try:
                return scorer(est, Xb, yb)  # row-isolated: one validation row moves only its own term
            finally:
                seeder.unseed(est, derived)

        def evaluate(params: Mapping[str, Any]) -> float:
            if runs is not None:
                runs.last = None  # a fit that raises leaves no model for this run
            run = 0
            # In this process, one evaluation at a time, the count is deterministic; it is public for every method
            # but the raw-score ones, whose visits to a candidate follow the raw scores (a lipschitz final batch
            # seeded by it fitted each candidate differently on neighbouring sets): there a candidate's fit is
            # always run 0's, and objective (below) keeps its first score: f(lambda) one fixed function as their
            # analysis assumes.
            if count_runs:
                key = _params_key(params)
                run = runs_of.get(key, 0)
                runs_of[key] = run + 1
            if folds is None:
                Xa, ya, fpa = training_rows()
                return fit_and_score(params, Xa, ya, X_v, y_v, 0, run, fold_params=fpa.at())
            jobs = [(params, rows(X_tr, tr), rows(y_tr, tr), rows(X_tr, va), rows(y_tr, va), f, run,
                     fit_params.at(tr)) for f, (tr, va) in enumerate(folds)]
            if self.n_jobs in (None, 1):
                scores = [fit_and_score(*j) for j in jobs]
            else:  # threads: fits share the search's ticket book
                from joblib import Parallel, delayed

                scores = Parallel(n_jobs=self.n_jobs, backend="threading")(delayed(fit_and_score)(*j) for j in jobs)
            return float(np.mean(scores))

        # Along a raw-score path (gp-ucb, gp-ucb-exact, lipschitz) the loop may visit a candidate again. Kusner et
        # al.'s analysis observes one fixed function f, but a DP fit draws fresh noise (and any estimator may be
        # randomised beyond its random_state), so a refitted candidate is another model with another score. A
        # revisit therefore keeps the score of the candidate's first evaluation: f(lambda) is the score of the
        # first fit at lambda (with cv, the mean over the folds of its first fits). The fit still runs at every
        # visit (all are paid for), so the number of fits does not tell how many distinct candidates the secret
        # path visited; only a dict of at most n_iter floats is kept, never a model.
        first_scores: dict[str, float] | None = {} if method.name in _RAW_TRAJECTORY else None

        def objective(params: Mapping[str, Any]) -> float:
            value = evaluate(params)
            if first_scores is None:
                return value
            return first_scores.setdefault(_params_key(params), value)

        return objective, runs, fitted

    def _pay(self, plan: SearchPlan, run: SearchRun, role: TrainingRole) -> None:
        """Charge the training role's whole plan before the first fit reads a row (sensitive training rows only).

        The estimator's own accountant is charged the same plan, first; a validation plan that cannot be paid
        charges nothing. The validation role's releases are charged by the method, each before its access.
        """
        own = plan.settings.own_accountant  # the estimator's own accountant: charged the same plan, first
        accountant = run.accountant
        if role.accountant is not None:  # the whole training plan, charged before the first fit reads a row
            if own is not None and own is not accountant:  # a validation plan that cannot be paid charges nothing
                accountant.check(ComposedEvent(events=tuple(ev for ev, _ in plan.method.plan(plan.candidates))))
            charge_training_plan(role.accountant, role.plan, own,
                                 validation_plan=plan.method.plan(plan.candidates) if own is accountant else None)

    def _evaluate(self, plan: SearchPlan, run: SearchRun, evaluation: _Evaluation) -> tuple[Any, float]:
        """Run the release method over the candidates: (its release, the search's seconds since ``run.t_start``).

        Records held back along a raw-score path are delivered after the loop (a stop request can no longer stop
        anything).
        """
        quiet = evaluation.quiet
        with warnings.catch_warnings() if quiet else contextlib.nullcontext():
            if quiet:
                warnings.simplefilter("ignore")
            release = plan.method.run(evaluation.objective, plan.candidates, accountant=run.accountant,
                                      random_state=plan.source, callback=evaluation.callback,
                                      mapper=evaluation.mapper, journal=run.journal)
        for record in evaluation.deferred or ():
            evaluation.deliver(record)  # a stop request can no longer stop anything
        evaluation.progress.close()
        return release, time.perf_counter() - run.t_start
