"""Discrete Gaussian noise on vectors is accounted through RDP only (issue 10, item 7).

Canonne, Kamath & Steinke prove the discrete Gaussian's RDP bound alpha D**2 / (2 s**2) for one coordinate; the
Renyi divergence of independent coordinates adds up, so it holds for vectors with the L2 shift. The continuous
Gaussian's exact (epsilon, delta) curve (PLD, the exact Gaussian composition) is proven for one coordinate only.
"""


import numpy as np
import pytest

from privtune.accounting import Accountant, Budget, GaussianEvent, compose_events
from privtune.exceptions import UnsupportedEventError
from privtune.linear_model import DPLogisticRegression


def _renyi_discrete_gaussian(alpha, sigma, shift, width=60):
    """D_alpha(N_Z(shift, s**2) || N_Z(0, s**2)) by lattice sums (float, small sigma only)."""
    from scipy.special import logsumexp

    z = np.arange(-width, width + 1)
    lp = -((z - shift) ** 2) / (2 * sigma**2)
    lq = -(z**2) / (2 * sigma**2)
    lp, lq = lp - logsumexp(lp), lq - logsumexp(lq)
    return float(logsumexp(alpha * lp + (1 - alpha) * lq)) / (alpha - 1)


@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.5])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 8.0])
def test_rdp_of_a_discrete_gaussian_vector_is_at_most_the_continuous_one(sigma, alpha):
    shifts = [(1, 0), (1, 1), (2, -1), (3, 2)]
    for s in shifts:
        per_coord = sum(_renyi_discrete_gaussian(alpha, sigma, c) for c in s)  # independent coordinates: a sum
        assert per_coord <= alpha * sum(c * c for c in s) / (2 * sigma**2) + 1e-12


def test_a_vector_event_is_accounted_through_rdp_only():
    vec, scalar = GaussianEvent(noise_multiplier=4.0, vector=True), GaussianEvent(noise_multiplier=4.0)
    with pytest.raises(UnsupportedEventError):  # the exact Gaussian curve is not proven for vectors
        compose_events([vec], delta=1e-6, method="gaussian")
    with pytest.raises(UnsupportedEventError):
        compose_events([vec], delta=1e-6, method="pld")
    rdp = compose_events([vec], delta=1e-6, method="rdp")
    assert compose_events([vec], delta=1e-6) == rdp  # "auto" picks the only valid bound
    assert compose_events([scalar], delta=1e-6).epsilon < rdp.epsilon  # the scalar may use the exact curve


def test_the_trainers_charge_vector_events_and_fit_their_budget():
    X = np.random.default_rng(0).normal(size=(300, 4))
    X /= np.abs(X).sum(1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1.0, 1e-6))
    clf = DPLogisticRegression(epsilon=1.0, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    ev = acc.entries[0].event
    assert isinstance(ev, GaussianEvent) and ev.vector
    assert acc.spent.epsilon <= 1.0 and acc.spent == compose_events([ev], delta=1e-6, method="rdp")
    assert all(e.vector for e in clf.optimize_result_.events)
