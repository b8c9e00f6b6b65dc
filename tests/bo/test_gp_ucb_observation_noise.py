"""``gp-ucb`` observes v_t = f(lambda_t) + alpha_t, alpha_t ~ N(0, sigma^2), as Kusner et al.'s Alg. 1 assumes.

Alg. 1's theorems (through Srinivas et al.'s Lemma 5.1) are proved for noisy observations whose noise variance is
the one the posterior assumes (sigma^2 = ``noise_std**2`` in GP units). The loop used to observe the exact (clipped)
scores while its posterior assumed sigma > 0. It now adds a fresh alpha_t from the search's noise source to every
observation, updates the posterior with it and releases the maximum of the noisy observations. ``gp-ucb-exact``
(Alg. 2) stays noise-free.
"""

import math

import numpy as np
import pytest
from bo_objectives import bump
from scipy import stats

from privtune.bo import GPUCB, GPUCBExact, gp_ucb
from privtune.bo.engine import UCBEngine
from privtune.space import Categorical, SearchSpace, candidate_set
from privtune.utils._random import SecureRandomSource, SeededRandomSource

BOUNDS = (0.0, 2.0)  # half range 1: GP units = score units - 1
MID, HALF = 1.0, 1.0


def _recorded_run(method, cands, monkeypatch, random_state, objective=bump):
    """Run ``method``; return [(candidate, exact clipped score, value told to the GP)] per step, and the release."""
    told: list[tuple[int, float]] = []
    exact: list[float] = []
    real_tell = UCBEngine.tell

    def recording_tell(self, index, value, **kw):
        told.append((int(index), float(value)))
        return real_tell(self, index, value, **kw)

    def recording_objective(p):
        v = min(BOUNDS[1], max(BOUNDS[0], float(objective(p))))
        exact.append(v)
        return v

    monkeypatch.setattr(UCBEngine, "tell", recording_tell)
    rel = method.run(recording_objective, cands, random_state=random_state)
    monkeypatch.setattr(UCBEngine, "tell", real_tell)
    assert len(told) == len(exact) == method.n_iter
    return [(i, f, v) for (i, v), f in zip(told, exact, strict=True)], rel


def test_observations_differ_from_the_scores_by_gaussian_noise_of_the_declared_sigma(cands2d, monkeypatch):
    """300 residuals v_t - f(lambda_t) (GP units) from 10 seeded runs of 30 iterations, sigma = 0.1. Each test at
    alpha = 1e-4 (the runs are seeded, so the verdict is fixed; alpha says how unlikely a correct sampler is to
    fail it): the mean (z-test), the variance (two-sided chi-square test) and the shape (Kolmogorov-Smirnov
    against N(0, sigma^2)). Before the fix every residual was 0 (exact scores)."""
    sigma = 0.1
    residuals = []
    for seed in range(10):
        m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=30, score_bounds=BOUNDS, noise_std=sigma)
        rows, _ = _recorded_run(m, cands2d, monkeypatch, seed)
        residuals += [((v - MID) / HALF) - ((f - MID) / HALF) for _, f, v in rows]
    r = np.asarray(residuals)
    n = r.size
    alpha = 1e-4
    assert np.count_nonzero(r) == n
    z = r.mean() / (sigma / math.sqrt(n))
    assert abs(z) < stats.norm.isf(alpha / 2)
    chi2 = float(np.sum(r**2) / sigma**2)  # n degrees of freedom (the mean is known: 0)
    assert stats.chi2.ppf(alpha / 2, n) < chi2 < stats.chi2.isf(alpha / 2, n)
    assert stats.kstest(r, "norm", args=(0.0, sigma)).pvalue > alpha


