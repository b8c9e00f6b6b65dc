"""The *computed* margin-loss gradient of two neighbouring row sets moves by at most the declared sensitivity.

The noise of the DP trainers is calibrated to the sensitivity of the exact mean gradient,
``2 kappa R / n`` (L2 for the Gaussian variant, L1 for Laplace); the mechanisms' headroom is used by their
grid rounding, so the float rounding of the sum over rows must fit inside the sensitivity itself
(:meth:`privtune.optim._losses.MarginLoss.gradient`, Notes). With a float32 sum over blocks of 65 536 rows
one replaced row moved the computed mean by up to 1.0027 times the sensitivity on these pairs.

Float32 rows are summed in float32 over sub-blocks of ``_SUB_ROWS`` rows fixed by position, and the partials
in float64; the proof needs every partial of a sub-block without the replaced row to be the same bits on both
sides, which the tests below check (other rows changed, the array at another address), together with the
bound's arithmetic and the error model it rests on.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import privtune.optim._row_sums as row_sums_mod
from privtune.exceptions import InvalidParameterError
from privtune.optim._losses import (
    _GRADIENT_SHRINK,
    _SUB_ROWS,
    _SUM_BUDGET,
    MarginLoss,
    _block_rows,
    _chunk_partials,
    _max_rows,
    _sub_block_sums,
    compact_rows,
)


def _worst_ratio(loss, U, z, w, sens, ord_, positions):
    g = loss.gradient(w, U, z, 0.0)
    worst = 0.0
    for k in positions:
        U2 = U.copy(order="K")  # the same layout: the rounding follows it, and no path lets the rows choose it
        U2[k] = -U[k]  # replace one row by its opposite: still within the bounds
        worst = max(worst, float(np.linalg.norm(g - loss.gradient(w, U2, z, 0.0), ord=ord_)) / sens)
    return worst


def _audit_pair():
    """The audit's rows: n = 200 000 float32 rows (compact_rows, the estimators' default path), d = 2."""
    rng = np.random.default_rng(0)
    n, d = 200_000, 2
    X = np.ones(d) / math.sqrt(d) + 0.01 * rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    U, _ = compact_rows(X, math.sqrt(d), 1.0, mode="rows", owner="t")
    return np.asarray(U), np.ones(n)


@pytest.mark.parametrize("norm", ["l2", "l1"])
def test_neighbouring_float32_rows_move_the_computed_gradient_by_at_most_the_sensitivity(norm):
    U, z = _audit_pair()
    n, d = U.shape
    loss = MarginLoss("logistic", 1.0, 0.5)
    r = 1.0 if norm == "l2" else math.sqrt(d)  # declared L2 bound 1; L1 bound min(R1, sqrt(d) R2) = sqrt(2)
    sens = 2 * 0.5 * r / n
    positions = list(range(0, n, 1999)) + [n - 1]
    # w = 0: every margin is 0, |c| = kappa on both sides, so the exact difference is the sensitivity
    # (times the rows' 1 - 2**-16 shrink): the pair is the worst case and the test measures something
    worst = _worst_ratio(loss, U, z, np.zeros(d), sens, 2 if norm == "l2" else 1, positions)
    assert 0.99 < worst <= 1.0, worst


class _PlusMinusOneLabels(MarginLoss):
    """The solvers' path (:meth:`MarginLoss._gradient_pm1`, labels known to be +-1) under ``gradient``'s name."""

    def gradient(self, w, U, z, alpha):
        assert alpha == 0.0
        return self._gradient_pm1(w, U, z)


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("loss_class", [MarginLoss, _PlusMinusOneLabels])
def test_the_audit_pair_detects_float32_sums_over_too_many_rows(monkeypatch, layout, loss_class):
    """The pair above has power: with float32 sub-blocks of 16 384 rows (a local rounding of up to about
    16384**2 2**-24 = 16 times the sensitivity; BLAS's several accumulators keep it far lower) the computed
    difference exceeds the sensitivity, in either layout. (At 4 096 rows it did in C order only: the
    column-major product's accumulation is the more accurate.)"""
    monkeypatch.setattr(row_sums_mod, "_SUB_ROWS", 16384)  # where the sum reads it
    U, z = _audit_pair()
    U = np.ascontiguousarray(U) if layout == "C" else np.asfortranarray(U)
    n, d = U.shape
    worst = _worst_ratio(loss_class("logistic", 1.0, 0.5), U, z, np.zeros(d), 2 * 0.5 / n, 2,
                         list(range(0, n, 1999)))
    assert worst > 1.0, worst


def test_the_audit_pair_stays_within_the_sensitivity_on_the_solvers_path():
    """The estimators' path: column-major float32 rows (compact_rows) and the +-1-label gradient."""
    U, z = _audit_pair()
    assert U.flags.f_contiguous
    n, d = U.shape
    worst = _worst_ratio(_PlusMinusOneLabels("logistic", 1.0, 0.5), U, z, np.zeros(d), 2 * 0.5 / n, 2,
                         list(range(0, n, 1999)))
    assert 0.99 < worst <= 1.0, worst


def test_neighbouring_float32_rows_in_the_last_short_sub_block():
    # n not a multiple of the sub-block: the last sub-block (3 rows) has its own product; every row at its bound
    rng = np.random.default_rng(2)
    n, d = 40_003, 4
    X = np.abs(rng.normal(size=(n, d))) + 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    U = np.asarray(compact_rows(X, math.sqrt(d), 1.0, mode="rows", owner="t")[0])
    loss = MarginLoss("smoothed_hinge", 1.0, 0.5)
    positions = [0, 31, 32, 20_000, n - 4, n - 3, n - 2, n - 1]
    worst = _worst_ratio(loss, U, np.ones(n), np.zeros(d), 2 * 0.5 / n, 2, positions)
    assert 0.99 < worst <= 1.0, worst


def test_neighbouring_float64_rows_at_the_bound_stay_within_the_sensitivity():
    # float64 rows of norm exactly 1 (clip_rows keeps them as they are), smoothed hinge at w = 0: every
    # per-row term has norm kappa R exactly, so the exact difference equals the sensitivity and any rounding
    # without the gradient's slack would exceed it
    rng = np.random.default_rng(1)
    n, d = 50_000, 3
    X = np.abs(rng.normal(size=(n, d))) + 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    z = np.ones(n)
    loss = MarginLoss("smoothed_hinge", 1.0, 1.0)
    sens = 2 * 1.0 * max(float(np.linalg.norm(X, axis=1).max()), 1.0) / n
    worst = _worst_ratio(loss, X, z, np.zeros(d), sens, 2, range(0, n, 997))
    assert 0.99 < worst <= 1.0, worst


def _at_offset(A: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``A`` (in its layout, C or Fortran) whose data starts ``offset`` bytes after a 64-byte boundary."""
    raw = np.empty(A.nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    fortran = A.ndim > 1 and A.flags.f_contiguous and not A.flags.c_contiguous
    out = raw[start:start + A.nbytes].view(A.dtype).reshape(A.shape, order="F" if fortran else "C")
    out[...] = A
    assert out.ctypes.data % 64 == offset
    return out


def test_a_sub_block_partial_does_not_depend_on_the_other_rows_nor_on_the_address():
    """The proof's step (3): the float32 partial of a sub-block is the same bits whatever the other rows and
    derivatives are and wherever the arrays are in memory; and a row's margin depends on that row only."""
    rng = np.random.default_rng(4)
    m, d = 6 * _SUB_ROWS + 5, 21  # six full sub-blocks and a short one
    U = rng.normal(size=(m, d)).astype(np.float32)
    c = rng.uniform(-1.0, 1.0, size=m).astype(np.float32)
    w = rng.normal(size=d).astype(np.float32)
    count = -(-m // _SUB_ROWS)
    base = np.empty((count, d), np.float32)
    _sub_block_sums(c, U, base)
    # the partials are the float32 sums of their own rows (not one running sum)
    exact = np.array([c[i:i + _SUB_ROWS].astype(np.float64) @ U[i:i + _SUB_ROWS].astype(np.float64)
                      for i in range(0, m, _SUB_ROWS)])
    np.testing.assert_allclose(base, exact, rtol=1e-5, atol=1e-5)
    margins = U @ w
    for k in range(count):
        rows = np.arange(k * _SUB_ROWS, min(m, (k + 1) * _SUB_ROWS))
        for trial in range(5):
            U2 = rng.normal(size=(m, d)).astype(np.float32) * (10.0 ** trial)
            c2 = rng.uniform(-1.0, 1.0, size=m).astype(np.float32)
            U2[rows], c2[rows] = U[rows], c[rows]
            out = np.full((count, d), np.nan, np.float32)
            _sub_block_sums(c2, U2, out)
            assert out[k].tobytes() == base[k].tobytes()
            assert (U2 @ w)[rows].tobytes() == margins[rows].tobytes()
    for offset in range(4, 64, 4):  # every float32 alignment within a cache line
        out = np.empty((count, d), np.float32)
        Uo, co = _at_offset(U, offset), _at_offset(c, offset)
        _sub_block_sums(co, Uo, out)
        assert out.tobytes() == base.tobytes()
        assert (Uo @ _at_offset(w, offset)).tobytes() == margins.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gradient_does_not_depend_on_the_address_of_the_rows(dtype):
    rng = np.random.default_rng(5)
    n, d = 13_337, 21  # two blocks and a short sub-block at the end
    U = (rng.normal(size=(n, d)) / 5).astype(dtype)
    z = rng.choice([-1.0, 1.0], size=n)
    w = rng.normal(size=d)
    loss = MarginLoss("logistic", 1.0, 0.5)
    g = loss.gradient(w, U, z, 0.0)
    for offset in (4, 8, 20, 36, 60):
        if offset % U.itemsize == 0:
            assert loss.gradient(w, _at_offset(U, offset), z, 0.0).tobytes() == g.tobytes()
    # float32 rows in Fortran order (compact_rows's) are read in that order, with their own rounding: also the
    # same bits wherever they are, for both of the solvers' paths (gradient and the +-1-label _gradient_pm1)
    F = np.asfortranarray(U)
    gf, gp = loss.gradient(w, F, z, 0.0), loss._gradient_pm1(w, F, z)
    assert _at_offset(F, 0).flags.f_contiguous
    for offset in (4, 8, 20, 36, 60):
        if offset % U.itemsize == 0:
            assert loss.gradient(w, _at_offset(F, offset), z, 0.0).tobytes() == gf.tobytes()
            assert loss._gradient_pm1(w, _at_offset(F, offset), z).tobytes() == gp.tobytes()
    # a C-contiguous copy of any other layout is read like C rows
    assert loss.gradient(w, U[:, ::-1][:, ::-1], z, 0.0).tobytes() == g.tobytes()


def _gamma(k: int, u: Fraction) -> Fraction:
    return k * u / (1 - k * u)


def test_the_bound_is_below_the_sensitivity_in_exact_arithmetic():
    """The docstring's final inequality, with the module's constants, at the largest float64 depth allowed."""
    s = 1 - Fraction(_GRADIENT_SHRINK)
    u32, u64 = Fraction(1, 2**24), Fraction(1, 2**53)
    b = _SUB_ROWS
    clip = 1 + u32  # |c| <= kappa (1 + 2**-24)
    local = b * _gamma(b, u32)
    for depth in (3, 1000, _SUM_BUDGET // 4):  # n * depth <= _SUM_BUDGET
        n = _SUM_BUDGET // depth
        glob = n * _gamma(depth, u64)
        ratio32 = (1 - s) * clip * (1 + local + glob * (1 + _gamma(b, u32)))
        ratio64 = (1 - s) * clip * (1 + glob)
        assert ratio32 < 1 - Fraction(1, 2**15) and ratio64 < 1 - Fraction(1, 2**15)
    assert local <= Fraction(1, 2**14) * (1 + Fraction(1, 2**18))
    # and the slack is what makes it hold: without it the local term alone exceeds the sensitivity
    assert clip * (1 + local) > 1


def test_the_bound_with_underflow_is_below_the_sensitivity_in_exact_arithmetic():
    """The docstring's underflow term inside float32's range of storage_dtype (kappa R >= N(D) 2**-102): the
    2 (2 b - 1) roundings of the replaced row's sub-block (both neighbours), each off by < 2**-126 absolutely and
    carried through at most b further roundings, add at most 2**-17 to the bracket, which stays below 1 - 2**-15."""
    s = 1 - Fraction(_GRADIENT_SHRINK)
    u32, u64 = Fraction(1, 2**24), Fraction(1, 2**53)
    b = _SUB_ROWS
    clip = 1 + u32
    local = b * _gamma(b, u32)
    # per coordinate 2 (2b - 1)(1 + gamma_b) 2**-126; in norm times N(D); relative to 2 kappa R >= 2 N(D) 2**-102
    underflow = 2 * (2 * b - 1) * (1 + _gamma(b, u32)) * Fraction(1, 2**126) / (2 * Fraction(1, 2**102))
    assert underflow <= Fraction(1, 2**17)
    for depth in (3, 1000, _SUM_BUDGET // 4):
        n = _SUM_BUDGET // depth
        glob = n * _gamma(depth, u64)
        ratio32 = (1 - s) * clip * (1 + local + glob * (1 + _gamma(b, u32)) + Fraction(1, 2**17))
        assert ratio32 < 1 - Fraction(1, 2**15)


def test_block_rows_and_chunks_keep_the_rounding_inside_the_slack():
    for n, d in [(1, 1), (31, 2), (80_000, 21), (10**7, 20), (10**8, 3), (2 * 10**9, 50), (_max_rows(), 2)]:
        rows32 = _block_rows(n, d, 4)
        assert rows32 >= _SUB_ROWS and rows32 % _SUB_ROWS == 0
        rows64 = _block_rows(n, d, 8)
        assert rows64 >= 1 and n * (rows64 + 3) <= _SUM_BUDGET
        partials = -(-n // _SUB_ROWS)
        chunk = _chunk_partials(n, partials)
        assert 1 <= chunk <= partials and n * (chunk + 2) <= _SUM_BUDGET
    assert _block_rows(80_000, 21, 4) == (1 << 19) // (4 * 21) // _SUB_ROWS * _SUB_ROWS  # cache-sized
    assert _chunk_partials(80_000, 2_500) == 2_500  # one float64 chunk at the benchmark's size
    for itemsize in (4, 8):
        with pytest.raises(InvalidParameterError):
            _block_rows(_max_rows() + 1, 2, itemsize)


@pytest.mark.parametrize("n", [30_000, 31])
def test_the_float32_gradient_is_within_the_proven_rounding_of_the_shrunk_mean(n):
    """The error model behind the bound: ``|H - (1 - s) X / n| <= (1 - s)(gamma32_b + gamma64_{C+2}(1 +
    gamma32_b)) T / n`` per coordinate, with ``X`` and ``T`` computed exactly from the same derivatives."""
    rng = np.random.default_rng(3)
    d = 5
    X = (rng.normal(size=(n, d)) / 3).astype(np.float32)
    z = rng.choice([-1.0, 1.0], size=n)
    w = rng.normal(size=d)
    loss = MarginLoss("logistic", 1.0, 0.7)
    rows = _block_rows(n, d, 4)
    zf, wf = z.astype(np.float32), w.astype(np.float32)
    c = np.concatenate([loss.derivative(zf[i:i + rows] * (X[i:i + rows] @ wf)) * zf[i:i + rows]
                        for i in range(0, n, rows)]).astype(np.float64)
    terms = c[:, None] * X.astype(np.float64)  # exact products of float32 values
    exact = np.array([math.fsum(col) for col in terms.T])
    T = np.array([math.fsum(col) for col in np.abs(terms).T])
    chunk = _chunk_partials(n, -(-n // _SUB_ROWS))
    g32, g64 = _SUB_ROWS * 2.0**-24 / (1 - _SUB_ROWS * 2.0**-24), (chunk + 2) * 2.0**-53 / (1 - (chunk + 2) * 2.0**-53)
    bound = _GRADIENT_SHRINK * (g32 + g64 * (1 + g32)) * T / n
    H = loss.gradient(w, X, z, 0.0)
    err = np.abs(H - _GRADIENT_SHRINK * exact / n)
    assert np.all(err <= bound * (1 + 1e-9)), (err, bound)
    assert np.any(err > 0)  # float32 partials do round here
    np.testing.assert_allclose(loss.gradient(w, X, z, 0.1), H + 0.1 * w, rtol=0, atol=0)
