"""Dimensions: validation of declarations and their unit-interval encodings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privtune.exceptions import InvalidParameterError
from privtune.space import Categorical, Integer, Real


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: Real(1.0, 1.0), "low < high"),
        (lambda: Real(2.0, 1.0), "low < high"),
        (lambda: Real(0.0, 1.0, log=True), "'low' parameter of Real"),
        (lambda: Real(-1.0, 1.0, log=True), "'low' parameter of Real"),
        (lambda: Real(float("nan"), 1.0), "'low' parameter of Real"),
        (lambda: Real(0.0, float("inf")), "'high' parameter of Real"),
        (lambda: Real(-1.7e308, 1.7e308), "finite difference"),
        (lambda: Real(0.0, 1.0, log=1), "'log' parameter of Real"),
        (lambda: Real("0", 1.0), "'low' parameter of Real"),
        (lambda: Integer(3, 3), "low < high"),
        (lambda: Integer(4, 3), "low < high"),
        (lambda: Integer(0, 10, log=True), "'low' parameter of Integer"),
        (lambda: Integer(1.5, 3), "'low' parameter of Integer"),
        (lambda: Integer(True, 3), "'low' parameter of Integer"),
        (lambda: Integer(0, 2**60), "'high' parameter of Integer"),
        (lambda: Categorical([]), "non-empty"),
        (lambda: Categorical(["a", "b", "a"]), "duplicates"),
        (lambda: Categorical([1, 1.0]), "duplicates"),
        (lambda: Categorical(5), "non-empty sequence"),
        (lambda: Categorical("rbf"), "not a string"),
    ],
)
def test_invalid_dimensions_are_refused(factory, match):
    with pytest.raises(InvalidParameterError, match=match):
        factory()


def test_error_names_parameter_domain_and_value():
    with pytest.raises(InvalidParameterError) as info:
        Real(-1.0, 1.0, log=True)
    msg = str(info.value)
    assert "'low'" in msg and "(0.0, inf)" in msg and "-1.0" in msg


def test_real_linear_encoding_is_affine():
    d = Real(-2.0, 6.0)
    assert d.encode(-2.0) == 0.0
    assert d.encode(6.0) == 1.0
    assert d.encode(2.0) == 0.5
    assert d.decode(0.25) == 0.0
    assert d.decode(0.0) == -2.0 and d.decode(1.0) == 6.0


def test_real_log_encoding_is_log_affine():
    d = Real(1e-3, 1e3, log=True)
    assert d.encode(1.0) == pytest.approx(0.5, abs=1e-15)
    assert d.encode(10.0) == pytest.approx(4.0 / 6.0, abs=1e-15)
    assert d.decode(d.encode(1.0)) == 1.0
    assert d.decode(0.0) == 1e-3 and d.decode(1.0) == 1e3


def test_integer_bins_are_equal_and_centred():
    d = Integer(2, 5)  # 4 integers, bins of width 1/4
    assert [d.encode(v) for v in (2, 3, 4, 5)] == [0.125, 0.375, 0.625, 0.875]
    assert d.decode_array(np.array([0.0, 0.2499, 0.25, 0.74, 0.75, 1.0])) == [2, 2, 3, 4, 5, 5]
    assert d.encode(3.0) == 0.375  # integral floats accepted
    for bad in (3.5, 6, 1, True, "3", float("nan")):
        with pytest.raises(InvalidParameterError):
            d.encode(bad)


def test_integer_log_bins_are_equal_in_log_space():
    d = Integer(1, 100, log=True)
    a, b = math.log(0.5), math.log(100.5)
    for v in (1, 2, 10, 57, 100):
        lo, hi = (math.log(v - 0.5) - a) / (b - a), (math.log(v + 0.5) - a) / (b - a)
        u = d.encode(v)
        assert lo < u < hi
        assert d.decode(lo + 1e-9) == v and d.decode(hi - 1e-9) == v


def test_categorical_bins_and_identity():
    marker = object()
    d = Categorical(["rbf", None, marker])
    assert [d.encode(c) for c in ("rbf", None, marker)] == [1 / 6, 0.5, 5 / 6]
    assert d.decode(0.0) == "rbf" and d.decode(0.5) is None and d.decode(1.0) is marker
    assert d.decode(d.encode(marker)) is marker
    with pytest.raises(InvalidParameterError, match="must be one of"):
        d.encode("linear")


def test_categorical_accepts_equal_numpy_values():
    d = Categorical(["a", "b", 3])
    assert d.validate(np.str_("b")) == "b"
    assert d.validate(np.int64(3)) == 3


def test_dimension_equality():
    assert Real(0, 1) == Real(0.0, 1.0) and hash(Real(0, 1)) == hash(Real(0.0, 1.0))
    assert Real(1, 2) != Real(1, 2, log=True)
    assert Integer(1, 3) == Integer(1, 3) and Integer(1, 3) != Integer(1, 4)
    assert Categorical(["a", "b"]) == Categorical(("a", "b"))
    assert Categorical(["a", "b"]) != Categorical(["b", "a"])


short_decimals = st.integers(-(10**6), 10**6).flatmap(
    lambda m: st.integers(-8, 4).map(lambda e: float(f"{m}e{e}"))
)


@settings(max_examples=150, deadline=None)
@given(
    low=st.floats(-1e6, 1e6), width=st.floats(1e-3, 1e6), log=st.booleans(), data=st.data()
)
def test_real_round_trip(low, width, log, data):
    if log:
        low = abs(low) + 1e-6
    high = low + width
    d = Real(low, high, log=log)
    v = data.draw(st.floats(low, high) | short_decimals.filter(lambda x: low <= x <= high))
    u = d.encode(v)
    assert 0.0 <= u <= 1.0
    w = d.decode(u)
    assert isinstance(w, float) and low <= w <= high
    assert d.encode(w) == u  # same encoding, always
    if len(repr(v)) <= 12 and (v == 0 or abs(v) >= 1e-9 * width):
        assert w == v  # short decimals come back exactly (unless lost in rounding)
    assert abs(w - v) <= 1e-9 * max(abs(low), abs(high))


@settings(max_examples=100, deadline=None)
@given(low=st.integers(-1000, 1000), n=st.integers(1, 5000), log=st.booleans(), data=st.data())
def test_integer_round_trip(low, n, log, data):
    if log:
        low = abs(low) + 1
    d = Integer(low, low + n, log=log)
    v = data.draw(st.integers(low, low + n))
    w = d.decode(d.encode(v))
    assert type(w) is int and w == v


@settings(max_examples=100, deadline=None)
@given(u=st.floats(0.0, 1.0), log=st.booleans())
def test_decode_then_encode_is_idempotent(u, log):
    for d in (Real(1e-2, 1e2, log=log), Integer(1, 37, log=log), Categorical(list("abcde"))):
        v = d.decode(u)
        snapped = d.encode(v)
        assert d.decode(snapped) == v
        assert d.encode(d.decode(snapped)) == snapped
