"""Unit tests of privtune.mechanisms.Laplace."""

from __future__ import annotations

import copy
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

from privtune.accounting.events import LaplaceEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Laplace

ETA = 2.0**-10


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0}, r"The 'epsilon' parameter of Laplace must be a float in the range "
                         r"\(0\.0, inf\)\. Got 0 instead\."),
        ({"epsilon": -1.0}, r"The 'epsilon' parameter of Laplace .* Got -1\.0 instead\."),
        ({"epsilon": float("nan")}, r"The 'epsilon' parameter of Laplace .* Got nan instead\."),
        ({"epsilon": float("inf")}, r"The 'epsilon' parameter of Laplace .* Got inf instead\."),
        ({"epsilon": "1"}, r"The 'epsilon' parameter of Laplace .* Got '1' of type str instead\."),
        ({"epsilon": True}, r"The 'epsilon' parameter of Laplace .* of type bool instead\."),
        ({"epsilon": None}, r"The 'epsilon' parameter of Laplace .* of type NoneType instead\."),
        ({"sensitivity": 0.0}, r"The 'sensitivity' parameter of Laplace must be a float in the "
                               r"range \(0\.0, inf\)\. Got 0\.0 instead\."),
        ({"sensitivity": -2}, r"The 'sensitivity' parameter of Laplace .* Got -2 instead\."),
        ({"sensitivity": float("nan")}, r"The 'sensitivity' parameter of Laplace .* Got nan"),
        ({"sensitivity": float("inf")}, r"The 'sensitivity' parameter of Laplace .* Got inf"),
        ({"random_state": -1}, r"The 'random_state' parameter of Laplace must be None, a "
                               r"non-negative int"),
        ({"random_state": 1.5}, r"The 'random_state' parameter of Laplace .* of type float"),
        ({"random_state": np.random.RandomState(0)}, r"The 'random_state' parameter of Laplace"),
        ({"epsilon": 1e-300, "sensitivity": 1e300}, r"noise scale sensitivity/epsilon of Laplace"),
    ],
)
def test_bad_parameters_are_refused(kwargs, match):
    params = {"epsilon": 1.0, "sensitivity": 1.0, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        Laplace(**params)


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError):
        Laplace(1.0, 1.0)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (float("nan"), r"The 'value' parameter of Laplace contains NaN or infinite values"),
        ([1.0, float("inf")], r"The 'value' parameter of Laplace contains NaN or infinite"),
        ([[0.0], [float("-inf")]], r"contains NaN or infinite values"),
        ([], r"The 'value' parameter of Laplace must not be empty"),
        ("abc", r"The 'value' parameter of Laplace must be an array of real numbers"),
    ],
)
def test_randomise_refuses_bad_values_without_drawing(generator, value, match):
    mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=generator)
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=match):
        mech.randomise(value)
    assert generator.bit_generator.state == before
    # and the next release is the one a fresh mechanism on the same seed gives
    fresh = Laplace(epsilon=1.0, sensitivity=1.0, random_state=np.random.default_rng(20240611))
    assert mech.randomise(0.5) == fresh.randomise(0.5)


def test_int_seed_is_exactly_reproducible():
    a = Laplace(epsilon=0.5, sensitivity=2.0, random_state=42)
    b = Laplace(epsilon=0.5, sensitivity=2.0, random_state=42)
    c = Laplace(epsilon=0.5, sensitivity=2.0, random_state=43)
    outs_a = [a.randomise(1.0), a.randomise([1.0, 2.0]).tolist()]
    outs_b = [b.randomise(1.0), b.randomise([1.0, 2.0]).tolist()]
    assert outs_a == outs_b
    assert c.randomise(1.0) != outs_a[0]
    assert a.seeded is True


def test_none_gives_secure_source():
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    assert mech.seeded is False
    outs = {mech.randomise(0.0) for _ in range(5)}
    assert len(outs) == 5


def test_output_types_and_shapes():
    mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=0)
    assert isinstance(mech.randomise(3), float)
    assert isinstance(mech.randomise(np.float32(3.0)), float)
    assert isinstance(mech.randomise(np.array(3.0)), float)
    out = mech.randomise(np.zeros((4, 5)))
    assert isinstance(out, np.ndarray) and out.shape == (4, 5) and out.dtype == np.float64


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_outputs_lie_on_the_grid(size):
    mech = Laplace(epsilon=0.3, sensitivity=1.7, random_state=1)
    g = mech.grid_spacing(size)
    k = round(math.log2(mech.scale / g))
    assert mech.scale / g == 2.0**k and k >= 10
    out = np.atleast_1d(mech.randomise(np.linspace(-5.0, 5.0, size) + 0.123))
    steps = np.round(out / g)
    assert np.array_equal(out, g * steps)


@pytest.mark.parametrize("size", [1, 2, 100, 123_457])
@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1.0), (0.01, 3.0), (20.0, 1e-3)])
def test_grid_pays_for_rounding_exactly(size, epsilon, sensitivity):
    """epsilon_actual = (Delta/g + 2 d) / 2**k <= epsilon, in exact arithmetic."""
    mech = Laplace(epsilon=epsilon, sensitivity=sensitivity)
    g = mech.grid_spacing(size)
    two_k = Fraction(mech.scale) / Fraction(g)
    assert two_k.denominator == 1 and two_k >= 2**10
    assert (Fraction(sensitivity) / Fraction(g) + 2 * size) / two_k <= Fraction(epsilon)


def test_scale_and_variance():
    mech = Laplace(epsilon=0.5, sensitivity=2.0)
    assert mech.scale == pytest.approx(2.0 * (1 + ETA) / 0.5, rel=1e-15)
    g = mech.grid_spacing()
    assert mech.variance() == pytest.approx(2 * mech.scale**2 - g * g / 6, rel=1e-12)
    assert mech.variance(10**5) == pytest.approx(2 * mech.scale**2, rel=1e-9)


def test_privacy_event():
    event = Laplace(epsilon=0.7, sensitivity=1.0).privacy_event()
    assert isinstance(event, LaplaceEvent)
    assert event == LaplaceEvent(epsilon=0.7)
    assert event.epsilon_delta() == (0.7, 0.0)
    assert event.relation == "replace_one" and event.guarantee == "unconditional"


def test_immutable():
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    for name in ("epsilon", "sensitivity", "scale", "seeded", "_epsilon", "new_attr"):
        with pytest.raises(AttributeError):
            setattr(mech, name, 2.0)
    with pytest.raises(AttributeError):
        del mech._epsilon
    assert mech.epsilon == 1.0 and not hasattr(mech, "__dict__")


def test_pickle_and_copy_keep_parameters_and_stream():
    mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=5)
    clone = pickle.loads(pickle.dumps(mech))
    twin = copy.deepcopy(mech)
    assert (clone.epsilon, clone.sensitivity, clone.seeded) == (1.0, 1.0, True)
    assert clone.randomise(0.0) == twin.randomise(0.0) == mech.randomise(0.0)


def test_grid_spacing_validates_size():
    with pytest.raises(InvalidParameterError, match=r"The 'size' parameter of Laplace"):
        Laplace(epsilon=1.0, sensitivity=1.0).grid_spacing(0)


def test_noise_is_centred_at_the_value():
    mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=3)
    out = mech.randomise(np.full(50_000, 10.0))
    # mean within 5 standard errors of the value; the rounding bias is < g/2
    assert abs(out.mean() - 10.0) < 5 * math.sqrt(2 * mech.scale**2 / out.size)
