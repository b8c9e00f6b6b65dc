"""The calibration of DP-BLSGD's budgets (seed 003): the initial budgets of an adaptive run, the fixed schedule.

* :func:`calibrate_adaptive` -- the filter, its order, its cap and the initial
  budgets of an adaptive run (:class:`AdaptivePlan`);
* :func:`calibrate_fixed` -- the largest per-iteration budget whose iterations
  fit, and the curve it charges (:class:`FixedPlan`).

Functions of public quantities only (``n``, the batch scheme, the budgets, the
hyperparameters). Split out of :mod:`privtune.optim.line_search._accounting`
(issue 39), which re-exports every name defined here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from privtune.accounting.events import PrivacyEvent, RenyiEvent
from privtune.accounting.rdp_math import DEFAULT_ORDERS, rdp_to_epsilon
from privtune.exceptions import InvalidParameterError
from privtune.optim.line_search._costs import STATED_ORDERS, Scheme, event_rdp, gradient_event, search_event
from privtune.optim.line_search._filters import RenyiFilter, ZcdpFilter, renyi_cap, zcdp_cap


# ----------------------------------------------------------------------------- calibration
def _search_budget(noise: str, e: float) -> float:
    """The paper's line-search budget for an iteration budget ``e``: ``eps_BT = e`` or ``rho_BT = e**2 / 2``."""
    return e if noise == "laplace" else 0.5 * e * e


def _iteration_cost(scheme: Scheme, noise: str, n_outputs: int, e: float, orders: tuple[float, ...]) -> np.ndarray:
    """RDP at ``orders`` of one planned iteration (a gradient at ``rho = e**2/2`` plus one line search)."""
    grad = gradient_event(scheme, 0.5 * e * e)
    search = search_event(scheme, noise, _search_budget(noise, e), n_outputs)
    return event_rdp(grad, orders) + event_rdp(search, orders)


def _planned_iterations_fit(flt: ZcdpFilter | RenyiFilter, scheme: Scheme, noise: str, n_outputs: int, e: float,
                            n_iter: int) -> bool:
    """Whether ``n_iter`` iterations at budget ``e`` (a gradient and one line search each) pass the fresh filter
    ``flt``, with its own pricing and summation (what the adaptive loop checks before each step)."""
    for _ in range(n_iter):
        for ev in (gradient_event(scheme, 0.5 * e * e), search_event(scheme, noise, _search_budget(noise, e),
                                                                      n_outputs)):
            if not flt.fits(ev):
                return False
            flt.pay(ev)
    return True


@dataclass(frozen=True)
class AdaptivePlan:
    """Filter and initial budgets of an adaptive run (all public)."""

    filter_kind: str  # "zcdp" or "renyi"
    order: float  # a* (inf for the zCDP filter)
    cap: float  # rho_cap or B(a*)
    iteration_budget: float  # e: rho_grad = e**2 / 2 and eps_BT = e (rho_BT = e**2 / 2)
    charged: RenyiEvent


_E_LOW, _E_HIGH = 1e-5, 1e3  # dp-accounting's sampled-Gaussian RDP fails below rho ~ 1e-16


def _largest_e(cost_of_e: Any, target: float) -> float | None:
    """Largest ``e`` in ``[_E_LOW, _E_HIGH]`` with ``cost_of_e(e) <= target`` (cost increasing); None if none."""
    if cost_of_e(_E_LOW) > target:
        return None
    if cost_of_e(_E_HIGH) <= target:
        return _E_HIGH

    def gap(log_e: float) -> float:
        return cost_of_e(math.exp(log_e)) - target

    root = brentq(gap, math.log(_E_LOW), math.log(_E_HIGH), xtol=1e-10, rtol=1e-12)
    e = math.exp(root)
    while cost_of_e(e) > target:  # the root may round to the wrong side
        e *= 1.0 - 1e-9
    return e


