"""Public sizes without reading values (:func:`public_sizes`) and reading the data for a run (:func:`load_data`)."""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from privtune.config._schema import _PARQUET_SUFFIXES, BUNDLED_DATASETS, ConfigError, DataConfig
from privtune.utils._validation import entrywise_float, keep_entry_types


# -- data ---------------------------------------------------------------------------------------------
def _csv_lines(path: Path) -> list[bytes]:
    """The file's physical lines (``\r\n`` or ``\n``), without their line ends."""
    return [line[:-1] if line.endswith(b"\r") else line for line in path.read_bytes().split(b"\n")]


def _count_csv_rows(path: Path) -> int:
    """Number of data rows: the non-empty physical lines after the header, without interpreting any value.

    Physical lines, not CSV records: in a file of sensitive rows one record's
    content (a stray quote) must not merge later records into it, which would
    make the row count -- the public ``m`` -- depend on a value. Files whose rows
    are sensitive are read line by line the same way (:func:`_read_csv`).
    """
    lines = _csv_lines(path)
    return sum(1 for line in lines[1:] if line)


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


def public_train_rows(data: DataConfig) -> int | None:
    """The number of training rows every fit of a one-split search reads, from row counts only (or None).

    With a validation file: the training file's rows; with a split (``validation_size``): the rows left after
    ``floor(validation_size * n)`` go to validation; with ``n_validation`` declared and no file to count, None. The
    plan of an estimator whose fit depends on that number (DP-SGD, the MLP), and subsampled tuning's
    (``method_params.subsample``), use it.
    """
    if data.bundled is not None:
        n = BUNDLED_DATASETS[data.bundled][1]
    elif data.train is not None:
        n = _count_rows(data.train)
    else:
        return None
    if data.validation is not None:
        return int(n)
    vs = data.validation_size if data.validation_size is not None else 0.3
    return int(n - math.floor(vs * n))


def _target_entry(v: str) -> Any:
    """One CSV target: an int if it is an integral number, a float if it is another number, else the string."""
    try:
        f = float(v)
    except ValueError:
        return v
    return int(f) if math.isfinite(f) and f == round(f) else f


def _parse_target(values: list[str]) -> np.ndarray:
    """The targets, each read on its own (never re-typed by another: one label must not change the others).

    All numbers: int64 when every one is integral, else float64; all strings: a
    string array. A mix: an object array of the entries as :func:`_target_entry`
    reads them, so that ``1`` still equals a prediction ``1`` (before, one string
    turned every target into a string).
    """
    try:
        arr = np.array([float(v) for v in values])
    except ValueError:
        entries = [_target_entry(v) for v in values]
        if all(isinstance(e, str) for e in entries):
            return np.array(values, dtype=object).astype(str)
        return np.array(entries, dtype=object)
    if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)) and np.all(np.abs(arr) < 2.0**63):
        return arr.astype(np.int64)  # in range: the cast cannot overflow (nor warn because of one label)
    return arr


def _sensitive_record(line: str) -> list[str]:
    """One physical line of a file of sensitive rows as CSV fields; ``[]`` (an unreadable record) if the csv
    module refuses it (a field over its size limit, a bare carriage return): never an error that one row's
    content decides."""
    try:
        return next(csv.reader([line]), [""])
    except csv.Error:
        return []


