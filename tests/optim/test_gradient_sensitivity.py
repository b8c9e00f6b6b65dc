"""The *computed* margin-loss gradient of two neighbouring row sets moves by at most the declared sensitivity.

The noise of the DP trainers is calibrated to the sensitivity of the exact mean gradient,
``2 kappa R / n`` (L2 for the Gaussian variant, L1 for Laplace); the mechanisms' headroom is used by their
grid rounding, so the float rounding of the sum over rows must fit inside the sensitivity itself
(:meth:`privtune.optim._losses.MarginLoss.gradient`, Notes). With a float32 sum over blocks of 65 536 rows
one replaced row moved the computed mean by up to 1.0027 times the sensitivity on these pairs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.optim._losses import _SUM_BUDGET, MarginLoss, _block_rows, compact_rows


def _worst_ratio(loss, U, z, w, sens, ord_, positions):
    g = loss.gradient(w, U, z, 0.0)
    worst = 0.0
    for k in positions:
        U2 = U.copy()
        U2[k] = -U[k]  # replace one row by its opposite: still within the bounds
        worst = max(worst, float(np.linalg.norm(g - loss.gradient(w, U2, z, 0.0), ord=ord_)) / sens)
    return worst


@pytest.mark.parametrize("norm", ["l2", "l1"])
def test_neighbouring_float32_rows_move_the_computed_gradient_by_at_most_the_sensitivity(norm):
    # the audit's pair: n = 200 000 float32 rows (compact_rows, the estimators' default path), d = 2
    rng = np.random.default_rng(0)
    n, d = 200_000, 2
    X = np.ones(d) / math.sqrt(d) + 0.01 * rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    z = np.ones(n)
    loss = MarginLoss("logistic", 1.0, 0.5)
    U, _ = compact_rows(X, math.sqrt(d), 1.0, mode="rows", owner="t")
    r = 1.0 if norm == "l2" else math.sqrt(d)  # declared L2 bound 1; L1 bound min(R1, sqrt(d) R2) = sqrt(2)
    sens = 2 * 0.5 * r / n
    positions = list(range(0, n, 1999)) + [n - 1]
    # w = 0: every margin is 0, |c| = kappa on both sides, so the exact difference is the sensitivity
    # (times the rows' 1 - 2**-16 shrink): the pair is the worst case and the test measures something
    worst = _worst_ratio(loss, U, z, np.zeros(d), sens, 2 if norm == "l2" else 1, positions)
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


def test_block_rows_keep_the_float64_rounding_inside_the_slack():
    for n, d, itemsize in [(1, 1, 4), (80_000, 21, 4), (80_000, 21, 8), (10**7, 20, 4), (10**8, 3, 4),
                           (2 * 10**9, 50, 8)]:
        rows = _block_rows(n, d, itemsize)
        assert rows >= 1 and n * (rows + 4) <= _SUM_BUDGET
    assert _block_rows(80_000, 21, 4) == (1 << 19) // (4 * 21)  # the cache-sized block where it fits
    with pytest.raises(InvalidParameterError):
        _block_rows(_SUM_BUDGET // 5 + 1, 2, 4)


def test_gradient_is_the_shrunk_float64_mean():
    """The data term is (1 - 2**-16) times the mean, summed in float64 over several blocks."""
    rng = np.random.default_rng(3)
    n, d = 30_000, 5
    X = (rng.normal(size=(n, d)) / 3).astype(np.float32)
    z = rng.choice([-1.0, 1.0], size=n)
    w = rng.normal(size=d)
    loss = MarginLoss("logistic", 1.0, 0.7)
    c = loss.derivative(z.astype(np.float32) * (X @ w.astype(np.float32))).astype(np.float64) * z
    exact = (X.astype(np.float64).T @ c) / n * (1.0 - 2.0**-16)
    # (the blocks' float32 margins may round differently from the one-shot product: rtol 1e-7, far below
    # the 1.5e-5 of the shrink)
    np.testing.assert_allclose(loss.gradient(w, X, z, 0.0), exact, rtol=1e-7, atol=1e-16)
    np.testing.assert_allclose(loss.gradient(w, X, z, 0.1), exact + 0.1 * w, rtol=1e-7, atol=1e-16)
