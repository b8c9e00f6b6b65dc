"""Statistical checks of the release methods: selection law of gp-ucb, DP audits of random and noisy-ucb.

Each audit is run on one pair of neighbouring score vectors (every candidate's score moves by at most the
declared sensitivity) and must (a) find no violation for the real method and (b) flag a deliberately broken
twin at the same sample size. Passing is evidence, not a proof.
"""

import math

import numpy as np
import pytest
from scipy import stats

from privtune.accounting import Accountant, Budget
from privtune.bo import GPUCB, NoisyUCB, RandomSearch, UCBEngine, kusner_constants
from privtune.gp import GPPosterior, InputKernel, MultiTaskKernel, TaskKernel, gamma_T
from privtune.space import Real, SearchSpace, candidate_set
from privtune.testing import audit_mechanism

pytestmark = pytest.mark.statistical


def _line(n):
    return candidate_set(SearchSpace({"x": Real(0.0, 1.0)}), n, random_state=0)


def test_gp_ucb_selection_frequencies_follow_the_exponential_mechanism(monkeypatch):
    """H0: the released index is distributed as exp(eps mu_T / (2 Delta)) with Alg. 1's Delta.

    The loop's observation noise alpha_t is held at fixed values here (the law tested is the selection's, given
    mu_T), so the GP-UCB loop is deterministic for a deterministic objective: mu_T is recomputed independently
    (observations f + alpha_t, in score units f + alpha_t / 2 for bounds (0, 1)) and 2000 seeded runs are compared
    with a chi-square test (8 cells, alpha = 1e-4). With eps_sel = 60 the law is far from uniform (max/min
    probability ratio about 3); a Delta wrong by 25 % moves the expected counts by more than 5 standard errors in
    the extreme cells, so the power is essentially 1.
    """
    from privtune.bo import gp_ucb

    alphas = np.array([0.3, -0.2, 0.1])  # GP units
    monkeypatch.setattr(gp_ucb, "observation_noise", lambda source, sd, size: alphas[:size].copy())
    cands = _line(8)
    kern = MultiTaskKernel(InputKernel(0.3), TaskKernel(0.95))
    f = lambda p: 0.2 + 0.6 * p["x"]  # noqa: E731
    m = GPUCB(epsilon=120.0, delta=2e-3, n_iter=3, kernel=kern, noise_std=0.5)
    n = 2000
    counts = np.bincount([m.run(f, cands, random_state=s).index for s in range(n)], minlength=8)
    # independent recomputation of mu_T and Delta
    eng = UCBEngine(GPPosterior(cands, kern, noise_var=0.25, score_bounds=(0.0, 1.0)), delta=1e-3)
    for t in range(3):
        i = eng.ask()
        eng.tell(i, f(cands[i]) + 0.5 * alphas[t])
    g = gamma_T(cands.X, 3, 0.25, kernel=kern).bound
    k = kusner_constants(n_candidates=8, n_iter=3, delta=1e-3, task_correlation=0.95, noise_std=0.5, gamma_T=g,
                         epsilon=60.0)
    logits = 60.0 * eng.mean() / (2 * k["em_sensitivity"])
    p = np.exp(logits - logits.max())
    p /= p.sum()
    assert p.max() / p.min() > 2.5
    assert stats.chisquare(counts, p * n).pvalue > 1e-4


def _random_sampler(method, scores, cands):
    lookup = {round(c["x"], 12): s for c, s in zip(cands.params, scores, strict=False)}
    seed = iter(range(10**9))

    def sample(n):
        return np.array([method.run(lambda p: lookup[round(p["x"], 12)], cands, random_state=next(seed)).index
                         for _ in range(n)])
    return sample


@pytest.mark.slow
def test_random_exponential_selection_passes_an_audit_and_a_broken_twin_is_flagged():
    """Claim: the selection is eps_sel = 1 DP (epsilon = 2 split evenly). n = 8000 runs per side, 99.9 %.

    Neighbours: scores s = 0.5 everywhere vs s' = 0.5 + Delta on candidate 0 and 0.5 - Delta elsewhere.
    The broken twin declares a quarter of the true sensitivity, so its selection has true epsilon about 4
    on this pair: an effect far larger than the audit's resolution at this n (about 0.3).
    """
    cands = _line(4)
    delta_s = 0.01
    s = [0.5] * 4
    s2 = [0.5 + delta_s] + [0.5 - delta_s] * 3
    real = RandomSearch(epsilon=2.0, n_iter=4, score_sensitivity=delta_s)
    broken = RandomSearch(epsilon=2.0, n_iter=4, score_sensitivity=delta_s / 4)
    kw = dict(epsilon=1.0, n_samples=8_000, output_type="discrete", confidence=0.999, random_state=0)
    ok = audit_mechanism(_random_sampler(real, s, cands), _random_sampler(real, s2, cands), **kw)
    bad = audit_mechanism(_random_sampler(broken, s, cands), _random_sampler(broken, s2, cands), **kw)
    assert not ok.violation, ok
    assert bad.violation and bad.epsilon_lower_bound > 1.5, bad


class _BrokenNoisyUCB(NoisyUCB):
    """Broken twin: 20x less noise than calibrated (its own accountant would refuse it; the audit bypasses that)."""

    def noise_multipliers(self):
        obs, final = super().noise_multipliers()
        return obs / 20, final / 20


def _noisy_sampler(method, scores, cands):
    lookup = {round(c["x"], 12): s for c, s in zip(cands.params, scores, strict=False)}
    seed = iter(range(10**9))

    def sample(n):  # a generous accountant: the audit tests the claim (epsilon = 1), not the bookkeeping
        return np.array([method.run(lambda p: lookup[round(p["x"], 12)], cands, random_state=next(seed),
                                    accountant=Accountant(Budget(1e9, 1e-5))).score for _ in range(n)])
    return sample


@pytest.mark.slow
def test_noisy_ucb_passes_an_audit_and_a_broken_twin_is_flagged():
    """Claim: the whole run is (1, 1e-5)-DP; the audited output is the released score (post-processing).

    n = 2000 runs per side at 99.9 % confidence; the broken twin's noise is 20x too small, which separates
    the two score distributions almost completely (true epsilon > 10 on this pair), far beyond the audit's
    resolution at this n.
    """
    cands = _line(2)
    delta_s = 0.01
    s, s2 = [0.5, 0.5], [0.5 + delta_s, 0.5 + delta_s]
    mk = dict(epsilon=1.0, delta=1e-5, n_iter=2, score_sensitivity=delta_s)
    kw = dict(epsilon=1.0, delta=1e-5, n_samples=2000, confidence=0.999, random_state=0)
    ok = audit_mechanism(_noisy_sampler(NoisyUCB(**mk), s, cands), _noisy_sampler(NoisyUCB(**mk), s2, cands), **kw)
    bad = audit_mechanism(_noisy_sampler(_BrokenNoisyUCB(**mk), s, cands),
                          _noisy_sampler(_BrokenNoisyUCB(**mk), s2, cands), **kw)
    assert not ok.violation, ok
    assert bad.violation, bad
    assert math.isfinite(ok.epsilon_lower_bound)
