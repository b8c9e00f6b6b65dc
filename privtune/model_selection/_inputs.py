"""Reading :class:`~privtune.model_selection.PrivateSearchCV`'s inputs from their public shapes only.

The search space, the data tables and the targets are checked for their number
of dimensions, rows and columns (public under replace-one); every message names
the argument and its shape, never a value. Also the public candidate key and the
bound on the number of distinct candidates. Used by ``_config.py`` and ``_search.py``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_array

from privtune.exceptions import InvalidParameterError
from privtune.space import SearchSpace, as_search_space
from privtune.utils._validation import keep_entry_types, label_entries


def _as_space(search_space: Any, defaults: Mapping[str, Any]) -> tuple[SearchSpace, list[dict[str, Any]] | None]:
    """The search space (and, for a list of dicts, its grid), as written for scikit-learn or privtune."""
    return as_search_space(search_space, owner="PrivateSearchCV", defaults=defaults)


def _as_table(X: Any, name: str) -> Any:
    """A 2-D array (or sparse matrix) of ``X``; errors name the argument and its shape, never a value."""
    if getattr(getattr(X, "dtype", None), "kind", None) == "c":
        raise InvalidParameterError(f"Complex data not supported: {name} has a complex dtype.")
    if isinstance(X, (list, tuple)):
        try:  # one string cell must not turn every other cell into a string (rule 7)
            X = keep_entry_types(X)
        except Exception:  # noqa: BLE001 - ragged: check_array refuses it below, by shape
            pass
    try:
        arr = check_array(X, accept_sparse=["csr", "csc"], dtype=None, ensure_all_finite=False,
                          ensure_2d=False, allow_nd=True, ensure_min_samples=0, ensure_min_features=0,
                          input_name=name)
    except Exception:  # noqa: BLE001 - scikit-learn's messages can quote the values
        raise InvalidParameterError(
            f"PrivateSearchCV.fit could not read {name} as an array ({type(X).__name__}); pass a 2-D array-like "
            "(n_samples, n_features).") from None
    if arr.ndim != 2:
        raise InvalidParameterError(
            f"{name} must be 2-D (n_samples, n_features); got an array with {arr.ndim} dimension(s) of shape "
            f"{tuple(arr.shape)}. Reshape it (e.g. {name}.reshape(-1, 1) for one feature).")
    for axis, what in ((0, "sample"), (1, "feature")):
        if arr.shape[axis] == 0:
            raise InvalidParameterError(
                f"Found array with 0 {what}(s) (shape={tuple(arr.shape)}) while a minimum of 1 is required "
                f"({name}).")
    return arr


def _as_labels(y: Any, name: str) -> np.ndarray:
    """A 1-D array of targets; errors name the argument and its shape, never a value."""
    try:
        arr = keep_entry_types(label_entries(y))  # one label must not change how the others are read (rule 7)
    except Exception:  # noqa: BLE001
        raise InvalidParameterError(f"PrivateSearchCV.fit could not read {name} as an array.") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(f"A column-vector {name} was passed when a 1d array was expected; it was ravelled.",
                      DataConversionWarning, stacklevel=3)
        arr = arr.ravel()
    if arr.ndim != 1:
        raise InvalidParameterError(
            f"{name} must be 1-D (n_samples,); got shape {tuple(arr.shape)} (multi-output targets are not "
            "supported).")
    return arr


def _params_key(params: Mapping[str, Any]) -> str:
    """A key naming one candidate's hyperparameters (their reprs, in name order)."""
    return repr(sorted((str(k), repr(v)) for k, v in params.items()))


def _max_distinct_candidates(space: SearchSpace) -> float:
    """How many distinct points the space holds (inf with a Real dimension): a public bound on |Lambda|."""
    total = 1.0
    for _, dim in space.items():
        n = getattr(dim, "n_values", None)
        if n is None:
            choices = getattr(dim, "choices", None)
            n = len(choices) if choices is not None else math.inf
        total *= n
    return total


def _same_length(X: Any, y: Any, xname: str, yname: str) -> None:
    if X.shape[0] != y.shape[0]:
        raise InvalidParameterError(f"{xname} has {X.shape[0]} rows but {yname} has {y.shape[0]}.")
