"""DP audit of whole runs of the accelerated solvers that the trainer audits do not cover: ``nag-opt``, ``masg``,
``masg-opt`` and ``hb`` of :func:`privtune.optim.accelerated.dp_accelerated` (Kuru et al. 2022), with Laplace
noise (pure epsilon, the paper's method) and with the Gaussian variant (privtune's zCDP extension).

What differs from ``gd`` / ``nag`` (audited in ``test_trainer_audit.py`` and ``test_trainer_default_audit.py``):
the step schedules (MASG: a stage-1 step of ``1 / L``, then a restart of the momentum and steps of
``1 / (16 L)`` with a larger momentum; HB: the heavy-ball update) and, for ``*-opt``, the per-step budget split
(``opt_split``: ``eps_t`` proportional to ``a_{T,t}**(1/3)``; ``opt_split_gaussian``: precision shares
proportional to ``a_{T,t}**(1/2)``) and the paper's horizon ``T*`` (the function's default for ``*-opt``).

Setting. ``n = 10`` rows in ``d = 1``, declared bound ``data_norm = 1``, logistic loss with slope clipping
``max_slope = kappa = 0.01`` (knee ``ln 99 = 4.6``), ``alpha = mu = 1`` (condition number ``L / mu = 1.25``, so
MASG's first stage is one step and the restart comes at step 2), ``n_iter = 4``, function defaults otherwise
(``horizon``: the paper's ``T*`` for ``*-opt``, ``n_iter`` for the others; ``output="last"``). Every plan runs
``T = 4`` steps. Shares of the budget (Laplace / Gaussian precision): ``nag-opt`` 0.06, 0.12, 0.26, 0.56 /
0.02, 0.07, 0.22, 0.68 (the last step gets most); ``masg-opt`` 0.52, 0.15, 0.16, 0.17 / 0.67, 0.10, 0.11, 0.13
(the stage-1 step gets most: the factor ``2**(s_T - s_t)`` of ``a_{T,t}``); ``masg`` and ``hb`` uniform.

Pair. ``D`` has row 0 ``u = +1`` (label +1), ``D'`` replaces it by ``u = -1``; the other rows are zero. While
the query point stays inside the knee (``|q_t| < 4.6``; the samplers assert it for every run, and
``test_pair_attains_the_sensitivity_at_every_step`` finds ``|q_t| < 0.46`` over 10 000 runs of each plan)
the clipped derivative is exactly ``-kappa`` for both rows, so step ``t`` releases
``y_t = -+h + noise_t`` (``h = kappa / n``) plus the public ``mu q_t``: the two means differ by exactly the
declared sensitivity ``2 h`` (L1 = L2 in one dimension) at **every** step, whatever the schedule. The run is
then a composition of the plan's ``T`` mechanisms on a shift of ``2 h``, and the audited statistic is its
privacy-loss (likelihood-ratio) statistic, computed from the released ``y_t = g~_t - mu q_t`` and the run's
public noise scales: ``sum_t y_t / sigma_t**2`` (Gaussian) and ``sum_t clip(y_t, -h, h) / b_t`` (Laplace).
This weighting is what makes the audit see the **split**: the statistic weighs each step by its own share,
so the audit resolves the sum of the per-step losses, i.e. the composed budget the split actually gives.
On this pair that statistic does not depend on the schedule (the means do not move with ``q_t``): for the
uniform split it is the same for ``masg``, ``hb``, ``nag`` and ``gd`` draw for draw
(``test_hb_has_the_privacy_loss_of_masg_on_this_pair``), so the ``masg`` audits cover ``hb``; the schedules
themselves are pinned by the exact replay. For the ``*-opt`` solvers the released coefficient ``x`` (the last
iterate, through momentum, restart and step sizes) is audited as well: there it nearly attains the loss
statistic (the opt split favours the steps that weigh most in ``x``), while for the uniform split it does not
(``masg`` Gaussian: 0.83 real / 1.97 half-sigma twin, not resolvable; not audited on ``x``).

* Laplace, claim ``epsilon = 1``: the statistic reaches its maximum ``sum_t 2 h / b_t = 1 / (1 + 2**-10)``
  (every ``y_t`` on the far side of both means) with probability about ``2**-4`` on ``D``, ``e**-1`` times that
  on ``D'``: the claim is attained on a set the audit resolves. 300 000 runs per input.
* Gaussian, claim ``(epsilon, delta) = (2, 1e-3)``: the run is exactly one Gaussian of multiplier ``nm``
  (RDP-calibrated, true epsilon 1.76 at ``delta = 1e-3``). 500 000 runs per input.

Twins (each must be flagged at the same size; each one's **charged** events compose to the claim, the real
noise does not):

* ``drop-last`` (``nag-opt``): the split is normalised over the first ``T - 1`` steps (an off-by-one that drops
  the last, largest, share from the normaliser): every step's budget is ``1 / (1 - w_T)`` times too large
  (Laplace total 2.25; Gaussian precision x 3.15, true epsilon 3.54 at ``delta = 1e-3``).
* ``drop-stage1`` (``masg-opt``): the split is normalised over the last stage only, dropping the stage-1
  step's share (Laplace total 2.10; Gaussian precision x 3.0, true epsilon 3.44).
* ``half`` (``masg`` Gaussian): every noise scale halved (precision x 4, true epsilon 4.11). (A uniform
  split over ``T - 1`` steps would give precision x 4/3, true epsilon 2.09 at ``delta = 1e-3``: 5 % over the
  claim, far below what this sample size resolves -- the real run's bound is 1.41 against its true 1.76.)
* ``drop-one`` (``masg``, Laplace): the uniform split over ``T - 1`` steps while ``T`` run (total 4/3).

A twin that uses the **uniform** split's noise with the ``*-opt`` schedule is **not** a privacy defect (the
uniform shares compose to the same budget) and is therefore not among them.

Sampling. :func:`solver_batched` re-implements ``A._execute`` vectorised over runs, with the **plan's own**
schedule (step sizes, momentums, restarts), mechanisms, grids and exact samplers;
``test_batched_replays_the_real_loop_exactly`` checks it bit for bit against the real loop (iterates, query
points, released gradients; real plans and twins, both inputs) and against the public ``dp_accelerated``.
Measured lower bounds with these seeds (real / twin, against the claim; table ``MEASURED``): loss statistic,
Gaussian ``(2, 1e-3)``: ``nag-opt`` 1.44 / 2.79, ``masg`` 1.41 / 3.21, ``masg-opt`` 1.49 / 2.98; Laplace ``1``:
``nag-opt`` 0.90 / 2.06, ``masg`` 0.88 / 1.19, ``masg-opt`` 0.88 / 1.93. Output ``x``: Gaussian ``nag-opt``
1.33 / 2.76, ``masg-opt`` 1.51 / 2.84; Laplace ``nag-opt`` 0.61 / 1.42, ``masg-opt`` 0.59 / 1.32. (For the
Gaussian audits the ceiling is the run's true epsilon, 1.76 at ``delta = 1e-3``, not the claim 2.) The file
runs in about 28 s of CPU (32-48 s wall measured on a shared 2-core machine, serial or ``-n 2``).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from accelerated_replay import step_integer_noise

from privtune.accounting import compose_events
from privtune.mechanisms import Gaussian, Laplace
from privtune.mechanisms._samplers import grid_to_float, round_to_grid
from privtune.optim import dp_accelerated
from privtune.optim.accelerated import _solvers as A
from privtune.testing import audit_mechanism

pytestmark = pytest.mark.statistical

ALPHA = 1e-5
N_ROWS = 10
KAPPA = 0.01
MU = 1.0
N_ITER = 4
EXPECTED_T = 4
H = KAPPA / N_ROWS  # half the shift: the released data-term gradient has mean -H on D, +H on D'
LAPLACE_EPS = 1.0
GAUSS_EPS, GAUSS_DELTA = 2.0, 1e-3
N_LAPLACE = 300_000
N_GAUSS = 500_000

U_D = np.zeros((N_ROWS, 1))
U_D[0, 0] = 1.0
U_DP = U_D.copy()
U_DP[0, 0] = -1.0
Z = np.ones(N_ROWS)


def solver_kwargs(solver: str, noise: str) -> dict:
    """The arguments of ``dp_accelerated`` for this audit (function defaults for everything else)."""
    eps, delta = (LAPLACE_EPS, None) if noise == "laplace" else (GAUSS_EPS, GAUSS_DELTA)
    return dict(solver=solver, epsilon=eps, alpha=MU, data_norm=1.0, n_iter=N_ITER, max_slope=KAPPA, noise=noise,
                delta=delta)


def _plan_kwargs(solver: str, noise: str) -> dict:
    kw = A._defaults(solver_kwargs(solver, noise))
    kw.pop("x0"), kw.pop("masg_p"), kw.pop("random_state")
    return kw


def shares(plan) -> np.ndarray:
    """The split: each step's share of the budget (Laplace epsilon) or of the precision (Gaussian)."""
    if plan.noise == "gaussian":
        return plan.precision_shares
    return np.asarray(plan.eps0) / plan.epsilon


