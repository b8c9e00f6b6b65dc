"""The typed plan of a private search: what is decided before any row is read, apart from the rows themselves.

:class:`~privtune.model_selection.PrivateSearchCV` decides its whole search from
public information before it touches a sensitive row: the checked parameters
(:class:`SearchSettings`, from the parameters alone: ``privacy_plan`` and
``largest_fit_epsilon`` use them without data), then what ``fit`` adds from the
inputs' public structure and sizes, the seeds and the candidate set
(:class:`SearchPlan`). The parts of the data that the fits and the scores read
are held apart (:class:`SearchData`), as are the study, its validation
accountant and the noise source of one run (:class:`SearchRun`) and the training
role's accountant, plan and tickets (:class:`TrainingRole`).

All are frozen: a later stage makes a new object (:func:`dataclasses.replace`),
so a decision once made is never changed under a later step. They hold
references only (an accountant, a method object, a study are themselves
mutable), and none of them is kept on a fitted search: its attributes, pickle
and report are what they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SearchData", "SearchPlan", "SearchRun", "SearchSettings", "TrainingRole"]


@dataclass(frozen=True)
class SearchSettings:
    """The search's parameters once checked (``_validate_params``): decided from them alone, no input seen.

    Attributes
    ----------
    epsilon, delta : float
        The search's total budget for each sensitive role.
    n_iter : int
        The number of evaluations (the mean number of runs with random stopping).
    n_candidates : int
        The Sobol points of the candidate set (0 for a grid given as the search space).
    validation_size : float or None
        The share of a split's validation rows.
    verbose : int
    space : privtune.space.SearchSpace
    grid : list of dict or None
        The candidate grid (the search space's own grid points, then ``candidate_grid``).
    scorer : BoundedScorer
        The scorer before ``fit`` sets its number of classes.
    method : str
        The release method's name (``"auto"`` resolved).
    stopping : bool
        Random stopping (``random`` with ``selection="random-stopping"``).
    cv : int or None
    cv_validation_share : float or None
        Set with ``cv`` only.
    tags : PrivacyTags or None
        The estimator's declaration; sensitive training rows only.
    own_accountant : Accountant or None
        The estimator's own accountant, charged the training plan too; sensitive training rows only.
    one_fit : PrivacyEvent or None
        One fit's declared event; sensitive training rows only.
    one_fit_budget : Budget or None
        Its budget; sensitive training rows only.
    fit_rows : int or None
        The (public) number of rows every fit on sensitive training rows reads, when one split fixes it and the
        estimator's declaration depends on it (``_fit_privacy_event(n_samples=...)``: DP-SGD, the MLP): ``one_fit``
        is then the exact event of a fit on that many rows. ``None`` otherwise (the size-free declaration).
    public_fit_accountants : dict
        With public training rows, the estimator's accountants (by parameter name) that no fit charges; empty
        otherwise.
    subsample : float or None
        Subsampled tuning's fraction (``method_params["subsample"]``, :mod:`._subsampling`); None without it.
    tuning_rows, train_rows : int or None
        With ``subsample`` and the rows known: the secret tuning subset's size m and the training rows n (public).
    tuning_fit, tuning_fit_budget : PrivacyEvent, Budget or None
        With ``subsample``: one tuning fit's declared event (at m rows) and its budget.
    """

    epsilon: float
    delta: float
    n_iter: int
    n_candidates: int
    validation_size: float | None
    verbose: int
    space: Any
    grid: list[Mapping[str, Any]] | None
    scorer: Any
    method: str
    stopping: bool
    cv: int | None = None
    cv_validation_share: float | None = None
    tags: Any = None
    own_accountant: Any = None
    one_fit: Any = None
    one_fit_budget: Any = None
    fit_rows: int | None = None
    public_fit_accountants: Mapping[str, Any] = field(default_factory=dict)
    subsample: float | None = None
    tuning_rows: int | None = None
    train_rows: int | None = None
    tuning_fit: Any = None
    tuning_fit_budget: Any = None


@dataclass(frozen=True)
class SearchPlan:
    """What one ``fit`` decided before it reads a row: the settings, and what the public inputs added.

    Built by ``fit``'s checks from the settings and the inputs' public
    structure (``_plan``), then completed with the seeds, the folds and the
    candidate set (``_candidates``) and, with public training rows, narrowed to
    the candidates that fitted there (``_screen``): each stage a new object.

    Attributes
    ----------
    settings : SearchSettings
    source : privtune.utils._random.RandomSource
        The noise source (``random_state``): secure, or seeded.
    fit_estimator : estimator
        The estimator every fit clones: without its accountants when the training rows are public.
    ships : bool
        Whether the inputs, as passed, pickle whatever their values (judged from their dtypes): worker processes
        may be used.
    scorer : BoundedScorer
        The settings' scorer, with the number of classes its sensitivity assumes.
    n_classes : int
        That number K (public).
    n_validation : int
        m: the validation rows (with ``cv``, the smallest validation fold).
    n_train : int
        The training rows (with ``cv``, the smallest training part).
    sensitivity : float
        One released score's sensitivity (``score_sensitivity_``).
    budget, train_budget : Budget
        The validation and the training role's budgets.
    method : ReleaseMethod
        The release method, made for this budget and sensitivity.
    training_probe : array-like or None
        A pipeline's public probe row with sensitive training rows, built from the table as passed.
    seeds : sequence of int
        The split's and the candidate set's seeds (a study stores them).
    folds : list of (array, array) or None
        The ``cv`` folds' row positions.
    candidates : CandidateSet or None
        The candidate set the release method runs over.
    """

    settings: SearchSettings
    source: Any
    fit_estimator: Any
    ships: bool
    scorer: Any
    n_classes: int
    n_validation: int
    n_train: int
    sensitivity: float
    budget: Any
    train_budget: Any
    method: Any
    training_probe: Any = None
    seeds: Sequence[int] = ()
    folds: list[Any] | None = None
    candidates: Any = None

    @property
    def n_folds(self) -> int:
        """The fits per evaluation: the number of ``cv`` folds, else 1."""
        return len(self.folds) if self.folds else 1


@dataclass(frozen=True)
class SearchData:
    """The parts of the data that fits and scores read: the only rows of a search.

    Attributes
    ----------
    X_tr, y_tr : array-like
        The training rows (the whole table before a ``validation_size`` split, and with ``cv``).
    X_v, y_v : array-like or None
        The sensitive validation rows (None before a split, and with ``cv``).
    fit_params : FitParams
        The estimator's fit parameters, sliced with the rows of every fit.
    groups : array-like or None
        ``prescreen``'s screening groups, one per training row.
    proxy : (X_proxy, y_proxy) or None
        Public proxy rows the candidates are ranked on first, for free (:mod:`~privtune.model_selection._proxy`).
    """

    X_tr: Any
    y_tr: Any
    X_v: Any
    y_v: Any
    fit_params: Any
    groups: Any = None
    proxy: Any = None


@dataclass(frozen=True)
class SearchRun:
    """One run's state outside the plan: the study, the validation accountant, the journal, the start time.

    Attributes
    ----------
    study : Study or None
        The stored study (``storage``), open for this run.
    journal : Journal or None
        The study's journal of releases.
    accountant : Accountant
        The validation role's accountant (the study's ledger with ``storage``).
    t_start : float
        ``time.perf_counter()`` when the search started (``search_time_``), the screening or pre-flight included.
    """

    study: Any
    journal: Any
    accountant: Any
    t_start: float


@dataclass(frozen=True)
class TrainingRole:
    """The training role of one run: its accountant, the plan it is charged, the fits' tickets, the refit rule.

    ``accountant`` and ``tickets`` are None and ``plan`` is empty with public training rows; ``reuse`` is whether
    ``best_estimator_`` is the selected candidate's own DP fit (no refit).
    """

    accountant: Any
    plan: list[Any]
    tickets: Any
    reuse: bool
