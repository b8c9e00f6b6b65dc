"""GPPosterior: incremental updates equal a dense reference computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gp_reference import consistent_task_matrix, dense_posterior
from hypothesis import given, settings
from hypothesis import strategies as st

from privtune.exceptions import InvalidParameterError
from privtune.gp import GPPosterior, InputKernel, MultiTaskKernel, ScoreScale, TaskKernel
from privtune.space import Real, SearchSpace, candidate_set

TOL = 1e-8


def check_against_dense(post, B, lengthscale, kind):
    y = post.scale.to_scaled(np.asarray(post._values_for_test))
    mean, var = dense_posterior(post.X, post.observation_tasks, post.observation_points, y,
                                post.noise_variances, B, lengthscale, kind)
    np.testing.assert_allclose(post.mean, mean, rtol=0, atol=TOL)
    np.testing.assert_allclose(post.variance, np.maximum(var, 0.0), rtol=0, atol=TOL)


class RecordingPosterior(GPPosterior):
    """Keeps the raw values so that the test can rebuild the dense reference."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._values_for_test = []

    def _add(self, j, x, col, value, task, noise_var):
        super()._add(j, x, col, value, task, noise_var)
        self._values_for_test.append(float(value))


@st.composite
def scenarios(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 3))
    m = draw(st.integers(1, 25))
    kind = draw(st.sampled_from(["matern52", "rbf"]))
    ard = draw(st.booleans())
    lengthscale = (rng.uniform(0.1, 1.0, size=d).tolist() if ard
                   else float(rng.uniform(0.1, 1.0)))
    n_public = draw(st.integers(0, 2))
    rho = draw(st.floats(0.3, 0.99))
    B = consistent_task_matrix(rng, n_public, rho) if n_public else np.ones((1, 1))
    noise = draw(st.floats(1e-4, 1.0))
    lower = draw(st.floats(-5.0, 5.0))
    upper = lower + draw(st.floats(0.1, 10.0))
    steps = draw(st.lists(
        st.tuples(
            st.integers(0, n_public),                 # task
            st.integers(-1, m - 1),                   # candidate, -1 = off Λ
            st.floats(-0.5, 1.5),                     # value as a fraction of the bounds
            st.one_of(st.none(), st.floats(1e-3, 2.0)),  # per-observation noise override
        ),
        min_size=1, max_size=30,
    ))
    return dict(rng=rng, X=rng.random((m, d)), kind=kind, lengthscale=lengthscale, B=B,
                rho=rho, noise=noise, bounds=(lower, upper), steps=steps)


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_incremental_posterior_equals_dense_reference(sc):
    B = sc["B"]
    kernel = MultiTaskKernel(InputKernel(sc["lengthscale"], kind=sc["kind"]),
                             TaskKernel(sc["rho"] if B.shape[0] > 1 else 0.9, B))
    post = RecordingPosterior(sc["X"], kernel, noise_var=sc["noise"], score_bounds=sc["bounds"])
    np.testing.assert_array_equal(post.mean, 0.0)
    np.testing.assert_array_equal(post.variance, 1.0)
    lower, upper = sc["bounds"]
    for task, cand, frac, noise in sc["steps"]:
        value = lower + frac * (upper - lower)
        if cand >= 0:
            post.add_observation(cand, value, task=task, noise_var=noise)
        else:
            post.add_observation_at(sc["rng"].random(sc["X"].shape[1]), value, task=task,
                                    noise_var=noise)
        check_against_dense(post, B, sc["lengthscale"], sc["kind"])
    assert post.n_observations == len(sc["steps"])
    assert np.all(post.noise_variances >= min(sc["noise"], 1e-3))


def test_repeated_candidate_with_noise_averages_the_observations():
    X = np.array([[0.1], [0.9]])
    post = RecordingPosterior(X, InputKernel(0.05), noise_var=0.5, score_bounds=(0.0, 1.0))
    for v in (0.9, 0.7, 0.8, 1.0):
        post.add_observation(0, v)
    check_against_dense(post, np.ones((1, 1)), 0.05, "matern52")
    z = ScoreScale(0.0, 1.0).to_scaled(np.array([0.9, 0.7, 0.8, 1.0]))
    # far-apart candidates: conjugate normal update with prior N(0, 1), noise 0.5
    assert post.mean[0] == pytest.approx(z.sum() / (4 + 0.5), abs=1e-6)
    assert post.variance[0] == pytest.approx(0.5 / (4 + 0.5), abs=1e-6)


def test_zero_noise_repeated_candidate_adds_jitter_only_when_needed():
    X = np.array([[0.2], [0.6]])
    post = RecordingPosterior(X, InputKernel(0.3, kind="rbf"), noise_var=0.0,
                              score_bounds=(0.0, 1.0))
    post.add_observation(0, 0.5)
    post.add_observation(1, 0.6)
    np.testing.assert_array_equal(post.noise_variances, [0.0, 0.0])
    post.add_observation(0, 0.5)  # exact repeat: singular without jitter
    assert post.noise_variances[2] == pytest.approx(1e-10, rel=1e-3)
    assert np.all(np.isfinite(post.mean)) and np.all(post.variance >= 0)
    check_against_dense(post, np.ones((1, 1)), 0.3, "rbf")


