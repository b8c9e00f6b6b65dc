"""Kusner et al.'s constants, recomputed independently from the paper's formulas."""

import math

import numpy as np
import pytest

from privtune.bo import beta_t, kusner_constants, kusner_exact_constants, lipschitz_constants
from privtune.bo.constants import (
    exact_score_utility_bound,
    lipschitz_score_utility_bound,
    score_utility_bound,
    selection_utility_bound,
)
from privtune.exceptions import InvalidParameterError

CASES = [
    dict(n_candidates=256, n_iter=30, delta=1e-6, task_correlation=0.95, noise_std=0.1, gamma_T=20.0, epsilon=1.0),
    dict(n_candidates=4096, n_iter=100, delta=1e-3, task_correlation=0.5, noise_std=0.5, gamma_T=57.3, epsilon=0.3),
    dict(n_candidates=7, n_iter=1, delta=0.2, task_correlation=0.0, noise_std=2.0, gamma_T=0.0, epsilon=8.0),
]


@pytest.mark.parametrize("case", CASES)
def test_alg1_constants_match_the_paper(case):
    n, T, d, k1, s, g, e = (case[k] for k in ("n_candidates", "n_iter", "delta", "task_correlation", "noise_std",
                                              "gamma_T", "epsilon"))
    beta = lambda t: 2 * math.log(n * t * t * math.pi**2 / (3 * d))  # noqa: E731  (Alg. 1, line 3)
    c = 2 * math.sqrt((1 - k1) * math.log(3 * n / d))
    q = s * math.sqrt(4 * math.log(3 / d))
    C1 = 8 / math.log(1 + s**-2)
    got = kusner_constants(**case)
    assert got["beta_T"] == pytest.approx(beta(T), rel=1e-12)
    assert got["beta_T1"] == pytest.approx(beta(T + 1), rel=1e-12)
    assert beta_t(T, n_candidates=n, delta=d) == pytest.approx(beta(T), rel=1e-12)
    assert got["c"] == pytest.approx(c, rel=1e-12)
    assert got["q"] == pytest.approx(q, rel=1e-12)
    assert got["C1"] == pytest.approx(C1, rel=1e-12)
    assert got["em_sensitivity"] == pytest.approx(2 * math.sqrt(beta(T + 1)) + c, rel=1e-12)
    assert got["em_weight"] == pytest.approx(e / (2 * (2 * math.sqrt(beta(T + 1)) + c)), rel=1e-12)
    lap = math.sqrt(C1 * beta(T) * g) / (e * math.sqrt(T)) + c / e + q / e
    assert got["laplace_scale"] == pytest.approx(lap, rel=1e-12)


def test_practical_magnitudes_table_of_the_spec():
    """seed000_spec.md section 7 (delta 1e-6, sigma 0.1, gamma_T 20, epsilon 1).

    The spec prints 10.8 for the first row's Laplace scale; the formula gives 10.75
    (7.95 + 2.02 + 0.77), so that row is checked to 0.1.
    """
    rows = [(256, 30, 0.95, 54.7, 2.02, 16.8, 0.030, 10.8, 0.06), (1024, 50, 0.95, 59.5, 2.09, 17.5, 0.029, 9.3, 0.05),
            (1024, 50, 0.99, 59.5, 0.93, 16.4, 0.031, 8.1, 0.05)]
    for n, T, k1, bT, c, em, w, lap, tol in rows:
        got = kusner_constants(n_candidates=n, n_iter=T, delta=1e-6, task_correlation=k1, noise_std=0.1,
                               gamma_T=20, epsilon=1.0)
        assert got["beta_T"] == pytest.approx(bT, abs=0.05)
        assert got["c"] == pytest.approx(c, abs=0.01)
        assert got["em_sensitivity"] == pytest.approx(em, abs=0.05)
        assert got["em_weight"] == pytest.approx(w, abs=0.0005)
        assert got["laplace_scale"] == pytest.approx(lap, abs=tol)


def test_alg2_constants():
    got = kusner_exact_constants(n_candidates=100, delta=1e-4, task_correlation=0.9, A=2.0, tau=3.0, n_dims=2,
                                 epsilon=0.5)
    c = 2 * math.sqrt(0.1 * math.log(2 * 100 / 1e-4))
    regret = 2.0 * math.exp(-2 * 3.0 / math.log(2) ** (2 / 4))
    assert got["c"] == pytest.approx(c, rel=1e-12)
    assert got["regret_term"] == pytest.approx(regret, rel=1e-12)
    assert got["laplace_scale"] == pytest.approx((regret + c) / 0.5, rel=1e-12)


def test_alg3_constants():
    got = lipschitz_constants(n_validation=500, epsilon=0.5, lipschitz=2.0, loss_bound=1.0, lambda_min=0.01,
                              lambda_max=0.1)
    per = 1.0 / 500  # g*/m: the paper's L/(m lambda_min) branch is dropped (see lipschitz_constants)
    path = (0.1 - 0.01) * 2.0 / (0.1 * 0.01)
    assert got["per_lambda_sensitivity"] == pytest.approx(per)
    assert got["path_term"] == pytest.approx(path)
    assert got["laplace_scale"] == pytest.approx((per + path) / 0.5)


