"""PrivateSearchCV with public training rows: the candidates fitted there first, and what failed there.

``_screen`` (``prescreen``'s free screening, or one pre-flight fit of the
first candidate: :meth:`_PublicRowsMixin._preflight`), the candidates lacking
the scorer's prediction method, and the handling of candidates that fail on
public rows (raise, refuse, or warn and leave them out); the plan's
``LowUtilityWarning`` s. Every failure here comes from public rows, before
anything is spent.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.exceptions import BudgetExceededError, InvalidParameterError, LedgerError, LowUtilityWarning
from privtune.model_selection._evaluation import _RAW_TRAJECTORY, CandidateFitError
from privtune.model_selection._inputs import (
    PREFLIGHT_ROWS,
    RESPONSE_METHOD,
    all_failed_message,
    check_public_score,
    failure_summary,
    lacks_response_method,
    n_rows,
    rows,
    some_failed_message,
    subset,
)
from privtune.model_selection._plan import SearchData, SearchPlan
from privtune.model_selection._prescreen import screen_on_public_rows
from privtune.model_selection._proxy import screen_on_proxy
from privtune.model_selection._scoring import BoundedScorer
from privtune.model_selection._seeding import CANDIDATE, FitSeeder
from privtune.model_selection._utility import utility_warnings


class _EveryScreeningFitFailed(Exception):
    """Every candidate of a ``prescreen`` screening round failed (internal: the search tries all the rows)."""

    def __init__(self, failures: list[tuple[Mapping[str, Any], str, Any]], n_tried: int) -> None:
        super().__init__(f"every one of the {n_tried} screened candidates failed")
        self.failures, self.n_tried = failures, n_tried


class _PublicRowsMixin:
    """PrivateSearchCV's work on public training rows before any charge: screening, pre-flight, failures."""

    def _screen(self, plan: SearchPlan, data: SearchData) -> SearchPlan:
        """With public training rows, the candidates fitted there before anything is spent: the plan narrowed.

        ``prescreen`` ranks them on the public training rows (free, reproducible from the seeds) and keeps the
        best; the other methods fit one candidate there (:meth:`_preflight`). The plan's ``LowUtilityWarning`` s
        are issued here, before any charge and any validation row. With sensitive training rows nothing is fitted
        here (the plan as it is).
        """
        self.proxy_screening_ = None
        if data.proxy is not None:  # public proxy rows: the candidates ranked there first, for free
            kept, self.proxy_screening_ = screen_on_proxy(
                plan, data, n_jobs=self.n_jobs, label=self._method_label(plan.settings),
                on_failures=self._public_failures("to fit or score in the screening on the public proxy rows",
                                                  screening=True))
            plan = replace(plan, candidates=kept)
        settings, method, scorer, candidates = plan.settings, plan.method, plan.scorer, plan.candidates
        if settings.method == "prescreen":  # public training rows only: free, and reproducible from the seeds
            try:
                kept = screen_on_public_rows(
                    plan, data, n_jobs=self.n_jobs, label=self._method_label(settings),
                    on_failures=self._public_failures("to fit or score in prescreen's screening on the public "
                                                      "training rows", screening=True))
            except _EveryScreeningFitFailed as failed:  # maybe only the folds' smaller parts fail: try all rows
                kept = self._unranked(plan, data, failed)
            else:
                if getattr(method, "kept_public_scores", ()) is None:  # no screening fit ran: try one now
                    kept = self._preflight(plan, data, kept)
            candidates = kept
            # judged on what the selection faces (the kept candidates' public screening scores): after the free
            # screening, before any charge and any validation row
            self._warn_low_utility(method, candidates, scorer, stacklevel=4)
        elif self.sensitive == "validation":  # public training rows: one fit tried before anything is spent
            self._warn_low_utility(method, candidates, scorer, stacklevel=4)  # before that fit reads a row
            candidates = self._preflight(plan, data, candidates)
        return replace(plan, candidates=candidates)

    def _unranked(self, plan: SearchPlan, data: SearchData, failed: _EveryScreeningFitFailed) -> Any:
        """Every screened candidate failed in ``prescreen``'s screening folds: the candidates unranked, if they fit.

        The screening fits on parts of the training rows (folds, subsamples), so
        a candidate can fail there and fit on all of them (a class missing from
        a small fold). The candidates are tried on all the training rows
        (:meth:`_preflight`: refused with scikit-learn's message if every one
        fails there too); if one fits, the private selection runs over the
        first ``keep`` of them in the candidate set's (data-independent) order,
        as ``random`` would, with a ``FitFailedWarning``. Public rows only.
        """
        from sklearn.exceptions import FitFailedWarning

        method = plan.method
        usable = self._preflight(plan, data, plan.candidates)
        n_keep = min(len(usable), int(getattr(method, "keep", None) or plan.settings.n_iter))
        warnings.warn(
            f"{self._method_label(plan.settings)}: every one of the {failed.n_tried} candidates failed in the "
            "screening on parts of the public training rows (its folds), though candidates fit on all of them; the "
            f"private selection runs over the first {n_keep} candidates of the candidate set, unranked (as "
            "method='random' does). Lower method_params['screen_cv'] or pass more training rows for a "
            "ranking.\n\nBelow are more details about the screening's failures:\n"
            + failure_summary(failed.failures), FitFailedWarning, stacklevel=4)  # fit's caller
        method.screen_info = {"screened": int(failed.n_tried), "kept": int(n_keep), "failed": int(failed.n_tried),
                              "on": "the public training rows only (no privacy cost)",
                              "ranking": "none: every screening fit failed; the kept candidates are the first of "
                                         "the candidate set"}
        method.kept_public_scores = None
        return subset(usable, np.arange(n_keep))

    def _public_failures(self, where: str, *, screening: bool = False
                         ) -> Callable[[list[tuple[Mapping[str, Any], str, Any]], int, bool], None]:
        """What to do with candidates that failed on public rows: raise, refuse, or warn (they are left out).

        ``error_score="raise"``: :class:`CandidateFitError` for the first, chained
        to its exception. All of them failed: refused with scikit-learn's "All
        the n fits failed" message. Else a scikit-learn ``FitFailedWarning``
        naming them. Every failure here comes from public rows (or from the
        estimator's public configuration), so its message is repeated and
        nothing is spent.
        """
        from sklearn.exceptions import FitFailedWarning

        def handle(failures: list[tuple[Mapping[str, Any], str, Any]], n_tried: int, every: bool | None = None
                   ) -> None:
            if not failures:
                return
            if self.error_score == "raise":
                params, text, exc = failures[0]
                raise CandidateFitError(
                    f"The candidate {dict(params)!r} failed {where} (error_score='raise'): {text} Nothing was "
                    "spent: the training rows are public, so the failure was found before any charge.") from exc
            if every if every is not None else len(failures) >= n_tried:
                if screening:
                    raise _EveryScreeningFitFailed(failures, n_tried)
                raise InvalidParameterError(all_failed_message(n_tried, failures, where))
            # three levels below fit (screening, pre-flight fit, scorer's check): names the caller of fit
            warnings.warn(some_failed_message(n_tried, failures, where), FitFailedWarning, stacklevel=5)

        return handle

    def _without_response_method(self, scorer: BoundedScorer, candidates: Any) -> Any:
        """Leave out the candidates that lack the prediction method the scorer calls (``neg_log_loss``:
        ``predict_proba``), from their configuration alone (public); all of them: refused."""
        if RESPONSE_METHOD.get(scorer.name) is None:
            return candidates
        keep, failures = [], []
        for i, params in enumerate(candidates.params):
            candidate = clone(self.estimator).set_params(**params)
            needed = lacks_response_method(candidate, scorer)
            if needed is None:
                keep.append(i)
                continue
            failures.append((params, f"AttributeError: This '{type(candidate).__name__}' has no attribute "
                                     f"'{needed}' (scoring={scorer.name!r} calls it).", AttributeError(needed)))
        if not failures:
            return candidates
        handle = self._public_failures(f"the scorer's check (scoring={scorer.name!r} needs predict_proba)")
        handle(failures, len(candidates), not keep)
        return subset(candidates, keep)

    def _preflight(self, plan: SearchPlan, data: SearchData, candidates: Any) -> Any:
        """With public training rows: fit a candidate on them and score it there before anything is spent.

        The candidates are tried in their (public) order until one fits on the
        training rows and the scorer's prediction method gives a valid score
        input on them (:func:`~privtune.model_selection._inputs.check_public_score`);
        the ones that failed before it are left out with a ``FitFailedWarning``
        (their failure is public), all of them failing is refused with
        scikit-learn's message, and ``error_score="raise"`` raises at the first.
        Each is fitted exactly as the search would fit it (same rows, same
        derived seed). When the first candidate works (the usual case) this
        costs one fit and one prediction on at most 2 048 training rows.

        A failure that only some candidates *after* the first working one have
        is not looked for (that would cost one extra fit per candidate): such a
        candidate scores the lower bound when the method evaluates it (or
        raises :class:`CandidateFitError` with ``error_score="raise"``), after
        the charge; its failure is public, so nothing leaks, but its share of
        the budget is spent on a known-bad candidate.
        """
        estimator, scorer, settings = plan.fit_estimator, plan.scorer, plan.settings
        X_tr, y_tr, fit_params = data.X_tr, data.y_tr, data.fit_params
        seeder = FitSeeder(plan.seeds, active=True)  # public rows: the search's own seeds, as its candidate fits
        n = n_rows(X_tr)
        head = np.arange(min(n, PREFLIGHT_ROWS))
        X_s, y_s = rows(X_tr, head), rows(y_tr, head)
        failures: list[tuple[Mapping[str, Any], str, Any]] = []
        # The run of a raw-score method (or random stopping) is silenced whole (see _fit_search): so is this fit.
        quiet = settings.method in _RAW_TRAJECTORY or settings.stopping
        for params in candidates.params:
            est = clone(estimator).set_params(**params)
            derived = seeder.seed(est, CANDIDATE, params, 0, 0)
            try:
                with warnings.catch_warnings() if quiet else contextlib.nullcontext():
                    if quiet:
                        warnings.simplefilter("ignore")
                    est.fit(X_tr, y_tr, **fit_params.at())
                    check_public_score(est, scorer, X_s, y_s)
            except (BudgetExceededError, LedgerError, KeyboardInterrupt):
                raise  # a fit that charges an accountant: a contract violation, never a candidate's failure
            except BaseException as exc:  # noqa: BLE001 - public rows: the error is public, told, its candidate left out
                # (any exception, SystemExit too, as a candidate fit after the charge treats it)
                failures.append((params, f"{type(exc).__name__}: {exc}", exc))
                if self.error_score == "raise":
                    break
                continue
            finally:
                seeder.unseed(est, derived)
            break
        if not failures:
            return candidates
        handle = self._public_failures("to fit or score on the public training rows")
        handle(failures, len(candidates) if len(failures) == len(candidates) else len(failures) + 1,
               len(failures) == len(candidates))
        return subset(candidates, np.arange(len(failures), len(candidates)))

    @staticmethod
    def _warn_low_utility(method: Any, candidates: Any, scorer: Any, stacklevel: int = 4) -> None:
        """Emit the plan's :class:`LowUtilityWarning` s (public noise scales and declared bounds only).

        ``stacklevel``: the frame the warnings name, as they named it before the search was split into stages.
        """
        texts = (method.low_utility_warnings(candidates, scorer.bounds) if hasattr(method, "low_utility_warnings")
                 else utility_warnings(method.noise_scales(candidates), scorer.bounds))
        for text in texts:
            warnings.warn(f"PrivateSearchCV: {text}", LowUtilityWarning, stacklevel=stacklevel)
