"""Hypothesis: calibration never overshoots its target (and is not wastefully loose)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from privtune.accounting import compose_events
from privtune.accounting.rdp_math import gaussian_delta_exact
from privtune.bo import NoisyUCB
from privtune.mechanisms import Gaussian, calibrate_analytic_gaussian

eps = st.floats(min_value=0.05, max_value=20.0)
dlt = st.floats(min_value=1e-12, max_value=0.1)


@given(eps, dlt)
def test_analytic_gaussian_never_overshoots(epsilon, delta):
    nm = calibrate_analytic_gaussian(epsilon=epsilon, delta=delta)
    got = gaussian_delta_exact(1.0 / nm, epsilon)  # independent implementation of the exact curve
    assert got <= delta * (1 + 1e-9)
    assert gaussian_delta_exact(1.0 / (nm * (1 - 1e-3)), epsilon) > delta  # 0.1 % less noise would overshoot


@given(st.floats(min_value=0.05, max_value=0.99), dlt)
def test_classic_gaussian_never_overshoots(epsilon, delta):
    g = Gaussian(epsilon=epsilon, delta=delta, sensitivity=1.0, calibration="classic")
    assert gaussian_delta_exact(1.0 / g.noise_multiplier, epsilon) <= delta


@settings(max_examples=40)
@given(st.floats(min_value=0.1, max_value=10.0), st.sampled_from([1e-8, 1e-6, 1e-4]), st.integers(1, 60),
       st.floats(min_value=0.1, max_value=0.9))
def test_noisy_ucb_plan_never_exceeds_its_budget(epsilon, delta, n_iter, share):
    m = NoisyUCB(epsilon=epsilon, delta=delta, n_iter=n_iter, score_sensitivity=0.01, observation_share=share)
    spent = compose_events([e for e, _ in m.plan(None)], delta=delta)
    assert spent.epsilon <= epsilon and spent.epsilon > epsilon * (1 - 2e-3)
    assert math.isclose(spent.delta, delta)
