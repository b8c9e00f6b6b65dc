"""Candidate sets Λ: Sobol design, grids, de-duplication, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.space import CandidateSet, Categorical, Integer, Real, SearchSpace, candidate_set

SPACE = SearchSpace({"C": Real(1e-2, 1e2, log=True), "gamma": Real(1e-4, 1.0, log=True)})


def test_shapes_and_encoding_consistency():
    lam = candidate_set(SPACE, 64, random_state=0)
    assert len(lam) == lam.n_candidates == 64 and lam.n_duplicates == 0
    assert lam.X.shape == (64, 2) and lam.n_dims == 2
    assert np.all((lam.X >= 0) & (lam.X <= 1))
    np.testing.assert_array_equal(lam.X, SPACE.encode_many(lam.params))
    assert [lam.index_of(p) for p in lam.params] == list(range(64))
    assert lam[3] == lam.params[3]
    assert not lam.X.flags.writeable


def test_reproducible_for_an_int_seed_and_seed_dependent():
    a = candidate_set(SPACE, 100, random_state=7)
    b = candidate_set(SPACE, 100, random_state=7)
    c = candidate_set(SPACE, 100, random_state=8)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.params == b.params
    assert not np.array_equal(a.X, c.X)
    gen = candidate_set(SPACE, 16, random_state=np.random.default_rng(3))
    assert len(gen) == 16
    secure = candidate_set(SPACE, 16, random_state=None)
    assert len(secure) == 16


def test_truncation_of_a_non_power_of_two_is_the_prefix_of_the_power_of_two_design():
    small = candidate_set(SPACE, 100, random_state=1)
    full = candidate_set(SPACE, 128, random_state=1)
    np.testing.assert_array_equal(small.X, full.X[:100])


def test_sobol_points_are_well_spread():
    lam = candidate_set(SearchSpace({"a": Real(0, 1), "b": Real(0, 1)}), 256, random_state=0)
    # a scrambled Sobol design of 2**8 points has exactly 16 points in each of
    # the 16 columns of width 1/16 (its 1-D projections are stratified)
    counts = np.bincount(np.floor(lam.X[:, 0] * 16).astype(int), minlength=16)
    assert counts.tolist() == [16] * 16


def test_integers_and_categoricals_are_de_duplicated_after_decoding():
    space = SearchSpace({"k": Integer(1, 5), "kernel": Categorical(["rbf", "poly", "linear"])})
    lam = candidate_set(space, 256, random_state=0)
    assert len(lam) == 15  # every (k, kernel) pair, once
    assert lam.n_duplicates == 256 - 15
    keys = {(p["k"], p["kernel"]) for p in lam.params}
    assert len(keys) == 15
    for p in lam.params:
        assert type(p["k"]) is int


def test_grid_points_come_first_and_are_validated():
    grid = [{"C": 1.0, "gamma": 0.01}, {"C": 10.0, "gamma": 0.1}, {"C": 1.0, "gamma": 0.01}]
    lam = candidate_set(SPACE, 32, grid=grid, random_state=0)
    assert lam.params[:2] == grid[:2]
    assert len(lam) == 34 and lam.n_duplicates == 1
    assert lam.index_of({"C": 10.0, "gamma": 0.1}) == 1
    only_grid = candidate_set(SPACE, 0, grid=grid)
    assert len(only_grid) == 2
    with pytest.raises(InvalidParameterError, match="'C' hyperparameter"):
        candidate_set(SPACE, 8, grid=[{"C": 1e3, "gamma": 0.1}], random_state=0)
    with pytest.raises(InvalidParameterError, match="list of dicts"):
        candidate_set(SPACE, 8, grid={"C": 1.0, "gamma": 0.1}, random_state=0)


def test_index_of_unknown_point_is_refused():
    lam = candidate_set(SPACE, 8, random_state=0)
    with pytest.raises(InvalidParameterError, match="not in the candidate set"):
        lam.index_of({"C": 1.2345, "gamma": 0.01})
    with pytest.raises(InvalidParameterError):
        lam.index_of({"C": 1.0})
    assert {"C": 1.2345, "gamma": 0.01} not in lam and lam.params[0] in lam


def test_params_are_copies():
    lam = candidate_set(SPACE, 8, random_state=0)
    p = lam.params
    p[0]["C"] = -1.0
    assert lam.params[0]["C"] != -1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_candidates": 0}, "when no grid is given"),
        ({"n_candidates": -1}, "'n_candidates'"),
        ({"n_candidates": 2.5}, "'n_candidates'"),
        ({"n_candidates": 8, "random_state": -3}, "'random_state'"),
        ({"n_candidates": 8, "random_state": "seed"}, "'random_state'"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        candidate_set(SPACE, **kwargs)


def test_space_must_be_a_search_space():
    with pytest.raises(InvalidParameterError, match="SearchSpace"):
        candidate_set({"C": Real(0, 1)}, 8)
    with pytest.raises(InvalidParameterError, match="at least one point"):
        CandidateSet(SPACE, [])


def test_candidate_set_does_not_touch_the_global_numpy_rng():
    state = np.random.get_state()[1].copy()
    candidate_set(SPACE, 64, random_state=0)
    candidate_set(SPACE, 64, random_state=None)
    np.testing.assert_array_equal(np.random.get_state()[1], state)
