"""GPPosterior past its initial capacity: V grows in blocks (nothing copied), with the same posterior (issue 41)."""

import numpy as np
import pytest

from privtune.gp import GPPosterior, InputKernel
from privtune.gp._incremental import IncrementalCholesky


def _posterior(capacity, X):
    return GPPosterior(X, InputKernel(0.3), noise_var=0.01, score_bounds=(0.0, 1.0), capacity=capacity)


@pytest.mark.parametrize("capacity", [1, 3, 32])
def test_a_small_capacity_gives_the_posterior_of_a_presized_one(capacity):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 2))
    small, sized = _posterior(capacity, X), _posterior(128, X)
    for _ in range(100):  # past several growths of the small one (1 -> 2 -> 4 ... -> 128 rows)
        i, v = int(rng.integers(200)), float(rng.uniform())
        small.add_observation(i, v)
        sized.add_observation(i, v)
    np.testing.assert_allclose(small.mean, sized.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(small.variance, sized.variance, rtol=0, atol=1e-12)


def test_growth_allocates_new_blocks_and_never_copies_the_old_rows():
    chol = IncrementalCholesky(n_candidates=5, min_pivot=1e-10, capacity=2)
    rng = np.random.default_rng(1)
    first = chol._blocks[0]
    A = rng.normal(size=(12, 12))
    K = A @ A.T + 12 * np.eye(12)
    for n in range(9):
        chol.extend(K[n, :n], float(K[n, n]), rng.normal(size=5))
    assert chol._blocks[0] is first  # the rows written first stayed where they were
    assert [b.shape[0] for b in chol._blocks] == [2, 2, 4, 8]  # each new block as large as all before it
    assert chol.V.shape == (9, 5) and chol.L.shape == (9, 9)
    np.testing.assert_allclose(chol.L @ chol.L.T, K[:9, :9], atol=1e-9)
    np.testing.assert_allclose(chol.colsq, (chol.V ** 2).sum(axis=0), atol=1e-12)
