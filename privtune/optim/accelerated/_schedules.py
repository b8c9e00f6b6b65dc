r"""Step-size, momentum and privacy-budget schedules of Kuru et al. (2022) (internal).

Everything here is a function of *public* constants only (the declared
smoothness ``L``, ``mu``, the sensitivity ``S_1``, ``n``, ``m``, ``d``, ``epsilon``,
``E_0``, the horizon): computing a schedule costs no privacy.

Conventions follow the seed-002 spec (section 2):

* ``alpha = c / L`` and ``beta = (1 - sqrt(mu alpha)) / (1 + sqrt(mu alpha))``
  for HB, NAG and per stage for MASG; GD has ``beta = 0``.
* MASG stages (4.7) with the authors' code details: ``n_1 = ceil(2 sqrt(kappa)
  ln sqrt(kappa))`` (at least 1, at most T), stage ``k >= 2`` of length
  ``2**k ceil(sqrt(kappa) ln 2**(p + 2))`` with ``alpha_k = c / (4**k L)``, momentum
  restarted at every stage start, the last stage truncated at ``T``.
* Uniform split: ``eps_t = eps / T``. Optimal split (Prop. 4.2, Thm 4.3):
  ``eps_t`` proportional to ``a_{T,t}**(1/3)`` with the code's constants
  ``a'_{T,t} = 2**(s_T - s_t) q_{t+1..T} (alpha_t / 2)(1 + alpha_t L)`` and
  ``a'_{T,0} = 2**s_T q_{1..T}``, computed in log space, and ``T*`` minimising
  the bound (4.6) over ``1 <= T' <= T`` (Rem. 4.1).
* Per-step Laplace parameters from (3.3): a step with amplified cost ``eps_t``
  on a batch of ``m`` of ``n`` rows runs the Laplace mechanism at
  ``eps0_t = ln(1 + (e**eps_t - 1) n / m)`` on the batch mean (sensitivity
  ``S_1 / m``), which is exact inversion, so the amplified costs sum to
  ``epsilon`` (spec P4).
* Gaussian (zCDP) variant -- **privtune's extension, not in the paper** (spec
  section 6, [ours]): minimising ``sum_t a_{T,t} sigma_t**2`` subject to a total
  zCDP ``rho = sum_t rho_t`` gives ``rho_t`` proportional to ``a_{T,t}**(1/2)``
  (instead of ``a**(1/3)``), with the bound
  ``a_{T,0} E_0 + (d / 2) Delta**2 (sum_j a_{T,j}**(1/2))**2 / P`` where
  ``Delta`` is the per-step L2 sensitivity of the mean gradient and
  ``P = sum_t 1 / nm_t**2 = 2 rho`` the total Gaussian precision
  (:func:`opt_split_gaussian`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from privtune.exceptions import InvalidParameterError

__all__ = ["Schedule", "step_schedule", "uniform_split", "opt_split", "opt_split_gaussian", "base_epsilon",
           "auto_horizon", "uniform_paper_horizon", "SOLVERS", "HORIZONS"]

SOLVERS = ("gd", "hb", "nag", "nag-opt", "masg", "masg-opt")
HORIZONS = ("auto", "max_iter", "paper")
#: ``T = AUTO_HORIZON_SCALE / sqrt(r)`` in :func:`auto_horizon` (privtune's rule, measured in
#: ``benchmarks/trainers/dp_trainer_defaults.py``).
AUTO_HORIZON_SCALE = 5.0
#: Fewest steps :func:`auto_horizon` chooses.
AUTO_HORIZON_MIN = 1
#: In the noisy regime (``r`` above about 0.09) :func:`auto_horizon` runs ``AUTO_HORIZON_NOISY / r`` steps.
AUTO_HORIZON_NOISY = 1.5
#: :func:`auto_horizon` runs at most ``max(AUTO_HORIZON_CONVERGED, 2 d)`` steps.
AUTO_HORIZON_CONVERGED = 50


@dataclass(frozen=True)
class Schedule:
    """Per-step step sizes, momentums, stage indices and restart flags (length T)."""

    alphas: np.ndarray
    betas: np.ndarray
    stages: np.ndarray
    restarts: np.ndarray

    def head(self, t: int) -> Schedule:
        return Schedule(self.alphas[:t], self.betas[:t], self.stages[:t], self.restarts[:t])


def _momentum(alpha: np.ndarray | float, mu: float) -> np.ndarray:
    s = np.sqrt(mu * np.asarray(alpha, dtype=float))
    return (1.0 - s) / (1.0 + s)


def masg_stages(horizon: int, kappa: float, p: int = 1) -> np.ndarray:
    """Stage index (1-based) of each of ``horizon`` iterations (DP-MASG, (4.7))."""
    rk = math.sqrt(kappa)
    n1 = 1 if kappa <= 1.0 else math.ceil(2.0 * rk * math.log(rk))
    n1 = max(1, min(horizon, n1))
    c = max(1, math.ceil(rk * math.log(2.0 ** (p + 2))))
    stages = np.empty(horizon, dtype=np.int64)
    stages[:n1] = 1
    t, k = n1, 2
    while t < horizon:
        length = (2**k) * c
        stages[t:t + length] = k
        t += length
        k += 1
    return stages


def step_schedule(solver: str, horizon: int, step_scale: float, smoothness: float, mu: float,
                  p: int = 1) -> Schedule:
    """The step sizes and momentums of ``solver`` over ``horizon`` steps."""
    base = step_scale / smoothness
    restarts = np.zeros(horizon, dtype=bool)
    if solver in ("masg", "masg-opt"):
        stages = masg_stages(horizon, smoothness / mu, p)
        alphas = np.where(stages == 1, base, base / 4.0 ** stages.astype(float))
        betas = _momentum(alphas, mu)
        restarts[1:] = stages[1:] != stages[:-1]
        return Schedule(alphas, betas, stages, restarts)
    stages = np.ones(horizon, dtype=np.int64)
    alphas = np.full(horizon, base)
    betas = np.zeros(horizon) if solver == "gd" else _momentum(alphas, mu)
    return Schedule(alphas, betas, stages, restarts)


def uniform_split(epsilon: float, horizon: int) -> np.ndarray:
    """``eps_t = eps / T`` for every step."""
    return np.full(horizon, epsilon / horizon)


def _log_coefficients(sched: Schedule, tau: int, mu: float, smoothness: float) -> tuple[np.ndarray, float]:
    """``log a'_{tau,t}`` for t = 1..tau and ``log a'_{tau,0}`` (code constants, spec 2.4)."""
    a = sched.alphas[:tau]
    s = sched.stages[:tau]
    lq = np.log1p(-np.sqrt(mu * a))
    # suffix[t] = sum_{i=t+1}^{tau} lq[i]
    suffix = np.concatenate((np.cumsum(lq[::-1])[::-1][1:], [0.0]))
    la = suffix + np.log(a / 2.0 * (1.0 + a * smoothness)) + (s[-1] - s) * math.log(2.0)
    la0 = float(s[-1] * math.log(2.0) + lq.sum())
    return la, la0


def log_noise_bound(sched: Schedule, tau: int, *, mu: float, smoothness: float, sensitivity: float,
                    n: int, dim: int, epsilon: float, initial_gap: float) -> float:
    """``log B(tau)`` of (4.6): ``a_{tau,0} E_0 + (d S_1^2 / (n eps)^2) (sum_j a_{tau,j}^{1/3})^3``."""
    la, la0 = _log_coefficients(sched, tau, mu, smoothness)
    noise = 3.0 * logsumexp(la / 3.0) + 2.0 * math.log(sensitivity / (n * epsilon)) + math.log(dim)
    return float(np.logaddexp(noise, math.log(initial_gap) + la0))


def _profile(sched: Schedule, mu: float, smoothness: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decompose ``log a'_{tau,t} = A_tau + B_t`` for all ``t <= tau`` at once (O(T)).

    With ``P_k = sum_{i<=k} lq_i``: ``A_tau = P_tau + s_tau ln 2`` and
    ``B_t = log((alpha_t/2)(1 + alpha_t L)) - P_t - s_t ln 2``; also returns ``log a'_{tau,0}``.
    """
    a = sched.alphas
    s = sched.stages.astype(float)
    lq = np.log1p(-np.sqrt(mu * a))
    P = np.cumsum(lq)
    A = P + s * math.log(2.0)
    B = np.log(a / 2.0 * (1.0 + a * smoothness)) - P - s * math.log(2.0)
    return A, B, s * math.log(2.0) + P