@functools.lru_cache(maxsize=256)
def calibrate_adaptive(scheme: Scheme, noise: str, n_outputs: int, epsilon: float, delta: float,
                       expected_iter: int, rule: str, label: str) -> AdaptivePlan:
    """The filter, its order, its cap and the initial budgets of an adaptive run.

    * Full batch with the Laplace line search: the zCDP filter of cap
      ``rho_cap`` (:func:`zcdp_cap`). Initial budget ``e``: ``"calibrated"``,
      ``e = sqrt(rho_cap / E)`` (``E`` iterations of ``e**2/2 + e**2/2`` fill the
      cap); ``"paper"``, ``e = epsilon / (2 E)`` (Sec. 5.4).
    * Otherwise the Renyi filter at one order ``a*`` of :data:`STATED_ORDERS`,
      cap ``B(a*)`` (:func:`renyi_cap`). ``"calibrated"``: for each order ``a``
      the largest ``e(a)`` with ``E cost_a(e) <= B(a)``, and ``a*`` the order of
      the largest ``e(a)``; it is also the order at which the planned schedule of
      ``E`` iterations at ``e(a*)`` converts to the smallest epsilon.
      ``"paper"``: ``e = epsilon / (2 E)`` and ``a*`` the order minimising the
      converted epsilon of ``E`` iterations at that ``e``.

    Raises
    ------
    InvalidParameterError
        If not even one iteration fits the budget at any order.
    """
    if scheme.sampling == "full" and noise == "laplace":
        cap = zcdp_cap(epsilon, delta)
        if cap <= 0.0:
            raise InvalidParameterError(
                f"epsilon={epsilon!r} at delta={delta!r} leaves no zCDP budget for DP-BLGD.")
        e = math.sqrt(cap / expected_iter) if rule == "calibrated" else epsilon / (2.0 * expected_iter)
        if rule == "calibrated":  # priced as the filter prices the run: sqrt(cap / E) can round an ulp over
            while not _planned_iterations_fit(ZcdpFilter(cap), scheme, noise, n_outputs, e, expected_iter):
                e *= 1.0 - 1e-12
        if not _planned_iterations_fit(ZcdpFilter(cap), scheme, noise, n_outputs, e, 1):
            raise InvalidParameterError(
                f"The initial budget of the paper's rule (epsilon / (2 expected_iter) = {e:.6g}) does not fit "
                f"one iteration in the zCDP budget {cap:.6g}; use initial_budget='calibrated'.")
        charged = RenyiEvent(orders=tuple(float(a) for a in DEFAULT_ORDERS),
                             epsilons=tuple(float(a) * cap for a in DEFAULT_ORDERS), relation=scheme.relation,
                             label=f"{label} (zCDP filter, rho_cap={cap:.6g})")
        return AdaptivePlan("zcdp", math.inf, cap, e, charged)

    best: tuple[float, float, float, float] | None = None  # (score, order, cap, e)
    for a in STATED_ORDERS:
        cap = renyi_cap(a, epsilon, delta)
        if cap <= 0.0:
            continue
        if rule == "calibrated":
            e = _largest_e(lambda v, a=a: expected_iter * float(_iteration_cost(scheme, noise, n_outputs, v,
                                                                                   (a,))[0]), cap)
            if e is None:
                continue
            while not _planned_iterations_fit(RenyiFilter(a, cap), scheme, noise, n_outputs, e, expected_iter):
                e *= 1.0 - 1e-12  # E times one iteration's cost can round below the filter's sum of 2E costs
            score = e
        else:
            e = epsilon / (2.0 * expected_iter)
            one = float(_iteration_cost(scheme, noise, n_outputs, e, (a,))[0])
            if not _planned_iterations_fit(RenyiFilter(a, cap), scheme, noise, n_outputs, e, 1):
                continue
            score = cap - expected_iter * one  # slack = target - converted epsilon of the planned schedule
        if best is None or score > best[0]:
            best = (score, a, cap, e)
    if best is None:
        raise InvalidParameterError(
            f"epsilon={epsilon!r} at delta={delta!r} does not fit even one DP-BLSGD iteration (a noisy "
            "gradient and a line search) at any RDP order; raise epsilon or delta"
            + (" or use initial_budget='calibrated'." if rule == "paper" else "."))
    _, a, cap, e = best
    charged = RenyiEvent(orders=(a,), epsilons=(cap,), relation=scheme.relation,
                         label=f"{label} (Renyi filter at order {a:.6g})")
    return AdaptivePlan("renyi", a, cap, e, charged)


