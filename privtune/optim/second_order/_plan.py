"""The plan of :func:`~privtune.optim.second_order.dp_second_order` (Gao & Wright 2023), from public quantities only.

What is decided before any value of ``X`` is read: the parameter checks
(``_validate``), the minimal decrease ``MIN_DEC`` and the horizon ``T``, the
per-phase noise multipliers and privacy events, their calibration (the zCDP
split of the full-batch variants; for the mini-batch variants a root search of
one common scale on the subsampled RDP bound, ``_minibatch_scale``), the
mechanisms and the loop's step and stopping rules (``_Rules``), gathered in
``_Plan`` by ``_make_plan``. The parameter constants (``VARIANTS``,
``CALIBRATION_SLACK``) live here too.

The loop that runs the plan, its eigensolvers and its trace are in
:mod:`privtune.optim.second_order._steps`; the public functions and the result
in :mod:`privtune.optim.second_order` (whose docstring states the method, the
privacy argument and the deviations from the paper); the losses and their
constants in :mod:`privtune.optim.second_order._nonconvex`. The subsampled RDP bound is
[WBK19] of :mod:`privtune.optim.second_order`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant, compose_events
from privtune.accounting.events import (
    ComposedEvent,
    GaussianEvent,
    PrivacyEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    SparseVectorEvent,
)
from privtune.accounting.rdp_math import DEFAULT_ORDERS
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms.gaussian import Gaussian, calibrate_rdp_gaussian
from privtune.optim._sums import check_sum_terms, clip_norm_bound, rounding_factor
from privtune.optim.second_order._nonconvex import (
    LossConstants,
    NonconvexLoss,
    curvature_roots,
    get_nonconvex_loss,
    trial_count,
)
from privtune.utils._validation import check_choice as _choice
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

VARIANTS = ("opt", "opt-ls", "opt-b", "2opt", "2opt-ls", "2opt-b")
_EIGENSOLVERS = ("dense", "lanczos")
_HESSIAN_SENSITIVITIES = ("paper", "rank_one")
_CLIPS = ("rows", "raise")
#: The plan is calibrated at ``epsilon * (1 - CALIBRATION_SLACK)`` so that float rounding never pushes the
#: accountant's total above ``epsilon``.
CALIBRATION_SLACK = 1e-3
#: RDP orders of the mini-batch calibration's root search: a true subset of the accountant's default grid (which
#: can therefore only report a smaller epsilon), every third order up to 8, the integers 9-63, then 80 to 1024.
#: The orders above 128 matter for a small epsilon only: log(1/delta) / (order - 1) floors the epsilon an order
#: can certify, and with orders up to 128 no noise level reached epsilon = 0.05 at delta = 1e-6 (the root search
#: failed, a refusal before the charge); up to 1024 it does (measured: the mini-batch solvers from 0.05).
_CALIBRATION_ORDERS = tuple(float(o) for i, o in enumerate(DEFAULT_ORDERS)
                            if (o <= 8.0 and i % 3 == 0) or o == 8.0 or (8.0 < o <= 64.0 and float(o).is_integer())
                            or o in (80.0, 96.0, 128.0, 192.0, 256.0, 512.0, 1024.0))
#: Relative precision of the mini-batch calibration's scale (the result errs on the side of more noise).
_CALIBRATION_RTOL = 1e-3


# ============================================================================= plan (public quantities only)
@dataclass(frozen=True)
class _Rules:
    """Step and stopping rules of the loop (public constants; internal)."""

    eps_g: float
    eps_H: float
    lanczos: bool
    G: float
    M: float
    B: float
    B_g: float
    line_search: bool
    c_g: float = 0.6
    c_H: float = 0.25
    t2: float = 1.0
    b_g: float = 20.0
    b_H: float = 20.0
    beta_g: float = 0.6
    beta_H: float = 0.5
    i_max_g: int = 1
    i_max_H: int = 1
    c1: float = 0.1

    @property
    def gamma_bar_g(self) -> float:
        """``2 (1 - c1 - c_g) / G`` (Lemma 6): every step up to it satisfies (SD1)."""
        return 2.0 * (1.0 - self.c1 - self.c_g) / self.G


class _Plan:
    """Everything decided from public quantities before the data is read (internal)."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _validate(n: int, d: int, p: dict[str, Any], owner: str) -> dict[str, Any]:
    """Check every parameter (public) and return the normalised values."""
    v: dict[str, Any] = {}
    v["variant"] = _choice(p["variant"], "variant", VARIANTS, owner)
    v["two_phase"] = v["variant"].startswith("2")
    v["line_search"] = v["variant"].endswith("-ls")
    v["minibatch"] = v["variant"].endswith("-b")
    v["epsilon"] = check_epsilon(p["epsilon"], owner=owner)
    v["delta"] = check_delta(p["delta"], owner=owner, allow_zero=False)
    v["tolerance"] = check_real(p["tolerance"], "tolerance", low=0.0, owner=owner)
    ht = p["hessian_tolerance"]
    v["hessian_tolerance"] = None if ht is None else check_real(ht, "hessian_tolerance", low=0.0, owner=owner)
    v["data_norm"] = check_real(p["data_norm"], "data_norm", low=0.0, owner=owner)
    v["l2"] = check_real(p["l2"], "l2", low=0.0, closed="left", owner=owner)
    v["loss"] = get_nonconvex_loss(p["loss"], v["data_norm"], v["l2"], owner)
    if v["minibatch"]:
        bs = p["batch_size"]
        v["m"] = max(1, n // 50) if bs is None else check_integer(bs, "batch_size", low=1, high=n, owner=owner)
    else:
        if p["batch_size"] is not None:
            raise InvalidParameterError(
                f"The 'batch_size' parameter of {owner} must be None for variant={v['variant']!r} (full batch); "
                "mini-batches are the '-b' variants ('opt-b', '2opt-b').")
        v["m"] = n
    v["eigensolver"] = _choice(p["eigensolver"], "eigensolver", _EIGENSOLVERS, owner)
    v["max_iter"] = check_integer(p["max_iter"], "max_iter", low=1, high=1_000_000, owner=owner)
    gap = p["initial_gap"]
    if gap is None:
        if v["loss"].name != "sigmoid":
            raise InvalidParameterError(
                f"The 'initial_gap' parameter of {owner} must be a float for loss={v['loss'].name!r}: the privatised "
                "gap releases f(w0) with sensitivity B/n, and this loss is unbounded (B = inf), so its "
                "sensitivity is unavailable. Declare a data-independent gap (default 0.5).")
        if v["minibatch"]:
            raise InvalidParameterError(
                f"The 'initial_gap' parameter of {owner} must be a float for the mini-batch variants: their "
                "calibrated RDP curve depends on the horizon T, so a horizon chosen from a released f(w0) could not "
                "be checked against the accountant before the data is read.")
        v["gap_fraction"] = check_real(p["gap_fraction"], "gap_fraction", low=0.0, high=1.0, owner=owner)
    else:
        v["gap_fraction"] = 0.0
    v["initial_gap"] = None if gap is None else check_real(gap, "initial_gap", low=0.0, owner=owner)
    w0 = p["w0"]
    if w0 is None:
        v["w0"] = np.zeros(d)
    else:
        try:
            arr = np.array(w0, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.shape != (d,) or not np.all(np.isfinite(arr)):
            raise InvalidParameterError(
                f"The 'w0' parameter of {owner} must be None or a finite 1-D array of length n_features={d}.")
        v["w0"] = arr
    c1 = v["c1"] = check_real(p["c1"], "c1", low=0.0, high=0.5, owner=owner)
    c = v["c"] = check_real(p["c"], "c", low=0.0, high=1.0 / 3.0, owner=owner)
    c2 = v["c2"] = check_real(p["c2"], "c2", low=0.0, high=1.0 / 3.0, owner=owner)
    if not c + c2 < 1.0 / 3.0:
        raise InvalidParameterError(
            f"The 'c' and 'c2' parameters of {owner} must satisfy c + c2 < 1/3 (Lemma 2). Got c={c!r}, c2={c2!r}.")
    v["c_g"] = check_real(p["c_g"], "c_g", low=0.0, high=1.0 - c1, owner=owner)
    v["c_H"] = check_real(p["c_H"], "c_H", low=0.0, high=1.0, owner=owner)
    v["t1"], v["t2"] = curvature_roots(c, v["c_H"], c2, owner)
    v["b_g"] = check_real(p["b_g"], "b_g", low=1.0, owner=owner)
    v["b_H"] = check_real(p["b_H"], "b_H", low=1.0, owner=owner)
    v["beta_g"] = check_real(p["beta_g"], "beta_g", low=0.0, high=1.0, owner=owner)
    ratio = v["t1"] / v["t2"]
    v["beta_H"] = check_real(p["beta_H"], "beta_H", low=ratio, high=1.0, owner=owner)
    v["phase_one_fraction"] = check_real(p["phase_one_fraction"], "phase_one_fraction", low=0.0, high=1.0,
                                         owner=owner)
    split = p["budget_split"]
    try:
        parts = tuple(float(s) for s in split)
    except TypeError:
        parts = ()
    if len(parts) != 3 or not all(math.isfinite(s) and s > 0 for s in parts):
        raise InvalidParameterError(
            f"The 'budget_split' parameter of {owner} must be three positive floats (gradient, Hessian, line "
            f"search weights of each iteration's budget). Got {split!r} instead.")
    v["budget_split"] = parts
    v["hessian_sensitivity"] = _choice(p["hessian_sensitivity"], "hessian_sensitivity", _HESSIAN_SENSITIVITIES,
                                       owner)
    v["clip"] = _choice(p["clip"], "clip", _CLIPS, owner)
    acc = p["accountant"]
    if acc is not None and not isinstance(acc, Accountant):
        raise InvalidParameterError(
            f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. "
            f"Got {type(acc).__name__} instead.")
    if not isinstance(p["phase"], str):
        raise InvalidParameterError(f"The 'phase' parameter of {owner} must be a str. Got {p['phase']!r} instead.")
    return v


def _rounding_factors(consts: LossConstants, n: int, m: int, d: int, sens_H: float) -> dict[str, float]:
    """The factors ``psi`` (:func:`privtune.optim._sums.rounding_factor`) of the gradient, Hessian and value releases.

    Each release is a mean of per-row terms computed in float64 (a BLAS
    product per block of 4 096 rows, the blocks added with ``math.fsum``:
    ``_DataOracle``); its mechanism is built with the exact sensitivity times
    ``psi``, so that two neighbouring data sets' *computed* means differ by at
    most the sensitivity the noise is calibrated on. The per-row bounds used:
    a stored row's exact norm is at most ``clip_norm_bound(R, d) (1 + 2**-52)``
    (:func:`privtune.optim._losses.clip_rows` in float64: the norm check's
    rounding, then one rounding per entry); the computed ``|l'|`` is at most
    ``B_g / R`` and ``|l''|`` at most ``B_H / R**2`` times ``1 + 2**-49``
    (a few roundings, and ``sqrt(3) / 18`` rounded to a float); a value
    ``l`` lies in ``[0, B]``. The Hessian's terms pass through two more
    roundings (the product by ``x_ik`` and the symmetrisation); its ``psi``
    is relative to ``sens_H`` (which carries ``sqrt(d)`` with
    ``hessian_sensitivity="paper"``, in which case it is usually 1). Public
    quantities only.
    """
    R = consts.data_norm
    row = clip_norm_bound(R, d) * (1.0 + 2.0**-52)
    slope = (consts.B_g / R) * (1.0 + 2.0**-49)
    curvature = (consts.B_H / (R * R)) * (1.0 + 2.0**-49)
    out = {
        "gradient": rounding_factor(terms=m, bound=consts.B_g, divisor=float(m), factor=2.0, coordinates=d,
                                    term_bound=slope * row * (1.0 + 2.0**-52)),
        "hessian": rounding_factor(terms=m, bound=consts.B_H, divisor=float(m), factor=2.0,
                                   coordinates=d * (d + 1) // 2, term_bound=curvature * row * row * (1.0 + 2.0**-50),
                                   depth=2, exact_sensitivity=sens_H),
        "value": 1.0,
    }
    if math.isfinite(consts.B):
        out["value"] = rounding_factor(terms=n, bound=consts.B, divisor=float(n), factor=1.0)
    return out


def _min_decrease(v: dict[str, Any], consts: LossConstants, eps_g: float, eps_H_step: float) -> float:
    G, M = consts.G, consts.M
    if v["line_search"]:  # eq. (17), as printed (spec section 5 item 13: eps_H cubed)
        return min((1.0 - v["c1"] - v["c_g"]) * v["c_g"] * eps_g**2 / G,
                   0.25 * v["c_H"] * v["t2"] ** 2 * eps_H_step**3 / M**2)
    return min((1.0 - 2.0 * v["c1"]) / (2.0 * G) * eps_g**2,  # eq. (10)
               2.0 * (1.0 / 3.0 - v["c2"] - v["c"]) * eps_H_step**3 / M**2)


def _horizon(gap: float, min_dec: float, cap: int) -> tuple[int, float]:
    """``T = ceil(gap / MIN_DEC)`` clamped to ``[1, cap]``, and the uncapped ratio (``gap = f(w0) - f_low``)."""
    raw = gap / min_dec
    if not raw > 0.0:
        return 1, 0.0
    t = math.ceil(raw) if raw < 1e15 else cap
    return int(min(cap, max(1, t))), raw


def _kinds(line_search: bool) -> tuple[str, ...]:
    return ("gradient", "hessian", "line_search") if line_search else ("gradient", "hessian")


def _base_multipliers(v: dict[str, Any], phases: list[tuple[int, float]]) -> list[dict[str, float]]:
    """Per phase and mechanism, ``sigma / s`` where ``s = 1 / sqrt(2 rho_main)`` (zCDP split of eq. 8 / 14).

    Phase ``p`` gets ``fraction_p rho_main`` spread over ``T_p`` iterations; each
    iteration's share is split between its mechanisms in proportion to
    ``budget_split`` (equal weights give ``sigma_g = sigma_H = lambda``, eqs. 8 and 14).
    """
    kinds = _kinds(v["line_search"])
    weights = dict(zip(("gradient", "hessian", "line_search"), v["budget_split"], strict=True))
    total_w = math.fsum(weights[k] for k in kinds)
    return [{k: math.sqrt(total_w * T / (frac * weights[k])) for k in kinds} for T, frac in phases]


def _phase_events(v: dict[str, Any], n: int, phases: list[tuple[int, float]],
                  mults: list[dict[str, float]]) -> list[PrivacyEvent]:
    out: list[PrivacyEvent] = []
    for i, ((T, _frac), mult) in enumerate(zip(phases, mults, strict=True)):
        parts: list[PrivacyEvent] = [
            GaussianEvent(noise_multiplier=mult["gradient"], vector=True, label="noisy gradient"),
            GaussianEvent(noise_multiplier=mult["hessian"], vector=True, label="noisy symmetric Hessian")]
        if v["line_search"]:
            parts.append(SparseVectorEvent(epsilon=1.0 / mult["line_search"], label="SVT line search"))
        step: PrivacyEvent = ComposedEvent(events=tuple(parts))
        if v["minibatch"]:
            step = SampledWithoutReplacementEvent(event=step, dataset_size=n, sample_size=v["m"])
        label = (f"Gao & Wright 2023 {v['variant'].upper()} phase {i + 1}: {T} iterations paid in full "
                 f"(batch {v['m']} of {n})")
        out.append(SelfComposedEvent(event=step, count=T, label=label))
    return out


@functools.lru_cache(maxsize=256)
def _minibatch_scale(key: tuple, epsilon: float, delta: float, n: int, m: int) -> float:
    """Smallest common scale ``s`` whose mini-batch plan meets ``(epsilon, delta)`` on the calibration orders.

    A root search on the RDP bound of ``dp_accounting`` (sampling without
    replacement, replace-one; Wang, Balle & Kasiviswanathan 2019) over a subset
    of the accountant's orders: the accountant, which minimises over more
    orders, can only report a smaller epsilon. ``key`` encodes the phases and the
    split (hashable).
    """
    v_line_search, phases, split = key
    v = {"line_search": v_line_search, "minibatch": True, "m": m, "variant": "calibration",
         "budget_split": split}
    base = _base_multipliers(v, list(phases))

    def eps_of(s: float) -> float:
        mults = [{k: b * s for k, b in mb.items()} for mb in base]
        events = _phase_events(v, n, list(phases), mults)
        return compose_events(events, delta=delta, method="rdp", orders=_CALIBRATION_ORDERS).epsilon

    return _decreasing_root(eps_of, epsilon, owner="the mini-batch calibration")


def _decreasing_root(eps_of: Callable[[float], float], target: float, *, owner: str) -> float:
    """Smallest ``s`` (within a relative ``_CALIBRATION_RTOL``) with ``eps_of(s) <= target``; ``eps_of`` decreasing.

    False position (Illinois) on ``log eps`` against ``log s`` from a bracket
    found by doubling; always returns the end of the bracket that meets the
    target, so the answer is never too little noise.
    """
    lo, hi = None, 1.0
    f_hi = math.log(eps_of(hi)) - math.log(target)
    guess = math.exp(f_hi)  # eps roughly proportional to 1 / s
    if f_hi > 0:
        lo, f_lo = hi, f_hi
        hi = guess * 1.05
        while True:
            f_hi = math.log(eps_of(hi)) - math.log(target)
            if f_hi <= 0:
                break
            lo, f_lo, hi = hi, f_hi, 2.0 * hi
            if hi > 1e12:
                raise InvalidParameterError(f"{owner}: no noise level meets epsilon={target!r}.")
    else:
        lo = guess / 1.05 if guess < 1.0 else 0.5
        while True:
            f_lo = math.log(eps_of(lo)) - math.log(target)
            if f_lo > 0:
                break
            hi, f_hi, lo = lo, f_lo, 0.5 * lo
            if lo < 1e-12:
                return hi
    side = 0
    for _ in range(100):
        if hi - lo <= _CALIBRATION_RTOL * hi:
            break
        x_lo, x_hi = math.log(lo), math.log(hi)
        x = x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo)
        x = min(max(x, x_lo + 1e-3 * (x_hi - x_lo)), x_hi - 1e-3 * (x_hi - x_lo))
        mid = math.exp(x)
        f_mid = math.log(eps_of(mid)) - math.log(target)
        if f_mid > 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo *= 0.5
            side = 1
    return hi


def _make_plan(n: int, d: int, v: dict[str, Any], *, gap: float | None, owner: str) -> _Plan:
    """The whole plan from public quantities (``gap``: the declared or the privatised initial gap)."""
    loss: NonconvexLoss = v["loss"]
    consts = loss.constants()
    alpha = v["tolerance"]
    target_H = v["hessian_tolerance"] if v["hessian_tolerance"] is not None else math.sqrt(consts.M * alpha)
    eps_g = alpha / (1.0 + v["c1"])
    eps_H = target_H / (1.0 + v["c"])
    lanczos = v["eigensolver"] == "lanczos"
    eps_H_step = 0.5 * eps_H if lanczos else eps_H  # App. C: the analysis holds with eps_H / 2
    min_dec = _min_decrease(v, consts, eps_g, eps_H_step)
    gap_value = v["initial_gap"] if gap is None else gap
    T, raw = _horizon(gap_value, min_dec, v["max_iter"])
    if v["two_phase"]:
        T1 = max(1, math.isqrt(T))
        phases = [(T1, v["phase_one_fraction"]), (T, 1.0 - v["phase_one_fraction"])]
    else:
        T1 = None
        phases = [(T, 1.0)]
    base = _base_multipliers(v, phases)
    m = v["m"]
    if v["minibatch"]:
        key = (v["line_search"], tuple(phases), v["budget_split"])
        scale = _minibatch_scale(key, v["epsilon"] * (1.0 - CALIBRATION_SLACK), v["delta"], n, m)
        sigma_f = None
    else:
        nm_total = calibrate_rdp_gaussian(epsilon=v["epsilon"] * (1.0 - CALIBRATION_SLACK), delta=v["delta"])
        rho = 1.0 / (2.0 * nm_total * nm_total)
        rho_f = v["gap_fraction"] * rho
        scale = 1.0 / math.sqrt(2.0 * (rho - rho_f))
        sigma_f = 1.0 / math.sqrt(2.0 * rho_f) if rho_f > 0 else None
    mults = [{k: b * scale for k, b in mb.items()} for mb in base]
    phase_events = _phase_events(v, n, phases, mults)
    f0_event = None if sigma_f is None else GaussianEvent(noise_multiplier=sigma_f, label="noisy f(w0) for T")
    events = ([f0_event] if f0_event is not None else []) + phase_events
    total = ComposedEvent(events=tuple(events),
                          label=f"Gao & Wright 2023 {v['variant'].upper()} ({loss.name}), worst case, T={T}"
                                + (f", T1={T1}" if T1 is not None else ""))
    # sensitivities (replace-one): mean over the batch of m rows (m = n for full batch)
    sens_g = 2.0 * consts.B_g / m
    sens_H = 2.0 * consts.B_H * (math.sqrt(d) if v["hessian_sensitivity"] == "paper" else 1.0) / m
    check_sum_terms(n, owner)
    psi = _rounding_factors(consts, n, m, d, sens_H)  # the mechanisms pay for the sums' float rounding
    source = v["source"]
    mechs = []
    for mult in mults:
        g_mech = Gaussian.from_noise_multiplier(mult["gradient"], sensitivity=sens_g * psi["gradient"],
                                                random_state=source)
        h_mech = Gaussian.from_noise_multiplier(mult["hessian"], sensitivity=sens_H * psi["hessian"],
                                                random_state=source)
        g_mech.grid_spacing(d)  # the exact grids must exist: refuse now, before anything is spent
        h_mech.grid_spacing(d * (d + 1) // 2)
        mechs.append((g_mech, h_mech))
    f0_mech = None
    if sigma_f is not None:
        f0_mech = Gaussian.from_noise_multiplier(sigma_f, sensitivity=consts.B / n * psi["value"],
                                                 random_state=source)
        f0_mech.grid_spacing(1)
    rules = _Rules(eps_g=eps_g, eps_H=eps_H, lanczos=lanczos, G=consts.G, M=consts.M, B=consts.B, B_g=consts.B_g,
                   line_search=v["line_search"], c_g=v["c_g"], c_H=v["c_H"], t2=v["t2"], b_g=v["b_g"], b_H=v["b_H"],
                   beta_g=v["beta_g"], beta_H=v["beta_H"], i_max_g=trial_count(v["b_g"], v["beta_g"]),
                   i_max_H=trial_count(v["b_H"], v["beta_H"]), c1=v["c1"])
    return _Plan(v=v, n=n, d=d, m=m, consts=consts, loss=loss, alpha=alpha, target_H=target_H, rules=rules,
                 min_dec=min_dec, T=T, T1=T1, raw_horizon=raw, gap=gap_value, phases=phases, multipliers=mults,
                 events=tuple(events), phase_events=tuple(phase_events), f0_event=f0_event, total=total,
                 sens_g=sens_g, sens_H=sens_H, mechs=mechs, f0_mech=f0_mech, sigma_f=sigma_f, owner=owner)
