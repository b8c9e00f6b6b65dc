"""The multinomial (softmax) loss of the accelerated solvers: its gradient, its clipping and its sensitivity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.optim import dp_accelerated
from privtune.optim._losses import SoftmaxLoss, compact_rows, map_into_domain


def _rows(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = np.abs(rng.normal(size=(n, d))) + 1.0
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_unclipped_gradient_is_the_cross_entropy_gradient():
    """With kappa = 1 nothing is clipped: the gradient is (1 - 2**-13 - tiny) times the finite-difference one."""
    rng = np.random.default_rng(0)
    n, d, k = 50, 3, 4
    U = rng.normal(size=(n, d)) * 0.5
    z = rng.integers(0, k, size=n).astype(float)
    w = rng.normal(size=k * d)
    loss = SoftmaxLoss(k, max_slope=1.0)
    g = loss.gradient(w, U, z, 0.0)
    h = 1e-6
    fd = np.array([(loss.objective(w + h * e, U, z, 0.0) - loss.objective(w - h * e, U, z, 0.0)) / (2 * h)
                   for e in np.eye(k * d)])
    np.testing.assert_allclose(g, fd * (1 - 2**-13) * (1 - 2**-20), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(loss.gradient(w, U, z, 0.3) - g, 0.3 * w, rtol=1e-12)


@pytest.mark.parametrize("k", [2, 3, 10, 1000])
def test_residuals_stay_inside_both_coefficient_bounds(k):
    """Whatever the logits (huge, tied, extreme), every rounded residual is within c (L2) and min(2, sqrt(K) c)
    (L1), and nothing is clipped at W = 0 with kappa = 1/2 (the residual there has norm exactly c)."""
    rng = np.random.default_rng(k)
    loss = SoftmaxLoss(k, max_slope=0.5)
    logits = np.concatenate([rng.normal(size=(200, k)) * s for s in (0.0, 1.0, 30.0, 1e6, 1e300)])
    logits[0] = 0.0
    labels = rng.integers(0, k, size=logits.shape[0])
    for dtype in (np.float64, np.float32):
        r = loss.residuals(logits, labels).astype(dtype).astype(np.float64)
        assert np.all(np.linalg.norm(r, axis=1) <= loss.coefficient_bound(2))
        assert np.all(np.abs(r).sum(axis=1) <= loss.coefficient_bound(1))
    at_zero = loss.residuals(np.zeros((1, k)), np.array([0]))[0]
    assert np.linalg.norm(at_zero) == pytest.approx(loss.clip * (1 - 2**-20), rel=1e-12)
    assert loss.clip == pytest.approx(math.sqrt((k - 1) / k))


@pytest.mark.parametrize("k", [3, 7])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_neighbouring_rows_move_the_computed_gradient_by_at_most_the_sensitivity(k, dtype):
    """At W = 0 every row's residual has norm c: replacing a row by its opposite moves the exact mean by the
    sensitivity 2 c R / n, so the pair is the worst case and the computed difference must stay below it."""
    n, d = 20_003, 3
    X = _rows(n, d, 1)
    U = np.asarray(compact_rows(X, math.sqrt(d), 1.0, mode="rows", owner="t")[0]) if dtype == "float32" else X
    loss = SoftmaxLoss(k, max_slope=0.5)
    z = np.zeros(n)
    w = np.zeros(k * d)
    g = loss.gradient(w, U, z, 0.0)
    sens = 2 * loss.coefficient_bound(2) * 1.0 / n
    worst = 0.0
    for i in [0, 31, 32, 10_000, n - 3, n - 1]:
        U2 = U.copy()
        U2[i] = -U[i]
        worst = max(worst, float(np.linalg.norm(g - loss.gradient(w, U2, z, 0.0))) / sens)
    assert 0.99 < worst <= 1.0, worst


def test_clipped_residuals_bound_the_change_away_from_zero():
    """At a W with large logits (residuals clipped), a row replaced by any row with any label moves the mean by
    at most 2 c R / n, in L2 and (with the L1 coefficient bound) in L1."""
    rng = np.random.default_rng(3)
    n, d, k = 4000, 5, 4
    U = _rows(n, d, 2)
    z = rng.integers(0, k, size=n).astype(float)
    loss = SoftmaxLoss(k, max_slope=0.5)
    w = rng.normal(size=k * d) * 20
    g = loss.gradient(w, U, z, 0.0)
    l1_rows = float(np.abs(U).sum(axis=1).max())
    for i in range(0, n, 397):
        U2, z2 = U.copy(), z.copy()
        U2[i] = _rows(1, d, 100 + i)[0] * (-1) ** i
        z2[i] = (z[i] + 1 + i) % k
        diff = g - loss.gradient(w, U2, z2, 0.0)
        assert np.linalg.norm(diff) <= 2 * loss.coefficient_bound(2) / n
        assert np.abs(diff).sum() <= 2 * loss.coefficient_bound(1) * l1_rows / n


def test_labels_outside_the_classes_become_zero_rows():
    U = np.ones((5, 2))
    z = np.array([0.0, 2.0, 3.0, 1.5, np.nan])
    V, y = map_into_domain(U, z, n_classes=3)
    assert V[:2].all() and not V[2:].any()
    assert y.tolist() == [0.0, 2.0, 0.0, 0.0, 0.0]


def test_dp_accelerated_fits_k_classes_and_charges_one_run():
    rng = np.random.default_rng(0)
    n, k = 3000, 3
    y = rng.integers(0, k, size=n)
    X = np.eye(3)[y] * 0.7 + rng.normal(size=(n, 3)) * 0.1
    acc = Accountant(Budget(2.0, 1e-6), method="rdp")
    res = dp_accelerated(X, y.astype(float), solver="nag", epsilon=2.0, alpha=1e-3, data_norm=1.0,
                         loss="multinomial", n_classes=k, noise="gaussian", delta=1e-6, max_slope=0.5,
                         horizon="auto", output="tail_average", accountant=acc, random_state=0)
    W = res.x.reshape(k, 3)
    assert res.iterates.shape[1] == k * 3 and len(acc.entries) == 1
    assert np.mean(np.argmax(X @ W.T, axis=1) == y) > 0.95
    assert res.epsilon <= 2.0 and res.sensitivity == pytest.approx(2 * math.sqrt(2 / 3))


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(loss="multinomial"), "needs n_classes"),
    (dict(loss="logistic", n_classes=3), "is for the losses"),
    (dict(loss="multinomial", n_classes=1), "n_classes"),
    (dict(loss="multinomial", n_classes=2.5), "n_classes"),
])
def test_n_classes_is_checked_before_the_charge(kwargs, match):
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match=match):
        dp_accelerated(np.zeros((10, 2)), np.zeros(10), epsilon=1.0, alpha=0.01, data_norm=1.0, accountant=acc,
                       **kwargs)
    assert len(acc.entries) == 0


@pytest.mark.parametrize("h", [1.0, 0.5])
def test_the_multiclass_smoothed_hinge_is_a_smooth_crammer_singer_hinge(h):
    """Margin 1 and width h: the gradient is that of h * CE((W u + 1 - e_y) / h), and the loss lies within
    h ln K above Crammer & Singer's hinge max(0, max_{j != y} 1 + w_j.u - w_y.u)."""
    rng = np.random.default_rng(5)
    n, d, k = 40, 3, 5
    U = rng.normal(size=(n, d)) * 0.5
    z = rng.integers(0, k, size=n).astype(float)
    w = rng.normal(size=k * d) * 2
    loss = SoftmaxLoss(k, max_slope=1.0, margin=1.0, smoothing=h)
    assert loss.name == "multiclass_smoothed_hinge" and loss.curvature_bound() == pytest.approx(0.5 / h)
    loss.clip = math.sqrt(2.0)  # the largest residual norm: no clipping (the loss's own gradient is checked here)
    g = loss.gradient(w, U, z, 0.0)
    step = 1e-6
    fd = np.array([(loss.objective(w + step * e, U, z, 0.0) - loss.objective(w - step * e, U, z, 0.0)) / (2 * step)
                   for e in np.eye(k * d)])
    np.testing.assert_allclose(g, fd * (1 - 2**-13) * (1 - 2**-20), rtol=1e-5, atol=1e-8)
    scores = U @ w.reshape(k, d).T
    idx = z.astype(int)
    other = scores + 1.0
    other[np.arange(n), idx] = -np.inf
    hinge = np.maximum(0.0, other.max(axis=1) - scores[np.arange(n), idx])
    per_row = [SoftmaxLoss(k, 1.0, margin=1.0, smoothing=h).objective(w, U[i:i + 1], z[i:i + 1], 0.0)
               for i in range(n)]
    assert np.all(per_row >= hinge - 1e-12) and np.all(per_row <= hinge + h * math.log(k) + 1e-12)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_runs_with_budget_shares_compose_to_one_run(noise):
    """K runs with budget_share 1/K: Gaussian precisions (zCDP rho) sum to the one full run's; Laplace epsilons
    sum to at most epsilon."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3)) * 0.3
    y = np.where(rng.random(500) < 0.5, 1.0, -1.0)
    kw = dict(solver="nag", epsilon=1.0, alpha=1e-3, data_norm=1.0, noise=noise, horizon="auto",
              delta=1e-6 if noise == "gaussian" else None, random_state=0)
    full = dp_accelerated(X, y, **kw)
    parts = [dp_accelerated(X, y, budget_share=1 / 3, **kw) for _ in range(3)]
    if noise == "gaussian":
        precision = [float(np.sum(1.0 / r.extra["noise_multipliers"] ** 2)) for r in (full, *parts)]
        assert math.fsum(precision[1:]) == pytest.approx(precision[0], rel=1e-12)
    else:
        assert math.fsum(r.epsilon for r in parts) <= 1.0 and full.epsilon <= 1.0
        assert parts[0].epsilon == pytest.approx(1 / 3, rel=1e-9)


@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize(("margin", "h", "kappa"), [(0.0, 1.0, 0.5), (1.0, 1.0, 1.0), (1.0, 0.5, 1.0)])
def test_at_the_default_slope_nothing_is_clipped_at_the_start(k, margin, h, kappa):
    """The clip is (kappa / kappa_0) times the residual's norm at W = 0 (kappa_0: 1/2 multinomial, 1 hinge), so at
    the estimators' defaults the first step's residuals are unclipped, and half the slope halves the clip."""
    loss = SoftmaxLoss(k, max_slope=kappa, margin=margin, smoothing=h)
    e = math.exp(margin / h)
    p_y, p_j = 1 / (1 + (k - 1) * e), e / (1 + (k - 1) * e)
    r0 = math.sqrt((1 - p_y) ** 2 + (k - 1) * p_j**2)
    assert loss.clip == pytest.approx(min(r0, math.sqrt(2)), rel=1e-12)
    start = loss.residuals(loss._logits(np.zeros((k, k)), np.arange(k)), np.arange(k))
    np.testing.assert_allclose(np.linalg.norm(start, axis=1), r0 * (1 - 2**-20), rtol=1e-12)
    half = SoftmaxLoss(k, max_slope=kappa / 2, margin=margin, smoothing=h)
    assert half.clip == pytest.approx(loss.clip / 2, rel=1e-12)
