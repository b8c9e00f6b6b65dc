"""Shared test configuration: one thread, hypothesis profiles, and a global-RNG guard."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _single_thread_and_untouched_global_rng():
    """Pin torch to one thread and fail any test that changes numpy's or torch's global RNG.

    privtune must never read or advance a global generator (DESIGN.md section 7).
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        torch_state = torch.random.get_rng_state().clone()
    np_state = np.random.get_state()
    yield
    after = np.random.get_state()
    assert np_state[0] == after[0] and np.array_equal(np_state[1], after[1]) and np_state[2:] == after[2:], (
        "the test changed numpy's global RNG state"
    )
    torch = sys.modules.get("torch")
    if torch is not None and "torch_state" in locals():
        assert torch.equal(torch_state, torch.random.get_rng_state()), "the test changed torch's global RNG state"