def test_score_scale_and_prior():
    s = ScoreScale(0.5, 1.0)
    assert s.mid == 0.75 and s.half_range == 0.25
    assert s.to_scaled(0.5) == -1.0 and s.to_scaled(1.0) == 1.0
    assert s.to_scores(s.to_scaled(0.8)) == pytest.approx(0.8)
    assert s.variance_to_scaled(0.0625) == 1.0 and s.variance_to_scores(1.0) == 0.0625
    X = np.array([[0.0], [0.5], [1.0]])
    post = GPPosterior(X, InputKernel(0.2), noise_var=1e-6, score_bounds=s)
    np.testing.assert_array_equal(post.mean_scores, 0.75)  # prior mean = middle of the bounds
    np.testing.assert_array_equal(post.std_scores, 0.25)  # prior sd = half the range
    post.add_observation(1, 0.9)
    assert post.mean_scores[1] == pytest.approx(0.9, abs=1e-5)
    assert post.variance[1] == pytest.approx(1e-6 / (1 + 1e-6), rel=1e-6)
    np.testing.assert_allclose(post.ucb(4.0), post.mean + 2.0 * post.std)


def test_uncorrelated_public_task_leaves_private_posterior_unchanged():
    X = np.random.default_rng(0).random((10, 2))
    kernel = MultiTaskKernel(InputKernel(0.3), TaskKernel(0.9, [[1.0, 0.0], [0.0, 1.0]]))
    post = GPPosterior(X, kernel, noise_var=0.01, score_bounds=(0, 1))
    post.add_observation(3, 0.9, task=1)
    np.testing.assert_array_equal(post.mean, 0.0)
    np.testing.assert_allclose(post.variance, 1.0, atol=1e-15)
    post.add_observation(3, 0.9, task=0)
    assert post.mean[3] > 0.7


def test_public_task_warm_start_moves_the_private_posterior():
    X = np.random.default_rng(0).random((10, 2))
    kernel = MultiTaskKernel(InputKernel(0.3), TaskKernel(0.9, [[1.0, 0.8], [0.8, 1.0]]))
    post = GPPosterior(X, kernel, noise_var=0.01, score_bounds=(0, 1))
    post.add_observation(3, 1.0, task=1)
    assert post.mean[3] == pytest.approx(0.8 / 1.01, abs=1e-12)
    assert post.variance[3] == pytest.approx(1 - 0.64 / 1.01, abs=1e-12)


def test_works_with_a_candidate_set_and_the_space_encoding():
    space = SearchSpace({"C": Real(1e-2, 1e2, log=True), "gamma": Real(1e-4, 1.0, log=True)})
    lam = candidate_set(space, 64, random_state=0)
    post = GPPosterior(lam, InputKernel([0.2, 0.3]), noise_var=0.01, score_bounds=(0, 1))
    post.add_observation(lam.index_of(lam.params[5]), 0.8)
    assert int(np.argmax(post.mean)) == 5 and post.n_candidates == 64


def test_does_not_touch_global_rngs():
    torch_state = torch.random.get_rng_state()
    np_state = np.random.get_state()[1].copy()
    post = GPPosterior(np.random.default_rng(0).random((30, 2)), InputKernel(0.2),
                       noise_var=0.1, score_bounds=(0, 1))
    for j in range(5):
        post.add_observation(j, 0.5)
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)


def test_invalid_inputs_are_refused_without_echoing_values():
    X = np.random.default_rng(0).random((5, 2))
    post = GPPosterior(X, InputKernel(0.2), noise_var=0.1, score_bounds=(0, 1))
    for secret in (float("nan"), float("inf"), "0.73125", None, True):
        with pytest.raises(InvalidParameterError) as info:
            post.add_observation(0, secret)
        assert "0.73125" not in str(info.value) and "nan" not in str(info.value)
    with pytest.raises(InvalidParameterError, match="'candidate'"):
        post.add_observation(5, 0.5)
    with pytest.raises(InvalidParameterError, match="'candidate'"):
        post.add_observation(1.0, 0.5)
    with pytest.raises(InvalidParameterError, match="Task indices"):
        post.add_observation(0, 0.5, task=1)
    with pytest.raises(InvalidParameterError, match="'noise_var'"):
        post.add_observation(0, 0.5, noise_var=-1.0)
    with pytest.raises(InvalidParameterError, match="'x'"):
        post.add_observation_at([0.5, 1.5], 0.5)
    assert post.n_observations == 0


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros((0, 2)),), {}, "'candidates'"),
        ((np.full((3, 2), 1.5),), {}, "unit cube"),
        ((np.zeros((3, 2)),), {"noise_var": -0.1}, "'noise_var'"),
        ((np.zeros((3, 2)),), {"score_bounds": (1.0, 0.0)}, "lower < upper"),
        ((np.zeros((3, 2)),), {"score_bounds": 1.0}, "'score_bounds'"),
        ((np.zeros((3, 3)),), {}, "3 coordinates"),
    ],
)
def test_invalid_constructions(args, kwargs, match):
    params = {"noise_var": 0.1, "score_bounds": (0, 1), **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        GPPosterior(*args, InputKernel([0.2, 0.2]), **params)
    with pytest.raises(InvalidParameterError, match="'kernel'"):
        GPPosterior(np.zeros((3, 2)), "matern", noise_var=0.1, score_bounds=(0, 1))
