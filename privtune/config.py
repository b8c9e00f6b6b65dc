"""Study configuration files for ``privtune tune`` and ``privtune budget``.

A configuration is a TOML file with the tables ``[estimator]``, ``[search_space]``,
``[data]``, ``[search]``, ``[storage]`` and ``[report]`` (the schema is in
``docs/cli.md``). :func:`load_config` parses and validates the *whole* file
before anything else happens: every unknown key, wrong type, missing file or
unknown estimator class is reported with the dotted name of the key and what was
expected, e.g. ``search.epsilon: expected a float > 0, got "one"``. Nothing is
read from the data files by :func:`load_config` except the CSV header (column
names), and nothing is written anywhere.

:func:`public_sizes` returns the public sizes the privacy plan needs (the
validation size ``m`` and the number of classes) *without reading data values*:
from the configuration, by counting CSV rows, or from the known sizes of
scikit-learn's bundled data sets. :func:`load_data` reads the data for a run.
"""

from __future__ import annotations

import csv
import difflib
import importlib
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = [
    "BUNDLED_DATASETS",
    "ConfigError",
    "DataConfig",
    "EstimatorConfig",
    "ReportConfig",
    "SearchConfig",
    "StorageConfig",
    "TuneConfig",
    "load_config",
    "load_data",
    "public_sizes",
    "read_toml",
]

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
}
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
def _toml_module() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # pragma: no cover - Python 3.10 only
        import tomli

        return tomli
    except ImportError:  # pragma: no cover - Python 3.10 only
        raise ConfigError([("<config>", "reading TOML on Python 3.10 needs the 'tomli' package "
                                        "(pip install tomli), or use Python >= 3.11")]) from None


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a TOML file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        If the file is missing, unreadable or not valid TOML.
    """
    toml = _toml_module()
    p = Path(path)
    if not p.is_file():
        raise ConfigError([(str(p), "configuration file not found")])
    try:
        with open(p, "rb") as fh:
            return toml.load(fh)
    except toml.TOMLDecodeError as exc:
        raise ConfigError([(str(p), f"invalid TOML: {exc}")]) from None
    except OSError as exc:
        raise ConfigError([(str(p), f"cannot read the file: {exc.strerror}")]) from None


# -- value checking -----------------------------------------------------------------------------------
def _show(value: Any) -> str:
    """A value as TOML would spell it (for error messages)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return "an array"
    return repr(value)


_MISSING = object()


