r"""Accounting of DP-BLSGD (seed 003, Chen & Lee): events, RDP costs, filters, calibration (internal).

Everything here is a function of public quantities only (``n``, the batch
scheme, the budgets, the hyperparameters); nothing here touches data. The
trainer itself is :mod:`privtune.optim.line_search`, whose module docstring
states the privacy argument in full; this module holds the pieces:

* :class:`Scheme` -- the batch scheme (full batch, fixed-size batches drawn
  without replacement, Poisson batches), its public divisor, its neighbouring
  relation and the sensitivities that follow;
* the mechanism events (:func:`gradient_event`, :func:`search_event`) and their
  RDP curves (:func:`event_rdp`): dp-accounting's RDP accountant (through
  :func:`privtune.accounting.accountant._rdp_curve`) for the (sampled) Gaussian
  gradients, the Bun & Steinke bound (:func:`privtune.accounting.rdp_math.pure_dp_rdp`)
  of the amplified pure epsilon for the Laplace line search, and the stated
  curve of a :class:`~privtune.accounting.events.RenyiEvent` for the Gaussian
  line search;
* the two **filters** fixed in advance that make adaptive budgets sound
  (spec P5): :class:`ZcdpFilter` (full batch, Laplace line search) and
  :class:`RenyiFilter` (one order ``a*``);
* the calibration of the initial budgets (adaptive mode) and of the fixed
  per-iteration budget (fixed mode);
* :class:`GaussianSparseVector`, the Gaussian NOISYBTLS noise on an exact grid,
  whose RDP is proven below.

Gaussian line search (why only full batch, and which curve)
-----------------------------------------------------------
The paper's Thm 3 claims ``(a, a rho)``-RDP for the Gaussian NOISYBTLS with
threshold noise ``N(0, 3 Delta**2 / (2 rho))`` and query noise
``N(0, 3 Delta**2 / rho)``. Its proof bounds one output sequence and never sums
over the outputs (spec P1). The sound bound (Zhu & Wang 2020; re-derived here):
for an output ``i`` (first "above" at candidate ``i``), shifting the threshold
noise by ``Delta`` and candidate ``i``'s noise by ``2 Delta`` maps the event on
``D`` into the event on ``D'``; by the data-processing inequality on the
partition ``{i, not i}`` each output contributes at most
``exp((a - 1)(a Delta**2 / (2 s_T**2) + 4 a Delta**2 / (2 s_Q**2)))`` to
``sum_i P_D(i)**a P_D'(i)**(1 - a)``, which is ``exp((a - 1) a rho)`` for the
paper's noises and for privtune's (:class:`GaussianSparseVector`); summing
over the ``K = max_backtracks + 1`` outputs (including "failed") gives

.. math:: \varepsilon(a) \le a\rho + \frac{\log K}{a - 1}.

With Poisson or without-replacement subsampling the ``log K / (a - 1)`` term
enters every order of the general subsampling bounds (Zhu & Wang 2019, Thm 6;
Wang, Balle & Kasiviswanathan 2019, Thm 9) as a factor ``K`` on every higher
moment, which destroys the amplification (about 0.15 per call at ``a = 30``,
``q = 0.1``, ``K = 11``). privtune therefore offers the Gaussian line search
with ``sampling="full"`` only, and refuses it with subsampling.

References
----------
.. [ZW20] Y. Zhu and Y.-X. Wang, "Improving Sparse Vector Technique with Renyi
   Differential Privacy", NeurIPS 2020.
.. [FZ21] V. Feldman and T. Zrnic, "Individual Privacy Accounting via a Renyi
   Filter", NeurIPS 2021.
.. [BBG18] B. Balle, G. Barthe and M. Gaboardi, "Privacy Amplification by
   Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018.
.. [WBK19] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Renyi
   Differential Privacy and Analytical Moments Accountant", AISTATS 2019.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import brentq

from privtune.accounting.accountant import _rdp_curve
from privtune.accounting.events import (
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RenyiEvent,
    SampledWithoutReplacementEvent,
    SparseVectorEvent,
)
from privtune.accounting.rdp_math import DEFAULT_ORDERS, pure_dp_rdp, rdp_to_epsilon
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import (
    GRID_HEADROOM,
    MAX_GAUSSIAN_GRID_EXPONENT,
    MIN_GRID_EXPONENT,
    discrete_gaussian,
    round_to_grid,
)
from privtune.utils._random import RandomSource

__all__ = [
    "STATED_ORDERS",
    "SAMPLINGS",
    "Scheme",
    "gradient_event",
    "search_event",
    "event_rdp",
    "renyi_cap",
    "zcdp_cap",
    "ZcdpFilter",
    "RenyiFilter",
    "calibrate_adaptive",
    "calibrate_fixed",
    "GaussianSparseVector",
]

SAMPLINGS = ("without_replacement", "full", "poisson")

#: The orders at which privtune states the RDP curve of a run: a subset of the accountant's
#: ``DEFAULT_ORDERS`` (taken from it, so that the accountant evaluates the stated values exactly),
#: dense enough for the minimum over orders, sparse enough that a sampled-Gaussian curve costs ~0.06 s.
_TARGETS = (1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 14.0, 16.0,
            18.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 63.0, 80.0, 96.0, 128.0, 192.0, 256.0, 512.0, 1024.0)
STATED_ORDERS: tuple[float, ...] = tuple(sorted({float(DEFAULT_ORDERS[int(np.argmin(np.abs(DEFAULT_ORDERS - t)))])
                                                 for t in _TARGETS}))


#: Largest order at which a Gaussian sampled without replacement is bounded. dp-accounting's implementation
#: of Wang, Balle & Kasiviswanathan's Thm 27 is numerically unstable above it for large noise: at q = 0.1 its
#: value at order 256 is 0.03 for every noise multiplier from 30 to 1e5 (and 2.4e-4 at order 192 for
#: nm = 1e4 against 6.7e-5 for nm = 1e3: not monotone), a cancellation in its forward differences. Above this
#: order privtune states no bound (infinite), which is conservative.
MAX_WOR_ORDER = 128.0

# ----------------------------------------------------------------------------- the batch scheme
@dataclass(frozen=True)
class Scheme:
    """The public batch scheme of a run.

    Attributes
    ----------
    sampling : {"without_replacement", "full", "poisson"}
    n : int
        Number of rows (public).
    m : int
        Batch size: ``max(1, round(q n))`` without replacement, ``n`` for the full
        batch, and the *expected* ``q n`` rounded for Poisson (for reporting only).
    rate : float
        ``q`` (1 for the full batch).
    divisor : float
        The public divisor of every batch mean: ``m``, ``n``, or ``q n`` (Poisson;
        never the realised batch size, spec P6).
    relation : {"replace_one", "add_remove"}
    """

    sampling: str
    n: int
    m: int
    rate: float
    divisor: float
    relation: str

    @classmethod
    def build(cls, sampling: str, n: int, rate: float) -> Scheme:
        if sampling == "full":
            return cls("full", n, n, 1.0, float(n), "replace_one")
        if sampling == "without_replacement":
            m = max(1, min(n, int(round(rate * n))))
            return cls(sampling, n, m, m / n, float(m), "replace_one")
        return cls("poisson", n, max(1, int(round(rate * n))), rate, rate * n, "add_remove")

    def sensitivity(self, clip: float) -> float:
        """Sensitivity of a batch mean of terms bounded by ``clip`` (L2 norm or absolute value).

        Replace-one: one term changes by at most ``2 clip``; add/remove: one term
        appears or disappears, ``clip``. Divided by the public divisor.
        """
        factor = 2.0 if self.relation == "replace_one" else 1.0
        return factor * clip / self.divisor

    def wrap(self, event: PrivacyEvent) -> PrivacyEvent:
        """``event`` (the mechanism on its batch) as run on a fresh batch of this scheme."""
        if self.sampling == "full":
            return event
        if self.sampling == "without_replacement":
            return SampledWithoutReplacementEvent(event=event, dataset_size=self.n, sample_size=self.m)
        return PoissonSampledEvent(event=event, sample_rate=self.rate, relation="add_remove")


def noise_multiplier(rho: float) -> float:
    """The Gaussian noise multiplier whose base zCDP parameter is ``rho``: ``1 / sqrt(2 rho)``."""
    return 1.0 / math.sqrt(2.0 * rho)


def gradient_event(scheme: Scheme, rho: float) -> PrivacyEvent:
    """One noisy gradient: vector Gaussian of multiplier ``1/sqrt(2 rho)`` on a fresh batch."""
    return scheme.wrap(GaussianEvent(noise_multiplier=noise_multiplier(rho), vector=True,
                                     relation=scheme.relation))


def gaussian_search_curve(rho: float, n_outputs: int, orders: tuple[float, ...]) -> np.ndarray:
    """Zhu & Wang's RDP of the Gaussian NOISYBTLS: ``a rho + log(K) / (a - 1)`` (module docstring)."""
    a = np.asarray(orders, dtype=float)
    return a * rho + math.log(n_outputs) / (a - 1.0)


