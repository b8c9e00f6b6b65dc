"""SearchSpace: declaration checks, encode/decode round trips, snapping, bounds."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privtune.exceptions import InvalidParameterError
from privtune.space import Categorical, Integer, Real, SearchSpace

SENTINEL = object()


@st.composite
def dimensions(draw):
    kind = draw(st.sampled_from(["real", "real-log", "int", "int-log", "cat"]))
    if kind.startswith("real"):
        log = kind == "real-log"
        low = draw(st.floats(1e-4, 1e3) if log else st.floats(-1e3, 1e3))
        return Real(low, low + draw(st.floats(1e-2, 1e4)), log=log)
    if kind.startswith("int"):
        log = kind == "int-log"
        low = draw(st.integers(1, 50) if log else st.integers(-50, 50))
        return Integer(low, low + draw(st.integers(1, 300)), log=log)
    k = draw(st.integers(1, 6))
    pool = ["a", "b", None, 3, 2.5, SENTINEL, ("t", 1), "c"]
    return Categorical(draw(st.permutations(pool))[:k])


@st.composite
def spaces(draw):
    n = draw(st.integers(1, 5))
    names = draw(st.lists(st.text(min_size=1, max_size=4), min_size=n, max_size=n, unique=True))
    return SearchSpace({name: draw(dimensions()) for name in names})


def value_in(dim):
    if isinstance(dim, Real):
        short = st.integers(-(10**5), 10**5).map(lambda m: m / 1000.0)
        return (st.floats(dim.low, dim.high) | short.filter(lambda x: dim.low <= x <= dim.high))
    if isinstance(dim, Integer):
        return st.integers(dim.low, dim.high)
    return st.sampled_from(dim.choices)


@st.composite
def space_and_point(draw):
    space = draw(spaces())
    return space, {n: draw(value_in(d)) for n, d in space.items()}


@pytest.mark.parametrize(
    ("dims", "match"),
    [
        ({}, "at least one dimension"),
        ([], "at least one dimension"),
        ({1: Real(0, 1)}, "non-empty str"),
        ({"": Real(0, 1)}, "non-empty str"),
        ([("a", Real(0, 1)), ("a", Integer(0, 3))], "distinct"),
        ({"a": (0.0, 1.0)}, "must be a Real, Integer or Categorical"),
        ([("a", Real(0, 1), 3)], "pairs"),
        (5, "dict"),
    ],
)
def test_invalid_spaces_are_refused(dims, match):
    with pytest.raises(InvalidParameterError, match=match):
        SearchSpace(dims)


def test_order_is_preserved_and_mapping_access():
    space = SearchSpace({"z": Real(0, 1), "a": Integer(0, 3), "m": Categorical(["x", "y"])})
    assert space.names == ("z", "a", "m") and list(space) == ["z", "a", "m"]
    assert len(space) == space.n_dims == 3
    assert space["a"] == Integer(0, 3)
    with pytest.raises(KeyError):
        space["q"]
    x = space.encode({"m": "y", "a": 1, "z": 0.5})
    assert x.tolist() == [0.5, 0.375, 0.75]
    assert list(space.decode(x)) == ["z", "a", "m"]


def test_points_with_wrong_keys_or_values_are_refused():
    space = SearchSpace({"C": Real(0.1, 10.0, log=True), "k": Integer(1, 5)})
    with pytest.raises(InvalidParameterError, match="Missing \\['k'\\]"):
        space.encode({"C": 1.0})
    with pytest.raises(InvalidParameterError, match="unknown \\['x'\\]"):
        space.encode({"C": 1.0, "k": 2, "x": 0})
    with pytest.raises(InvalidParameterError, match="'C' hyperparameter"):
        space.encode({"C": 20.0, "k": 2})
    with pytest.raises(InvalidParameterError, match="'k' hyperparameter"):
        space.encode({"C": 1.0, "k": 2.5})
    assert {"C": 1.0, "k": 2} in space and {"C": 1.0, "k": 9} not in space


@pytest.mark.parametrize("x", [[0.5], [0.5, 1.2], [0.5, -0.1], [0.5, float("nan")], "ab"])
def test_decode_refuses_points_outside_the_unit_cube(x):
    space = SearchSpace({"C": Real(0.1, 10.0, log=True), "k": Integer(1, 5)})
    with pytest.raises(InvalidParameterError):
        space.decode(x)


@settings(max_examples=150, deadline=None)
@given(space_and_point())
def test_decode_encode_round_trip(sp):
    space, params = sp
    x = space.encode(params)
    assert x.shape == (space.n_dims,) and np.all((x >= 0) & (x <= 1))
    back = space.decode(x)
    assert list(back) == list(space.names)
    for (name, dim), value in zip(space.items(), params.values(), strict=True):
        got = back[name]
        if isinstance(dim, Real):
            assert type(got) is float and dim.low <= got <= dim.high
            assert dim.encode(got) == x[space.names.index(name)]
            width = dim.high - dim.low
            if len(repr(float(value))) <= 10 and (value == 0 or abs(value) >= 1e-9 * width):
                assert got == value  # short decimals not lost in the encoding's rounding
        elif isinstance(dim, Integer):
            assert type(got) is int and got == value
        else:
            assert got is dim.choices[dim.index(value)]
    np.testing.assert_array_equal(space.encode(back), x)


@settings(max_examples=100, deadline=None)
@given(spaces(), st.data())
def test_snap_is_idempotent_and_decode_stays_in_bounds(space, data):
    X = np.array(data.draw(st.lists(
        st.lists(st.floats(0, 1), min_size=space.n_dims, max_size=space.n_dims),
        min_size=1, max_size=5)))
    decoded = space.decode_many(X)
    for p in decoded:
        assert p in space
    snapped = space.snap(X)
    np.testing.assert_array_equal(space.snap(snapped), snapped)
    assert space.decode_many(snapped) == decoded
    np.testing.assert_array_equal(space.snap(X[0]), snapped[0])


def test_importing_privtune_space_does_not_import_torch():
    code = (
        "import sys, privtune, privtune.space\n"
        "from privtune.space import candidate_set, SearchSpace, Real\n"
        "candidate_set(SearchSpace({'a': Real(0, 1)}), 8, random_state=0)\n"
        "bad = [m for m in ('torch', 'gpytorch', 'botorch') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
