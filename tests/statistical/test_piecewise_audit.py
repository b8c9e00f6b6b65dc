"""DP-inequality audits of the seed-001 mechanisms, each with a broken twin (negative control).

Setting: ``d = 1``, two pieces ``f(x) = max(x + b_1, -x + b_2)`` on the box
``[-1, 1]``, claimed ``epsilon = 1`` and ``offset_bound = 1``. The neighbouring
offset vectors are ``b = (2, -2)`` and ``b' = (1, -1)``: every offset moves by
exactly ``offset_bound`` and in opposite directions, which is the worst case for
the exponential-mechanism selections (the log-odds of the two pieces move by the
full ``epsilon / k``).

* **Null hypothesis** of each "passes" test: the mechanism is ``(1, 0)``-DP on
  this pair. The audit refutes a true claim with probability at most
  ``ALPHA = 1e-5`` (``confidence = 1 - ALPHA``; the output set is finite and
  known, so the whole fixed family of outcome sets is Bonferroni-corrected).
* **Broken twins** run the same code with the noise scale halved (``epsilon``
  doubled inside the mechanism) while still claiming 1; the audit must flag them
  at the same sample size. Each docstring gives the power argument.

Passing is not a proof of differential privacy (the proofs are in the
docstrings of :mod:`privtune.optim.piecewise`); failing is strong evidence of a
calibration bug (a wrong sign in Alg. 1, a missing ``1/k``, a factor 2).
"""

from __future__ import annotations

import numpy as np
import pytest

from privtune.optim.piecewise import pwa_perturb_objective, pwa_subgradient
from privtune.testing import audit_mechanism
from privtune.utils import check_random_state

pytestmark = pytest.mark.statistical

ALPHA = 1e-5
EPS = 1.0
A = np.array([[1.0], [-1.0]])
B_D = np.array([2.0, -2.0])
B_DP = np.array([1.0, -1.0])


def _subgradient_sampler(b, eps_inside, seed):
    source = check_random_state(seed)

    def sample(n):
        return np.fromiter(
            (pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=eps_inside, offset_bound=1.0, n_iter=2,
                             step_size=0.5, output="last", random_state=source).x[0] for _ in range(n)),
            dtype=np.float64, count=n)

    return sample


N_SG = 25_000


def _audit_subgradient(eps_inside, seeds):
    return audit_mechanism(_subgradient_sampler(B_D, eps_inside, seeds[0]),
                           _subgradient_sampler(B_DP, eps_inside, seeds[1]),
                           epsilon=EPS, n_samples=N_SG, outcomes=[-1.0, 0.0, 1.0],
                           confidence=1.0 - ALPHA, random_state=0)


@pytest.mark.slow
def test_subgradient_passes():
    """H0: the DP subgradient method (k = 2, last iterate, outputs {-1, 0, 1}) is 1-DP on (b, b').

    The outcome 1 needs both selections to pick piece 2; its probability is
    0.060 under b and 0.121 under b' (true log-ratio 0.70 < 1). Also checks the
    audit is not vacuous: the lower bound exceeds 0.4 at n = 25 000.
    """
    res = _audit_subgradient(EPS, (11, 12))
    assert not res.violation, res
    assert res.epsilon_lower_bound > 0.4, res


@pytest.mark.slow
def test_subgradient_scale_halved_is_flagged():
    """Broken twin: each selection runs at 2 epsilon / k while claiming epsilon = 1.

    Power: P(out = 1) is 0.0090 under b and 0.0489 under b' (true log-ratio
    1.69). With 25 000 samples per input the counts are about 225 and 1220; the
    one-sided Clopper-Pearson bounds at level 1e-5 / (family size) are about
    0.0120 and 0.0430, a log-ratio near 1.27 > 1.
    """
    res = _audit_subgradient(2 * EPS, (13, 14))
    assert res.violation, res


def _mp_sampler(b, eps_inside, seed):
    source = check_random_state(seed)

    def sample(n):
        return np.fromiter(
            (pwa_perturb_objective(A, b, bounds=(-0.5, 0.5), epsilon=eps_inside, offset_bound=1.0, n_changed=1,
                                   random_state=source).x[0] for _ in range(n)),
            dtype=np.float64, count=n)

    return sample


N_MP = 10_000
MP_EVENTS = {"x >= 0.5": lambda x: x >= 0.5 - 1e-9, "x <= -0.5": lambda x: x <= -0.5 + 1e-9,
             "x >= 0": lambda x: x >= 0.0, "x < 0": lambda x: x < 0.0}
B0 = np.array([0.0, 0.0])
B1 = np.array([0.0, 1.0])  # one offset moves by offset_bound (n_changed = 1)


@pytest.mark.slow
def test_perturb_objective_passes():
    """H0: M_P (n_changed = 1, box [-1/2, 1/2]) is 1-DP on b = (0, 0), b' = (0, 1).

    The output is clip((b~_2 - b~_1) / 2, -1/2, 1/2), a post-processing of the
    difference N of two Laplace(1) noises. The atom at 1/2 has probability
    P(N >= 1) = 0.276 under b and 1/2 under b' (log-ratio 0.59).
    """
    res = audit_mechanism(_mp_sampler(B0, EPS, 21), _mp_sampler(B1, EPS, 22), epsilon=EPS, n_samples=N_MP,
                          events=MP_EVENTS, confidence=1.0 - ALPHA, random_state=0)
    assert not res.violation, res


@pytest.mark.slow
def test_perturb_objective_scale_halved_is_flagged():
    """Broken twin: Laplace scale halved (epsilon 2 inside), claimed 1.

    Power: the atom at 1/2 has probability P(N >= 1) = 0.135 under b and
    P(N >= 0) = 1/2 under b' (log-ratio 1.31); with 10 000 samples the
    Clopper-Pearson bounds (level 1e-5 / 8) are about 0.48 and 0.15, log-ratio 1.16 > 1.
    """
    res = audit_mechanism(_mp_sampler(B0, 2 * EPS, 23), _mp_sampler(B1, 2 * EPS, 24), epsilon=EPS,
                          n_samples=N_MP, events=MP_EVENTS, confidence=1.0 - ALPHA, random_state=0)
    assert res.violation, res
