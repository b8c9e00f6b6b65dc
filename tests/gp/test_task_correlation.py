"""estimate_task_correlation: Kusner et al.'s §6 likelihood of k1(V, V') (Figure 1)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gp_reference import closed_form_k2
from scipy.stats import multivariate_normal, qmc

from privtune.exceptions import InvalidParameterError
from privtune.gp import InputKernel, ScoreScale
from privtune.gp._task_correlation import TaskCorrelationCurve, estimate_task_correlation

STEP = 0.05
NOISE = 1e-2
TRUE_LS = 0.3


@pytest.fixture(scope="module")
def sobol30() -> np.ndarray:
    return qmc.Sobol(2, scramble=True, seed=np.random.default_rng(0)).random(32)[:30]


def sample_pairs(X, k1, *, n_pairs=200, seed=0, ls=TRUE_LS, kind="matern52", noise=NOISE):
    """Scores in [0, 1] units drawn from the two-task GP prior B(k1) ⊗ k2 + noise (bounds (0, 1))."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    K = closed_form_k2(X, X, ls, kind)
    B = np.array([[1.0, k1], [k1, 1.0]])
    L = np.linalg.cholesky(np.kron(B, K) + noise * np.eye(2 * n))
    Z = (L @ rng.standard_normal((2 * n, n_pairs))).T  # standardised scale
    return 0.5 + 0.5 * Z[:, :n], 0.5 + 0.5 * Z[:, n:]  # ScoreScale(0, 1): v = 0.5 + 0.5 z


def estimate(FV, FVp, X, ls=TRUE_LS, kind="matern52", **kw):
    return estimate_task_correlation(FV, FVp, X, input_kernel=InputKernel(ls, kind=kind),
                                     noise_var=NOISE, score_bounds=(0.0, 1.0), **kw)


# --- (1) consistency of the MLE on data drawn from the model itself -----------------------

@pytest.mark.parametrize("k1", [0.7, 0.9])
@pytest.mark.parametrize("seed", [0, 1])
def test_maximiser_recovers_the_true_task_correlation(sobol30, k1, seed):
    FV, FVp = sample_pairs(sobol30, k1, seed=seed)
    curve = estimate(FV, FVp, sobol30)
    assert abs(curve.best - k1) <= STEP + 1e-9
    assert curve.n_pairs == 200 and curve.n_models == 30
    assert not curve.at_grid_edge


def test_swapping_the_sign_of_the_correlation_is_detected(sobol30):
    # Negative control: flipping V' about the middle of the bounds (z' -> -z') is data from
    # k1 = -0.7; the estimate must then leave the truth 0.7 far behind (to the grid's low edge).
    FV, FVp = sample_pairs(sobol30, 0.7)
    curve = estimate(FV, 1.0 - FVp, sobol30)
    assert abs(curve.best - 0.7) > STEP + 1e-9
    assert curve.best == pytest.approx(0.05) and curve.at_grid_edge


@pytest.mark.parametrize("ls, kind, expected", [(1.0, "matern52", 0.6), (0.15, "rbf", 0.8)])
def test_a_wrong_input_kernel_moves_the_maximiser_off_the_truth(sobol30, ls, kind, expected):
    # Negative control: k1 is mostly a correlation, so a wrong k2 biases it only mildly, but
    # by more than one grid step here; and the true k2 is far more likely than the wrong one.
    FV, FVp = sample_pairs(sobol30, 0.7)
    right = estimate(FV, FVp, sobol30)
    wrong = estimate(FV, FVp, sobol30, ls=ls, kind=kind)
    assert right.best == pytest.approx(0.7)
    assert abs(wrong.best - 0.7) > STEP + 1e-9
    assert wrong.best == pytest.approx(expected)
    assert right.log_likelihood.max() > wrong.log_likelihood.max() + 100.0


# --- (2) agreement with an independent dense computation --------------------------------

