"""The discrete Gaussian as actually sampled meets its (epsilon, delta) claim exactly (scalar case)."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from privtune.mechanisms import Gaussian


def _discrete_delta(sigma_grid: float, shift: int, eps: float) -> float:
    """Exact hockey-stick divergence between N_Z(0, s^2) and N_Z(shift, s^2) (sum over the lattice)."""
    k = np.arange(-int(40 * sigma_grid) - shift, int(40 * sigma_grid) + shift + 1, dtype=np.float64)
    logw = -(k**2) / (2 * sigma_grid**2)
    log_z = logsumexp(logw)
    p = np.exp(logw - log_z)
    q = np.exp(eps - (k - shift) ** 2 / (2 * sigma_grid**2) - log_z)
    diff = p - q
    return float(diff[diff > 0].sum())


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.1, 1e-6), (3.0, 1e-6), (0.5, 1e-3), (8.0, 1e-9)])
@pytest.mark.parametrize("sensitivity", [1.0, 0.01])
def test_exact_discrete_delta_below_target(eps, delta, sensitivity):
    """The largest integer shift the rounding allows is floor(Delta/g + 2); the lattice delta stays <= target."""
    mech = Gaussian(epsilon=eps, delta=delta, sensitivity=sensitivity, random_state=0)
    g = mech.grid_spacing(1)
    sigma_grid = mech.sigma / g
    assert sigma_grid == 2 ** round(math.log2(sigma_grid))  # an exact power of two
    shift = math.floor(sensitivity / g + 2)
    got = _discrete_delta(sigma_grid, shift, eps)
    assert got <= delta
    assert got > 0.95 * delta  # and the calibration is not wastefully loose
