"""Private selection bounds: Liu & Talwar (2019) and Papernot & Steinke (2022).

A *private selection* runs a DP candidate mechanism Q (train with hyperparameters
lambda_i, then score) several times and releases only the best candidate. When
the number of runs K is random and secret, the cost is a small constant factor
of Q's, independent of the mean number of runs:

=======================================  ==============================  ==================
K                                        guarantee for an eps-DP Q        source
=======================================  ==============================  ==================
until a score beats a public threshold   2 eps                            Liu & Talwar 2019
geometric (best of K)                    3 eps                            Liu & Talwar 2019
truncated negative binomial, shape eta   (2 + eta) eps                    P&S 2022, Thm. 2
Poisson(mu)                              RDP only (Thm. 6)                P&S 2022, Thm. 6
=======================================  ==============================  ==================

For RDP candidates (e.g. DP-SGD) use :class:`~privtune.accounting.RepeatAndSelectEvent`,
which the accountant bounds with the full theorems (through ``dp_accounting``);
:func:`repeat_and_select_epsilon` gives the same number from privtune's own
implementation in :mod:`privtune.accounting.rdp_math`.

The base mechanism Q must be DP with respect to *every* sensitive role it
touches (training and validation data), otherwise none of these bounds apply.
K must be drawn from a secret, secure source: use :func:`sample_repetitions`.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from privtune.accounting import rdp_math
from privtune.exceptions import InvalidParameterError
from privtune.utils._random import RandomSource, RandomStateLike, check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = [
    "liu_talwar_epsilon",
    "papernot_steinke_epsilon",
    "repeat_and_select_epsilon",
    "sample_repetitions",
]


def liu_talwar_epsilon(epsilon: float, *, stopping: str = "threshold") -> float:
    """Pure-DP cost of Liu & Talwar's private selection with an epsilon-DP base.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Pure DP guarantee of one candidate run.
    stopping : {"threshold", "geometric"}, default="threshold"
        ``"threshold"``: stop at the first score above a public threshold (with a
        per-round stopping probability) -- ``2 epsilon``. ``"geometric"``: best of
        a geometric number of runs -- ``3 epsilon``.

    Returns
    -------
    float
    """
    eps = check_epsilon(epsilon, owner="liu_talwar_epsilon")
    if stopping == "threshold":
        return 2.0 * eps
    if stopping == "geometric":
        return 3.0 * eps
    raise InvalidParameterError(
        "The 'stopping' parameter of liu_talwar_epsilon must be one of ['threshold', 'geometric']. "
        f"Got {stopping!r} instead.")


def papernot_steinke_epsilon(epsilon: float, *, shape: float) -> float:
    """Pure-DP cost ``(2 + eta) epsilon`` of best-of-K with a truncated negative binomial K.

    The corollary of Papernot & Steinke (2022) Thm. 2 as both orders go to
    infinity; ``shape`` = eta in (-1, inf) (0 logarithmic, 1 geometric). Valid
    for any mean of K. A Poisson K has no such pure-DP corollary.
    """
    eps = check_epsilon(epsilon, owner="papernot_steinke_epsilon")
    eta = check_real(shape, "shape", low=-1.0, owner="papernot_steinke_epsilon")
    return (2.0 + eta) * eps


def repeat_and_select_epsilon(
    base_rdp: np.ndarray,
    *,
    mean: float,
    shape: float,
    delta: float,
    orders: np.ndarray | None = None,
) -> float:
    """(epsilon, delta) of best-of-K for a base mechanism with the given RDP curve.

    Parameters
    ----------
    base_rdp : ndarray
        The RDP curve of one run at ``orders`` (e.g.
        :func:`privtune.accounting.rdp_math.laplace_rdp`).
    mean : float in (1, inf)
        E[K].
    shape : float in (-1, inf]
        eta (``inf`` for a Poisson K).
    delta : float in (0, 1)
    orders : ndarray or None

    Returns
    -------
    float
        The epsilon at ``delta``.

    Examples
    --------
    Papernot & Steinke's Laplace example (epsilon = 1 per run, mean 10, delta = 1e-6):

    >>> from privtune.accounting.rdp_math import laplace_rdp
    >>> round(repeat_and_select_epsilon(laplace_rdp(None, 1.0), mean=10, shape=1, delta=1e-6), 2)
    3.01
    """
    d = check_delta(delta, owner="repeat_and_select_epsilon", allow_zero=False)
    curve = rdp_math.repeat_and_select_rdp(orders, base_rdp, mean=mean, shape=shape)
    return rdp_math.rdp_to_epsilon(orders, curve, d)


#: The total variation between the law of K that :func:`sample_repetitions` draws from and the uncapped law the
#: selection bounds are proven for is at most this: see :func:`repetition_cap`.
REPETITION_TAIL = 2.0**-100

#: Fixed-point resolution (bits) of the integer weights K is drawn from (raised if the rounding bound needs it).
_WEIGHT_BITS = 160
_HALF_TAIL = 101  # the cap's tail and the weights' rounding are each kept below 2**-101 (sum: 2**-100)


class _RepetitionLaw(NamedTuple):
    """The exact law :func:`sample_repetitions` draws K from: ``P[K = k] = weights[k] / total`` (internal)."""

    cumulative: tuple[int, ...]  # cumulative[k] = weights[0] + ... + weights[k]
    total: int
    deviation: Fraction  # upper bound on the total variation to the uncapped law
    pmf: np.ndarray  # float view, for reports and tests


def repetition_cap(mean: float, shape: float) -> tuple[int, float]:
    """The hard cap on the number of runs K and the total variation the accountant charges for it (public).

    Random stopping draws K from an exactly specified law on ``0..max_runs``
    (see :func:`sample_repetitions`): the truncated-negative-binomial (or
    Poisson) law of Papernot & Steinke conditioned on ``K <= max_runs``, its
    weights held as integers at 2**-160 resolution (or finer). Its total
    variation to the uncapped law is at most ``p = 2**-100``: the cap's tail and
    the rounding of the weights are each bounded below 2**-101 by exact integer
    arithmetic. A computation that is ``(eps, delta)``-DP with the uncapped
    law is therefore ``(eps, delta + (1 + e**eps) p)``-DP with the law sampled
    (couple the two draws of K; they differ with probability at most p). The
    accountant adds this term (:class:`~privtune.accounting.RepeatAndSelectEvent`).

    The target law is the one of the floating-point gamma that
    :func:`privtune.accounting.rdp_math.truncated_negative_binomial_gamma`
    returns for ``mean`` (taken as an exact rational). Until this version K was
    drawn by a floating-point inverse CDF with a 53-bit uniform, about 1e-14 in
    total variation from the law (the charged 2**-100 did not cover it).

    Returns
    -------
    max_runs : int
    tail_mass : float
        The total variation charged, ``2**-100``: an upper bound on the total
        variation between the law sampled and the uncapped law.
    """
    law = _repetition_law(float(mean), float(shape))
    return len(law.cumulative) - 1, REPETITION_TAIL


def _repetition_pmf(mean: float, shape: float) -> np.ndarray:
    """pmf of K over ``0..max_runs`` (float view of the exact law sampled; see :func:`_repetition_law`)."""
    return _repetition_law(float(mean), float(shape)).pmf


@functools.lru_cache(maxsize=64)
def _repetition_law(mean: float, shape: float) -> _RepetitionLaw:
    """The capped law of K as integer weights, with a proven bound on its distance to the uncapped law.

    Weights ``x_k`` of the uncapped law (up to a common factor) satisfy
    ``x_{k+1} = x_k r_k`` with a rational ratio: ``r_k = (k + eta)(1 - gamma)/(k + 1)``
    for the truncated negative binomial (``|eta|`` for eta < 0, 1 for eta = 0 at
    k = 1, K >= 1), ``mean / (k + 1)`` for the Poisson law (K >= 0); eta, gamma
    and the mean are floats, hence exact dyadic rationals. With
    ``x_first = 2**bits``, the integer weights ``W_{k+1} = floor(W_k r_k)`` satisfy
    ``0 <= x_k - W_k <= e_k`` with ``e_{k+1} = ceil(e_k r_k) + 1`` (exact integer
    arithmetic). The tail beyond ``k`` is at most ``x_k rho / (1 - rho)`` for any
    ``rho < 1`` bounding every later ratio (``r_k`` itself when the ratios do not
    increase: eta >= 1 or Poisson; ``1 - gamma`` when eta < 1, where they
    increase towards it). The law is cut at the first ``k`` where that bound is
    below ``2**-101`` times the listed weight ``S``. With ``E = sum e_k`` and ``T``
    the tail bound, the total variation between ``W / S`` and the uncapped law
    is at most ``(E + T) / S`` (``W <= x`` entrywise and ``S <= sum x``); the
    resolution is raised until ``E <= 2**-101 S``.
    """
    bits = _WEIGHT_BITS
    while True:
        law = _build_repetition_law(mean, shape, bits)
        if law is not None:
            return law
        bits += 64  # pragma: no cover - 160 bits suffice for every mean up to the 10**7-run guard


def _build_repetition_law(mean: float, shape: float, bits: int) -> _RepetitionLaw | None:
    if math.isinf(shape):  # Poisson(mean), K = 0 allowed (outputs nothing)
        m = Fraction(mean)
        first = 0

        def ratio(k: int) -> tuple[int, int]:
            return m.numerator, m.denominator * (k + 1)

        def tail_ratio(k: int) -> tuple[int, int]:
            return ratio(k)  # decreasing in k
    else:
        g = Fraction(rdp_math.truncated_negative_binomial_gamma(mean, shape))
        eta = Fraction(shape)
        q = 1 - g
        first = 1  # K >= 1
        # P[K = k] proportional to C(k + eta - 1, k) (1 - gamma)^k; eta = 0: (1 - gamma)^k / k.

        def ratio(k: int) -> tuple[int, int]:
            return ((k * eta.denominator + eta.numerator) * q.numerator,
                    (k + 1) * eta.denominator * q.denominator)

        def tail_ratio(k: int) -> tuple[int, int]:
            return ratio(k) if eta >= 1 else (q.numerator, q.denominator)
    w, e = 1 << bits, 0
    weights = [0] * first + [w]
    total, err = w, 0
    k = first
    while True:
        a, b = tail_ratio(k)
        if a < b and ((w + e) * a) << _HALF_TAIL <= total * (b - a):
            break
        if k > 10**7:  # pragma: no cover - only for absurd means
            raise InvalidParameterError("The mean number of repetitions is too large to sample.")
        p, d = ratio(k)
        w, e = (w * p) // d, -((-e * p) // d) + 1
        weights.append(w)
        total += w
        err += e
        k += 1
    if err << _HALF_TAIL > total:
        return None
    deviation = Fraction(err, total) + Fraction((w + e) * a, (b - a) * total)
    assert deviation <= Fraction(REPETITION_TAIL)
    cumulative = tuple(itertools.accumulate(weights))
    pmf = np.array([x / total for x in weights])
    pmf.setflags(write=False)
    return _RepetitionLaw(cumulative, total, deviation, pmf)


def _draw_repetitions(law: _RepetitionLaw, source: RandomSource, n: int) -> np.ndarray:
    """``n`` exact draws from ``law`` by inverse CDF over a lazily extended uniform binary fraction.

    A uniform ``u`` in [0, 1) is read 62 bits at a time; K is the number of
    cumulative weights ``C_j <= u S``, decided as soon as the dyadic interval the
    bits read so far pin ``u`` to lies inside one step of the CDF (exact
    integer comparisons), so ``P[K = k] = W_k / S`` exactly.
    """
    cum, total = law.cumulative, law.total
    chunks = -(-(total.bit_length() + 16) // 62)  # 16 spare bits: one more chunk is needed with probability < 2**-16
    drawn = source.integers_below(np.full((n, chunks), 2**62, dtype=np.int64))
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        v = 0
        for c in drawn[i]:
            v = (v << 62) | int(c)
        width = 62 * chunks
        while True:
            low = (v * total) >> width  # floor of u S at the interval's left end
            high = -((-(v + 1) * total) >> width)  # ceil of u S at its right end
            k = bisect.bisect_right(cum, low)
            if k == bisect.bisect_left(cum, high):
                break
            v = (v << 62) | int(source.integers_below(np.full(1, 2**62, dtype=np.int64))[0])
            width += 62
        out[i] = k
    return out


def sample_repetitions(
    mean: float, *, shape: float, size: int | None = None, random_state: RandomStateLike = None
) -> int | np.ndarray:
    """Draw the secret number of runs K for a random-stopping private selection.

    Parameters
    ----------
    mean : float in (1, inf)
        E[K].
    shape : float in (-1, inf]
        Truncated negative binomial eta (0: logarithmic, 1: geometric), or
        ``inf`` for Poisson(mean) (which may return 0: release nothing).
    size : int or None, default=None
        ``None`` for one draw (an int), else an array of ``size`` draws.
    random_state : None, int or numpy Generator
        ``None`` (default) uses the secure source: K must stay secret.

    Returns
    -------
    int or ndarray of int

    Notes
    -----
    **Privacy.** K is data-independent, but the guarantees of
    :func:`papernot_steinke_epsilon` assume it is hidden from the adversary:
    never log or report it for a secure run. K is drawn exactly (integer
    arithmetic, uniform bits read until the draw is decided) from an exactly
    specified law on ``0..max_runs`` (:func:`repetition_cap`) within total
    variation 2**-100 of the uncapped law, which the accountant charges: K can
    never exceed the cap. (Before, K was drawn by a floating-point inverse CDF
    with a 53-bit uniform, about 1e-14 away from that law, and values of K near
    the cap could not be drawn at all.) A seeded ``random_state`` gives
    reproducible draws.
    """
    m = check_real(mean, "mean", low=1.0, owner="sample_repetitions")
    eta = check_real(shape, "shape", low=-1.0, allow_inf=True, owner="sample_repetitions")
    n = 1 if size is None else check_integer(size, "size", low=0, owner="sample_repetitions")
    source = check_random_state(random_state, owner="sample_repetitions")
    k = _draw_repetitions(_repetition_law(m, eta), source, n)
    return int(k[0]) if size is None else k
