"""Row isolation: one sensitive row that breaks an estimator moves only its own term of a score.

A private score is a mean of per-row terms whose sensitivity (e.g. ``1/m`` for
accuracy) assumes that replacing one validation row changes one term only. An
estimator can break that assumption on its failure paths: ``predict`` raises
for a whole batch because of one row (a category unseen in training under
``OneHotEncoder``, an overflow to ``inf`` after ``StandardScaler``), or returns
NaN for one row. If such a failure made the *whole* score a bound, one row would
move it by the whole score range.

:func:`isolated_row_values` evaluates per-row terms with isolation: one batch
call when nothing fails (the fast path), and on failure the block is bisected
down to single rows; a single row whose evaluation raises, has the wrong shape
or is non-finite gets the scorer's worst per-row value. For a well-behaved
estimator (each row's prediction depends on that row only, as for every
scikit-learn predictor) the values are exactly those of the batch call, and
whatever the estimator does on one row, only that row's term changes.

Nothing here records *which* rows failed or how many: that is a statistic of the
sensitive rows. (The fallback takes longer than the fast path, so the wall-clock
time of scoring can depend on a row: privtune never releases timings of work on
sensitive data.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["isolated_row_values", "take_rows", "IsolatedEstimator"]


def take_rows(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of an array-like (numpy, scipy sparse, pandas)."""
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    return X[idx]


def _evaluate_block(evaluate: Callable[[np.ndarray], Any], idx: np.ndarray) -> np.ndarray | None:
    """The block's values as a float array of shape (len(idx),), or None if the call failed."""
    try:
        values = np.asarray(evaluate(idx), dtype=float)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - any failure (its text may quote data) only triggers isolation
        return None
    if values.shape != (idx.shape[0],):
        return None
    return values


def isolated_row_values(
    evaluate: Callable[[np.ndarray], Any],
    n_rows: int,
    worst: float,
    *,
    attributable: bool = True,
) -> np.ndarray:
    """Per-row values with per-row failure isolation.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(idx) -> array of shape (len(idx),)``: the values of rows
        ``idx`` (an int array), computed in one call on those rows only.
    n_rows : int
        Number of rows.
    worst : float
        The value a failing row gets (the scorer's worst per-row value).
    attributable : bool, default=True
        True when a non-finite entry belongs to its own row (per-row terms): it
        is replaced by ``worst`` without further calls. False when each entry
        is a block statistic (e.g. a block's mean, repeated): a non-finite value
        then cannot be attributed and the block is bisected like a raising one.

    Returns
    -------
    ndarray of float, shape (n_rows,)
        Finite values; one evaluation call when nothing fails, at most about
        ``2 n_rows`` calls when every row fails.

    Notes
    -----
    **Privacy.** A function of the sensitive rows; it spends nothing itself (the
    caller's release is charged before). It never raises because of a row and
    never reports which or how many rows failed.
    """
    out = np.empty(n_rows, dtype=float)
    stack = [np.arange(n_rows)]
    while stack:
        idx = stack.pop()
        if idx.shape[0] == 0:
            continue
        values = _evaluate_block(evaluate, idx)
        if values is not None:
            bad = ~np.isfinite(values)
            if not bad.any():
                out[idx] = values
                continue
            if attributable:
                out[idx] = np.where(bad, worst, values)
                continue
        if idx.shape[0] == 1:
            out[idx] = worst
            continue
        half = idx.shape[0] // 2
        stack.append(idx[half:])
        stack.append(idx[:half])
    return out