class _Table:
    """A TOML table being validated: typed getters that record problems under dotted keys."""

    def __init__(self, data: Mapping[str, Any], prefix: str, problems: list[tuple[str, str]]) -> None:
        self.data, self.prefix, self.problems = data, prefix, problems
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> None:
        self.problems.append((self.key(name), message))

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: Any = _MISSING, *, required: bool = False) -> Any:
        self.used.add(name)
        if name not in self.data:
            if required:
                self.error(name, "required key is missing")
            return default
        return self.data[name]

    def _typed(self, name: str, default: Any, required: bool, what: str, ok: Callable[[Any], bool]) -> Any:
        v = self.raw(name, _MISSING, required=required)
        if v is _MISSING:
            return default
        if not ok(v):
            self.error(name, f"expected {what}, got {_show(v)}")
            return _MISSING
        return v

    def float(self, name: str, default: Any = None, *, required: bool = False, low: float | None = None,
              high: float | None = None, low_closed: bool = False, high_closed: bool = False) -> Any:
        parts = []
        if low is not None:
            parts.append(f"{'>=' if low_closed else '>'} {low:g}")
        if high is not None:
            parts.append(f"{'<=' if high_closed else '<'} {high:g}")
        what = "a float" + (" " + " and ".join(parts) if parts else "")

        def ok(v: Any) -> bool:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return False
            if low is not None and (v < low or (v == low and not low_closed)):
                return False
            return not (high is not None and (v > high or (v == high and not high_closed)))

        v = self._typed(name, default, required, what, ok)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    def int(self, name: str, default: Any = None, *, required: bool = False, low: int | None = None,
            high: int | None = None) -> Any:
        parts = []
        if low is not None:
            parts.append(f">= {low}")
        if high is not None:
            parts.append(f"<= {high}")
        what = "an integer" + (" " + " and ".join(parts) if parts else "")

        def ok(v: Any) -> bool:
            return (isinstance(v, int) and not isinstance(v, bool) and (low is None or v >= low)
                    and (high is None or v <= high))

        return self._typed(name, default, required, what, ok)

    def bool(self, name: str, default: Any = None, *, required: bool = False) -> Any:
        return self._typed(name, default, required, "true or false", lambda v: isinstance(v, bool))

    def str(self, name: str, default: Any = None, *, required: bool = False,
            choices: tuple[str, ...] | list[str] | None = None) -> Any:
        if choices is None:
            return self._typed(name, default, required, "a non-empty string", lambda v: isinstance(v, str) and v != "")
        what = "one of " + ", ".join(json.dumps(c) for c in choices)
        return self._typed(name, default, required, what, lambda v: isinstance(v, str) and v in choices)

    def table(self, name: str, *, required: bool = False) -> Any:
        return self._typed(name, None, required, "a table", lambda v: isinstance(v, Mapping))

    def str_list(self, name: str) -> Any:
        return self._typed(name, None, False, "a non-empty array of distinct non-empty strings",
                           lambda v: isinstance(v, list) and len(v) > 0
                           and all(isinstance(s, str) and s for s in v) and len(set(v)) == len(v))

    def path(self, name: str, base: Path, *, required: bool = False, must_exist: bool = False) -> Any:
        v = self.str(name, required=required)
        if not isinstance(v, str):
            return v if v is _MISSING else None
        p = Path(os.path.expanduser(v))
        if not p.is_absolute():
            p = base / p
        if must_exist and not p.is_file():
            self.error(name, f"file not found: {str(p)!r}")
            return _MISSING
        return p

    def finish(self) -> None:
        """Record every key that no getter asked for as unknown."""
        for k in self.data:
            if k not in self.used:
                close = difflib.get_close_matches(k, sorted(self.used), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                expected = ", ".join(sorted(self.used))
                self.error(k, f"unknown key{hint}; expected one of: {expected}")


def _ok(*values: Any) -> bool:
    return all(v is not _MISSING for v in values)


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
        ``"standard"``, ``"minmax"``, ``"robust"``, ``"maxabs"`` or None.
    step_name : str or None
        The estimator's step name in the pipeline (``"svc"``) when wrapped.
    """

    class_path: str
    cls: type
    params: dict[str, Any]
    pipeline_scaler: str | None = None
    step_name: str | None = None

    def build(self) -> Any:
        """A fresh, unfitted estimator (wrapped in a scaler pipeline if configured)."""
        est = self.cls(**self.params)
        if self.pipeline_scaler is None:
            return est
        from sklearn import preprocessing
        from sklearn.pipeline import make_pipeline

        return make_pipeline(getattr(preprocessing, _SCALERS[self.pipeline_scaler])(), est)


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
    method: str = "random"
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


# -- sections -----------------------------------------------------------------------------------------
def _import_estimator(t: _Table, class_path: str) -> Any:
    from sklearn.base import BaseEstimator

    module_name, _, attr = class_path.rpartition(".")
    if not module_name or not re.fullmatch(r"[A-Za-z_][\w.]*", class_path):
        t.error("class", f"expected an import path such as \"sklearn.svm.SVC\", got {_show(class_path)}")
        return _MISSING
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        t.error("class", f"cannot import module {module_name!r} ({exc})")
        return _MISSING
    cls = getattr(module, attr, None)
    if cls is None:
        t.error("class", f"module {module_name!r} has no attribute {attr!r}")
        return _MISSING
    if not (inspect.isclass(cls) and issubclass(cls, BaseEstimator) and callable(getattr(cls, "fit", None))):
        t.error("class", f"expected a scikit-learn estimator class (a subclass of sklearn.base.BaseEstimator with "
                         f"fit), got {class_path!r}")
        return _MISSING
    return cls


_PARAM_RE = re.compile(r"The '([^']+)' parameter")


def _estimator_section(raw: Mapping[str, Any], problems: list[tuple[str, str]]) -> Any:
    t = _Table(raw, "estimator", problems)
    class_path = t.str("class", required=True)
    params = t.table("params")
    scaler = t.str("pipeline_scaler", "none", choices=["none", *_SCALERS])
    t.finish()
    if not isinstance(class_path, str):
        return _MISSING
    cls = _import_estimator(t, class_path)
    if cls is _MISSING or params is _MISSING or scaler is _MISSING:
        return _MISSING
    params = dict(params or {})
    known = set(cls._get_param_names())
    bad = False
    for k in params:
        if k not in known:
            close = difflib.get_close_matches(k, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append((f"estimator.params.{k}", f"{cls.__name__} has no parameter {k!r}{hint}"))
            bad = True
    if bad:
        return _MISSING
    try:
        est = cls(**params)
        if hasattr(est, "_validate_params") and hasattr(est, "_parameter_constraints"):
            est._validate_params()  # scikit-learn's own parameter constraints, before any data
    except (TypeError, ValueError) as exc:
        m = _PARAM_RE.search(str(exc))
        key = f"estimator.params.{m.group(1)}" if m and m.group(1) in params else "estimator.params"
        problems.append((key, str(exc)))
        return _MISSING
    step = None
    if scaler != "none":
        from sklearn.pipeline import make_pipeline

        step = make_pipeline(est).steps[0][0]
    return EstimatorConfig(class_path=class_path, cls=cls, params=params,
                           pipeline_scaler=None if scaler == "none" else scaler, step_name=step)


def _dimension(name: str, raw: Any, problems: list[tuple[str, str]]) -> Any:
    from privtune.space import Categorical, Integer, Real

    if not isinstance(raw, Mapping):
        problems.append((f"search_space.{name}",
                         f"expected a table {{ type = \"real\"|\"integer\"|\"categorical\", ... }}, got {_show(raw)}"))
        return _MISSING
    t = _Table(raw, f"search_space.{name}", problems)
    kind = t.str("type", required=True, choices=["real", "integer", "categorical"])
    try:
        if kind == "real":
            lo, hi = t.float("low", required=True), t.float("high", required=True)
            log = t.bool("log", False)
            t.finish()
            if _ok(lo, hi, log) and lo is not None and hi is not None:
                return Real(lo, hi, log=log)
        elif kind == "integer":
            lo, hi = t.int("low", required=True), t.int("high", required=True)
            log = t.bool("log", False)
            t.finish()
            if _ok(lo, hi, log) and lo is not None and hi is not None:
                return Integer(lo, hi, log=log)
        elif kind == "categorical":
            choices = t._typed("choices", None, True, "a non-empty array of strings, numbers or booleans",
                               lambda v: isinstance(v, list) and len(v) > 0
                               and all(isinstance(c, (str, int, float, bool)) for c in v))
            t.finish()
            if _ok(choices) and choices is not None:
                return Categorical(list(choices))
        else:
            t.used.update({"low", "high", "log", "choices"})
            t.finish()
    except InvalidParameterError as exc:
        problems.append((f"search_space.{name}", str(exc)))
    return _MISSING


def _search_space_section(raw: Mapping[str, Any], est: Any, problems: list[tuple[str, str]]) -> Any:
    if not raw:
        problems.append(("search_space", "expected at least one hyperparameter table, e.g. "
                                         "[search_space.C] type = \"real\" low = 0.1 high = 100 log = true"))
        return _MISSING
    space: dict[str, Any] = {}
    for name, spec in raw.items():
        dim = _dimension(name, spec, problems)
        if dim is _MISSING:
            continue
        full = name
        if isinstance(est, EstimatorConfig) and est.step_name and not name.startswith(est.step_name + "__"):
            full = f"{est.step_name}__{name}"
        if full in space:
            problems.append((f"search_space.{name}", f"names the same hyperparameter as another entry ({full!r})"))
            continue
        space[full] = dim
    if not isinstance(est, EstimatorConfig) or len(space) != len(raw):
        return _MISSING
    valid = set(est.build().get_params(deep=True))
    ok = True
    step = f"{est.step_name}__" if est.step_name else ""
    shown = sorted(p[len(step):] for p in valid if p.startswith(step) and "__" not in p[len(step):])
    for original, full in zip(raw, space, strict=True):
        if full not in valid:
            problems.append((f"search_space.{original}",
                             f"{est.cls.__name__} has no hyperparameter {original!r}; expected one of: "
                             f"{', '.join(shown)}"))
            ok = False
    return space if ok else _MISSING


def _csv_header(path: Path) -> list[str] | None:
    with open(path, newline="", encoding="utf-8") as fh:
        return next(csv.reader(fh), None)


def _data_section(raw: Mapping[str, Any], base: Path, problems: list[tuple[str, str]]) -> Any:
    t = _Table(raw, "data", problems)
    bundled = t.str("bundled", choices=list(BUNDLED_DATASETS))
    train = t.path("train", base, must_exist=True)
    target = t.str("target")
    validation = t.path("validation", base, must_exist=True)
    vsize = t.float("validation_size", low=0.0, high=1.0)
    sensitive = t.str("sensitive", "validation", choices=list(_SENSITIVE))
    columns = t.str_list("columns")
    n_validation = t.int("n_validation", low=2)
    n_classes = t.int("n_classes", low=2)
    t.finish()
    if bundled is None and not t.has("train"):
        t.error("bundled", f"[data] needs either bundled = one of {', '.join(map(json.dumps, BUNDLED_DATASETS))} "
                           "or train = \"path.csv\" with target = \"column\"")
    if bundled is not None and t.has("train"):
        t.error("train", "give either data.bundled or data.train, not both")
    if t.has("bundled") and t.has("target"):
        t.error("target", "data.target is for data.train files only (bundled data sets have their own target)")
    if t.has("bundled") and t.has("validation"):
        t.error("validation", "data.validation is for data.train files only; use data.validation_size with "
                              "bundled data")
    if t.has("train") and not t.has("target"):
        t.error("target", "required key is missing (the name of the target column of data.train)")
    if t.has("validation") and t.has("validation_size"):
        t.error("validation_size", "give either data.validation (a file) or data.validation_size (a share of "
                                   "data.train), not both")
    if isinstance(columns, list) and isinstance(target, str) and target in columns:
        t.error("columns", f"the target column {target!r} cannot also be a feature")
    # column names (the header only, never the values) of CSV files
    for key, p in (("train", train), ("validation", validation)):
        if isinstance(p, Path) and p.suffix.lower() not in _PARQUET_SUFFIXES:
            try:
                header = _csv_header(p)
            except (OSError, UnicodeDecodeError, csv.Error) as exc:
                t.error(key, f"cannot read the CSV header of {str(p)!r}: {exc}")
                continue
            if not header:
                t.error(key, f"{str(p)!r} is empty; expected a CSV file with a header row")
                continue
            wanted = ([target] if isinstance(target, str) else []) + (list(columns) if isinstance(columns, list)
                                                                    else [])
            missing = [c for c in wanted if c not in header]
            if missing:
                which = "columns" if isinstance(columns, list) and set(missing) <= set(columns) else "target"
                t.error(which, f"{str(p)!r} has no column(s) {missing}; its header is {header}")
        elif isinstance(p, Path):
            _check_parquet_support(t, key)
    if not _ok(bundled, train, target, validation, vsize, sensitive, columns, n_validation, n_classes):
        return _MISSING
    if validation is None and vsize is None:
        vsize = 0.3
    return DataConfig(bundled=bundled, train=train, target=target, validation=validation, validation_size=vsize,
                      sensitive=sensitive, columns=tuple(columns) if columns else None,
                      n_validation=n_validation, n_classes=n_classes)


def _check_parquet_support(t: _Table, key: str) -> None:
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        t.error(key, "reading Parquet files needs pandas and pyarrow (pip install pandas pyarrow); "
                     "or convert the file to CSV")


def _search_section(raw: Mapping[str, Any], problems: list[tuple[str, str]]) -> Any:
    from privtune.bo import METHODS
    from privtune.model_selection._scoring import BUILTIN_SCORERS

    t = _Table(raw, "search", problems)
    method = t.str("method", "random", choices=list(METHODS))
    epsilon = t.float("epsilon", required=True, low=0.0)
    delta = t.float("delta", 1e-6, low=0.0, high=1.0, low_closed=True)
    n_iter = t.int("n_iter", 20, low=1)
    n_candidates = t.int("n_candidates", 256, low=1, high=2**20)
    scoring = t.str("scoring", "accuracy", choices=list(BUILTIN_SCORERS))
    bounds = t._typed("score_bounds", None, False, "an array [lower, upper] of two floats with lower < upper",
                      lambda v: isinstance(v, list) and len(v) == 2
                      and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                              for x in v) and v[0] < v[1])
    sens = t.float("score_sensitivity", low=0.0)
    mcs = t.int("min_class_size", low=1)
    seed = t.int("random_state", low=0, high=2**63 - 1)
    mparams = t.table("method_params")
    grid = t._typed("candidate_grid", None, False, "an array of tables {name = value, ...}",
                    lambda v: isinstance(v, list) and len(v) > 0 and all(isinstance(g, Mapping) for g in v))
    n_jobs = t.int("n_jobs")
    error_score = t.str("error_score", "lower", choices=["lower", "raise"])
    t.finish()
    if n_jobs == 0:
        t.error("n_jobs", "expected a non-zero integer (joblib's convention: -1 = all cores), got 0")
        n_jobs = _MISSING
    if scoring == "balanced_accuracy" and mcs is None and sens is None:
        t.error("min_class_size", "required with scoring = \"balanced_accuracy\" (a public lower bound on the "
                                  "validation records per class)")
        mcs = _MISSING
    if scoring == "neg_log_loss" and sens is None and (bounds is None or (isinstance(bounds, list)
                                                                          and bounds[1] != 0)):
        t.error("score_bounds", "scoring = \"neg_log_loss\" needs score_bounds = [-C, 0] (per-row losses are "
                                "clipped to [0, C])")
        bounds = _MISSING
    if not _ok(method, epsilon, delta, n_iter, n_candidates, scoring, bounds, sens, mcs, seed, mparams, grid,
               n_jobs, error_score) or epsilon is None:
        return _MISSING
    mp = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(mparams or {}).items()}
    return SearchConfig(method=method, epsilon=epsilon, delta=delta, n_iter=n_iter, n_candidates=n_candidates,
                        scoring=scoring, score_bounds=(float(bounds[0]), float(bounds[1])) if bounds else None,
                        score_sensitivity=sens, min_class_size=mcs, random_state=seed, method_params=mp,
                        candidate_grid=[dict(g) for g in grid] if grid else None, n_jobs=n_jobs,
                        error_score=error_score)


def _storage_section(raw: Mapping[str, Any], base: Path, stem: str, sensitive: Any,
                     problems: list[tuple[str, str]]) -> Any:
    t = _Table(raw, "storage", problems)
    default_enabled = sensitive in (None, "validation", _MISSING)
    enabled = t.bool("enabled", default_enabled)
    path = t.path("path", base)
    name = t.str("study_name", stem)
    t.finish()
    if isinstance(name, str) and not re.fullmatch(r"[\w.\-]+", name):
        t.error("study_name", f"expected letters, digits, '_', '-' or '.', got {_show(name)}")
        name = _MISSING
    if enabled is True and sensitive in ("training", "both"):
        t.error("enabled", f"resumable storage supports data.sensitive = \"validation\" only (got "
                           f"{json.dumps(sensitive)}): set storage.enabled = false to run without a study file")
        enabled = _MISSING
    if not _ok(enabled, path, name):
        return _MISSING
    return StorageConfig(enabled=bool(enabled), path=(path or base / f"{stem}.sqlite") if enabled else None,
                         study_name=name)


def _report_section(raw: Mapping[str, Any] | None, base: Path, stem: str, problems: list[tuple[str, str]]) -> Any:
    t = _Table(raw or {}, "report", problems)
    out = {k: t.path(k, base) for k in ("json", "html", "markdown")}
    t.finish()
    if not _ok(*out.values()):
        return _MISSING
    if raw is None:
        out["json"] = base / f"{stem}.report.json"
    return ReportConfig(**out)


def load_config(path: str | os.PathLike[str]) -> TuneConfig:
    """Read and validate a ``privtune tune`` configuration file.

    Relative paths in the file are resolved against the file's directory. Only
    CSV headers are read from the data files; nothing is written.

    Parameters
    ----------
    path : str or os.PathLike
        The TOML file.

    Returns
    -------
    TuneConfig

    Raises
    ------
    ConfigError
        Listing every problem found, each with its dotted key.
    """
    p = Path(path).expanduser().resolve()
    raw = read_toml(p)
    base, stem = p.parent, p.stem
    problems: list[tuple[str, str]] = []
    top = _Table(raw, "", problems)
    sections = {name: top.table(name, required=name in _REQUIRED_TABLES) for name in _TABLES}
    top.finish()

    est = (_estimator_section(sections["estimator"], problems) if isinstance(sections["estimator"], Mapping)
           else _MISSING)
    space = (_search_space_section(sections["search_space"], est, problems)
             if isinstance(sections["search_space"], Mapping) else _MISSING)
    data = _data_section(sections["data"], base, problems) if isinstance(sections["data"], Mapping) else _MISSING
    search = _search_section(sections["search"], problems) if isinstance(sections["search"], Mapping) else _MISSING
    sensitive = data.sensitive if isinstance(data, DataConfig) else (
        sections["data"].get("sensitive") if isinstance(sections["data"], Mapping) else None)
    storage = (_storage_section(sections["storage"] or {}, base, stem, sensitive, problems)
               if sections["storage"] is not _MISSING else _MISSING)
    report = (_report_section(sections["report"], base, stem, problems)
              if sections["report"] is not _MISSING else _MISSING)
    if isinstance(data, DataConfig) and isinstance(search, SearchConfig) and data.sensitive != "validation" \
            and isinstance(est, EstimatorConfig):
        from privtune.model_selection._training import check_training_estimator

        if est.pipeline_scaler is not None:
            problems.append(("estimator.pipeline_scaler", f"a scaler fitted on sensitive training data (data.sensitive "
                             f"= {json.dumps(data.sensitive)}) is not private; remove it (privtune's DP estimators "
                             "take public bounds instead) or use sensitive = \"validation\""))
            data = _MISSING
        else:
            try:
                check_training_estimator(est.cls(**est.params), owner="privtune tune")
            except InvalidParameterError as exc:
                key = ("estimator.params.classes" if "classes=" in str(exc) else
                       "estimator.params.clip" if "clip=" in str(exc) else "data.sensitive")
                problems.append((key, f"data.sensitive = {json.dumps(data.sensitive)} declares the training data "
                                 f"sensitive, but {est.class_path} cannot be fitted on it: {exc}"))
                data = _MISSING
    if problems:
        raise ConfigError(problems)
    return TuneConfig(path=p, estimator=est, search_space=space, data=data, search=search, storage=storage,
                      report=report)


# -- data ---------------------------------------------------------------------------------------------
def _count_csv_rows(path: Path) -> int:
    """Number of data rows (records after the header), without interpreting any value."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        next(reader, None)
        return sum(1 for row in reader if row)


def _count_rows(path: Path) -> int:
    if path.suffix.lower() in _PARQUET_SUFFIXES:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)  # file metadata only
    return _count_csv_rows(path)