@pytest.mark.parametrize("kind", ["matern52", "rbf"])
@pytest.mark.parametrize("noise", [1e-3, 0.5])
def test_log_likelihood_matches_dense_multivariate_normal(kind, noise):
    rng = np.random.default_rng(3)
    n_pairs, n_models, ls = 3, 5, [0.4, 0.25]
    X = rng.random((n_models, 2))
    FV = rng.uniform(-2.0, 3.0, size=(n_pairs, n_models))
    FVp = FV + 0.3 * rng.standard_normal((n_pairs, n_models))
    grid = [0.01, 0.3, 0.5, 0.77, 0.99]
    curve = estimate_task_correlation(
        FV, FVp, X, input_kernel=InputKernel(ls, kind=kind), noise_var=noise,
        score_bounds=ScoreScale(-2.0, 3.0), grid=grid)
    mid, half = 0.5, 2.5
    Y = np.hstack([(FV - mid) / half, (FVp - mid) / half])
    K = closed_form_k2(X, X, ls, kind)
    expected = []
    for k1 in grid:
        cov = np.kron(np.array([[1.0, k1], [k1, 1.0]]), K) + noise * np.eye(2 * n_models)
        expected.append(sum(multivariate_normal(np.zeros(2 * n_models), cov).logpdf(y) for y in Y))
    np.testing.assert_allclose(curve.log_likelihood, expected, rtol=0, atol=1e-8)
    assert curve.best == grid[int(np.argmax(expected))]
    np.testing.assert_array_equal(curve.grid, grid)


def test_one_pair_one_model_closed_form():
    # n = 1: (z, z') ~ N(0, [[1 + s, k1], [k1, 1 + s]]), written out by hand.
    z, zp, s, k1 = 0.4, -0.2, 0.1, 0.6
    curve = estimate_task_correlation([[0.7]], [[0.4]], [[0.5]], input_kernel=InputKernel(0.2),
                                      noise_var=s, score_bounds=(0, 1), grid=[k1])
    a, det = 1.0 + s, (1.0 + s) ** 2 - k1**2
    quad = (a * z * z - 2 * k1 * z * zp + a * zp * zp) / det
    assert curve.log_likelihood[0] == pytest.approx(-0.5 * quad - 0.5 * np.log(det) - np.log(2 * np.pi),
                                                    abs=1e-12)


# --- result object -----------------------------------------------------------------------

def test_default_grid_is_the_papers_and_the_result_is_frozen(sobol30):
    FV, FVp = sample_pairs(sobol30, 0.9, n_pairs=5)
    curve = estimate(FV, FVp, sobol30)
    np.testing.assert_allclose(curve.grid, np.arange(0.05, 0.951, 0.05), atol=1e-12)
    assert curve.grid.size == 19 and curve.log_likelihood.shape == (19,)
    assert curve.best == curve.grid[curve.best_index]
    assert curve.best_index == int(np.argmax(curve.log_likelihood))
    assert isinstance(curve, TaskCorrelationCurve)
    with pytest.raises(dataclasses.FrozenInstanceError):
        curve.best = 0.5  # type: ignore[misc]
    with pytest.raises(ValueError):
        curve.log_likelihood[0] = 0.0
    with pytest.raises(ValueError):
        curve.grid[0] = 0.5
    text = repr(curve)
    assert text.startswith("TaskCorrelationCurve(best=")
    for part in ("n_pairs=5", "n_models=30", "InputKernel(", "noise_var=0.01", "ScoreScale(", "19 values"):
        assert part in text


def test_accepts_a_candidate_set_and_flags_a_maximiser_at_the_grid_edge():
    from privtune.space import Real, SearchSpace, candidate_set

    space = SearchSpace({"C": Real(1e-2, 1e2, log=True), "gamma": Real(1e-3, 1.0, log=True)})
    lam = candidate_set(space, 8, random_state=0)
    rng = np.random.default_rng(0)
    FV = 0.8 + 0.05 * rng.standard_normal((20, 8))
    FVp = FV + 1e-3 * rng.standard_normal((20, 8))  # neighbours nearly identical: k1 -> 1
    curve = estimate_task_correlation(FV, FVp, lam, input_kernel=InputKernel(0.2), noise_var=1e-4,
                                      score_bounds=(0, 1))
    assert curve.best == pytest.approx(0.95) and curve.at_grid_edge
    assert "at the grid edge" in repr(curve)
    assert np.all(np.diff(curve.log_likelihood) > 0)


