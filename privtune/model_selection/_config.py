"""The configuration half of :class:`~privtune.model_selection.PrivateSearchCV`: public checks and plans.

:class:`_SearchConfigMixin` holds everything the search decides before it reads
a value of the data: the validation of its parameters (``_validate_params``),
the resolution of ``method="auto"``, ``privacy_plan`` (what a configuration will
spend, without data), the role budgets, the checks of the inputs' shapes and
of the fit parameters, the public split (its helpers, which type each part by
its own rows, in ``_splitting.py``) and the construction of the release method
with its public checks (inherited from ``_method_setup.py``). ``_search.py``
holds the search itself (``fit``), ``_results.py`` what it exposes afterwards.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from privtune.accounting import Accountant, Budget, ComposedEvent
from privtune.accounting._composition import has_rdp_curve
from privtune.exceptions import InvalidParameterError, PrivtuneWarning
from privtune.model_selection._inputs import (
    FitParams,
    _array_like,
    _as_labels,
    _as_space,
    _as_table,
    _same_length,
    check_same_structure,
    fit_param_refusal,
    n_rows,
    split_fit_params,
)

# the base _MethodSetupMixin, and (re-exported) the names this module held before the release method's set-up got
# its own module (issue 39)
from privtune.model_selection._method_setup import (  # noqa: F401 - re-exported
    _GP_LOOP_METHODS,
    _METHOD_PARAMS_WITH_SENSITIVITY,
    BoundedScorer,
    BudgetExceededError,
    SelfComposedEvent,
    _max_distinct_candidates,
    _MethodSetupMixin,
)
from privtune.model_selection._plan import SearchSettings
from privtune.model_selection._scoring import make_bounded_scorer
from privtune.model_selection._seeding import explicit_random_states

# re-exported: the names this module held before the split's helpers got their own module (issue 39)
from privtune.model_selection._splitting import (  # noqa: F401 - re-exported
    _is_object,
    _n_distinct,
    _own_pandas_types,
    _own_types,
    _same,
    _SplitMixin,
)
from privtune.model_selection._subsampling import check_relation, subsample_fraction
from privtune.model_selection._training import (
    check_training_estimator,
    declares_by_size,
    estimator_accountant,
    per_fit_event,
    public_fit_accountants,
)
from privtune.model_selection._utility import utility_warnings
from privtune.space import Categorical, Integer, candidate_set
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

_SENSITIVE = ("validation", "training", "both")


class _SearchConfigMixin(_MethodSetupMixin, _SplitMixin):
    """Parameter checks, ``privacy_plan`` and the public set-up of :class:`PrivateSearchCV` (see the module)."""

    def _resolved_method(self) -> str:
        """The release method ``method="auto"`` stands for, from public parameters only.

        ``"prescreen"`` when the training rows are public and apart from the
        validation rows (``sensitive="validation"``, no ``cv``) and
        ``method_params`` do not ask for ``random``'s other selections;
        ``"random"`` otherwise. Any other value of ``method`` is returned as is.
        """
        if self.method != "auto":
            return self.method
        params = self.method_params if isinstance(self.method_params, Mapping) else {}
        if self.sensitive == "validation" and self.cv is None and "selection" not in params:
            return "prescreen"
        return "random"

    def _auto_stopping(self) -> bool:
        """Whether ``method="auto"`` takes ``random``'s random stopping (public parameters only).

        With sensitive training rows and public validation rows (``sensitive="training"``, no ``cv``), no
        ``selection`` in ``method_params``, ``n_iter >= 2`` and ``delta > 0`` (the capped law of the number of
        runs needs it): random stopping (mean ``n_iter``) had the lowest mean median regret of the tuning methods
        in ``benchmarks/privacy_utility/tuning_pays.py`` (6.0 points at ε >= 1 against 8.0 for the exponential
        selection over 20 fits; 14.4 against 16.5 at ε = 0.3), where it can run whatever the rows (see below).
        Otherwise the exponential selection.
        """
        params = self.method_params if isinstance(self.method_params, Mapping) else {}
        try:
            if not (self.method == "auto" and self.sensitive == "training" and self.cv is None
                    and "selection" not in params and int(self.n_iter) >= 2 and float(self.delta) > 0):
                return False
            # only where random stopping can run whatever the rows: a size-free declaration it can bound (not the
            # any-n bound of DP-SGD or the MLP, exact only once the rows are known, so that privacy_plan and fit
            # agree), and no accountant of the estimator's own without the delta its capped law of K needs
            if declares_by_size(self.estimator):
                return False
            one_fit, one_budget = per_fit_event(self.estimator)
            if not (one_budget.delta == 0 or has_rdp_curve(one_fit)) or one_fit.is_conditional():
                return False
            own = [v for k, v in self.estimator.get_params(deep=True).items()
                   if (k == "accountant" or k.endswith("__accountant")) and isinstance(v, Accountant)]
            return all(acc.budget.delta > 0 for acc in own)
        except Exception:  # noqa: BLE001 - an invalid configuration is refused by the checks that follow
            return False

    # -- validation --------------------------------------------------------------------
    def _check_stopping_run(self, one_fit: Any, one_budget: Budget) -> None:
        """Refuse random stopping over fits whose event has neither a pure epsilon nor an RDP curve (public)."""
        if not (one_budget.delta == 0 or has_rdp_curve(one_fit)) or one_fit.is_conditional():
            raise InvalidParameterError(
                "Random stopping (Papernot & Steinke) bounds runs whose training event is pure epsilon-DP or "
                "has an RDP curve privtune can evaluate at every order (e.g. the default Gaussian fits), but "
                f"{type(self.estimator).__name__} declares a {type(one_fit).__name__} "
                f"({one_fit.label or 'unlabelled'}), which has neither. Use selection='exponential'.")

    def _validate_params(self) -> SearchSettings:  # noqa: C901 - one flat list of checks
        """The parameters checked, in one flat list, before any input is seen (:class:`SearchSettings`)."""
        owner = "PrivateSearchCV"
        from privtune.bo import METHODS

        if self.method != "auto" and self.method not in METHODS:
            raise InvalidParameterError(
                f"The 'method' parameter of {owner} must be 'auto' or one of {sorted(METHODS)}. Got {self.method!r} "
                "instead.")
        checked: dict[str, Any] = {  # the keyword arguments of SearchSettings, in the order of the checks
            "epsilon": check_epsilon(self.epsilon, owner=owner),
            "delta": check_delta(self.delta, owner=owner),
            "n_iter": check_integer(self.n_iter, "n_iter", low=1, owner=owner),
            "n_candidates": check_integer(self.n_candidates, "n_candidates", low=0, high=2**20, owner=owner),
            "validation_size": (None if self.validation_size is None else
                                check_real(self.validation_size, "validation_size", low=0.0, high=1.0, owner=owner)),
            "verbose": check_integer(self.verbose, "verbose", low=0, owner=owner),
        }
        if self.sensitive not in _SENSITIVE:
            raise InvalidParameterError(
                f"The 'sensitive' parameter of {owner} must be one of {list(_SENSITIVE)}. Got {self.sensitive!r}.")
        if self.cv is not None:
            checked["cv"] = check_integer(self.cv, "cv", low=2, owner=owner)
            checked["cv_validation_share"] = check_real(self.cv_validation_share, "cv_validation_share", low=0.0,
                                                    high=1.0, owner=owner)
            if self.sensitive != "both":
                raise InvalidParameterError(
                    f"cv={self.cv!r} makes every row both a training and a validation row, so it needs "
                    f"sensitive='both' and a privtune DP estimator. Got sensitive={self.sensitive!r}; pass X_val "
                    "(or use validation_size) for a validation-only search.")
        training_sensitive = self.sensitive in ("training", "both")
        if self._resolved_method() == "prescreen" and (self.sensitive != "validation" or self.cv is not None):
            raise InvalidParameterError(
                "method='prescreen' scores candidates by cross-validation on the training rows without privacy, so "
                "it needs public training rows: sensitive='validation' and no cv. Got "
                f"sensitive={self.sensitive!r}, cv={self.cv!r}; use method='random' here.")
        if training_sensitive:
            checked["tags"] = check_training_estimator(self.estimator, owner=owner)
            if self._resolved_method() == "lipschitz":
                raise InvalidParameterError(
                    "method='lipschitz' (Kusner et al. Alg. 3) assumes public training data (its sensitivity fixes "
                    "the trained weights), and how many fits it makes depends on its raw-score trajectory. Use "
                    "sensitive='validation', or another method with sensitive training data.")
        if not isinstance(self.refit, bool):
            raise InvalidParameterError(f"The 'refit' parameter of {owner} must be a bool. Got {self.refit!r}.")
        if self.error_score not in ("lower", "raise"):
            raise InvalidParameterError(
                f"The 'error_score' parameter of {owner} must be 'lower' or 'raise'. Got {self.error_score!r}.")
        if self.error_score == "raise" and self._resolved_method() in ("gp-ucb", "gp-ucb-exact", "lipschitz"):
            raise InvalidParameterError(
                f"error_score='raise' with method={self._resolved_method()!r}: this method's candidates follow the "
                "raw validation scores, so whether a failing candidate is ever fitted (and the search stops) would "
                "depend on the sensitive rows. Use error_score='lower' (a failed fit scores the lower bound).")
        if self.error_score == "raise" and training_sensitive:
            raise InvalidParameterError(
                f"error_score='raise' with sensitive={self.sensitive!r}: whether a fit on sensitive training rows "
                "fails would itself be released. Use error_score='lower' (a failed fit scores the lower bound).")
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise InvalidParameterError(f"The 'accountant' parameter of {owner} must be a privtune Accountant.")
        if self.storage is not None:
            if self.accountant is not None:
                raise InvalidParameterError(
                    f"Pass either 'accountant' or 'storage' to {owner}, not both: with storage, the study's ledger is "
                    "the accountant's.")
        if not isinstance(self.resume, bool):
            raise InvalidParameterError(f"The 'resume' parameter of {owner} must be a bool. Got {self.resume!r}.")
        if self.resume and self.storage is None:
            raise InvalidParameterError(
                f"resume=True needs a stored study to continue, but the 'storage' parameter of {owner} is None. Pass "
                "storage=<file> and study_name, or resume=False.")
        if self.study_name is not None and (not isinstance(self.study_name, str) or not self.study_name):
            raise InvalidParameterError(f"The 'study_name' parameter of {owner} must be a non-empty str or None.")
        if isinstance(self.study_name, str) and "::" in self.study_name:
            raise InvalidParameterError(
                f"The 'study_name' parameter of {owner} may not contain '::' (a study's training ledger is named "
                f"'<study>::training'). Got {self.study_name!r}.")
        if self.n_jobs is not None:
            check_integer(self.n_jobs, "n_jobs", owner=owner)
        if self.callbacks is not None and not all(callable(c) for c in self.callbacks):
            raise InvalidParameterError(f"The 'callbacks' parameter of {owner} must be a list of callables.")
        if self.method_params is not None and not isinstance(self.method_params, Mapping):
            raise InvalidParameterError(f"The 'method_params' parameter of {owner} must be a dict or None.")
        if isinstance(self.estimator, type):
            raise InvalidParameterError(
                f"The 'estimator' parameter of {owner} must be an estimator instance; got the class "
                f"{self.estimator.__name__}. Did you mean {self.estimator.__name__}()?")
        if not hasattr(self.estimator, "get_params") or not hasattr(self.estimator, "fit"):
            raise InvalidParameterError(
                f"The 'estimator' parameter of {owner} must be a scikit-learn estimator (with fit and get_params); "
                f"got {type(self.estimator).__name__}.")
        own = self.estimator.get_params(deep=True)
        checked["space"], space_grid = _as_space(self.search_space, own)
        unknown = set(checked["space"].names) - set(own)
        if unknown:
            raise InvalidParameterError(
                f"The search space names hyperparameters that {type(self.estimator).__name__} does not have: "
                + "; ".join(_unknown_name(name, own) for name in sorted(unknown)) + ".")
        grid = list(space_grid or ()) + list(self.candidate_grid or ())
        checked["grid"] = grid or None
        if space_grid is not None:  # a list of dicts (GridSearchCV's param_grid): exactly its points
            checked["n_candidates"] = 0
        if checked["n_candidates"] == 0 and not grid:
            raise InvalidParameterError(
                f"The 'n_candidates' parameter of {owner} may be 0 only with a candidate_grid (the candidate set is "
                "then exactly the grid). Got n_candidates=0 and no grid.")
        checked["scorer"] = make_bounded_scorer(self.scoring, score_bounds=self.score_bounds,
                                            score_sensitivity=self.score_sensitivity,
                                            min_class_size=self.min_class_size)
        checked["method"] = self._resolved_method()
        checked["stopping"] = (checked["method"] == "random"
                               and (dict(self.method_params or {}).get("selection") == "random-stopping"
                                    or self._auto_stopping()))
        checked["subsample"] = subsample_fraction(self, checked["stopping"])
        if training_sensitive:
            # The estimator's own accountant is charged the whole training plan too (the fits charge tickets)
            checked["own_accountant"] = estimator_accountant(self.estimator, checked["space"].names, owner=owner)
            one_fit, one_budget = per_fit_event(self.estimator)
            checked["one_fit"], checked["one_fit_budget"] = one_fit, one_budget
            if checked["subsample"] is not None:
                check_relation(one_fit)
            seeded_fits = explicit_random_states(self.estimator, checked["space"].names)
            if self.random_state is None and seeded_fits:
                raise InvalidParameterError(
                    f"{type(self.estimator).__name__}'s {', '.join(seeded_fits)} seeds the noise of its fits on the "
                    "sensitive training rows, but the search is unseeded (random_state=None, the secure mode for a "
                    "release): anyone holding that seed could remove the fits' noise, under a release labelled "
                    "'secure'. Leave the estimator's random_state=None (each fit then draws secure noise), or seed "
                    "the search too (a reproducible run, labelled not for release). Nothing was read or spent.")
            if checked["stopping"]:
                # An estimator whose declaration depends on the rows' number (DP-SGD, the MLP) declares the exact
                # event once one split fixes it (fit's _plan): checked there (with cv, here, size-free)
                if self.cv is not None or not declares_by_size(self.estimator):
                    self._check_stopping_run(one_fit, one_budget)
                if "run_event" in (self.method_params or {}):
                    raise InvalidParameterError(
                        "Do not pass method_params['run_event'] with sensitive training data: the search takes each "
                        "run's training event from the estimator's declaration.")
        else:
            # Public training rows: the fits read no sensitive row, so the estimator's accountants are charged
            # nothing; every fit, in this process or a worker, runs on a clone without them (see _training).
            checked["public_fit_accountants"] = public_fit_accountants(self.estimator, checked["space"].names,
                                                                       owner=owner)
            if checked["public_fit_accountants"]:
                names = ", ".join(sorted(checked["public_fit_accountants"]))
                warnings.warn(
                    f"{owner}: {type(self.estimator).__name__}'s {names} is not charged: sensitive='validation' "
                    "declares the training rows public, so the fits on them spend no privacy budget (each runs "
                    "without it; best_estimator_ carries it again). If the training rows are sensitive, pass "
                    "sensitive='both': every fit is then paid for up front and charged to it too.",
                    PrivtuneWarning, stacklevel=3)
        return SearchSettings(**checked)

    def privacy_plan(self, n_validation: int, n_classes: int | None = None, *,
                     n_train: int | None = None) -> dict[str, Any]:
        """What this configuration will spend, and its noise in score units -- without any data.

        Parameters
        ----------
        n_validation : int
            The (public) size of the sensitive validation set (with ``cv``: the
            size of the smallest validation fold, ``n_samples // cv``).
        n_classes : int or None, default=None
            The (public) number of classes K in balanced accuracy's sensitivity.
            ``None``: the estimator's declared label set when it has one, else 2
            (the most conservative). ``fit`` uses the classes of the public
            training labels when they are passed apart from the validation rows
            (``X_val``), and ``None``'s rule with ``validation_size`` or ``cv``.

        Returns
        -------
        dict
            ``method``, ``guarantee``, ``phases`` (validation phase -> Budget),
            ``total`` (the validation role's Budget), ``training_phases`` and
            ``training_total`` (the training role's fits, refit included; empty /
            ``None`` when training data is public), ``overall`` (the maximum over
            the disjoint roles, or their composition with ``cv``),
            ``score_sensitivity``, ``n_classes`` (the K it used), ``noise`` (score units), ``n_candidates``
            and ``warnings`` (plain sentences when a release would carry almost
            no information at this budget: a selection close to a random pick,
            or noise that dwarfs the score range; ``fit`` issues them as
            :class:`~privtune.exceptions.LowUtilityWarning` before reading any
            data), and ``n_candidates_exact`` (False when an unseeded run's
            de-duplicated candidate count may differ from this one: integer or
            categorical dimensions and no integer ``random_state``).
        n_train : int or None, default=None
            With sensitive training rows and one split: the (public) number of
            training rows every fit will read. An estimator whose declared fit
            depends on it (``DPMLPClassifier``, the DP-SGD estimators) is then
            planned at the exact event ``fit`` charges; without it, at a bound
            that holds for any number of rows (larger once composed; random
            stopping needs ``n_train`` for them). Ignored otherwise.

        Raises
        ------
        InvalidParameterError, BudgetExceededError
            As ``fit`` would, before any data access; a training plan over budget
            names what to change.
        """
        from privtune.accounting import compose_events

        settings = self._validate_params()
        if n_train is not None:
            settings = self._sized_fit(settings, check_integer(n_train, "n_train", low=1,
                                                               owner="PrivateSearchCV.privacy_plan"))
        elif settings.subsample is not None:
            raise InvalidParameterError(
                "PrivateSearchCV.privacy_plan: subsampled tuning (method_params['subsample']) tunes on a subset of "
                "floor(subsample * n_train) training rows, so its plan depends on the number of training rows: "
                "pass n_train.")
        elif settings.stopping and settings.one_fit is not None and settings.fit_rows is None:
            self._check_stopping_run(settings.one_fit, settings.one_fit_budget)  # the size-free bound: refused
        m = check_integer(n_validation, "n_validation", low=2, owner="PrivateSearchCV.privacy_plan")
        scorer = settings.scorer
        source = check_random_state(self.random_state if isinstance(self.random_state, (int, np.integer)) else 0)
        seeds = [int(g.integers(2**63)) for g in (source.numpy_generator(), source.numpy_generator())]
        candidates = candidate_set(settings.space, settings.n_candidates, grid=settings.grid,
                                   random_state=np.random.default_rng(seeds[1]))
        self._check_random_coverage(settings, len(settings.grid or ()), len(candidates))
        k = settings.cv
        n_cls = self._n_classes(settings) if n_classes is None else max(2, check_integer(
            n_classes, "n_classes", low=1, owner="PrivateSearchCV.privacy_plan"))
        sensitivity = scorer.sensitivity(m, n_cls) / (k or 1)
        budget, train_budget = self._role_budgets(settings)
        method = self._make_method(settings, scorer, m, sensitivity, budget)
        self._check_epsilon_domain(settings, scorer, m, sensitivity, candidates)
        plan = method.plan(candidates)
        phases: dict[str, list[Any]] = {}
        for ev, ph in plan:
            phases.setdefault(ph, []).append(ev)
        total = compose_events([ev for ev, _ in plan], delta=budget.delta)
        Accountant(budget).check(ComposedEvent(events=tuple(ev for ev, _ in plan)))
        _, train_plan, _ = self._training_role(settings, method, candidates, train_budget, k or 1)
        train_phases = {ph: compose_events([ev], delta=train_budget.delta) for ev, ph in train_plan}
        train_total = (compose_events([ev for ev, _ in train_plan], delta=train_budget.delta) if train_plan
                       else None)
        if train_total is None:
            overall = total
        elif k is not None:  # overlapping roles: sequential composition
            overall = compose_events([ev for ev, _ in plan] + [ev for ev, _ in train_plan],
                                     delta=budget.delta + train_budget.delta)
        else:  # disjoint roles: parallel composition
            overall = Budget(max(total.epsilon, train_total.epsilon), max(total.delta, train_total.delta))
        return {"method": method.name, "guarantee": method.guarantee,
                "phases": {ph: compose_events(evs, delta=budget.delta) for ph, evs in phases.items()},
                "total": total, "training_phases": train_phases, "training_total": train_total,
                "overall": overall, "score_sensitivity": sensitivity, "n_classes": n_cls,
                "noise": method.noise_scales(candidates), "n_candidates": len(candidates),
                "warnings": utility_warnings(method.noise_scales(candidates), scorer.bounds),
                "n_candidates_exact": bool(isinstance(self.random_state, (int, np.integer)) or not any(
                    isinstance(d, (Integer, Categorical)) for d in settings.space.dimensions))}

    def _role_budgets(self, settings: SearchSettings) -> tuple[Budget, Budget]:
        """(validation budget, training budget): both the whole budget, or split with ``cv`` (the roles overlap)."""
        if settings.cv is None:
            budget = Budget(settings.epsilon, settings.delta)
            return budget, budget
        share = settings.cv_validation_share
        return (Budget(settings.epsilon * share, settings.delta * share),
                Budget(settings.epsilon * (1 - share), settings.delta * (1 - share)))

    def _validate_data(self, X: Any, y: Any, X_val: Any, y_val: Any) -> tuple[Any, Any, Any, Any]:
        """Check the inputs' public schema (no split yet), with messages that never quote a value.

        Only the structure of each input is checked: the number of dimensions,
        of rows and of columns, and a DataFrame's column names and their order
        (public under replace-one); the validation table must have the training
        table's (:func:`~privtune.model_selection._inputs.check_same_structure`).
        A pandas or polars DataFrame (Series) is kept as it is, as in
        scikit-learn's searches. Values are not inspected: a non-finite or
        otherwise unusual value reaches the estimator, as in scikit-learn's
        searches; on validation rows it can only change its own row's score
        term (row isolation), and privtune's DP estimators map such training
        rows into their declared domain.
        """
        if y is None:
            raise InvalidParameterError("PrivateSearchCV.fit needs targets y (supervised estimators only).")
        if (X_val is None) != (y_val is None):
            raise InvalidParameterError("Pass both X_val and y_val, or neither.")
        X, y = _as_table(X, "X"), _as_labels(y, "y")
        _same_length(X, y, "X", "y")
        if X_val is None:
            return X, y, None, None
        X_val, y_val = _as_table(X_val, "X_val"), _as_labels(y_val, "y_val")
        _same_length(X_val, y_val, "X_val", "y_val")
        if X_val.shape[0] < 2:
            raise InvalidParameterError(
                f"The validation set has {X_val.shape[0]} sample(s); at least 2 are needed for a private release.")
        check_same_structure(X, X_val)
        return X, y, X_val, y_val

    def _fit_params(self, settings: SearchSettings, params: Mapping[str, Any], n: int, *,
                    split: bool) -> tuple[FitParams, Any]:
        """The estimator's fit parameters and ``groups``, as scikit-learn's searches take them; public checks only.

        Without metadata routing (scikit-learn's default) every parameter but
        ``groups`` goes to the estimator's ``fit`` and must be one it takes
        (its signature; a ``Pipeline``'s ``<step>__<param>``); with
        ``sklearn.set_config(enable_metadata_routing=True)`` the estimator's
        requests route them (scikit-learn's ``process_routing``, its own
        messages). Per-sample ones (one entry per row of ``X``: ``sample_weight``)
        are sliced with the rows of every fit (:class:`~privtune.model_selection._inputs.FitParams`).
        ``groups`` is the search's own: one group label per training row, used by
        ``prescreen``'s screening folds (``GroupKFold``) and refused where no
        split of the public training rows could use it.

        Raises
        ------
        InvalidParameterError
            Before anything is read or spent: a parameter the estimator does not
            take, a ``sample_weight`` of another length than ``X``, ``groups``
            where it does not apply or of another length.
        """
        owner = "PrivateSearchCV.fit"
        params = dict(params)
        groups = params.pop("groups", None)
        import sklearn

        if sklearn.get_config().get("enable_metadata_routing", False):
            from sklearn.utils.metadata_routing import process_routing

            try:
                routed = process_routing(self, "fit", **params)
            except (ValueError, TypeError) as exc:  # scikit-learn's own message: parameter and class names only
                raise InvalidParameterError(f"{owner}: {exc} Nothing was read or spent.") from None
            params = dict(routed.estimator.fit)
        else:
            for name in params:
                reason = fit_param_refusal(self.estimator, name)
                if reason is not None:
                    raise InvalidParameterError(
                        f"{owner} got the fit parameter {name!r}, but {reason} Nothing was read or spent.")
        fit_params = split_fit_params(params, n, "X")
        if groups is None:
            return fit_params, None
        if settings.cv is not None:
            raise InvalidParameterError(
                f"{owner}: groups= cannot be used with cv: privtune's cv folds are made by a shuffled KFold that "
                "never looks at values, with sizes fixed by n and cv (the score's sensitivity rests on them); folds "
                "by group would take their sizes from the sensitive rows' groups. Split by group yourself and pass "
                "the validation rows as X_val, y_val, or drop groups. Nothing was read or spent.")
        if split:
            raise InvalidParameterError(
                f"{owner}: groups= cannot be used with validation_size: the split never looks at values and "
                "holds floor(validation_size * n) validation rows; a split by group would take its size from the "
                "groups of sensitive rows. Split X by group yourself (e.g. sklearn's GroupShuffleSplit) and pass "
                "the validation rows as X_val, y_val. Nothing was read or spent.")
        if settings.method != "prescreen":
            raise InvalidParameterError(
                f"{owner}: groups= applies to method='prescreen''s screening folds only (cross-validation on the "
                f"public training rows); {self._method_label(settings)} fits each candidate on all the training "
                "rows and scores it on X_val, so no split would use them. Drop groups, or use method='prescreen'. "
                "Nothing was read or spent.")
        if not _array_like(groups) or n_rows(groups) != n:
            got = f"{n_rows(groups)} entries" if _array_like(groups) else f"a {type(groups).__name__}"
            raise InvalidParameterError(
                f"{owner}: groups has {got} but X has {n} rows; pass one group label per training row. Nothing was "
                "read or spent.")
        return fit_params, groups

    def _n_classes(self, settings: SearchSettings, y_tr: Any = None) -> int:
        """K in balanced accuracy's sensitivity 2 / (K M), from public information only.

        The estimator's declared label set (never read off the rows) when it
        has one; else, with public training labels passed apart from the
        validation rows (``X_val``/``y_val``), the classes seen in training (what
        a fitted classifier's ``classes_`` holds); else K = 2 (the most
        conservative). With ``validation_size`` the labels are read before the
        split, validation rows included, so they are not used: one validation
        row with a new label would otherwise lower the declared sensitivity.
        """
        tags = settings.tags
        if tags is not None and tags.classes_param is not None:
            declared = self.estimator.get_params(deep=True).get(tags.classes_param)  # a pipeline step's too
            return max(2, len(declared))
        if self.sensitive == "validation" and y_tr is not None:
            return max(2, _n_distinct(y_tr))
        return 2

    def _public_config(self, settings: SearchSettings, m: int, train_shape: tuple[int, ...]) -> dict[str, Any]:
        """What a study stores and compares on resume: public quantities only (no data, no hash of it)."""
        seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else None
        return {"estimator": repr(self.estimator), "search_space": {n: repr(d) for n, d in settings.space.items()},
                "method": self.method, "method_params": repr(sorted((self.method_params or {}).items())),
                "epsilon": settings.epsilon, "delta": settings.delta, "n_iter": settings.n_iter,
                "n_candidates": settings.n_candidates, "scoring": settings.scorer.name,
                "score_bounds": list(settings.scorer.bounds),
                "score_sensitivity": self.score_sensitivity_, "n_validation": m,
                "n_train": int(train_shape[0]), "n_features": int(train_shape[1]) if len(train_shape) > 1 else 1,
                "sensitive": self.sensitive, "seed": None if seed is None else int(seed)}


def _unknown_name(name: str, params: Mapping[str, Any]) -> str:
    """``'nme'`` with a suggestion from the estimator's own parameter names (public), as the CLI does."""
    import difflib

    close = difflib.get_close_matches(name, list(params), n=1)
    return f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
