r"""Private second-order methods for smooth non-convex ERM (Gao & Wright 2023): OPT, OPT-LS, mini-batch, two-phase.

:func:`dp_second_order` looks for an approximate second-order necessary point
(2NS) of

.. math:: f(w) = \frac1n \sum_{i=1}^n l(y_i x_i^\top w) + r(w), \qquad \|x_i\|_2 \le R,

with the losses of :mod:`privtune.optim._nonconvex` (the sigmoid loss with
``(lam/2)||w||^2``, or the log-loss with the non-convex Tukey regulariser). Each
iteration releases a noisy gradient; while its norm is above ``eps_g`` it takes a
gradient step (short step ``1/G``, or a private backtracking line search run as
AboveThreshold); otherwise it releases a noisy symmetric Hessian, and steps along
its smallest eigenvector (sign chosen with the *noisy* gradient) if the smallest
eigenvalue is below ``-eps_H``, or stops with a certified point.

Variants (``variant=``): ``"opt"`` (Alg. 1, short steps), ``"opt-ls"`` (Alg. 2-3,
SVT line searches), ``"opt-b"`` (mini-batches of ``m`` rows drawn without
replacement, short steps), and the two-phase ``"2opt"``, ``"2opt-ls"``,
``"2opt-b"`` (a first phase of ``T1 = floor(sqrt(T))`` iterations on 75 % of the
budget; if it does not certify a point, the full ``T`` iterations on the rest,
warm-started).

House rules followed here (as in :mod:`privtune.optim.accelerated`): every
privacy event is built from public quantities before the data is touched; the
accountant is asked (``check``) while only ``X.shape`` has been read; then the
data is validated and clipped; then the whole worst-case event is charged
(``spend``) once, before the first data access that it pays for. Noise is exact
(discrete Gaussian on a grid, discrete Laplace for the sparse vector) and comes
from a cryptographically secure source unless ``random_state`` is given.

References
----------
.. [GW23] C. Gao and S. J. Wright, "Differentially Private Optimization for
   Smooth Nonconvex ERM", arXiv:2302.04972, 2023.
.. [CDHS18] Y. Carmon, J. C. Duchi, O. Hinder and A. Sidford, "Accelerated
   Methods for Nonconvex Optimization", SIAM J. Optim. 28(2), 2018 (Lanczos).
.. [WBK19] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Renyi
   Differential Privacy and Analytical Moments Accountant", AISTATS 2019.
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
   Privacy", 2014 (AboveThreshold).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
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
from privtune.mechanisms.sparse_vector import SparseVector
from privtune.optim._losses import clip_rows
from privtune.optim._nonconvex import (
    LossConstants,
    NonconvexLoss,
    curvature_roots,
    get_nonconvex_loss,
    lanczos_iterations,
    lanczos_smallest,
    pack_upper,
    trial_count,
    unpack_symmetric,
)
from privtune.optim.accelerated import _public_shape, _read_data
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = ["dp_second_order", "second_order_privacy_event", "SecondOrderResult", "SecondOrderHistory",
           "VARIANTS"]

VARIANTS = ("opt", "opt-ls", "opt-b", "2opt", "2opt-ls", "2opt-b")
_EIGENSOLVERS = ("dense", "lanczos")
_HESSIAN_SENSITIVITIES = ("paper", "rank_one")
_CLIPS = ("rows", "raise")
#: The plan is calibrated at ``epsilon * (1 - CALIBRATION_SLACK)`` so that float rounding never pushes the
#: accountant's total above ``epsilon``.
CALIBRATION_SLACK = 1e-3
#: ``kappa`` of the privatised horizon ``T = ceil((f~0 + kappa sigma_f - f_low) / MIN_DEC)`` (spec section 5 item 1).
GAP_MARGIN = 3.0
#: Failure probability ``delta_L`` of one Lanczos call (Carmon et al. 2018, Lemma C.1): a utility, not a privacy, knob.
LANCZOS_FAILURE = 1e-3
#: Line-search queries are clipped to ``+- 2**48`` grid steps of the sparse vector (clipping keeps the sensitivity).
_QUERY_LIMIT_STEPS = 2.0**48
#: RDP orders of the mini-batch calibration's root search: a true subset of the accountant's default grid (which
#: can therefore only report a smaller epsilon), every third order up to 8, the integers 9-63, then 80, 96, 128.
_CALIBRATION_ORDERS = tuple(float(o) for i, o in enumerate(DEFAULT_ORDERS)
                            if (o <= 8.0 and i % 3 == 0) or o == 8.0 or (8.0 < o <= 64.0 and float(o).is_integer())
                            or o in (80.0, 96.0, 128.0))
#: Relative precision of the mini-batch calibration's scale (the result errs on the side of more noise).
_CALIBRATION_RTOL = 1e-3


# ============================================================================= result
def _readonly(a: Any, dtype: Any = np.float64) -> np.ndarray:
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class SecondOrderHistory:
    """Per-iteration record of **released** quantities only (all arrays of length ``n_iter``).

    Attributes
    ----------
    phase : ndarray of int
        1 or 2 (two-phase variants), else 1.
    kind : ndarray of str
        ``"gradient"`` (gradient step), ``"curvature"`` (negative-curvature step) or
        ``"stop"`` (certified: the loop ended here).
    gradient_norm : ndarray of float
        ``||g~_k||``, the norm of the released noisy gradient (regulariser included).
    lambda_min : ndarray of float
        The smallest eigenvalue (Ritz value with Lanczos) of the released noisy
        Hessian; NaN when no Hessian was released at that iteration.
    step_size : ndarray of float
        The step size taken (NaN at ``"stop"``): ``1/G`` or ``2|lam~|/M`` for short
        steps, the sparse vector's choice (or the fallback) for line searches.
    line_search_trial : ndarray of int
        Index of the accepted trial of the line search, ``-1`` when every trial
        was refused and the fallback step was taken, ``-2`` without line search.
    """

    phase: np.ndarray
    kind: np.ndarray
    gradient_norm: np.ndarray
    lambda_min: np.ndarray
    step_size: np.ndarray
    line_search_trial: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "phase", _readonly(self.phase, np.int64))
        object.__setattr__(self, "kind", _readonly(self.kind, "<U9"))
        for name in ("gradient_norm", "lambda_min", "step_size"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "line_search_trial", _readonly(self.line_search_trial, np.int64))


@dataclass(frozen=True)
class SecondOrderResult:
    """Output of :func:`dp_second_order`. Everything in it is public or a function of released values.

    No quantity computed on the data without noise (loss values, exact
    gradients or Hessians, the line-search queries, counts of clipped rows,
    batch contents) is stored, so the whole object may be published.

    Attributes
    ----------
    x : ndarray of shape (n_features,)
        The last iterate (the certified point when ``certified``).
    variant, loss, eigensolver : str
    certified : bool
        True when the loop stopped at a point whose noisy gradient norm is at
        most ``gradient_threshold`` and whose noisy smallest Hessian eigenvalue is
        at least ``-curvature_threshold`` (with Lanczos: above
        ``-curvature_threshold / 2``). On the noisy quantities, not a guarantee on
        ``f``: see Notes of :func:`dp_second_order`.
    stopped_in_phase : int or None
        The phase (1 or 2) in which the point was certified; None if not certified.
    n_iter, n_gradient_steps, n_curvature_steps, n_hessian_evaluations, n_line_search_fallbacks : int
    horizon : int
        ``T`` (fixed before the loop; the number of iterations paid for in the last phase).
    phase_one_horizon : int or None
        ``T1 = floor(sqrt(T))`` for the two-phase variants.
    tolerance : float
        ``alpha``: the target is an ``(alpha, hessian_tolerance)``-2NS.
    hessian_tolerance : float
        ``sqrt(M alpha)`` unless given.
    gradient_threshold, curvature_threshold : float
        ``eps_g = alpha / (1 + c1)`` and ``eps_H = hessian_tolerance / (1 + c)`` used by the loop.
    min_decrease : float
        ``MIN_DEC`` of eq. (10) (short steps) or (17) (line search).
    noise_multipliers : tuple of dict
        Per phase: ``{"gradient": sigma_g, "hessian": sigma_H}`` and, with line
        search, ``"line_search"``: ``lambda`` (each call is ``1/lambda``-DP).
    noise_scales : tuple of dict
        Per phase: the standard deviation of each coordinate of the gradient
        noise and of each entry of the Hessian noise.
    sensitivities : dict
        ``"gradient"``: ``2 B_g / n`` (``/ m`` for mini-batches), ``"hessian"``:
        ``2 B_H sqrt(d) / n`` (or ``2 B_H / n`` with ``hessian_sensitivity="rank_one"``),
        ``"initial_value"``: ``B / n`` when the initial gap was privatised.
    initial_gap : float
        The gap ``f(w0) - f_low`` the horizon was planned from (declared, or
        privatised: ``f~0 + kappa sigma_f - f_low``).
    gap_noise_multiplier : float or None
        ``sigma_f`` when the initial value was released; None for a declared gap.
    constants : LossConstants
        ``B, B_g, B_H, G, M, f_low`` (public, from ``data_norm`` and ``l2``).
    batch_size, n_samples, n_features : int
    events : tuple of PrivacyEvent
        The initial-value release (if any), then one event per phase (worst case:
        ``T_p`` iterations each releasing a gradient, a Hessian and, with line
        search, one sparse-vector run).
    privacy_event : PrivacyEvent
        The composition of ``events`` (what was charged).
    epsilon, delta : float
        The accountant's bound on ``privacy_event`` (RDP, at ``delta``); ``epsilon``
        is at most the budget.
    seeded : bool
        True when the noise came from a seeded generator (not for release).
    history : SecondOrderHistory
    extra : dict
        Public diagnostics: the line-search constants ``t1, t2, i_max_g, i_max_H``,
        the budget split, the uncapped horizon.
    """

    x: np.ndarray
    variant: str
    loss: str
    eigensolver: str
    certified: bool
    stopped_in_phase: int | None
    n_iter: int
    n_gradient_steps: int
    n_curvature_steps: int
    n_hessian_evaluations: int
    n_line_search_fallbacks: int
    horizon: int
    phase_one_horizon: int | None
    tolerance: float
    hessian_tolerance: float
    gradient_threshold: float
    curvature_threshold: float
    min_decrease: float
    noise_multipliers: tuple[dict[str, float], ...]
    noise_scales: tuple[dict[str, float], ...]
    sensitivities: dict[str, float]
    initial_gap: float
    gap_noise_multiplier: float | None
    constants: LossConstants
    batch_size: int
    n_samples: int
    n_features: int
    events: tuple[PrivacyEvent, ...]
    privacy_event: PrivacyEvent
    epsilon: float
    delta: float
    seeded: bool
    history: SecondOrderHistory
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _readonly(self.x))
        object.__setattr__(self, "events", tuple(self.events))

    def __repr__(self) -> str:
        return (f"SecondOrderResult(variant={self.variant!r}, loss={self.loss!r}, certified={self.certified}, "
                f"n_iter={self.n_iter}, horizon={self.horizon}, epsilon={self.epsilon!r}, delta={self.delta!r}, "
                f"seeded={self.seeded})")


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


@dataclass(frozen=True)
class _PhasePlan:
    horizon: int
    fraction: float
    multipliers: dict[str, float]
    event: PrivacyEvent


class _Plan:
    """Everything decided from public quantities before the data is read (internal)."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _choice(value: Any, name: str, choices: tuple[str, ...], owner: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be one of {list(choices)}. Got {value!r} instead.")
    return value


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
    source = v["source"]
    mechs = []
    for mult in mults:
        g_mech = Gaussian.from_noise_multiplier(mult["gradient"], sensitivity=sens_g, random_state=source)
        h_mech = Gaussian.from_noise_multiplier(mult["hessian"], sensitivity=sens_H, random_state=source)
        g_mech.grid_spacing(d)  # the exact grids must exist: refuse now, before anything is spent
        h_mech.grid_spacing(d * (d + 1) // 2)
        mechs.append((g_mech, h_mech))
    f0_mech = None
    if sigma_f is not None:
        f0_mech = Gaussian.from_noise_multiplier(sigma_f, sensitivity=consts.B / n, random_state=source)
        f0_mech.grid_spacing(1)
    rules = _Rules(eps_g=eps_g, eps_H=eps_H, lanczos=lanczos, G=consts.G, M=consts.M, B=consts.B, B_g=consts.B_g,
                   line_search=v["line_search"], c_g=v["c_g"], c_H=v["c_H"], t2=v["t2"], b_g=v["b_g"], b_H=v["b_H"],
                   beta_g=v["beta_g"], beta_H=v["beta_H"], i_max_g=trial_count(v["b_g"], v["beta_g"]),
                   i_max_H=trial_count(v["b_H"], v["beta_H"]), c1=v["c1"])
    return _Plan(v=v, n=n, d=d, m=m, consts=consts, loss=loss, alpha=alpha, target_H=target_H, rules=rules,
                 min_dec=min_dec, T=T, T1=T1, raw_horizon=raw, gap=gap_value, phases=phases, multipliers=mults,
                 events=tuple(events), phase_events=tuple(phase_events), f0_event=f0_event, total=total,
                 sens_g=sens_g, sens_H=sens_H, mechs=mechs, f0_mech=f0_mech, sigma_f=sigma_f, owner=owner)


# ============================================================================= the loop
class _DataOracle:
    """Data access of the loop (internal): values, gradients, Hessians of the data term on clipped rows.

    The full-batch margins ``y_i x_i^T w`` of the last point are kept, so that a line search at the point
    where the gradient was just computed does not recompute them.
    """

    def __init__(self, loss: NonconvexLoss, U: np.ndarray, z: np.ndarray) -> None:
        self.loss, self.U, self.z = loss, np.ascontiguousarray(U), z
        self._w: np.ndarray | None = None
        self._m: np.ndarray | None = None

    def _margins(self, w: np.ndarray) -> np.ndarray:
        if self._w is None or not np.array_equal(self._w, w):
            self._w, self._m = w.copy(), self.z * (self.U @ w)
        assert self._m is not None
        return self._m

    def gradient(self, w: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        if rows is None:
            coef = self.loss.margin_first(self._margins(w)) * self.z
            return self.U.T @ coef / self.U.shape[0]
        return self.loss.data_gradient(w, self.U[rows], self.z[rows])

    def hessian(self, w: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        if rows is None:
            return self.loss.data_hessian(w, self.U, self.z)
        return self.loss.data_hessian(w, self.U[rows], self.z[rows])

    def value(self, w: np.ndarray) -> float:
        return float(np.mean(self.loss.margin_value(self._margins(w))))

    def ray(self, w: np.ndarray, direction: np.ndarray) -> Callable[[float], float]:
        """``gamma -> mean loss at w + gamma direction`` (the margins along the ray are affine in gamma)."""
        m0 = self._margins(w)
        m1 = self.z * (self.U @ direction)
        return lambda gamma: float(np.mean(self.loss.margin_value(m0 + gamma * m1)))


class _Releases:
    """The noisy releases of one phase (internal): exact discrete Gaussian noise, SVT line searches."""

    def __init__(self, grad_mech: Gaussian, hess_mech: Gaussian, svt_lambda: float | None, source: Any) -> None:
        self.grad_mech, self.hess_mech, self.svt_lambda, self.source = grad_mech, hess_mech, svt_lambda, source

    def gradient(self, g: np.ndarray) -> np.ndarray:
        return np.asarray(self.grad_mech.randomise(g), dtype=float)

    def hessian(self, H: np.ndarray) -> np.ndarray:
        """``H + E``: ``E`` symmetric, i.i.d. entries on and above the diagonal (same variance on it)."""
        d = H.shape[0]
        return unpack_symmetric(np.asarray(self.hess_mech.randomise(pack_upper(H)), dtype=float), d)

    def line_search(self, query: Callable[[float], float], *, sensitivity: float, gamma_init: float,
                    gamma_bar: float, beta: float, trials: int) -> tuple[float, int]:
        assert self.svt_lambda is not None
        return _line_search(query, sensitivity=sensitivity, gamma_init=gamma_init, gamma_bar=gamma_bar, beta=beta,
                            trials=trials, epsilon=1.0 / self.svt_lambda, source=self.source)


def _line_search(query: Callable[[float], float], *, sensitivity: float, gamma_init: float, gamma_bar: float,
                 beta: float, trials: int, epsilon: float, source: Any) -> tuple[float, int]:
    """DP-LINESEARCH (Alg. 2): AboveThreshold at threshold 0 over the trial steps ``gamma_init beta^j``.

    One threshold draw ``Lap(2 Delta / epsilon)`` per call and fresh
    ``Lap(4 Delta / epsilon)`` per trial (:class:`~privtune.mechanisms.SparseVector`);
    returns ``(step, j)`` for the first trial answered "above", or
    ``(gamma_bar, -1)`` when every one of the ``trials`` is refused (the fallback,
    spec section 5 item 4). Queries are clipped to a public range of the grid,
    which cannot increase their sensitivity. The whole call is
    ``epsilon``-DP whatever its outcome.
    """
    svt = SparseVector(epsilon=epsilon, sensitivity=sensitivity, threshold=0.0, random_state=source)
    limit = _QUERY_LIMIT_STEPS * svt.grid_spacing
    session = svt.start()
    for j in range(trials):
        gamma = gamma_init * beta**j
        value = float(query(gamma))
        value = min(max(value, -limit), limit) if math.isfinite(value) else -limit
        if session.test(value):
            return gamma, j
    return gamma_bar, -1


def curvature_direction(p: np.ndarray, noisy_gradient: np.ndarray) -> np.ndarray:
    """The eigenvector ``p`` with its sign chosen so that ``p^T g~ <= 0`` (eq. 5), from the **noisy** gradient.

    Using the exact gradient would leak it (spec section 5 item 2).
    """
    return -p if float(p @ noisy_gradient) > 0.0 else p


def _smallest_eigenpair(H: np.ndarray, rules: _Rules, rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """Smallest eigenpair of the released ``H~``: dense ``eigh`` or Lanczos (post-processing either way)."""
    if not rules.lanczos:
        vals, vecs = np.linalg.eigh(H)
        return float(vals[0]), vecs[:, 0]
    d = H.shape[0]
    k = lanczos_iterations(d, float(np.linalg.norm(H)), rules.eps_H, LANCZOS_FAILURE)
    start = rng.standard_normal(d)
    return lanczos_smallest(H, k, start)


class _Trace:
    def __init__(self) -> None:
        self.rows: list[tuple[int, str, float, float, float, int]] = []

    def add(self, phase: int, kind: str, gnorm: float, lam: float, step: float, trial: int) -> None:
        self.rows.append((phase, kind, gnorm, lam, step, trial))

    def history(self) -> SecondOrderHistory:
        cols = list(zip(*self.rows, strict=True)) if self.rows else [[]] * 6
        return SecondOrderHistory(phase=np.array(cols[0], dtype=np.int64), kind=np.array(cols[1], dtype="<U9"),
                                  gradient_norm=np.array(cols[2], dtype=float),
                                  lambda_min=np.array(cols[3], dtype=float), step_size=np.array(cols[4], dtype=float),
                                  line_search_trial=np.array(cols[5], dtype=np.int64))


def _run_phase(w: np.ndarray, *, phase: int, horizon: int, oracle: Any, regulariser: Any, releases: Any,
               rules: _Rules, n: int, batch: int | None, rng: np.random.Generator,
               trace: _Trace) -> tuple[np.ndarray, bool]:
    """Run at most ``horizon`` iterations from ``w``; return ``(w, certified)``.

    Every decision uses released quantities only (``g~``, ``lam~``, the SVT's
    answers); the data is read through ``oracle`` inside the releases and the
    line-search queries.
    """
    for _ in range(horizon):
        rows = None if batch is None else rng.choice(n, size=batch, replace=False)  # never released
        g_t = releases.gradient(oracle.gradient(w, rows)) + regulariser.reg_gradient(w)
        gnorm = float(np.linalg.norm(g_t))
        if gnorm > rules.eps_g:
            trial = -2
            if rules.line_search:
                gamma_bar = rules.gamma_bar_g
                gamma_init = rules.b_g * gamma_bar
                along = oracle.ray(w, -g_t)  # data values along the step, inside the SVT only
                f_w = along(0.0) + regulariser.reg_value(w)

                def q_g(gamma: float, w=w, g_t=g_t, f_w=f_w, gnorm=gnorm, along=along) -> float:
                    return f_w - along(gamma) - regulariser.reg_value(w - gamma * g_t) - rules.c_g * gamma * gnorm**2

                sens = min(2.0 * rules.B_g * gamma_init * gnorm, 2.0 * rules.B) / n
                gamma, trial = releases.line_search(q_g, sensitivity=sens, gamma_init=gamma_init,
                                                    gamma_bar=gamma_bar, beta=rules.beta_g, trials=rules.i_max_g)
            else:
                gamma = 1.0 / rules.G
            w = w - gamma * g_t
            trace.add(phase, "gradient", gnorm, math.nan, gamma, trial)
            continue
        H_t = releases.hessian(oracle.hessian(w, rows)) + regulariser.reg_hessian(w)
        lam, p = _smallest_eigenpair(H_t, rules, rng)
        p = curvature_direction(p, g_t)
        negative = lam <= -0.5 * rules.eps_H if rules.lanczos else lam < -rules.eps_H
        if not negative:
            trace.add(phase, "stop", gnorm, lam, math.nan, -2)
            return w, True
        trial = -2
        if rules.line_search:
            gamma_bar = rules.t2 * abs(lam) / rules.M
            gamma_init = rules.b_H * gamma_bar
            along = oracle.ray(w, p)
            f_w = along(0.0) + regulariser.reg_value(w)

            def q_H(gamma: float, w=w, p=p, f_w=f_w, lam=lam, along=along) -> float:
                return (f_w - along(gamma) - regulariser.reg_value(w + gamma * p)
                        - 0.5 * rules.c_H * gamma**2 * abs(lam))

            sens = min(2.0 * rules.B_g * gamma_init, 2.0 * rules.B) / n  # ||p|| = 1
            gamma, trial = releases.line_search(q_H, sensitivity=sens, gamma_init=gamma_init, gamma_bar=gamma_bar,
                                                beta=rules.beta_H, trials=rules.i_max_H)
        else:
            gamma = 2.0 * abs(lam) / rules.M
        w = w + gamma * p
        trace.add(phase, "curvature", gnorm, lam, gamma, trial)
    return w, False


# ============================================================================= public API
_DEFAULTS: dict[str, Any] = dict(
    variant="2opt-ls", loss="sigmoid", epsilon=1.0, delta=1e-6, tolerance=0.04, hessian_tolerance=None,
    data_norm=1.0, l2=1e-3, batch_size=None, eigensolver="dense", max_iter=2000, initial_gap=0.5, gap_fraction=0.05,
    w0=None, c1=0.1, c=0.1, c2=1.0 / 12.0, c_g=0.6, c_H=0.25, b_g=20.0, b_H=20.0, beta_g=0.6, beta_H=0.5,
    phase_one_fraction=0.75, budget_split=(1.0, 1.0, 1.0), hessian_sensitivity="paper", clip="rows",
    accountant=None, random_state=None, phase="training")


def _params(kw: dict[str, Any], owner: str) -> dict[str, Any]:
    unknown = set(kw) - set(_DEFAULTS)
    if unknown:
        raise InvalidParameterError(f"{owner} got unexpected parameter(s) {sorted(unknown)}.")
    p = dict(_DEFAULTS)
    p.update(kw)
    return p


def second_order_privacy_event(n_samples: int, n_features: int, **params: Any) -> PrivacyEvent:
    """The event :func:`dp_second_order` charges for data of this shape, computed without any data.

    Parameters
    ----------
    n_samples, n_features : int
        The public shape of ``X``.
    **params
        The keyword arguments of :func:`dp_second_order` (``accountant`` and
        ``random_state`` are accepted and ignored). ``initial_gap`` must be a float.

    Returns
    -------
    PrivacyEvent
        Equal (``==``) to the ``privacy_event`` of every run with these
        parameters on data of this shape.

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain, or ``initial_gap=None`` (the
        privatised gap's horizon, hence the event's parameters, depends on a
        released value).

    Notes
    -----
    **Privacy.** Spends nothing and reads no data: the event is a function of
    ``n_samples``, ``n_features`` and the parameters only (its guarantee is
    described in :func:`dp_second_order`).
    """
    owner = "second_order_privacy_event"
    n = check_integer(n_samples, "n_samples", low=1, owner=owner)
    d = check_integer(n_features, "n_features", low=1, owner=owner)
    p = _params(params, owner)
    if p["initial_gap"] is None:
        raise InvalidParameterError(
            f"The 'initial_gap' parameter of {owner} must be a float: with initial_gap=None the horizon T is computed "
            "from a released f(w0), so the run's event (its horizons and noise multipliers, though not its total "
            "cost) depends on that release.")
    v = _validate(n, d, p, owner)
    v["source"] = check_random_state(0, owner=owner)  # mechanisms are built but never used
    return _make_plan(n, d, v, gap=None, owner=owner).total


def dp_second_order(
    X: Any, y: Any, *, variant: str = "2opt-ls", loss: str = "sigmoid", epsilon: float = 1.0, delta: float = 1e-6,
    tolerance: float = 0.04, hessian_tolerance: float | None = None, data_norm: float = 1.0, l2: float = 1e-3,
    batch_size: int | None = None, eigensolver: str = "dense", max_iter: int = 2000,
    initial_gap: float | None = 0.5, gap_fraction: float = 0.05, w0: Any = None, c1: float = 0.1, c: float = 0.1,
    c2: float = 1.0 / 12.0, c_g: float = 0.6, c_H: float = 0.25, b_g: float = 20.0, b_H: float = 20.0,
    beta_g: float = 0.6, beta_H: float = 0.5, phase_one_fraction: float = 0.75,
    budget_split: tuple[float, float, float] = (1.0, 1.0, 1.0), hessian_sensitivity: str = "paper",
    clip: str = "rows", accountant: Accountant | None = None, random_state: Any = None, phase: str = "training",
) -> SecondOrderResult:
    r"""Find an approximate second-order stationary point of a non-convex ERM privately (Gao & Wright 2023).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Sensitive rows ``x_i``; clipped to L2 norm ``data_norm``. Its shape is public.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    variant : {"opt", "opt-ls", "opt-b", "2opt", "2opt-ls", "2opt-b"}, default="2opt-ls"
        Short steps (Alg. 1), SVT line search (Alg. 2-3), mini-batch short steps
        (App. B); the ``"2"`` prefix adds the two-phase strategy (section 3.4).
    loss : {"sigmoid", "nonconvex_logistic"}, default="sigmoid"
        ``sigmoid(-y x^T w) + (l2/2)||w||^2`` or
        ``log(1 + exp(-y x^T w)) + l2 sum_i w_i^2 / (1 + w_i^2)``
        (:mod:`privtune.optim._nonconvex`).
    epsilon : float in (0, inf), default=1.0
    delta : float in (0, 1), default=1e-6
        The run is ``(epsilon, delta)``-DP (the paper's ``delta = 1/n`` is weak for
        a tuner, spec section 5 item 16).
    tolerance : float in (0, inf), default=0.04
        ``alpha``: the target is an ``(alpha, hessian_tolerance)``-2NS. The loop
        runs at ``eps_g = alpha / (1 + c1)`` and ``eps_H = hessian_tolerance / (1 + c)``
        (spec section 5 item 12).
    hessian_tolerance : float in (0, inf) or None, default=None
        ``None`` is ``sqrt(M alpha)`` with the loss's ``M``. (The paper's settings
        ``(0.04, 0.2)`` and ``(0.02, 0.141)`` assume ``M = 1``.)
    data_norm : float in (0, inf), default=1.0
        ``R``, the declared L2 bound of every row; rows above it are scaled down
        (``clip="rows"``) or refused (``clip="raise"``). Every constant derives from it.
    l2 : float in [0, inf), default=1e-3
        The regularisation strength ``lam``.
    batch_size : int in [1, n_samples] or None, default=None
        ``m`` of the ``-b`` variants (None: ``max(1, n // 50)``); must be None otherwise.
    eigensolver : {"dense", "lanczos"}, default="dense"
        Smallest eigenpair of the released ``H~``: ``numpy.linalg.eigh``, or
        Lanczos from a random start (Carmon et al. 2018) with the paper's App. C
        rule (step if the Ritz value is at most ``-eps_H / 2``, else certify;
        ``MIN_DEC`` then uses ``eps_H / 2``). Both run on the materialised
        ``H~ = H + E`` (one ``E`` per evaluation).
    max_iter : int in [1, 1000000], default=2000
        Cap on the horizon: ``T = min(ceil((gap - f_low) / MIN_DEC), max_iter)``;
        the noise is calibrated for this ``T``.
    initial_gap : float in (0, inf) or None, default=0.5
        Declared, data-independent ``f(w0) - f_low`` (the authors' code uses 0.5;
        an underestimate only hurts utility). ``None`` (sigmoid loss, full
        batch only) releases ``f~0 = f(w0) + N(0, (sigma_f B / n)^2)`` with
        ``gap_fraction`` of the budget and uses ``f~0 + 3 sigma_f B / n - f_low``
        (spec section 5 item 1: the paper's ``f(w0) + |z|`` is not DP).
    gap_fraction : float in (0, 1), default=0.05
        Share of the zCDP budget spent on ``f~0`` when ``initial_gap=None``.
    w0 : array-like of shape (n_features,) or None, default=None
        Public starting point; None is zero.
    c1, c, c2, c_g, c_H : float, default=0.1, 0.1, 1/12, 0.6, 0.25
        Constants of the analysis: ``0 < c1 < 1/2``, ``c + c2 < 1/3``,
        ``0 < c_g < 1 - c1``, ``0 < c_H <= 1 - c - sqrt(8 c2 / 3)`` (so that the
        roots ``t1 < t2`` of eq. 15 are real; spec section 5 item 3).
    b_g, b_H : float in (1, inf), default=20.0
        Initial line-search step multipliers.
    beta_g : float in (0, 1), default=0.6
    beta_H : float in (t1 / t2, 1), default=0.5
        Backtracking factors.
    phase_one_fraction : float in (0, 1), default=0.75
        Share of the budget of phase 1 of the two-phase variants.
    budget_split : tuple of three positive floats, default=(1, 1, 1)
        Weights of the gradient, Hessian and line-search releases within each
        iteration's budget; equal weights are the paper's eqs. (8) and (14)
        (``sigma_g = sigma_H = lambda``).
    hessian_sensitivity : {"paper", "rank_one"}, default="paper"
        ``"paper"``: the Frobenius sensitivity ``2 B_H sqrt(d) / n`` of eq. (4).
        ``"rank_one"`` (privtune's extension): ``2 B_H / n``, valid because each
        per-example Hessian ``l''(m) x x^T`` has rank one, so its Frobenius norm
        equals its spectral norm, at most ``B_H``.
    clip : {"rows", "raise"}, default="rows"
    accountant : Accountant or None, default=None
        Checked before any value of ``X`` is read and charged before the first data access.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None``: cryptographically secure noise. An int makes the run
        reproducible and **not for release**.
    phase : str, default="training"
        The phase recorded in the accountant's ledger.

    Returns
    -------
    SecondOrderResult

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain (including constants that make the
        roots of eq. 15 complex) or bad data; nothing is spent.
    BudgetExceededError
        If the accountant cannot pay for the run; raised before any value of
        ``X`` is read, with nothing spent.

    Notes
    -----
    **Privacy.** ``(epsilon, delta)``-DP under **replace-one** (datasets of the
    same public size ``n`` differing in one row), for the release of every
    iterate, every noisy gradient and Hessian, every line-search answer and the
    stopping time. Public: ``n``, ``d``, ``R``, every constant and parameter,
    ``w0``. Events, all fixed before the loop (``T`` and every noise multiplier
    are functions of public quantities), worst case charged (spec section 5
    item 7): ``T_p`` iterations of each phase, each releasing

    * a gradient of the data term with Gaussian noise of multiplier ``sigma_g``
      on the L2 sensitivity ``Delta_g = 2 B_g / n`` (``GaussianEvent``, vector);
    * a symmetric Hessian of the data term, noise i.i.d. on and above the
      diagonal (same variance on it) of multiplier ``sigma_H`` on
      ``Delta_H = 2 B_H sqrt(d) / n``, which bounds the L2 norm of the change of
      the released upper triangle by the Frobenius norm of the change
      (``GaussianEvent``, vector);
    * with line search, one AboveThreshold run, ``1/lambda``-DP
      (``SparseVectorEvent``), on queries of sensitivity
      ``min(2 B_g ||largest trial step||, 2 B) / n`` (replace-one, the loss being
      ``B_g``-Lipschitz and ``[0, B]``-valued; the paper uses the first term).

    The iterations that release no Hessian (or end) are charged as if they did,
    and the second phase of a two-phase run is charged even when the first one
    certifies. Mini-batch variants draw ``m`` rows without replacement at
    every iteration (gradient and Hessian on the same batch, sensitivities with
    ``m``) and charge ``SampledWithoutReplacementEvent`` (replace-one; RDP bound
    of Wang, Balle & Kasiviswanathan 2019 through ``dp_accounting``; that
    strengthened bound is stated for the continuous Gaussian, and its transfer
    to privtune's discrete Gaussian on a fine grid, whose moments agree to a
    relative ``exp(-2 pi^2 4^10)``, is argued, not proven). The
    regulariser's gradient and Hessian are public and added after the noise.
    Calibration: the total zCDP ``rho`` is that of the single Gaussian meeting
    ``(epsilon (1 - 1e-3), delta)`` in privtune's RDP accountant; phase ``p``
    gets ``fraction_p rho`` over ``T_p`` iterations, split equally between the
    mechanisms of an iteration (eq. 8: ``sigma^2 = 2 T / (2 rho)``; eq. 14:
    ``sigma^2 = lambda^2 = 3 T / (2 rho)``). Mini-batch variants calibrate one
    common scale of these multipliers by a root search on the subsampled RDP bound.
    ``epsilon`` of the result is the accountant's bound on the charged event.
    With ``initial_gap=None``, ``f(w0)`` is released first (scalar Gaussian,
    ``Delta_f = B / n``, ``gap_fraction`` of ``rho``) and charged in a first
    ledger entry; the rest, whose RDP curve does not depend on ``T``, is
    charged after it, before the loop. Noise is exact (discrete Gaussian and
    discrete Laplace on grids, :mod:`privtune.mechanisms`). Stopping uses the
    noisy gradient norm and eigenvalue only; the eigenvector's sign uses the
    noisy gradient. The batch indices and Lanczos start vectors come from a
    generator seeded from the same source as the noise and are never released.

    **Deviations from the paper** (spec section 5): worst-case ``rho-bar``
    charged instead of the "actual run" figure; data-independent gap by
    default; constants derived from the declared, enforced row bound instead
    of ``G = M = B_g = B_H = 1``; sampling without replacement and
    sensitivities with ``m`` for mini-batches (no line search on mini-batches,
    which the paper does not analyse); both phases charged up front (no
    leftover reuse); the fallback step ``gamma_bar`` when every trial fails;
    ``i_max = floor(log_{1/beta} b) + 1``; accounting through RDP instead of
    Prop. A.6's closed form; ``T`` capped by ``max_iter``. If the loop reaches
    ``T`` without certifying, the last iterate is returned with
    ``certified=False``.

    **Certificate.** When ``certified`` and the noise satisfies eq. (9)
    (``||noise_g|| <= c1 eps_g`` and ``||E|| <= c eps_H``, which holds with high
    probability once ``n`` is large, Thm 4), ``x`` is an
    ``(alpha, hessian_tolerance)``-2NS of ``f``; the flag itself is computed on
    released values only.

    References
    ----------
    .. [GW23] C. Gao and S. J. Wright, "Differentially Private Optimization for
       Smooth Nonconvex ERM", arXiv:2302.04972, 2023, Alg. 1-3, Thms 1, 5, B.5.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.optim.second_order import dp_second_order
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 3)) / 2
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> res = dp_second_order(X, y, variant="2opt-ls", epsilon=1.0, delta=1e-6, random_state=0)
    >>> res.x.shape, res.epsilon <= 1.0
    ((3,), True)
    """
    owner = "dp_second_order"
    p = _params(dict(variant=variant, loss=loss, epsilon=epsilon, delta=delta, tolerance=tolerance,
                     hessian_tolerance=hessian_tolerance, data_norm=data_norm, l2=l2, batch_size=batch_size,
                     eigensolver=eigensolver, max_iter=max_iter, initial_gap=initial_gap, gap_fraction=gap_fraction,
                     w0=w0, c1=c1, c=c, c2=c2, c_g=c_g, c_H=c_H, b_g=b_g, b_H=b_H, beta_g=beta_g, beta_H=beta_H,
                     phase_one_fraction=phase_one_fraction, budget_split=budget_split,
                     hessian_sensitivity=hessian_sensitivity, clip=clip, accountant=accountant,
                     random_state=random_state, phase=phase), owner)
    n, d = _public_shape(X, owner)
    v = _validate(n, d, p, owner)
    v["source"] = check_random_state(random_state, owner=owner)
    privatised = v["initial_gap"] is None
    if privatised:
        # Any horizon gives the same RDP curve (sigma^2 is proportional to T): check with the data-free worst case.
        consts = v["loss"].constants()
        reference_gap = consts.B + v["loss"].reg_value(v["w0"]) - consts.f_low
        plan = _make_plan(n, d, v, gap=reference_gap, owner=owner)
    else:
        plan = _make_plan(n, d, v, gap=None, owner=owner)
    if accountant is not None:
        accountant.check(plan.total)  # refuses an over-budget run before any value of X is read
    U, z = _read_data(X, y, n, d, owner)
    U = clip_rows(U, math.inf, v["data_norm"], mode=v["clip"], owner=owner)
    oracle = _DataOracle(v["loss"], U, z)
    if privatised:
        if accountant is not None:
            accountant.spend(plan.f0_event, phase=phase, role="training")  # write-ahead, before f(w0) is read
        f0_tilde = float(plan.f0_mech.randomise(oracle.value(v["w0"])))
        gap = f0_tilde + v["loss"].reg_value(v["w0"]) + GAP_MARGIN * plan.f0_mech.sigma - consts.f_low
        plan = _make_plan(n, d, v, gap=gap, owner=owner)
        if accountant is not None:
            accountant.spend(ComposedEvent(events=plan.phase_events), phase=phase, role="training")
    elif accountant is not None:
        accountant.spend(plan.total, phase=phase, role="training")  # write-ahead, before the first gradient
    return _execute(plan, oracle)


def _execute(plan: _Plan, oracle: _DataOracle) -> SecondOrderResult:
    v, rules = plan.v, plan.rules
    source = v["source"]
    rng = source.numpy_generator()  # batches and Lanczos starts (never released)
    trace = _Trace()
    w = v["w0"].copy()
    certified, stopped = False, None
    for i, (T_p, _frac) in enumerate(plan.phases):
        g_mech, h_mech = plan.mechs[i]
        lam_svt = plan.multipliers[i].get("line_search")
        releases = _Releases(g_mech, h_mech, lam_svt, source)
        w, certified = _run_phase(w, phase=i + 1, horizon=T_p, oracle=oracle, regulariser=plan.loss,
                                  releases=releases, rules=rules, n=plan.n,
                                  batch=plan.m if v["minibatch"] else None, rng=rng, trace=trace)
        if certified:
            stopped = i + 1
            break
    hist = trace.history()
    charged = compose_events([plan.total], delta=v["delta"])
    if charged.epsilon > v["epsilon"] * (1.0 + 1e-12):  # pragma: no cover - the calibration leaves a margin
        raise RuntimeError("second-order plan exceeds its budget after calibration; please report this bug.")
    sens = {"gradient": plan.sens_g, "hessian": plan.sens_H}
    if plan.f0_mech is not None:
        sens["initial_value"] = plan.f0_mech.sensitivity
    scales = tuple({"gradient": g.sigma, "hessian": h.sigma} for g, h in plan.mechs)
    kinds = hist.kind
    extra = {"t1": v["t1"], "t2": v["t2"], "i_max_g": rules.i_max_g, "i_max_H": rules.i_max_H,
             "budget_split": v["budget_split"], "uncapped_horizon": plan.raw_horizon,
             "phase_one_fraction": v["phase_one_fraction"] if v["two_phase"] else None,
             "hessian_sensitivity": v["hessian_sensitivity"], "relation": "replace_one"}
    return SecondOrderResult(
        x=w, variant=v["variant"], loss=plan.loss.name, eigensolver=v["eigensolver"], certified=certified,
        stopped_in_phase=stopped, n_iter=int(kinds.shape[0]), n_gradient_steps=int(np.sum(kinds == "gradient")),
        n_curvature_steps=int(np.sum(kinds == "curvature")),
        n_hessian_evaluations=int(np.sum(np.isfinite(hist.lambda_min))),
        n_line_search_fallbacks=int(np.sum(hist.line_search_trial == -1)), horizon=plan.T,
        phase_one_horizon=plan.T1, tolerance=plan.alpha, hessian_tolerance=plan.target_H,
        gradient_threshold=rules.eps_g, curvature_threshold=rules.eps_H, min_decrease=plan.min_dec,
        noise_multipliers=tuple(dict(mm) for mm in plan.multipliers), noise_scales=scales, sensitivities=sens,
        initial_gap=float(plan.gap), gap_noise_multiplier=plan.sigma_f, constants=plan.consts, batch_size=plan.m,
        n_samples=plan.n, n_features=plan.d, events=plan.events, privacy_event=plan.total, epsilon=charged.epsilon,
        delta=charged.delta, seeded=bool(source.seeded), history=hist, extra=extra)