def test_the_noise_is_in_gp_units_whatever_the_score_range(cands2d, monkeypatch):
    """Bounds (0, 200): sigma = 0.2 in GP units is 20 in score units (half the range, 100, times sigma)."""
    m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=40, score_bounds=(0.0, 200.0), noise_std=0.2)
    told, exact = [], []
    real_tell = UCBEngine.tell
    monkeypatch.setattr(UCBEngine, "tell", lambda self, i, v, **kw: (told.append(v), real_tell(self, i, v, **kw)))
    m.run(lambda p: exact.append(100.0 * bump(p)) or exact[-1], cands2d, random_state=3)
    r = (np.asarray(told) - np.asarray(exact)) / 100.0
    sd = float(np.sqrt(np.mean(r**2)))
    assert stats.chi2.ppf(1e-4 / 2, r.size) < r.size * sd**2 / 0.2**2 < stats.chi2.isf(1e-4 / 2, r.size)


def test_the_released_maximum_is_that_of_the_noisy_observations(cands2d, monkeypatch):
    seen = []
    monkeypatch.setattr(gp_ucb, "randomise_on_grid", lambda mech, value: seen.append(value) or value)
    m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=12, score_bounds=BOUNDS, noise_std=0.3)
    rows, rel = _recorded_run(m, cands2d, monkeypatch, 7)
    noisy = [(v - MID) / HALF for _, _, v in rows]
    exact = [(f - MID) / HALF for _, f, _ in rows]
    assert seen == [pytest.approx(max(noisy), abs=1e-12)]
    assert abs(max(noisy) - max(exact)) > 1e-6  # v* is not the maximum of the exact scores
    assert rel.score == pytest.approx(MID + HALF * max(noisy), abs=1e-12)  # (the release's noise removed)


def test_a_revisited_candidate_gets_fresh_noise_on_the_same_score(monkeypatch):
    cands = candidate_set(SearchSpace({"k": Categorical([0, 1])}), 2, random_state=0)
    m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=10, score_bounds=BOUNDS, noise_std=0.1)
    rows, _ = _recorded_run(m, cands, monkeypatch, 0, objective=lambda p: 0.5 + 0.25 * p["k"])
    by_candidate: dict[int, list[tuple[float, float]]] = {}
    for i, f, v in rows:
        by_candidate.setdefault(i, []).append((f, v))
    revisited = [obs for obs in by_candidate.values() if len(obs) > 1]
    assert revisited  # two candidates, ten iterations
    for obs in revisited:
        assert len({f for f, _ in obs}) == 1  # the same score (f is fixed)
        assert len({v for _, v in obs}) == len(obs)  # a fresh alpha_t at every visit


def test_seeded_runs_reproduce_exactly_and_unseeded_runs_draw_secure_noise(cands2d, monkeypatch):
    m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=8, score_bounds=BOUNDS)
    a_rows, a = _recorded_run(m, cands2d, monkeypatch, 11)
    b_rows, b = _recorded_run(m, cands2d, monkeypatch, 11)
    c_rows, _ = _recorded_run(m, cands2d, monkeypatch, 12)
    assert a_rows == b_rows and a.to_dict() == b.to_dict()
    assert [v for *_, v in a_rows] != [v for *_, v in c_rows]
    sources = []
    real = gp_ucb.observation_noise
    monkeypatch.setattr(gp_ucb, "observation_noise", lambda src, sd, n: sources.append(src) or real(src, sd, n))
    m.run(bump, cands2d, random_state=None)
    m.run(bump, cands2d, random_state=4)
    assert [type(s) for s in sources] == [SecureRandomSource, SeededRandomSource]


def test_observation_noise_draws_from_the_given_source():
    from privtune.utils._random import check_random_state

    a = gp_ucb.observation_noise(check_random_state(5), 0.25, 4000)
    b = gp_ucb.observation_noise(check_random_state(5), 0.25, 4000)
    assert np.array_equal(a, b) and a.shape == (4000,)
    assert np.all(np.round(a / (0.25 * 2.0**-20)) == a / (0.25 * 2.0**-20))  # on the exact grid
    assert stats.kstest(a, "norm", args=(0.0, 0.25)).pvalue > 1e-4


def test_gp_ucb_exact_still_observes_the_exact_scores(cands2d, monkeypatch):
    m = GPUCBExact(epsilon=1.0, delta=1e-6, n_iter=8, A=0.1, tau=1.0, score_bounds=BOUNDS)
    rows, _ = _recorded_run(m, cands2d, monkeypatch, 0)
    assert all(v == f for _, f, v in rows)
