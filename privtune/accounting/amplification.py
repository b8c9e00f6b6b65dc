r"""Amplification by subsampling of *any* mechanism's RDP curve (Zhu & Wang 2019; Wang, Balle & Kasiviswanathan 2019).

dp-accounting amplifies Gaussian mechanisms only; privtune's subsampled tuning
(:class:`~privtune.bo.PostProcessingSelection` run on a secret subset of the
training rows, Koskela & Kulkarni 2023) runs a whole random-stopping tuning
phase -- Papernot & Steinke's RDP curve of the best of K DP fits -- on a
subsample, so it needs the general theorems, which take any valid RDP curve of
the mechanism run on the subsample:

* **Poisson subsampling, add/remove** (each record kept independently with
  probability :math:`q`): Zhu & Wang (2019), "Poisson subsampled Rényi
  differential privacy", Theorem 6 (general upper bound). At an integer order
  :math:`\alpha \ge 2`,

  .. math:: (\alpha-1)\,\epsilon'(\alpha) \le \log\Big[(1-q)^{\alpha-1}(\alpha q - q + 1)
            + \binom{\alpha}{2} q^2 (1-q)^{\alpha-2} e^{\epsilon(2)}
            + 3\sum_{\ell=3}^{\alpha}\binom{\alpha}{\ell}(1-q)^{\alpha-\ell} q^\ell e^{(\ell-1)\epsilon(\ell)}\Big].

* **Sampling without replacement, replace-one** (``m`` of ``n`` records,
  :math:`\gamma = m/n`): Wang, Balle & Kasiviswanathan (2019), "Subsampled
  Rényi differential privacy and analytical moments accountant", Theorem 9. At
  an integer order :math:`\alpha \ge 2`,

  .. math:: (\alpha-1)\,\epsilon'(\alpha) \le \log\Big[1 + \gamma^2\binom{\alpha}{2}
            \min\{4(e^{\epsilon(2)}-1),\ e^{\epsilon(2)}\min\{2, (e^{\epsilon(\infty)}-1)^2\}\}
            + \sum_{j=3}^{\alpha}\gamma^j\binom{\alpha}{j} e^{(j-1)\epsilon(j)}
            \min\{2, (e^{\epsilon(\infty)}-1)^j\}\Big].

Both are also capped by the unsampled curve (subsampling never hurts: the two
subsamples can be coupled to differ in one record). How the curve given at the
accountant's orders is read at every integer order, and how fractional orders
are bounded, is in :func:`subsampled_rdp`. Checked against exact divergences of
a subsampled Laplace count and against dp-accounting's Gaussian curves in
``tests/accounting/test_amplification.py``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from privtune.exceptions import InvalidParameterError

__all__ = ["SCHEMES", "subsampled_rdp"]

#: The sampling schemes :func:`subsampled_rdp` bounds, each under its own neighbouring relation.
SCHEMES = {"poisson": "add_remove", "without_replacement": "replace_one"}


def _integer_curve(orders: np.ndarray, rdp: np.ndarray, top: int) -> np.ndarray:
    """``eps(l)`` for l = 0..top: the smallest stated value at an order >= l (inf when none).

    Rényi divergence is non-decreasing in its order, so the curve's value at any
    order at or above ``l`` bounds ``eps(l)``; the suffix minimum is the best such
    bound (a stated curve need not be monotone itself).
    """
    order = np.argsort(orders)
    a, r = orders[order], np.asarray(rdp, dtype=float)[order]
    suffix = np.minimum.accumulate(np.where(np.isnan(r), np.inf, r)[::-1])[::-1]
    idx = np.searchsorted(a, np.arange(top + 1, dtype=float), side="left")
    out = np.full(top + 1, np.inf)
    inside = idx < a.size
    out[inside] = suffix[idx[inside]]
    return out


def _log_binom(k: int) -> np.ndarray:
    j = np.arange(k + 1, dtype=float)
    return math.lgamma(k + 1) - gammaln(j + 1) - gammaln(k - j + 1)


def _poisson_cgf(k: int, q: float, eps: np.ndarray) -> float:
    """Zhu & Wang Thm. 6 at integer k >= 2: the bound on (k - 1) eps'(k), in logs."""
    log_q, log_1mq = math.log(q), math.log1p(-q)
    lb = _log_binom(k)
    terms = [(k - 1) * log_1mq + math.log1p((k - 1) * q),
             lb[2] + 2 * log_q + (k - 2) * log_1mq + eps[2]]
    if k >= 3:
        ell = np.arange(3, k + 1)
        terms.extend((math.log(3.0) + lb[ell] + ell * log_q + (k - ell) * log_1mq + (ell - 1) * eps[ell]).tolist())
    return float(logsumexp(terms))