def _read_csv(path: Path, key: str, target: str, columns: tuple[str, ...] | None,
              strict: bool = True) -> tuple[Any, Any, list[str]]:
    """Read a CSV file. ``strict`` (a public file): refuse a bad cell, naming its line and column. Otherwise the
    file holds sensitive rows and nothing is refused for its values (DESIGN rule 7): a feature cell that is not a
    number becomes NaN (the estimators and the search's row isolation map it), an empty target is kept as an
    empty label, a record with the wrong number of fields (an unquoted comma in a value, say) or that the csv module
    cannot read (a field over its size limit, a bare carriage return) becomes all-NaN features with an empty label,
    every physical line is one record (an embedded newline, even quoted, starts a new one; a stray quote cannot
    merge records, so the row count stays the public one), bytes that are not UTF-8 are replaced, and no message
    names a line or a column of a value."""
    if strict:  # a public file: CSV records (quoted fields may span lines), UTF-8 required
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            try:
                header = next(reader, None) or []
                rows = [r for r in reader if r]
            except csv.Error as exc:  # a public file: its line may be named
                raise ConfigError([(f"data.{key}", f"{str(path)!r} line {reader.line_num}: not valid CSV "
                                                    f"({exc})")]) from None
    else:  # sensitive rows: one physical line is one record, whatever a value holds (quotes, bad bytes)
        lines = [line.decode("utf-8", errors="replace") for line in _csv_lines(path)]
        try:
            header = next(csv.reader(lines[:1]), []) if lines else []
        except csv.Error:  # the header names the (public) columns
            raise ConfigError([(f"data.{key}", f"{str(path)!r}: the header line is not valid CSV")]) from None
        rows = [_sensitive_record(line) for line in lines[1:] if line]
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
        if len(row) != len(header):  # a record's layout can depend on its values (an unquoted comma)
            if not strict:
                X[r - 2] = math.nan  # the whole record is unreadable: no feature, a label matching nothing
                ys.append("")
                continue
            raise ConfigError([(f"data.{key}", f"{str(path)!r} line {r}: expected {len(header)} fields, got "
                                                f"{len(row)}")])
        for j, i in enumerate(fi):
            try:
                X[r - 2, j] = float(row[i])
            except ValueError:  # the value itself is not shown: it may be sensitive
                if not strict:
                    X[r - 2, j] = math.nan
                    continue
                raise ConfigError([(f"data.{key}", f"{str(path)!r} line {r}, column {feats[j]!r}: expected a "
                                                    "number (features must be numeric)")]) from None
        if row[ti] == "" and strict:
            raise ConfigError([(f"data.{key}", f"{str(path)!r} line {r}: the target column {target!r} is empty")])
        ys.append(row[ti])
    if strict and not np.all(np.isfinite(X)):
        raise ConfigError([(f"data.{key}", f"{str(path)!r}: features must be finite numbers (no NaN/inf)")])
    return X, _parse_target(ys), feats


def _read_parquet(path: Path, key: str, target: str, columns: tuple[str, ...] | None,
                  strict: bool = True) -> tuple[Any, Any, list[str]]:
    import pandas as pd

    df = pd.read_parquet(path)
    feats = list(columns) if columns else [c for c in df.columns if c != target]
    missing = [c for c in [target, *feats] if c not in df.columns]
    if missing:
        raise ConfigError([(f"data.{key}", f"{str(path)!r} has no column(s) {missing}")])
    try:
        X = df[feats].to_numpy(dtype=float)
    except (TypeError, ValueError):
        if strict:
            raise ConfigError([(f"data.{key}", f"{str(path)!r}: features must be numeric")]) from None
        X = entrywise_float(df[feats].to_numpy(dtype=object))  # sensitive rows: NaN where not a number
    if strict and not np.all(np.isfinite(X)):  # a public file: as for CSV
        raise ConfigError([(f"data.{key}", f"{str(path)!r}: features must be finite numbers (no NaN/inf)")])
    if strict and bool(df[target].isna().any()):
        raise ConfigError([(f"data.{key}", f"{str(path)!r}: the target column {target!r} has empty values")])
    return X, keep_entry_types(df[target].to_numpy()), feats


def _read_table(path: Path, key: str, target: str, columns: tuple[str, ...] | None,
                strict: bool = True) -> tuple[Any, Any, list[str]]:
    read = _read_parquet if path.suffix.lower() in _PARQUET_SUFFIXES else _read_csv
    if strict:
        return read(path, key, target, columns, strict)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # sensitive rows: no warning may depend on one
        warnings.simplefilter("ignore")
        return read(path, key, target, columns, strict)


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
        For unreadable files, missing columns, or -- in a *public* training
        file only (``sensitive = "validation"`` with a separate validation
        file) -- a record with the wrong number of fields, non-numeric or
        non-finite features and empty targets (the offending values are never
        shown). A file holding sensitive rows is never refused for its values:
        a feature cell that is not a number becomes NaN, a record with the wrong
        number of fields becomes all-NaN features with an empty label, and each
        target is read on its own.
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
    # The training file is public only when the validation rows come from their own file and only they are
    # sensitive; otherwise it holds sensitive rows (all of them, or the validation split's): nothing in it is
    # refused for its values, and no message points at a value's line or column.
    public_train = data.sensitive == "validation" and data.validation is not None
    X, y, feats = _read_table(data.train, "train", data.target, data.columns, strict=public_train)
    if data.validation is None:
        return X, y, None, None
    X_val, y_val, _ = _read_table(data.validation, "validation", data.target, tuple(feats), strict=False)
    return X, y, X_val, y_val
