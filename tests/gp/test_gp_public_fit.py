"""fit_public_hyperparameters: public-only marginal-likelihood fit, frozen output."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gp_reference import closed_form_k2

from privtune.exceptions import InvalidParameterError
from privtune.gp import InputKernel, TaskKernel, fit_public_hyperparameters


def sample_public_tasks(rng, n, lengthscale, B, noise):
    X = rng.random((n, 2))
    K = closed_form_k2(X, X, [lengthscale, lengthscale], "matern52")
    full = np.kron(B, K) + noise * np.eye(B.shape[0] * n)
    f = np.linalg.cholesky(full) @ rng.normal(size=B.shape[0] * n)
    return X, f


def test_single_task_lengthscale_is_recovered_roughly():
    rng = np.random.default_rng(0)
    X, f = sample_public_tasks(rng, 60, 0.3, np.ones((1, 1)), 1e-3)
    y = 0.5 + 0.25 * f  # scores in [0, 1]-ish units; scale maps them back to f
    res = fit_public_hyperparameters(X, y, score_bounds=(0, 1), ard=False, noise_var=1e-3,
                                     random_state=0)
    assert 0.15 < res.lengthscale < 0.6
    assert res.task_labels == (0,) and res.noise_var == 1e-3
    k = res.input_kernel()
    assert isinstance(k, InputKernel) and k.lengthscale == res.lengthscale


def test_two_public_tasks_give_a_valid_frozen_task_matrix_and_leave_torch_rng_alone():
    rng = np.random.default_rng(1)
    B = np.array([[1.0, 0.9], [0.9, 1.0]])
    X, f = sample_public_tasks(rng, 30, 0.3, B, 1e-3)
    Xall, tasks = np.vstack([X, X]), np.repeat([4, 9], 30)
    state = torch.random.get_rng_state()
    res = fit_public_hyperparameters(Xall, 0.5 + 0.25 * f, tasks, score_bounds=(0, 1),
                                     random_state=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert res.task_labels == (4, 9)
    C = res.correlations
    np.testing.assert_array_equal(np.diag(C), 1.0)
    assert C[0, 1] > 0.5 and np.linalg.eigvalsh(C).min() > -1e-12
    assert not C.flags.writeable
    assert len(res.lengthscale) == 2 and all(v > 0 for v in res.lengthscale)
    # usable as declared public-task correlations (private row declared separately)
    full = np.eye(3)
    full[1:, 1:] = C
    full[0, 1:] = full[1:, 0] = 0.3
    assert TaskKernel(0.9, full).n_tasks == 3


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros((3, 2)), np.zeros(3)), {"kind": "matern32"}, "'kind'"),
        ((np.zeros((3, 2)), np.zeros(4)), {}, "shape"),
        ((np.full((3, 2), 2.0), np.zeros(3)), {}, "unit cube"),
        ((np.zeros((3, 2)), np.array([0.0, np.nan, 1.0])), {}, "NaN"),
        ((np.zeros((3, 2)), np.zeros(3), [0, -1, 0]), {}, "public_tasks"),
        ((np.zeros((3, 2)), np.zeros(3)), {"noise_var": 0.0}, "'noise_var'"),
    ],
)
def test_invalid_inputs(args, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        fit_public_hyperparameters(*args, score_bounds=(0, 1), **kwargs)


def test_importing_privtune_gp_does_not_import_botorch():
    import subprocess
    import sys

    code = "import sys, privtune.gp\nassert 'botorch' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)