def opt_split(sched: Schedule, *, epsilon: float, mu: float, smoothness: float, sensitivity: float,
              n: int, dim: int, initial_gap: float, select_horizon: bool = True) -> tuple[int, np.ndarray]:
    """``(T*, eps_t)`` of DP-NAG-opt / DP-MASG-opt (Prop. 4.2, Rem. 4.1/4.2, Thm 4.3).

    ``T*`` minimises the bound (4.6) (with ``n``, i.e. the full-batch bound, also
    for mini-batches, as the authors do) over ``1 <= T' <= T`` (and below the
    cap of :func:`_max_useful_horizon`), and ``eps_t`` is proportional to
    ``a_{T*,t}**(1/3)``; the returned ``eps_t`` sum to ``epsilon``.
    """
    horizon = _max_useful_horizon(sched, mu, smoothness, power=1.0 / 3.0)
    if select_horizon:
        A, B, la0 = _profile(sched.head(horizon), mu, smoothness)
        lse = A / 3.0 + np.logaddexp.accumulate(B / 3.0)  # LSE_{t<=tau} log a'_{tau,t} / 3
        noise = 3.0 * lse + 2.0 * math.log(sensitivity / (n * epsilon)) + math.log(dim)
        scores = np.logaddexp(noise, math.log(initial_gap) + la0)
        t_star = int(np.argmin(scores)) + 1
    else:
        t_star = horizon
    la, _ = _log_coefficients(sched, t_star, mu, smoothness)
    w = np.exp(la / 3.0 - logsumexp(la / 3.0))
    return t_star, epsilon * w / math.fsum(w)