def search_event(scheme: Scheme, noise: str, budget: float, n_outputs: int) -> PrivacyEvent:
    """One NOISYBTLS call: ``SparseVectorEvent(eps_BT)`` (Laplace, Thm 1) or the stated Gaussian curve."""
    if noise == "laplace":
        return scheme.wrap(SparseVectorEvent(epsilon=budget, relation=scheme.relation))
    if scheme.sampling != "full":  # pragma: no cover - refused by the plan
        raise InvalidParameterError("The Gaussian line search is only accounted for with sampling='full'.")
    curve = gaussian_search_curve(budget, n_outputs, STATED_ORDERS)
    return RenyiEvent(orders=STATED_ORDERS, epsilons=tuple(float(v) for v in curve), relation=scheme.relation,
                      label=f"Gaussian NOISYBTLS (rho_BT={budget:.6g}, {n_outputs} outputs; Zhu & Wang 2020)")


def _inner(event: PrivacyEvent) -> PrivacyEvent:
    return event.event if isinstance(event, (SampledWithoutReplacementEvent, PoissonSampledEvent)) else event


@functools.lru_cache(maxsize=8192)
def _event_rdp_cached(event: PrivacyEvent, orders: tuple[float, ...]) -> np.ndarray:
    inner = _inner(event)
    if isinstance(event, RenyiEvent):
        curve = np.asarray(event.rdp_at(orders), dtype=float)
    elif isinstance(inner, SparseVectorEvent):
        # Pure epsilon (amplified by the event itself: log(1 + q (e^eps - 1)), under the event's own
        # relation), then Bun & Steinke's bound (at most min(eps, a eps**2 / 2)).
        eps = event.epsilon_delta()[0]  # type: ignore[index]
        curve = pure_dp_rdp(np.asarray(orders, dtype=float), eps)
    else:
        a = np.asarray(orders, dtype=float)
        # Poisson: no bound below order 2 (the curve there is the order-2 value, which the filter never needs);
        # without replacement: dp-accounting's bound is unreliable above MAX_WOR_ORDER. No bound there.
        if isinstance(event, PoissonSampledEvent):
            keep = a >= 2.0
        elif isinstance(event, SampledWithoutReplacementEvent):
            keep = a <= MAX_WOR_ORDER
        else:
            keep = np.ones(a.shape, dtype=bool)
        curve = np.full(a.shape, np.inf)
        if keep.any():
            found = _rdp_curve(event, tuple(float(v) for v in a[keep]), event.relation)
            if found is None:  # pragma: no cover - every event built here is supported
                raise InvalidParameterError(f"No RDP bound for {type(event).__name__}.")
            curve[keep] = np.asarray(found, dtype=float)
    curve = np.array(curve, dtype=float)
    curve.setflags(write=False)
    return curve


