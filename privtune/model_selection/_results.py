"""What a fitted :class:`~privtune.model_selection.PrivateSearchCV` exposes: released values only.

:class:`_SearchResultsMixin` builds ``cv_results_`` (released scores and ranks,
never a raw score), ``privacy_spent_`` per role, the report dictionary and the
``report_`` property, ``score`` (non-private, on data you hold), ``feature_names_in_`` and the metadata routing
of ``fit``'s parameters. ``_search.py`` holds the search, ``_config.py`` its set-up.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.model_selection._plan import SearchPlan


class _SearchResultsMixin:
    """``cv_results_``, ``privacy_spent_`` and the report of :class:`PrivateSearchCV` (see the module)."""

    @property
    def report_(self) -> Any:
        """The tuning report (:class:`privtune.report.TuningReport`), built from the fitted attributes.

        Built on first access and kept (a search that stores a study builds it
        in ``fit``); its ``created_utc`` is the time ``fit`` started (before any
        row was read: a finishing time would tell how long the work on them took).
        """
        if not hasattr(self, "release_"):
            raise AttributeError("report_: this PrivateSearchCV is not fitted yet; call fit first.")
        report = self.__dict__.get("_report_cache")
        if report is None:
            from privtune.report import TuningReport

            report = TuningReport.from_search(self)
            self._report_cache = report
        return report

    def _cv_results(self, release: Any, candidates: Any) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        for rec in release.history:
            if rec.params is not None:
                rows.append({"params": dict(rec.params), "score": rec.released_score, "noise": rec.noise_std,
                             "selected": False})
        sel = dict(release.params) if release.params is not None else None
        if sel is not None:
            hit = [r for r in rows if r["params"] == sel]
            if hit:
                hit[-1]["selected"] = True
            else:
                rows.append({"params": sel, "score": None, "noise": None, "selected": True})
            for r in rows:
                if r["selected"]:
                    r["released_best_score"] = release.score
        names = list(self.candidates_.space.names) if hasattr(self, "candidates_") else list(candidates.space.names)
        scores = np.array([np.nan if r["score"] is None else r["score"] for r in rows], dtype=float)
        out: dict[str, Any] = {"params": [r["params"] for r in rows]}
        for name in names:
            out[f"param_{name}"] = np.ma.MaskedArray([r["params"][name] for r in rows], dtype=object)
        out["mean_test_score"] = scores
        out["noise_std_test_score"] = np.array([np.nan if r["noise"] is None else r["noise"] for r in rows])
        selected = np.array([r["selected"] for r in rows], dtype=bool)
        # Rank 1 is the released choice (best_index_). The other rows are ranked after it by their released noisy
        # scores where a method released them (noisy-ucb), ties by order; rows with no released score share the
        # last rank. Ranks use released values only, never a raw score.
        rank = np.full(len(rows), len(rows), dtype=np.int32)
        rank[selected] = 1
        others = np.flatnonzero(~selected & np.isfinite(scores))
        if others.size:
            order = others[np.argsort(-scores[others], kind="stable")]
            rank[order] = np.arange(2, order.size + 2) if selected.any() else np.arange(1, order.size + 1)
        out["rank_test_score"] = rank
        out["selected"] = selected
        out["released_best_score"] = np.array([r.get("released_best_score", np.nan) for r in rows], dtype=float)
        return out

    def _privacy_spent(self, accountant: Accountant, train_acc: Accountant | None) -> dict[str, Budget]:
        from privtune.accounting import compose_events

        val = accountant.spent_where(lambda e: e.role in (None, "validation"))
        train = train_acc.spent if train_acc is not None else Budget(0.0, 0.0)
        if self.cv is not None and train_acc is not None:  # overlapping roles: sequential composition
            events = [e.event for e in accountant.entries] + [e.event for e in train_acc.entries]
            overall = compose_events(events, delta=accountant.budget.delta + train_acc.budget.delta)
        else:  # disjoint roles: parallel composition
            overall = Budget(max(val.epsilon, train.epsilon), max(val.delta, train.delta))
        return {"validation": val, "training": train, "overall": overall}

    def _report(self, plan: SearchPlan, release: Any, n_train: int) -> dict[str, Any]:
        """The summary (``summary_``): the configuration as planned, the release, what each role spent."""
        settings, scorer = plan.settings, plan.scorer
        by_phase = {p: b.to_dict() for p, b in self.accountant_.spent_by_phase().items()}
        if self.training_accountant_ is not None:
            by_phase.update({f"training:{p or 'fits'}": b.to_dict()
                             for p, b in self.training_accountant_.spent_by_phase().items()})
        est_params = {k: repr(v) for k, v in self.estimator.get_params(deep=False).items()}
        return {
            "configuration": {
                "estimator": type(self.estimator).__name__, "estimator_params": est_params,
                "method": settings.method, "epsilon": settings.epsilon, "delta": settings.delta,
                "n_iter": settings.n_iter,
                "n_candidates": len(self.candidates_), "scoring": scorer.name, "score_bounds": list(scorer.bounds),
                "score_sensitivity": self.score_sensitivity_,
                "sensitive": self.sensitive, "relation": "replace_one",
                "n_validation": plan.n_validation, "n_train": n_train,
                "search_space": {n: repr(d) for n, d in self.candidates_.space.items()},
            },
            "release": release.to_dict(),
            "privacy_spent": {k: v.to_dict() for k, v in self.privacy_spent_.items()},
            "spent_by_phase": by_phase,
            "ledger": [e.to_dict() for e in self.ledger_],
            "guarantee": release.guarantee,
            "seed_policy": release.seed_policy,
        }

    def score(self, X: Any, y: Any = None, **params: Any) -> float:
        """Score ``best_estimator_`` on ``(X, y)`` with the search's scorer (clipped to its bounds).

        This is an ordinary, **non-private** evaluation of data you hold (e.g. a
        test set): nothing is released or charged, and the estimator's errors
        propagate, as with scikit-learn's searches. Publishing the value is a
        release of ``(X, y)`` that privtune does not account for.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        if params:
            raise InvalidParameterError("PrivateSearchCV.score takes no extra parameters.")
        if not hasattr(self, "best_estimator_"):
            raise InvalidParameterError("PrivateSearchCV.score needs refit=True (a fitted best_estimator_).")
        return self.scorer_.score_public(self.best_estimator_, X, y)

    def get_metadata_routing(self) -> Any:
        """How ``fit``'s parameters are routed when scikit-learn's metadata routing is enabled.

        To the estimator's ``fit`` only (what it requests, e.g.
        ``estimator.set_fit_request(sample_weight=True)``), sliced with the rows
        of every fit. Nothing is routed to the scorer (privtune's scores on the
        sensitive validation rows are unweighted: a weighted score's
        sensitivity would depend on the weights) nor to a splitter (``groups``
        is the search's own parameter: ``prescreen``'s screening folds).

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRouter
        """
        from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping

        return MetadataRouter(owner=self).add(estimator=self.estimator,
                                              method_mapping=MethodMapping().add(caller="fit", callee="fit"))

    def _set_feature_names(self) -> None:
        """``feature_names_in_`` as scikit-learn's searches set it: ``best_estimator_``'s, when it has them."""
        self.__dict__.pop("feature_names_in_", None)  # a previous fit's must not outlive this one
        best = getattr(self, "best_estimator_", None)
        if best is not None and hasattr(best, "feature_names_in_"):
            self.feature_names_in_ = best.feature_names_in_