def public_sizes(data: DataConfig) -> tuple[int, int, str]:
    """The public sizes the privacy plan needs, without reading any data value.

    Parameters
    ----------
    data : DataConfig

    Returns
    -------
    n_validation : int
        ``data.n_validation`` if declared; else the row count of the validation
        file; else ``floor(validation_size * n)`` with ``n`` the row count of the
        training file or the known size of the bundled data set.
    n_classes : int
        ``data.n_classes`` if declared, else the bundled data set's, else 2 (only
        ``balanced_accuracy``'s sensitivity depends on it).
    source : str
        How ``n_validation`` was obtained (for display).
    """
    if data.n_classes is not None:
        k = data.n_classes
    elif data.bundled is not None:
        k = BUNDLED_DATASETS[data.bundled][2]
    else:
        k = 2
    if data.n_validation is not None:
        return data.n_validation, k, "declared in data.n_validation"
    if data.validation is not None:
        return _count_rows(data.validation), k, f"rows of {data.validation.name}"
    vs = data.validation_size if data.validation_size is not None else 0.3
    if data.bundled is not None:
        n, src = BUNDLED_DATASETS[data.bundled][1], f"bundled {data.bundled} ({BUNDLED_DATASETS[data.bundled][1]} rows)"
    else:
        assert data.train is not None
        n, src = _count_rows(data.train), f"{data.train.name} ({_count_rows(data.train)} rows)"
    return int(math.floor(vs * n)), k, f"validation_size {vs:g} of {src}"