#: Smallest share of the budget a step of an opt split may get, relative to the largest share.
MIN_RELATIVE_SHARE = 2.0**-40


def opt_split_gaussian(sched: Schedule, *, precision: float, mu: float, smoothness: float, sensitivity: float,
                       n: int, dim: int, initial_gap: float, select_horizon: bool = True,
                       max_log_ratio: float | None = None) -> tuple[int, np.ndarray]:
    """``(T*, w_t)`` of the Gaussian (zCDP) opt split -- privtune's extension, not in the paper.

    ``w_t`` (summing to 1) is the share of the total precision ``P = 1 / nm**2``
    (equivalently of the total zCDP ``rho = P / 2``) given to step ``t``:
    ``w_t`` proportional to ``a_{T*,t}**(1/2)`` (spec section 6, [ours]), so step
    ``t`` has noise multiplier ``nm / sqrt(w_t)``. ``T*`` minimises
    ``a_{T',0} E_0 + (d / 2) (sensitivity / n)**2 (sum_j a_{T',j}**(1/2))**2 / P``
    over ``1 <= T' <= T`` (the Gaussian analogue of (4.6), in (4.2)'s
    convention ``b_t**2 d = E||eta_t||**2 / 2``); ``sensitivity`` is the
    per-example L2 sensitivity of the data-term gradient. Public constants only.
    ``max_log_ratio`` caps ``log(max_t w_t / min_t w_t)`` (default ``40 ln 2``)
    through the horizon, like :func:`_max_useful_horizon`.
    """
    horizon = _max_useful_horizon(sched, mu, smoothness, power=0.5, max_log_ratio=max_log_ratio)
    if select_horizon:
        A, B, la0 = _profile(sched.head(horizon), mu, smoothness)
        lse = A / 2.0 + np.logaddexp.accumulate(B / 2.0)  # LSE_{t<=tau} log a'_{tau,t} / 2
        noise = (2.0 * lse + 2.0 * math.log(sensitivity / n) + math.log(dim) - math.log(2.0)
                 - math.log(precision))
        scores = np.logaddexp(noise, math.log(initial_gap) + la0)
        t_star = int(np.argmin(scores)) + 1
    else:
        t_star = horizon
    la, _ = _log_coefficients(sched, t_star, mu, smoothness)
    w = np.exp(la / 2.0 - logsumexp(la / 2.0))
    return t_star, w / math.fsum(w)


