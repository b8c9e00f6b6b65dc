"""PrivateSearchCV: a scikit-learn search that releases its results under differential privacy.

This module holds the class and the search itself (``fit`` and its order of
stages); the parameters' checks are in ``_config.py``, the stages before any row
is read (plan, study, candidates, run) in ``_planning.py``, the work on public
training rows before any charge (screening, pre-flight, their failures) in
``_preflight.py``, the evaluation (training role, objective, charge, the
method's run) in ``_evaluation.py``, the release, refit and record in
``_release.py``, the training role (which DP fits are paid for, up front) in
``_training.py``, public pre-screening in ``_prescreen.py``, what it exposes
afterwards in ``_results.py``, input checks in ``_inputs.py``, and the frozen
objects the stages pass on (the settings, the plan, the data parts, the run)
in ``_plan.py``.

``fit`` reads top to bottom: ``_validate_params`` (the parameters alone) ->
``_plan`` (the inputs' public structure and sizes) -> ``_open_study`` ->
``_candidates`` (seeds, split or folds, candidate set) -> ``_open_run`` (the
validation accountant, its plan checked) -> ``_screen`` (public training rows
only, free) -> ``_fit_search``: ``_training`` (the training role, checked) ->
``_evaluation`` (the objective, nothing run) -> ``_pay`` (the training plan,
before the first fit) -> ``_evaluate`` (the method's run: each release charged
before its access) -> ``_release`` -> ``_refit`` -> ``_record``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sklearn.model_selection._search import BaseSearchCV

from privtune.accounting import Accountant
from privtune.exceptions import InvalidParameterError  # noqa: F401 - importable from here, as before the split
from privtune.logging import get_logger
from privtune.model_selection._config import _SearchConfigMixin

# re-exported: the names this module held before its stages got their own modules (issue 39)
from privtune.model_selection._evaluation import (  # noqa: F401 - re-exported
    _RAW_TRAJECTORY,
    CandidateFitError,
    _Evaluation,
    _SearchEvaluationMixin,
)
from privtune.model_selection._plan import SearchData, SearchPlan, SearchRun
from privtune.model_selection._planning import (  # noqa: F401 - re-exported
    _dtype_ships,
    _SearchPlanningMixin,
    _ships_by_dtype,
)
from privtune.model_selection._preflight import _EveryScreeningFitFailed, _PublicRowsMixin  # noqa: F401
from privtune.model_selection._release import _SearchReleaseMixin
from privtune.model_selection._results import _SearchResultsMixin
from privtune.model_selection._training import _TrainingRoleMixin

__all__ = ["PrivateSearchCV", "DEFAULT_METHOD"]

_logger = get_logger("privtune.model_selection")

#: The default release method: ``"auto"`` resolves to ``"prescreen"`` when the training rows are
#: public and given apart from the validation rows, else to ``"random"`` -- both unconditional, and the
#: lowest median and 90th-percentile regret in benchmarks/privacy_utility/privacy_utility.py (README, docs/methods.md).
DEFAULT_METHOD = "auto"


class PrivateSearchCV(_SearchConfigMixin, _SearchResultsMixin, _TrainingRoleMixin, _SearchPlanningMixin,
                      _PublicRowsMixin, _SearchEvaluationMixin, _SearchReleaseMixin, BaseSearchCV):
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
        Its fits are then paid for up front and each charges a throw-away
        per-fit accountant; an ``accountant`` you gave the estimator is charged
        the search's whole training plan as well (one entry, before the first
        fit and before the search's own training accountant), so it works as
        a cap shared across searches on the same rows: a plan it cannot pay
        for raises :class:`~privtune.exceptions.BudgetExceededError` before
        anything is read or spent. ``best_estimator_`` carries it again. A
        search space may not set ``accountant`` (with public training rows
        neither). With public training rows (``sensitive="validation"``) the
        fits read no sensitive row and the estimator's accountant (a nested
        step's too) is charged nothing: every fit, in this process or a
        worker, runs on a clone without it (each DP fit charges a throw-away
        accountant of its own), ``best_estimator_`` carries it again, and a
        :class:`~privtune.exceptions.PrivtuneWarning` says so before anything
        is read. (Each fit used to charge it: worker processes, holding a
        read-only copy, raised ``LedgerError``, and its ledger counted the
        fits, with random stopping the secret number of runs.)
    search_space : SearchSpace, dict or list of dict
        The hyperparameters to tune and their ranges (public): privtune's
        ``Real`` / ``Integer`` / ``Categorical``, or what ``RandomizedSearchCV``
        and ``GridSearchCV`` take, translated exactly without reading data
        (scipy.stats ``uniform`` / ``loguniform`` / ``randint`` -> ``Real`` /
        ``Integer``; a list -> ``Categorical``; a list of dicts of lists ->
        exactly that grid's points, ``n_candidates`` then unused). See
        :func:`privtune.space.as_search_space` and docs/coming_from_sklearn.md.
    method : {"auto", "random", "prescreen", "noisy-ucb", "gp-ucb", "gp-ucb-exact", "lipschitz"}, default="auto"
        The release method (see :mod:`privtune.bo`); ``"gp-ucb"`` is Kusner et al.'s
        Alg. 1 (conditional guarantee). ``"prescreen"`` (privtune's extension;
        public training rows only) ranks candidates by cross-validation on the
        training rows, for free, and runs ``random``'s private selection among
        the best (``method_params``: ``screen_budget``, ``screen_size``,
        ``screen_cv``, ``keep``; see :class:`~privtune.bo.PrescreenedRandomSearch`);
        its screening makes at most ``screen_budget`` fits on the public
        training rows, by default ``max(128, 12 * n_iter)``. Its plan and time
        are logged at INFO, and ``verbose=1`` shows its progress. ``"auto"``
        (the default) is ``"prescreen"`` when the training rows are public and
        apart from the validation rows
        (``sensitive="validation"``, no ``cv``, no ``selection`` in
        ``method_params``) and ``"random"`` otherwise: both have an
        unconditional guarantee, and they had the lowest median and
        90th-percentile regret in ``benchmarks/privacy_utility/privacy_utility.py``
        (docs/methods.md gives the figures and the range where they hold).
        With ``sensitive="training"`` (no ``cv``, no ``selection`` given,
        ``n_iter >= 2``, ``delta > 0``, an estimator whose declared fit random
        stopping can bound before the rows are known, and no accountant of
        its own without a delta) ``"auto"`` is ``random`` with random
        stopping (mean ``n_iter`` runs), the tuning method with the lowest
        regret there in ``benchmarks/privacy_utility/tuning_pays.py`` -- but
        on those tasks a single fit at the estimator's defaults with the whole
        budget did better still at epsilon >= 1 (docs/trainers.md).
        The resolved name is ``method_``. ``"lipschitz"`` (Kusner et al.'s
        Alg. 3, public training rows only) is unconditional only under your
        declarations (convex L2-regularised 1-Lipschitz training loss, an
        L-Lipschitz validation loss bounded by ``loss_bound``, lambda in
        ``lambda_bounds``); its path term also needs L to hold on *every
        possible* validation row, which privtune cannot enforce inside your
        estimator: rows outside that domain moved the released score by 13.8
        times its sensitivity, an open problem for which no bound is claimed
        (make L hold inside the estimator, e.g. a ``Normalizer`` step before a
        linear model with a margin loss). Along the raw-score paths
        (``gp-ucb``, ``gp-ucb-exact``, ``lipschitz``) a candidate visited
        again is fitted again (every fit is paid for, and their number must not
        show the path) but keeps the score of its first fit, so the loop
        observes one fixed function f(lambda), the score of the first fit at
        lambda (clipped to the score bounds), even when each fit draws fresh
        DP noise. ``gp-ucb`` (Alg. 1) adds Gaussian noise of its declared
        ``noise_std`` (GP units) to every observation, a fresh draw at each
        visit, as the paper's theorems assume; ``gp-ucb-exact`` (Alg. 2)
        observes the scores exactly. What their conditional guarantees assume
        about the observations is in docs/methods.md.
    epsilon : float in (0, inf), default=1.0
        Total epsilon of the search for each sensitive data role. (With random
        stopping and sensitive training data, the stopped search's one event is
        charged to both roles; with ``refit`` it gets ``epsilon`` minus one
        fit's epsilon, so that the training role can also pay for the refit.)
        With ``sensitive="training"`` it is the training role's ceiling only:
        the validation rows are public and that role spends nothing.
    delta : float in [0, 1), default=1e-6
        Total delta (the GP and Gaussian methods need delta > 0).
    n_iter : int, default=20
        Number of evaluations (or the mean number of runs with random stopping).
    n_candidates : int, default=256
        Size of the scrambled-Sobol candidate set Lambda (before de-duplication).
        0 is allowed with a ``candidate_grid``: Lambda is then exactly the grid.
        Unused when ``search_space`` is a list of dicts (a grid).
    candidate_grid : list of dict or None, default=None
        Extra candidate points (e.g. a user grid), added to Lambda, before the
        ``n_candidates`` Sobol points (which depend on ``random_state``); pass
        ``n_candidates=0`` to search the grid alone.
    scoring : str or callable, default="accuracy"
        ``"accuracy"``, ``"balanced_accuracy"``, ``"neg_zero_one_loss"``,
        ``"neg_log_loss"``, ``"r2"`` (sensitivity: the width of its declared
        ``score_bounds``), ``"roc_auc"`` (binary; with ``min_class_size``), or
        ``callable(estimator, X, y) -> float`` with declared ``score_bounds``.
        See :mod:`privtune.model_selection._scoring` for each sensitivity.
    score_bounds : (float, float) or None, default=None
        Declared score range (needed for callables, ``neg_log_loss`` and ``r2``).
    score_sensitivity : float or None, default=None
        Declared sensitivity of one score, overriding the scorer's rule (for a
        built-in scorer, at least its proven sensitivity: a smaller value is
        refused).
        (The value used is in ``score_sensitivity_`` after fit.)
    min_class_size : int or None, default=None
        Declared number M of validation records per class (``balanced_accuracy``,
        ``roc_auc``): each class counts at least M records in the score, so
        that the sensitivity holds whatever the private class counts (the
        usual score when every class has M records or more).
    sensitive : {"validation", "training", "both"}, default="validation"
        Which data roles are sensitive. Training privacy needs a privtune DP
        estimator; others are refused. With ``"training"`` the validation rows
        are public: the best candidate and its score are then computed exactly
        from the DP fits (post-processing), so the validation role spends
        nothing and adds no noise; ``random`` fits the same candidates as with
        a private selection (random stopping the same secret number of runs),
        and the GP methods run GP-UCB on the exact scores (only
        ``method_params={"kernel": ...}`` applies there). The guarantee is the
        training role's, unconditional
        (:class:`~privtune.bo.PostProcessingSelection`).
    validation_size : float in (0, 1) or None, default=None
        When ``fit`` receives no explicit validation set (``X_val``, ``y_val``) and
        no ``cv``, the share of rows put in the sensitive validation set by a
        random split that never looks at values. Required in that case: privtune
        does not split your data (and spend budget on it) unless you ask.
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
        Provide ``best_estimator_``, fitted on the training data with
        ``best_params_``. With public training data it is refitted. With
        sensitive training rows, one split (no ``cv``) and the ``random``
        method's exponential selection, it is the selected candidate's own DP
        fit (fitted on exactly those rows with that estimator, already paid
        for: releasing it is post-processing), so the training role pays for
        ``n_iter`` fits and no refit; otherwise (``cv``, random stopping, the
        GP methods) the refit is a new fit, planned and charged to the training
        role up front.
    method_params : dict or None, default=None
        Extra parameters of the release method (e.g. ``kernel``, ``noise_std``,
        ``selection_share``, ``observation_share``, ``selection``, ``A``, ``tau``).
        Not the privacy parameters derived from this search's own settings
        (``epsilon``, ``delta``, ``n_iter``, ``score_bounds``,
        ``score_sensitivity``, ``n_validation``): refused. ``subsample``
        (a fraction q in (0, 1); ``sensitive="training"``, one split, random
        stopping) is the search's own: subsampled tuning (Koskela & Kulkarni
        2023). The randomly stopped runs fit a secret, uniformly random subset
        of ``floor(q n)`` of the ``n`` training rows (drawn from the search's
        noise source, never shown), and ``best_estimator_`` is one more fit on
        all ``n`` rows with the chosen hyperparameters, carried over unchanged.
        The training role is charged the tuning phase's RDP curve amplified
        by sampling without replacement
        (:class:`~privtune.accounting.SubsampledEvent`) composed with that
        fit, before the first fit; the estimator's fits must be declared
        under replace-one. ``privacy_plan`` and ``largest_fit_epsilon`` need
        ``n_train`` then.
    accountant : Accountant or None, default=None
        Validation-role accountant to charge; ``None`` creates one with budget
        ``(epsilon, delta)``. Not combinable with ``storage``.
    storage : str, os.PathLike or None, default=None
        A SQLite file (or ``"sqlite:///path"``) holding the study: its public
        configuration, the privacy ledger (every charge committed before its data
        access), the released values and the report. A study that already
        exists is continued only when you ask for it (``resume=True``, as the
        command line's ``--resume``): fitting again then **resumes** the study
        after a crash (past charges count, are never repeated, and released
        observations are reused), and a completed study is loaded without
        spending anything (its stored release, whatever data you pass now).
        With sensitive training rows (``sensitive="training"`` or ``"both"``)
        the study also holds the training role's ledger (the fits' plan,
        committed before the first fit reads a row), and it is **not**
        resumed: its DP fits would run again and draw new noise on the training
        rows, a release no ledger paid for. A stored study of that kind that
        already holds a charge is refused before anything is read or spent;
        its file keeps what it spent (name a new study to search again, and
        count both).
    study_name : str or None, default=None
        The study's name in ``storage`` (default ``"default"``); it may not
        contain ``"::"`` (the training role's ledger is ``"<study>::training"``).
    resume : bool, default=False
        With ``storage``: continue the study ``study_name`` that already exists
        (a crashed one is resumed, a completed one loaded without evaluating or
        spending anything). ``False`` refuses an existing study before anything
        is read or spent, and ``True`` refuses a study that does not exist, each
        with a message saying what to do: a search fitted again on the same
        study used to return the old release silently, even on other data.
    error_score : "lower" or "raise", default="lower"
        What a candidate whose *fit* fails scores: the lower score bound, or stop
        with :class:`CandidateFitError` naming the candidate and the exception's
        type (never its text, which may quote data values). With public training
        rows a failure there is found before any charge (the screening or the
        pre-flight fit, see ``fit``): the candidate is left out (``"lower"``),
        or ``"raise"`` raises then, chained to the error (public). ``"raise"`` is
        refused when training data is sensitive (whether a fit fails would then
        be a release). Failures of ``predict`` / ``predict_proba`` on the
        sensitive validation rows never raise and never score a whole set: each
        failing or non-finite row gets the scorer's worst per-row value (row
        isolation, :mod:`privtune.model_selection._scoring`).
    n_jobs : int or None, default=None
        joblib parallelism for data-independent batches of evaluations; results
        are identical to ``n_jobs=1`` for a fixed seed (unless warnings are
        turned into errors: a parallel run silences the candidates' warnings,
        so a fit that would raise under ``-W error`` does not). Works under
        ``joblib.parallel_backend("dask")``. Random stopping and the raw-score
        methods (``gp-ucb``, ``gp-ucb-exact``, ``lipschitz``) evaluate in this
        process whatever ``n_jobs`` (a pool's task count would show their
        secret number of evaluations); with sensitive training rows, or
        object-dtype data or Python lists (judged from the containers as
        passed, before any conversion or split), workers are threads. Arrays are never
        memory-mapped to a temporary file for the workers.
    random_state : None, int or numpy Generator, default=None
        ``None``: cryptographically secure noise (for release). An int makes the
        run reproducible and labels it "seeded (reproducible, not for release)":
        the search's own noise, and every fit's, since each ``random_state``
        parameter of the estimator left at ``None`` (nested ones too) gets a
        seed derived from the search's for each fit (the candidate, its fold,
        its run), put back to ``None`` once the fit is done (``best_estimator_``
        carries no seed you did not choose). Parameters you set are never changed. With public training
        rows the fits are seeded that way in an unseeded search too (their
        randomness protects nothing; a resumed study rebuilds the same fits).
        With sensitive training rows an unseeded search leaves every DP fit's
        noise to the secure source, and refuses an estimator whose
        ``random_state`` is set (or searched over): the noise of fits on
        sensitive rows must not be reproducible from a seed under a "secure"
        label.
    callbacks : list of callable or None, default=None
        Each called with every :class:`~privtune.bo.IterationRecord` (released
        values only); one returning True stops the search. A stop does not
        lower what the search is charged: a stop decided on released values is
        bounded by the whole plan, not by the part that ran (Rogers et al.
        2016), so ``noisy-ucb`` charges the observations it will not run at the
        stop, as planned (ledger phase ``"observations_not_run"``), and
        ``privacy_spent_``, ``ledger_``, a stored study and the report state the
        whole plan's total. For ``gp-ucb``,
        ``gp-ucb-exact`` and ``lipschitz`` the records (and the progress and
        INFO lines) are delivered when the loop has finished: the moment each
        arrived would time each step of the raw-score trajectory. They cannot
        stop those methods; set ``n_iter`` instead.
    verbose : int, default=0
        1 shows a progress bar on stderr (plain lines, at most 4 per bar, when
        stderr is not a terminal; ``prescreen``'s screening has its own); 2
        also logs each iteration at INFO.

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
        a privatised score was released (NaN elsewhere), ``noise_std_test_score``,
        ``selected``, ``rank_test_score``: 1 for the released choice (``best_index_``),
        then the other rows in the order of their released noisy scores (methods
        that release observations), rows with no released score sharing the last
        rank. No raw score.
    privacy_spent_ : dict of {str: Budget}
        ``"validation"``, ``"training"`` and ``"overall"`` (the maximum over the
        disjoint roles: parallel composition).
    guarantee_ : {"unconditional", "conditional"}
        ``"conditional"`` for ``gp-ucb`` and ``gp-ucb-exact``: Kusner et al.'s
        theorem under the declared GP prior, for f(lambda) the score of the
        first fit at lambda clipped to the score bounds; it assumes an
        unbounded prior draw observed with the declared Gaussian noise
        (``gp-ucb`` adds it; none for ``gp-ucb-exact``), so it is not proven
        where a draw leaves the bounds (the report's
        ``guarantee["statement"]``, docs/methods.md).
    method_ : str
        The release method that ran (``method="auto"`` resolved).
    ledger_ : tuple of LedgerEntry
        Every charge, in order.
    accountant_ : Accountant
    release_ : privtune.bo.Release
    report_ : privtune.report.TuningReport
        The tuning report (versioned JSON, Markdown, self-contained HTML with plots).
    summary_ : dict
        The same facts as a plain dict: configuration, releases, events, budget per
        phase, guarantee label, seed policy.
    search_time_ : float or None
        Seconds of the whole search: ``prescreen``'s screening on the public
        training rows (or the fit tried on public rows before the first
        charge), the candidates' fits and their scoring; not the refit
        (``refit_time_``). A **local diagnostic**, never in the report or the
        study (scoring's row-isolation fallback makes it depend on a
        validation row). ``None`` for ``gp-ucb``, ``gp-ucb-exact``, ``lipschitz``
        and random stopping, whose amount of work depends on raw scores or on
        the secret number of runs.
    refit_time_ : float or None
        Seconds of the refit when the training data is public; ``None`` otherwise.
    candidates_ : privtune.space.CandidateSet
    scorer_ : BoundedScorer
    n_iter_ : int or None
    seeded_ : bool
    proxy_screening_ : dict or None
        With ``X_proxy``/``y_proxy``: the public summary of their screening
        (candidates screened and kept, folds, fits; no score). ``None``
        without proxy rows.

    Notes
    -----
    **Privacy.** The unit of privacy is one row; the relation is replace-one, so
    the sizes of the training and validation sets are public. With
    ``sensitive="validation"`` the training data is treated as public and the
    guarantee is the release method's (conditional for ``gp-ucb`` and
    ``gp-ucb-exact``). With training data sensitive, every fit is a privtune DP
    estimator charging a training accountant with the same budget (the
    estimator's own ``accountant``, if any, is charged the same plan); the
    training and validation rows are disjoint, so the overall guarantee is the
    maximum of the two (parallel composition). All charges are made before the data access
    they pay for; a configuration whose budget cannot cover its plan is refused
    before any data is read.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.svm import SVC
    >>> from privtune import PrivateSearchCV
    >>> from privtune.space import Real
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> space = {"C": Real(0.1, 100, log=True), "gamma": Real(1e-5, 1e-2, log=True)}
    >>> search = PrivateSearchCV(SVC(random_state=0), space, epsilon=1.0, n_iter=10, n_candidates=64,
    ...                          validation_size=0.3, random_state=0)
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
        validation_size: float | None = None,
        cv: int | None = None,
        cv_validation_share: float = 0.5,
        refit: bool = True,
        method_params: Mapping[str, Any] | None = None,
        accountant: Accountant | None = None,
        storage: Any = None,
        study_name: str | None = None,
        resume: bool = False,
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
        self.resume = resume
        self.error_score = error_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.callbacks = callbacks
        self.verbose = verbose

    # sklearn's BaseSearchCV hook; the search is run by fit itself.
    def _run_search(self, evaluate_candidates: Any) -> None:  # pragma: no cover
        raise NotImplementedError("PrivateSearchCV runs its own private search in fit().")

    # -- fit -------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, X_val: Any = None, y_val: Any = None, X_proxy: Any = None,
            y_proxy: Any = None, **fit_params: Any) -> PrivateSearchCV:
        """Run the private search.

        Parameters
        ----------
        X, y : array-like, pandas or polars DataFrame / Series
            Training data (or the whole data set, split by ``validation_size``
            when no validation set is given). A DataFrame reaches the
            estimator as a DataFrame, with its column names and dtypes (rows
            are taken by position), as in scikit-learn's searches; ``y`` may be
            a Series of any dtype (pandas' ``str``, ``category``, ``Int64``,
            ``boolean``, ``object``).
        X_val, y_val : array-like or None
            The sensitive validation set (public size m >= 2), with ``X``'s
            structure: the same kind of table, the same column names in the
            same order, the same number of features (refused otherwise, before
            anything is read or spent).
        X_proxy, y_proxy : array-like or None
            Public proxy rows (an older public release, a related public
            table, synthetic data) with ``X``'s structure. The candidates are
            ranked on them first by ordinary cross-validation, for free
            (``prescreen``'s schedule: at most ``max(128, 12 n_iter)`` fits of
            the estimator, without its accountants, on these rows only), and
            the search runs over the ``n_iter`` best. Refused with
            ``method="prescreen"``, which ranks on the public training rows.
            Only fit parameters that are not per-sample reach these fits.
            ``proxy_screening_`` summarises the screening (sizes and folds,
            no score). Whatever the proxy rows are, they are treated as public:
            never pass sensitive rows here.
        **fit_params : dict
            Passed to the estimator's ``fit``, as scikit-learn's searches pass
            them: one with an entry per row of ``X`` (``sample_weight``) is
            sliced with the rows of every fit (the ``validation_size`` split's
            training part, ``cv`` folds, ``prescreen``'s screening folds, the
            refit); with ``sklearn.set_config(enable_metadata_routing=True)``
            they are routed to what the estimator requests. A parameter the
            estimator's ``fit`` does not take, or a ``sample_weight`` of
            another length than ``X``, is refused up front. Scores on the
            validation rows are unweighted. ``groups`` (one label per training
            row) is the search's own: ``prescreen``'s screening folds are then
            ``GroupKFold`` folds; it is refused with ``validation_size``,
            ``cv`` and the other methods, which split no public rows by it.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            For any invalid parameter or input, before any data access or spend;
            also when every candidate fails to fit or score on the public
            training rows (scikit-learn's "All the n fits failed" message; at no
            cost), or when a stored study exists and ``resume`` is False.
        BudgetExceededError
            If the budget cannot cover the planned search, before any evaluation
            (and before any fit).
        CandidateFitError
            With ``error_score="raise"``: a candidate failed on the public
            training rows (before any charge, chained to its error), or its fit
            failed after the charge (its type only).

        Notes
        -----
        **Privacy.** Charges the validation role's plan (and, with sensitive
        training rows, the training role's) before the first access it pays
        for. With public training rows, the candidates are fitted and scored on
        them first, for free (``prescreen``'s screening, or one pre-flight fit
        of the first candidate: the search's own fit): what fails there is
        public, so it is left out with a ``FitFailedWarning`` (all of it:
        refused) before anything is spent, and its message is repeated. With
        sensitive training rows only the inputs' public structure is checked
        before the charge.
        """
        # The report's time stamp: when fit started, before any row is read (a finishing time would tell how long
        # the work on sensitive rows took).
        self._started_utc = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        settings = self._validate_params()  # the parameters alone
        plan, data = self._plan(settings, X, y, X_val, y_val, fit_params,  # + the inputs' public structure
                                (X_proxy, y_proxy))
        study = self._open_study(plan, data)  # everything that can refuse the configuration ran before it
        try:
            plan, data = self._candidates(plan, data, study)  # seeds, the split or folds, the candidate set
            run = self._open_run(plan, study)  # the validation accountant: its plan checked before any fit
            plan = self._screen(plan, data)  # public training rows: fitted there first, for free
            return self._fit_search(plan, data, run)  # pay -> evaluate -> release -> refit
        finally:
            if study is not None:
                study.close()

    def _fit_search(self, plan: SearchPlan, data: SearchData, run: SearchRun) -> PrivateSearchCV:
        """The search on the rows, once planned: pay -> evaluate -> release -> refit (the study is open).

        The training role's plan is checked, then charged before the first fit; the validation role's releases
        are charged by the method, each before its access.
        """
        role = self._training(plan, data, run)  # checked now, charged below (before the first fit)
        if self.sensitive != "validation":  # (public training rows: warned in fit, before their first fit)
            self._warn_low_utility(plan.method, plan.candidates, plan.scorer)  # before any data is read
        evaluation = self._evaluation(plan, data, role)
        self._pay(plan, run, role)
        release, search_seconds = self._evaluate(plan, run, evaluation)
        self._release(plan, run, role, release)
        self._refit(plan, data, role, evaluation)
        self._record(plan, data, run, role, release, search_seconds)
        return self