def twin_factor(plan, twin: str) -> float:
    """By how much the twin multiplies every step's budget (Laplace ``eps_t``; Gaussian precision ``1/nm_t**2``)."""
    w = shares(plan)
    if twin == "half":
        return 2.0 if plan.noise == "laplace" else 4.0
    if twin == "drop-last":  # normalised over the first T - 1 steps
        return 1.0 / math.fsum(w[:-1])
    if twin == "drop-stage1":  # normalised over the last stage only
        return 1.0 / math.fsum(w[plan.sched.stages == plan.sched.stages[-1]])
    if twin == "drop-one":  # the uniform split over T - 1 steps
        assert np.all(w == w[0])
        return plan.t_used / (plan.t_used - 1)
    raise ValueError(twin)


def make_plan(solver: str, noise: str, seed: int, *, twin: str | None = None):
    plan = A._make_plan(n=N_ROWS, d=1, x0=None, masg_p=1, accountant=None, random_state=seed, owner="audit",
                        **_plan_kwargs(solver, noise))
    if twin is not None:  # same claimed events (plan.total, plan.events), too little noise
        f = twin_factor(plan, twin)
        if noise == "laplace":
            plan.mechs = [Laplace(epsilon=m.epsilon * f, sensitivity=m.sensitivity, random_state=plan.source)
                          for m in plan.mechs]
        else:
            plan.mechs = [Gaussian.from_noise_multiplier(m.noise_multiplier / math.sqrt(f), sensitivity=m.sensitivity,
                                                         random_state=plan.source) for m in plan.mechs]
    return plan