def _wor_cgf(k: int, gamma: float, eps: np.ndarray, epsilon_inf: float) -> float:
    """Wang, Balle & Kasiviswanathan Thm. 9 at integer k >= 2: the bound on (k - 1) eps'(k), in logs."""
    log_g = math.log(gamma)
    lb = _log_binom(k)
    # log(e^eps_inf - 1), +inf when eps_inf is unknown (then min{2, .} = 2)
    log_em1_inf = (math.inf if math.isinf(epsilon_inf) else
                   (epsilon_inf + math.log(-math.expm1(-epsilon_inf)) if epsilon_inf > 0 else -math.inf))
    e2 = eps[2]
    four = math.log(4.0) + e2 + math.log(-math.expm1(-e2)) if e2 > 0 else -math.inf  # log 4(e^eps2 - 1)
    second = e2 + min(math.log(2.0), 2 * log_em1_inf)
    terms = [0.0, 2 * log_g + lb[2] + min(four, second)]
    if k >= 3:
        j = np.arange(3, k + 1)
        cap = np.minimum(j * log_em1_inf if math.isfinite(log_em1_inf) else np.full(j.size, log_em1_inf),
                         math.log(2.0))
        terms.extend((cap + (j - 1) * eps[j] + j * log_g + lb[j]).tolist())
    return float(logsumexp(terms))


def subsampled_rdp(orders: np.ndarray, rdp: np.ndarray, *, rate: float, scheme: str,
                   epsilon_inf: float = math.inf) -> np.ndarray:
    r"""An RDP curve of a mechanism run on a random subsample, from any RDP curve of the mechanism.

    Parameters
    ----------
    orders : array of float > 1
        The orders at which ``rdp`` is given and the result is wanted.
    rdp : array of float
        A valid RDP bound of the mechanism (on the subsample) at ``orders``;
        ``inf`` where it has none.
    rate : float in [0, 1]
        ``q`` (``"poisson"``) or ``gamma = m / n`` (``"without_replacement"``).
    scheme : {"poisson", "without_replacement"}
        Poisson subsampling under add/remove (Zhu & Wang 2019, Thm. 6), or a
        uniformly random subset of fixed size under replace-one (Wang, Balle &
        Kasiviswanathan 2019, Thm. 9).
    epsilon_inf : float, default=inf
        The mechanism's pure-DP epsilon if it has one (the order-infinity value,
        used by Theorem 9's ``min{2, .}`` terms); ``inf`` when unknown.

    Returns
    -------
    numpy.ndarray
        The amplified curve at ``orders``, never above ``rdp``.

    Notes
    -----
    Both theorems hold at integer orders and need the inner curve at every
    integer order up to the one bounded. The inner curve is read at an integer
    ``l`` as its smallest stated value at an order ``>= l`` (valid: Rényi
    divergence is non-decreasing in the order), ``inf`` above the largest
    order. At a fractional order the amplified cumulant ``(alpha - 1) eps'(alpha)``
    is the chord between the neighbouring integer bounds (0 at order 1): the
    cumulant is convex in ``alpha`` for every pair of output distributions, so
    the chord of upper bounds bounds it (the same interpolation as
    :func:`~privtune.accounting.rdp_math.poisson_gaussian_rdp`).
    """
    if scheme not in SCHEMES:
        raise InvalidParameterError(f"scheme must be one of {sorted(SCHEMES)}; got {scheme!r}.")
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    if a.ndim != 1 or a.shape != r.shape or a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 1):
        raise InvalidParameterError("orders must be a non-empty 1-d array of finite values > 1, with rdp of "
                                    "the same shape.")
    q = float(rate)
    if not 0.0 <= q <= 1.0:
        raise InvalidParameterError(f"rate must be in [0, 1]; got {rate!r}.")
    if q == 0.0:
        return np.zeros_like(a)
    if q == 1.0:
        return r.copy()
    top = int(math.ceil(float(a.max())))
    eps = _integer_curve(a, r, top)
    cgf = np.full(top + 1, np.inf)
    cgf[0] = cgf[1] = 0.0
    for k in range(2, top + 1):
        if not np.all(np.isfinite(eps[2:k + 1])):
            break  # inf from here on: the theorems need every order up to k
        bound = _poisson_cgf(k, q, eps) if scheme == "poisson" else _wor_cgf(k, q, eps, float(epsilon_inf))
        cgf[k] = min(max(bound, 0.0), (k - 1) * eps[k])
    lo = np.floor(a).astype(int)
    hi = np.ceil(a).astype(int)
    t = a - lo
    with np.errstate(invalid="ignore"):
        chord = np.where(lo == hi, cgf[hi], (1.0 - t) * cgf[lo] + t * cgf[hi])
        out = chord / (a - 1.0)
    out = np.where(np.isnan(out), np.inf, out)
    return np.minimum(out, np.where(np.isnan(r), np.inf, r))
