"""Confidence bounds and exact privacy parameters used by the DP audit.

Everything here is vectorised numpy/scipy and touches no sensitive data: the
inputs are counts of outputs of a mechanism, or the exact output
distributions of a mechanism with a finite output set.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_delta, check_real

__all__ = [
    "clopper_pearson",
    "epsilon_lower_bound_from_counts",
    "discrete_epsilon",
    "hockey_stick_delta",
]


def _check_alpha(alpha: Any, owner: str) -> float:
    return check_real(alpha, "alpha", low=0.0, high=1.0, closed="neither", owner=owner)


def _check_counts(successes: Any, trials: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(successes)
    n = np.asarray(trials)
    for arr, name in ((k, "successes"), (n, "trials")):
        if arr.dtype.kind not in "iu":
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be an integer or an array of integers. "
                f"Got dtype {arr.dtype} instead."
            )
    try:
        k, n = np.broadcast_arrays(k.astype(np.float64), n.astype(np.float64))
    except ValueError:
        raise InvalidParameterError(
            f"The 'successes' and 'trials' parameters of {owner} must broadcast together."
        ) from None
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise InvalidParameterError(
            f"The parameters of {owner} must satisfy 0 <= successes <= trials and trials >= 1."
        )
    return k, n


def _cp_lower(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    out = np.zeros(k.shape, dtype=np.float64)
    pos = k > 0
    if np.any(pos):
        out[pos] = special.betaincinv(k[pos], n[pos] - k[pos] + 1.0, alpha)
    return out


def _cp_upper(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    out = np.ones(k.shape, dtype=np.float64)
    lt = k < n
    if np.any(lt):
        out[lt] = special.betaincinv(k[lt] + 1.0, n[lt] - k[lt], 1.0 - alpha)
    return out


def clopper_pearson(successes: Any, trials: Any, *, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson (exact binomial) confidence bounds.

    Parameters
    ----------
    successes : int or array-like of int
        Number of samples that fell in the set, ``0 <= successes <= trials``.
    trials : int or array-like of int
        Number of samples, at least 1. Broadcast against ``successes``.
    alpha : float in (0, 1)
        Error probability of **each** one-sided bound.

    Returns
    -------
    lower : ndarray of float
        ``P[p < lower] <= alpha``: the ``alpha`` quantile of
        ``Beta(k, n - k + 1)``, and 0 when ``k = 0``.
    upper : ndarray of float
        ``P[p > upper] <= alpha``: the ``1 - alpha`` quantile of
        ``Beta(k + 1, n - k)``, and 1 when ``k = n``.

    Together they form a two-sided interval of confidence ``1 - 2 * alpha``.

    Raises
    ------
    InvalidParameterError
        If the counts are not integers with ``0 <= k <= n``, ``n >= 1``, or
        ``alpha`` is not in (0, 1).

    Notes
    -----
    The bounds are exact (conservative): their coverage is at least
    ``1 - alpha`` for every true probability, not only asymptotically.

    Examples
    --------
    >>> from privtune.testing import clopper_pearson
    >>> lo, hi = clopper_pearson(50, 100, alpha=0.025)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.3983, 0.6017)
    """
    owner = "clopper_pearson"
    a = _check_alpha(alpha, owner)
    k, n = _check_counts(successes, trials, owner)
    return _cp_lower(k, n, a), _cp_upper(k, n, a)


