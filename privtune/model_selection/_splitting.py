"""The split of one table into training and validation parts, each part typed by its own rows (public).

A ``validation_size`` split never looks at the values (:meth:`_SplitMixin._split`);
each part that a whole-table read typed from every row is read again from its
own entries (:func:`_own_types`), so that no sensitive row decides the other
part's type. Also the count of distinct public labels (:func:`_n_distinct`).
Used by :class:`~privtune.model_selection._config._SearchConfigMixin`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.model_selection._inputs import frame_kind, rows, series_kind
from privtune.utils._validation import keep_entry_types


class _SplitMixin:
    """The public split of :class:`PrivateSearchCV`'s data (sizes, parts); static, no state."""

    @staticmethod
    def _split_sizes(n: int, validation_size: float) -> int:
        m = int(math.floor(validation_size * n))
        if m < 2 or n - m < 1:
            raise InvalidParameterError(
                f"The validation set has {m} sample(s) (validation_size={validation_size} of {n} samples); at "
                "least 2 validation samples and 1 training sample are needed. Pass X_val and y_val, or more data.")
        return m

    @staticmethod
    def _split(X: Any, y: Any, m: int, rng: np.random.Generator, *, positions: bool = False) -> tuple[Any, ...]:
        """Training and validation parts of one table, each part's types read from its own entries.

        The split never looks at the values. A table read as a whole takes its
        type from every row: one validation row with a string label (or cell)
        makes the whole column an object array, and scikit-learn refuses object
        labels, so every training fit would fail because of one sensitive row.
        Each part that came out as an object array (or column) is therefore read
        again from its own entries (:func:`~privtune.utils._validation.keep_entry_types`,
        pandas' ``infer_objects``), a string part gets its own width, a pandas
        categorical part keeps only the categories its own rows hold, and
        integral float labels become integers (:func:`_own_types`). Rows are
        taken by position in the caller's own container (a DataFrame stays one).
        With ``positions``, also returns the training part's positions (to
        slice per-sample fit parameters with them).
        """
        perm = rng.permutation(X.shape[0])
        val, tr = np.sort(perm[:m]), np.sort(perm[m:])
        parts = (_own_types(rows(X, tr)), _own_types(rows(y, tr), True), _own_types(rows(X, val)),
                 _own_types(rows(y, val), True))
        return (*parts, tr) if positions else parts


def _own_types(part: Any, labels: bool = False) -> Any:
    """A part of a split table, its type read from its own entries where the whole table's was set by all rows.

    An object array is re-read entry by entry; a string array gets the width of
    its own longest entry (a ``<U40`` column would tell a 40-character value in
    the other part); with ``labels``, floats that are all integral become int64
    (one label ``0.5`` or NaN among the validation rows made the whole column
    float, and a refit's ``classes_`` would show it). A pandas DataFrame or
    Series gets the same per column (:func:`_own_pandas_types`). Anything else
    unchanged.
    """
    if frame_kind(part) == "pandas" or series_kind(part) == "pandas":
        return _own_pandas_types(part, labels)
    if not isinstance(part, np.ndarray):
        return part
    if part.dtype.kind in "US":
        return np.array(part.tolist(), dtype=part.dtype.kind) if part.size else part
    if labels and part.dtype.kind == "f":
        with np.errstate(all="ignore"):
            if np.all(np.isfinite(part)) and np.all(part == np.round(part)) and np.all(np.abs(part) < 2.0**63):
                return part.astype(np.int64)
        return part
    if part.dtype != object:
        return part
    try:
        again = keep_entry_types(part.tolist())
    except Exception:  # noqa: BLE001 - a structure numpy cannot re-read: the part as it was
        return part
    return again if again.shape == part.shape else part  # cells that are sequences stay cells


def _own_pandas_types(part: Any, labels: bool) -> Any:
    """A pandas part of a split, each column typed by the part's own rows (see :func:`_own_types`).

    ``object`` columns are re-read by pandas' ``infer_objects`` (a column of
    integers stays ``object`` in the whole table when one row of the other part
    holds a string); a ``category`` column keeps the categories its own rows
    hold (the whole column's categories list every value of every row);
    with ``labels``, a float Series whose entries are all integral becomes
    ``int64``. A column that would become complex stays ``object``. Other
    dtypes (numbers, pandas 3's ``str``, nullable ``Int64`` / ``boolean``)
    carry nothing of the other part and are kept.
    """
    import pandas as pd

    def column(c: Any) -> Any:
        if isinstance(c.dtype, pd.CategoricalDtype):
            return c.cat.remove_unused_categories()
        if _is_object(c.dtype):
            inferred = c.infer_objects()
            # not complex: one complex cell would type the part's column complex, which every estimator refuses
            # (after the charge with sensitive training rows); left object, that cell is read as a non-number
            c = c if inferred.dtype.kind == "c" else inferred
        if labels and c.dtype.kind == "f":
            v = c.to_numpy()
            with np.errstate(all="ignore"):
                if np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2.0**63):
                    return c.astype(np.int64)
        return c

    if isinstance(part, pd.Series):
        return column(part)
    kinds = [isinstance(d, pd.CategoricalDtype) or _is_object(d) for d in part.dtypes]
    if not any(kinds):
        return part
    out = part.copy()
    for j, redo in enumerate(kinds):
        if redo:
            out.isetitem(j, column(part.iloc[:, j]))
    return out


def _is_object(dtype: Any) -> bool:
    """numpy's ``object`` dtype (not pandas' ``str``, whose kind is also ``"O"``)."""
    return isinstance(dtype, np.dtype) and dtype.kind == "O"


def _n_distinct(y: Any) -> int:
    """The number of distinct public training labels (``np.unique``; a pandas Series with missing values too)."""
    try:
        return len(np.unique(np.asarray(y)))
    except TypeError:  # entries numpy cannot order (pandas.NA, mixed types): count them by equality instead
        if series_kind(y) == "pandas":
            return int(y.nunique(dropna=False))
        seen: list[Any] = []
        for v in np.asarray(y, dtype=object).tolist():
            if not any(_same(v, w) for w in seen):
                seen.append(v)
        return len(seen)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or (a is b)
    except Exception:  # noqa: BLE001 - incomparable entries are different
        return a is b
