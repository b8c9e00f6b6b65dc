"""PrivateSearchCV: a scikit-learn search that releases its results under differential privacy.

This module holds the class and the search itself (``fit``); its set-up before
any data is read is in ``_config.py``, the training role (which DP fits are paid
for, up front) in ``_training.py``, public pre-screening in ``_prescreen.py``,
what it exposes afterwards in ``_results.py``, input checks in ``_inputs.py``,
and the frozen objects the stages pass on (the settings, the plan, the data
parts, the run) in ``_plan.py``.

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

import contextlib
import copy
import datetime
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection._search import BaseSearchCV

from privtune.accounting import Accountant, ComposedEvent
from privtune.exceptions import (
    BudgetExceededError,
    InvalidParameterError,
    LedgerError,
    LowUtilityWarning,
    PrivtuneError,
)
from privtune.logging import get_logger
from privtune.model_selection._config import _SearchConfigMixin
from privtune.model_selection._inputs import (
    PREFLIGHT_ROWS,
    RESPONSE_METHOD,
    _params_key,
    all_failed_message,
    check_estimator_type,
    check_public_score,
    check_sensitive_structure,
    failure_summary,
    frame_kind,
    lacks_response_method,
    n_columns,
    n_rows,
    rows,
    some_failed_message,
    subset,
)
from privtune.model_selection._parallel import make_mapper
from privtune.model_selection._plan import SearchData, SearchPlan, SearchRun, SearchSettings, TrainingRole
from privtune.model_selection._prescreen import screen_on_public_rows
from privtune.model_selection._progress import _Progress
from privtune.model_selection._results import _SearchResultsMixin
from privtune.model_selection._scoring import BoundedScorer
from privtune.model_selection._seeding import CANDIDATE, REFIT, FitSeeder
from privtune.model_selection._training import (
    FitTickets,
    _RunKeeper,
    _TrainingRoleMixin,
    charge_training_plan,
    check_candidate_plans,
    fit_training,
    is_pipeline,
    public_probe,
    refuse_spent_training_study,
    set_fit_accountant,
    without_accountants,
)
from privtune.model_selection._utility import utility_warnings
from privtune.space import candidate_set
from privtune.utils._random import check_random_state

__all__ = ["PrivateSearchCV", "DEFAULT_METHOD"]

_logger = get_logger("privtune.model_selection")

#: The default release method: ``"auto"`` resolves to ``"prescreen"`` when the training rows are
#: public and given apart from the validation rows, else to ``"random"`` -- both unconditional, and the
#: lowest median and 90th-percentile regret in benchmarks/privacy_utility/privacy_utility.py (README, docs/methods.md).
DEFAULT_METHOD = "auto"


class CandidateFitError(PrivtuneError, RuntimeError):
    """Fitting a candidate failed and ``error_score="raise"`` asked to stop (public training data only).

    The message names the candidate and the exception's type, never its text
    (which may quote data values).
    """


class _EveryScreeningFitFailed(Exception):
    """Every candidate of a ``prescreen`` screening round failed (internal: the search tries all the rows)."""

    def __init__(self, failures: list[tuple[Mapping[str, Any], str, Any]], n_tried: int) -> None:
        super().__init__(f"every one of the {n_tried} screened candidates failed")
        self.failures, self.n_tried = failures, n_tried


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


class PrivateSearchCV(_SearchConfigMixin, _SearchResultsMixin, _TrainingRoleMixin, BaseSearchCV):
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
        estimator; others are refused.
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
        ``score_sensitivity``, ``n_validation``): refused.
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

    # sklearn's BaseSearchCV hook; the search is run by fit itself.
    def _run_search(self, evaluate_candidates: Any) -> None:  # pragma: no cover
        raise NotImplementedError("PrivateSearchCV runs its own private search in fit().")

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

    # -- fit -------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, X_val: Any = None, y_val: Any = None, **fit_params: Any) -> PrivateSearchCV:
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
        plan, data = self._plan(settings, X, y, X_val, y_val, fit_params)  # + the inputs' public structure
        study = self._open_study(plan, data)  # everything that can refuse the configuration ran before it
        try:
            plan, data = self._candidates(plan, data, study)  # seeds, the split or folds, the candidate set
            run = self._open_run(plan, study)  # the validation accountant: its plan checked before any fit
            plan = self._screen(plan, data)  # public training rows: fitted there first, for free
            return self._fit_search(plan, data, run)  # pay -> evaluate -> release -> refit
        finally:
            if study is not None:
                study.close()

    def _plan(self, settings: SearchSettings, X: Any, y: Any, X_val: Any, y_val: Any,
              fit_params: Mapping[str, Any]) -> tuple[SearchPlan, SearchData]:
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
        data = SearchData(X_tr, y_tr, X_v, y_v, params, groups)
        scorer: BoundedScorer = settings.scorer
        # K from the training labels only when they are public *and* apart from the validation rows: before a
        # validation_size split, y still holds the validation labels (K must not depend on them).
        n_classes = self._n_classes(settings, y_tr if X_v is not None else None)
        if scorer.aggregate == "balanced":  # the score averages over at least the K its sensitivity assumes
            scorer = scorer.with_n_classes(n_classes)
        m, n_train, sensitivity = self._sizes(settings, scorer, n_classes, data)
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

    def _screen(self, plan: SearchPlan, data: SearchData) -> SearchPlan:
        """With public training rows, the candidates fitted there before anything is spent: the plan narrowed.

        ``prescreen`` ranks them on the public training rows (free, reproducible from the seeds) and keeps the
        best; the other methods fit one candidate there (:meth:`_preflight`). The plan's ``LowUtilityWarning`` s
        are issued here, before any charge and any validation row. With sensitive training rows nothing is fitted
        here (the plan as it is).
        """
        settings, method, scorer, candidates = plan.settings, plan.method, plan.scorer, plan.candidates
        if settings.method == "prescreen":  # public training rows only: free, and reproducible from the seeds
            try:
                kept = screen_on_public_rows(
                    plan.fit_estimator, method, scorer, candidates, data.X_tr, data.y_tr, plan.seeds, data.fit_params,
                    n_jobs=self.n_jobs, label=self._method_label(settings), groups=data.groups,
                    verbose=settings.verbose,
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
                return fit_and_score(params, X_tr, y_tr, X_v, y_v, 0, run)
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
                set_fit_accountant(best, FitTickets(tickets.budget, 1).accountant())
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
