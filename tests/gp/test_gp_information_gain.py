"""γ_T: greedy value and the (1 - 1/e) bound against brute force on tiny sets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from gp_reference import closed_form_k2
from hypothesis import given, settings
from hypothesis import strategies as st

from privtune.exceptions import InvalidParameterError
from privtune.gp import InputKernel, MultiTaskKernel, TaskKernel, gamma_T


def info_gain(K, A, noise_var):
    KA = K[np.ix_(A, A)]
    _, logdet = np.linalg.slogdet(np.eye(len(A)) + KA / noise_var)
    return 0.5 * logdet


def brute_force_gamma(K, T, noise_var):
    """Max over all multisets of size T (GP-UCB may repeat a candidate)."""
    m = K.shape[0]
    return max(info_gain(K, list(A), noise_var)
               for A in itertools.combinations_with_replacement(range(m), T))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 6),
    T=st.integers(1, 4),
    noise_var=st.floats(1e-3, 2.0),
    lengthscale=st.floats(0.05, 2.0),
    kind=st.sampled_from(["matern52", "rbf"]),
)
def test_true_maximum_lies_between_greedy_and_bound(seed, m, T, noise_var, lengthscale, kind):
    X = np.random.default_rng(seed).random((m, 2))
    res = gamma_T(X, T, noise_var, kernel=InputKernel(lengthscale, kind=kind))
    K = closed_form_k2(X, X, lengthscale, kind)
    best = brute_force_gamma(K, T, noise_var)
    assert res.greedy <= best + 1e-9
    assert best <= res.bound + 1e-9
    assert res.bound == pytest.approx(res.greedy / (1 - 1 / math.e))
    # the greedy value is exactly the information gain of the multiset it chose
    assert res.greedy == pytest.approx(info_gain(K, list(res.selected), noise_var), abs=1e-9)
    assert len(res.selected) == T and res.T == T and res.noise_var == noise_var


def test_matrix_input_matches_kernel_input():
    X = np.random.default_rng(4).random((40, 2))
    kernel = InputKernel([0.2, 0.4])
    K = closed_form_k2(X, X, [0.2, 0.4], "matern52")
    a = gamma_T(X, 10, 0.05, kernel=kernel)
    b = gamma_T(K, 10, 0.05)
    assert a.selected == b.selected
    assert a.greedy == pytest.approx(b.greedy, abs=1e-9)
    mk = MultiTaskKernel(kernel, TaskKernel(0.9, [[1.0, 0.5], [0.5, 1.0]]))
    assert gamma_T(X, 10, 0.05, kernel=mk).selected == a.selected


def test_known_values():
    # T = 1: any single point gains ½ log(1 + 1/σ²), and that is the maximum
    X = np.random.default_rng(0).random((5, 1))
    res = gamma_T(X, 1, 0.25, kernel=InputKernel(0.3))
    assert res.greedy == pytest.approx(0.5 * math.log(5.0))
    # independent candidates (identity covariance): greedy spreads over them
    res = gamma_T(np.eye(3), 3, 1.0)
    assert sorted(res.selected) == [0, 1, 2]
    assert res.greedy == pytest.approx(1.5 * math.log(2.0))
    # one candidate observed T times: ½ log(1 + T/σ²)
    res = gamma_T(np.array([[0.5]]), 4, 0.5, kernel=InputKernel(0.1))
    assert res.selected == (0, 0, 0, 0)
    assert res.greedy == pytest.approx(0.5 * math.log(1 + 4 / 0.5))


def test_grows_with_T_and_shrinks_with_noise():
    X = np.random.default_rng(1).random((64, 2))
    k = InputKernel(0.2)
    g = [gamma_T(X, T, 0.1, kernel=k).greedy for T in (5, 10, 20)]
    assert g[0] < g[1] < g[2]
    assert gamma_T(X, 10, 1.0, kernel=k).greedy < g[1]


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.eye(3), 0, 0.1), {}, "'T'"),
        ((np.eye(3), 2, 0.0), {}, "'noise_var'"),
        ((np.eye(3), 2, -1.0), {}, "'noise_var'"),
        ((np.ones((2, 3)), 2, 0.1), {}, "square"),
        ((np.array([[1.0, 0.5], [0.4, 1.0]]), 2, 0.1), {}, "symmetric"),
        ((np.array([[1.0, 2.0], [2.0, 1.0]]), 2, 0.1), {}, "positive semi-definite"),
        ((np.zeros((3, 2)), 2, 0.1), {"kernel": "rbf"}, "'kernel'"),
        ((np.full((3, 2), 2.0), 2, 0.1), {"kernel": InputKernel(0.2)}, "unit cube"),
    ],
)
def test_invalid_arguments(args, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        gamma_T(*args, **kwargs)
