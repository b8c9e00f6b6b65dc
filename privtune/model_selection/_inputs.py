"""Reading :class:`~privtune.model_selection.PrivateSearchCV`'s inputs from their public shapes only.

The search space, the data tables and the targets are checked for their number
of dimensions, rows and columns (public under replace-one); every message names
the argument and its shape, never a value. Also the public candidate key and the
bound on the number of distinct candidates. Used by ``_config.py``, ``_method_setup.py`` and ``_search.py``.
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
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


def frame_kind(X: Any) -> str | None:
    """``"pandas"`` or ``"polars"`` for a DataFrame of that library, else None (from its type alone: public)."""
    return _library_of(X, "DataFrame")


def series_kind(y: Any) -> str | None:
    """``"pandas"`` or ``"polars"`` for a Series of that library, else None (from its type alone: public)."""
    return _library_of(y, "Series")


def _library_of(obj: Any, cls: str) -> str | None:
    module = type(obj).__module__.split(".", 1)[0]
    if module in ("pandas", "polars") and module in sys.modules:  # never imports a library the caller did not
        kind = getattr(sys.modules[module], cls, None)
        if kind is not None and isinstance(obj, kind):
            return module
    return None


def column_names(X: Any) -> list[str] | None:
    """A DataFrame's column names, in order (public structure), as strings; None for anything else."""
    if frame_kind(X) is None:
        return None
    return [str(c) for c in X.columns]


def rows(X: Any, idx: Any) -> Any:
    """Rows ``idx`` (positions) of a table, a target or a per-sample fit parameter, in its own container.

    A pandas or polars DataFrame (or Series) stays one, with its column names
    and dtypes (positions, never index labels, as in scikit-learn's searches:
    :func:`sklearn.utils._safe_indexing`); numpy arrays, sparse matrices and
    lists likewise keep their type.
    """
    from sklearn.utils import _safe_indexing

    return _safe_indexing(X, idx)


