"""Black-box DP audit of DPStandardScaler.fit on neighbouring inputs, with a broken twin (negative control).

Setting. n = 10 rows, d = 1, bounds (0, 1). D holds x_0 = 1 and nine zeros; D' replaces x_0 by 0 (replace-one).
After the rescaling u = x - 1/2, the sum of u moves by 1 (the declared sensitivity sqrt(d) = 1, attained) and the
sum of u**2 not at all: the audited output is the released ``mean_`` (a post-processing of the sum of u). Each run
is a real ``fit`` (its own exact noise from one seeded source, its own accountant), claimed (1, 0)-DP with
``noise="laplace"``.

* **H0** ("passes"): ``audit_mechanism`` refutes a true claim with probability at most ALPHA = 1e-5.
* **Negative control** (must be flagged): the same class with a quarter of the calibrated sensitivity, whose true
  epsilon on this pair is 4. Measured with these seeds at 6 000 runs per input: lower bound 0.70 for the scaler,
  3.02 for the twin.

Gaussian variant: the same pair, claimed (2, 1e-6); the twin's noise is calibrated on a quarter of the sensitivity
(its true epsilon at that delta is far above 2). Measured: lower bound 0.04 for the scaler, 2.41 for the twin. The
samples are seeded, so the outcome is reproducible; about 50 s in all (marked slow).
"""

from __future__ import annotations

import numpy as np
import pytest

from privtune.preprocessing import DPStandardScaler
from privtune.testing import audit_mechanism
from privtune.utils._random import check_random_state

pytestmark = [pytest.mark.statistical, pytest.mark.slow]

ALPHA = 1e-5
N_RUNS = 6000
D = np.zeros((10, 1))
D[0, 0] = 1.0
D_PRIME = np.zeros((10, 1))


class QuarterSensitivity(DPStandardScaler):
    """The broken twin: noise calibrated on a quarter of the true sensitivity, claimed as the scaler's."""

    def _sensitivity(self, n_samples: int, n_features: int) -> float:
        return super()._sensitivity(n_samples, n_features) / 4.0


def _sampler(cls, X, seed, **params):
    source = check_random_state(seed)

    def sample(k: int) -> np.ndarray:
        return np.array([cls(bounds=(0.0, 1.0), random_state=source, **params).fit(X).mean_[0] for _ in range(k)])

    return sample


@pytest.mark.parametrize("params, claim", [
    ({"epsilon": 1.0, "noise": "laplace"}, {"epsilon": 1.0, "delta": 0.0}),
    ({"epsilon": 2.0, "delta": 1e-6}, {"epsilon": 2.0, "delta": 1e-6}),
], ids=["laplace", "gaussian"])
def test_scaler_passes_an_audit_and_its_broken_twin_is_flagged(params, claim):
    kw = dict(n_samples=N_RUNS, confidence=1 - ALPHA, random_state=11, **claim)
    good = audit_mechanism(_sampler(DPStandardScaler, D, 1, **params), _sampler(DPStandardScaler, D_PRIME, 2, **params),
                           **kw)
    assert not good.violation, good
    bad = audit_mechanism(_sampler(QuarterSensitivity, D, 3, **params), _sampler(QuarterSensitivity, D_PRIME, 4,
                                                                                  **params), **kw)
    assert bad.violation and bad.epsilon_lower_bound > claim["epsilon"], bad
