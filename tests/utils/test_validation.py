"""Parameter validation: domains and messages."""

import math

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.utils import check_delta, check_epsilon, check_finite_array, check_integer, check_real, check_sensitivity


@pytest.mark.parametrize("bad", [0.0, -1, math.nan, math.inf, "1", None, True, [1.0]])
def test_epsilon_domain(bad):
    msg = r"The 'epsilon' parameter of Foo must be a float in the range \(0.0, inf\)\. Got"
    with pytest.raises(InvalidParameterError, match=msg):
        check_epsilon(bad, owner="Foo")


def test_epsilon_accepts_numpy_scalars_and_inf_when_allowed():
    assert check_epsilon(np.float32(0.5)) == 0.5 and isinstance(check_epsilon(np.int64(2)), float)
    assert check_epsilon(np.array(1.5)) == 1.5
    assert check_epsilon(math.inf, allow_inf=True) == math.inf


@pytest.mark.parametrize("bad", [-0.1, 1.0, math.nan])
def test_delta_domain(bad):
    with pytest.raises(InvalidParameterError, match=r"'delta'.*\[0.0, 1.0\)"):
        check_delta(bad)
    assert check_delta(0.0) == 0.0
    with pytest.raises(InvalidParameterError, match=r"\(0.0, 1.0\)"):
        check_delta(0.0, allow_zero=False)


def test_sensitivity_and_real_and_integer():
    for bad in (-1.0, 0.0, math.inf):
        with pytest.raises(InvalidParameterError, match="'sensitivity'"):
            check_sensitivity(bad)
    assert check_real(1.0, "x", low=1.0, closed="left") == 1.0
    with pytest.raises(InvalidParameterError, match=r"\(1.0, 2.0\]"):
        check_real(1.0, "x", low=1.0, high=2.0, closed="right")
    assert check_integer(np.int32(3), "n", low=1) == 3
    for bad in (2.5, True, 0):
        with pytest.raises(InvalidParameterError, match=r"'n' parameter must be an int in the range \[1, inf\]"):
            check_integer(bad, "n", low=1)


def test_finite_array_never_echoes_values():
    secret = 123456.789
    for bad in ([secret, math.nan], [secret, math.inf]):
        with pytest.raises(InvalidParameterError) as info:
            check_finite_array(bad, "scores")
        assert "123456" not in str(info.value) and "NaN or infinite" in str(info.value)
    with pytest.raises(InvalidParameterError, match="must not be empty"):
        check_finite_array([], "scores")
    with pytest.raises(InvalidParameterError, match="must have 1 dimension"):
        check_finite_array([[1.0]], "scores", ndim=1)
