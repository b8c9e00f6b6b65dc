"""Row isolation: one sensitive row that breaks an estimator moves only its own term of a score.

A private score is a mean of per-row terms whose sensitivity (e.g. ``1/m`` for
accuracy) assumes that replacing one validation row changes one term only. An
estimator can break that assumption on its failure paths: ``predict`` raises
for a whole batch because of one row (a category unseen in training under
``OneHotEncoder``, a NaN that ``check_array`` refuses), or returns NaN for one
row. If such a failure made the *whole* score a bound, one row would move it by
the whole score range.

**The rule: every row is computed in the same block whatever the other rows
hold.** A row's floating-point output depends on the block it is computed in,
not only on its own entries: BLAS kernels take different paths for different
shapes (SIMD tails, blocking), so a row near a decision boundary can change
class between a batch of 101 rows and a bisection block of 50 (measured with
``LogisticRegression``: 27 of 101 boundary rows changed sign between the batch
and single-row calls). Isolation therefore never re-blocks a row whose value it
keeps:

1. The rows are split into **fixed blocks** that depend on public sizes only:
   rows ``[k B, (k + 1) B)`` with ``B`` = :func:`block_rows_for` ``(m, width)``
   (one block up to ``B`` rows; ``B`` is at least 256 and about ``2**20`` entries).
2. A block is evaluated in **one call** when nothing fails, on a view of the
   rows (:class:`RowBlocks`; scoring never copies the validation set).
3. A non-finite output of a row (NaN probability) is that row's failure: it gets
   the worst value, and the block's other values are kept from the same call.
4. When the call raises (or returns the wrong shape), the block is bisected to
   find the rows that fail on their own (the values of these smaller calls are
   **discarded**). The block is then evaluated **again as a whole**, with every
   failing row replaced by a copy of the first row that did not fail, in a
   scratch buffer of one block aligned as the block's view is (modulo 64
   bytes); the failing rows get the worst value and every other row keeps the
   value it gets in this call: the same bytes, at the same position, in a block
   of the same shape and alignment, as in the call of a neighbouring set whose
   failing row did not fail.

Hence, for an estimator whose output for a row depends only on that row's
entries, its position in its block, the block's shape and alignment (true of every
scikit-learn predictor and of the BLAS kernels behind them: checked for
``LogisticRegression`` on boundary rows at every position of a 101-row block),
replacing one row changes only that row's
term, whatever it does. An estimator whose output for a row depends on the
*other* rows' entries is outside every scorer's sensitivity; if the
substituted call itself fails (only such an estimator can do that), the rows
keep the values of the bisection calls, as documented in
:func:`isolated_row_values`.

Nothing here records *which* rows failed or how many: that is a statistic of the
sensitive rows. (The fallback takes longer than the fast path, so the wall-clock
time of scoring can depend on a row: privtune never releases timings of work on
sensitive data.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["isolated_row_values", "isolated_block_means", "block_rows_for", "fixed_blocks", "RowBlocks",
           "take_rows", "take_entries", "as_indices", "IsolatedEstimator"]

#: Entries per fixed block (8 MiB of float64): large enough that per-call overhead is small, small enough
#: that the scratch buffer stays far below the validation set's own size on large sets.
BLOCK_ENTRIES = 2**20
#: The fewest rows a block holds (when rows are very wide), so that the number of calls stays moderate.
MIN_BLOCK_ROWS = 256
_ALIGN = 64  # bytes: a cache line, and the widest SIMD register (AVX-512)


def take_rows(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of an array-like (numpy, scipy sparse, pandas), as a new object."""
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    return X[idx]