def _parse_target(values: list[str]) -> np.ndarray:
    try:
        arr = np.array([float(v) for v in values])
    except ValueError:
        return np.array(values, dtype=object).astype(str)
    if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    return arr


def _read_csv(path: Path, key: str, target: str, columns: tuple[str, ...] | None) -> tuple[Any, Any, list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None) or []
        rows = [r for r in reader if r]
    feats = list(columns) if columns else [c for c in header if c != target]
    idx = {c: i for i, c in enumerate(header)}
    problems = [(f"data.{key}", f"{str(path)!r} has no column {c!r}") for c in [target, *feats] if c not in idx]
    if problems:
        raise ConfigError(problems)
    X = np.empty((len(rows), len(feats)), dtype=float)
    ti = idx[target]
    fi = [idx[c] for c in feats]
    ys: list[str] = []
    for r, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ConfigError([(f"data.{key}", f"{str(path)!r} line {r}: expected {len(header)} fields, got "
                                                f"{len(row)}")])
        for j, i in enumerate(fi):
            try:
                X[r - 2, j] = float(row[i])
            except ValueError:  # the value itself is not shown: it may be sensitive
                raise ConfigError([(f"data.{key}", f"{str(path)!r} line {r}, column {feats[j]!r}: expected a "
                                                    "number (features must be numeric)")]) from None
        if row[ti] == "":
            raise ConfigError([(f"data.{key}", f"{str(path)!r} line {r}: the target column {target!r} is empty")])
        ys.append(row[ti])
    if not np.all(np.isfinite(X)):
        raise ConfigError([(f"data.{key}", f"{str(path)!r}: features must be finite numbers (no NaN/inf)")])
    return X, _parse_target(ys), feats


