"""DP audit of whole runs of DP-BLSGD (seed 003, Chen & Lee: DP SGD with a noisy backtracking line search).

Setting. :func:`privtune.optim.line_search.dp_blsgd` on a ``MarginObjective`` (smoothed hinge, h = 1/2,
``data_norm = 1``: rows clipped to norm 1, so gradients are clipped at the declared bound ``C_grad = 1`` and
the trust region is on) with n = 10 rows in d = 1, claimed ``(epsilon, delta) = (2, 1e-2)``, ``eta0 = 0.05``,
``backtrack = 0.95`` (close candidates, so that the random step sizes blur ``w`` little), the other parameters
at their defaults (``max_backtracks = 10``, ``C_obj = 1``, ``armijo = 0.5``, ``l2 = 1e-3``, ...). One run is
every private access of the trainer -- the noisy gradients, every NOISYBTLS call (AboveThreshold on the
Armijo slacks) and, in the adaptive mode, CHEB's extra gradients and budget raises under the filter -- and the
audited output is the released coefficient ``w_T`` (a float).

Two configurations, both at **sampling rate 1**: no amplification by subsampling is claimed, so the claim is
the plain composition of the run's mechanisms under its filter or schedule, close enough to the truth for a
factor-2 twin to be resolved (the amplification bounds of ``q < 1`` are not audited here).

* ``ADAPTIVE``: ``mode="adaptive"`` (Alg. 2-3, the default mode) with ``sampling="full"`` (DP-BLGD, as the
  linear models run it): a zCDP filter of cap ``rho_cap = 0.305`` (the largest rho converting to (2, 1e-2)),
  initial budgets ``rho_grad = e**2 / 2 = 0.031`` and ``eps_BT = e = 0.25`` with ``expected_iter = 5``
  iterations filling the cap; a failed search draws CHEB's second gradient, raises a budget (in d = 1 the
  angle test does unless a gradient is exactly 0) and averages. Measured on 2 000 real runs: 89 % run five
  iterations, 11 % call CHEB (5.9 % raise ``rho_grad``, 4.8 % ``eps_BT``; 4.8 % then run a later iteration at
  the raised budget), 2.9 % of the searches fail and half stop at the first candidate.
* ``FIXED``: ``mode="fixed"``, ``n_iter = 3`` (the paper's NN mode, as the MLP runs it) with the default
  ``sampling="without_replacement"`` at ``batch_fraction = 1`` (each call's batch is the whole data set; its
  ``SampledWithoutReplacementEvent`` at ``m = n`` amplifies nothing): per iteration ``rho_grad = 0.092`` and
  ``eps_BT = 0.14`` (10 % of the iteration's budget); a failed search (2.8 %) steps by ``0.95**10 eta0``.

Neighbouring relation and pair. Both samplings are analysed under **replace-one** (``n`` public; the Poisson
scheme, analysed under add/remove, is not audited here). D has rows ``u = 0`` except ``u_0 = +1``; D' replaces
it by ``u_0 = -1`` (labels all +1). While ``|w| <= 1/2`` both row-0 margins ``+-w`` are at most ``1 - h``, where
the smoothed hinge has slope exactly -1, so row 0's clipped gradients are -1 and +1 and the batch means differ
by exactly the declared L2 sensitivity ``2 C_grad / n = 0.2`` at **every** gradient call (``|w| > 1/2`` needs a
~6-sigma noise sum: the largest ``|w_t|`` in 2 000 real adaptive runs is 0.32). The line-search query (sensitivity
``2 C_obj / n``) is *not* attained: on this pair the slacks differ by ``2 eta |g~| / n``, a few % of it, and no
margin-loss pair attains both (the slack needs row 0's clipped loss to cross all of ``[0, C_obj]`` in one step,
where the slope of one of the two rows vanishes). The searches are exercised all the same (random steps,
failures, CHEB), and their claim is part of the audited budget.

* **H0** ("passes"): a run is (2, 1e-2)-DP on this pair. ``audit_mechanism`` (quantile threshold sets chosen
  on a selection split, Clopper-Pearson bounds) refutes a true claim with probability at most ALPHA = 1e-5.
* **Negative control** (must be flagged at the same sample size, 300 000 runs per input): the twin uses the
  add/remove sensitivity ``C / n`` under replace-one for every mechanism (gradients and searches): one factor 2
  dropped in ``Scheme.sensitivity``, every noise scale halved.

Power. The twin's planned gradients alone (five adaptive, three fixed) are ``2 mu``-GDP with ``mu`` = 0.55
(adaptive) and 0.74 (fixed): exact epsilon at 1e-2 of 2.65 and 3.96 against the claimed 2. The adaptive claim
spends half of ``rho_cap`` on searches that leak little on this pair, hence its small margin (at delta = 1e-3
the adaptive twin's bound is 1.71: not resolvable at this size; hence delta = 1e-2). For reference, the same
audit of pure Gaussian pairs ``N(0, 1)`` vs ``N(2 mu, 1)`` gives 2.33-2.36 and 3.37: the random step sizes and
CHEB cost the audit little.

Measured lower bounds (300 000 samples per input, confidence 1 - 1e-5; seeds 1/2 adaptive, 11/12 fixed,
auditor random_state 0):

* adaptive: 0.86 for the real run, 2.28 for the twin (flagged); 0.85-0.90 and 2.20-2.29 over four seed sets;
* fixed: 1.40 for the real run, 3.29 for the twin (flagged); 1.34-1.40 and 3.27-3.40 over four seed sets.

Sampling. 600 000 runs of the real loop would take about 25 minutes, so :class:`BatchedRun` re-implements the
trainer vectorised over runs with the **trainer's own plan** (``_make_plan``: filter, cap, budgets, fixed
schedule), its mechanisms' grids (``Gaussian.from_noise_multiplier``, ``SparseVector``), the library's exact
discrete Gaussian and Laplace samplers and the filter's own costs. The ``test_batched_*`` tests check it
against ``dp_blsgd`` by a two-sample Kolmogorov-Smirnov test on ``w_T`` (H0: same law; alpha = 1e-4): 2 000
real runs against 20 000 batched ones, and 1 000 real runs of the twin (its bug patched into the real code)
against its batched form; the adaptive test also compares the laws of (iterations, CHEB calls) by a
chi-square test. Power (measured, four seeds): the twin is rejected at p ~ 1e-49 (both modes), a 20 % error
in every noise scale at p <= 1e-5, a 10 % one only at p ~ 0.002-0.03 (not resolved).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privtune.accounting import compose_events
from privtune.mechanisms import Gaussian, SparseVector
from privtune.mechanisms._samplers import discrete_gaussian, discrete_laplace, grid_to_float, round_to_grid
from privtune.optim.line_search import MarginObjective, dp_blsgd
from privtune.optim.line_search import _accounting as acc
from privtune.optim.line_search import _loop as loop
from privtune.optim.line_search._objective import _clipped_gradient_mean
from privtune.testing import audit_mechanism
from privtune.utils._random import check_random_state

pytestmark = pytest.mark.statistical

ALPHA = 1e-5  # the audits
KS_ALPHA = 1e-4  # the checks of the batched sampler
N_AUDIT = 300_000
N_REAL = 2_000
N_BATCHED = 20_000
EPSILON, DELTA = 2.0, 1e-2
N_ROWS = 10
DATA_NORM = 1.0  # the declared row norm: the objective's gradient bound, hence C_grad = 1 and the trust region
U_D = np.zeros((N_ROWS, 1))
U_D[0, 0] = 1.0
U_DP = U_D.copy()
U_DP[0, 0] = -1.0
Z = np.ones(N_ROWS)

COMMON = dict(epsilon=EPSILON, delta=DELTA, eta0=0.05, backtrack=0.95)
ADAPTIVE = dict(COMMON, mode="adaptive", sampling="full", expected_iter=5)
FIXED = dict(COMMON, mode="fixed", n_iter=3, sampling="without_replacement", batch_fraction=1.0)


def objective(U: np.ndarray) -> MarginObjective:
    return MarginObjective(U, Z, "smoothed_hinge", smoothing=0.5, data_norm=DATA_NORM)


def real_runs(U: np.ndarray, params: dict, n: int, seed: int) -> list:
    source = check_random_state(seed)
    return [dp_blsgd(objective(U), random_state=source, **params) for _ in range(n)]


def understated_sensitivity(scheme: acc.Scheme, clip: float) -> float:
    """The twin's bug: the add/remove sensitivity ``clip / divisor`` used under replace-one."""
    return clip / scheme.divisor