@dataclass(frozen=True)
class FixedPlan:
    """Per-iteration budgets of a fixed-schedule run and the RDP curve it charges."""

    rho_iter: float
    rho_grad: float
    search_budget: float  # eps_BT (Laplace) or rho_BT (Gaussian)
    gradient: PrivacyEvent
    search: PrivacyEvent
    charged: RenyiEvent
    epsilon: float  # the converted epsilon of the charged curve (<= the budget)


@functools.lru_cache(maxsize=256)
def calibrate_fixed(scheme: Scheme, noise: str, n_outputs: int, epsilon: float, delta: float, n_iter: int,
                    share: float, label: str) -> FixedPlan:
    """The largest per-iteration zCDP-equivalent budget ``rho_iter`` whose ``n_iter`` iterations fit.

    Each iteration is a gradient at ``rho_grad = (1 - share) rho_iter`` and a line
    search at ``eps_BT = sqrt(2 share rho_iter)`` (Laplace: the pure epsilon whose
    zCDP bound ``eps**2 / 2`` is the share) or ``rho_BT = share rho_iter``
    (Gaussian, the paper's NN split). The charged curve is ``n_iter`` times the
    sum of the two events' curves at :data:`STATED_ORDERS`; ``rho_iter`` is the
    largest value (to a relative ``1e-9``) whose curve converts to at most
    ``(epsilon, delta)`` with :func:`rdp_to_epsilon`.
    """
    orders = STATED_ORDERS
    arr = np.asarray(orders)

    def events(rho: float) -> tuple[PrivacyEvent, PrivacyEvent, float, float]:
        rho_g = (1.0 - share) * rho
        budget = math.sqrt(2.0 * share * rho) if noise == "laplace" else share * rho
        return (gradient_event(scheme, rho_g), search_event(scheme, noise, budget, n_outputs), rho_g, budget)

    def curve(rho: float) -> np.ndarray:
        g, s, _, _ = events(rho)
        return n_iter * (event_rdp(g, orders) + event_rdp(s, orders))

    def eps_of(rho: float) -> float:
        return rdp_to_epsilon(arr, curve(rho), delta)

    lo, hi = 1e-11, 1e6
    if eps_of(lo) > epsilon:
        raise InvalidParameterError(
            f"epsilon={epsilon!r} at delta={delta!r} cannot pay for {n_iter} fixed DP-BLSGD iterations "
            "at any noise level; lower n_iter or raise epsilon or delta.")
    if eps_of(hi) <= epsilon:
        rho = hi
    else:
        root = brentq(lambda t: eps_of(math.exp(t)) - epsilon, math.log(lo), math.log(hi), xtol=1e-11, rtol=1e-12)
        rho = math.exp(root)
        while eps_of(rho) > epsilon:
            rho *= 1.0 - 1e-9
    g, s, rho_g, budget = events(rho)
    c = curve(rho)
    finite = np.isfinite(c)
    charged = RenyiEvent(orders=tuple(a for a, ok in zip(orders, finite, strict=True) if ok),
                         epsilons=tuple(float(v) for v in c[finite]), relation=scheme.relation,
                         label=f"{label} (fixed schedule: {n_iter} iterations, rho_iter={rho:.6g})")
    return FixedPlan(rho, rho_g, budget, g, s, charged, rdp_to_epsilon(arr, c, delta))
