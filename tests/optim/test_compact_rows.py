"""Float32 storage of the clipped rows (privtune.optim._losses.compact_rows) and its use by the solvers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.optim import dp_nesterov
from privtune.optim._losses import _FLOAT32_SHRINK, _GRADIENT_SHRINK, MarginLoss, clip_rows, compact_rows
from privtune.svm import DPLinearSVC


def _exact_sq_norm(row: np.ndarray) -> Fraction:
    """The squared L2 norm of a float row in exact rational arithmetic."""
    return sum((Fraction(float(v)) ** 2 for v in row), Fraction(0))


def _rows_at_and_over_the_bound(seed: int, n: int = 400, d: int = 37) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # norm 1 up to float64 rounding, either side of it
    X[::3] *= 1.0 + 1e-9  # just over
    X[1::7] *= 25.0  # far over
    return X


@pytest.mark.parametrize("seed", range(3))
def test_stored_rows_are_inside_the_l2_bound_in_exact_arithmetic(seed):
    X = _rows_at_and_over_the_bound(seed)
    U, s = compact_rows(X, math.inf, 1.0, mode="rows", owner="t", intercept=0.5)
    assert U.dtype == np.float32 and U.flags.f_contiguous and U.shape == (400, 38)  # column-major (issue 41)
    assert 0.0 < s < 0.5 and np.all(U[:, -1] == np.float32(s))
    for row in U[:, :-1]:
        assert _exact_sq_norm(row) < 1  # strictly inside, whatever float32 rounding did
    # and the whole augmented row stays inside sqrt(1 + 0.5^2), the bound the estimators declare
    assert all(_exact_sq_norm(row) < Fraction(5, 4) for row in U[:50])


def test_stored_rows_are_inside_the_l1_bound_in_exact_arithmetic():
    X = _rows_at_and_over_the_bound(3, d=5)
    X /= np.abs(X).sum(axis=1, keepdims=True)  # L1 norm 1 up to rounding
    X[::2] *= 3.0
    U, _ = compact_rows(X, 1.0, 10.0, mode="rows", owner="t")
    for row in U:
        assert sum((abs(Fraction(float(v))) for v in row), Fraction(0)) < 1


def test_rows_inside_the_bound_are_only_scaled_by_the_public_shrink():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.1, 0.1, size=(50, 4))  # far inside norm 1
    U, s = compact_rows(X, math.inf, 1.0, mode="rows", owner="t")
    assert s == 0.0 and U.shape == (50, 4)
    np.testing.assert_allclose(U, X * _FLOAT32_SHRINK, rtol=1e-7)


def test_raise_mode_refuses_rows_over_the_bound_without_a_value_in_the_message():
    X = np.array([[0.6, 0.0], [123.456, 0.0]])
    with pytest.raises(InvalidParameterError, match=r"^Some row\(s\) of 'X'") as err:
        compact_rows(X, math.inf, 1.0, mode="raise", owner="t")
    assert "123" not in str(err.value)


def test_clip_rows_keeps_float32_and_clips_with_the_float32_margin():
    X = _rows_at_and_over_the_bound(4).astype(np.float32)
    out = clip_rows(X, math.inf, 1.0, mode="rows", owner="t")
    assert out.dtype == np.float32
    for row in out:
        assert _exact_sq_norm(row) < 1
    stored, _ = compact_rows(X.astype(np.float64), math.inf, 1.0, mode="rows", owner="t")
    assert clip_rows(stored, math.inf, 1.0, mode="raise", owner="t") is stored  # never flagged again


@pytest.mark.parametrize("loss", ["logistic", "smoothed_hinge"])
def test_float32_gradient_matches_float64(loss):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 12)) / 4
    z = rng.choice([-1.0, 1.0], size=3000)
    w = rng.normal(size=12)
    L = MarginLoss(loss, smoothing=0.5, max_slope=0.7)
    g64 = L.gradient(w, X, z, 0.1)
    g32 = L.gradient(w, X.astype(np.float32), z.astype(np.float32), 0.1)
    assert g32.dtype == np.float64
    np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-6)


def test_solver_on_float32_rows_follows_the_float64_run():
    """Same seed, same noise: the float32 run's iterates stay within float32 rounding of the float64 run's."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 6))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X @ np.arange(1.0, 7.0) + rng.normal(size=2000) > 0, 1.0, -1.0)
    U32, _ = compact_rows(X, math.inf, 1.0, mode="rows", owner="t")
    kw = dict(epsilon=1.0, alpha=1e-3, data_norm=1.0, n_iter=30, noise="gaussian", delta=1e-6, random_state=5)
    a = dp_nesterov(X * _FLOAT32_SHRINK, y, **kw)
    b = dp_nesterov(U32, y, **kw)
    assert b.x.dtype == np.float64
    np.testing.assert_allclose(b.x, a.x, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("Est", [DPLogisticRegression, DPLinearSVC])
def test_estimator_model_is_the_model_of_the_stored_rows(Est):
    """coef_ absorbs the shrink: the decision function on the (clipped) rows equals the solver's margins."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = Est(epsilon=5.0, classes=[0, 1], random_state=0).fit(X, y)
    w = clf.optimize_result_.x
    U, s = compact_rows(X, math.inf, 1.0, mode="rows", owner="t", intercept=0.5)
    np.testing.assert_allclose(clf.decision_function(X), U.astype(np.float64) @ w, rtol=1e-5, atol=1e-6)


def test_compact_rows_are_not_rescanned_for_the_same_bounds_but_are_for_tighter_ones():
    X = _rows_at_and_over_the_bound(5, d=6)
    U, s = compact_rows(X, math.inf, 1.0, mode="rows", owner="t", intercept=0.5)
    assert U.bounds == (math.inf, math.hypot(1.0, 0.5))
    assert clip_rows(U, math.inf, math.hypot(1.0, 0.5), mode="raise", owner="t") is U
    tighter = clip_rows(U, math.inf, 0.5, mode="rows", owner="t")  # a smaller bound: checked and clipped again
    assert tighter is not U and all(_exact_sq_norm(row) < Fraction(1, 4) for row in tighter)
    with pytest.raises(InvalidParameterError):
        clip_rows(U, math.inf, 0.5, mode="raise", owner="t")


def test_gradient_blocks_sum_to_the_unblocked_gradient():
    """More rows than one block (about 512 KiB): the blocked float64 gradient equals the one-shot formula."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(20_000, 9)) / 3  # 20 000 x 9 float64 = 1.4 MiB: three blocks
    z = rng.choice([-1.0, 1.0], size=20_000)
    w = rng.normal(size=9)
    L = MarginLoss("logistic")
    direct = X.T @ (L.derivative(z * (X @ w)) * z) / 20_000 * _GRADIENT_SHRINK + 0.2 * w  # the gradient's shrink
    np.testing.assert_allclose(L.gradient(w, X, z, 0.2), direct, rtol=1e-12, atol=1e-15)
