"""k1 ⊗ k2: GPyTorch-evaluated k2 against closed forms, k1 validation, PSD checks."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from gp_reference import closed_form_k2, consistent_task_matrix

from privtune.exceptions import InvalidParameterError
from privtune.gp import InputKernel, MultiTaskKernel, TaskKernel


@pytest.mark.parametrize("kind", ["matern52", "rbf"])
@pytest.mark.parametrize("lengthscale", [0.3, [0.2, 0.5, 1.5]])
def test_input_kernel_matches_closed_form(kind, lengthscale):
    rng = np.random.default_rng(0)
    A, B = rng.random((20, 3)), rng.random((7, 3))
    k = InputKernel(lengthscale, kind=kind)
    np.testing.assert_allclose(k(A, B), closed_form_k2(A, B, lengthscale, kind), rtol=0, atol=1e-12)


def test_matern_and_rbf_values_at_known_distances():
    x0 = np.zeros((1, 1))
    pts = np.array([[0.0], [0.1], [0.25]])
    ls = 0.25
    r = pts[:, 0] / ls
    mat = (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    np.testing.assert_allclose(InputKernel(ls)(pts, x0)[:, 0], mat, atol=1e-14)
    np.testing.assert_allclose(InputKernel(ls, kind="rbf")(pts, x0)[:, 0], np.exp(-r**2 / 2),
                               atol=1e-14)
    assert InputKernel(ls)(pts[2:], x0)[0, 0] == pytest.approx(
        (1 + np.sqrt(5) + 5 / 3) * np.exp(-np.sqrt(5)), abs=1e-14)


@pytest.mark.parametrize("kind", ["matern52", "rbf"])
def test_unit_diagonal_and_psd(kind):
    X = np.random.default_rng(1).random((60, 2))
    k = InputKernel([0.3, 0.1], kind=kind)
    K = k(X, X)
    np.testing.assert_allclose(np.diag(K), 1.0, atol=1e-12)
    np.testing.assert_array_equal(k.diag(X), np.ones(60))
    np.testing.assert_allclose(K, K.T, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -1e-10


def test_lengthscale_is_frozen_and_exact():
    k = InputKernel([0.2, 0.7])
    params = list(k._module.parameters())
    assert params and all(not p.requires_grad for p in params)
    np.testing.assert_allclose(k._module.lengthscale.numpy().ravel(), [0.2, 0.7], rtol=1e-15)
    assert k.lengthscale == (0.2, 0.7) and k.n_dims == 2
    assert InputKernel(0.4).n_dims is None


def test_input_kernel_does_not_use_torch_global_rng_and_pickles():
    state = torch.random.get_rng_state()
    k = InputKernel(0.3)
    k(np.random.default_rng(0).random((5, 2)), np.zeros((1, 2)))
    assert torch.equal(torch.random.get_rng_state(), state)
    k2 = pickle.loads(pickle.dumps(k))
    assert k2 == k
    X = np.random.default_rng(2).random((4, 2))
    np.testing.assert_array_equal(k2(X, X), k(X, X))


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((0.0,), {}, "'lengthscale'"),
        ((-1.0,), {}, "'lengthscale'"),
        ((float("nan"),), {}, "'lengthscale'"),
        ((float("inf"),), {}, "'lengthscale'"),
        (([0.1, -0.2],), {}, "'lengthscale'"),
        (([],), {}, "'lengthscale'"),
        (("0.1",), {}, "'lengthscale'"),
        ((0.1,), {"kind": "matern32"}, "'kind'"),
    ],
)
def test_invalid_input_kernels(args, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        InputKernel(*args, **kwargs)


def test_input_kernel_refuses_mismatched_points():
    k = InputKernel([0.1, 0.2])
    with pytest.raises(InvalidParameterError, match="2 columns"):
        k(np.zeros((3, 3)), np.zeros((1, 3)))
    with pytest.raises(InvalidParameterError, match="NaN"):
        InputKernel(0.1)(np.array([[np.nan]]), np.zeros((1, 1)))


def test_task_kernel_defaults_and_product():
    tk = TaskKernel(0.95)
    assert tk.n_tasks == 1 and tk.task_correlation == 0.95
    B = [[1.0, 0.6, 0.2], [0.6, 1.0, 0.3], [0.2, 0.3, 1.0]]
    mk = MultiTaskKernel(InputKernel(0.3), TaskKernel(0.9, B))
    assert mk.task_correlation == 0.9 and mk.n_tasks == 3
    rng = np.random.default_rng(3)
    X = rng.random((12, 2))
    t = rng.integers(0, 3, size=12)
    K = mk(t, X, t, X)
    expected = np.asarray(B)[np.ix_(t, t)] * closed_form_k2(X, X, 0.3, "matern52")
    np.testing.assert_allclose(K, expected, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-10


@pytest.mark.parametrize(
    ("rho", "B", "match"),
    [
        (1.0, None, "'task_correlation'"),
        (-0.1, None, "'task_correlation'"),
        (float("nan"), None, "'task_correlation'"),
        (0.9, [[1.0, 0.5], [0.4, 1.0]], "symmetric"),
        (0.9, [[1.0, 0.5], [0.5, 0.9]], "unit diagonal"),
        (0.9, [[1.0, 1.5], [1.5, 1.0]], r"\[-1, 1\]"),
        (0.9, [[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]], "positive semi-definite"),
        (0.9, [[1.0, np.nan], [np.nan, 1.0]], "NaN"),
        (0.9, [1.0, 0.5], "square"),
        (0.9, "abc", "square matrix"),
        (0.95, [[1.0, 0.99], [0.99, 1.0]], "inconsistent"),
    ],
)
def test_invalid_task_kernels(rho, B, match):
    with pytest.raises(InvalidParameterError, match=match):
        TaskKernel(rho, B)


def test_joint_consistency_boundary():
    # corr 0.99 with a public task needs task_correlation >= 2 * 0.99**2 - 1
    TaskKernel(2 * 0.99**2 - 1 + 1e-6, [[1.0, 0.99], [0.99, 1.0]])
    B = consistent_task_matrix(np.random.default_rng(0), 3, 0.8)
    assert TaskKernel(0.8, B).n_tasks == 4


def test_task_indices_are_checked():
    mk = MultiTaskKernel(InputKernel(0.3), TaskKernel(0.9, [[1.0, 0.5], [0.5, 1.0]]))
    X = np.zeros((1, 1))
    for bad in ([2], [-1], [0.0], [True]):
        with pytest.raises(InvalidParameterError, match="Task indices"):
            mk(bad, X, [0], X)
    with pytest.raises(InvalidParameterError):
        MultiTaskKernel(TaskKernel(0.9), InputKernel(0.3))


@pytest.mark.parametrize("kind", ["matern52", "rbf"])
@pytest.mark.parametrize("lengthscale", [0.2, (0.1, 0.5, 1.0)])
def test_numpy_column_equals_gpytorch(kind, lengthscale):
    """InputKernel.column (numpy, the BO loop's hot path) agrees with GPyTorch's kernel within 1e-12."""
    import torch

    rng = np.random.default_rng(3)
    k = InputKernel(lengthscale, kind=kind)
    X = rng.random((400, 3))
    for j in (0, 17, 399):
        ours = k.column(X, X[j])
        theirs = k._covariance(torch.from_numpy(X), torch.from_numpy(X[j:j + 1]))[:, 0]
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
        assert ours[j] == pytest.approx(1.0, abs=1e-15)