def n_rows(X: Any) -> int:
    """The number of rows of a container, from its shape (or length): public structure."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(X)


def n_columns(X: Any) -> int:
    """The number of features of a 2-D table (1 for a 1-D container)."""
    shape = getattr(X, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) > 1 else 1


def _as_table(X: Any, name: str) -> Any:
    """A 2-D table of ``X``: a pandas or polars DataFrame as it is, anything else as a 2-D array (or sparse matrix).

    A DataFrame reaches the estimator as a DataFrame, as in scikit-learn's own
    searches: its column names and dtypes are kept, so a ``ColumnTransformer``
    that selects columns by name works and the fitted model records
    ``feature_names_in_``. Errors name the argument and its shape, never a value.
    """
    if frame_kind(X) is not None:
        shape = tuple(int(s) for s in X.shape)
        complex_cols = [str(c) for c, d in zip(X.columns, X.dtypes, strict=True) if getattr(d, "kind", None) == "c"]
        if complex_cols:
            raise InvalidParameterError(
                f"Complex data not supported: {name}'s column(s) {', '.join(map(repr, complex_cols))} have a complex "
                "dtype.")
        from sklearn.utils.validation import _get_feature_names

        try:  # column names of mixed types: every scikit-learn fit refuses them (public structure)
            _get_feature_names(X)
        except TypeError as exc:  # its message names the names' types, never a value
            raise InvalidParameterError(f"PrivateSearchCV.fit: {name}: {exc} Nothing was read or spent.") from None
        _check_not_empty(shape, name)
        return X
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
            "(n_samples, n_features) or a pandas / polars DataFrame.") from None
    if arr.ndim != 2:
        raise InvalidParameterError(
            f"{name} must be 2-D (n_samples, n_features); got an array with {arr.ndim} dimension(s) of shape "
            f"{tuple(arr.shape)}. Reshape it (e.g. {name}.reshape(-1, 1) for one feature).")
    _check_not_empty(tuple(arr.shape), name)
    return arr


def _check_not_empty(shape: tuple[int, ...], name: str) -> None:
    for axis, what in ((0, "sample"), (1, "feature")):
        if shape[axis] == 0:
            raise InvalidParameterError(
                f"Found array with 0 {what}(s) (shape={shape}) while a minimum of 1 is required ({name}).")


def _as_labels(y: Any, name: str) -> Any:
    """1-D targets; errors name the argument and its shape, never a value.

    A pandas or polars Series is kept as it is (its dtype too: pandas 3's
    ``str``, ``category``, nullable ``Int64`` / ``boolean``, object), as
    scikit-learn's searches pass it on; a one-column DataFrame becomes its
    column (with scikit-learn's column-vector warning). Lists are read entry by
    entry; arrays keep their dtype.
    """
    if series_kind(y) is not None:
        return y
    kind = frame_kind(y)
    if kind is not None:
        if y.shape[1] != 1:
            raise InvalidParameterError(
                f"{name} must be 1-D (n_samples,); got a DataFrame of shape {tuple(y.shape)} (multi-output targets "
                "are not supported).")
        warnings.warn(f"A column-vector {name} was passed when a 1d array was expected; it was ravelled.",
                      DataConversionWarning, stacklevel=3)
        return y.iloc[:, 0] if kind == "pandas" else y.to_series()
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


def check_same_structure(X: Any, X_val: Any) -> None:
    """Refuse a validation table whose structure is not the training table's, naming the difference (public).

    The same kind of container where one is a DataFrame (its column names are
    what a ``ColumnTransformer`` selects by and what the fitted model checks in
    ``predict``), the same column names in the same order, the same number of
    features. Dtypes are not compared: a sensitive table's dtypes are read off
    its values (one ``"n/a"`` cell makes a column ``object``), so a refusal on
    them would depend on a sensitive row; row isolation covers such a row.

    Raises
    ------
    InvalidParameterError
        Before anything is read or spent, with the difference.
    """
    kx, kv = frame_kind(X), frame_kind(X_val)
    fix = "Pass X_val with exactly X's columns, in X's order (e.g. X_val = X_val[list(X.columns)])."
    if kx != kv:
        def what(kind: str | None, obj: Any) -> str:
            return f"a {kind} DataFrame" if kind else f"a {type(obj).__name__} without column names"

        raise InvalidParameterError(
            f"X is {what(kx, X)} but X_val is {what(kv, X_val)}: the validation rows must have the training "
            "rows' structure (a model fitted on named columns selects and checks them by name in predict, so "
            "every validation row would fail). Pass both as the same kind of table. Nothing was read or spent.")
    if n_columns(X_val) != n_columns(X):
        names = column_names(X)
        extra = ""
        if names is not None:
            val = column_names(X_val) or []
            missing = [c for c in names if c not in val]
            added = [c for c in val if c not in names]
            extra = ((f" X_val lacks {', '.join(map(repr, missing))}." if missing else "")
                     + (f" X_val has {', '.join(map(repr, added))}, which X lacks." if added else ""))
        raise InvalidParameterError(
            f"X_val has {n_columns(X_val)} features but X has {n_columns(X)}.{extra} {fix} Nothing was read or "
            "spent.")
    names, val_names = column_names(X), column_names(X_val)
    if names is None or names == val_names:
        return
    missing = [c for c in names if c not in val_names]
    added = [c for c in val_names if c not in names]
    if missing or added:
        diff = (f"X_val lacks {', '.join(map(repr, missing))}" if missing else "") + (
            ("; " if missing else "") + f"X_val has {', '.join(map(repr, added))}, which X lacks" if added else "")
    else:
        pos = next(i for i, (a, b) in enumerate(zip(names, val_names, strict=True)) if a != b)
        diff = (f"the same columns in another order (column {pos} is {names[pos]!r} in X but {val_names[pos]!r} "
                "in X_val)")
    raise InvalidParameterError(
        f"X_val's columns are not X's: {diff}. {fix} Nothing was read or spent.")


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


# -- per-sample fit parameters -----------------------------------------------------------------------------
@dataclass(frozen=True)
class FitParams:
    """The estimator's fit parameters, the per-sample ones sliced with the rows they belong to.

    As scikit-learn's searches do (``_check_method_params``), a fit parameter
    that is array-like with one entry per row of the training table
    (``sample_weight``) is *per-sample*: every fit on a subset of the rows (a
    ``validation_size`` split's training part, a ``cv`` fold, a ``prescreen``
    screening fold) gets its entries for those rows; anything else is passed
    as it is.

    Attributes
    ----------
    static : dict
        Passed unchanged to every fit.
    per_sample : dict
        One entry per row of the training table, in its order.
    """

    static: Mapping[str, Any] = field(default_factory=dict)
    per_sample: Mapping[str, Any] = field(default_factory=dict)

    def at(self, idx: Any = None) -> dict[str, Any]:
        """The keyword arguments of a fit on rows ``idx`` (positions; ``None``: every row)."""
        if idx is None:
            return {**self.static, **self.per_sample}
        return {**self.static, **{k: rows(v, idx) for k, v in self.per_sample.items()}}

    def restricted(self, idx: Any) -> FitParams:
        """These parameters for the table made of rows ``idx`` (a split's training part)."""
        return FitParams(dict(self.static), {k: rows(v, idx) for k, v in self.per_sample.items()})

    def __bool__(self) -> bool:
        return bool(self.static) or bool(self.per_sample)


def params_at(fit_params: Any, idx: Any) -> dict[str, Any]:
    """``fit_params.at(idx)`` for a :class:`FitParams`; a plain mapping is passed as it is (a caller's own)."""
    if isinstance(fit_params, FitParams):
        return fit_params.at(idx)
    return dict(fit_params or {})


def _array_like(value: Any) -> bool:
    """Whether ``value`` is an array-like with a first dimension (scikit-learn's rule, strings and dicts aside)."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        return False
    shape = getattr(value, "shape", None)
    if shape is not None:
        return len(shape) >= 1
    return hasattr(value, "__len__") and hasattr(value, "__getitem__")


def split_fit_params(params: Mapping[str, Any], n: int, where: str) -> FitParams:
    """Sort fit parameters into per-sample (one entry per row of the ``n`` training rows) and the others.

    Parameters
    ----------
    params : mapping
        The estimator's fit parameters (``groups`` already taken out).
    n : int
        Rows of the table the parameters belong to (``X`` as passed to ``fit``).
    where : str
        How messages name that table (``"X"``, ``"the training rows X"``).

    Raises
    ------
    InvalidParameterError
        For a ``sample_weight`` whose length is not ``n`` (public structure):
        it would not be sliced with the rows, and every fit would fail.
    """
    static: dict[str, Any] = {}
    per_sample: dict[str, Any] = {}
    for name, value in params.items():
        if _array_like(value) and n_rows(value) == n:
            per_sample[name] = value
            continue
        if (name == "sample_weight" or name.endswith("__sample_weight")) and _array_like(value):
            raise InvalidParameterError(
                f"PrivateSearchCV.fit: {name} has {n_rows(value)} entries but {where} has {n} rows. Pass one weight "
                "per row of X as you pass it to fit (with validation_size: for every row of X, split with it; with "
                "X_val: for the training rows only; the validation scores are unweighted). Nothing was read or "
                "spent.")
        static[name] = value
    return FitParams(static, per_sample)


def fit_param_refusal(estimator: Any, name: str) -> str | None:
    """Why ``estimator.fit`` cannot take the keyword ``name`` (from its signature: public), or None.

    A ``Pipeline`` takes ``<step>__<param>`` (scikit-learn's own message
    otherwise), checked again on that step; an estimator whose ``fit`` takes
    ``**kwargs`` takes anything.
    """
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and hasattr(estimator, "named_steps"):
        step, sep, rest = name.partition("__")
        named = dict(steps)
        if not sep or step not in named:
            return (f"Pipeline.fit does not accept the {name} parameter. You can pass parameters to specific steps "
                    "of your pipeline using the stepname__parameter format, e.g. `Pipeline.fit(X, y, "
                    "logisticregression__sample_weight=sample_weight)`.")
        inner = named[step]
        if inner is None or isinstance(inner, str):
            return f"the pipeline's step {step!r} is {inner!r} and is not fitted, so it takes no {rest!r}."
        return fit_param_refusal(inner, rest)
    try:
        sig = inspect.signature(estimator.fit)
    except (TypeError, ValueError, AttributeError):  # no signature to read: the estimator decides
        return None
    params = sig.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    if name in params and name not in ("X", "y"):
        return None
    takes = [p for p in params if p not in ("X", "y", "self")]
    return (f"{type(estimator).__name__}.fit takes no parameter {name!r} (it takes "
            + (", ".join(map(repr, takes)) if takes else "only X and y") + ").")


# -- failures that public information reveals, found before anything is spent ------------------------------
#: Scorers that compare predictions with class labels (a regressor's predictions are no labels).
CLASSIFICATION_SCORERS = frozenset({"accuracy", "balanced_accuracy", "neg_zero_one_loss", "neg_log_loss",
                                    "roc_auc"})
#: The prediction method a built-in scorer calls, when it needs one beyond ``predict``.
RESPONSE_METHOD = {"neg_log_loss": "predict_proba"}
#: Rows of the public training table the pre-flight scores on (the first ones: a public choice).
PREFLIGHT_ROWS = 2048


def subset(candidates: Any, keep: Any) -> Any:
    """The candidates at positions ``keep`` (in their order), as a candidate set."""
    from privtune.space._candidates import CandidateSet

    keep = np.asarray(keep, dtype=np.int64)
    return CandidateSet._from_codes(candidates.space, [c[keep] for c in candidates._codes])


def check_estimator_type(estimator: Any, scorer: Any) -> None:
    """Refuse a regressor under a classification score (its type: public), before anything is read or spent."""
    from sklearn.base import is_regressor

    if scorer.name in CLASSIFICATION_SCORERS and is_regressor(estimator):
        raise InvalidParameterError(
            f"scoring={scorer.name!r} compares predicted class labels with the true ones, but "
            f"{type(estimator).__name__} is a regressor: its predictions are continuous values (scikit-learn: "
            "\"Classification metrics can't handle a mix of binary and continuous targets\"). Use a classifier, "
            "or a regression score (scoring='r2' with a declared score_sensitivity, or a callable with "
            "score_bounds). Nothing was read or spent.")


def lacks_response_method(candidate: Any, scorer: Any) -> str | None:
    """The prediction method ``scorer`` needs and that ``candidate`` does not offer in its configuration, or None.

    Read on the unfitted estimator, from its class and parameters alone
    (scikit-learn's ``available_if``: ``SVC(probability=False)`` has no
    ``predict_proba``): public.
    """
    needed = RESPONSE_METHOD.get(scorer.name)
    if needed is None:
        return None
    try:
        has = hasattr(candidate, needed)
    except Exception:  # noqa: BLE001 - a check that fails on an unfitted estimator: the fit will tell
        return None
    return None if has else needed


def check_public_score(estimator: Any, scorer: Any, X: Any, y: Any) -> None:
    """Call ``scorer``'s prediction method on public rows and check it gives a valid score input; raise otherwise.

    For the built-in scorers the per-row terms must come out one per row
    (``predict_proba`` present and of the right shape for ``neg_log_loss``),
    and a classification score's predictions must be class labels (checked by
    scikit-learn's ``accuracy_score``, whose message is kept); a callable must
    return one finite real number (not an array).

    Notes
    -----
    **Privacy.** Only for public rows (the training rows of a search with
    ``sensitive="validation"``): the errors raised, and their messages, are
    functions of public data.
    """
    labels = np.asarray(y)
    n = int(labels.shape[0])
    if scorer.row_term is not None:
        if scorer.name in CLASSIFICATION_SCORERS:
            from sklearn.metrics import accuracy_score

            accuracy_score(labels, estimator.predict(X))  # scikit-learn's own message for continuous predictions
        terms = np.asarray(scorer.row_term(estimator, X, labels), dtype=float)
        if terms.shape != (n,):
            raise ValueError(f"the scorer {scorer.name!r} computed per-row terms of shape {terms.shape} on {n} rows.")
        return
    value = scorer.score_func(estimator, X, y)
    if np.ndim(value) != 0:
        raise TypeError(f"the scoring callable {scorer.name!r} returned a {type(value).__name__} of shape "
                        f"{np.shape(value)}; a scorer must return one number.")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"the scoring callable {scorer.name!r} returned a {type(value).__name__}, not a number.") \
            from None
    if not math.isfinite(v):
        raise ValueError(f"the scoring callable {scorer.name!r} returned {v} on the public training rows.")


def failure_summary(failures: list[tuple[Mapping[str, Any], str, Any]]) -> str:
    """scikit-learn's summary of failed fits (``_warn_or_raise_about_fit_failures``): each error with its count."""
    counts: dict[str, int] = {}
    for _, text, _ in failures:
        counts[text] = counts.get(text, 0) + 1
    delimiter = "-" * 80 + "\n"
    return "\n".join(f"{delimiter}{n} candidate(s) failed with the following error:\n{text}"
                     for text, n in counts.items())


def all_failed_message(n: int, failures: list[tuple[Mapping[str, Any], str, Any]], where: str) -> str:
    """scikit-learn's "All the n fits failed" message, for candidates that failed on public rows."""
    return (f"\nAll the {n} candidates failed {where}.\n"
            "It is very likely that your model is misconfigured.\n"
            "You can try to debug the error by setting error_score='raise'.\n"
            "Nothing was spent: the failure is public (the training rows are), so the search was refused before "
            "any charge.\n\n"
            f"Below are more details about the failures:\n{failure_summary(failures)}")


def some_failed_message(n: int, failures: list[tuple[Mapping[str, Any], str, Any]], where: str) -> str:
    """scikit-learn's "k fits failed out of n" warning, for candidates left out of the candidate set."""
    names = "\n".join(f"  {dict(p)!r}" for p, _, _ in failures[:20]) + (
        f"\n  ... and {len(failures) - 20} more" if len(failures) > 20 else "")
    return (f"\n{len(failures)} candidates failed {where}, out of {n} tried, and were left out of the candidate set "
            "(the failure is public: nothing is spent on them):\n"
            f"{names}\n"
            "If these failures are not expected, you can try to debug them by setting error_score='raise'.\n\n"
            f"Below are more details about the failures:\n{failure_summary(failures)}")


def _label_family(dtype: Any) -> str | None:
    """``"number"`` or ``"string"`` for a dtype whose every entry is of that kind (public structure), else None.

    numpy numbers and booleans, pandas' nullable ``Int64`` / ``Float64`` /
    ``boolean``, polars' numeric types are numbers; numpy ``U`` / ``S``,
    pandas' ``str``, polars' ``String``, and a categorical of such are
    strings. ``object`` (and anything else) is unknown: its entries decide.
    """
    if dtype is None:
        return None
    if type(dtype).__module__.split(".", 1)[0] == "polars":
        if getattr(dtype, "is_numeric", lambda: False)() or str(dtype) == "Boolean":
            return "number"
        return "string" if str(dtype) in ("String", "Utf8") else None
    if isinstance(dtype, np.dtype):
        return "number" if dtype.kind in "biuf" else "string" if dtype.kind in "US" else None
    categories = getattr(dtype, "categories", None)
    if categories is not None:
        return _label_family(getattr(categories, "dtype", None))
    if type(dtype).__name__ == "StringDtype":
        return "string"
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    return _label_family(numpy_dtype) if isinstance(numpy_dtype, np.dtype) else None


def check_sensitive_structure(estimator: Any, X: Any, y: Any, *, owner: str = "PrivateSearchCV") -> None:
    """With sensitive training rows, refuse what the inputs' public structure shows every fit would get wrong.

    No fit can be tried on sensitive rows before the training plan is charged,
    so only structure is checked (dtypes of the containers as passed, column
    names, the declared label set), for a privtune DP estimator fitted
    directly (a ``Pipeline`` has its own steps to read the columns):

    * declared ``classes`` of one kind (numbers, strings) and labels whose
      dtype holds only the other kind: no label would be a declared class;
    * feature columns that hold strings (numpy ``U`` / ``S``, pandas ``str``
      or categorical of strings, polars ``String``): the estimator reads
      numbers only (each such entry would become 0).

    ``object`` columns and labels are not judged (their entries decide, and
    entries of sensitive rows may not decide a refusal), nor are Python lists
    (pass ``X`` and ``y`` as the caller holds them: a list has no dtype of its
    own).

    Raises
    ------
    InvalidParameterError
        Before anything is read or spent.
    """
    from privtune.base import get_privacy_tags

    tags = get_privacy_tags(estimator)
    if tags is None or hasattr(estimator, "steps"):
        return
    name = type(estimator).__name__
    declared = (estimator.get_params(deep=False).get(tags.classes_param)
                if tags.classes_param is not None else None)
    if declared is not None:
        kinds = {("string" if isinstance(c, (str, bytes, np.str_, np.bytes_)) else
                  "number" if isinstance(c, (int, float, bool, np.number, np.bool_)) else None) for c in declared}
        labels = _label_family(getattr(y, "dtype", None))
        if len(kinds) == 1 and None not in kinds and labels is not None and labels not in kinds:
            (kind,) = kinds
            raise InvalidParameterError(
                f"{owner}: {name} declares {tags.classes_param}={list(declared)!r} ({kind}s), but y holds "
                f"{labels}s (dtype {getattr(y, 'dtype', None)}): no label could be one of the declared classes, "
                "so every fit would learn nothing from them. Declare the classes as y holds them (or convert y). "
                "Nothing was read or spent.")
    if frame_kind(X) is not None:
        strings = [str(c) for c, d in zip(X.columns, X.dtypes, strict=True) if _label_family(d) == "string"]
    else:
        strings = ["all"] if _label_family(getattr(X, "dtype", None)) == "string" else []
    if strings:
        which = ("every column" if strings == ["all"]
                 else "the column(s) " + ", ".join(map(repr, strings[:10])) + (" ..." if len(strings) > 10 else ""))
        raise InvalidParameterError(
            f"{owner}: X holds strings in {which}, and {name} reads numbers only (each such entry would become 0 "
            "in every fit on the sensitive training rows). Encode them as numbers from public information only "
            "(e.g. a one-hot encoding over categories you declare), or drop them. Nothing was read or spent.")
