r"""The exponential mechanism over a finite candidate set, stable for any utility scale.

:class:`Exponential` selects index ``i`` of a finite set with probability
proportional to ``exp(epsilon u_i / (2 Delta))`` (or ``exp(epsilon u_i / Delta)``
for utilities that are monotonic in the data set, McSherry & Talwar 2007).

Numerics. Everything is done in log space relative to the largest utility:
``l_i = (u_i/2 - u_max/2) * (epsilon/Delta)`` (times 2 when monotonic), so that
utilities of any magnitude (``1e300``, ``-1e300``, mixtures) neither overflow nor
lose the winner; ``w_i = exp(l_i)`` lies in ``[0, 1]`` with ``w = 1`` for the
best candidates.

The draw is exact rejection sampling from an integer envelope, so that **no
candidate with a finite utility ever gets probability 0** (an integer weight
floored to 0 on one data set and not on its neighbour would break pure DP: an
earlier version floored ``w_i 2**62`` and was only ``(epsilon, |Lambda| 2**-62)``-DP):

1. envelope ``W_i = max(1, ceil(w_i 2**61 (1 + 2**-50)))``, an integer with
   ``W_i >= exp(l_i) 2**61`` (the factor covers the float error of ``exp``);
2. propose ``i`` with probability ``W_i / sum W`` by an exact uniform integer
   below ``sum W`` (several 62-bit limbs when needed) and exact integer
   cumulative sums;
3. accept with probability ``exp(l_i) 2**61 / W_i = exp(-x_i)``,
   ``x_i = -l_i + ln W_i - 61 ln 2 >= 0``, by Canonne, Kamath & Steinke's exact
   Bernoulli(exp(-x)) sampler on ``x_i`` rounded *up* to a multiple of
   ``2**-40``; otherwise go back to 2.

An accepted index is distributed exactly proportionally to ``W_i exp(-x^_i)``,
i.e. to ``exp(l_i - rho_i)`` with ``0 <= rho_i <= 2**-40`` plus the float error
of computing ``x_i`` (a relative ``2**-52``): the privacy loss of a selection
moves by at most about ``2**-39`` beyond ``epsilon`` for moderate exponents,
however small a weight is. Proposals are accepted with probability at least
``1 - |Lambda| 2**-61``, so a draw costs one exact uniform and one Bernoulli
almost always. O(|Lambda|) time and memory; a million candidates take a few
tens of milliseconds.

References
----------
.. [MT07] F. McSherry and K. Talwar, "Mechanism Design via Differential
   Privacy", FOCS 2007.
.. [Ilv20] C. Ilvento, "Implementing the Exponential Mechanism with Base-2
   Differential Privacy", ACM CCS 2020.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np

from privtune.accounting.events import ExponentialEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import _Frozen, bernoulli_exp
from privtune.utils import check_epsilon, check_finite_array, check_sensitivity
from privtune.utils._random import RandomSource, check_random_state

__all__ = ["Exponential"]

_LIMB = 2**62
_SPLIT = 31  # int64 weights are summed as (high 31 bits, low 31 bits) without overflow
_ENVELOPE_BITS = 61  # envelope weights are at most 2**61 + 2**11 < 2**62
_ACCEPT_DEN = 2**40  # acceptance exponents are rounded up to a multiple of 2**-40
_HUGE_EXPONENT = 2**1100  # an exponent beyond float range: acceptance probability below exp(-2**1060)


def _uniform_below(total: int, source: RandomSource) -> int:
    """A uniform integer in ``[0, total)`` for any Python int ``total >= 1``, exactly."""
    if total <= _LIMB:
        return int(source.integers_below(np.asarray([total], dtype=np.int64))[0])
    limbs = -(-total.bit_length() // 62)
    span = _LIMB**limbs
    limit = span - span % total  # accept r < limit: r % total is then uniform
    while True:
        digits = source.integers_below(np.full(limbs, _LIMB, dtype=np.int64)).tolist()
        r = 0
        for d in digits:
            r = (r << 62) | int(d)
        if r < limit:
            return r % total


def _envelope(logw: np.ndarray) -> np.ndarray:
    """Integer weights ``W_i = max(1, ceil(exp(l_i) 2**61 (1 + 2**-50)))``: never 0, at least ``exp(l_i) 2**61``."""
    env = np.ldexp(np.exp(logw), _ENVELOPE_BITS) * (1.0 + 2.0**-50)
    return np.maximum(1.0, np.ceil(env)).astype(np.int64)


def _acceptance_numerator(logw_i: float, weight: int) -> int:
    """``k`` such that candidate i is accepted with probability ``exp(-k / 2**40)``.

    ``k / 2**40`` is ``x_i = -l_i + ln W_i - 61 ln 2`` rounded up (and floored at
    0), so ``W_i exp(-k / 2**40)`` is ``exp(l_i) 2**61`` up to a factor in
    ``[exp(-2**-40), 1]`` and the float error of ``x_i``.
    """
    x = -logw_i + math.log(weight) - _ENVELOPE_BITS * math.log(2.0)
    return int(math.ceil(max(0.0, x) * _ACCEPT_DEN)) if math.isfinite(x) else _HUGE_EXPONENT


class Exponential(_Frozen):
    r"""Exponential mechanism: choose an index with probability rising with its utility.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Privacy parameter: each :meth:`select` is ``(epsilon, 0)``-DP.
    sensitivity : float in (0, inf)
        Declared sensitivity of the utility: the largest change of any single
        ``u_i`` when one record is replaced. A public bound.
    monotonic : bool, default=False
        Set to True only if, for neighbouring data sets, all utilities move in
        the same direction; the weights are then ``exp(epsilon u / sensitivity)``
        instead of ``exp(epsilon u / (2 sensitivity))``.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None`` draws from the operating system's CSPRNG; an int or Generator
        makes selections reproducible and is **not for release**. Resolved once,
        at construction.

    Attributes
    ----------
    epsilon, sensitivity : float
    monotonic : bool
    seeded : bool
        True when the draws are reproducible from a seed (not for release).

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain.

    Notes
    -----
    **Privacy.** Each :meth:`select` is ``(epsilon, 0)``-DP (McSherry & Talwar
    2007; exact sampling up to the float rounding of the exponents, about
    ``2**-39`` of privacy loss: no candidate's probability is rounded to 0)
    under the neighbouring relation the sensitivity was declared for
    (replace-one by default); it is also ``epsilon``-bounded-range, hence
    ``epsilon**2 / 8``-zCDP. Public: the candidate set and its size, epsilon
    and the sensitivity; only the selected index is released. Charge
    :meth:`privacy_event`, ``ExponentialEvent(epsilon)``, once per call, before
    it. :meth:`probabilities` is a function of the private utilities and is *not*
    private: use it for tests, or for diagnostics computed from already-released
    quantities.

    References
    ----------
    .. [MT07] F. McSherry and K. Talwar, "Mechanism Design via Differential
       Privacy", FOCS 2007.
    .. [CR21] M. Cesar and R. Rogers, "Bounding, Concentrating, and Truncating:
       Unifying Privacy Loss Composition for Data Analytics", ALT 2021.

    Examples
    --------
    >>> from privtune.mechanisms import Exponential
    >>> mech = Exponential(epsilon=1.0, sensitivity=1.0, random_state=0)
    >>> idx = mech.select([0.1, 0.5, 0.2])
    >>> idx in (0, 1, 2)
    True
    """

    __slots__ = ("_epsilon", "_sensitivity", "_monotonic", "_source")

    def __init__(self, *, epsilon: float, sensitivity: float, monotonic: bool = False,
                 random_state: Any = None) -> None:
        owner = "Exponential"
        eps = check_epsilon(epsilon, owner=owner)
        sens = check_sensitivity(sensitivity, owner=owner)
        if not isinstance(monotonic, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The 'monotonic' parameter of {owner} must be a bool. Got {monotonic!r} instead."
            )
        self._set("_epsilon", eps)
        self._set("_sensitivity", sens)
        self._set("_monotonic", bool(monotonic))
        self._set("_source", check_random_state(random_state, owner=owner))

    @property
    def epsilon(self) -> float:
        """Privacy parameter of one selection."""
        return self._epsilon

    @property
    def sensitivity(self) -> float:
        """Declared sensitivity of each utility."""
        return self._sensitivity

    @property
    def monotonic(self) -> bool:
        """Whether the utilities are declared monotonic."""
        return self._monotonic

    @property
    def seeded(self) -> bool:
        """True when the draws are reproducible from a seed (not for release)."""
        return bool(self._source.seeded)

    # -- the distribution --------------------------------------------------------------
    def _log_weights(self, utilities: Any) -> np.ndarray:
        """``l_i = log w_i - log w_max`` (so ``max l = 0``), stable for any magnitude."""
        u = check_finite_array(utilities, "utilities", owner="Exponential", ndim=1)
        factor = self._epsilon / self._sensitivity  # exponent is (u/2) * factor (x2 if monotonic)
        if self._monotonic:
            factor = 2.0 * factor
        half = 0.5 * u
        with np.errstate(over="ignore", invalid="ignore"):
            logw = (half - half.max()) * factor
        # factor == inf: the best candidates keep 0 (0 * inf = nan), the others -inf.
        logw[np.isnan(logw)] = 0.0
        return logw

    def probabilities(self, utilities: Any) -> np.ndarray:
        """Exact selection probabilities of the exponential mechanism.

        Parameters
        ----------
        utilities : array_like of float, shape (n_candidates,)
            Finite utilities, one per candidate.

        Returns
        -------
        ndarray of float, shape (n_candidates,)
            ``exp(l_i) / sum_j exp(l_j)``, computed stably in log space.

        Raises
        ------
        InvalidParameterError
            If ``utilities`` is empty, not one-dimensional, or not finite.

        Notes
        -----
        **Privacy.** Not a private release: it reads the utilities directly.
        """
        w = np.exp(self._log_weights(utilities))
        return w / math.fsum(w.tolist())

    def select(self, utilities: Any) -> int:
        """Draw one index from the exponential mechanism.

        Parameters
        ----------
        utilities : array_like of float, shape (n_candidates,)
            Finite utilities, one per candidate (any magnitude; up to millions of
            candidates).

        Returns
        -------
        int
            The selected index.

        Raises
        ------
        InvalidParameterError
            If ``utilities`` is empty, not one-dimensional, or contains NaN or
            infinities. No randomness is drawn.

        Notes
        -----
        **Privacy.** ``(epsilon, 0)``-DP per call; charge :meth:`privacy_event`.
        """
        logw = self._log_weights(utilities)
        n = logw.size
        if n == 1:
            return 0
        weights = _envelope(logw)
        if n >= 2**32:
            raise InvalidParameterError(
                "The 'utilities' parameter of Exponential must have fewer than 2**32 entries."
            )
        # Exact cumulative sums of 62-bit weights: split into two 31-bit halves whose
        # int64 cumulative sums cannot overflow for fewer than 2**32 candidates.
        cum_hi = np.cumsum(weights >> _SPLIT)
        cum_lo = np.cumsum(weights & ((1 << _SPLIT) - 1))

        def cum(i: int) -> int:
            return (int(cum_hi[i]) << _SPLIT) + int(cum_lo[i])

        total = cum(n - 1)
        while True:
            r = _uniform_below(total, self._source)
            # First i with cum(i) > r (weights are >= 1, so cum is increasing).
            i = bisect.bisect_right(range(n), r, key=cum)
            num = _acceptance_numerator(float(logw[i]), int(weights[i]))
            if bool(bernoulli_exp(np.array([num], dtype=object), _ACCEPT_DEN, self._source)[0]):
                return i

    def privacy_event(self) -> ExponentialEvent:
        """The event to charge for one :meth:`select` call: ``ExponentialEvent(epsilon)``."""
        return ExponentialEvent(epsilon=self._epsilon)

    def __repr__(self) -> str:
        return (f"Exponential(epsilon={self._epsilon!r}, sensitivity={self._sensitivity!r}, "
                f"monotonic={self._monotonic!r}, "
                f"random_state={'<seeded>' if self.seeded else '<secure>'})")
