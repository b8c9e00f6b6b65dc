"""Shared fixtures for the mechanism tests (seeded generators, global-RNG guard)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _numpy_global_rng_untouched():
    """Every mechanism test must leave numpy's global RNG exactly as it found it."""
    before = np.random.get_state(legacy=False)
    yield
    after = np.random.get_state(legacy=False)
    assert np.array_equal(before["state"]["key"], after["state"]["key"])
    assert before["state"]["pos"] == after["state"]["pos"]


@pytest.fixture
def generator() -> np.random.Generator:
    """A fresh seeded generator; tests pass it as ``random_state`` and inspect its state."""
    return np.random.default_rng(20240611)
