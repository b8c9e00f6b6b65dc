"""The events of one mechanism or of one stated guarantee (no nested event).

* :class:`LaplaceEvent`, :class:`ExponentialEvent`, :class:`SparseVectorEvent`:
  pure epsilon-DP mechanisms;
* :class:`GaussianEvent`: Gaussian noise, bounded through its privacy curve;
* :class:`EpsilonDeltaEvent`: a mechanism known only to be (epsilon, delta)-DP;
* :class:`RenyiEvent`: a Renyi-DP guarantee stated at a few orders (the cap of a
  Renyi filter).

Events built on other events (sampling, composition, private selection) are in
:mod:`privtune.accounting._composite_events`. Split out of
:mod:`privtune.accounting.events` (issue 39), which re-exports every name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from privtune.accounting._event_base import PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_delta, check_epsilon, check_real


@dataclass(frozen=True, kw_only=True)
class LaplaceEvent(PrivacyEvent):
    """Laplace (or discrete Laplace) noise calibrated to pure ``epsilon``-DP.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Sensitivity / scale: the event is ``(epsilon, 0)``-DP.
    """

    kind: ClassVar[str] = "laplace"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="LaplaceEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class GaussianEvent(PrivacyEvent):
    """Gaussian (or discrete Gaussian) noise with ``noise_multiplier`` = sigma / L2-sensitivity.

    It has no single (epsilon, delta): the accountant converts its privacy curve
    (RDP or PLD) at the delta the budget allows.

    ``vector=True`` marks discrete Gaussian noise on **several coordinates**.
    Its Renyi divergence is exactly the continuous one's, ``alpha D**2 / (2 sigma**2)``
    for an integer shift of L2 norm D: Canonne, Kamath & Steinke (2020) prove
    ``D_alpha(N_Z(mu, s**2) || N_Z(nu, s**2)) <= alpha (mu - nu)**2 / (2 s**2)`` for
    one coordinate, and the Renyi divergence of product distributions is the
    sum over coordinates (independent noise), which sums the squared shifts.
    Its (epsilon, delta) privacy curve, however, is proven equal to the
    continuous Gaussian's only for one coordinate. So a vector event is
    accounted through RDP only (never PLD or the exact Gaussian curve).
    """

    kind: ClassVar[str] = "gaussian"
    noise_multiplier: float
    vector: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "noise_multiplier",
                           check_real(self.noise_multiplier, "noise_multiplier", low=0.0,
                                      owner="GaussianEvent"))
        if not isinstance(self.vector, bool):
            raise InvalidParameterError(f"The 'vector' parameter of GaussianEvent must be a bool. Got {self.vector!r}.")


@dataclass(frozen=True, kw_only=True)
class ExponentialEvent(PrivacyEvent):
    """The exponential mechanism at pure ``epsilon``-DP.

    It is also epsilon-bounded-range, hence ``epsilon**2 / 8``-zCDP
    (Cesar & Rogers 2021), which the RDP accountant uses.
    """

    kind: ClassVar[str] = "exponential"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="ExponentialEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class SparseVectorEvent(PrivacyEvent):
    """One run of the sparse vector technique (AboveThreshold) at pure ``epsilon``-DP.

    The cost does not depend on how many queries were answered below the
    threshold, only on the (declared) maximum number of positive answers, which
    is already reflected in ``epsilon``.
    """

    kind: ClassVar[str] = "sparse_vector"
    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="SparseVectorEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, 0.0)


@dataclass(frozen=True, kw_only=True)
class EpsilonDeltaEvent(PrivacyEvent):
    """A mechanism known only to be ``(epsilon, delta)``-DP.

    Used for releases with a closed-form guarantee and no finer curve, and for
    conditional releases (Kusner Alg. 1/2: ``guarantee="conditional"``).
    """

    kind: ClassVar[str] = "epsilon_delta"
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner="EpsilonDeltaEvent"))
        object.__setattr__(self, "delta", check_delta(self.delta, owner="EpsilonDeltaEvent"))

    def epsilon_delta(self) -> tuple[float, float]:
        return (self.epsilon, self.delta)


@dataclass(frozen=True, kw_only=True)
class RenyiEvent(PrivacyEvent):
    r"""A Rényi-DP guarantee stated at a few orders: ``(orders[i], epsilons[i])``-RDP for every ``i``.

    This is how a run whose mechanisms were chosen *adaptively* (budgets raised
    by a test on earlier releases) is charged: a Rényi filter fixed in advance
    (Feldman & Zrnic 2021, Thm. 3.1) stops the run before the running RDP
    total at a pre-chosen order exceeds its cap, and the whole run is then
    ``(order, cap)``-RDP, whatever the adaptive choices were. The event is the
    cap, a public, data-independent quantity.

    Bounding other orders: Rényi divergence is non-decreasing in the order
    (van Erven & Harremoës 2014, Thm. 3), so a bound at order ``a`` bounds
    every order ``alpha <= a``; an accountant evaluating the event at order
    ``alpha`` takes the smallest ``epsilons[i]`` with ``orders[i] >= alpha``,
    and no bound (``inf``) above the largest order. The event has no fixed
    (epsilon, delta) of its own (RDP accounting only; no PLD).

    Relation change (add/remove -> replace-one): a replacement is a removal and
    an addition, and the weak triangle inequality of Rényi divergence
    (Mironov 2017, Prop. 11, with ``p = q = 2``) gives
    :math:`D_\alpha(P\|R) \le \frac{\alpha - 1/2}{\alpha - 1} D_{2\alpha}(P\|Q) + D_{2\alpha-1}(Q\|R)`.
    With both terms bounded by the add/remove bound at order ``a = 2 alpha``
    (monotonicity again), an ``(a, e)`` add/remove guarantee becomes an
    ``(a / 2, (1 + (a - 1) / (a - 2)) e)`` replace-one guarantee, for ``a > 2``
    (:meth:`as_replace_one`).

    Parameters
    ----------
    orders : tuple of float, each > 1, strictly increasing
    epsilons : tuple of float, each >= 0, same length
    """

    kind: ClassVar[str] = "renyi"
    orders: tuple[float, ...]
    epsilons: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = "RenyiEvent"
        try:
            orders = tuple(float(a) for a in self.orders)
            eps = tuple(float(e) for e in self.epsilons)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"The 'orders' and 'epsilons' of {owner} must be sequences of numbers.") from None
        if not orders or len(orders) != len(eps):
            raise InvalidParameterError(f"{owner} needs as many epsilons as orders, and at least one of each.")
        increasing = all(b > a for a, b in zip(orders, orders[1:], strict=False))
        if any(not math.isfinite(a) or a <= 1 for a in orders) or not increasing:
            raise InvalidParameterError(f"The orders of {owner} must be finite, > 1 and strictly increasing.")
        if any(not math.isfinite(e) or e < 0 for e in eps):
            raise InvalidParameterError(f"The epsilons of {owner} must be finite and >= 0.")
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "epsilons", eps)

    def rdp_at(self, orders: Any) -> Any:
        """The RDP bound at each of ``orders`` (``inf`` above the largest stated order)."""
        import numpy as np

        a = np.asarray(orders, dtype=float)
        stated = np.asarray(self.orders)
        # the smallest stated epsilon among the stated orders >= alpha (epsilons need not be monotone)
        suffix_min = np.minimum.accumulate(np.asarray(self.epsilons)[::-1])[::-1]
        idx = np.searchsorted(stated, a, side="left")
        out = np.full(a.shape, np.inf)
        ok = idx < stated.size
        out[ok] = suffix_min[idx[ok]]
        return out

    def as_replace_one(self) -> RenyiEvent:
        """This add/remove guarantee stated under replace-one (weak triangle inequality; see above)."""
        if self.relation == "replace_one":
            return self
        if self.relation != "add_remove":
            raise InvalidParameterError(f"RenyiEvent of relation {self.relation!r} has no replace-one form.")
        pairs = [(a / 2.0, (1.0 + (a - 1.0) / (a - 2.0)) * e)
                 for a, e in zip(self.orders, self.epsilons, strict=True) if a > 2.0]
        if not pairs:
            raise InvalidParameterError(
                "An add/remove RenyiEvent needs an order above 2 to be stated under replace-one "
                "(the conversion halves the order).")
        return RenyiEvent(orders=tuple(a for a, _ in pairs), epsilons=tuple(e for _, e in pairs),
                          relation="replace_one", guarantee=self.guarantee, label=self.label)
