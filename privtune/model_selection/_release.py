"""PrivateSearchCV's last stages: the release as scikit-learn's attributes, the refit, the record.

``_release`` (``best_params_``, ``best_score_``, ``cv_results_``) ->
``_refit`` (``best_estimator_``: the selected candidate's own DP fit, or a
refit paid for up front) -> ``_record`` (the ledger, what each role spent, the
summary; the study's report, stored).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.exceptions import BudgetExceededError, LedgerError
from privtune.logging import get_logger
from privtune.model_selection._evaluation import _RAW_TRAJECTORY, CandidateFitError, _Evaluation
from privtune.model_selection._inputs import _params_key, n_rows
from privtune.model_selection._plan import SearchData, SearchPlan, SearchRun, TrainingRole
from privtune.model_selection._seeding import REFIT
from privtune.model_selection._training import FitTickets, fit_training, set_fit_accountant

_logger = get_logger("privtune.model_selection")


class _SearchReleaseMixin:
    """PrivateSearchCV's release, refit and record stages (after the method's run)."""

    def _release(self, plan: SearchPlan, run: SearchRun, role: TrainingRole, release: Any) -> None:
        """The released values as scikit-learn's attributes (``best_params_``, ``best_score_``, ``cv_results_``)."""
        scorer, candidates = plan.scorer, plan.candidates
        self.candidates_ = candidates
        self.scorer_ = scorer
        self.multimetric_ = False
        self.release_ = release
        self.accountant_ = run.accountant
        self.training_accountant_ = role.accountant
        self.guarantee_ = release.guarantee
        self.method_ = release.method
        self.seeded_ = release.seeded
        self.n_iter_ = release.n_iter
        self.best_params_ = dict(release.params) if release.params is not None else None
        # Clipping the release to the declared bounds is post-processing: free, and never less accurate.
        self.best_score_ = (None if release.score is None
                            else float(min(scorer.bounds[1], max(scorer.bounds[0], release.score))))
        self.cv_results_ = self._cv_results(release, candidates)
        self.best_index_ = int(np.flatnonzero(self.cv_results_["selected"])[0]) if self.best_params_ else None
        self.n_splits_ = 1
        self.refit_time_ = None

    def _refit(self, plan: SearchPlan, data: SearchData, role: TrainingRole, evaluation: _Evaluation) -> None:
        """``best_estimator_``: the selected candidate's own DP fit (no new fit, no charge), or a refit (paid for
        up front with sensitive training rows)."""
        own, tickets, train_acc = plan.settings.own_accountant, role.tickets, role.accountant
        seeder, runs = evaluation.seeder, evaluation.runs
        if role.reuse and self.best_params_ is not None:  # the selected candidate's own DP fit (no new fit, no charge)
            best = runs.kept if runs is not None else evaluation.fitted.get(_params_key(self.best_params_))
            if best is None:  # its fit raised: nothing was kept, and no refit was paid for
                raise CandidateFitError(
                    f"The released choice {self.best_params_!r} is a candidate whose fit on the training data failed; "
                    "the release itself stands (best_params_, best_score_). Fit it yourself to see the error, or "
                    "pass refit=False.")
            self.best_estimator_ = set_fit_accountant(best, own)  # the user's again, not the spent ticket
        elif self.refit and self.best_params_ is not None:
            best = clone(plan.fit_estimator).set_params(**self.best_params_)
            derived = seeder.seed(best, REFIT, self.best_params_)
            if tickets is not None:  # paid for up front, like every candidate fit
                set_fit_accountant(best, FitTickets(plan.settings.one_fit_budget or tickets.budget, 1).accountant())
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings() if train_acc is not None else contextlib.nullcontext():
                    if train_acc is not None:  # a DP refit reads sensitive training rows: its warnings too
                        warnings.simplefilter("ignore")
                    fit_training(best, data.X_tr, data.y_tr, tickets is not None, _probe=plan.training_probe,
                                 **data.fit_params.at())
            except (BudgetExceededError, LedgerError):
                raise
            except KeyboardInterrupt:
                raise
            except BaseException:  # noqa: BLE001
                if train_acc is None:
                    raise  # public training data: the estimator's own error is a function of public inputs only
                # sensitive training rows: the estimator's text (and which exception it raised) may depend on
                # them; never repeated
                raise CandidateFitError(
                    f"Refitting the released choice {self.best_params_!r} on the sensitive training data failed; "
                    "the release itself stands (best_params_, best_score_). Fit it yourself to see the error, or "
                    "pass refit=False.") from None
            if train_acc is None:  # public training data: the refit's time is a function of public inputs
                self.refit_time_ = time.perf_counter() - t0
            seeder.unseed(best, derived)
            if tickets is not None:  # the user's own accountant again (or None), not the spent ticket
                set_fit_accountant(best, own)
            public_accountants = plan.settings.public_fit_accountants
            if public_accountants:  # public training rows: the user's accountants, never charged
                best.set_params(**public_accountants)
            self.best_estimator_ = best

    def _record(self, plan: SearchPlan, data: SearchData, run: SearchRun, role: TrainingRole, release: Any,
                search_seconds: float) -> None:
        """The ledger, what each role spent, the local timing, the summary; the study's report, stored."""
        accountant, train_acc, method = run.accountant, role.accountant, plan.method
        self.ledger_ = tuple(accountant.entries) + (tuple(train_acc.entries) if train_acc is not None else ())
        self.privacy_spent_ = self._privacy_spent(accountant, train_acc)
        # A local diagnostic, never in the report or the study. None where the amount of work itself depends on
        # the data through the algorithm: a raw-score trajectory, or the secret number of runs K.
        data_driven = method.name in _RAW_TRAJECTORY or plan.settings.stopping
        self.search_time_ = None if data_driven else search_seconds
        self._set_feature_names()
        self.summary_ = self._report(plan, release, n_rows(data.X_tr))
        self._report_cache = None  # report_ is built on first access (a study stores it now)
        if run.study is not None:
            run.study.save_report(self.report_.to_dict())
            self.study_ = {"storage": run.study.storage.path, "study_name": run.study.name}
        _logger.info("private search done: method=%s, guarantee=%s, epsilon spent %.4g", method.name,
                     release.guarantee, self.privacy_spent_["overall"].epsilon)