def row_width(X: Any) -> int:
    """Entries per row, from the public shape only (1 for a one-dimensional input)."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) < 2:
        return 1
    return max(1, int(np.prod(shape[1:])))


def block_rows_for(n_rows: int, width: int) -> int:
    """Rows per fixed block: ``min(n_rows, max(256, 2**20 // width))`` (public sizes only)."""
    return max(1, min(int(n_rows), max(MIN_BLOCK_ROWS, BLOCK_ENTRIES // max(1, int(width)))))


def fixed_blocks(n_rows: int, block_rows: int) -> list[range]:
    """Each fixed block ``[k B, (k + 1) B)``, as a ``range`` (no index array on the fast path)."""
    return [range(a, min(a + block_rows, n_rows)) for a in range(0, n_rows, block_rows)]


#: Rows to evaluate: a fixed block as a ``range``, or any other rows of one fixed block as an int array.
Rows = range | np.ndarray


def as_indices(idx: Rows) -> np.ndarray:
    """The rows as an int array."""
    return np.arange(idx.start, idx.stop) if isinstance(idx, range) else idx


def take_entries(a: np.ndarray, idx: Rows) -> np.ndarray:
    """``a[idx]`` for a numpy array (labels): a view for a fixed block, a copy for other rows."""
    return a[idx.start:idx.stop] if isinstance(idx, range) else a[idx]


class RowBlocks:
    """Materialises blocks of rows of ``X`` at a fixed place, without copying the whole of ``X``.

    For a C-contiguous numpy ``X`` a fixed block is served as a **view** of
    ``X`` (no copy), and any other set of rows of that block -- the block with a
    failing row replaced, or a bisection part -- is copied into one scratch
    buffer of ``block_rows`` rows, placed so that its start has the same
    address modulo 64 bytes as the block's view: the rows a substituted call
    keeps meet the estimator with the same bytes, position, shape and
    alignment as in the view. Other numpy arrays are always copied into the
    scratch buffer (64-byte aligned). Other inputs (pandas and polars frames,
    scipy sparse matrices, object arrays) are materialised by
    :func:`take_rows`, a new object per call of the same layout whatever the
    rows. The extra memory is at most one block.
    """

    def __init__(self, X: Any, block_rows: int | None = None) -> None:
        self.X = X
        self.n_rows = int(X.shape[0]) if hasattr(X, "shape") else len(X)
        self.block_rows = block_rows or block_rows_for(self.n_rows, row_width(X))
        self._raw: np.ndarray | None = None
        self._views = False
        if type(X) is np.ndarray and X.ndim >= 1 and X.dtype != object:  # object rows: pointers, no gain
            self._views = bool(X.flags.c_contiguous)
            self._row_bytes = int(np.prod(X.shape[1:], dtype=np.int64)) * X.dtype.itemsize
            self._raw = np.empty(self.block_rows * self._row_bytes + _ALIGN, dtype=np.uint8)

    def take(self, idx: Rows) -> Any:
        """Rows ``idx`` of one fixed block: a view for the block (a ``range``), else a copy at the block's place."""
        if self._raw is None:
            return take_rows(self.X, as_indices(idx))
        if isinstance(idx, range) and self._views:
            return self.X[idx.start:idx.stop]
        k = len(idx)
        first = idx.start if isinstance(idx, range) else (int(idx[0]) if k else 0)
        block_start = (first // self.block_rows) * self.block_rows
        target = (self.X.ctypes.data + block_start * self._row_bytes) % _ALIGN if self._views else 0
        offset = (target - self._raw.ctypes.data) % _ALIGN
        out = self._raw[offset:offset + k * self._row_bytes].view(self.X.dtype).reshape((k,) + self.X.shape[1:])
        out.flags.writeable = True
        if isinstance(idx, range):
            out[...] = self.X[idx.start:idx.stop]
        else:
            np.take(self.X, idx, axis=0, out=out)
        out.flags.writeable = bool(self.X.flags.writeable)  # as the view would be
        return out


def _guarded(call: Callable[[Rows], Any], idx: Rows) -> np.ndarray | None:
    """``call(idx)`` as an array of its own whose first dimension is ``len(idx)``, or None if it failed."""
    try:
        out = np.asarray(call(idx))
        if not out.flags.owndata:  # a view (of the rows given, or of the scratch buffer reused next): copy it
            out = out.copy()
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - any failure (its text may quote data) only triggers isolation
        return None
    if out.shape[:1] != (len(idx),):
        return None
    return out


def _finite_rows(out: np.ndarray) -> np.ndarray:
    if out.dtype.kind not in "fc":
        return np.ones(out.shape[0], dtype=bool)
    if out.ndim == 1:
        return np.isfinite(out)
    return np.isfinite(out.reshape(out.shape[0], -1)).all(axis=1)


def _isolate_block(
    call: Callable[[Rows], Any], block: range,
) -> tuple[np.ndarray | None, np.ndarray | None, list[tuple[np.ndarray, np.ndarray]]]:
    """One fixed block: its outputs (None if no call over the whole block could be used) and failing rows.

    Returns ``(out, failing, pieces)``: ``out`` holds every row's output from a
    call over the whole block (the block itself, or the block with its failing
    rows replaced by a row that did not fail), ``failing`` marks the rows whose
    output must not be used (None: no row failed), and ``pieces`` are the
    bisection's outputs ``(positions, outputs)``, used only if the substituted
    call fails.
    """
    k = len(block)
    out = _guarded(call, block)
    if out is not None:  # the fast path: one call; a non-finite row is its own row's failure
        if out.dtype.kind not in "fc" or np.isfinite(out).all():
            return out, None, []
        return out, ~_finite_rows(out), []
    block = as_indices(block)
    failing = np.zeros(k, dtype=bool)
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    stack = [np.arange(k)[k // 2:], np.arange(k)[:k // 2]] if k > 1 else []
    failing[:] = k == 1
    while stack:  # find the rows that fail on their own; these calls' values are not kept
        pos = stack.pop()
        if pos.shape[0] == 0:
            continue
        part = _guarded(call, block[pos])
        if part is not None:
            good = _finite_rows(part)
            failing[pos[~good]] = True
            pieces.append((pos, part))
            continue
        if pos.shape[0] == 1:
            failing[pos] = True
            continue
        half = pos.shape[0] // 2
        stack += [pos[half:], pos[:half]]
    if failing.all():
        return None, failing, pieces
    substituted = block.copy()
    substituted[failing] = block[np.flatnonzero(~failing)[0]]
    again = _guarded(call, substituted)  # the same place and shape as the block: the other rows' values as there
    if again is None:
        return None, failing, pieces
    return again, failing | ~_finite_rows(again), pieces


def isolated_row_values(
    evaluate: Callable[[np.ndarray], Any],
    n_rows: int,
    worst: float,
    *,
    block_rows: int | None = None,
) -> np.ndarray:
    """Per-row values with per-row failure isolation, each row computed in its fixed block.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(idx) -> array of shape (len(idx),)``: the values of rows
        ``idx`` (a fixed block as a ``range``, or other rows of one fixed block
        as an int array, possibly repeating a row), computed in one call on
        those rows only and in that order (use :meth:`RowBlocks.take` and
        :func:`take_entries` to materialise them).
    n_rows : int
        Number of rows.
    worst : float
        The value a failing row gets (the scorer's worst per-row value).
    block_rows : int, optional
        Rows per fixed block; default :func:`block_rows_for` ``(n_rows, 1)``.
        Must depend on public sizes only.

    Returns
    -------
    ndarray of float, shape (n_rows,)
        Finite values: one evaluation call per fixed block when nothing fails.
        A block whose call raises costs a bisection (about ``2 log2(B)`` calls
        per failing row) and one more call over the whole block.

    Notes
    -----
    **Privacy.** A function of the sensitive rows; it spends nothing itself (the
    caller's release is charged before). It never raises because of a row and
    never reports which or how many rows failed. A row that is kept is always
    computed in its own fixed block (see the module docstring); only for an
    estimator whose output on one row depends on other rows, and only if the
    block's substituted call fails too, do rows keep values from the bisection.
    """
    out = np.empty(n_rows, dtype=float)
    for block in fixed_blocks(n_rows, block_rows or block_rows_for(n_rows, 1)):
        values, failing, pieces = _isolate_block(lambda idx: np.asarray(evaluate(idx), dtype=float), block)
        if values is None:
            values = np.full(len(block), worst)
            for pos, part in pieces:  # only outside the per-row assumption (see above)
                values[pos] = part
        out[block.start:block.stop] = values
        if failing is not None:
            out[block.start:block.stop][failing] = worst
    return out


def isolated_block_means(
    score_block: Callable[[np.ndarray], Callable[[np.ndarray], float]],
    n_rows: int,
    worst: float,
    *,
    block_rows: int | None = None,
) -> np.ndarray:
    """Per-row values of a score that is a mean over any subset of rows (a user callable), by fixed blocks.

    Parameters
    ----------
    score_block : callable
        ``score_block(idx)`` opens fixed block ``idx`` and returns
        ``score(pos) -> float``, the score of the block's rows at positions
        ``pos`` (the caller serves predictions computed once on the whole
        block, so that a subset's score re-blocks only the scorer's arithmetic,
        never the estimator's).
    n_rows, worst, block_rows
        As in :func:`isolated_row_values`.

    Returns
    -------
    ndarray of float, shape (n_rows,)
        Each row holds the score of the subset it was scored in; the mean of
        the array is the weighted mean over those subsets. A subset whose score
        raises or is not finite is split in halves, down to single rows, which
        get ``worst``.
    """
    out = np.empty(n_rows, dtype=float)
    for block_range in fixed_blocks(n_rows, block_rows or block_rows_for(n_rows, 1)):
        block = as_indices(block_range)
        score = score_block(block)
        stack = [np.arange(block.shape[0])]
        while stack:
            pos = stack.pop()
            if pos.shape[0] == 0:
                continue
            try:
                v = float(score(pos))
            except KeyboardInterrupt:
                raise
            except BaseException:  # noqa: BLE001 - the detail may quote data; never kept
                v = float("nan")
            if np.isfinite(v):
                out[block[pos]] = v
            elif pos.shape[0] == 1:
                out[block[pos]] = worst
            else:
                half = pos.shape[0] // 2
                stack += [pos[half:], pos[:half]]
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


class FrozenOutputs:
    """The isolated outputs of an estimator's prediction methods on one input, computed once per method.

    Held by :class:`IsolatedEstimator` views so that a scorer called again on
    part of that input (the bisection of a failing callable) is served the
    outputs computed over the whole input, by position, instead of calling the
    estimator on a differently shaped block.
    """

    def __init__(self, view: IsolatedEstimator, source: Any) -> None:
        self._view = view
        self.source = source
        self._outputs: dict[str, np.ndarray] = {}

    def get(self, name: str, method: Callable[[Any], Any]) -> np.ndarray:
        if name not in self._outputs:
            self._outputs[name] = self._view._isolated(name, method, self.source)
        return self._outputs[name]


class IsolatedEstimator:
    """A read-only view of a fitted estimator whose prediction methods isolate failing rows.

    Used for callable scorers: the callable receives this view instead of the
    estimator, so that one row on which the estimator raises or returns a
    non-finite value changes only that row's prediction. A failing row gets a
    fixed fallback output: for ``predict`` the first of ``classes_`` (classifiers)
    or ``0.0``; for ``predict_proba`` the uniform distribution; for
    ``predict_log_proba`` its log; for ``decision_function`` zeros. ``score``
    is scikit-learn's default (accuracy for a classifier, R² for a regressor)
    computed from the isolated ``predict``. Rows are computed in fixed blocks,
    as described in this module's docstring: a row's output does not depend on
    which other rows fail.

    With ``frozen=(X, outputs, positions)`` the view serves, for the input
    object ``X`` itself, the outputs computed once on a larger input
    (``outputs``, a :class:`FrozenOutputs`) at ``positions`` (all rows if None).

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

    def __init__(self, estimator: Any, frozen: tuple[Any, FrozenOutputs, np.ndarray | None] | None = None) -> None:
        object.__setattr__(self, "_estimator", estimator)
        object.__setattr__(self, "_frozen", frozen)

    def freeze(self, X: Any) -> FrozenOutputs:
        """The outputs of this view's prediction methods on ``X``, each computed once when first asked for."""
        return FrozenOutputs(self, X)

    def __getattr__(self, name: str) -> Any:
        if name in self._METHODS:
            method = getattr(self._estimator, name)  # AttributeError if the estimator lacks it

            def isolated(X: Any) -> np.ndarray:
                frozen = self._frozen
                if frozen is not None and X is frozen[0]:
                    outputs = frozen[1].get(name, method)
                    return outputs.copy() if frozen[2] is None else outputs[frozen[2]]
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
        rows = RowBlocks(X)
        parts: list[np.ndarray | list[Any]] = []
        width: int | None = None
        failed: list[tuple[int, np.ndarray | None, list[tuple[np.ndarray, np.ndarray]], np.ndarray | None]] = []
        for block in fixed_blocks(rows.n_rows, rows.block_rows):
            out, failing, pieces = _isolate_block(lambda idx: method(rows.take(idx)), block)
            for arr in ([out] if out is not None else []) + [p for _, p in pieces]:
                if arr.ndim == 2:
                    width = arr.shape[1]
            if out is not None and failing is None:
                parts.append(out)
                continue
            failed.append((len(parts), failing, pieces, out))
            parts.append([])
        if not failed:
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        fallback = self._fallback(name, width)
        for slot, failing, pieces, out in failed:
            if failing is None:
                failing = np.zeros(len(out), dtype=bool)
            block_rows: list[Any] = [None] * failing.shape[0]
            if out is None:  # outside the per-row assumption: the bisection's outputs (module docstring)
                for pos, part in pieces:
                    for j, p in zip(pos, part, strict=True):
                        block_rows[j] = p
            else:
                block_rows = list(out)
            parts[slot] = [fallback if (failing[j] or block_rows[j] is None) else block_rows[j]
                           for j in range(failing.shape[0])]
        return np.asarray([row for part in parts for row in part])