def event_rdp(event: PrivacyEvent, orders: tuple[float, ...]) -> np.ndarray:
    """The RDP curve of one mechanism event at ``orders`` (read-only array).

    Gaussian gradients (sampled or not): dp-accounting through the accountant's
    ``_rdp_curve`` (Poisson: Mironov, Talwar & Zhang 2019 at integer orders,
    interpolated in between, :func:`~privtune.accounting.rdp_math.poisson_gaussian_rdp`;
    without replacement: Wang, Balle & Kasiviswanathan 2019, Thm 27). Laplace line search: the event's
    pure epsilon after amplification, then :func:`pure_dp_rdp`. Gaussian line
    search: its stated curve.
    """
    return _event_rdp_cached(event, tuple(float(a) for a in orders))


# ----------------------------------------------------------------------------- caps
def _conversion(order: float, delta: float) -> float:
    """``k(a)``: (a, r)-RDP converts to (r + k(a), delta)-DP (CKS 2020, Prop. 12, as in rdp_to_epsilon)."""
    return math.log1p(-1.0 / order) - (math.log(delta) + math.log(order)) / (order - 1.0)


def renyi_cap(order: float, epsilon: float, delta: float) -> float:
    """Largest RDP value at ``order`` that converts to at most ``(epsilon, delta)`` (0 if none)."""
    cap = epsilon - _conversion(order, delta)
    if cap <= 0.0:
        return 0.0
    while cap > 0.0 and rdp_to_epsilon(np.array([order]), np.array([cap]), delta) > epsilon:
        cap = math.nextafter(cap, 0.0)  # float rounding of the formula: move down until it converts
    return cap