def solver_batched(plan, U: np.ndarray, k: int, *, noise: bool = True) -> SimpleNamespace:
    """``k`` independent runs of ``A._execute(plan, U, Z)`` (full batch, any solver), vectorised over runs.

    Same operations in the same order and dtypes as the loop: a MASG restart sets ``x_prev = x``, the query
    point is ``x`` (GD, HB) or ``x + b (x - x_prev)`` (NAG, MASG), the release is on each step's grid with the
    exact integer noise drawn per distinct (kind, grid exponent), ``(steps, k)`` at once as ``PredrawnNoise``
    draws ``(steps, 1)``, the public ``mu q`` is added after the noise, and the update is
    ``x - a g~ + b (x - x_prev)`` (GD, HB) or ``q - a g~``. One non-zero row: the sum over rows is exact.
    """
    assert plan.m == plan.n and plan.d == 1
    T, sched = plan.t_used, plan.sched
    heavy_ball = plan.solver in ("gd", "hb")
    u = np.asarray(U)[:, 0]
    z = Z.astype(u.dtype)
    grids = [m._grid(1) for m in plan.mechs]
    ints: list = step_integer_noise(plan, k) if noise else [None] * T
    x_prev, x = np.full(k, plan.w0[0]), np.full(k, plan.w0[0])
    its, qs, released, clean = [x], [], [], []
    for t in range(T):
        a, b = float(sched.alphas[t]), float(sched.betas[t])
        if sched.restarts[t]:
            x_prev = x.copy()
        q = x if heavy_ball else x + b * (x - x_prev)
        c = plan.loss.derivative(z[None, :] * (u[None, :] * q.astype(u.dtype)[:, None]))
        c *= z[None, :]
        # the library sums float32 rows in float32 over sub-blocks of 32 rows (here only the product rounds: one
        # non-zero row), the partials in float64, and shrinks the data term by 1 - 2**-13 (optim/_losses.py)
        g = (c * u[None, :]).astype(np.float64).sum(axis=1) / plan.n * (1.0 - 2.0**-13)
        if noise:
            spacing = grids[t][1]
            g_tilde = grid_to_float(round_to_grid(g, spacing, "value", "audit"), ints[t], spacing) + plan.mu * q
        else:
            g_tilde = g + plan.mu * q
        x_new = x - a * g_tilde + b * (x - x_prev) if heavy_ball else q - a * g_tilde
        x_prev, x = x, x_new
        its.append(x)
        qs.append(q)
        released.append(g_tilde)
        clean.append(g)
    its = np.array(its)
    out = its[-1] if plan.output == "last" else its[T + 1 - math.ceil(T / 2):].mean(axis=0)
    return SimpleNamespace(iterates=its, queries=np.array(qs), released=np.array(released), clean=np.array(clean),
                           x=out)