def _max_useful_horizon(sched: Schedule, mu: float, smoothness: float, power: float = 1.0 / 3.0,
                        max_log_ratio: float | None = None) -> int:
    """Largest ``tau`` whose optimal split gives every step at least ``MIN_RELATIVE_SHARE`` of the largest share.

    On well-conditioned problems ``a_{tau,1} / a_{tau,tau}`` decays geometrically, and a long horizon
    would give the first steps a vanishing budget (noise more than 10**12 times the signal, and
    beyond what the exact grid sampler can represent). Such steps are useless; the horizon is capped
    instead (a deviation from the paper, which has no such cap). Public constants only.
    """
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # public; a non-finite profile: refused
        _, B, _ = _profile(sched, mu, smoothness)
        spread = (np.maximum.accumulate(B) - np.minimum.accumulate(B)) * power  # A_tau cancels in the ratio
    limit = -math.log(MIN_RELATIVE_SHARE) if max_log_ratio is None else min(max_log_ratio,
                                                                          -math.log(MIN_RELATIVE_SHARE))
    ok = np.nonzero(spread <= max(limit, 0.0))[0]
    if not ok.size:  # the profile is not finite (NaN): mu and the smoothness overflow the schedule's arithmetic
        raise InvalidParameterError(
            f"The step schedule's coefficients are not finite for strong convexity {mu!r} and smoothness "
            f"{smoothness!r} (a regularisation C so small, or a smoothing so large, that they overflow). "
            "Use a larger C or a smaller smoothing.")
    return int(ok[-1]) + 1


def base_epsilon(step_epsilon: float, n: int, m: int) -> float:
    """Epsilon of the Laplace mechanism on the batch mean whose amplified cost is ``step_epsilon`` ((3.3) inverted)."""
    if m == n:
        return step_epsilon
    return math.log1p(math.expm1(step_epsilon) * n / m)


