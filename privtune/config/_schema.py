"""The configuration's error type, its constants and one frozen dataclass per table (the schema)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privtune.exceptions import InvalidParameterError

#: scikit-learn's bundled data sets (shipped with the package, never downloaded):
#: name -> (loader function in :mod:`sklearn.datasets`, number of rows, number of classes).
BUNDLED_DATASETS: dict[str, tuple[str, int, int]] = {
    "breast_cancer": ("load_breast_cancer", 569, 2),
    "wine": ("load_wine", 178, 3),
    "digits": ("load_digits", 1797, 10),
    "iris": ("load_iris", 150, 3),
}
_SCALERS = {
    "standard": "StandardScaler",
    "minmax": "MinMaxScaler",
    "robust": "RobustScaler",
    "maxabs": "MaxAbsScaler",
    "dp_standard": "DPStandardScaler",  # privtune.preprocessing: DP, with declared bounds (estimator.scaler_params)
}
#: The scalers that are DP themselves (allowed with sensitive training rows).
_DP_SCALERS = ("dp_standard",)
_SENSITIVE = ("validation", "training", "both")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_TABLES = ("estimator", "search_space", "data", "search", "storage", "report")
_REQUIRED_TABLES = ("estimator", "search_space", "data", "search")


class ConfigError(InvalidParameterError):
    """A configuration file is invalid.

    The message lists every problem found, one per line, each starting with the
    dotted key it concerns (``search.epsilon: expected a float > 0, got "one"``).

    Attributes
    ----------
    problems : list of (str, str)
        ``(key, message)`` pairs.
    """

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(f"{k}: {m}" for k, m in self.problems))

    @property
    def keys(self) -> list[str]:
        """The dotted keys with a problem."""
        return [k for k, _ in self.problems]


# -- TOML ---------------------------------------------------------------------------------------------


# -- configuration objects ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EstimatorConfig:
    """The ``[estimator]`` table.

    Attributes
    ----------
    class_path : str
        Import path of the estimator class (``"sklearn.svm.SVC"``).
    cls : type
        The imported class (a scikit-learn estimator).
    params : dict
        Constructor parameters.
    pipeline_scaler : str or None
        ``"standard"``, ``"minmax"``, ``"robust"``, ``"maxabs"``,
        ``"dp_standard"`` (:class:`privtune.preprocessing.DPStandardScaler`) or None.
    step_name : str or None
        The estimator's step name in the pipeline (``"svc"``) when wrapped.
    scaler_params : dict
        Constructor parameters of the scaler (``"dp_standard"``: its ``bounds``,
        ``epsilon``, ...).
    """

    class_path: str
    cls: type
    params: dict[str, Any]
    pipeline_scaler: str | None = None
    step_name: str | None = None
    scaler_params: dict[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        """A fresh, unfitted estimator (wrapped in a scaler pipeline if configured)."""
        est = self.cls(**self.params)
        if self.pipeline_scaler is None:
            return est
        from sklearn.pipeline import make_pipeline

        if self.pipeline_scaler in _DP_SCALERS:
            from privtune import preprocessing as dp_preprocessing

            scaler = getattr(dp_preprocessing, _SCALERS[self.pipeline_scaler])(**self.scaler_params)
        else:
            from sklearn import preprocessing

            scaler = getattr(preprocessing, _SCALERS[self.pipeline_scaler])(**self.scaler_params)
        return make_pipeline(scaler, est)


@dataclass(frozen=True)
class DataConfig:
    """The ``[data]`` table (paths are absolute, resolved against the config file's directory)."""

    bundled: str | None = None
    train: Path | None = None
    target: str | None = None
    validation: Path | None = None
    validation_size: float | None = None
    sensitive: str = "validation"
    columns: tuple[str, ...] | None = None
    n_validation: int | None = None
    n_classes: int | None = None


@dataclass(frozen=True)
class SearchConfig:
    """The ``[search]`` table: the :class:`~privtune.PrivateSearchCV` parameters."""

    epsilon: float
    method: str = "auto"
    delta: float = 1e-6
    n_iter: int = 20
    n_candidates: int = 256
    scoring: str = "accuracy"
    score_bounds: tuple[float, float] | None = None
    score_sensitivity: float | None = None
    min_class_size: int | None = None
    random_state: int | None = None
    method_params: dict[str, Any] = field(default_factory=dict)
    candidate_grid: list[dict[str, Any]] | None = None
    n_jobs: int | None = None
    error_score: str = "lower"


@dataclass(frozen=True)
class StorageConfig:
    """The ``[storage]`` table."""

    enabled: bool
    path: Path | None
    study_name: str


@dataclass(frozen=True)
class ReportConfig:
    """The ``[report]`` table: where to write the report files (None: not written)."""

    json: Path | None = None
    html: Path | None = None
    markdown: Path | None = None

    def outputs(self) -> dict[str, Path]:
        """``{format: path}`` of the files to write."""
        return {k: v for k, v in (("json", self.json), ("html", self.html), ("markdown", self.markdown))
                if v is not None}


@dataclass(frozen=True)
class TuneConfig:
    """A validated configuration file.

    Attributes
    ----------
    path : Path
        The configuration file.
    estimator : EstimatorConfig
    search_space : dict of {str: privtune.space.Dimension}
        With the pipeline step prefix already applied.
    data : DataConfig
    search : SearchConfig
    storage : StorageConfig
    report : ReportConfig
    """

    path: Path
    estimator: EstimatorConfig
    search_space: dict[str, Any]
    data: DataConfig
    search: SearchConfig
    storage: StorageConfig
    report: ReportConfig

    def make_search(self, *, verbose: int = 0, storage: bool = True) -> Any:
        """The configured :class:`~privtune.PrivateSearchCV` (unfitted).

        Parameters
        ----------
        verbose : int, default=0
            Passed to the search (1: progress bar).
        storage : bool, default=True
            Attach the study storage (when enabled in the configuration).
        """
        from privtune import PrivateSearchCV

        s = self.search
        use_storage = storage and self.storage.enabled
        return PrivateSearchCV(
            self.estimator.build(), dict(self.search_space), method=s.method, epsilon=s.epsilon, delta=s.delta,
            n_iter=s.n_iter, n_candidates=s.n_candidates, candidate_grid=s.candidate_grid, scoring=s.scoring,
            score_bounds=s.score_bounds, score_sensitivity=s.score_sensitivity, min_class_size=s.min_class_size,
            sensitive=self.data.sensitive,
            validation_size=self.data.validation_size if self.data.validation_size is not None else 0.3,
            refit=False, method_params=dict(s.method_params) or None,
            storage=str(self.storage.path) if use_storage else None,
            study_name=self.storage.study_name if use_storage else None,
            error_score=s.error_score, n_jobs=s.n_jobs, random_state=s.random_state, verbose=verbose)