def loss_statistic(plan, run) -> np.ndarray:
    """The privacy-loss statistic of the run on this pair, from the releases and the run's public noise scales."""
    y = run.released - plan.mu * run.queries  # the released noisy data-term gradients, (T, k)
    if plan.noise == "gaussian":
        sigma = np.array([m.sigma for m in plan.mechs])
        return (y / sigma[:, None] ** 2).sum(axis=0)
    b = np.array([m.scale for m in plan.mechs])
    return (np.clip(y, -H, H) / b[:, None]).sum(axis=0)


def sampler(solver: str, noise: str, U: np.ndarray, seed: int, *, twin: str | None = None,
            statistic: str = "loss"):
    plan = make_plan(solver, noise, seed, twin=twin)
    knee = plan.loss._knee()

    def sample(k: int) -> np.ndarray:
        run = solver_batched(plan, U, k)
        # the differing row's margin stayed in the linear region: the sensitivity is attained at every step
        assert np.abs(run.queries * float(U[0, 0])).max() < knee
        return loss_statistic(plan, run) if statistic == "loss" else run.x

    return sample


def run_audit(solver: str, noise: str, twin: str | None = None, statistic: str = "loss"):
    eps, delta, n = (LAPLACE_EPS, 0.0, N_LAPLACE) if noise == "laplace" else (GAUSS_EPS, GAUSS_DELTA, N_GAUSS)
    return audit_mechanism(sampler(solver, noise, U_D, 1, twin=twin, statistic=statistic),
                           sampler(solver, noise, U_DP, 2, twin=twin, statistic=statistic),
                           epsilon=eps, delta=delta, n_samples=n, confidence=1 - ALPHA, random_state=0)


SOLVERS = ("nag-opt", "masg", "masg-opt", "hb")
NOISES = ("laplace", "gaussian")
# (solver, noise, twin, statistic): "loss" is the privacy-loss statistic of the releases, "output" the
# released coefficient x (the last iterate), which goes through the whole schedule (momentum, restart, steps).
# Measured lower bounds with these seeds, real / twin against the claim (Laplace 1; Gaussian (2, 1e-3)):
MEASURED = {
    ("nag-opt", "gaussian", "loss"): (1.435, 2.786),
    ("nag-opt", "laplace", "loss"): (0.898, 2.060),
    ("masg", "gaussian", "loss"): (1.405, 3.207),
    ("masg", "laplace", "loss"): (0.883, 1.191),
    ("masg-opt", "laplace", "loss"): (0.883, 1.925),
    ("masg-opt", "gaussian", "loss"): (1.493, 2.980),
    ("nag-opt", "gaussian", "output"): (1.329, 2.761),
    ("masg-opt", "gaussian", "output"): (1.513, 2.843),
    ("nag-opt", "laplace", "output"): (0.614, 1.421),
    ("masg-opt", "laplace", "output"): (0.585, 1.316),
}
AUDITS = [
    ("nag-opt", "gaussian", "drop-last", "loss"),
    ("nag-opt", "laplace", "drop-last", "loss"),
    ("masg", "gaussian", "half", "loss"),
    ("masg", "laplace", "drop-one", "loss"),
    ("masg-opt", "laplace", "drop-stage1", "loss"),
    ("masg-opt", "gaussian", "drop-stage1", "loss"),
    ("nag-opt", "gaussian", "drop-last", "output"),
    ("masg-opt", "gaussian", "drop-stage1", "output"),
    ("nag-opt", "laplace", "drop-last", "output"),
    ("masg-opt", "laplace", "drop-stage1", "output"),
]
TWINS = {(s, nz): tw for s, nz, tw, _ in AUDITS}


