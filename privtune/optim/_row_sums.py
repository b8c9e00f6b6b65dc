r"""The sum over rows of the margin losses' gradients, with its position-fixed float32 sub-blocks (internal).

:func:`_weighted_row_mean` is the summation of :meth:`privtune.optim._losses.MarginLoss.gradient` and
:meth:`privtune.optim._losses.SoftmaxLoss.gradient`: float32 rows summed over sub-blocks of 32 rows fixed by
position, their partials in float64 chunks added with :func:`math.fsum`, float64 rows block by block, and the data
term shrunk by ``1 - 2**-13``. Its rounding bound, and why the computed gradients of neighbouring row sets stay
within the sensitivity, are in the Notes of :meth:`~privtune.optim._losses.MarginLoss.gradient`. (Split from
:mod:`privtune.optim._losses` in issue 39, which re-exports every name of this module; a test that monkeypatches a
constant such as ``_SUB_ROWS`` patches it here.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

# MarginLoss.gradient works through the rows in blocks of about this many bytes (fits in a core's L2 cache).
_BLOCK_BYTES = 1 << 19
# Float32 rows with one coefficient per row (the margin losses) go through blocks of about this many bytes: the
# per-block numpy calls, not the cache, set the pace there (80 000 x 21: 0.58 ms per gradient at 512 KiB, 0.44 ms at
# 8 MiB), and the rows stream from the last-level cache or memory either way.
_F32_BLOCK_BYTES = 1 << 23
# Float32 rows are summed in float32 over sub-blocks of this many consecutive rows (fixed by position), and the
# sub-blocks' partial sums in float64 (see MarginLoss.gradient, "Sensitivity of the computed gradient").
_SUB_ROWS = 32
# MarginLoss.gradient multiplies the data term's mean by this factor: the relative slack 2**-13 pays for the
# rounding of the sum over rows (float32 within the replaced row's sub-block, float64 everywhere) ...
_GRADIENT_SHRINK = 1.0 - 2.0**-13
# ... provided that n * (float64 rounding depth) <= _SUM_BUDGET (then n * gamma64_depth <= 2**-16 (1 + 2**-15)).
_SUM_BUDGET = 2**37

def _max_rows() -> int:
    """The largest number of rows the margin-loss gradient accepts (``2**37 / 4``; the budget needs depth >= 4)."""
    return _SUM_BUDGET // 4


def _check_rows(n: int) -> None:
    if n > _max_rows():
        raise InvalidParameterError(
            f"The margin-loss gradient supports at most {_max_rows()} rows per batch (its float64 sum's "
            f"rounding must stay inside the sensitivity's slack); got {n}.")


def _block_rows(n: int, d: int, itemsize: int) -> int:
    """Rows per block of the margin-loss gradient (about 512 KiB of rows; ``n`` and ``d`` are public).

    Float32 rows: a multiple of ``_SUB_ROWS``, so that the sub-blocks are the
    same runs of ``_SUB_ROWS`` rows (counted from row 0) whatever the block
    size. Float64 rows: also ``n (rows + 3) <= 2**37``, which bounds the float64
    rounding of the one-level sum.

    Raises
    ------
    InvalidParameterError
        If ``n > 2**37 / 4``.
    """
    _check_rows(n)
    if itemsize == 4:
        return max(_SUB_ROWS, _BLOCK_BYTES // (4 * max(d, 1)) // _SUB_ROWS * _SUB_ROWS)
    return min(max(256, _BLOCK_BYTES // (itemsize * max(d, 1))), _SUM_BUDGET // max(n, 1) - 3)


def _chunk_partials(n: int, partials: int) -> int:
    """Float64 chunk length for the sub-blocks' partials: at most ``partials``, and ``n (chunk + 2) <= 2**37``."""
    _check_rows(n)
    return max(1, min(partials, _SUM_BUDGET // max(n, 1) - 2))


def _sub_block_sums(c: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """``out[k] = c[32k:32k+32] @ rows[32k:32k+32]`` for every sub-block of ``_SUB_ROWS`` rows, in ``rows``' dtype.

    One BLAS vector-matrix product per sub-block (numpy's stacked ``matmul``),
    on that sub-block's derivatives and rows only; a last, shorter sub-block
    gets its own product. ``out`` has ``ceil(len(c) / _SUB_ROWS)`` rows.
    """
    b = _SUB_ROWS
    m, d = rows.shape
    full = m // b
    if full:
        np.matmul(c[:full * b].reshape(full, 1, b), rows[:full * b].reshape(full, b, d), out=out[:full, None, :])
    if m > full * b:
        out[full] = c[full * b:] @ rows[full * b:]

def _f32_block_rows(n: int, d: int) -> int:
    """Rows per block of the float32 one-coefficient sum: about 8 MiB of rows, a multiple of ``_SUB_ROWS``."""
    _check_rows(n)
    return max(_SUB_ROWS, _F32_BLOCK_BYTES // (4 * max(d, 1)) // _SUB_ROWS * _SUB_ROWS)


def _weighted_row_mean(U: np.ndarray, w: np.ndarray, coefficients: Any, columns: int = 0,
                       coefficient_scale: float = 1.0) -> np.ndarray:
    """``(1 - 2**-13) / n`` times ``sum_i c_i u_i`` (or ``sum_i c_i u_i^T`` for coefficient rows ``c_i`` in R^K).

    ``coefficients(U_b, start, w_b)`` returns the coefficients of the block of
    rows ``U_b`` starting at row ``start``, in ``U_b``'s dtype: shape
    ``(rows,)`` when ``columns == 0``, else ``(rows, columns)``; ``w_b`` is
    ``w`` in that dtype. Each row's coefficients must depend on that row, its
    position and ``w`` only. The summation is the one whose rounding
    :meth:`~privtune.optim._losses.MarginLoss.gradient` bounds (float32 sub-blocks of 32 rows fixed by
    position, float64 chunks, ``fsum``), applied to each column; the result has
    shape ``(d,)`` or ``(columns, d)``. Blocks are processed one at a time, so
    the sums read the rows the coefficients have just brought into cache.

    ``coefficient_scale`` (a power of two, or 1): the coefficients returned are
    ``c_i / coefficient_scale`` and the result is multiplied back by it in
    float64 at the end; a power-of-two scale is exact, so this is the same
    sum (the logistic loss returns ``2 c_i``, one pass fewer over the rows).
    Float32, one coefficient per row only.

    **Layout.** Float32 rows in column-major (Fortran) order, as
    :func:`~privtune.optim._row_storage.compact_rows` stores them, are read in
    that order (the margins ``U_b w`` are then a column-major BLAS product,
    about three times faster at 21 columns); every other array is made
    C-contiguous first. The rounding of the margins and of the partials
    depends on that layout (not on the address), so the layout must never
    depend on the rows: the estimators' rows are always column-major
    (``compact_rows``), ``dp_accelerated`` makes every other input C-contiguous,
    and :func:`~privtune.optim._row_storage.clip_rows` keeps the layout of what
    it copies.
    """
    if not (U.dtype == np.float32 and U.ndim == 2 and U.flags.f_contiguous):
        U = np.ascontiguousarray(U, dtype=U.dtype if U.dtype in (np.float32, np.float64) else np.float64)
    with np.errstate(all="ignore"):  # no warning may depend on a row (an overflowing margin is mapped, see above)
        if U.dtype == np.float32 and not columns:
            return _float32_row_sum(U, w.astype(np.float32, copy=False), coefficients) * coefficient_scale
        if coefficient_scale != 1.0:
            raise ValueError("coefficient_scale is for float32 rows with one coefficient per row.")
        return _weighted_row_sum(U, w, coefficients, columns)


def _weighted_row_sum(U: np.ndarray, w: np.ndarray, coefficients: Any, columns: int) -> np.ndarray:
    """The body of :func:`_weighted_row_mean` (``U`` C-contiguous float32 or float64)."""
    dt = U.dtype
    wd = w.astype(dt, copy=False)  # beyond float32's range an entry becomes inf: the margins map it
    n, d = U.shape
    rows = _block_rows(n, d, U.itemsize)
    single = dt == np.float32
    k_cols = max(columns, 1)
    if single:  # float32 partials of the sub-blocks, in row order, per column
        partials = np.empty((k_cols, -(-n // _SUB_ROWS), d), dtype=np.float32)
    else:
        parts = np.zeros((k_cols, max(1, -(-n // rows)), d))
    k = 0
    for block, start in enumerate(range(0, n, rows)):
        Ub = U[start:start + rows]
        c = coefficients(Ub, start, wd)
        c = c.reshape(-1, 1) if not columns else c
        count = -(-Ub.shape[0] // _SUB_ROWS)
        for col in range(k_cols):
            cb = np.ascontiguousarray(c[:, col])
            if single:  # rows is a multiple of _SUB_ROWS: the sub-blocks start at multiples of it from row 0
                _sub_block_sums(cb, Ub, partials[col, k:k + count])
            else:
                parts[col, block] = cb @ Ub
        k += count
    totals = np.empty((k_cols, d))
    for col in range(k_cols):
        if single:  # exact conversion; float64 sums of chunks of partials, any order
            exact = partials[col].astype(np.float64)
            chunk = _chunk_partials(n, exact.shape[0])
            ones = np.ones(chunk)
            sums = np.array([ones[:min(chunk, exact.shape[0] - i)] @ exact[i:i + chunk]
                             for i in range(0, exact.shape[0], chunk)]).reshape(-1, d)
            if sums.shape[0] == 0:
                sums = np.zeros((1, d))
        else:
            sums = parts[col]
        if sums.shape[0] == 1:
            totals[col] = sums[0]
        else:
            totals[col] = np.array([math.fsum(v) for v in sums.T.tolist()])
    g = (totals / n) * _GRADIENT_SHRINK
    return g if columns else g[0]


def _float32_row_sum(U: np.ndarray, wd: np.ndarray, coefficients: Any) -> np.ndarray:
    """:func:`_weighted_row_sum` for float32 rows (C or Fortran order) and one coefficient per row.

    The same summation (float32 sub-blocks of ``_SUB_ROWS`` rows fixed by
    position, their partials converted exactly and summed in float64 chunks,
    ``fsum``), written for speed: blocks of about 8 MiB of rows, no per-block
    column loop or copy of the coefficients, and the partials converted and
    summed once at the end (the order of the float64 sum is free in the
    proof). The partials are the same bits as the general loop's for the same
    coefficients and layout.
    """
    n, d = U.shape
    rows = _f32_block_rows(n, d)
    partials = np.empty((-(-n // _SUB_ROWS), d), dtype=np.float32)
    k = 0
    for start in range(0, n, rows):
        Ub = U[start:start + rows]
        count = -(-Ub.shape[0] // _SUB_ROWS)
        _sub_block_sums(coefficients(Ub, start, wd), Ub, partials[k:k + count])
        k += count
    exact = partials.astype(np.float64)
    chunk = _chunk_partials(n, exact.shape[0])
    if chunk >= exact.shape[0]:
        total = np.ones(exact.shape[0]) @ exact
    else:
        ones = np.ones(chunk)
        sums = np.array([ones[:min(chunk, exact.shape[0] - i)] @ exact[i:i + chunk]
                         for i in range(0, exact.shape[0], chunk)])
        total = np.array([math.fsum(v) for v in sums.T.tolist()])
    return (total / n) * _GRADIENT_SHRINK