def test_utility_bounds():
    k = kusner_constants(**CASES[0])
    a = math.log(1 / (1 - 0.95 - 1e-6))
    assert selection_utility_bound(k, n_candidates=256, epsilon=1.0, delta=1e-6) == pytest.approx(
        2 * math.sqrt(k["beta_T"]) + k["q"] + (2 * k["em_sensitivity"]) * (math.log(256) + a))
    omega = math.sqrt(k["C1"] * 30 * k["beta_T"] * 20)
    assert score_utility_bound(k, n_iter=30, epsilon=1.0, delta=1e-6) == pytest.approx(
        math.sqrt(2 * math.log(60 / 1e-6)) + omega / 30 + a * (omega / 30 + k["c"] + k["q"]))
    e = kusner_exact_constants(n_candidates=10, delta=1e-3, task_correlation=0.9, A=1, tau=1, n_dims=1, epsilon=1)
    a2 = math.log(1 / (1 - 0.95 - 1e-3))
    assert exact_score_utility_bound(e, epsilon=1, delta=1e-3) == pytest.approx(
        e["regret_term"] + a2 * (e["regret_term"] + e["c"]))
    lc = lipschitz_constants(n_validation=10, epsilon=1, lipschitz=1, loss_bound=1, lambda_min=1, lambda_max=2)
    assert lipschitz_score_utility_bound(lc, confidence=0.9) == pytest.approx(math.log(10) * lc["laplace_scale"])
    with pytest.raises(InvalidParameterError, match="'confidence'"):
        score_utility_bound(k, n_iter=30, epsilon=1.0, delta=0.1, confidence=0.95)


@pytest.mark.parametrize("bad", [dict(n_candidates=0), dict(delta=0.0), dict(task_correlation=1.5),
                                 dict(noise_std=0.0), dict(gamma_T=-1.0), dict(epsilon=0.0), dict(n_iter=0)])
def test_constants_validation(bad):
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(bad))}' parameter of kusner_constants"):
        kusner_constants(**{**CASES[0], **bad})


def test_constants_need_no_torch():
    import subprocess
    import sys

    code = "import sys, privtune.bo; privtune.bo.kusner_constants(n_candidates=4, n_iter=2, delta=0.1, " \
           "task_correlation=0.9, noise_std=0.1, gamma_T=1, epsilon=1); sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_alg3_per_lambda_sensitivity_covers_the_replace_one_counterexample():
    """lambda_min = 4, L = g* = 1, w = e1 / 4 (hinge trained on e1), g = clip(0.5 - y w.x, 0, 1), V = {(e1, +1)},
    V' = {(e1, -1)}: the score -mean(g) moves by 0.5 / m. The paper's L / (m lambda_min) = 0.25 / m is too small."""
    w, x = np.array([0.25, 0.0]), np.array([1.0, 0.0])
    g = lambda y: float(np.clip(0.5 - y * w @ x, 0.0, 1.0))  # noqa: E731
    for m in (1, 7, 100):
        move = abs(g(+1) - g(-1)) / m  # one of m records replaced, the others identical
        got = lipschitz_constants(n_validation=m, epsilon=1.0, lipschitz=1.0, loss_bound=1.0, lambda_min=4.0,
                                  lambda_max=8.0)
        assert move == pytest.approx(0.5 / m)
        assert got["per_lambda_sensitivity"] >= move - 1e-15
        assert got["per_lambda_sensitivity"] == pytest.approx(1.0 / m)  # g*/m (test_lipschitz_adversarial_rows)
        assert got["sensitivity"] == pytest.approx(got["per_lambda_sensitivity"] + (8 - 4) / (8 * 4))


def test_gp_ucb_score_release_uses_the_loops_beta_with_an_uneven_split():
    """Thm. 3 bounds the regret of the loop that ran: its beta_T is taken at the loop's delta (the smaller of the two
    releases'), not at the score release's own delta; c and q stay at the score's delta."""
    from privtune.bo import GPUCB
    from privtune.space import Real, SearchSpace, candidate_set

    cands = candidate_set(SearchSpace({"x": Real(0.0, 1.0)}), 16, random_state=0)
    m = GPUCB(epsilon=1.0, delta=1e-4, n_iter=5, selection_share=0.2)
    sel, sc = m.budgets
    assert sel.delta < sc.delta and m.loop_delta == sel.delta
    got = m.constants(cands)["score"]
    g = got["gamma_T"]
    bT_loop = beta_t(5, n_candidates=16, delta=sel.delta)
    c = 2 * math.sqrt((1 - 0.95) * math.log(3 * 16 / sc.delta))
    q = 0.1 * math.sqrt(4 * math.log(3 / sc.delta))
    C1 = 8 / math.log1p(0.1**-2)
    want = math.sqrt(C1 * bT_loop * g) / (sc.epsilon * math.sqrt(5)) + c / sc.epsilon + q / sc.epsilon
    assert got["beta_T"] == pytest.approx(bT_loop)
    assert got["laplace_scale"] == pytest.approx(want, rel=1e-12)
    at_own_delta = kusner_constants(n_candidates=16, n_iter=5, delta=sc.delta, task_correlation=0.95, noise_std=0.1,
                                    gamma_T=g, epsilon=sc.epsilon)["laplace_scale"]
    assert got["laplace_scale"] > at_own_delta * 1.01  # the old scale was too small