# ----------------------------------------------------------------------------- the plans and the pair
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("solver", SOLVERS)
def test_plan_claims_the_budget_and_the_split(solver, noise):
    plan = make_plan(solver, noise, 0)
    assert plan.solver == solver and plan.t_used == EXPECTED_T
    w = shares(plan)
    assert math.fsum(w) == pytest.approx(1.0, abs=1e-12)
    if solver.endswith("-opt"):
        assert w.max() / w.min() > 3  # a genuinely non-uniform split
        assert np.argmax(w) == (EXPECTED_T - 1 if solver == "nag-opt" else 0)
    else:
        assert np.all(w == w[0])
    if solver.startswith("masg"):  # stage 1 is one step, then a restart and steps of 1 / (16 L)
        np.testing.assert_array_equal(plan.sched.stages, [1, 2, 2, 2])
        np.testing.assert_array_equal(plan.sched.restarts, [False, True, False, False])
        assert plan.sched.alphas[1] == pytest.approx(plan.sched.alphas[0] / 16)
    if noise == "laplace":
        assert plan.mechs[0].sensitivity == pytest.approx(2 * H)
        assert math.fsum(m.epsilon for m in plan.mechs) == pytest.approx(LAPLACE_EPS, rel=1e-12)
        assert plan.total.epsilon_delta() == pytest.approx((LAPLACE_EPS, 0.0), rel=1e-12)
        # the exact release is (2 H / b_t)-DP per step: the statistic's range is the claim (up to the 2**-10)
        assert math.fsum(2 * H / m.scale for m in plan.mechs) == pytest.approx(LAPLACE_EPS / (1 + 2**-10))
    else:
        assert plan.mechs[0].sensitivity == pytest.approx(2 * H)
        total = compose_events([plan.total], delta=GAUSS_DELTA).epsilon
        assert GAUSS_EPS * (1 - 2e-3) < total <= GAUSS_EPS
        np.testing.assert_allclose(plan.noise_multipliers, [m.noise_multiplier for m in plan.mechs])
    # every twin runs with more budget than the claim (its real composition exceeds the claim)
    if (solver, noise) in TWINS:
        broken = make_plan(solver, noise, 0, twin=TWINS[solver, noise])
        assert broken.total is plan.total or broken.total == plan.total  # the twin claims the same
        if noise == "laplace":
            assert math.fsum(m.epsilon for m in broken.mechs) > 1.3 * LAPLACE_EPS
        else:
            events = [m.privacy_event(vector=True) for m in broken.mechs]
            assert compose_events(events, delta=GAUSS_DELTA).epsilon > 1.4 * GAUSS_EPS


def test_pair_attains_the_sensitivity_at_every_step():
    for solver in SOLVERS:
        for noise in NOISES:
            plan = make_plan(solver, noise, 0)
            run_d = solver_batched(plan, U_D, 1, noise=False)
            run_dp = solver_batched(plan, U_DP, 1, noise=False)
            # (times the gradient's shrink 1 - 2**-13, MarginLoss.gradient)
            np.testing.assert_array_equal(run_d.clean[:, 0], -H * (1.0 - 2.0**-13))
            np.testing.assert_array_equal(run_dp.clean[:, 0], H * (1.0 - 2.0**-13))
            # noisy runs: the query points move (the schedule matters) but stay inside the knee
            noisy = solver_batched(plan, U_D, 10_000)
            assert np.abs(noisy.queries).max() < 0.1 * plan.loss._knee()
            assert np.all(noisy.queries[1:].std(axis=1) > 0)


