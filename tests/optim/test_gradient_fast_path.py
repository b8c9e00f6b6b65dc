"""The margin-loss gradient's fast path (issue 41) computes what the reference computation does.

Three changes made ``DPLogisticRegression``'s fit faster: the rows are stored column-major
(:func:`compact_rows`), the float32 one-coefficient sum runs over large blocks with the same sub-blocks
(:func:`_float32_row_sum`), and the solvers fold the +-1 labels into the logistic derivative
(:meth:`MarginLoss._gradient_pm1`). The tests below check each against a reference computation, bit for bit where
the arithmetic is the same, and that the layout the gradient sees is set by the code path, never by the rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privtune.optim._losses as losses_mod
import privtune.optim._row_sums as row_sums_mod
from privtune.linear_model import DPLogisticRegression
from privtune.optim import dp_accelerated
from privtune.optim._losses import (
    _GRADIENT_SHRINK,
    _SUB_ROWS,
    MarginLoss,
    _chunk_partials,
    clip_rows,
    compact_rows,
    map_into_domain,
    zero_non_finite,
)


def _rows(n, d, layout, seed=0, scale=0.3):
    U = (np.random.default_rng(seed).normal(size=(n, d)) * scale).astype(np.float32)
    return np.asfortranarray(U) if layout == "F" else np.ascontiguousarray(U)


def _reference(loss, w, U, z):
    """The formula of MarginLoss.gradient before issue 41, on the whole array at once: margins ``z (U w)`` in
    float32, ``c = z phi'(margin)``, float32 partials over sub-blocks of 32 rows (one BLAS product each), their sum
    in float64, times ``(1 - 2**-13) / n``."""
    zf, wf = z.astype(np.float32), w.astype(np.float32)
    c = loss.derivative(zf * (U @ wf)) * zf
    n, d = U.shape
    parts = np.empty((-(-n // _SUB_ROWS), d), np.float32)
    row_sums_mod._sub_block_sums(np.ascontiguousarray(c), U, parts)
    return (np.ones(parts.shape[0]) @ parts.astype(np.float64) / n) * _GRADIENT_SHRINK


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("name", ["logistic", "smoothed_hinge"])
@pytest.mark.parametrize("kappa", [0.5, 1.0])
@pytest.mark.parametrize("w_scale", [0.0, 1.0, 30.0])
def test_the_gradient_equals_the_reference_formula_bit_for_bit(layout, name, kappa, w_scale):
    n, d = 3 * _SUB_ROWS * 7 + 13, 21  # a short last sub-block
    U = _rows(n, d, layout)
    rng = np.random.default_rng(1)
    z = rng.choice([-1.0, 1.0], size=n)
    w = rng.normal(size=d) * w_scale
    loss = MarginLoss(name, 1.0, kappa)
    ref = _reference(loss, w, U, z)
    assert loss.gradient(w, U, z, 0.0).tobytes() == ref.tobytes()
    assert loss._gradient_pm1(w, U, z).tobytes() == ref.tobytes()  # labels folded: the same bits
    np.testing.assert_array_equal(loss.gradient(w, U, z, 0.25), ref + 0.25 * w)


@pytest.mark.parametrize("layout", ["C", "F"])
def test_the_large_block_sum_equals_the_general_loop(monkeypatch, layout):
    """_float32_row_sum (blocks of 8 MiB) against the general per-block loop (_weighted_row_sum) on the same
    blocks: the same partials, the same float64 sum; and with several blocks and several float64 chunks."""
    n, d = 40_000 + 7, 9
    U = _rows(n, d, layout, seed=2)
    z = np.random.default_rng(3).choice([-1.0, 1.0], size=n)
    w = np.random.default_rng(4).normal(size=d)
    loss = MarginLoss("logistic", 1.0, 0.5)
    zf = z.astype(np.float32)

    def coefficients(Ub, start, wd):
        zb = zf[start:start + Ub.shape[0]]
        return loss.derivative(zb * (Ub @ wd)) * zb

    for block_bytes in (1 << 12, 1 << 16):  # 3 to 113 blocks
        monkeypatch.setattr(row_sums_mod, "_F32_BLOCK_BYTES", block_bytes)
        monkeypatch.setattr(row_sums_mod, "_BLOCK_BYTES", block_bytes)
        assert row_sums_mod._f32_block_rows(n, d) == row_sums_mod._block_rows(n, d, 4)
        fast = row_sums_mod._float32_row_sum(U, w.astype(np.float32), coefficients)
        slow = row_sums_mod._weighted_row_sum(U, w, coefficients, 0)
        assert fast.tobytes() == slow.tobytes()
    monkeypatch.setattr(row_sums_mod, "_SUM_BUDGET", 8 * n)  # float64 chunks of 6 partials, added with fsum
    assert _chunk_partials(n, -(-n // _SUB_ROWS)) == 6
    assert (row_sums_mod._float32_row_sum(U, w.astype(np.float32), coefficients).tobytes()
            == row_sums_mod._weighted_row_sum(U, w, coefficients, 0).tobytes())


@pytest.mark.parametrize("layout", ["C", "F"])
def test_the_folded_gradient_is_within_the_proven_rounding_of_the_exact_mean(layout):
    """The error model of the sensitivity proof, for _gradient_pm1: ``|H - (1 - s) X / n| <= (1 - s)(gamma32_b +
    gamma64_{C+2}(1 + gamma32_b)) T / n``, ``X``, ``T`` computed exactly from the derivatives in float32."""
    n, d = 30_000, 5
    U = _rows(n, d, layout, seed=5, scale=1 / 3)
    rng = np.random.default_rng(6)
    z = rng.choice([-1.0, 1.0], size=n)
    w = rng.normal(size=d)
    loss = MarginLoss("logistic", 1.0, 0.7)
    zf, wf = z.astype(np.float32), w.astype(np.float32)
    c = (loss.derivative(zf * (U @ wf)) * zf).astype(np.float64)
    terms = c[:, None] * U.astype(np.float64)
    exact = np.array([math.fsum(col) for col in terms.T])
    T = np.array([math.fsum(col) for col in np.abs(terms).T])
    chunk = _chunk_partials(n, -(-n // _SUB_ROWS))
    g32 = _SUB_ROWS * 2.0**-24 / (1 - _SUB_ROWS * 2.0**-24)
    g64 = (chunk + 2) * 2.0**-53 / (1 - (chunk + 2) * 2.0**-53)
    err = np.abs(loss._gradient_pm1(w, U, z) - _GRADIENT_SHRINK * exact / n)
    assert np.all(err <= _GRADIENT_SHRINK * (g32 + g64 * (1 + g32)) * T / n * (1 + 1e-9))
    assert np.any(err > 0)


def test_a_nan_margin_gets_a_coefficient_inside_the_bound():
    """An iterate beyond float32's range makes 0 * inf = NaN margins: the folded path maps them to -kappa (the
    reference to -kappa z), both inside |c| <= kappa; the gradient stays finite and within kappa R."""
    n, d = 64, 3
    U = _rows(n, d, "F", seed=7)
    U[:, 0] = 0.0  # 0 * inf in every margin
    z = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    w = np.array([1e300, 1.0, -1.0])
    loss = MarginLoss("logistic", 1.0, 0.5)
    g = loss._gradient_pm1(w, U, z)
    assert np.all(np.isfinite(g))
    expected = -0.5 * U.astype(np.float64).sum(axis=0) / n * _GRADIENT_SHRINK
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-12)
    assert np.all(np.isfinite(loss.gradient(w, U, z, 0.0)))


def _spy_layouts(monkeypatch):
    seen = []
    real = row_sums_mod._weighted_row_mean

    def spy(U, *args, **kwargs):
        seen.append((U.dtype, bool(U.flags.f_contiguous), bool(U.flags.c_contiguous)))
        return real(U, *args, **kwargs)

    monkeypatch.setattr(losses_mod, "_weighted_row_mean", spy)
    return seen


@pytest.mark.parametrize("case", ["inside", "clipped", "non-finite", "foreign label"])
def test_the_estimator_rows_are_column_major_whatever_the_rows(monkeypatch, case):
    """The layout sets the rounding, so it must not depend on the rows: DPLogisticRegression's rows reach the
    gradient column-major whether or not a row is clipped, has a non-finite entry or a label outside the classes."""
    rng = np.random.default_rng(8)
    X = rng.uniform(-0.1, 0.1, size=(500, 4))
    y = (X[:, 0] > 0).astype(int)
    if case == "clipped":
        X[3] *= 1000.0
    elif case == "non-finite":
        X[5, 1] = np.nan
    elif case == "foreign label":
        y[7] = 2
    seen = _spy_layouts(monkeypatch)
    DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert seen and all(dt == np.float32 and f and not c for dt, f, c in seen), seen


@pytest.mark.parametrize("clipped", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
def test_dp_accelerated_reads_any_user_array_in_c_order(monkeypatch, clipped, order):
    rng = np.random.default_rng(9)
    X = rng.uniform(-0.2, 0.2, size=(300, 3)).astype(np.float32)
    if clipped:
        X[4] = 10.0
    X = np.asfortranarray(X) if order == "F" else np.ascontiguousarray(X)
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    y[9] = 0.5  # a label outside {-1, +1}: mapped to the zero row
    seen = _spy_layouts(monkeypatch)
    dp_accelerated(X, y, epsilon=1.0, alpha=0.01, data_norm=1.0, random_state=0, n_iter=3)
    assert seen and all(c for _, _, c in seen), seen


def test_the_row_maps_keep_the_layout():
    F = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(4, 3))
    F[1, 2] = np.inf
    assert zero_non_finite(F).flags.f_contiguous and zero_non_finite(F)[1, 2] == 0
    U, z = map_into_domain(np.asfortranarray(np.ones((4, 3), np.float32)), np.array([1.0, 0.3, -1.0, 1.0]))
    assert U.flags.f_contiguous and not U[1].any() and z[1] == 1.0
    big = np.asfortranarray(np.full((4, 3), 2.0, np.float32))
    out = clip_rows(big, math.inf, 1.0, mode="rows", owner="t")
    assert out.flags.f_contiguous and np.all(np.linalg.norm(out.astype(np.float64), axis=1) <= 1.0)
    rows, _ = compact_rows(np.ones((5, 2)), 2.0, 1.0, mode="rows", owner="t", intercept=0.5)
    assert rows.flags.f_contiguous