# ----------------------------------------------------------------------------- the batched trainer
class BatchedRun:
    """``k`` independent runs of ``dp_blsgd(objective(U), **params)`` vectorised over runs; returns ``w_T``.

    Mirrors ``_Runner`` (privtune/optim/line_search/_loop.py) for this objective: full batches (rate 1), the
    Laplace line search, budget strategy "adaptive", no adaptive clipping, and at most 5 iterations (so the
    intelligent-backtracking reset every 10 iterations never fires). Rows 1..9 are zero rows: margin 0 at
    every ``w``, gradient 0 and a constant loss, so only row 0 is evaluated per run.
    """

    def __init__(self, params: dict, seed: int, *, broken: bool = False) -> None:
        p = self.plan = loop._make_plan(N_ROWS, dict(params), "audit")
        assert p.scheme.m == N_ROWS and p.noise == "laplace" and p.strategy == "adaptive" and not p.ac
        # an adaptive iteration pays at least rho0 + eps_BT**2 / 2 = rho_cap / expected_iter: at most
        # expected_iter iterations, as in fixed mode at most n_iter; the reset every 10 never fires
        assert p.reset_every is None or (p.n_iter if p.mode == "fixed" else p.expected_iter) < p.reset_every
        p.c_grad = min(p.c_grad, DATA_NORM)  # as dp_blsgd: the declared gradient bound is a tighter clip
        self.eta0 = p.eta0
        self.broken = broken
        self.source = check_random_state(seed)
        obj = objective(U_D)
        self.loss = obj.loss
        self.lipschitz = obj.gradient_bound  # the trust region
        self.rest = float(np.clip(self.loss.value(np.zeros(N_ROWS - 1)), 0.0, p.c_obj).sum())
        self.powers = np.array([p.backtrack**i for i in range(p.max_backtracks)])
        if p.mode == "adaptive":
            ap = p.adaptive
            self.filter = acc.ZcdpFilter(ap.cap) if ap.filter_kind == "zcdp" else acc.RenyiFilter(ap.order, ap.cap)

    def sensitivity(self, clip: float) -> float:
        s = self.plan.scheme
        return understated_sensitivity(s, clip) if self.broken else s.sensitivity(clip)

    # -- data accesses (the clipped batch means of _line_search_objective), vectorised over runs
    def gradient_mean(self, u0: float, w: np.ndarray) -> np.ndarray:
        g = self.loss.derivative(u0 * w) * u0
        norm = np.abs(g)
        g = g * np.minimum(1.0, self.plan.c_grad / np.where(norm > 0.0, norm, 1.0))
        return g / self.plan.scheme.divisor

    def loss_mean(self, u0: float, v: np.ndarray) -> np.ndarray:
        row0 = np.clip(self.loss.value(u0 * v), 0.0, self.plan.c_obj)
        return (row0 + self.rest) / self.plan.scheme.divisor

    # -- the mechanisms
    def gradient(self, u0: float, w: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """``_Runner.gradient``: exact discrete Gaussian on the mechanism's grid, then ``+ l2 w``."""
        out = np.empty(w.shape)
        mean = self.gradient_mean(u0, w)
        for r in np.unique(rho):
            sel = rho == r
            mech = Gaussian.from_noise_multiplier(acc.noise_multiplier(float(r)),
                                                  sensitivity=self.sensitivity(self.plan.c_grad))
            k, spacing = mech._grid(1)
            base = round_to_grid(mean[sel], spacing, "value", "audit")
            out[sel] = grid_to_float(base, discrete_gaussian(4**k, 1, int(sel.sum()), self.source), spacing)
        return out + self.plan.l2 * w

    def search(self, u0: float, w: np.ndarray, g: np.ndarray, budget: np.ndarray, on_failure: str) -> np.ndarray:
        """``_Runner.search``: trust-region first candidate, Armijo slacks, AboveThreshold on the exact grid."""
        p = self.plan
        n_cand = p.max_backtracks
        norm = np.abs(g)
        first = np.where(norm == 0.0, self.eta0,
                         np.minimum(self.eta0, p.c_obj / (self.lipschitz * np.where(norm == 0.0, 1.0, norm))))
        etas = first[:, None] * self.powers[None, :]
        f0 = self.loss_mean(u0, w) + 0.5 * p.l2 * (w * w)
        out = np.zeros(w.shape) if on_failure == "zero" else first * p.backtrack**n_cand
        for b in np.unique(budget):
            sel = np.flatnonzero(budget == b)
            svt = SparseVector(epsilon=float(b), sensitivity=self.sensitivity(p.c_obj), threshold=0.0)
            k, spacing, limit = svt._k, svt.grid_spacing, math.ldexp(svt.grid_spacing, 48)
            threshold = svt._threshold_index + discrete_laplace(2**k, 1, sel.size, self.source)  # once per call
            index = np.full(sel.size, n_cand)
            for i in range(n_cand):  # lazily, as the real search: only the runs still below draw fresh noise
                on = np.flatnonzero(index == n_cand)
                if not on.size:
                    break
                r = sel[on]
                eta = etas[r, i]
                v = w[r] - eta * g[r]
                q = f0[r] - p.armijo * eta * (g[r] * g[r]) - (self.loss_mean(u0, v) + 0.5 * p.l2 * (v * v))
                q = np.where(np.isfinite(q), np.clip(q, -limit, limit), -limit)
                nu = discrete_laplace(2 ** (k + 1), 1, on.size, self.source)
                above = round_to_grid(q, spacing, "value", "audit") + nu >= threshold[on]
                index[on[above]] = i
            ok = index < n_cand
            out[sel[ok]] = etas[sel[ok], index[ok]]
        return out

    # -- the loops
    def __call__(self, U: np.ndarray, k: int) -> np.ndarray:
        return self.run(U, k)[0]

    def run(self, U: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(w_T, n_iter, n_cheb)`` of ``k`` runs on the data set ``U``."""
        u0 = float(U[0, 0])
        assert not U[1:].any()
        if self.plan.mode == "fixed":
            return self._run_fixed(u0, k)
        return self._run_adaptive(u0, k)

    def _run_fixed(self, u0: float, k: int):
        p, fp = self.plan, self.plan.fixed
        w = np.zeros(k)
        for _ in range(p.n_iter):
            g = self.gradient(u0, w, np.full(k, fp.rho_grad))
            w = w - self.search(u0, w, g, np.full(k, fp.search_budget), "smallest") * g
        return w, np.full(k, p.n_iter), np.zeros(k, dtype=int)

    def _run_adaptive(self, u0: float, k: int):
        """``_Runner._run_adaptive`` as a state machine (0: next iteration, 1: line search, 2: stopped).

        The filter's state of a run is the list of the costs it has paid (``ZcdpFilter.fits`` sums it with
        ``math.fsum``): runs share a few such histories, numbered in ``self.histories``.
        """
        p, s, flt = self.plan, self.plan.scheme, self.filter
        histories: list[tuple[float, ...]] = [()]
        numbers: dict[tuple[float, ...], int] = {(): 0}
        fits_memo: dict = {}
        w, g, g_prev = np.zeros(k), np.zeros(k), np.zeros(k)
        has_prev = np.zeros(k, dtype=bool)
        rho, budget, theta_bar = np.full(k, p.rho0), np.full(k, p.search0), np.full(k, 90.0)
        hist = np.zeros(k, dtype=np.int64)
        state = np.zeros(k, dtype=np.int64)
        n_iter, n_cheb = np.zeros(k, dtype=int), np.zeros(k, dtype=int)

        def cost_g(r: float) -> float:
            return flt.cost(acc.gradient_event(s, float(r)))

        def cost_s(b: float) -> float:
            return flt.cost(acc.search_event(s, p.noise, float(b), p.n_outputs))

        def groups(sel: np.ndarray, *columns: np.ndarray):
            """The runs of ``sel`` grouped by (history, column values): (a representative, its members)."""
            key = hist[sel]
            for c in columns:
                key = key * 4096 + np.unique(c[sel], return_inverse=True)[1].reshape(-1)
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            inverse = inverse.reshape(-1)
            return [(sel[f], sel[inverse == j]) for j, f in enumerate(first)]

        def fits(sel: np.ndarray, gradient: bool, search: bool) -> np.ndarray:
            ok = np.zeros(k, dtype=bool)
            for i, members in groups(sel, rho, budget):
                costs = (cost_g(rho[i]),) * gradient + (cost_s(budget[i]),) * search
                key = (int(hist[i]), costs)
                if key not in fits_memo:
                    fits_memo[key] = math.fsum([*histories[hist[i]], *costs]) <= flt.cap
                ok[members] = fits_memo[key]
            return ok[sel]

        def pay(sel: np.ndarray, gradient: bool) -> None:
            values = rho if gradient else budget
            for i, members in groups(sel, values):
                paid = histories[hist[i]] + ((cost_g if gradient else cost_s)(values[i]),)
                if paid not in numbers:
                    numbers[paid] = len(histories)
                    histories.append(paid)
                hist[members] = numbers[paid]

        def angle(u: np.ndarray, v: np.ndarray) -> np.ndarray:  # _angle in d = 1
            zero = (u == 0.0) | (v == 0.0)
            cos = np.clip(u * v / np.where(zero, 1.0, np.abs(u) * np.abs(v)), -1.0, 1.0)
            return np.where(zero, 90.0, np.degrees(np.arccos(cos)))

        for _ in range(100):
            start = np.flatnonzero(state == 0)
            if start.size:  # a new iteration: its gradient and one search must fit
                ok = fits(start, True, True)
                state[start[~ok]] = 2
                go = start[ok]
                pay(go, True)
                g[go] = self.gradient(u0, w[go], rho[go])
                n_iter[go] += 1
                state[go] = 1
                continue
            now = np.flatnonzero(state == 1)
            if not now.size:
                break
            ok = fits(now, False, True)
            state[now[~ok]] = 2
            go = now[ok]
            pay(go, False)
            eta = self.search(u0, w[go], g[go], budget[go], "zero")
            done, e = go[eta > 0.0], eta[eta > 0.0]
            w[done] = w[done] - e * g[done]
            upd = done[has_prev[done]]
            theta_bar[upd] = p.psi * theta_bar[upd] + (1.0 - p.psi) * angle(g[upd], g_prev[upd])
            g_prev[done], has_prev[done] = g[done], True
            state[done] = 0
            failed = go[eta == 0.0]  # CHEB: its gradient (at the old rho) and the next search must fit
            ok = fits(failed, True, True)
            state[failed[~ok]] = 2
            cheb = failed[ok]
            pay(cheb, True)
            n_cheb[cheb] += 1
            g2 = self.gradient(u0, w[cheb], rho[cheb])
            g1 = g[cheb]
            theta = angle(g1, g2)
            raise_grad = (g1 * g2 < 0.0) | (theta > p.phi_max * theta_bar[cheb])
            raise_search = ~raise_grad & (theta < p.phi_min * theta_bar[cheb])
            rho[cheb[raise_grad]] = rho[cheb[raise_grad]] * (1.0 + p.xi)
            budget[cheb[raise_search]] = budget[cheb[raise_search]] * (1.0 + p.xi)
            g[cheb] = 0.5 * (g1 + g2)
        else:  # pragma: no cover
            raise AssertionError("the batched run did not stop")
        return w, n_iter, n_cheb


def sampler(U: np.ndarray, params: dict, seed: int, *, broken: bool = False):
    run = BatchedRun(params, seed, broken=broken)
    return lambda k: run(U, k)


# ----------------------------------------------------------------------------- the setting

def twin_pvalues(monkeypatch, mode, w_real, seed_real, seed_fast):
    """KS p-values of the twin: the real code with the bug patched in against its batched form (fidelity), and
    the batched twin against the real law ``w_real`` (power)."""
    with monkeypatch.context() as m:
        m.setattr(acc.Scheme, "sensitivity", understated_sensitivity)
        w_real_twin = np.array([r.x[0] for r in real_runs(U_D, mode, N_REAL // 2, seed_real)])
    w_fast_twin = sampler(U_D, mode, seed_fast, broken=True)(N_BATCHED)
    return stats.ks_2samp(w_real_twin, w_fast_twin).pvalue, stats.ks_2samp(w_real, w_fast_twin).pvalue

def test_pair_attains_the_gradient_sensitivity_and_the_runs_claim_the_budget():
    """The setting of the audits (deterministic): the plans charge exactly (2, 1e-2) under replace-one, and the
    pair's clipped batch-mean gradients differ by the declared sensitivity 2 C_grad / n for |w| <= 1/2."""
    for params in (ADAPTIVE, FIXED):
        plan = loop._make_plan(N_ROWS, dict(params), "audit")
        total = compose_events([plan.charged], delta=DELTA, relation=plan.scheme.relation)
        assert EPSILON * (1 - 1e-6) < total.epsilon <= EPSILON
        assert plan.scheme.relation == "replace_one" and plan.scheme.m == N_ROWS
        sens = plan.scheme.sensitivity(DATA_NORM)
        assert sens == pytest.approx(2 * DATA_NORM / N_ROWS)
        idx = np.arange(N_ROWS)
        for w in (-0.5, 0.0, 0.3, 0.5):
            diff = [_clipped_gradient_mean(objective(U), np.array([w]), idx, DATA_NORM, N_ROWS, 1)[0]
                    for U in (U_D, U_DP)]
            assert abs(diff[0] - diff[1]) == pytest.approx(sens, rel=1e-12)
    res = dp_blsgd(objective(U_D), random_state=0, **ADAPTIVE)
    assert res.filter_kind == "zcdp" and res.extra["clip_grad"] == DATA_NORM and res.extra["trust_region"] == 1.0


# ----------------------------------------------------------------------------- adaptive mode (DP-BLGD)
@pytest.mark.slow
def test_batched_adaptive_run_matches_dp_blsgd(monkeypatch):
    """H0: :class:`BatchedRun` (adaptive) has the law of ``dp_blsgd``; KS on ``w_T`` and chi-square on the course
    (iterations, CHEB calls), alpha = 1e-4 each; the same KS for the twin against the real code with
    ``Scheme.sensitivity`` patched. Power: the twin is rejected against the real law (measured p ~ 5e-49).
    Measured p-values with these seeds: 0.18 (w), 0.15 (course), 0.10 (twin)."""
    real = real_runs(U_D, ADAPTIVE, N_REAL, 3)
    w_real = np.array([r.x[0] for r in real])
    w_fast, it_fast, cheb_fast = BatchedRun(ADAPTIVE, 4).run(U_D, N_BATCHED)
    p_w = stats.ks_2samp(w_real, w_fast).pvalue
    # the discrete course of the runs (iterations, CHEB calls): chi-square, the cells expected < 5 times among
    # the real runs pooled (with the smallest other cell if the pool is still that small)
    code_real = np.array([10 * r.n_iter + r.n_cheb for r in real])
    code_fast = 10 * it_fast + cheb_fast
    cells = np.union1d(code_real, code_fast)
    table = np.array([[np.sum(c == x) for x in cells] for c in (code_real, code_fast)])
    small = 5 * (N_REAL + N_BATCHED) / N_REAL
    order = np.argsort(table.sum(axis=0))
    n_pool = int(np.sum(np.cumsum(table.sum(axis=0)[order]) < small)) + 1
    table = np.column_stack([table[:, order[:n_pool]].sum(axis=1), table[:, order[n_pool:]]])
    p_course = stats.chi2_contingency(table)[1]
    p_twin, p_power = twin_pvalues(monkeypatch, ADAPTIVE, w_real, 5, 6)
    print(f"\nadaptive: KS p {p_w:.3g}, course chi2 p {p_course:.3g}, twin KS p {p_twin:.3g}, power p {p_power:.3g}")
    assert min(p_w, p_course, p_twin) > KS_ALPHA
    assert p_power < KS_ALPHA


def test_adaptive_run_passes_audit():
    """H0: the adaptive run is (2, 1e-2)-DP on the pair (ALPHA = 1e-5). Measured lower bound 0.86 (seeds 1, 2)."""
    res = audit_mechanism(sampler(U_D, ADAPTIVE, 1), sampler(U_DP, ADAPTIVE, 2), epsilon=EPSILON, delta=DELTA,
                          n_samples=N_AUDIT, confidence=1 - ALPHA, random_state=0)
    print("\n", res)
    assert not res.violation, str(res)


def test_adaptive_twin_with_understated_sensitivity_is_flagged():
    """The twin (every noise scale halved) at the same size: measured lower bound 2.28 (seeds 1, 2), 2.20-2.29
    over four seed sets, against the claimed 2; the idealised 2.65 is out of reach at this size."""
    res = audit_mechanism(sampler(U_D, ADAPTIVE, 1, broken=True), sampler(U_DP, ADAPTIVE, 2, broken=True),
                          epsilon=EPSILON, delta=DELTA, n_samples=N_AUDIT, confidence=1 - ALPHA, random_state=0)
    print("\n", res)
    assert res.violation and res.epsilon_lower_bound > 1.05 * EPSILON, str(res)


# ----------------------------------------------------------------------------- fixed mode (NN mode)
@pytest.mark.slow
def test_batched_fixed_run_matches_dp_blsgd(monkeypatch):
    """H0: :class:`BatchedRun` (fixed) has the law of ``dp_blsgd``, and its twin that of the patched real code
    (KS, alpha = 1e-4). Power: the twin against the real law, measured p ~ 7e-50. Measured: p = 0.89, 0.18."""
    w_real = np.array([r.x[0] for r in real_runs(U_D, FIXED, N_REAL, 13)])
    w_fast = sampler(U_D, FIXED, 14)(N_BATCHED)
    p_w = stats.ks_2samp(w_real, w_fast).pvalue
    p_twin, p_power = twin_pvalues(monkeypatch, FIXED, w_real, 15, 16)
    print(f"\nfixed: KS p {p_w:.3g}, twin KS p {p_twin:.3g}, power p {p_power:.3g}")
    assert min(p_w, p_twin) > KS_ALPHA
    assert p_power < KS_ALPHA


def test_fixed_run_passes_audit():
    """H0: the fixed-schedule run is (2, 1e-2)-DP on the pair (ALPHA = 1e-5). Measured lower bound 1.40 (seeds
    11, 12)."""
    res = audit_mechanism(sampler(U_D, FIXED, 11), sampler(U_DP, FIXED, 12), epsilon=EPSILON, delta=DELTA,
                          n_samples=N_AUDIT, confidence=1 - ALPHA, random_state=0)
    print("\n", res)
    assert not res.violation, str(res)


def test_fixed_twin_with_understated_sensitivity_is_flagged():
    """The twin at the same size: measured lower bound 3.29 (seeds 11, 12), 3.27-3.40 over four seed sets."""
    res = audit_mechanism(sampler(U_D, FIXED, 11, broken=True), sampler(U_DP, FIXED, 12, broken=True),
                          epsilon=EPSILON, delta=DELTA, n_samples=N_AUDIT, confidence=1 - ALPHA, random_state=0)
    print("\n", res)
    assert res.violation and res.epsilon_lower_bound > 1.4 * EPSILON, str(res)