# --- (3) validation ------------------------------------------------------------------------

def _good():
    rng = np.random.default_rng(0)
    X = rng.random((4, 2))
    FV = rng.random((3, 4))
    return FV, FV.copy(), X


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: {**a, "scores_V": a["scores_V"][:, :3]}, "same shape"),
        (lambda a: {**a, "scores_V": a["scores_V"][0]}, "dimension"),
        (lambda a: {**a, "scores_V_prime": np.where(np.eye(3, 4) > 0, np.nan, a["scores_V"])}, "NaN"),
        (lambda a: {**a, "scores_V": np.full((3, 4), np.inf)}, "NaN or infinite"),
        (lambda a: {**a, "scores_V": np.empty((0, 4)), "scores_V_prime": np.empty((0, 4))}, "empty"),
        (lambda a: {**a, "scores_V": [["a"] * 4] * 3}, "real numbers"),
        (lambda a: {**a, "X": a["X"][:3]}, "n_models"),
        (lambda a: {**a, "X": a["X"][:, 0]}, "dimension"),
        (lambda a: {**a, "X": a["X"] * np.nan}, "NaN"),
        (lambda a: {**a, "X": a["X"] + 1.0}, "unit cube"),
        (lambda a: {**a, "input_kernel": "matern52"}, "InputKernel"),
        (lambda a: {**a, "noise_var": -1e-3}, "noise_var"),
        (lambda a: {**a, "noise_var": float("nan")}, "noise_var"),
        (lambda a: {**a, "score_bounds": (1.0, 0.0)}, "lower < upper"),
        (lambda a: {**a, "score_bounds": 1.0}, "score_bounds"),
        (lambda a: {**a, "grid": [0.0, 0.5]}, r"strictly inside \(0, 1\)"),
        (lambda a: {**a, "grid": [0.5, 1.0]}, r"strictly inside \(0, 1\)"),
        (lambda a: {**a, "grid": [-0.5]}, r"strictly inside \(0, 1\)"),
        (lambda a: {**a, "grid": [0.5, np.nan]}, "NaN"),
        (lambda a: {**a, "grid": [[0.5]]}, "dimension"),
        (lambda a: {**a, "grid": []}, "empty"),
    ],
)
def test_invalid_inputs_raise(change, match):
    FV, FVp, X = _good()
    args = {"scores_V": FV, "scores_V_prime": FVp, "X": X, "input_kernel": InputKernel(0.3),
            "noise_var": 1e-2, "score_bounds": (0, 1), "grid": [0.5]}
    args = change(args)
    with pytest.raises(InvalidParameterError, match=match):
        estimate_task_correlation(args.pop("scores_V"), args.pop("scores_V_prime"), args.pop("X"),
                                  **args)


def test_singular_covariance_raises_an_actionable_error():
    X = np.array([[0.2, 0.2], [0.2, 0.2], [0.7, 0.1]])  # a duplicate model, no noise
    F = np.full((2, 3), 0.5)
    with pytest.raises(InvalidParameterError, match="not numerically positive definite"):
        estimate_task_correlation(F, F, X, input_kernel=InputKernel(0.3), noise_var=0.0,
                                  score_bounds=(0, 1))
    curve = estimate_task_correlation(F, F, X, input_kernel=InputKernel(0.3), noise_var=1e-6,
                                      score_bounds=(0, 1))
    assert np.all(np.isfinite(curve.log_likelihood))


def test_per_coordinate_lengthscale_must_match_d():
    FV, FVp, X = _good()
    with pytest.raises(InvalidParameterError, match="columns"):
        estimate_task_correlation(FV, FVp, X, input_kernel=InputKernel([0.2, 0.3, 0.4]),
                                  noise_var=1e-2, score_bounds=(0, 1))
