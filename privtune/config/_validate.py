"""Validation of each table and :func:`load_config`: the whole file is checked before anything runs."""

from __future__ import annotations

import csv
import difflib
import importlib
import inspect
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privtune.config._schema import (
    _DP_SCALERS,
    _PARQUET_SUFFIXES,
    _REQUIRED_TABLES,
    _SCALERS,
    _SENSITIVE,
    _TABLES,
    BUNDLED_DATASETS,
    ConfigError,
    DataConfig,
    EstimatorConfig,
    ReportConfig,
    SearchConfig,
    StorageConfig,
    TuneConfig,
)
from privtune.config._toml import _MISSING, _ok, _show, _Table, read_toml
from privtune.exceptions import InvalidParameterError


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
    scaler_params = t.table("scaler_params")
    t.finish()
    if scaler_params not in (None, _MISSING) and scaler not in _DP_SCALERS:
        t.error("scaler_params", f"only with pipeline_scaler = \"dp_standard\" (got pipeline_scaler = {_show(scaler)})")
        scaler_params = _MISSING
    if scaler in _DP_SCALERS and scaler_params is not _MISSING:
        scaler_params = _dp_scaler_params(scaler_params or {}, problems)
    if not isinstance(class_path, str) or scaler_params is _MISSING:
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
                           pipeline_scaler=None if scaler == "none" else scaler, step_name=step,
                           scaler_params=dict(scaler_params or {}))


def _dp_scaler_params(raw: Mapping[str, Any], problems: list[tuple[str, str]]) -> Any:
    """``estimator.scaler_params`` of ``pipeline_scaler = "dp_standard"``: DPStandardScaler's parameters, checked."""
    from privtune.preprocessing import DPStandardScaler

    known = sorted(set(DPStandardScaler._get_param_names()) - {"accountant"})
    bad = False
    for k in raw:
        if k not in known:
            close = difflib.get_close_matches(k, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append((f"estimator.scaler_params.{k}", f"DPStandardScaler has no parameter {k!r}{hint}; "
                                                             f"expected one of: {', '.join(known)}"))
            bad = True
    if "bounds" not in raw:
        problems.append(("estimator.scaler_params.bounds", "required with pipeline_scaler = \"dp_standard\": the "
                         "public range of every feature, [lower, upper] (numbers, or arrays of one number per "
                         "feature), e.g. bounds = [0.0, 1000.0]; never read off the data"))
        bad = True
    if bad:
        return _MISSING
    params = {k: (tuple(v) if isinstance(v, list) and k == "bounds" else v) for k, v in raw.items()}
    bounds = params["bounds"]
    if not (isinstance(bounds, tuple) and len(bounds) == 2):
        problems.append(("estimator.scaler_params.bounds", f"expected [lower, upper], got {_show(raw['bounds'])}"))
        return _MISSING
    try:
        scaler = DPStandardScaler(**params)
        scaler._validate("DPStandardScaler")
        widths = {np.size(b) for b in bounds}
        scaler._declared_bounds(max(widths), "DPStandardScaler")  # a length mismatch is refused with the data
    except (InvalidParameterError, TypeError, ValueError) as exc:
        m = _PARAM_RE.search(str(exc))
        key = f"estimator.scaler_params.{m.group(1)}" if m and m.group(1) in params else "estimator.scaler_params"
        problems.append((key, str(exc)))
        return _MISSING
    return params


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
    """The header row: the first physical line only, decoded on its own (no byte of a data row is read)."""
    with open(path, "rb") as fh:
        first = fh.readline()
    line = first.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
    return next(csv.reader([line]), None) if line else None


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
    method = t.str("method", "auto", choices=["auto", *METHODS])
    epsilon = t.float("epsilon", required=True, low=0.0)
    delta = t.float("delta", 1e-6, low=0.0, high=1.0, low_closed=True)
    n_iter = t.int("n_iter", 20, low=1)
    n_candidates = t.int("n_candidates", 256, low=0, high=2**20)
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
    if n_candidates == 0 and grid is None:
        t.error("n_candidates", "0 is allowed only with a candidate_grid (the candidates are then exactly the grid)")
        n_candidates = _MISSING
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
    if scoring == "roc_auc" and mcs is None:
        t.error("min_class_size", "required with scoring = \"roc_auc\" (a public number M of validation records "
                                  "per class: each class counts at least M records, so that the sensitivity, "
                                  "3 / (2 M), holds whatever the private class counts)")
        mcs = _MISSING
    if scoring == "r2" and bounds is None:
        t.error("score_bounds", "scoring = \"r2\" needs score_bounds = [lower, upper] (r2 is unbounded below; "
                                "scores are clipped to the declared bounds, and their width is its sensitivity), "
                                "e.g. [-1.0, 1.0]")
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


def _storage_section(raw: Mapping[str, Any], base: Path, stem: str, problems: list[tuple[str, str]]) -> Any:
    t = _Table(raw, "storage", problems)
    enabled = t.bool("enabled", True)
    path = t.path("path", base)
    name = t.str("study_name", stem)
    t.finish()
    if isinstance(name, str) and not re.fullmatch(r"[\w.\-]+", name):
        t.error("study_name", f"expected letters, digits, '_', '-' or '.', got {_show(name)}")
        name = _MISSING
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
    storage = (_storage_section(sections["storage"] or {}, base, stem, problems)
               if sections["storage"] is not _MISSING else _MISSING)
    report = (_report_section(sections["report"], base, stem, problems)
              if sections["report"] is not _MISSING else _MISSING)
    if isinstance(data, DataConfig) and isinstance(search, SearchConfig) and data.sensitive != "validation" \
            and isinstance(est, EstimatorConfig):
        from privtune.model_selection._training import check_training_estimator

        if est.pipeline_scaler is not None and est.pipeline_scaler not in _DP_SCALERS:
            problems.append(("estimator.pipeline_scaler", f"a scaler fitted on sensitive training data (data.sensitive "
                             f"= {json.dumps(data.sensitive)}) is not private; use pipeline_scaler = \"dp_standard\" "
                             "(a DP scaler with declared bounds in estimator.scaler_params), scale the columns with "
                             "public constants before, or use sensitive = \"validation\""))
            data = _MISSING
        else:
            try:
                check_training_estimator(est.build(), owner="privtune tune")
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
