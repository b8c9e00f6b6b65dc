"""Independent reference computations for the GP tests (numpy only, no privtune code)."""

from __future__ import annotations

import numpy as np


def closed_form_k2(A: np.ndarray, B: np.ndarray, lengthscale, kind: str) -> np.ndarray:
    """Matérn-5/2 or squared-exponential kernel written out, independent of GPyTorch."""
    ls = np.asarray(lengthscale, dtype=np.float64)
    diff = (A[:, None, :] - B[None, :, :]) / ls
    r = np.sqrt(np.sum(diff**2, axis=-1))
    if kind == "matern52":
        s5 = np.sqrt(5.0) * r
        return (1.0 + s5 + s5**2 / 3.0) * np.exp(-s5)
    return np.exp(-0.5 * r**2)


def dense_posterior(Xc, tasks, Xobs, y, noise, B, lengthscale, kind):
    """Posterior mean and variance of task 0 over Xc by one dense solve (no Cholesky)."""
    tasks = np.asarray(tasks, dtype=int)
    K = B[np.ix_(tasks, tasks)] * closed_form_k2(Xobs, Xobs, lengthscale, kind)
    K = K + np.diag(noise)
    Ks = B[0, tasks][None, :] * closed_form_k2(Xc, Xobs, lengthscale, kind)
    mean = Ks @ np.linalg.solve(K, y)
    var = 1.0 - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    return mean, var


def consistent_task_matrix(rng: np.random.Generator, n_public: int, rho: float) -> np.ndarray:
    """Unit-diagonal PSD k1 over (private, public...) consistent with k1(V, V') = rho."""
    r = n_public + 1
    w = rng.normal(size=r)
    w /= np.linalg.norm(w)
    P = rng.normal(size=(n_public, r))
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    B = np.eye(n_public + 1)
    B[1:, 1:] = P @ P.T
    np.fill_diagonal(B, 1.0)
    b = np.sqrt((1.0 + rho) / 2.0) * (P @ w)
    B[0, 1:] = B[1:, 0] = b
    return B
