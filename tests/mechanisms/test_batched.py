"""PredrawnNoise: up-front noise for a sequence of grid mechanisms (used by the DP solvers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Gaussian, Laplace
from privtune.mechanisms._batched import PredrawnNoise
from privtune.utils._random import check_random_state


def _mechs(source):
    return [Laplace(epsilon=1.0, sensitivity=0.5, random_state=source),
            Gaussian.from_noise_multiplier(2.0, sensitivity=0.25, random_state=source),
            Laplace(epsilon=0.3, sensitivity=0.5, random_state=source),
            Gaussian.from_noise_multiplier(2.0, sensitivity=0.25, random_state=source)]


def test_release_is_on_each_steps_grid_and_reproducible():
    dim = 4
    value = np.array([0.1234567, -2.5, 3.0, 1e-3])
    outs = []
    for _ in range(2):
        source = check_random_state(7)
        mechs = _mechs(source)
        stream = PredrawnNoise(mechs, dim)
        assert len(stream) == 4
        rel = [stream.release(t, value) for t in range(4)]
        for t, m in enumerate(mechs):
            g = m.grid_spacing(dim)
            k = rel[t] / g
            assert np.allclose(k, np.rint(k), atol=1e-6)  # a multiple of the step's own grid spacing
        outs.append(np.concatenate(rel))
    np.testing.assert_array_equal(outs[0], outs[1])  # same seed, same noise


def test_noise_has_the_mechanisms_variance():
    # 4000 releases x 5 coordinates per kind; the sample variance of N = 20000 draws has relative
    # standard deviation sqrt(2/N) = 1% (Gaussian) and sqrt(5/N) = 1.6% (Laplace, kurtosis 6):
    # a 5-sd band, i.e. a false-alarm rate below 1e-6.
    source = check_random_state(3)
    lap = Laplace(epsilon=1.0, sensitivity=1.0, random_state=source)
    gau = Gaussian.from_noise_multiplier(1.5, sensitivity=1.0, random_state=source)
    steps, dim = 4000, 5
    stream = PredrawnNoise([lap] * steps + [gau] * steps, dim)
    zero = np.zeros(dim)
    lap_noise = np.concatenate([stream.release(t, zero) for t in range(steps)])
    gau_noise = np.concatenate([stream.release(t, zero) for t in range(steps, 2 * steps)])
    n = lap_noise.size
    assert abs(lap_noise.var() / lap.variance(dim) - 1.0) < 5 * math.sqrt(5.0 / n)
    assert abs(gau_noise.var() / gau.variance() - 1.0) < 5 * math.sqrt(2.0 / n)
    assert abs(lap_noise.mean()) < 5 * math.sqrt(lap.variance(dim) / n)
    # the steps are independent: lag-1 correlation of the Gaussian rows is ~ N(0, 1/n)
    rows = gau_noise.reshape(steps, dim)
    r = np.corrcoef(rows[:-1].ravel(), rows[1:].ravel())[0, 1]
    assert abs(r) < 5 / math.sqrt(n)


def test_refusals():
    a, b = check_random_state(1), check_random_state(2)
    with pytest.raises(InvalidParameterError, match="share one random source"):
        PredrawnNoise([Laplace(epsilon=1.0, sensitivity=1.0, random_state=a),
                       Laplace(epsilon=1.0, sensitivity=1.0, random_state=b)], 3)
    stream = PredrawnNoise([Laplace(epsilon=1.0, sensitivity=1.0, random_state=a)], 3)
    with pytest.raises(InvalidParameterError, match="3 coordinate"):
        stream.release(0, np.zeros(2))
    with pytest.raises(InvalidParameterError):
        stream.release(0, np.array([0.0, np.nan, 1.0]))
    assert len(PredrawnNoise([], 3)) == 0


def test_a_step_is_released_once():
    """A second release of a step would reuse its noise: the difference of the two outputs would be the
    exact difference of the two values. It is refused; failed releases do not consume the step."""
    source = check_random_state(4)
    stream = PredrawnNoise(_mechs(source), 3)
    with pytest.raises(InvalidParameterError):
        stream.release(1, np.array([0.0, np.nan, 1.0]))  # refused before use: step 1 is still available
    a = stream.release(1, np.zeros(3))
    with pytest.raises(InvalidParameterError, match="already released"):
        stream.release(1, np.ones(3))
    with pytest.raises(InvalidParameterError, match="already released"):
        stream.release(-3, np.ones(3))  # the same step by its negative index
    assert a.shape == (3,) and stream.release(0, np.ones(3)).shape == (3,)


def test_scalar_gaussian_calibrations_are_refused_for_vectors():
    source = check_random_state(5)
    for calibration in ("analytic", "classic"):
        mech = Gaussian(epsilon=0.5, delta=1e-6, sensitivity=1.0, calibration=calibration, random_state=source)
        with pytest.raises(InvalidParameterError, match="one coordinate"):
            PredrawnNoise([mech], 3)
        assert PredrawnNoise([mech], 1).release(0, [0.5]).shape == (1,)  # one coordinate: its own law
    rdp = Gaussian(epsilon=0.5, delta=1e-6, sensitivity=1.0, calibration="rdp", random_state=source)
    assert PredrawnNoise([rdp], 3).release(0, np.zeros(3)).shape == (3,)
