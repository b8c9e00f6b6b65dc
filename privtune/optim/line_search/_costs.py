"""The batch scheme of a DP-BLSGD run (seed 003), the events of its mechanisms and their RDP curves.

* :class:`Scheme` -- the batch scheme (full batch, fixed-size batches drawn
  without replacement, Poisson batches), its public divisor, its neighbouring
  relation and the sensitivities that follow;
* the mechanism events (:func:`gradient_event`, :func:`search_event`) and their
  RDP curves (:func:`event_rdp`): dp-accounting's RDP accountant (through
  :func:`privtune.accounting.accountant._rdp_curve`) for the (sampled) Gaussian
  gradients, the Bun & Steinke bound (:func:`privtune.accounting.rdp_math.pure_dp_rdp`)
  of the amplified pure epsilon for the Laplace line search, and the stated
  curve of a :class:`~privtune.accounting.events.RenyiEvent` for the Gaussian
  line search (:mod:`privtune.optim.line_search._gaussian_search`);
* :data:`STATED_ORDERS`, the orders at which a run's curve is stated.

Functions of public quantities only. Split out of
:mod:`privtune.optim.line_search._accounting` (issue 39), which re-exports
every name defined here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from privtune.accounting.accountant import _rdp_curve
from privtune.accounting.events import (
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RenyiEvent,
    SampledWithoutReplacementEvent,
    SparseVectorEvent,
)
from privtune.accounting.rdp_math import DEFAULT_ORDERS, pure_dp_rdp
from privtune.exceptions import InvalidParameterError
from privtune.optim.line_search._gaussian_search import gaussian_search_curve

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