# ----------------------------------------------------------------------------- the batched sampler is the loop
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("solver", SOLVERS)
def test_batched_replays_the_real_loop_exactly(solver, noise, monkeypatch):
    twins = [None, TWINS[solver, noise]] if (solver, noise) in TWINS else [None]
    for twin in twins:
        for seed in range(3):
            for U in (U_D, U_DP):
                real = A._execute(make_plan(solver, noise, seed, twin=twin), U, Z, noise=True)
                run = solver_batched(make_plan(solver, noise, seed, twin=twin), U, 1)
                np.testing.assert_array_equal(real.iterates[:, 0], run.iterates[:, 0])
                np.testing.assert_array_equal(real.query_points[:, 0], run.queries[:, 0])
                np.testing.assert_array_equal(real.noisy_gradients[:, 0], run.released[:, 0])
                np.testing.assert_array_equal(real.x, run.x)
    # the public function runs this very plan (same schedule, split, noise scales, same draws for a seed)
    for seed in (0, 1):
        for U in (U_D, U_DP):
            res = dp_accelerated(U, Z, random_state=seed, **solver_kwargs(solver, noise))
            plan = make_plan(solver, noise, seed)
            assert (res.solver, res.noise, res.n_iter) == (solver, noise, EXPECTED_T)
            np.testing.assert_array_equal(res.step_sizes, plan.sched.alphas)
            np.testing.assert_array_equal(res.noise_scales, plan.noise_scales)
            run = solver_batched(plan, U, 1)
            np.testing.assert_array_equal(res.iterates[:, 0], run.iterates[:, 0])
            np.testing.assert_array_equal(res.noisy_gradients[:, 0], run.released[:, 0])
    monkeypatch.setattr(A, "_ALLOW_NOISELESS", True)
    for U in (U_D, U_DP):
        ref = A._noiseless_run_for_tests(U, Z, **solver_kwargs(solver, noise))
        run = solver_batched(make_plan(solver, noise, 0), U, 3, noise=False)
        np.testing.assert_array_equal(np.broadcast_to(ref.iterates, run.iterates.shape), run.iterates)


def test_hb_has_the_privacy_loss_of_masg_on_this_pair():
    """Uniform split, same mechanisms: on this pair the privacy-loss statistic of ``hb`` (and of ``gd``,
    ``nag``) is that of ``masg`` draw for draw, up to float rounding (the schedule moves the query points, not
    the means); the ``masg`` audits below therefore cover ``hb`` too, and its schedule is pinned by the exact
    replay above."""
    for noise in NOISES:
        for U in (U_D, U_DP):
            ref = sampler("masg", noise, U, 7)(5000)
            for solver in ("hb", "nag", "gd"):
                # equal up to the float rounding of subtracting the public mu q_t back from the release
                np.testing.assert_allclose(sampler(solver, noise, U, 7)(5000), ref, rtol=1e-12, atol=1e-12)
            # while the released outputs differ
            assert not np.array_equal(sampler("hb", noise, U, 7, statistic="output")(5000),
                                      sampler("masg", noise, U, 7, statistic="output")(5000))


# ----------------------------------------------------------------------------- the audits
@pytest.mark.parametrize(("solver", "noise", "statistic"), [(s, nz, st) for s, nz, _, st in AUDITS])
def test_real_run_passes_audit(solver, noise, statistic):
    res = run_audit(solver, noise, statistic=statistic)
    # measured with these seeds: MEASURED[solver, noise, statistic][0]
    assert not res.violation, str(res)


@pytest.mark.parametrize(("solver", "noise", "twin", "statistic"), AUDITS)
def test_twin_is_flagged(solver, noise, twin, statistic):
    res = run_audit(solver, noise, twin, statistic)
    # measured with these seeds: MEASURED[solver, noise, statistic][1]
    claim = LAPLACE_EPS if noise == "laplace" else GAUSS_EPS
    assert res.violation and res.epsilon_lower_bound > 1.1 * claim, str(res)