def _read_parquet(path: Path, key: str, target: str, columns: tuple[str, ...] | None) -> tuple[Any, Any, list[str]]:
    import pandas as pd

    df = pd.read_parquet(path)
    feats = list(columns) if columns else [c for c in df.columns if c != target]
    missing = [c for c in [target, *feats] if c not in df.columns]
    if missing:
        raise ConfigError([(f"data.{key}", f"{str(path)!r} has no column(s) {missing}")])
    try:
        X = df[feats].to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise ConfigError([(f"data.{key}", f"{str(path)!r}: features must be numeric")]) from None
    return X, df[target].to_numpy(), feats


def _read_table(path: Path, key: str, target: str, columns: tuple[str, ...] | None) -> tuple[Any, Any, list[str]]:
    if path.suffix.lower() in _PARQUET_SUFFIXES:
        return _read_parquet(path, key, target, columns)
    return _read_csv(path, key, target, columns)


def load_data(data: DataConfig) -> tuple[Any, Any, Any, Any]:
    """Read the configured data.

    Parameters
    ----------
    data : DataConfig

    Returns
    -------
    X, y, X_val, y_val
        ``X_val`` and ``y_val`` are None when the validation split is made by
        :class:`~privtune.PrivateSearchCV` from ``validation_size``.

    Raises
    ------
    ConfigError
        For unreadable files, missing columns or non-numeric features (the
        offending values are never shown).
    """
    if data.bundled is not None:
        from sklearn import datasets

        bunch = getattr(datasets, BUNDLED_DATASETS[data.bundled][0])()
        X, y = np.asarray(bunch.data, dtype=float), np.asarray(bunch.target)
        if data.columns:
            names = [str(n) for n in bunch.feature_names]
            missing = [c for c in data.columns if c not in names]
            if missing:
                raise ConfigError([("data.columns", f"bundled {data.bundled} has no feature(s) {missing}; its "
                                                    f"features are {names}")])
            X = X[:, [names.index(c) for c in data.columns]]
        return X, y, None, None
    assert data.train is not None and data.target is not None
    X, y, feats = _read_table(data.train, "train", data.target, data.columns)
    if data.validation is None:
        return X, y, None, None
    X_val, y_val, _ = _read_table(data.validation, "validation", data.target, tuple(feats))
    return X, y, X_val, y_val