def auto_horizon(noise_to_signal: float, cap: int, *, laplace: bool = False, dim: int | None = None,
                 floor: float = 0.0) -> int:
    """privtune's horizon rule (``horizon="auto"``), from public constants only.

    ``r = noise_to_signal`` is the expected L2 norm of the noise that one step
    would add to the mean gradient if it had the whole budget, divided by the
    largest norm that gradient can have (``kappa R_2``): for the Gaussian
    variant ``r = 2 nm sqrt(d) / n`` (``nm`` the run's noise multiplier), for
    Laplace ``r = 2 sqrt(2 d) (min(R_1, sqrt(d) R_2) / R_2) / (n epsilon)``.
    A uniform split over ``T`` steps gives each step the ratio ``r sqrt(T)``
    (Gaussian: precisions add) or ``r T`` (Laplace: epsilons add). ``T`` is
    the horizon at which that per-step ratio equals ``25 T**-1.5``, i.e.
    ``T = 5 / sqrt(r)`` for Gaussian noise and ``T = (25 / r)**0.4`` for
    Laplace; in the noisy regime (``r`` above about 0.09) fewer steps are taken,
    ``T = 1.5 / r`` (Gaussian; per-step ratio ``1.5 / sqrt(T)``) or
    ``(1.5 / r)**(2/3)`` (Laplace), down to one step: when one step's noise is
    as large as the largest possible gradient, every further step adds noise
    faster than signal (measured: breast cancer at epsilon = 0.1, 0.86 with one
    step against 0.76 with five). Rounded and clamped to ``[1, cap]``. With ``dim`` (the number of
    coefficients ``d``), ``T`` is also at most ``max(AUTO_HORIZON_CONVERGED, 2 d)``
    = ``max(50, 2 d)``: once the noise is small, more steps only finish the
    optimisation, and on rows of bounded norm the curvature along a typical
    direction is about ``1/d`` of the declared smoothness, so a momentum method
    has converged for accuracy after a small multiple of ``sqrt(d)`` to ``d``
    steps. Measured (``benchmarks/trainers/dp_trainer_defaults.py``): a cap of ``max(20, d)``
    cost up to 2 points at epsilon >= 3 on 3 500 and 14 000 synthetic rows of
    20 features, while ``max(50, 2 d)`` halves the time of a fit on 80 000 x 20
    rows against the cap of 100 (``benchmarks/trainers/dp_trainer_peers.py``).

    The Gaussian constant was measured, not derived: ``T ~ r**-1/2`` with scale
    5 had the lowest mean loss of accuracy against the best fixed horizon per
    cell on six data sets at epsilon 0.1 to 10 (``benchmarks/trainers/dp_trainer_defaults.py``).
    This is privtune's deviation from Kuru et al. (2022), whose bound-minimising
    ``T*`` (``horizon="paper"``) with ``mu = 1 / (C n)`` picks 1 to 7 steps at
    per-fit epsilon <= 1 on a few hundred rows and up to its cap (100) on
    thousands of rows; with rows clipped in L2 it is within 2.3 points of
    this rule in 44 of ``DPLogisticRegression``'s 45 cells on the nine
    benchmark tasks; the one other cell, wine's 124 rows at epsilon = 0.3,
    has ``T*`` 9.3 points above it
    (``benchmarks/results/dp_trainer_defaults.md``). ``T`` grows with epsilon,
    so a larger budget never buys fewer steps.

    ``floor`` (Gaussian only; 0, the default, leaves the rule as above): at
    least ``floor / r`` steps, still at most the cap. It acts only where
    ``floor / r`` exceeds ``5 / sqrt(r)``, i.e. ``r < (floor / 5)**2``, the
    quiet regime; there, until the cap, ``T = floor / r`` and each step's
    ratio ``r sqrt(T)`` is ``sqrt(floor r)`` (under 0.071 at 0.5). ``DPSVC`` uses 0.5 (its kernel maps' many small
    columns converge slowly; measured in ``benchmarks/results/dpsvc_horizon_floor.md``); the linear
    models 0.
    """
    if dim is not None:
        cap = min(cap, max(AUTO_HORIZON_CONVERGED, 2 * int(dim)))
    if not math.isfinite(noise_to_signal) or noise_to_signal <= 0.0:
        return int(cap)
    r = noise_to_signal
    if laplace:
        t = min((AUTO_HORIZON_SCALE**2 / r) ** 0.4, (AUTO_HORIZON_NOISY / r) ** (2.0 / 3.0))
    else:
        t = min(AUTO_HORIZON_SCALE / math.sqrt(r), AUTO_HORIZON_NOISY / r)
        if floor > 0.0:
            t = max(t, floor / r)
    return int(min(cap, max(AUTO_HORIZON_MIN, round(t))))


def uniform_paper_horizon(sched: Schedule, *, mu: float, smoothness: float, log_noise_constant: float,
                          noise_power: int, initial_gap: float) -> int:
    """``T*`` minimising the paper's bound with a **uniform** budget split, over ``1 <= T' <= len(sched)``.

    The bound (4.6) before the split is optimised is
    ``a_{T,0} E_0 + sum_t a_{T,t} v_t`` with ``v_t`` the per-step noise
    variance term; a uniform split makes ``v_t = K T**noise_power`` (Laplace:
    ``K = d S_1**2 / (n eps)**2`` and power 2, since ``eps_t = eps / T``;
    Gaussian: ``K = (d / 2)(S_2 / n)**2 / P`` and power 1, since ``P_t = P / T``).
    ``log_noise_constant`` is ``log K``. Public constants only.
    """
    horizon = len(sched.alphas)  # equal shares: no step's budget vanishes, so no cap is needed
    A, B, la0 = _profile(sched, mu, smoothness)
    tau = np.arange(1, horizon + 1, dtype=float)
    noise = A + np.logaddexp.accumulate(B) + log_noise_constant + noise_power * np.log(tau)
    scores = np.logaddexp(noise, math.log(initial_gap) + la0)
    return int(np.argmin(scores)) + 1
