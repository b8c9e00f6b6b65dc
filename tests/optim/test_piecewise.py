"""Tests of the seed-001 mechanisms (privtune.optim.piecewise): problem solved, calibration, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import privtune.optim.piecewise._mechanisms as pw
from privtune.accounting import Accountant, Budget, EpsilonDeltaEvent, LaplaceEvent
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.optim.piecewise import (
    pwa_box_centre,
    pwa_exponential,
    pwa_objective,
    pwa_perturb_objective,
    pwa_perturb_solution,
    pwa_subgradient,
    pwa_uniform,
    solve_pwa,
)
from privtune.optim.piecewise._sampling import gibbs_tv_bound, rejection_tv_bound, sample_piecewise_exponential
from privtune.utils import check_random_state

MECHS = {
    "perturb-objective": lambda A, b, **kw: pwa_perturb_objective(A, b, offset_bound=1.0, **kw),
    "perturb-solution": lambda A, b, **kw: pwa_perturb_solution(A, b, **kw),
    "exponential": lambda A, b, **kw: pwa_exponential(A, b, offset_bound=1.0, **kw),
    # offset_bound 5: kappa * sum_j V_j is about 1, so 40 sweeps certify delta < 1e-6
    "exponential-gibbs": lambda A, b, **kw: pwa_exponential(A, b, offset_bound=5.0, sampler="gibbs",
                                                             n_steps=40, **kw),
    "subgradient": lambda A, b, **kw: pwa_subgradient(A, b, offset_bound=1.0, n_iter=20, **kw),
}


def instance(seed, m=20, d=2):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, d)), rng.standard_normal(m)


# ----------------------------------------------------------------------------- the exact problem
@pytest.mark.parametrize("d", [1, 2])
def test_solve_pwa_matches_dense_grid(d):
    A, b = instance(1, m=15, d=d)
    lo, hi = np.full(d, -1.5), np.full(d, 1.5)
    x, value = solve_pwa(A, b, lo, hi)
    grid = np.stack(np.meshgrid(*[np.linspace(-1.5, 1.5, 401)] * d), -1).reshape(-1, d)
    fg = pwa_objective(A, b, grid)
    assert value == pytest.approx(pwa_objective(A, b, x))
    assert fg.min() >= value - 1e-9  # nothing on the grid beats the LP
    assert value >= fg.min() - 2 * np.abs(A).sum(axis=1).max() * 3.0 / 400  # and the grid comes close
    assert np.all(x >= lo) and np.all(x <= hi)


def test_solve_pwa_with_box_active():
    # f(x) = max(x, -x - 10) on [1, 2]: the minimum is at the box edge x = 1.
    x, value = solve_pwa(np.array([[1.0], [-1.0]]), np.array([0.0, -10.0]), np.array([1.0]), np.array([2.0]))
    assert x == pytest.approx([1.0]) and value == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["perturb-objective", "perturb-solution"])
def test_huge_epsilon_recovers_lp(name):
    A, b = instance(2)
    x_ref, f_ref = solve_pwa(A, b, np.full(2, -1.0), np.full(2, 1.0))
    res = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=1e9, random_state=0)
    assert res.x == pytest.approx(x_ref, abs=1e-6)


def test_exponential_concentrates_at_large_epsilon():
    A, b = instance(3)
    _, f_ref = solve_pwa(A, b, np.full(2, -1.0), np.full(2, 1.0))
    res = pwa_exponential(A, b, bounds=(-1.0, 1.0), epsilon=2e4, offset_bound=1.0, sampler="gibbs", n_steps=200,
                          certified_only=False, random_state=0)
    # E f - f_opt <= d / kappa = 2 d b_max / eps = 2e-4 (log-concave bound); allow 50x.
    assert pwa_objective(A, b, res.x) - f_ref < 1e-2
    assert res.guarantee == "conditional"


def test_subgradient_converges_at_large_epsilon():
    A, b = instance(4)
    _, f_ref = solve_pwa(A, b, np.full(2, -1.0), np.full(2, 1.0))
    res = pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=1e8, offset_bound=1.0, n_iter=2000,
                          step_size="sqrt", random_state=0)
    assert pwa_objective(A, b, res.x) - f_ref < 0.05
    # noise-free selections are the true argmax pieces (the corrected sign of Alg. 1)
    it, idx = res.history["iterates"], res.history["indices"]
    assert np.array_equal(idx, np.argmax(it[:-1] @ A.T + b, axis=1))


def test_subgradient_sign_favours_the_largest_piece():
    """Alg. 1 with '+': at a moderate epsilon the active (largest) piece is chosen more often than any other."""
    A = np.array([[1.0], [-1.0], [0.0]])
    b = np.array([3.0, 0.0, -3.0])  # at x = 0 the scores are 3, 0, -3
    res = pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=400.0, offset_bound=1.0, n_iter=200,
                          step_size=1e-9, random_state=0)
    counts = np.bincount(res.history["indices"], minlength=3)
    # per-step eps' = 2: P(i) proportional to exp(u_i), i.e. 0.95, 0.047, 0.0024
    assert counts[0] > 170 and counts[2] < 10


def test_average_and_last_outputs():
    A, b = instance(5)
    kw = dict(bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, n_iter=10, random_state=3)
    avg, last = pwa_subgradient(A, b, **kw), pwa_subgradient(A, b, output="last", **kw)
    it, alpha = avg.history["iterates"], avg.history["step_sizes"]
    assert avg.x == pytest.approx((alpha[:, None] * it[:-1]).sum(0) / alpha.sum())
    assert last.x == pytest.approx(it[-1])
    assert np.all(np.abs(it) <= 1.0)  # projected onto the box


# ----------------------------------------------------------------------------- calibration
def test_perturb_objective_noise_calibration():
    """Noise on b: scale n_changed * b_max (1 + 2**-10) / eps; variance 2 scale**2 (KS test, alpha = 1e-4).

    Power: on the same 4000 draws the test rejects a scale 25 % too large or 20 % too small (measured p 2e-7 and
    1e-8)."""
    m = 4000
    A = np.ones((m, 1))
    b = np.zeros(m)
    res = pwa_perturb_objective(A, b, bounds=(-1.0, 1.0), epsilon=0.5, offset_bound=0.3, n_changed=3,
                                random_state=0)
    scale = 3 * 0.3 * (1 + 2**-10) / 0.5
    assert res.history["scale"] == pytest.approx(scale)
    assert res.history["l1_sensitivity"] == pytest.approx(0.9)
    w = res.history["b_noisy"] - b
    assert stats.kstest(w, stats.laplace(scale=scale).cdf).pvalue > 1e-4
    for wrong in (1.25, 0.8):
        assert stats.kstest(w, stats.laplace(scale=wrong * scale).cdf).pvalue < 1e-4
    # under the paper's relation (n_changed=None) the L1 sensitivity is m * b_max
    full = pwa_perturb_objective(A[:10], b[:10], bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=0.3, random_state=0)
    assert full.history["l1_sensitivity"] == pytest.approx(3.0)


def test_perturb_solution_noise_calibration():
    """M_S without projection: x_opt + Laplace(||hi - lo||_1 / eps) per coordinate (KS test, alpha = 1e-4).

    Power: the 1600 pooled coordinates reject a scale 50 % too large or a third too small (measured p 4e-14 and
    3e-7)."""
    A, b = instance(6, d=2)
    x_ref, _ = solve_pwa(A, b, np.array([-1.0, -2.0]), np.array([1.0, 2.0]))
    src = check_random_state(0)
    X = np.array([pwa_perturb_solution(A, b, bounds=([-1.0, -2.0], [1.0, 2.0]), epsilon=2.0, project=False,
                                       random_state=src).x for _ in range(800)])
    scale = 6.0 * (1 + 2**-10) / 2.0
    for j in range(2):
        assert stats.kstest(X[:, j] - x_ref[j], stats.laplace(scale=scale).cdf).pvalue > 1e-4
    for wrong in (1.5, 2 / 3):
        assert stats.kstest((X - x_ref).ravel(), stats.laplace(scale=wrong * scale).cdf).pvalue < 1e-4
    proj = pwa_perturb_solution(A, b, bounds=([-1.0, -2.0], [1.0, 2.0]), epsilon=0.01, random_state=1)
    assert np.all(np.abs(proj.x) <= [1.0, 2.0])


def test_piecewise_exponential_matches_quadrature():
    """1-D exact sampler vs the numerically integrated CDF (KS, alpha = 1e-4, n = 1500).

    Power: the same draws reject the law at twice the rate kappa (a forgotten 1/2 in epsilon / (2 b_max)) at
    p < 1e-4."""
    rng = np.random.default_rng(0)
    s, q = rng.standard_normal(6), rng.standard_normal(6)
    kappa, lo, hi = 1.7, -2.0, 1.5
    dens = lambda t: np.exp(-kappa * np.max(s * t + q))  # noqa: E731
    Z = integrate.quad(dens, lo, hi, limit=200)[0]
    cdf = np.vectorize(lambda t: integrate.quad(dens, lo, min(max(t, lo), hi), limit=200)[0] / Z)
    u = rng.random((1500, 2))
    draws = np.array([sample_piecewise_exponential(s, q, kappa, lo, hi, a, c) for a, c in u])
    assert np.all((draws >= lo) & (draws <= hi))
    assert stats.kstest(draws, cdf).pvalue > 1e-4
    dens2 = lambda t: np.exp(-2 * kappa * np.max(s * t + q))  # noqa: E731
    Z2 = integrate.quad(dens2, lo, hi, limit=200)[0]
    cdf2 = np.vectorize(lambda t: integrate.quad(dens2, lo, min(max(t, lo), hi), limit=200)[0] / Z2)
    assert stats.kstest(draws, cdf2).pvalue < 1e-4


@pytest.mark.parametrize("sampler", ["rejection", "gibbs"])
def test_exponential_samplers_exact_in_one_dimension(sampler):
    """d = 1: rejection and one Gibbs sweep are exact draws of pi_D (KS vs quadrature, alpha = 1e-4, n = 600).

    Power: the same draws reject the law at twice the epsilon (a forgotten 1/2 in epsilon / (2 b_max)) at
    p < 1e-3 (measured 3e-4 / 4e-7, rejection / Gibbs): at n = 600 a factor 2 is the smallest error resolved."""
    A, b = np.array([[2.0], [-1.0], [0.5]]), np.array([0.3, -0.2, 0.1])
    eps, bmax = 4.0, 1.0
    kappa = eps / (2 * bmax)
    dens = lambda t: np.exp(-kappa * np.max(A[:, 0] * t + b))  # noqa: E731
    Z = integrate.quad(dens, -1, 1, limit=200)[0]
    cdf = np.vectorize(lambda t: integrate.quad(dens, -1, min(max(t, -1), 1), limit=200)[0] / Z)
    src = check_random_state(1)
    x = np.array([pwa_exponential(A, b, bounds=(-1.0, 1.0), epsilon=eps, offset_bound=bmax, sampler=sampler,
                                  n_steps=1 if sampler == "gibbs" else 10**5, certified_only=False,
                                  random_state=src).x[0] for _ in range(600)])
    assert stats.kstest(x, cdf).pvalue > 1e-4
    dens2 = lambda t: np.exp(-2 * kappa * np.max(A[:, 0] * t + b))  # noqa: E731
    Z2 = integrate.quad(dens2, -1, 1, limit=200)[0]
    cdf2 = np.vectorize(lambda t: integrate.quad(dens2, -1, min(max(t, -1), 1), limit=200)[0] / Z2)
    assert stats.kstest(x, cdf2).pvalue < 1e-3


def test_gibbs_and_rejection_agree_in_two_dimensions():
    """E f under Gibbs (20 sweeps) and exact rejection agree (two-sample z-test, |z| < 4.5, n = 300 each)."""
    A, b = instance(7)
    kw = dict(bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=0.2)
    src = check_random_state(2)
    fg = [pwa_objective(A, b, pwa_exponential(A, b, sampler="gibbs", n_steps=20, certified_only=False,
                                              random_state=src, **kw).x) for _ in range(300)]
    fr = [pwa_objective(A, b, pwa_exponential(A, b, sampler="rejection", certified_only=False,
                                              random_state=src, **kw).x) for _ in range(300)]
    z = (np.mean(fg) - np.mean(fr)) / math.sqrt(np.var(fg) / 300 + np.var(fr) / 300)
    assert abs(z) < 4.5


def test_certified_delta_is_the_public_tv_bound():
    A, b = instance(8)
    eps, bmax = 0.5, 1.0
    kappa = eps / (2 * bmax)
    widths = np.full(2, 2.0)
    res = pwa_exponential(A, b, bounds=(-1.0, 1.0), epsilon=eps, offset_bound=bmax, sampler="gibbs", n_steps=40,
                          random_state=0)
    beta = math.exp(-kappa * np.sum(np.abs(A).max(axis=0) * widths))
    assert res.history["tv_bound"] == pytest.approx((1 - beta) ** 40)
    assert res.delta == pytest.approx((1 + math.exp(eps)) * (1 - beta) ** 40)
    assert res.guarantee == "unconditional"
    assert gibbs_tv_bound(A, widths, kappa, 40) == pytest.approx((1 - beta) ** 40)
    p_min = math.exp(-kappa * np.max(np.abs(A) @ widths))
    assert rejection_tv_bound(A, widths, kappa, 1000) == pytest.approx((1 - p_min) ** 1000)


def test_uncertified_samplers_refused_unless_opted_in():
    A, b = instance(9)
    acc = Accountant(Budget(10.0, 0.5), relation="offsets_linf")
    with pytest.raises(InvalidParameterError, match="certificate"):
        pwa_exponential(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, sampler="metropolis",
                        accountant=acc)
    with pytest.raises(InvalidParameterError, match="certificate"):  # kappa * V huge: Doeblin bound vacuous
        pwa_exponential(A, b, bounds=(-50.0, 50.0), epsilon=5.0, offset_bound=0.1, sampler="gibbs", n_steps=5,
                        accountant=acc)
    assert len(acc) == 0
    res = pwa_exponential(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, sampler="metropolis",
                          n_steps=200, certified_only=False, accountant=acc, random_state=0)
    assert res.guarantee == "conditional" and acc.guarantee == "conditional"
    assert res.history["tv_bound"] is None


# ----------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("name", sorted(MECHS))
def test_events_add_up_to_epsilon_and_are_charged(name):
    A, b = instance(10)
    acc = Accountant(Budget(1.0, 1e-6), relation="offsets_linf")
    res = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=0.7, accountant=acc, random_state=0)
    assert res.epsilon == pytest.approx(0.7)
    assert sum(e.epsilon_delta()[0] for e in res.events) == pytest.approx(0.7)
    # the ledger holds exactly the result's events; the accountant may bound their composition
    # more tightly than basic composition (RDP/PLD for the k exponential selections)
    assert [e.event for e in acc.entries][0].epsilon_delta() == pytest.approx((0.7, res.delta))
    assert acc.spent.epsilon <= 0.7 * (1 + 1e-9)
    assert res.seeded and np.all(np.abs(res.x) <= 1.0)


@pytest.mark.parametrize("name", sorted(MECHS))
def test_over_budget_refused_before_any_access(name, monkeypatch):
    calls = []

    def forbidden(*args, **kwargs):
        calls.append(1)
        raise AssertionError("private data accessed")

    for attr in ("solve_pwa", "sample_gibbs", "sample_rejection", "sample_metropolis"):
        monkeypatch.setattr(pw, attr, forbidden)
    monkeypatch.setattr(pw.Laplace, "randomise", forbidden)
    monkeypatch.setattr(pw.Exponential, "select", forbidden)
    A, b = instance(11)
    acc = Accountant(Budget(1.0, 0.0), relation="offsets_linf")  # pure budget: basic composition only
    acc.spend(LaplaceEvent(epsilon=0.5, relation="offsets_linf"))
    with pytest.raises(BudgetExceededError):
        MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=0.6, accountant=acc, random_state=0)
    assert calls == [] and len(acc) == 1 and acc.spent.epsilon == pytest.approx(0.5)


def test_delta_event_refused_by_pure_budget():
    A, b = instance(12)
    acc = Accountant(Budget(1.0, 0.0), relation="offsets_linf")
    with pytest.raises(BudgetExceededError):
        pwa_exponential(A, b, bounds=(-1.0, 1.0), epsilon=0.5, offset_bound=1.0, sampler="gibbs", n_steps=10,
                        accountant=acc, random_state=0)
    assert len(acc) == 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=float("nan")), "epsilon"),
    (dict(offset_bound=-1.0), "offset_bound"),
    (dict(bounds=(1.0, -1.0)), "lo < hi"),
    (dict(bounds=(-np.inf, 1.0)), "bounds"),
    (dict(bounds=1.0), "bounds"),
    (dict(n_changed=0), "n_changed"),
    (dict(n_changed=21), "n_changed"),
])
def test_invalid_input_refused_before_spending(kwargs, match):
    A, b = instance(13)
    acc = Accountant(Budget(5.0, 0.0), relation="offsets_linf")
    base = dict(bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, accountant=acc, random_state=0)
    with pytest.raises(InvalidParameterError, match=match):
        pwa_perturb_objective(A, b, **{**base, **kwargs})
    assert len(acc) == 0


def test_invalid_data_refused():
    A, b = instance(14)
    acc = Accountant(Budget(5.0, 0.0), relation="offsets_linf")
    with pytest.raises(InvalidParameterError, match="NaN"):  # a value of b: refused only after the charge
        pwa_subgradient(A, np.r_[b[:-1], np.nan], bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0,
                        accountant=acc)
    assert len(acc) == 1
    with pytest.raises(InvalidParameterError, match="one offset per row"):  # b's shape: public, nothing spent
        pwa_subgradient(A, b[:-1], bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, accountant=acc)
    assert len(acc) == 1
    with pytest.raises(InvalidParameterError, match="x0"):
        pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, x0=[2.0, 0.0])
    with pytest.raises(InvalidParameterError, match="output"):
        pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, output="best")
    with pytest.raises(InvalidParameterError, match="accountant"):
        pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, accountant=object())


@pytest.mark.parametrize("name", sorted(MECHS))
def test_seeded_runs_are_reproducible(name):
    A, b = instance(15)
    r1 = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=1.0, random_state=42)
    r2 = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=1.0, random_state=42)
    r3 = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=1.0, random_state=None)
    assert np.array_equal(r1.x, r2.x) and r1.seeded and not r3.seeded
    with pytest.raises(ValueError):
        r1.x[0] = 0.0  # released arrays are read-only


def test_baselines_are_data_independent():
    c = pwa_box_centre(([-1.0, 0.0], [3.0, 1.0]), 2)
    assert c.x == pytest.approx([1.0, 0.5]) and c.events == () and c.epsilon == 0.0
    u = pwa_uniform((-1.0, 1.0), 3, random_state=0)
    assert u.x.shape == (3,) and np.all(np.abs(u.x) <= 1.0) and u.events == ()
    assert EpsilonDeltaEvent  # imported event type used by pwa_exponential


@pytest.mark.parametrize("name", sorted(MECHS))
def test_events_carry_the_offset_relation_and_do_not_mix_with_replace_one(name):
    """Seed 001's relation (every offset may move within its bound) is not replace-one of a record: the events say
    so, and a replace-one accountant refuses them before any access."""
    from privtune.exceptions import UnsupportedEventError

    A, b = instance(15)
    res = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=0.5, accountant=None, random_state=0)
    assert {e.relation for e in res.events} == {"offsets_linf"}
    with pytest.raises(UnsupportedEventError, match="offsets_linf"):
        MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=0.5, accountant=Accountant(Budget(5.0, 1e-3)),
                    random_state=0)
    relabelled = MECHS[name](A, b, bounds=(-1.0, 1.0), epsilon=0.5, accountant=Accountant(Budget(5.0, 1e-3)),
                             random_state=0, relation="replace_one")
    assert {e.relation for e in relabelled.events} == {"replace_one"}


def test_perturb_objective_clips_offsets_to_the_declared_max_abs_offset():
    """With max_abs_offset declared, an offset beyond it (1e300) made the exact sampler refuse after the charge:
    a refusal that depended on the private offset. It is now clipped to the declared bound, and the release is
    the one of the clipped offsets (same seed)."""
    A_ = np.array([[1.0], [-1.0]])
    acc = Accountant(Budget(10.0, 0.0), relation="offsets_linf")
    kw = dict(bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, max_abs_offset=10.0, random_state=0)
    far = pwa_perturb_objective(A_, np.array([1e300, 0.0]), accountant=acc, **kw)
    clipped = pwa_perturb_objective(A_, np.array([10.0, 0.0]), **kw)
    assert far.x == pytest.approx(clipped.x) and acc.spent == Budget(1.0, 0.0)
    np.testing.assert_array_equal(far.history["b_noisy"], clipped.history["b_noisy"])


def test_the_rejection_samplers_reference_never_exceeds_the_minimum(monkeypatch):
    """Exactness needs f - f_ref >= 0 on the box (else acceptance is clipped at 1). f at the LP's solution was used,
    which is above min f whenever HiGHS stops short of the optimum. Here linprog returns a feasible but suboptimal
    point without duals: the reference must still be at most min f (the closed-form bound), and within W of max f.
    With the real solver the dual bound is tight."""
    import privtune.optim.piecewise._core as core
    import privtune.optim.piecewise._mechanisms as pw
    from privtune.optim.piecewise._core import pwa_reference_value

    A = np.array([[1.0], [-1.0], [0.5]])
    b = np.array([0.0, 0.0, -0.25])
    lo, hi = np.array([-1.0]), np.array([1.0])  # f(x) = max(|x|, x/2 - 1/4): min 0 at x = 0, max 1
    ref = pwa_reference_value(A, b, lo, hi)
    assert -1e-9 <= ref <= 0.0  # certified (never above min f = 0) and tight: the optimal duals
    W = float(np.max(np.abs(A) @ (hi - lo)))
    seen = []
    real = pw.sample_rejection
    monkeypatch.setattr(pw, "sample_rejection", lambda *a: (seen.append(a[5]), real(*a))[1])

    class _Short:  # a feasible point short of the optimum, and no duals
        status, message = 0, "optimal (within tolerance)"
        x = np.array([0.3, 0.3])
        ineqlin = None

    monkeypatch.setattr(core, "linprog", lambda *a, **k: _Short())
    pw.pwa_exponential(A, b, bounds=(lo, hi), epsilon=1.0, offset_bound=1.0, sampler="rejection", n_steps=50,
                       certified_only=False, random_state=0)
    assert seen and seen[0] <= 0.0 and seen[0] >= 1.0 - W
