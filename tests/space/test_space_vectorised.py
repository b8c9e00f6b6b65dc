"""Whole-array decoding and design values (issue 12: candidate sets of 65 536 points without per-point Python).

The shortest-decimal search of :meth:`Real.decode_codes` runs on whole arrays;
it must give exactly what the per-point loop it replaced gave. Design values
(the Sobol part of a candidate set) are short decimals that decode to
themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privtune.gp import GPPosterior, InputKernel
from privtune.space import Categorical, Integer, Real, SearchSpace, candidate_set
from privtune.space._dimensions import _float_to_key, _key_to_float, _shortest_in


def _reference(a: float, b: float) -> float:
    """The per-point loop privtune used before whole-array decoding."""
    mid = a + (b - a) / 2
    for k in range(1, 18):
        c = float(f"{mid:.{k}g}")
        if a <= c <= b:
            return c
    raise AssertionError("17 digits always give mid back")


def _runs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Runs [a, b] of 0..40 consecutive floats starting at varied magnitudes, signs and decimal boundaries."""
    mags = 10.0 ** rng.uniform(-300, 300, n)
    mags[: n // 4] = 10.0 ** rng.integers(-30, 30, n // 4)  # exact powers of ten: the shaky exponents
    mags[n // 4: n // 2] = np.round(rng.uniform(0, 1e6, n // 4)) / 1e3  # short decimals and their ties
    sign = np.where(rng.random(n) < 0.3, -1.0, 1.0)
    start = _float_to_key(sign * mags) + rng.integers(-3, 3, n)
    width = rng.integers(0, 40, n)
    a, b = _key_to_float(start), _key_to_float(start + width)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = (np.sign(lo) == np.sign(hi)) & (lo != 0) & np.isfinite(lo) & np.isfinite(hi)
    return lo[keep], hi[keep]


def test_whole_array_shortest_decimal_equals_the_per_point_loop():
    rng = np.random.default_rng(12)
    a, b = _runs(rng, 40_000)
    got = _shortest_in(a, b)
    want = np.array([_reference(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(a[i], b[i], got[i], want[i]) for i in bad[:5]]


@pytest.mark.parametrize("dim", [Real(1e-4, 1e2, log=True), Real(-3.0, 7.5), Real(0.1, 1.0),
                                 Real(1e-300, 1e300, log=True), Real(1e6, 1e6 + 1e-3), Real(0.0, 1e-300),
                                 Real(5e-324, 1.0, log=True), Real(-1e307, 1e307)])
def test_decode_codes_matches_the_per_point_decoding(dim):
    u = np.random.default_rng(3).random(3000)
    got = dim.decode_codes(u)
    want = [dim.decode(float(x)) for x in u[:200]]  # decode of one point goes through the same path ...
    assert got[:200].tolist() == want
    # ... and every decoded value is canonical: decoding its encoding gives it back
    np.testing.assert_array_equal(dim.decode_codes(dim.encode_array(got)), got)


@settings(max_examples=60, deadline=None)
@given(low=st.floats(-1e6, 1e6), width=st.floats(1e-6, 1e6), log=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_design_values_decode_to_themselves_and_stay_in_their_bin(low, width, log, seed):
    if log:
        low = abs(low) + 1e-9
    dim = Real(low, low + width, log=log)
    u = np.random.default_rng(seed).random(500)
    v = dim.design_codes(u)
    assert np.all((v >= dim.low) & (v <= dim.high))
    np.testing.assert_array_equal(dim.decode_codes(dim.encode_array(v)), v)  # canonical: a round trip
    # a negligible move of the design point, beyond what the floats between the bounds can resolve
    span = (np.log(dim.high) - np.log(dim.low)) if log else (dim.high - dim.low)
    resolution = 4 * (np.spacing(1.0) if log else np.spacing(max(abs(dim.low), abs(dim.high)))) / span
    assert np.max(np.abs(dim.encode_array(v) - u)) < 1e-6 + resolution


def test_design_values_are_short_decimals():
    v = Real(1e-4, 1e2, log=True).design_codes(np.random.default_rng(0).random(1000))
    assert max(len(repr(float(x)).split("e")[0].replace("-", "").replace(".", "").strip("0")) for x in v) <= 10


def test_candidate_set_is_built_in_whole_arrays_and_deduplicates_like_the_dicts():
    space = SearchSpace({"C": Real(1e-3, 1e3, log=True), "n": Integer(1, 3), "k": Categorical(["a", None, 3])})
    grid = [{"C": 1.0, "n": 2, "k": None}, {"C": 1.0, "n": 2, "k": None}, {"C": 10.0, "n": 1, "k": "a"}]
    cs = candidate_set(space, 512, grid=grid, random_state=0)
    params = cs.params
    keys = [space.key(p) for p in params]
    assert len(set(keys)) == len(params)  # no duplicates left
    assert params[0] == {"C": 1.0, "n": 2, "k": None} and params[1] == {"C": 10.0, "n": 1, "k": "a"}
    assert cs.n_duplicates == len(grid) + 512 - len(params) >= 1  # every dropped point counted
    np.testing.assert_array_equal(cs.X, space.encode_many(params))
    for i in (0, 1, 7, len(cs) - 1):
        assert cs.index_of(cs[i]) == i and cs[i] == params[i]
    assert cs[-1] == params[-1]
    with pytest.raises(IndexError):
        cs[len(cs)]
    # -0.0 and 0.0 are one point
    lin = SearchSpace({"x": Real(-1.0, 1.0)})
    assert len(candidate_set(lin, 0, grid=[{"x": 0.0}, {"x": -0.0}])) == 1


def test_posterior_presized_factor_never_reallocates():
    cands = candidate_set(SearchSpace({"x": Real(0.0, 1.0), "y": Real(0.0, 1.0)}), 256, random_state=0)
    post = GPPosterior(cands, InputKernel(0.2), noise_var=0.01, score_bounds=(0.0, 1.0), capacity=70)
    buffer = post._factor._L
    for i in range(70):
        post.add_observation(i, 0.5)
    assert post._factor._L is buffer  # no copy of the n x |Lambda| matrix inside the loop
