"""The public plan of the Kuru et al. (2022) solvers: every privacy event and noise scale, before any data is read.

Internal module of :mod:`privtune.optim.accelerated` (split from it; see that
module for the algorithms, the Gaussian variant and the deviations from the
paper). :func:`_make_plan` validates the parameters and builds the schedule,
horizon, budget split, mechanisms and the composed event from public
quantities only (``n``, ``d``, declared bounds and the parameters).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant, compose_events
from privtune.accounting.events import (
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
)
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import GRID_HEADROOM, MAX_GAUSSIAN_GRID_EXPONENT
from privtune.mechanisms.gaussian import Gaussian, calibrate_rdp_gaussian
from privtune.mechanisms.laplace import Laplace
from privtune.optim._losses import (
    MULTICLASS_HINGE,
    MULTICLASS_LOSSES,
    MarginLoss,
    SoftmaxLoss,
    check_storage,
    get_loss,
    l1_bound_of,
)
from privtune.optim.accelerated._schedules import (
    HORIZONS,
    SOLVERS,
    auto_horizon,
    base_epsilon,
    opt_split,
    opt_split_gaussian,
    step_schedule,
    uniform_paper_horizon,
    uniform_split,
)
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_choice as _choice
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

_OUTPUTS = ("last", "tail_average")
_CLIPS = ("rows", "raise")
_NOISES = ("laplace", "gaussian")
#: The Gaussian plan is calibrated at ``epsilon * (1 - GAUSSIAN_SLACK)``, so that float rounding of the
#: per-step split can never push the exactly composed epsilon above ``epsilon``.
GAUSSIAN_SLACK = 1e-3

#: Each Laplace step's epsilon is shrunk by this factor, so that rounding never lifts the composition above eps.
_SPLIT_MARGIN = 1.0 - 2.0**-40


@functools.lru_cache(maxsize=4096)
def gaussian_run_multiplier(epsilon: float, delta: float) -> float:
    """Noise multiplier ``nm`` of the single Gaussian that a whole Gaussian-variant run composes to.

    Calibrated at ``(epsilon (1 - GAUSSIAN_SLACK), delta)`` through **RDP**
    (:func:`privtune.mechanisms.gaussian.calibrate_rdp_gaussian`): every step
    adds discrete Gaussian noise to a vector, whose privacy curve is proven
    through RDP (tensorisation of Canonne, Kamath & Steinke's one-coordinate
    bound), not through the continuous Gaussian's exact curve. The steps'
    multipliers satisfy ``sum_t 1 / nm_t**2 = 1 / nm**2`` whatever the horizon,
    so the run's RDP curve is that of one Gaussian of multiplier ``nm``. Public
    constants only.
    """
    return calibrate_rdp_gaussian(epsilon=epsilon * (1.0 - GAUSSIAN_SLACK), delta=delta)


class _Plan:
    """Everything decided from public quantities before the data is read (internal)."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _make_plan(*, solver: str, n: int, d: int, epsilon: float, alpha: float, data_norm: float,
               data_norm_l2: float | None, loss: str, smoothing: float, n_iter: int, batch_size: int | None,
               step_scale: float, initial_gap: float | None, x0: Any, masg_p: int, clip: str, output: str,
               accountant: Any, random_state: Any, owner: str, noise: str = "laplace",
               delta: float | None = None, max_slope: float = 1.0, horizon: str | None = None,
               budget_share: float = 1.0, n_classes: int | None = None, check_only: bool = False,
               horizon_floor: float = 0.0) -> Any:
    """The run's whole plan from public quantities (every refusal happens here, before any charge).

    ``check_only``: stop once every check has passed and every step's exact
    noise grid exists, and return the rows' storage dtype (``row_dtype`` of
    the plan, below); skips the events and their composition, which only a
    run needs. ``row_dtype``: float32 when the declared bounds are inside
    float32's safe range (:func:`privtune.optim._losses.storage_dtype`), else
    float64; bounds outside float64's range are refused here. ``budget_share``: the run spends this share of the
    budget of ``(epsilon, delta)`` (see :func:`privtune.optim.dp_accelerated`).
    The K-class losses (``"multinomial"``, ``"multiclass_smoothed_hinge"``) need
    ``n_classes = K``; ``d`` is then the number of coefficients, ``K`` times the
    rows' width.
    """
    _choice(solver, "solver", SOLVERS, owner)
    if horizon is None:  # the function API's historical behaviour: the paper's T* for *-opt, else n_iter
        horizon = "paper" if solver.endswith("-opt") else "max_iter"
    horizon_rule = _choice(horizon, "horizon", HORIZONS, owner)
    kind = _choice(noise, "noise", _NOISES, owner)
    eps = check_epsilon(epsilon, owner=owner)
    if kind == "gaussian":
        if delta is None:
            raise InvalidParameterError(
                f"The 'delta' parameter of {owner} is required (a float in the range (0.0, 1.0)) with "
                "noise='gaussian'.")
        dlt = check_delta(delta, owner=owner, allow_zero=False)
    else:
        if delta is not None and check_delta(delta, owner=owner) != 0.0:
            raise InvalidParameterError(
                f"The 'delta' parameter of {owner} must be None or 0 with noise='laplace' (pure epsilon-DP). "
                f"Got {delta!r} instead; use noise='gaussian' for (epsilon, delta)-DP.")
        dlt = 0.0
    share = check_real(budget_share, "budget_share", low=0.0, high=1.0, closed="right", owner=owner)
    if kind == "laplace":
        eps = eps * share  # pure DP: shares of epsilon add up (basic composition)
    mu = check_real(alpha, "alpha", low=0.0, owner=owner)
    r1 = check_real(data_norm, "data_norm", low=0.0, owner=owner)
    r2 = r1 if data_norm_l2 is None else check_real(data_norm_l2, "data_norm_l2", low=0.0, owner=owner)
    h = check_real(smoothing, "smoothing", low=0.0, owner=owner)
    kappa = check_real(max_slope, "max_slope", low=0.0, high=1.0, closed="right", owner=owner)
    lossf: MarginLoss | SoftmaxLoss
    if loss in MULTICLASS_LOSSES:
        if n_classes is None:
            raise InvalidParameterError(f"loss={loss!r} of {owner} needs n_classes (the number of classes K).")
        k_classes = check_integer(n_classes, "n_classes", low=2, high=2**20, owner=owner)
        if d % k_classes:
            raise InvalidParameterError(
                f"{owner}: {d} coefficients are not n_classes={k_classes} rows of equal width.")
        hinge = loss == MULTICLASS_HINGE
        lossf = SoftmaxLoss(k_classes, kappa, margin=1.0 if hinge else 0.0, smoothing=h if hinge else 1.0)
        row_dim = d // k_classes
    else:
        if n_classes is not None:
            raise InvalidParameterError(
                f"The 'n_classes' parameter of {owner} is for the losses {list(MULTICLASS_LOSSES)} only. "
                f"Got {n_classes!r}.")
        lossf = get_loss(loss, h, owner, kappa)
        row_dim = d
    horizon = check_integer(n_iter, "n_iter", low=1, high=100_000, owner=owner)
    floor = check_real(horizon_floor, "horizon_floor", low=0.0, high=1e6, closed="both", owner=owner)
    c = check_real(step_scale, "step_scale", low=0.0, high=1.0, closed="right", owner=owner)
    p = check_integer(masg_p, "masg_p", low=1, high=30, owner=owner)
    _choice(clip, "clip", _CLIPS, owner)
    _choice(output, "output", _OUTPUTS, owner)
    m = n if batch_size is None else check_integer(batch_size, "batch_size", low=1, high=n, owner=owner)
    if kind == "gaussian" and m < n:
        raise InvalidParameterError(
            f"The 'batch_size' parameter of {owner} must be None (or n_samples) with noise='gaussian': "
            "amplification by sampling without replacement of Gaussian steps is not accounted exactly by "
            "privtune's accountant, so mini-batches are only available with noise='laplace'.")
    if accountant is not None and not isinstance(accountant, Accountant):
        raise InvalidParameterError(
            f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. "
            f"Got {type(accountant).__name__} instead.")
    if x0 is None:
        w0 = np.zeros(d)
    else:
        w0 = np.asarray(x0, dtype=np.float64)
        if w0.shape != (d,) or not np.all(np.isfinite(w0)):
            raise InvalidParameterError(f"The 'x0' parameter of {owner} must be a finite 1-D array of length {d}.")
    if kind == "gaussian":
        # The Gaussian noise needs an L2 bound only: rows are clipped in L2 (to data_norm_l2, else
        # data_norm) and no L1 bound is imposed (the implied one, sqrt(d) R_2, never clips).
        r1 = math.sqrt(row_dim) * r2
    else:
        r2 = min(r2, r1)  # ||u||_2 <= ||u||_1 always
    r1_eff = l1_bound_of(r1, r2, row_dim)
    # float32 rows only where float32 arithmetic keeps the sensitivity (public: bounds, sizes, the loss's constants)
    row_dtype = check_storage(r1_eff, r2, row_dim, coefficients=d, coefficient_l1=lossf.coefficient_bound(1),
                              coefficient_l2=lossf.coefficient_bound(2), norm=2 if kind == "gaussian" else 1,
                              owner=owner)
    # per-example L1 / L2 sensitivity of the data-term gradient (module _losses): 2 x coefficient bound x row bound
    sens = 2.0 * lossf.coefficient_bound(1) * r1_eff
    kappa = lossf.coefficient_bound(2)  # from here on: the L2 coefficient bound (max_slope for margin losses)
    smooth = lossf.curvature_bound() * r2 * r2 + mu
    if initial_gap is None:
        e0 = lossf.value_bound(r2 * float(np.linalg.norm(w0))) + 0.5 * mu * float(w0 @ w0)
    else:
        e0 = check_real(initial_gap, "initial_gap", low=0.0, owner=owner)
    source = check_random_state(random_state, owner=owner)
    # Gaussian: a share of the precision 1 / nm**2 (zCDP rho) of one run at (epsilon, delta); shares summing to 1
    # compose (RDP adds) to exactly that one run.
    nm_run = gaussian_run_multiplier(eps, dlt) / math.sqrt(share) if kind == "gaussian" else None

    if horizon_rule == "auto":
        if kind == "gaussian":
            ratio = 2.0 * nm_run * math.sqrt(d) / n
        else:
            ratio = (2.0 * math.sqrt(2.0 * d) * (r1_eff / r2) / (n * eps)
                     * (lossf.coefficient_bound(1) / lossf.coefficient_bound(2)))
        horizon = auto_horizon(ratio, horizon, laplace=kind == "laplace", dim=d, floor=floor)
    sched = step_schedule(solver, horizon, c, smooth, mu, p)
    if horizon_rule == "paper" and not solver.endswith("-opt"):
        if kind == "gaussian":
            log_k = math.log(d / 2.0) + 2.0 * math.log(2.0 * kappa * r2 / n) + 2.0 * math.log(nm_run)
            horizon = uniform_paper_horizon(sched, mu=mu, smoothness=smooth, log_noise_constant=log_k,
                                            noise_power=1, initial_gap=e0)
        else:
            log_k = math.log(d) + 2.0 * math.log(sens / (n * eps))
            horizon = uniform_paper_horizon(sched, mu=mu, smoothness=smooth, log_noise_constant=log_k,
                                            noise_power=2, initial_gap=e0)
        sched = sched.head(horizon)
    select = horizon_rule == "paper"
    if kind == "gaussian":
        plan = _gaussian_plan(solver=solver, n=n, d=d, m=m, eps=eps, dlt=dlt, nm=nm_run, mu=mu, r1=r1, r2=r2,
                              kappa=kappa, lossf=lossf, horizon=horizon, sched=sched, smooth=smooth, e0=e0, w0=w0,
                              clip=clip, output=output, source=source, owner=owner, select=select,
                              horizon_rule=horizon_rule, check_only=check_only)
        if plan is None:
            return row_dtype
        plan.row_dtype = row_dtype
        return plan
    if solver.endswith("-opt"):
        t_used, eps_t = opt_split(sched, epsilon=eps, mu=mu, smoothness=smooth, sensitivity=sens, n=n,
                                  dim=d, initial_gap=e0, select_horizon=select)
        sched = sched.head(t_used)
    else:
        t_used, eps_t = horizon, uniform_split(eps, horizon)
    # The split and the amplification's inverse round trip in floating point: the steps' composed epsilon came out
    # one ulp above eps in 51 of 300 random plans, while an estimator charges EpsilonDeltaEvent(eps). A relative
    # margin of 2**-40 (far above those few ulps, far below any effect on the noise) keeps the composition <= eps.
    eps0 = [base_epsilon(float(e) * _SPLIT_MARGIN, n, m) for e in eps_t]
    mechs = [Laplace(epsilon=e, sensitivity=sens / m, random_state=source) for e in eps0]
    for mech in mechs:
        mech.grid_spacing(d)  # the exact grid must exist for every step: refuse now, before any spending
    if check_only:
        return row_dtype
    if m == n:
        events: list[PrivacyEvent] = [LaplaceEvent(epsilon=e) for e in eps0]
    else:
        events = [SampledWithoutReplacementEvent(event=LaplaceEvent(epsilon=e), dataset_size=n, sample_size=m)
                  for e in eps0]
    label = f"Kuru et al. 2022 DP-{solver.upper()} ({t_used} steps, batch {m} of {n})"
    if len(set(eps0)) == 1:
        total: PrivacyEvent = SelfComposedEvent(event=events[0], count=t_used, label=label)
    else:
        total = ComposedEvent(events=tuple(events), label=label)
    step_costs = np.array([ev.epsilon_delta()[0] for ev in events])  # type: ignore[index]
    return _Plan(solver=solver, n=n, d=d, m=m, epsilon=eps, mu=mu, r1=r1, r2=r2, loss=lossf,
                 horizon=horizon, sched=sched, t_used=t_used, eps0=eps0, mechs=mechs, events=tuple(events),
                 total=total, step_costs=step_costs, sens=sens, smooth=smooth, e0=e0, w0=w0, clip=clip,
                 output=output, source=source, owner=owner, noise="laplace", delta=0.0, horizon_rule=horizon_rule,
                 total_epsilon=math.fsum(step_costs), noise_scales=np.array([mech.scale for mech in mechs]),
                 row_dtype=row_dtype)


