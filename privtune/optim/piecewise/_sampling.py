r"""Samplers for the exponential mechanism on a box with a max-affine score (seed 001, M_E).

Target density on the box ``P = [lo, hi]`` (Han et al. 2014, eq. 8):

.. math:: \pi_D(x) \propto \exp(-\kappa f(x)), \qquad f(x) = \max_i (a_i^\top x + b_i),
          \quad \kappa = \varepsilon / (2 b_{\max}).

Three samplers, with what can be said about their privacy:

* ``"rejection"``: uniform proposals on ``P`` accepted with probability
  ``exp(-kappa (f(x) - f_opt))``. Each accepted point is an **exact** draw from
  ``pi_D``. With a cap of ``N`` proposals (then a data-independent fallback, the
  centre of ``P``) the law of the output is within total variation
  ``(1 - p_min)**N`` of ``pi_D`` where ``p_min = exp(-kappa W)`` and
  ``W = max_i sum_j |a_ij| (hi_j - lo_j)`` bounds ``max_P f - min_P f`` from
  public quantities only (:func:`rejection_tv_bound`).
* ``"gibbs"``: systematic-scan Gibbs sampler whose coordinate updates are exact
  draws from the 1-D conditionals, which are piecewise exponential
  (:func:`sample_piecewise_exponential`). Each conditional density is at least
  ``exp(-kappa V_j) / (hi_j - lo_j)`` with ``V_j = max_i |a_ij| (hi_j - lo_j)``,
  so one sweep satisfies the Doeblin minorisation ``K(x, .) >= beta Unif(P)`` with
  ``beta = exp(-kappa sum_j V_j)``, and after ``T`` sweeps from *any* start the
  total variation to ``pi_D`` is at most ``(1 - beta)**T``
  (:func:`gibbs_tv_bound`) [RR04]_.
* ``"metropolis"``: the paper's random-walk Metropolis (Gaussian proposal of
  covariance ``eta c I``, i.e. standard deviation ``sqrt(eta c)`` per coordinate,
  proposals outside ``P`` rejected). No mixing bound is available: its guarantee
  is heuristic.

A sampler whose output law is within total variation ``eta`` of an epsilon-DP
``pi_D`` for every input is ``(epsilon, (1 + e**epsilon) eta)``-DP. Uniforms come
from the privtune :class:`~privtune.utils.RandomSource` (secure by default); the
samplers use floating-point transforms of them (no grid-exact sampling), and the
running time of ``"rejection"`` depends on the data (a timing side channel that
the release itself does not carry).

References
----------
.. [RR04] G. O. Roberts and J. S. Rosenthal, "General state space Markov chains
   and MCMC algorithms", Probability Surveys 1 (2004), Thm. 8 (Doeblin).
"""

from __future__ import annotations

import math

import numpy as np

from privtune.utils._random import RandomSource

__all__ = [
    "sample_piecewise_exponential",
    "rejection_tv_bound",
    "gibbs_tv_bound",
    "sample_rejection",
    "sample_gibbs",
    "sample_metropolis",
]

_BATCH = 4096


def _log_mass(g: np.ndarray, L: np.ndarray) -> np.ndarray:
    """``log int_0^L exp(g t) dt`` element-wise, stably for any sign of ``g L``."""
    x = g * L
    out = np.empty_like(x)
    small = np.abs(x) < 1e-12
    pos = (x > 0) & ~small
    neg = (x < 0) & ~small
    out[small] = np.log(L[small]) + 0.5 * x[small]
    out[pos] = x[pos] + np.log(-np.expm1(-x[pos])) - np.log(g[pos])
    out[neg] = np.log(-np.expm1(x[neg])) - np.log(-g[neg])
    return out


