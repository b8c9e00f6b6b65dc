"""Small shared helpers: parameter validation and randomness sources."""

from privtune.utils._random import RandomSource, check_random_state
from privtune.utils._validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_integer,
    check_real,
    check_sensitivity,
)

__all__ = [
    "RandomSource",
    "check_random_state",
    "check_delta",
    "check_epsilon",
    "check_finite_array",
    "check_integer",
    "check_real",
    "check_sensitivity",
]