def _gaussian_plan(*, solver: str, n: int, d: int, m: int, eps: float, dlt: float, nm: float, mu: float,
                   r1: float, r2: float, kappa: float, lossf: MarginLoss | SoftmaxLoss, horizon: int, sched: Any,
                   smooth: float, e0: float, w0: np.ndarray, clip: str, output: str, source: Any, owner: str,
                   select: bool, horizon_rule: str, check_only: bool = False) -> _Plan | None:
    """The Gaussian (zCDP) plan -- privtune's extension, not in the paper (internal).

    Per-example L2 sensitivity of the data-term gradient ``S_2 = 2 kappa R_2`` (``kappa``
    the loss's coefficient bound: ``max_slope``, or the softmax residual clip; ``R_2``
    the declared L2 row bound ``data_norm_l2``, else ``data_norm``, since
    ``||u||_2 <= ||u||_1``); the full-batch mean has L2 sensitivity ``S_2 / n``.
    The whole run is one Gaussian mechanism with ``1 / nm**2 = sum_t 1 / nm_t**2``
    (Dong, Roth & Su 2019), calibrated through RDP at ``(epsilon (1 - 1e-3), delta)``
    (:func:`gaussian_run_multiplier`; the run is charged as RDP, ``method="rdp"``);
    the precision ``1 / nm**2`` (i.e. the zCDP ``rho``) is split across steps
    uniformly, or proportionally to ``a_{T,t}**(1/2)`` for the ``*-opt`` solvers.
    ``nm`` is that run multiplier (divided by ``sqrt(budget_share)``).
    """
    sens2 = 2.0 * kappa * r2
    precision = 1.0 / (nm * nm)
    if solver.endswith("-opt"):
        # The exact grid sampler needs nm_t <= nm_cap (grid exponent <= 30); nm_t <= nm sqrt(T / ratio)
        # with ratio = min_t w_t / max_t w_t, so cap the horizon at log(1/ratio) <= log(nm_cap**2 / (T nm**2)).
        nm_cap = 2.0**MAX_GAUSSIAN_GRID_EXPONENT * GRID_HEADROOM / ((1.0 + GRID_HEADROOM) * 2.0 * math.sqrt(d))
        max_log_ratio = 2.0 * math.log(0.99 * nm_cap / nm) - math.log(horizon)
        t_used, shares = opt_split_gaussian(sched, precision=precision, mu=mu, smoothness=smooth,
                                            sensitivity=sens2, n=n, dim=d, initial_gap=e0,
                                            max_log_ratio=max_log_ratio, select_horizon=select)
        sched = sched.head(t_used)
        nms = [nm / math.sqrt(float(w)) for w in shares]
    else:
        t_used = horizon
        shares = np.full(horizon, 1.0 / horizon)
        nms = [nm * math.sqrt(horizon)] * horizon
    # One mechanism per distinct multiplier (a uniform split has one): they are immutable and share the source.
    by_nm = {v: Gaussian.from_noise_multiplier(v, sensitivity=sens2 / m, random_state=source) for v in set(nms)}
    mechs = [by_nm[v] for v in nms]
    for mech in by_nm.values():
        mech.grid_spacing(d)  # the exact grid must exist for every step: refuse now, before any spending
    if check_only:
        return None
    events: list[PrivacyEvent] = [GaussianEvent(noise_multiplier=v, vector=True) for v in nms]
    label = f"Kuru et al. 2022 DP-{solver.upper()}, Gaussian variant ({t_used} steps, batch {m} of {n})"
    if len(set(nms)) == 1:
        total: PrivacyEvent = SelfComposedEvent(event=events[0], count=t_used, label=label)
    else:
        total = ComposedEvent(events=tuple(events), label=label)
    eps_total = compose_events([total], delta=dlt, method="rdp").epsilon
    step_costs = eps_total * np.asarray(shares, dtype=float)  # shares of the budget, not per-step guarantees
    return _Plan(solver=solver, n=n, d=d, m=m, epsilon=eps, mu=mu, r1=r1, r2=r2, loss=lossf,
                 horizon=horizon, sched=sched, t_used=t_used, eps0=None, mechs=mechs, events=tuple(events),
                 total=total, step_costs=step_costs, sens=sens2, smooth=smooth, e0=e0, w0=w0, clip=clip,
                 output=output, source=source, owner=owner, noise="gaussian", delta=dlt, horizon_rule=horizon_rule,
                 total_epsilon=eps_total, noise_scales=np.array([mech.sigma for mech in mechs]),
                 noise_multipliers=np.array(nms), precision_shares=np.asarray(shares, dtype=float))
