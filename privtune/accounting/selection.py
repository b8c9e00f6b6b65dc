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

import functools
import math

import numpy as np

from privtune.accounting import rdp_math
from privtune.exceptions import InvalidParameterError
from privtune.utils._random import RandomStateLike, check_random_state
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


#: The law of K is cut where the untruncated tail mass is below this (and renormalised): see
#: :func:`repetition_cap`.
REPETITION_TAIL = 2.0**-100


def repetition_cap(mean: float, shape: float) -> tuple[int, float]:
    """The hard cap on the number of runs K and the tail mass the cap removes (public).

    Random stopping draws K from the truncated-negative-binomial (or Poisson)
    law of Papernot & Steinke **conditioned on K <= max_runs**, so no run beyond
    the cap can happen. The guarantee is stated for that capped law: it is
    within total variation ``p`` of the uncapped one (conditioning on an event of
    probability ``1 - p``, whatever the data), so a computation that is
    ``(eps, delta)``-DP with the uncapped law is ``(eps, delta + (1 + e**eps) p)``-DP
    with the capped one (couple the two draws of K; they differ with
    probability at most p). The accountant adds this term
    (:class:`~privtune.accounting.RepeatAndSelectEvent`).

    Returns
    -------
    max_runs : int
    tail_mass : float
        An upper bound on P[K > max_runs] under the uncapped law (at most 2**-100).
    """
    pmf = _repetition_pmf(float(mean), float(shape))
    return len(pmf) - 1, REPETITION_TAIL


@functools.lru_cache(maxsize=64)
def _repetition_cdf(mean: float, shape: float) -> np.ndarray:
    cdf = np.cumsum(_repetition_pmf(mean, shape))
    cdf.setflags(write=False)
    return cdf


@functools.lru_cache(maxsize=64)
def _repetition_pmf(mean: float, shape: float, tail: float = REPETITION_TAIL) -> np.ndarray:
    """pmf of K over 0..k_max: the law conditioned on K <= k_max, where the cut mass is provably below ``tail``.

    Both laws have term ratios ``r_k = w_{k+1} / w_k`` that decrease in k; once
    ``r_k < 1`` the unlisted mass is at most ``w_k r_k / (1 - r_k)`` (a geometric
    series), and the loop stops when that is below ``tail`` times the listed
    mass; the listed weights are then renormalised (conditioning).
    """
    weights: list[float] = []
    if math.isinf(shape):  # Poisson(mean), K = 0 allowed (outputs nothing)
        k, w = 0, math.exp(-mean)
        ratio = lambda k: mean / (k + 1)  # noqa: E731
    else:
        gamma = rdp_math.truncated_negative_binomial_gamma(mean, shape)
        weights.append(0.0)  # K >= 1
        # P[K = k] proportional to C(k + eta - 1, k) (1 - gamma)^k; eta = 0: (1 - gamma)^k / k.
        k, w = 1, (shape if shape != 0 else 1.0) * (1 - gamma)
        ratio = lambda k: ((k + shape) / (k + 1)) * (1 - gamma)  # noqa: E731
    total = math.fsum(weights)  # a running sum: re-summing every weight made large means quadratic
    while True:
        weights.append(w)
        total += w
        r = ratio(k)
        if r < 1 and w * r / (1 - r) < tail * total:
            break
        if k > 10**7:  # pragma: no cover - only for absurd means
            raise InvalidParameterError("The mean number of repetitions is too large to sample.")
        w *= r
        k += 1
    arr = np.array(weights) / math.fsum(weights)
    arr.setflags(write=False)
    return arr


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
    never log or report it for a secure run. Sampling is by inverse CDF with an
    exact 53-bit uniform from the law conditioned on ``K <= max_runs``
    (:func:`repetition_cap`): K can never exceed the cap, and the cap's cost (a
    tail mass below 2**-100) is accounted for by the accountant.
    """
    m = check_real(mean, "mean", low=1.0, owner="sample_repetitions")
    eta = check_real(shape, "shape", low=-1.0, allow_inf=True, owner="sample_repetitions")
    n = 1 if size is None else check_integer(size, "size", low=0, owner="sample_repetitions")
    source = check_random_state(random_state, owner="sample_repetitions")
    cdf = _repetition_cdf(m, eta)
    u = source.uniform53(n)
    k = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1).astype(np.int64)
    return int(k[0]) if size is None else k
