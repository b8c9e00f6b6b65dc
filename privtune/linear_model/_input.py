"""Input checks of the DP estimators that never quote a data value (internal).

scikit-learn's validation messages can quote the offending values ("could not
convert string to float: 'ALICE'", "array=[...]"). Here the *schema* (number of
dimensions, rows and features) is checked from the inputs' structure, and a
conversion failure is reported by its kind only.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import validate_data

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import entrywise_float, keep_entry_types

__all__ = ["_public_shape", "_public_defects", "_numeric_table", "_numeric_rows"]


def _public_defects(X: Any, owner: str) -> None:
    """Refuse what the container's structure shows can never be read, before any charge (no value is read).

    A complex dtype (of a numpy array, or of a DataFrame's column: the dtypes
    of a container as passed are public, see docs/privacy_model.md), and
    column names that mix strings and other types, which scikit-learn's
    ``validate_data`` refuses in every fit (its message names the types only).
    """
    if getattr(getattr(X, "dtype", None), "kind", None) == "c":
        raise InvalidParameterError(f"Complex data not supported ({owner}: X has a complex dtype).")
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns"):
        try:
            kinds = [getattr(d, "kind", None) for d in dtypes]
        except TypeError:  # pragma: no cover - a table whose dtypes do not iterate
            kinds = []
        if "c" in kinds:
            raise InvalidParameterError(f"Complex data not supported ({owner}: a column of X has a complex dtype).")
        from sklearn.utils.validation import _get_feature_names

        try:
            _get_feature_names(X)
        except TypeError as exc:  # column names of mixed types: the message names their types, never a value
            raise InvalidParameterError(f"{owner}: {exc}") from None


def _public_shape(X: Any, y: Any, owner: str) -> tuple[int, int]:
    """(n_samples, n_features) from the inputs' structure only: no value is read or checked."""
    if y is None:
        raise InvalidParameterError(f"{owner} requires y to be passed, but the target y is None.")
    shape = getattr(X, "shape", None)
    if shape is None:
        try:
            shape = np.asarray(X, dtype=object).shape
        except Exception:  # noqa: BLE001 - ragged input
            raise InvalidParameterError(f"{owner}.fit: X must be a 2-D array-like (n_samples, n_features).") from None
    if len(shape) != 2:
        raise InvalidParameterError(
            f"{owner}.fit: X must be 2-D (n_samples, n_features); got an array with {len(shape)} dimension(s).")
    _public_defects(X, f"{owner}.fit")
    try:
        y_shape = getattr(y, "shape", None) or np.asarray(y, dtype=object).shape
    except Exception:  # noqa: BLE001
        raise InvalidParameterError(f"{owner}.fit: y must be a 1-D array-like (n_samples,).") from None
    if len(y_shape) == 2 and y_shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is ravelled.",
                      DataConversionWarning, stacklevel=3)
    elif len(y_shape) != 1:
        raise InvalidParameterError(f"{owner}.fit: y must be 1-D (n_samples,); got shape {tuple(y_shape)}.")
    n_y = y_shape[0]
    if n_y != shape[0]:
        raise InvalidParameterError(f"{owner}.fit: X has {shape[0]} rows but y has {n_y}.")
    if shape[0] < 1 or shape[1] < 1:
        raise InvalidParameterError(
            f"Found array with {shape[0]} sample(s) and {shape[1]} feature(s) (shape={tuple(shape)}) while a "
            f"minimum of 1 is required by {owner}.")
    return int(shape[0]), int(shape[1])


def _numeric_table(est: Any, X: Any, owner: str, *, reset: bool, entrywise: bool = False) -> np.ndarray:
    """X as a float array (non-finite entries allowed); errors name the defect, never a value.

    With ``entrywise`` (``fit`` of a DP estimator, after its charge) an entry
    that is not a real number becomes NaN instead of refusing the whole table
    (:func:`privtune.utils._validation.entrywise_float`); the estimator then maps
    it like any non-finite entry. Only the table's structure can be refused, and
    no warning is shown (an entry's overflow in the cast, say, would depend on it).
    """
    if not entrywise:
        return _read_numeric_table(est, X, owner, reset=reset, entrywise=False)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _read_numeric_table(est, X, owner, reset=reset, entrywise=True)


def _read_numeric_table(est: Any, X: Any, owner: str, *, reset: bool, entrywise: bool) -> np.ndarray:
    try:
        return validate_data(est, X, dtype=np.float64, reset=reset, ensure_all_finite=False)
    except Exception as exc:  # noqa: BLE001 - scikit-learn's messages can quote values: never repeated
        text = str(exc)
        # Without a numeric dtype of its own (a list, an object array), X is read entry by entry whatever the
        # failure was: the failure came from some entry's value (a string, a complex number, a nested sequence).
        own_kind = getattr(getattr(X, "dtype", None), "kind", None)
        table = _entrywise_table(X) if entrywise and own_kind in (None, "O", "U", "S") else None
        if table is not None:  # some entry is not a number: read every entry on its own instead of refusing
            try:
                return validate_data(est, table, dtype=np.float64, reset=reset, ensure_all_finite=False)
            except Exception as exc2:  # noqa: BLE001
                text = str(exc2)
        if ("is expecting" in text and "features" in text) or "while a minimum of" in text:
            msg = text  # counts of features only
        elif "omplex" in text:
            msg = f"Complex data not supported ({owner}: X has a complex dtype)."
        elif "parse" in text:
            msg = (f"Sparse data was passed for X, but dense data is required by {owner} (sparse input is not "
                   "supported). Use X.toarray() to convert to a dense numpy array.")
        elif "Expected 2D array" in text:
            msg = (f"Expected 2D array, got a 1D or scalar array instead ({owner}: X). Reshape your data either "
                   "using array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if it "
                   "contains a single sample. (The values are not shown.)")
        elif "convert" in text or "argument must be" in text:
            msg = (f"{owner}: X is not numeric: float() argument must be a string or a real number, and some "
                   "value of X could not be converted (which value is not shown: it may be sensitive).")
        else:
            msg = f"{owner}: X is not a 2-D numeric array ({type(exc).__name__}; the values are not shown)."
        raise InvalidParameterError(msg) from None


def _entrywise_table(X: Any) -> Any:
    """X with every entry converted on its own (NaN where it is not a number), column names kept; None if ragged."""
    if hasattr(X, "tocsr"):
        return None  # a sparse matrix: structure, refused as before
    try:
        values = entrywise_float(X)
    except Exception:  # noqa: BLE001 - ragged input: its structure is refused as before
        return None
    columns = getattr(X, "columns", None)
    if columns is not None and values.ndim == 2:
        try:
            import pandas as pd  # X is a pandas-like table: keep its feature names (fit records them)
        except ImportError:  # pragma: no cover - a table with columns but no pandas: names are not recorded
            return values
        return pd.DataFrame(values, columns=columns, index=getattr(X, "index", None))
    return values


def _numeric_rows(est: Any, X: Any, y: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """(X as floats, y as a 1-D array) after the charge; values are never refused, only the structure.

    An entry of ``X`` that is not a number becomes NaN (then 0, like any
    non-finite entry); each label keeps its own type, so one odd label cannot
    change how the others compare with the declared ``classes``.
    """
    X = _numeric_table(est, X, owner, reset=True, entrywise=True)
    y = keep_entry_types(y)
    if y.ndim == 2:
        y = y.ravel()
    return X, y