def _upper_envelope(s: np.ndarray, q: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Knots ``lo = t_0 < ... < t_K = hi`` and the active line of each segment of ``max_i(s_i t + q_i)``."""
    vals = s * lo + q
    top = vals.max()
    ties = np.flatnonzero(vals >= top - 1e-12 * max(1.0, abs(top)))
    j = int(ties[np.argmax(s[ties])])
    knots, active = [lo], [j]
    t = lo
    while True:
        steeper = np.flatnonzero(s > s[j])
        if steeper.size == 0:
            break
        cross = (q[j] - q[steeper]) / (s[steeper] - s[j])
        tc = float(cross.min())
        if tc >= hi:
            break
        first = steeper[cross <= tc + 1e-12 * max(1.0, abs(tc))]
        j = int(first[np.argmax(s[first])])
        t = max(t, tc)
        knots.append(t)
        active.append(j)
    knots.append(hi)
    return np.asarray(knots), np.asarray(active, dtype=np.int64)


def sample_piecewise_exponential(s: np.ndarray, q: np.ndarray, kappa: float, lo: float, hi: float,
                                 u1: float, u2: float) -> float:
    """Exact draw of ``t`` on ``[lo, hi]`` with density proportional to ``exp(-kappa max_i(s_i t + q_i))``.

    Builds the upper envelope of the lines, picks a segment with probability
    proportional to its mass (log space) using the uniform ``u1``, then inverts
    the segment's exponential CDF with ``u2``.

    Parameters
    ----------
    s, q : ndarray of shape (m,)
        Slopes and intercepts of the lines.
    kappa : float, non-negative
    lo, hi : float
        The interval, ``lo < hi``.
    u1, u2 : float in [0, 1)
        Uniforms.

    Returns
    -------
    float in [lo, hi]
    """
    knots, active = _upper_envelope(s, q, lo, hi)
    left, right = knots[:-1], knots[1:]
    L = np.maximum(right - left, 0.0)
    keep = L > 0
    if not keep.any():
        return lo
    left, L, active = left[keep], L[keep], active[keep]
    g = -kappa * s[active]
    logm = -kappa * (s[active] * left + q[active]) + _log_mass(g, L)
    p = np.exp(logm - logm.max())
    cdf = np.cumsum(p)
    k = int(min(np.searchsorted(cdf, u1 * cdf[-1], side="right"), cdf.size - 1))
    gk, Lk = float(g[k]), float(L[k])
    x = gk * Lk
    if abs(x) < 1e-12:
        tau = u2 * Lk
    elif gk < 0:
        tau = math.log1p(u2 * math.expm1(x)) / gk
    else:
        tau = Lk + math.log(u2 + (1.0 - u2) * math.exp(-x)) / gk
    return float(min(max(left[k] + tau, left[k]), left[k] + Lk))


def rejection_tv_bound(A: np.ndarray, widths: np.ndarray, kappa: float, max_proposals: int) -> float:
    """Public bound ``(1 - exp(-kappa W))**N`` on the TV distance of the capped rejection sampler."""
    W = float(np.max(np.abs(A) @ widths))
    p_min = math.exp(-kappa * W)
    return math.exp(max_proposals * math.log1p(-p_min)) if p_min < 1.0 else 0.0


def gibbs_tv_bound(A: np.ndarray, widths: np.ndarray, kappa: float, n_sweeps: int) -> float:
    """Public Doeblin bound ``(1 - beta)**T``, ``beta = exp(-kappa sum_j max_i |a_ij| w_j)``."""
    V = float(np.sum(np.max(np.abs(A), axis=0) * widths))
    beta = math.exp(-kappa * V)
    return math.exp(n_sweeps * math.log1p(-beta)) if beta < 1.0 else 0.0


def sample_rejection(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, kappa: float,
                     f_opt: float, max_proposals: int | None, source: RandomSource) -> tuple[np.ndarray, bool]:
    """Rejection sampler; returns ``(x, accepted)``; ``x`` is the centre of the box when the cap is hit."""
    d = A.shape[1]
    used = 0
    while max_proposals is None or used < max_proposals:
        n = _BATCH if max_proposals is None else min(_BATCH, max_proposals - used)
        u = source.uniform53((n, d + 1))
        X = lo + u[:, :d] * (hi - lo)
        gap = (X @ A.T + b).max(axis=1) - f_opt
        accept = np.flatnonzero(u[:, d] < np.exp(-kappa * np.maximum(gap, 0.0)))
        if accept.size:
            return X[accept[0]], True
        used += n
    return 0.5 * (lo + hi), False


def sample_gibbs(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, kappa: float,
                 n_sweeps: int, source: RandomSource) -> np.ndarray:
    """Systematic-scan Gibbs with exact piecewise-exponential conditionals, started at the centre."""
    d = A.shape[1]
    x = 0.5 * (lo + hi)
    r = A @ x + b
    u = source.uniform53((n_sweeps, d, 2))
    for sweep in range(n_sweeps):
        for j in range(d):
            col = A[:, j]
            q = r - col * x[j]
            t = sample_piecewise_exponential(col, q, kappa, float(lo[j]), float(hi[j]),
                                             float(u[sweep, j, 0]), float(u[sweep, j, 1]))
            x[j] = t
            r = q + col * t
    return x


def sample_metropolis(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, kappa: float,
                      n_steps: int, step_std: float, source: RandomSource) -> np.ndarray:
    """Random-walk Metropolis (the paper's sampler), started at the centre; std ``step_std``."""
    d = A.shape[1]
    x = 0.5 * (lo + hi)
    fx = float((A @ x + b).max())
    u = source.uniform53((n_steps, d + 1))
    # Box-Muller normals from the same source (d normals per step).
    u2 = source.uniform53((n_steps, d))
    z = np.sqrt(-2.0 * np.log1p(-u[:, :d])) * np.cos(2.0 * np.pi * u2)
    log_acc = np.log1p(-u[:, d])
    for k in range(n_steps):
        y = x + step_std * z[k]
        if np.any(y < lo) or np.any(y > hi):
            continue
        fy = float((A @ y + b).max())
        if log_acc[k] < -kappa * (fy - fx):
            x, fx = y, fy
    return x