def _inert(value: Any, depth: int = 0) -> bool:
    """Whether a fitted attribute is plain data (no method that could read the rows given to a scorer)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return True
    if isinstance(value, np.ndarray):  # object arrays (e.g. classes_ of string labels) if every entry is plain
        return value.dtype != object or (value.size <= 100_000 and depth < 3
                                         and all(_inert(v, depth + 1) for v in value.ravel().tolist()))
    if isinstance(value, (tuple, list)) and depth < 3:
        return all(_inert(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth < 3:
        return all(_inert(k, depth + 1) and _inert(v, depth + 1) for k, v in value.items())
    return False


class IsolatedEstimator:
    """A read-only view of a fitted estimator whose prediction methods isolate failing rows.

    Used for callable scorers: the callable receives this view instead of the
    estimator, so that one row on which the estimator raises or returns a
    non-finite value changes only that row's prediction. A failing row gets a
    fixed fallback output: for ``predict`` the first of ``classes_`` (classifiers)
    or ``0.0``; for ``predict_proba`` the uniform distribution; for
    ``predict_log_proba`` its log; for ``decision_function`` zeros. ``score``
    is scikit-learn's default (accuracy for a classifier, R² for a regressor)
    computed from the isolated ``predict``.

    Nothing else reaches the estimator: besides these methods the view serves
    ``__sklearn_tags__`` and ``_estimator_type`` (so scikit-learn's scorer
    objects work on it) and fitted attributes that are plain data (numbers,
    strings, arrays, and tuples, lists or dicts of them). Any other attribute --
    ``transform``, ``score_samples``, a pipeline's ``named_steps``, an inner
    estimator -- raises ``AttributeError`` whatever the rows, since calling it
    would bypass the isolation (one row that makes it raise would move the
    whole score).

    A declared ``score_sensitivity`` must therefore cover an arbitrary change of
    one row's prediction (including to the fallback), which is what a
    sensitivity under replace-one means anyway.
    """

    _METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function")
    _TAGS = ("__sklearn_tags__", "_estimator_type", "_get_tags", "_more_tags")

    def __init__(self, estimator: Any) -> None:
        object.__setattr__(self, "_estimator", estimator)

    def __getattr__(self, name: str) -> Any:
        if name in self._METHODS:
            method = getattr(self._estimator, name)  # AttributeError if the estimator lacks it

            def isolated(X: Any) -> np.ndarray:
                return self._isolated(name, method, X)

            isolated.__name__ = name  # scikit-learn's scorers look the response method up by name
            return isolated
        if name == "score":
            return self._score
        if name in self._TAGS:
            return getattr(self._estimator, name)
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._estimator, name)
        if _inert(value):
            return value
        raise AttributeError(
            f"IsolatedEstimator serves the fitted model's prediction methods ({', '.join(self._METHODS)}), score "
            f"and plain fitted attributes only, not {name!r}: calling the estimator otherwise would bypass row "
            "isolation (one row that makes it raise would move the whole score).")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("IsolatedEstimator is read-only.")

    def _score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        from sklearn.base import is_classifier, is_regressor
        from sklearn.metrics import accuracy_score, r2_score

        if is_classifier(self._estimator):
            return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))
        if is_regressor(self._estimator):
            return float(r2_score(y, self.predict(X), sample_weight=sample_weight))
        raise AttributeError("IsolatedEstimator.score is available for classifiers and regressors only.")

    def _fallback(self, name: str, n_columns: int | None) -> Any:
        classes = getattr(self._estimator, "classes_", None)
        k = n_columns or (len(classes) if classes is not None else 1)
        if name == "predict":
            return classes[0] if classes is not None and len(classes) else 0.0
        if name == "predict_proba":
            return np.full(k, 1.0 / k)
        if name == "predict_log_proba":
            return np.full(k, -np.log(k))
        return 0.0 if k <= 2 else np.zeros(k)

    def _isolated(self, name: str, method: Callable[[Any], Any], X: Any) -> np.ndarray:
        n = X.shape[0]

        def call(idx: np.ndarray | None) -> np.ndarray | None:
            try:
                out = np.asarray(method(X if idx is None else take_rows(X, idx)))
            except KeyboardInterrupt:
                raise
            except BaseException:  # noqa: BLE001 - isolate below (SystemExit, a timeout's exception, ...)
                return None
            if out.shape[:1] != ((n if idx is None else idx.shape[0]),):
                return None
            return out

        out = call(None)
        if out is not None and (out.dtype.kind not in "fc" or np.isfinite(out).all()):
            return out  # the fast path: one batch call
        rows: list[Any] = [None] * n
        width: int | None = None
        stack = [np.arange(n)]
        while stack:  # bisect failing blocks down to single rows
            idx = stack.pop()
            block = out if idx.shape[0] == n else call(idx)  # the full batch was already tried
            if block is not None:
                finite = (np.ones(idx.shape[0], dtype=bool) if block.dtype.kind not in "fc"
                          else np.isfinite(block.reshape(idx.shape[0], -1)).all(axis=1))
                if block.ndim == 2:
                    width = block.shape[1]
                for j, i in enumerate(idx):
                    rows[i] = block[j] if finite[j] else None
                continue
            if idx.shape[0] > 1:
                half = idx.shape[0] // 2
                stack += [idx[half:], idx[:half]]
        fallback = self._fallback(name, width)
        return np.asarray([fallback if r is None else r for r in rows])
