"""PrivateSearchCV: a scikit-learn search that releases its results under differential privacy."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils.validation import check_array, check_consistent_length

from privtune.accounting import Accountant, Budget, ComposedEvent, EpsilonDeltaEvent, SelfComposedEvent
from privtune.exceptions import InvalidParameterError
from privtune.logging import get_logger
from privtune.model_selection._scoring import BoundedScorer, make_bounded_scorer
from privtune.space import Dimension, SearchSpace, candidate_set
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = ["PrivateSearchCV", "DEFAULT_METHOD"]

_logger = get_logger("privtune.model_selection")

#: The default release method: unconditional guarantee and the best measured utility
#: (see benchmarks/method_utility.py and the README).
DEFAULT_METHOD = "random"
_SENSITIVE = ("validation", "training", "both")
_METHOD_PARAMS_WITH_SENSITIVITY = ("noisy-ucb", "random")


def _as_space(search_space: Any) -> SearchSpace:
    if isinstance(search_space, SearchSpace):
        return search_space
    if isinstance(search_space, Mapping) and all(isinstance(v, Dimension) for v in search_space.values()):
        return SearchSpace(dict(search_space))
    raise InvalidParameterError(
        "The 'search_space' parameter of PrivateSearchCV must be a privtune.space.SearchSpace or a dict "
        "{name: Real/Integer/Categorical}. Got " f"{type(search_space).__name__}.")


def _is_dp_estimator(estimator: Any) -> bool:
    """A privtune DP estimator spends its own budget: it takes an ``accountant`` parameter."""
    try:
        params = estimator.get_params(deep=False)
    except Exception:  # noqa: BLE001 - not an estimator at all
        return False
    return "accountant" in params and type(estimator).__module__.startswith("privtune.")


class _Progress:
    """A one-line progress display on stderr (public quantities only)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.start = total, enabled, time.perf_counter()

    def __call__(self, record: Any) -> None:
        if not self.enabled:
            return
        done = record.iteration
        width = 24
        filled = int(width * min(done, self.total) / max(self.total, 1))
        sys.stderr.write(f"\r[privtune] [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                         f"eps spent {record.epsilon_spent:.3g} ({time.perf_counter() - self.start:.1f} s)")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


class PrivateSearchCV(BaseSearchCV):
    """Hyperparameter search whose results are released under differential privacy.

    ``PrivateSearchCV`` evaluates candidate hyperparameters of ``estimator`` on a
    *sensitive* validation set and releases the chosen hyperparameters
    (``best_params_``), their score (``best_score_``) and a report, with a privacy
    accountant that charges for the whole search. It has the shape of
    :class:`~sklearn.model_selection.GridSearchCV`: ``fit``, then ``predict`` /
    ``score`` delegate to ``best_estimator_``.

    Parameters
    ----------
    estimator : estimator object
        A scikit-learn estimator. When training data is sensitive
        (``sensitive="training"`` or ``"both"``) it must be a privtune DP
        estimator (one that spends its own budget through an ``accountant``).
    search_space : SearchSpace or dict of {str: Real, Integer or Categorical}
        The hyperparameters to tune and their ranges (public).
    method : {"random", "noisy-ucb", "gp-ucb", "gp-ucb-exact", "lipschitz"}, default="random"
        The release method (see :mod:`privtune.bo`); ``"gp-ucb"`` is Kusner et al.'s
        Alg. 1 (conditional guarantee). The default has an unconditional guarantee
        and the best measured utility in ``benchmarks/method_utility.py``.
    epsilon : float in (0, inf), default=1.0
        Total epsilon of the search for each sensitive data role.
    delta : float in [0, 1), default=1e-6
        Total delta (the GP and Gaussian methods need delta > 0).
    n_iter : int, default=20
        Number of evaluations (or the mean number of runs with random stopping).
    n_candidates : int, default=256
        Size of the scrambled-Sobol candidate set Lambda (before de-duplication).
    candidate_grid : list of dict or None, default=None
        Extra candidate points (e.g. a user grid), added to Lambda.
    scoring : str or callable, default="accuracy"
        ``"accuracy"``, ``"balanced_accuracy"``, ``"neg_zero_one_loss"``,
        ``"neg_log_loss"``, or ``callable(estimator, X, y) -> float`` with declared
        ``score_bounds``. See :mod:`privtune.model_selection._scoring` for each
        sensitivity.
    score_bounds : (float, float) or None, default=None
        Declared score range (needed for callables and ``neg_log_loss``).
    score_sensitivity : float or None, default=None
        Declared sensitivity of one score, overriding the scorer's rule.
        (The value used is in ``score_sensitivity_`` after fit.)
    min_class_size : int or None, default=None
        Declared lower bound on validation records per class (``balanced_accuracy``).
    sensitive : {"validation", "training", "both"}, default="validation"
        Which data roles are sensitive. Training privacy needs a privtune DP
        estimator; others are refused.
    validation_size : float in (0, 1), default=0.3
        When ``fit`` receives no explicit validation set, the share of rows put
        in it by a random split that never looks at values.
    cv : int or None, default=None
        Cross-validation over one sensitive data set: k folds made by a shuffled
        ``KFold`` that never looks at values (never stratified: that reads the
        labels). Every row is then both a training and a validation row, so it
        needs ``sensitive="both"`` and a privtune DP estimator; the score is the
        mean over folds, with sensitivity ``scorer sensitivity(min fold size) / k``.
    cv_validation_share : float in (0, 1), default=0.5
        With ``cv``: share of (epsilon, delta) for the validation releases; the
        training fits get the rest. The roles overlap, so the overall guarantee is
        their composition (at most (epsilon, delta)), not their maximum.
    refit : bool, default=True
        Refit ``best_estimator_`` on the training data with ``best_params_``
        (charged to the training role when training data is sensitive).
    method_params : dict or None, default=None
        Extra parameters of the release method (e.g. ``kernel``, ``noise_std``,
        ``selection_share``, ``observation_share``, ``selection``, ``A``, ``tau``).
    accountant : Accountant or None, default=None
        Validation-role accountant to charge; ``None`` creates one with budget
        ``(epsilon, delta)``. Not combinable with ``storage``.
    storage : str, os.PathLike or None, default=None
        A SQLite file (or ``"sqlite:///path"``) holding the study: its public
        configuration, the privacy ledger (every charge committed before its data
        access), the released values and the report. Fitting again with the same
        ``storage`` and ``study_name`` **resumes** the study after a crash: past
        charges count, are never repeated, and released observations are reused;
        a completed study is loaded without spending anything.
    study_name : str or None, default=None
        The study's name in ``storage`` (default ``"default"``).
    error_score : "lower" or "raise", default="lower"
        A candidate whose fit or scoring fails counts as the lower score bound
        (no detail of the failure is kept: it may depend on the data), or re-raise.
    n_jobs : int or None, default=None
        joblib parallelism for data-independent batches of evaluations; results
        are identical to ``n_jobs=1`` for a fixed seed. Works under
        ``joblib.parallel_backend("dask")``.
    random_state : None, int or numpy Generator, default=None
        ``None``: cryptographically secure noise (for release). An int makes the
        run reproducible and labels it "seeded (reproducible, not for release)".
    callbacks : list of callable or None, default=None
        Each called with every :class:`~privtune.bo.IterationRecord` (released
        values only); one returning True stops the search.
    verbose : int, default=0
        1 shows a progress bar on stderr; 2 also logs each iteration at INFO.

    Attributes
    ----------
    best_params_ : dict
        The privately selected hyperparameters.
    best_score_ : float
        The privately released score of ``best_params_`` (score units), clipped to
        the score bounds (post-processing; the unclipped release is ``release_.score``).
    best_index_ : int
        Row of ``best_params_`` in ``cv_results_``.
    best_estimator_ : estimator
        ``estimator`` refit on the training data with ``best_params_`` (if ``refit``).
    cv_results_ : dict of arrays
        Sanitised results: ``params``, ``param_<name>``, ``mean_test_score`` only where
        a privatised score was released (NaN elsewhere), ``rank_test_score`` from
        released values only, ``noise_std_test_score``, ``selected``. No raw score.
    privacy_spent_ : dict of {str: Budget}
        ``"validation"``, ``"training"`` and ``"overall"`` (the maximum over the
        disjoint roles: parallel composition).
    guarantee_ : {"unconditional", "conditional"}
    ledger_ : tuple of LedgerEntry
        Every charge, in order.
    accountant_ : Accountant
    release_ : privtune.bo.Release
    report_ : privtune.report.TuningReport
        The tuning report (versioned JSON, Markdown, self-contained HTML with plots).
    summary_ : dict
        The same facts as a plain dict: configuration, releases, events, budget per
        phase, guarantee label, seed policy.
    search_time_ : float
        Seconds spent in the search (a timing: not part of the reproducible report body).
    candidates_ : privtune.space.CandidateSet
    scorer_ : BoundedScorer
    n_iter_ : int or None
    seeded_ : bool

    Notes
    -----
    **Privacy.** The unit of privacy is one row; the relation is replace-one, so
    the sizes of the training and validation sets are public. With
    ``sensitive="validation"`` the training data is treated as public and the
    guarantee is the release method's (conditional for ``gp-ucb`` and
    ``gp-ucb-exact``). With training data sensitive, every fit is a privtune DP
    estimator charging a training accountant with the same budget; the training
    and validation rows are disjoint, so the overall guarantee is the maximum of
    the two (parallel composition). All charges are made before the data access
    they pay for; a configuration whose budget cannot cover its plan is refused
    before any data is read.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.svm import SVC
    >>> from privtune import PrivateSearchCV
    >>> from privtune.space import Real
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> search = PrivateSearchCV(SVC(), {"C": Real(0.1, 100, log=True), "gamma": Real(1e-5, 1e-2, log=True)},
    ...                          epsilon=1.0, n_iter=10, n_candidates=64, random_state=0)
    >>> search.fit(X, y).privacy_spent_["overall"].epsilon <= 1.0
    True
    """

    def __init__(
        self,
        estimator: Any,
        search_space: Any,
        *,
        method: str = DEFAULT_METHOD,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        n_iter: int = 20,
        n_candidates: int = 256,
        candidate_grid: Sequence[Mapping[str, Any]] | None = None,
        scoring: Any = "accuracy",
        score_bounds: tuple[float, float] | None = None,
        score_sensitivity: float | None = None,
        min_class_size: int | None = None,
        sensitive: str = "validation",
        validation_size: float = 0.3,
        cv: int | None = None,
        cv_validation_share: float = 0.5,
        refit: bool = True,
        method_params: Mapping[str, Any] | None = None,
        accountant: Accountant | None = None,
        storage: Any = None,
        study_name: str | None = None,
        error_score: Any = "lower",
        n_jobs: int | None = None,
        random_state: Any = None,
        callbacks: Sequence[Callable[..., Any]] | None = None,
        verbose: int = 0,
    ) -> None:
        self.estimator = estimator
        self.search_space = search_space
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.n_iter = n_iter
        self.n_candidates = n_candidates
        self.candidate_grid = candidate_grid
        self.scoring = scoring
        self.score_bounds = score_bounds
        self.score_sensitivity = score_sensitivity
        self.min_class_size = min_class_size
        self.sensitive = sensitive
        self.validation_size = validation_size
        self.cv = cv
        self.cv_validation_share = cv_validation_share
        self.refit = refit
        self.method_params = method_params
        self.accountant = accountant
        self.storage = storage
        self.study_name = study_name
        self.error_score = error_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.callbacks = callbacks
        self.verbose = verbose

    # sklearn's BaseSearchCV hook; the search is run by fit itself.
    def _run_search(self, evaluate_candidates: Any) -> None:  # pragma: no cover
        raise NotImplementedError("PrivateSearchCV runs its own private search in fit().")

    # -- validation --------------------------------------------------------------------
    def _validate_params(self) -> dict[str, Any]:  # noqa: C901 - one flat list of checks
        owner = "PrivateSearchCV"
        from privtune.bo import METHODS

        if self.method not in METHODS:
            raise InvalidParameterError(
                f"The 'method' parameter of {owner} must be one of {sorted(METHODS)}. Got {self.method!r} instead.")
        cfg: dict[str, Any] = {
            "epsilon": check_epsilon(self.epsilon, owner=owner),
            "delta": check_delta(self.delta, owner=owner),
            "n_iter": check_integer(self.n_iter, "n_iter", low=1, owner=owner),
            "n_candidates": check_integer(self.n_candidates, "n_candidates", low=1, high=2**20, owner=owner),
            "validation_size": check_real(self.validation_size, "validation_size", low=0.0, high=1.0, owner=owner),
            "verbose": check_integer(self.verbose, "verbose", low=0, owner=owner),
        }
        if self.sensitive not in _SENSITIVE:
            raise InvalidParameterError(
                f"The 'sensitive' parameter of {owner} must be one of {list(_SENSITIVE)}. Got {self.sensitive!r}.")
        if self.cv is not None:
            cfg["cv"] = check_integer(self.cv, "cv", low=2, owner=owner)
            cfg["cv_validation_share"] = check_real(self.cv_validation_share, "cv_validation_share", low=0.0,
                                                    high=1.0, owner=owner)
            if self.sensitive != "both":
                raise InvalidParameterError(
                    f"cv={self.cv!r} makes every row both a training and a validation row, so it needs "
                    f"sensitive='both' and a privtune DP estimator. Got sensitive={self.sensitive!r}; pass X_val "
                    "(or use validation_size) for a validation-only search.")
        if self.sensitive in ("training", "both") and not _is_dp_estimator(self.estimator):
            raise InvalidParameterError(
                f"sensitive={self.sensitive!r} declares the training data sensitive, but "
                f"{type(self.estimator).__name__} does not spend a privacy budget of its own: fitting it would leak "
                "its training rows. Use a privtune DP estimator (e.g. privtune.linear_model.DPLogisticRegression), "
                "or sensitive='validation' if the training data is public.")
        if not isinstance(self.refit, bool):
            raise InvalidParameterError(f"The 'refit' parameter of {owner} must be a bool. Got {self.refit!r}.")
        if self.error_score not in ("lower", "raise"):
            raise InvalidParameterError(
                f"The 'error_score' parameter of {owner} must be 'lower' or 'raise'. Got {self.error_score!r}.")
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise InvalidParameterError(f"The 'accountant' parameter of {owner} must be a privtune Accountant.")
        if self.storage is not None:
            if self.accountant is not None:
                raise InvalidParameterError(
                    f"Pass either 'accountant' or 'storage' to {owner}, not both: with storage, the study's ledger is "
                    "the accountant's.")
            if self.sensitive != "validation":
                raise InvalidParameterError(
                    f"Resumable storage supports sensitive='validation' only: the DP estimators charge their training "
                    f"accountant directly, so a resumed training-sensitive search could re-spend. Got "
                    f"sensitive={self.sensitive!r}; run it without storage.")
        if self.study_name is not None and (not isinstance(self.study_name, str) or not self.study_name):
            raise InvalidParameterError(f"The 'study_name' parameter of {owner} must be a non-empty str or None.")
        if self.n_jobs is not None:
            check_integer(self.n_jobs, "n_jobs", owner=owner)
        if self.callbacks is not None and not all(callable(c) for c in self.callbacks):
            raise InvalidParameterError(f"The 'callbacks' parameter of {owner} must be a list of callables.")
        if self.method_params is not None and not isinstance(self.method_params, Mapping):
            raise InvalidParameterError(f"The 'method_params' parameter of {owner} must be a dict or None.")
        cfg["space"] = _as_space(self.search_space)
        unknown = set(cfg["space"].names) - set(self.estimator.get_params(deep=True))
        if unknown:
            raise InvalidParameterError(
                f"The search space names hyperparameters that {type(self.estimator).__name__} does not have: "
                f"{sorted(unknown)}.")
        cfg["scorer"] = make_bounded_scorer(self.scoring, score_bounds=self.score_bounds,
                                            score_sensitivity=self.score_sensitivity,
                                            min_class_size=self.min_class_size)
        return cfg

    def privacy_plan(self, n_validation: int, n_classes: int = 2) -> dict[str, Any]:
        """What this configuration will spend, and its noise in score units -- without any data.

        Parameters
        ----------
        n_validation : int
            The (public) size of the sensitive validation set.
        n_classes : int, default=2
            The (public) number of classes (balanced accuracy's sensitivity).

        Returns
        -------
        dict
            ``method``, ``guarantee``, ``phases`` (phase -> Budget), ``total`` (Budget),
            ``score_sensitivity``, ``noise`` (score units), ``n_candidates``.

        Raises
        ------
        InvalidParameterError, BudgetExceededError
            As ``fit`` would, before any data access.
        """
        from privtune.accounting import compose_events

        cfg = self._validate_params()
        m = check_integer(n_validation, "n_validation", low=2, owner="PrivateSearchCV.privacy_plan")
        scorer = cfg["scorer"]
        source = check_random_state(self.random_state if isinstance(self.random_state, (int, np.integer)) else 0)
        seeds = [int(g.integers(2**63)) for g in (source.numpy_generator(), source.numpy_generator())]
        candidates = candidate_set(cfg["space"], cfg["n_candidates"], grid=self.candidate_grid,
                                   random_state=np.random.default_rng(seeds[1]))
        sensitivity = scorer.sensitivity(m, max(2, n_classes))
        method = self._make_method(cfg, scorer, m, sensitivity, Budget(cfg["epsilon"], cfg["delta"]))
        plan = method.plan(candidates)
        phases: dict[str, list[Any]] = {}
        for ev, ph in plan:
            phases.setdefault(ph, []).append(ev)
        delta = cfg["delta"]
        total = compose_events([ev for ev, _ in plan], delta=delta)
        Accountant(Budget(cfg["epsilon"], delta)).check(ComposedEvent(events=tuple(ev for ev, _ in plan)))
        return {"method": method.name, "guarantee": method.guarantee,
                "phases": {ph: compose_events(evs, delta=delta) for ph, evs in phases.items()},
                "total": total, "score_sensitivity": sensitivity,
                "noise": method.noise_scales(candidates), "n_candidates": len(candidates)}

    def _validate_data(self, X: Any, y: Any, X_val: Any, y_val: Any) -> tuple[Any, Any, Any, Any]:
        """Check the inputs (no split yet); sklearn's ValueErrors become InvalidParameterError."""
        try:
            return self._check_data(X, y, X_val, y_val)
        except InvalidParameterError:
            raise
        except (ValueError, TypeError) as exc:  # sklearn's messages name the defect, never the values
            raise InvalidParameterError(f"Invalid input to PrivateSearchCV.fit: {exc}") from None

    def _check_data(self, X: Any, y: Any, X_val: Any, y_val: Any) -> tuple[Any, Any, Any, Any]:
        if y is None:
            raise InvalidParameterError("PrivateSearchCV.fit needs targets y (supervised estimators only).")
        if (X_val is None) != (y_val is None):
            raise InvalidParameterError("Pass both X_val and y_val, or neither.")
        X = check_array(X, accept_sparse=["csr", "csc"], ensure_all_finite=True, input_name="X")
        y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=True, input_name="y")
        check_consistent_length(X, y)
        if X_val is None:
            return X, y, None, None
        X_val = check_array(X_val, accept_sparse=["csr", "csc"], ensure_all_finite=True, input_name="X_val")
        y_val = check_array(y_val, ensure_2d=False, dtype=None, ensure_all_finite=True, input_name="y_val")
        check_consistent_length(X_val, y_val)
        if X_val.shape[0] < 2:
            raise InvalidParameterError(
                f"The validation set has {X_val.shape[0]} sample(s); at least 2 are needed for a private release.")
        if X_val.shape[1] != X.shape[1]:
            raise InvalidParameterError(f"X_val has {X_val.shape[1]} features but X has {X.shape[1]}.")
        return X, y, X_val, y_val

    @staticmethod
    def _split_sizes(n: int, validation_size: float) -> int:
        m = int(math.floor(validation_size * n))
        if m < 2 or n - m < 1:
            raise InvalidParameterError(
                f"The validation set has {m} sample(s) (validation_size={validation_size} of {n} samples); at "
                "least 2 validation samples and 1 training sample are needed. Pass X_val and y_val, or more data.")
        return m

    @staticmethod
    def _split(X: Any, y: Any, m: int, rng: np.random.Generator) -> tuple[Any, Any, Any, Any]:
        perm = rng.permutation(X.shape[0])  # a split that never looks at the values
        val, tr = np.sort(perm[:m]), np.sort(perm[m:])
        return X[tr], y[tr], X[val], y[val]

    def _make_method(self, cfg: dict[str, Any], scorer: BoundedScorer, m: int, sensitivity: float,
                     budget: Budget) -> Any:
        from privtune.bo import make_method

        params: dict[str, Any] = {"epsilon": budget.epsilon, "n_iter": cfg["n_iter"]}
        if self.method != "lipschitz":
            params["delta"] = budget.delta
            params["score_bounds"] = scorer.bounds
        if self.method in _METHOD_PARAMS_WITH_SENSITIVITY:
            params["score_sensitivity"] = sensitivity
        if self.method == "lipschitz":
            params["n_validation"] = m
        params.update(dict(self.method_params or {}))
        try:
            return make_method(self.method, **params)
        except TypeError as exc:
            raise InvalidParameterError(f"Invalid 'method_params' for method={self.method!r}: {exc}") from None

    # -- fit -------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, X_val: Any = None, y_val: Any = None, **fit_params: Any) -> PrivateSearchCV:
        """Run the private search.

        Parameters
        ----------
        X, y : array-like
            Training data (or the whole data set, split by ``validation_size``
            when no validation set is given).
        X_val, y_val : array-like or None
            The sensitive validation set (public size m >= 2).
        **fit_params : dict
            Passed to the estimator's ``fit``.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            For any invalid parameter or input, before any data access or spend.
        BudgetExceededError
            If the budget cannot cover the planned search, before any evaluation.
        """
        cfg = self._validate_params()
        source = check_random_state(self.random_state, owner="PrivateSearchCV")
        X_tr, y_tr, X_v, y_v = self._validate_data(X, y, X_val, y_val)
        scorer: BoundedScorer = cfg["scorer"]
        k = cfg.get("cv")
        # The number of classes enters balanced accuracy's sensitivity 2 / (K M). With public training labels it
        # is public; when training rows are sensitive it must not be read off them, so use K = 2, the largest
        # (most conservative) sensitivity for any K >= 2.
        n_classes = max(2, len(np.unique(y_tr))) if self.sensitive == "validation" else 2
        if k is not None:
            if X_v is not None:
                raise InvalidParameterError("Pass either cv or X_val/y_val to PrivateSearchCV.fit, not both.")
            n = X_tr.shape[0]
            if n < 2 * k:
                raise InvalidParameterError(f"cv={k} needs at least {2 * k} samples (2 per fold); got {n}.")
            m, n_train = n // k, n - (n + k - 1) // k  # the smallest validation fold, the smallest training part
            # one row sits in one validation fold: the mean over k folds moves by at most 1/k of a fold's sensitivity
            self.score_sensitivity_ = scorer.sensitivity(m, n_classes) / k
        else:
            if X_v is None:
                m = self._split_sizes(X_tr.shape[0], cfg["validation_size"])
                n_train = X_tr.shape[0] - m
            else:
                m, n_train = int(X_v.shape[0]), int(X_tr.shape[0])
            self.score_sensitivity_ = scorer.sensitivity(m, n_classes)
        budget = Budget(cfg["epsilon"], cfg["delta"])
        train_budget = budget
        if k is not None:  # the roles overlap: split the budget, compose the two at the end
            share = cfg["cv_validation_share"]
            budget = Budget(cfg["epsilon"] * share, cfg["delta"] * share)
            train_budget = Budget(cfg["epsilon"] * (1 - share), cfg["delta"] * (1 - share))
        study = journal = None
        if self.storage is not None:
            from privtune.storage import StudyStorage

            n_features = X_tr.shape[1] if X_tr.ndim > 1 else 1
            study = StudyStorage(self.storage).open(self.study_name or "default",
                                                    self._public_config(cfg, m, (n_train, n_features)))
        try:
            # Non-noise randomness (the split, the candidate set) is data-independent. A study stores its seeds so
            # that a resumed run rebuilds exactly the same split and candidates, even with secure noise.
            seeds = study.get("seeds") if study is not None else None
            if seeds is None:
                seeds = [int(g.integers(2**63)) for g in (source.numpy_generator(), source.numpy_generator())]
                if study is not None:
                    study.put("seeds", seeds)
            folds = None
            if k is not None:
                from sklearn.model_selection import KFold

                folds = list(KFold(n_splits=k, shuffle=True, random_state=seeds[0] % 2**32).split(X_tr))
            elif X_v is None:
                X_tr, y_tr, X_v, y_v = self._split(X_tr, y_tr, m, np.random.default_rng(seeds[0]))
            candidates = candidate_set(cfg["space"], cfg["n_candidates"], grid=self.candidate_grid,
                                       random_state=np.random.default_rng(seeds[1]))
            method = self._make_method(cfg, scorer, m, self.score_sensitivity_, budget)
            if study is not None:
                journal = study.journal()
                accountant = Accountant(budget, ledger=study.ledger)
            else:
                accountant = self.accountant if self.accountant is not None else Accountant(budget)
            return self._fit_search(cfg, scorer, method, train_budget, accountant, journal, study, candidates,
                                    source, X_tr, y_tr, X_v, y_v, m, fit_params, folds)
        finally:
            if study is not None:
                study.close()

    def _public_config(self, cfg: dict[str, Any], m: int, train_shape: tuple[int, ...]) -> dict[str, Any]:
        """What a study stores and compares on resume: public quantities only (no data, no hash of it)."""
        seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else None
        return {"estimator": repr(self.estimator), "search_space": {n: repr(d) for n, d in cfg["space"].items()},
                "method": self.method, "method_params": repr(sorted((self.method_params or {}).items())),
                "epsilon": cfg["epsilon"], "delta": cfg["delta"], "n_iter": cfg["n_iter"],
                "n_candidates": cfg["n_candidates"], "scoring": cfg["scorer"].name,
                "score_bounds": list(cfg["scorer"].bounds),
                "score_sensitivity": self.score_sensitivity_, "n_validation": m,
                "n_train": int(train_shape[0]), "n_features": int(train_shape[1]) if len(train_shape) > 1 else 1,
                "sensitive": self.sensitive, "seed": None if seed is None else int(seed)}

    def _fit_search(self, cfg, scorer, method, budget, accountant, journal, study, candidates, source,  # noqa: PLR0913
                    X_tr, y_tr, X_v, y_v, m, fit_params, folds=None) -> PrivateSearchCV:
        train_acc = self._training_accountant(budget, cfg, method, n_folds=len(folds) if folds else 1)

        estimator = self.estimator

        def fit_and_score(params: Mapping[str, Any], Xa: Any, ya: Any, Xb: Any, yb: Any) -> float:
            est = clone(estimator).set_params(**params)
            if train_acc is not None:
                est.set_params(accountant=train_acc)  # charges the shared training accountant before its access
            try:
                est.fit(Xa, ya, **fit_params)
                return scorer(est, Xb, yb)
            except Exception:  # noqa: BLE001 - the detail may depend on the data; never kept
                if self.error_score == "raise":
                    raise
                return scorer.bounds[0]

        def objective(params: Mapping[str, Any]) -> float:
            if folds is None:
                return fit_and_score(params, X_tr, y_tr, X_v, y_v)
            jobs = [(params, X_tr[tr], y_tr[tr], X_tr[va], y_tr[va]) for tr, va in folds]
            if self.n_jobs in (None, 1):
                scores = [fit_and_score(*j) for j in jobs]
            else:  # threads share the training accountant; processes would charge copies of it
                from joblib import Parallel, delayed

                scores = Parallel(n_jobs=self.n_jobs, backend="threading")(delayed(fit_and_score)(*j) for j in jobs)
            return float(np.mean(scores))

        progress = _Progress(cfg["n_iter"], cfg["verbose"] >= 1 and method.name != "random")
        user_callbacks = list(self.callbacks or [])

        def callback(record: Any) -> bool:
            progress(record)
            if cfg["verbose"] >= 2:
                _logger.info("iteration %d: epsilon spent %.4g, released score %s", record.iteration,
                             record.epsilon_spent, record.released_score)
            stop = False
            for cb in user_callbacks:
                stop = bool(cb(record)) or stop
            return stop

        mapper = self._mapper(threads=train_acc is not None) if (self.n_jobs not in (None, 1)) else None
        t_search = time.perf_counter()
        release = method.run(objective, candidates, accountant=accountant, random_state=source,
                             callback=callback, mapper=mapper, journal=journal)
        progress.close()

        self.candidates_ = candidates
        self.scorer_ = scorer
        self.multimetric_ = False
        self.release_ = release
        self.accountant_ = accountant
        self.training_accountant_ = train_acc
        self.guarantee_ = release.guarantee
        self.seeded_ = release.seeded
        self.n_iter_ = release.n_iter
        self.best_params_ = dict(release.params) if release.params is not None else None
        # Clipping the release to the declared bounds is post-processing: free, and never less accurate.
        self.best_score_ = (None if release.score is None
                            else float(min(scorer.bounds[1], max(scorer.bounds[0], release.score))))
        self.cv_results_ = self._cv_results(release, candidates)
        self.best_index_ = int(np.flatnonzero(self.cv_results_["selected"])[0]) if self.best_params_ else None
        self.n_splits_ = 1
        if self.refit and self.best_params_ is not None:
            best = clone(estimator).set_params(**self.best_params_)
            if train_acc is not None:
                best.set_params(accountant=train_acc)
            t0 = time.perf_counter()
            best.fit(X_tr, y_tr, **fit_params)
            self.refit_time_ = time.perf_counter() - t0
            self.best_estimator_ = best
        self.ledger_ = tuple(accountant.entries) + (tuple(train_acc.entries) if train_acc is not None else ())
        self.privacy_spent_ = self._privacy_spent(accountant, train_acc)
        self.search_time_ = time.perf_counter() - t_search
        self.summary_ = self._report(cfg, release, scorer, m, X_tr.shape[0])
        from privtune.report import TuningReport

        self.report_ = TuningReport.from_search(self)
        if study is not None:
            study.save_report(self.report_.to_dict())
            self.study_ = {"storage": study.storage.path, "study_name": study.name}
        _logger.info("private search done: method=%s, guarantee=%s, epsilon spent %.4g", method.name,
                     release.guarantee, self.privacy_spent_["overall"].epsilon)
        return self

    def _training_accountant(self, budget: Budget, cfg: dict[str, Any], method: Any,
                             n_folds: int = 1) -> Accountant | None:
        if self.sensitive == "validation":
            return None
        acc = Accountant(budget)
        eps_fit = self.estimator.get_params().get("epsilon")
        planned = getattr(self.estimator, "_fit_privacy_event", None)
        if callable(planned):  # privtune's DP classifiers: an event composing exactly like one fit's charge
            one_fit: Any = planned()
        elif isinstance(eps_fit, (int, float)) and eps_fit > 0:  # a pure-epsilon bound on one fit
            one_fit = EpsilonDeltaEvent(epsilon=float(eps_fit), label="one DP fit")
        else:
            one_fit = None
        if one_fit is not None:  # refuse an unaffordable plan up front
            n_evals = cfg["n_iter"] + (cfg["n_candidates"] if method.name == "lipschitz" else 0)
            n_fits = n_evals * n_folds + (1 if self.refit else 0)
            acc.check(SelfComposedEvent(event=one_fit, count=n_fits, relation="replace_one"))
        return acc

    def _mapper(self, threads: bool = False) -> Callable[..., list[Any]]:
        """A joblib map; threads when fits charge a shared training accountant (processes would charge copies)."""
        from joblib import Parallel, delayed

        n_jobs = self.n_jobs
        backend = "threading" if threads else None

        def mapper(fn: Callable[[Any], float], items: Sequence[Any]) -> list[Any]:
            return list(Parallel(n_jobs=n_jobs, backend=backend)(delayed(fn)(it) for it in items))
        return mapper

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
        finite = np.isfinite(scores)
        rank = np.full(len(rows), len(rows), dtype=np.int32)
        if finite.any():
            order = np.argsort(-scores[finite], kind="stable")
            ranks = np.empty(finite.sum(), dtype=np.int32)
            ranks[order] = np.arange(1, finite.sum() + 1)
            rank[finite] = ranks
        out["rank_test_score"] = rank
        out["selected"] = np.array([r["selected"] for r in rows], dtype=bool)
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

    def _report(self, cfg: dict[str, Any], release: Any, scorer: BoundedScorer, m: int, n_train: int) -> dict[str, Any]:
        by_phase = {p: b.to_dict() for p, b in self.accountant_.spent_by_phase().items()}
        if self.training_accountant_ is not None:
            by_phase.update({f"training:{p or 'fits'}": b.to_dict()
                             for p, b in self.training_accountant_.spent_by_phase().items()})
        est_params = {k: repr(v) for k, v in self.estimator.get_params(deep=False).items()}
        return {
            "configuration": {
                "estimator": type(self.estimator).__name__, "estimator_params": est_params,
                "method": self.method, "epsilon": cfg["epsilon"], "delta": cfg["delta"], "n_iter": cfg["n_iter"],
                "n_candidates": len(self.candidates_), "scoring": scorer.name, "score_bounds": list(scorer.bounds),
                "score_sensitivity": self.score_sensitivity_,
                "sensitive": self.sensitive, "relation": "replace_one",
                "n_validation": m, "n_train": n_train,
                "search_space": {n: repr(d) for n, d in self.candidates_.space.items()},
            },
            "release": release.to_dict(),
            "privacy_spent": {k: v.to_dict() for k, v in self.privacy_spent_.items()},
            "spent_by_phase": by_phase,
            "ledger": [e.to_dict() for e in self.ledger_],
            "guarantee": release.guarantee,
            "seed_policy": release.seed_policy,
        }