def _eps_bounds(count_num: np.ndarray, n_num: int, count_den: np.ndarray, n_den: int,
                delta: float, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-set ``log((lo_num - delta) / hi_den)`` plus the two bounds (no validation)."""
    lo = _cp_lower(np.asarray(count_num, dtype=np.float64), np.full(np.shape(count_num), float(n_num)),
                   alpha)
    hi = _cp_upper(np.asarray(count_den, dtype=np.float64), np.full(np.shape(count_den), float(n_den)),
                   alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(lo > delta, np.log(np.maximum(lo - delta, 1e-300)) - np.log(hi), -np.inf)
    return eps, lo, hi


def epsilon_lower_bound_from_counts(
    count_d: Any,
    n_d: int,
    count_d_prime: Any,
    n_d_prime: int,
    *,
    delta: float = 0.0,
    alpha: float,
) -> np.ndarray:
    """Lower confidence bound on epsilon from the counts of one output set.

    For a set ``S`` of outputs, ``count_d`` of ``n_d`` runs on ``D`` and
    ``count_d_prime`` of ``n_d_prime`` runs on ``D'`` fell in ``S``. With the
    one-sided Clopper–Pearson bounds ``p_lo <= P_D(S)`` and
    ``p_hi >= P_D'(S)`` (each of error ``alpha``), an ``(epsilon, delta)``-DP
    mechanism satisfies ``P_D(S) <= e**epsilon * P_D'(S) + delta``, hence::

        epsilon >= log((p_lo - delta) / p_hi)

    with probability at least ``1 - 2 * alpha``. This is the direction
    "``S`` is more likely under ``D``"; swap the arguments for the other one.

    Parameters
    ----------
    count_d, count_d_prime : int or array-like of int
        Counts of the set(s) in the two samples (arrays are evaluated
        element-wise, one set per element).
    n_d, n_d_prime : int
        Sample sizes.
    delta : float in [0, 1), default=0.0
        The claimed delta.
    alpha : float in (0, 1)
        Error probability of each of the two one-sided bounds. Divide your
        overall alpha by ``2 * number_of_tests`` (Bonferroni; a test is one
        set in one direction, so both directions of a set are two tests)
        before calling this on many sets at once and taking the maximum.

    Returns
    -------
    ndarray of float
        The bound per set; ``-inf`` when ``p_lo <= delta`` (no evidence).

    Raises
    ------
    InvalidParameterError
        For invalid counts, ``delta`` or ``alpha``.

    Examples
    --------
    >>> from privtune.testing import epsilon_lower_bound_from_counts
    >>> b = epsilon_lower_bound_from_counts(7300, 10000, 2700, 10000, alpha=1e-4)
    >>> 0.9 < float(b) < 1.0
    True
    """
    owner = "epsilon_lower_bound_from_counts"
    a = _check_alpha(alpha, owner)
    d = check_delta(delta, owner=owner)
    kd, nd = _check_counts(count_d, n_d, owner)
    kp, npr = _check_counts(count_d_prime, n_d_prime, owner)
    lo = _cp_lower(kd, nd, a)
    hi = _cp_upper(kp, npr, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lo > d, np.log(np.maximum(lo - d, 1e-300)) - np.log(hi), -np.inf)


def _check_distribution(p: Any, name: str, owner: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a non-empty 1-D array.")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must hold finite non-negative probabilities."
        )
    if not math.isclose(float(arr.sum()), 1.0, rel_tol=0.0, abs_tol=1e-9):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must sum to 1. Got a sum of {float(arr.sum())!r}."
        )
    return arr


def _check_pair(p: Any, q: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    pp = _check_distribution(p, "p", owner)
    qq = _check_distribution(q, "q", owner)
    if pp.shape != qq.shape:
        raise InvalidParameterError(f"The 'p' and 'q' parameters of {owner} must have the same length.")
    return pp, qq


def hockey_stick_delta(p: Any, q: Any, *, epsilon: float) -> float:
    """Exact smallest delta for which a finite-output mechanism is (epsilon, delta)-DP on (D, D').

    ``max(sum((p - e**eps q)_+), sum((q - e**eps p)_+))``: the hockey-stick
    divergence in both directions.

    Parameters
    ----------
    p, q : array-like of float
        Output distributions on ``D`` and ``D'`` over the same finite outcomes.
    epsilon : float in [0, inf)

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> from privtune.testing import hockey_stick_delta
    >>> p = [math.e / (1 + math.e), 1 / (1 + math.e)]   # randomised response, eps = 1
    >>> hockey_stick_delta(p, p[::-1], epsilon=1.0) < 1e-15
    True
    """
    owner = "hockey_stick_delta"
    pp, qq = _check_pair(p, q, owner)
    e = check_real(epsilon, "epsilon", low=0.0, closed="left", owner=owner)
    f = math.exp(e)
    return float(max(np.maximum(pp - f * qq, 0.0).sum(), np.maximum(qq - f * pp, 0.0).sum()))


def _one_way_epsilon(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    # The optimal set for P(S) - e^eps Q(S) is a top-k set in the likelihood ratio p / q,
    # so the smallest eps is max_k log((P(S_k) - delta) / Q(S_k)).
    with np.errstate(divide="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.where(p > 0, np.inf, 0.0))
    order = np.argsort(-ratio, kind="stable")
    cp = np.cumsum(p[order])
    cq = np.cumsum(q[order])
    best = 0.0
    for pk, qk in zip(cp, cq, strict=True):
        if pk - delta <= 1e-15:
            continue
        if qk <= 0.0:
            return math.inf
        best = max(best, math.log((pk - delta) / qk))
    return best


def discrete_epsilon(p: Any, q: Any, *, delta: float = 0.0) -> float:
    """Exact smallest epsilon for which a finite-output mechanism is (epsilon, delta)-DP on (D, D').

    Use it with a mechanism's exact output probabilities (for example
    :meth:`Exponential.probabilities`) to know the truth an audit should approach.

    Parameters
    ----------
    p, q : array-like of float
        Output distributions on ``D`` and ``D'`` over the same finite outcomes.
    delta : float in [0, 1), default=0.0

    Returns
    -------
    float
        ``0 <= epsilon <= inf``. For ``delta = 0`` this is
        ``max |log(p_i / q_i)|``.

    Examples
    --------
    >>> import math
    >>> from privtune.testing import discrete_epsilon
    >>> p = [math.e / (1 + math.e), 1 / (1 + math.e)]
    >>> round(discrete_epsilon(p, p[::-1]), 12)
    1.0
    """
    owner = "discrete_epsilon"
    pp, qq = _check_pair(p, q, owner)
    d = check_delta(delta, owner=owner)
    return max(_one_way_epsilon(pp, qq, d), _one_way_epsilon(qq, pp, d))