@functools.lru_cache(maxsize=256)
def zcdp_cap(epsilon: float, delta: float) -> float:
    """Largest ``rho`` whose curve ``a rho`` on ``DEFAULT_ORDERS`` converts to at most ``(epsilon, delta)``."""
    orders = DEFAULT_ORDERS

    def eps_of(rho: float) -> float:
        return rdp_to_epsilon(orders, orders * rho, delta)

    lo, hi = 0.0, 1.0
    while eps_of(hi) <= epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if eps_of(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


# ----------------------------------------------------------------------------- filters
class ZcdpFilter:
    """zCDP filter: run a mechanism only if the running ``sum rho_t`` plus its cost stays ``<= cap``.

    Each Gaussian step of multiplier ``nm`` costs ``1 / (2 nm**2)``; each Laplace
    NOISYBTLS (pure ``eps_BT``) costs ``eps_BT**2 / 2`` (Bun & Steinke 2016,
    Prop. 1.4). The stopping rule ``sum rho_t <= cap`` is, at every order ``a``,
    the Renyi filter ``sum a rho_t <= a cap`` (Feldman & Zrnic 2021, Thm 3.1), so
    the run is ``(a, a cap)``-RDP at every order whatever the adaptive choices.
    """

    kind = "zcdp"

    def __init__(self, cap: float) -> None:
        self.cap = float(cap)
        self.order = math.inf
        self._costs: list[float] = []

    @staticmethod
    def cost(event: PrivacyEvent) -> float:
        if isinstance(event, GaussianEvent):
            return 1.0 / (2.0 * event.noise_multiplier**2)
        if isinstance(event, SparseVectorEvent):
            return 0.5 * event.epsilon**2
        raise InvalidParameterError(  # pragma: no cover - the plan routes other events to RenyiFilter
            f"The zCDP filter cannot price {type(event).__name__}.")

    @property
    def spent(self) -> float:
        return math.fsum(self._costs)

    def fits(self, *events: PrivacyEvent) -> bool:
        return math.fsum([*self._costs, *(self.cost(e) for e in events)]) <= self.cap

    def pay(self, event: PrivacyEvent) -> None:
        if not self.fits(event):  # pragma: no cover - callers check first; the invariant is enforced here
            raise InvalidParameterError("The zCDP filter refused a mechanism that does not fit its cap.")
        self._costs.append(self.cost(event))


class RenyiFilter:
    """Renyi filter at one order ``a*`` fixed in advance (Feldman & Zrnic 2021, Thm 3.1).

    A mechanism runs only if ``spent(a*) + cost(a*) <= cap``; the run is then
    ``(a*, cap)``-RDP whatever the adaptively chosen budgets.
    """

    kind = "renyi"

    def __init__(self, order: float, cap: float) -> None:
        self.order = float(order)
        self.cap = float(cap)
        self._costs: list[float] = []

    def cost(self, event: PrivacyEvent) -> float:
        return float(event_rdp(event, (self.order,))[0])

    @property
    def spent(self) -> float:
        return math.fsum(self._costs)

    def fits(self, *events: PrivacyEvent) -> bool:
        return math.fsum([*self._costs, *(self.cost(e) for e in events)]) <= self.cap

    def pay(self, event: PrivacyEvent) -> None:
        if not self.fits(event):  # pragma: no cover - callers check first; the invariant is enforced here
            raise InvalidParameterError("The Renyi filter refused a mechanism that does not fit its cap.")
        self._costs.append(self.cost(event))


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


# ----------------------------------------------------------------------------- Gaussian NOISYBTLS noise
class GaussianSparseVector:
    r"""AboveThreshold with discrete Gaussian noise on an exact grid (the Gaussian NOISYBTLS).

    Threshold noise of standard deviation ``s_T = (1 + eta) Delta / sqrt(rho)`` and
    query noise ``s_Q = 2 s_T`` (headroom ``eta = 2**-10``). The paper's split is
    ``s_T**2 = 1.5 Delta**2 / rho`` and ``s_Q**2 = 3 Delta**2 / rho`` (ratio sqrt 2);
    privtune uses the ratio 2 so that both integer noises have power-of-two
    scales (exact sampling with small denominators), with the same total:
    the shifts ``S`` (threshold) and ``2 S`` (candidate) of the proof in the module
    docstring cost ``a S**2 / (2 s_T**2) + a (2 S)**2 / (2 s_Q**2) = a rho / 2 + a rho / 2``.
    Grid: ``g = s_T / 2**k`` with the smallest ``k >= 10`` such that
    ``Delta / g + 2 <= (1 + eta) Delta / g`` (checked in rationals), so that a
    rounded query moves by at most ``S = Delta / g + 2 <= (1 + eta) Delta / g``
    grid steps between neighbours (as in :class:`privtune.mechanisms.SparseVector`).
    The integer noises are discrete Gaussians of variance ``4**k`` and ``4**(k+1)``;
    the threshold ``0`` is exact on the grid. Discrete Gaussians satisfy the
    continuous Renyi bound ``a c**2 / (2 s**2)`` for integer shifts ``c``
    (Canonne, Kamath & Steinke 2020), so each output costs at most ``a rho`` and
    the call ``a rho + log(K) / (a - 1)``. Queries are compared as exact integers.
    """

    def __init__(self, rho: float, sensitivity: float, source: RandomSource) -> None:
        s_t = sensitivity * (1.0 + GRID_HEADROOM) * (1.0 + 2.0**-40) / math.sqrt(rho)  # rounded up
        delta = Fraction(sensitivity)
        factor = 1 + Fraction(GRID_HEADROOM)
        for k in range(MIN_GRID_EXPONENT, MAX_GAUSSIAN_GRID_EXPONENT):  # 2 * 4**(k+1) <= 2**62
            g = math.ldexp(s_t, -k)
            if g > 0.0 and delta / Fraction(g) + 2 <= factor * delta / Fraction(g):
                break
        else:
            raise InvalidParameterError(
                f"The Gaussian line search cannot place its noise on an exact grid at rho_BT={rho!r}; "
                "raise the line-search budget.")
        self.k, self.g, self.sigma = k, g, s_t
        self._source = source

    def run(self, queries: Any) -> int | None:
        """Index of the first query (lazily consumed) answered "above", or None."""
        threshold = int(discrete_gaussian(4**self.k, 1, 1, self._source)[0])
        for index, value in enumerate(queries):
            q = int(round_to_grid(np.asarray([float(value)]), self.g, "query", "GaussianSparseVector")[0])
            nu = int(discrete_gaussian(4 ** (self.k + 1), 1, 1, self._source)[0])
            if q + nu >= threshold:
                return index
        return None

    def query_limit(self) -> float:
        """Queries are clipped to ``[-L, L]``, ``L = 2**24 g`` (1-Lipschitz, so sensitivity is kept).

        It keeps them on the exact grid, and bounds the rounding of their last
        addition (:class:`privtune.optim.line_search._step._Search`). It was
        ``2**48 g``; beyond ``2**24`` steps (``2**14`` threshold noise
        deviations) the answer was never in doubt.
        """
        return math.ldexp(self.g, 24)
