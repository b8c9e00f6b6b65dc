"""The caps of an (epsilon, delta) budget and the two filters fixed in advance of DP-BLSGD (seed 003, spec P5).

* :func:`zcdp_cap`, :func:`renyi_cap` -- the largest zCDP ``rho``, or RDP value
  at one order, that converts to at most ``(epsilon, delta)``;
* :class:`ZcdpFilter` (full batch, Laplace line search) and :class:`RenyiFilter`
  (one order ``a*``): a mechanism runs only if its cost still fits the cap
  (Feldman & Zrnic 2021, Thm 3.1), which makes adaptively chosen budgets sound.

Split out of :mod:`privtune.optim.line_search._accounting` (issue 39), which
re-exports every name defined here.

References
----------
.. [FZ21] V. Feldman and T. Zrnic, "Individual Privacy Accounting via a Renyi
   Filter", NeurIPS 2021.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from privtune.accounting.events import GaussianEvent, PrivacyEvent, SparseVectorEvent
from privtune.accounting.rdp_math import DEFAULT_ORDERS, rdp_to_epsilon
from privtune.exceptions import InvalidParameterError
from privtune.optim.line_search._costs import event_rdp


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
