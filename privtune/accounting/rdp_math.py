"""Pure functions on Renyi-DP curves: closed forms, conversion, and private-selection transforms.

These are privtune's *own* implementations of the formulas it needs beyond what
``dp_accounting`` offers as events, written from the papers so that tests can
cross-check them against ``dp_accounting`` (two independent implementations):

* RDP of the Laplace mechanism (Mironov 2017, Prop. 6) and of any pure
  epsilon-DP mechanism (Bun & Steinke 2016, Prop. 3.3 -- the sinh bound);
* RDP to (epsilon, delta) conversion (Canonne, Kamath & Steinke 2020, Prop. 12;
  the conversion ``dp_accounting`` uses);
* Papernot & Steinke (2022) private selection with a random number of runs K:
  Theorem 2 (truncated negative binomial K) and Theorem 6 (Poisson K);
* RDP of the Poisson-subsampled Gaussian at integer orders, interpolated in
  between (:func:`poisson_gaussian_rdp`), the form that holds for privtune's
  lattice Gaussian too.

All functions take an array of RDP orders ``orders`` (> 1) and the base curve
``rdp`` evaluated at those orders.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from privtune.exceptions import InvalidParameterError

__all__ = [
    "DEFAULT_ORDERS",
    "laplace_rdp",
    "pure_dp_rdp",
    "gaussian_rdp",
    "poisson_gaussian_rdp",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "truncated_negative_binomial_mean",
    "truncated_negative_binomial_gamma",
    "repeat_and_select_rdp",
]

#: Default grid of RDP orders (a superset of the usual Opacus / dp_accounting grids).
DEFAULT_ORDERS = np.concatenate(
    [np.linspace(1.01, 8, 140), np.arange(8.5, 64, 0.5), np.array([80, 96, 128, 192, 256, 512, 1024])]
)


def _orders(orders: np.ndarray | None) -> np.ndarray:
    a = DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    if a.ndim != 1 or a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 1):
        raise InvalidParameterError("RDP orders must be a non-empty 1-d array of finite values > 1.")
    return a


def laplace_rdp(orders: np.ndarray | None, epsilon: float) -> np.ndarray:
    r"""RDP of the Laplace mechanism with scale ``sensitivity / epsilon`` (Mironov 2017, Prop. 6).

    .. math:: \frac{1}{\alpha-1}\log\Big(\frac{\alpha}{2\alpha-1}e^{(\alpha-1)\epsilon}
              + \frac{\alpha-1}{2\alpha-1}e^{-\alpha\epsilon}\Big)
    """
    a = _orders(orders)
    t1 = np.log(a / (2 * a - 1)) + (a - 1) * epsilon
    t2 = np.log((a - 1) / (2 * a - 1)) - a * epsilon
    return np.logaddexp(t1, t2) / (a - 1)


#: :func:`pure_dp_rdp` multiplies its float value by this factor (and adds ``_PURE_DP_ABSOLUTE``), so that the
#: float rounding never leaves the result below the exact bound (module docstring of the function: the computed
#: value is within a relative ``330 * 2**-53 < 2**-44`` of the exact one).
_PURE_DP_ROUND_UP = 1.0 + 2.0**-40
#: The absolute part of the rounding up: four subnormal steps, for values that underflow.
_PURE_DP_ABSOLUTE = 4.0 * 2.0**-1074


def pure_dp_rdp(orders: np.ndarray | None, epsilon: float) -> np.ndarray:
    r"""RDP implied by pure epsilon-DP (Bun & Steinke 2016; tight for randomised response), rounded up.

    .. math:: \min\Big\{\epsilon,\ \frac{1}{\alpha-1}\log
              \frac{\sinh(\alpha\epsilon)-\sinh((\alpha-1)\epsilon)}{\sinh\epsilon}\Big\}

    It is at most ``min(epsilon, alpha epsilon**2 / 2)``. The returned value is
    never below the exact one (an RDP bound rounded down would understate the
    cost).

    Notes
    -----
    **Computation.** With ``sinh(a e) - sinh((a - 1) e) = 2 cosh((a - 1/2) e)
    sinh(e / 2)`` the logarithm is ``log cosh((a - 1/2) e) - log cosh(e / 2)``,
    which equals

    .. math:: \epsilon + \frac{1}{\alpha - 1}\,
              \mathrm{log1p}\Big(\frac{\mathrm{expm1}(-2(\alpha-1)\epsilon)}{1 + e^{\epsilon}}\Big)

    (``X = expm1(-2 (a - 1) e) / (1 + e**e)`` lies in ``(-1/2, 0]``). Where
    ``a e > 0.1`` this form is used: ``(a - 1) e``, ``expm1``, ``exp``, the sum,
    the quotient, ``log1p`` and the division by ``a - 1`` (exact for ``a`` in
    ``(1, 2]``) leave the second term within a relative ``16 u`` (``u =
    2**-53``; ``expm1``, ``exp`` and ``log1p`` within 2 ``u`` each, their
    condition numbers at most 1 and 1.45 on these arguments), so its absolute
    error is at most ``16 u e``; the value is at least ``0.049 e`` there (it
    grows with ``a`` and is ``a e**2 / 2`` within 0.2 % at ``a e = 0.1``), so
    the result is within ``(16 / 0.049 + 1) u < 330 u`` of the exact value,
    relatively. (The previous form, a difference of ``log sinh`` terms, lost up
    to 7e-5 of the value at ``a = 1e9, e = 1e-10`` and up to 1e-10 on the default
    orders.) Where ``a e <= 0.1`` the upper bound ``a e**2 / 2`` is used (within
    0.2 % of the exact value), which the difference form would compute with a
    large cancellation. Either value is then multiplied by ``1 + 2**-40``
    (``2**-40 > 330 u + 3 u``) and increased by ``4 * 2**-1074`` (for values in
    the subnormal range, where the rounding is absolute), and clipped to
    ``[0, epsilon]`` (the exact value lies in that interval). The test suite
    checks against 80-digit arithmetic that the result is never below the
    exact value, over orders from ``1 + 1e-7`` to ``1e9`` and epsilons from
    ``1e-12`` to 100, on both sides of the switch at ``a e = 0.1``.
    """
    a = _orders(orders)
    e = float(epsilon)
    if e == 0.0:
        return np.zeros_like(a)
    with np.errstate(over="ignore"):  # exp(e) overflows above e = 709: the second term is then 0, the value e
        x = np.expm1(-2.0 * ((a - 1.0) * e)) / (1.0 + np.exp(e))
    val = e + np.log1p(x) / (a - 1.0)
    val = np.where(a * e <= 0.1, 0.5 * a * e * e, val)
    val = val * _PURE_DP_ROUND_UP + _PURE_DP_ABSOLUTE
    return np.clip(val, 0.0, e)


def gaussian_rdp(orders: np.ndarray | None, noise_multiplier: float) -> np.ndarray:
    """RDP of the Gaussian mechanism: ``alpha / (2 noise_multiplier**2)`` (Mironov 2017)."""
    a = _orders(orders)
    if noise_multiplier <= 0:
        return np.full_like(a, np.inf)
    return a / (2.0 * noise_multiplier**2)


def poisson_gaussian_rdp(orders: np.ndarray | None, sample_rate: float, noise_multiplier: float) -> np.ndarray:
    r"""RDP of the Gaussian mechanism on a Poisson subsample (add/remove), valid for the lattice Gaussian.

    At an integer order :math:`\alpha` this is Mironov, Talwar & Zhang's (2019)
    exact value for the continuous Gaussian,

    .. math:: \frac{1}{\alpha-1}\log\sum_{j=0}^{\alpha}\binom{\alpha}{j}(1-q)^{\alpha-j}q^j
              e^{j(j-1)/(2\sigma^2)},

    and between integer orders the cumulant :math:`(\alpha-1)\epsilon(\alpha)` is
    interpolated linearly (it is convex in :math:`\alpha` for every pair of
    distributions, so the chord bounds it; 0 at order 1). The result is capped
    by the unsampled Gaussian's :math:`\alpha/(2\sigma^2)`.

    Why not dp-accounting's curve: privtune's Gaussian noise is a discrete
    Gaussian on a lattice, and neighbouring outputs differ by an integer shift
    vector ``Delta``. With ``L`` the likelihood ratio of the shifted law to the
    unshifted one, every integer moment ``E[L**k]`` equals the continuous
    Gaussian's ``exp(k (k - 1) ||Delta||**2 / (2 s**2))`` exactly (a lattice
    sum of a Gaussian shifted by the integer vector ``k Delta`` equals the
    unshifted sum), so the integer-order formula above is exact on the lattice
    in the "add" direction, and increasing in ``||Delta||``. The "remove"
    direction is not covered by that identity (its exponent is negative).
    For the continuous Gaussian, Mironov, Talwar & Zhang prove it is at most
    the "add" one. On the lattice, every dimension reduces exactly to one:
    the likelihood ratio depends on ``z`` through ``y = <z, Delta>`` only, and
    ``z -> z - Delta`` maps the fibre of ``y`` onto that of ``y - ||Delta||**2``,
    multiplying its probability by the ratio. So on each residue class of
    ``y`` modulo ``||Delta||**2``, ``w = y / ||Delta||**2`` follows a discrete
    Gaussian on a shifted lattice ``c + Z`` with scale ``s / ||Delta||``
    (the noise multiplier), and the neighbour is its unit shift; the residue
    class has the same law on both data sets, so each divergence is at most
    its largest value over the cosets (joint convexity). The "add" value of
    every coset is the formula above. That the "remove" value is at most it
    on every coset is a numerical check, not a proof: exact sums for noise
    multipliers 0.2 to 10, 40 offsets ``c``, ``q`` from 1e-3 to 0.9 and integer
    orders 2 to 1024 find it at most 99.997 % of the curve (under 69 % for
    noise multipliers up to 0.5), and a curve for a rate 10 % too small fails
    the same check; a slower test widens the grid to noise multipliers 0.1
    to 20, rates up to 0.99 and every integer order the curve is built from. At
    fractional orders the continuous formula (dp-accounting's
    ``_compute_log_a_frac``) is not a bound for the lattice: at
    ``sigma / ||Delta|| = 0.25``, ``q = 0.5``, order 1.5 the exact lattice
    divergence exceeds it by 3.4e-6 (a coarse grid, far from privtune's, but
    nothing proves the gap away there), hence the interpolation.
    Checked against dp-accounting's integer-order values and the exact lattice
    sums in ``tests/accounting/test_subsampled_lattice_rdp.py``.

    Parameters
    ----------
    orders : array-like of float > 1, or None for :data:`DEFAULT_ORDERS`
    sample_rate : float in [0, 1]
        ``q``, the probability that each record is in the subsample.
    noise_multiplier : float
        ``sigma`` over the L2 sensitivity (add/remove); 0 means no noise (``inf``).
    """
    a = _orders(orders)
    q = float(sample_rate)
    if not 0.0 <= q <= 1.0:
        raise InvalidParameterError(f"sample_rate must be in [0, 1]; got {sample_rate!r}.")
    if noise_multiplier <= 0:
        return np.full_like(a, np.inf)
    if q == 0.0:
        return np.zeros_like(a)
    unsampled = a / (2.0 * noise_multiplier**2)
    if q == 1.0:
        return unsampled
    inv2s2 = 1.0 / (2.0 * noise_multiplier**2)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    cache: dict[int, float] = {1: 0.0}

    def cgf(k: int) -> float:  # log A_k = (k - 1) epsilon(k) at an integer order k
        if k not in cache:
            j = np.arange(k + 1, dtype=float)
            log_binom = math.lgamma(k + 1) - gammaln(j + 1) - gammaln(k - j + 1)
            terms = log_binom + j * log_q + (k - j) * log_1mq + j * (j - 1) * inv2s2
            top = float(np.max(terms))
            cache[k] = max(0.0, top + math.log(float(np.sum(np.exp(terms - top)))))
        return cache[k]

    out = np.empty_like(a)
    for i, alpha in enumerate(a):
        lo = math.floor(alpha)
        hi = math.ceil(alpha)
        if lo == hi:
            val = cgf(lo) / (alpha - 1.0)
        else:
            t = alpha - lo
            val = ((1.0 - t) * cgf(lo) + t * cgf(hi)) / (alpha - 1.0)
        out[i] = min(val, unsampled[i])
    return out


def rdp_to_epsilon(orders: np.ndarray | None, rdp: np.ndarray, delta: float) -> float:
    r"""Smallest epsilon such that the RDP curve implies (epsilon, delta)-DP.

    Uses Canonne, Kamath & Steinke (2020), Prop. 12:
    :math:`\epsilon = \min_\alpha\ \rho(\alpha) + \log((\alpha-1)/\alpha)
    - (\log\delta + \log\alpha)/(\alpha-1)`, never below 0, with
    dp-accounting's case analysis per order (``compute_epsilon``): 0 where the
    KL bound ``delta >= sqrt(1 - exp(-rho))`` already holds or the curve is
    negative, and no bound from orders at or below 1.01 (numerically unstable).
    On arrays, so that the accountant can ask for it at every iteration; tested
    to agree with dp-accounting.
    """
    a = _orders(orders)
    r = np.asarray(rdp, dtype=float)
    if not 0 < delta < 1:
        return math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        general = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
        eps = np.where(r < 0, 0.0, np.where(delta**2 + np.expm1(-r) > 0, 0.0, np.where(a > 1.01, general, np.inf)))
    eps = eps[~np.isnan(eps)]
    return max(0.0, float(eps.min())) if eps.size else math.inf


def rdp_to_delta(orders: np.ndarray | None, rdp: np.ndarray, epsilon: float) -> float:
    r"""Smallest delta such that the RDP curve implies (epsilon, delta)-DP (CKS 2020, Prop. 12)."""
    a = _orders(orders)
    r = np.asarray(rdp, dtype=float)
    logd = (a - 1) * (r - epsilon + np.log1p(-1 / a)) - np.log(a)
    logd = logd[np.isfinite(logd)]
    return float(min(1.0, math.exp(min(0.0, logd.min())))) if logd.size else 1.0


def truncated_negative_binomial_mean(eta: float, gamma: float) -> float:
    """E[K] for the truncated negative binomial of Papernot & Steinke (2022), K >= 1.

    ``eta(1-gamma) / (gamma (1-gamma**eta))``; ``(1/gamma - 1)/log(1/gamma)`` at
    eta = 0 (logarithmic distribution); ``1/gamma`` at eta = 1 (geometric).
    """
    if not 0 < gamma < 1:
        raise InvalidParameterError(f"gamma must be in (0, 1); got {gamma!r}.")
    if eta == 0:
        return (1 / gamma - 1) / math.log(1 / gamma)
    return eta * (1 - gamma) / (gamma * (1 - gamma**eta))


def truncated_negative_binomial_gamma(mean: float, eta: float) -> float:
    """The gamma in (0, 1) whose truncated negative binomial has the given mean (bisection).

    The mean is strictly decreasing in gamma, from +inf (gamma -> 0) to 1 (gamma -> 1).
    """
    if not mean > 1:
        raise InvalidParameterError(f"The mean number of runs must be > 1; got {mean!r}.")
    lo, hi = 1e-300, 1 - 1e-16
    for _ in range(200):
        mid = math.sqrt(lo * hi) if hi / lo > 4 else 0.5 * (lo + hi)
        if truncated_negative_binomial_mean(eta, mid) > mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def repeat_and_select_rdp(
    orders: np.ndarray | None,
    rdp: np.ndarray,
    *,
    mean: float,
    shape: float,
) -> np.ndarray:
    r"""RDP of releasing the best of K runs of a mechanism with RDP curve ``rdp``.

    Parameters
    ----------
    orders : ndarray or None
        RDP orders (> 1) at which ``rdp`` is given; ``None`` for :data:`DEFAULT_ORDERS`.
    rdp : ndarray
        The base mechanism's RDP curve at ``orders``.
    mean : float in (1, inf)
        E[K].
    shape : float in (-1, inf]
        eta of the truncated negative binomial (0: logarithmic, 1: geometric);
        ``inf`` for a Poisson K.

    Returns
    -------
    ndarray
        The RDP curve of the selection at ``orders``.

    Notes
    -----
    Truncated negative binomial (Papernot & Steinke 2022, Thm. 2): for every
    :math:`\lambda` and :math:`\hat\lambda` on the grid,

    .. math:: \epsilon'(\lambda) = \epsilon(\lambda) + (1+\eta)(1-1/\hat\lambda)\epsilon(\hat\lambda)
              + (1+\eta)\log(1/\gamma)/\hat\lambda + \log E[K]/(\lambda-1),

    minimised over :math:`\hat\lambda`. Poisson (Thm. 6): with
    :math:`\hat\epsilon = \log(1 + 1/(\lambda-1))` and :math:`\hat\delta` the
    delta of the base at :math:`\hat\epsilon` (from its RDP curve),
    :math:`\epsilon'(\lambda) = \epsilon(\lambda) + \mu\hat\delta + \log\mu/(\lambda-1)`.
    The result is made non-decreasing in :math:`\lambda` (RDP curves are
    non-decreasing in the order, so the running minimum from the right is valid).
    """
    a = _orders(orders)
    r = np.asarray(rdp, dtype=float)
    if math.isinf(shape):
        mu = float(mean)
        out = np.empty_like(a)
        for i, lam in enumerate(a):
            eps_hat = math.log1p(1 / (lam - 1))
            delta_hat = rdp_to_delta(a, r, eps_hat)
            out[i] = r[i] + mu * delta_hat + math.log(mu) / (lam - 1)
    else:
        gamma = truncated_negative_binomial_gamma(mean, shape)
        hat = (1 + shape) * (1 - 1 / a) * r + (1 + shape) * math.log(1 / gamma) / a
        out = r + hat.min() + math.log(mean) / (a - 1)
    # monotone envelope: eps'(lambda) <= eps'(lambda') for lambda <= lambda'
    return np.minimum.accumulate(out[::-1])[::-1]




def gaussian_delta_exact(mu: float, epsilon: float) -> float:
    r"""Exact delta(epsilon) of a Gaussian mechanism with sensitivity / sigma = ``mu``.

    Balle & Wang (2018), Thm. 8:
    :math:`\Phi(\mu/2 - \epsilon/\mu) - e^\epsilon \Phi(-\mu/2 - \epsilon/\mu)`,
    evaluated in log space for large epsilon.
    """
    from scipy.special import log_ndtr

    if mu <= 0:
        return 0.0
    a = log_ndtr(mu / 2 - epsilon / mu)
    b = epsilon + log_ndtr(-mu / 2 - epsilon / mu)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gaussian_epsilon_exact(mu: float, delta: float) -> float:
    """Smallest epsilon with ``gaussian_delta_exact(mu, epsilon) <= delta`` (bisection, rounded up).

    A composition of Gaussian mechanisms with noise multipliers ``nm_i`` is exactly
    a Gaussian mechanism with ``mu = sqrt(sum 1 / nm_i**2)`` (Dong, Roth & Su 2019,
    Cor. 3.3), so this gives the exact epsilon of any Gaussian-only composition.
    """
    if not 0 < delta < 1:
        return math.inf
    if mu <= 0:
        return 0.0
    if gaussian_delta_exact(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta_exact(mu, hi) > delta:
        lo, hi = hi, 2 * hi
        if hi > 1e8:
            return math.inf
    # Brent's method on log delta (a dozen evaluations instead of ~55 bisection steps), then the bracket is
    # closed from above so that the result still satisfies delta(eps) <= delta: rounded up, as before.
    from scipy.optimize import brentq

    log_target = math.log(delta)

    def gap(eps: float) -> float:
        d = gaussian_delta_exact(mu, eps)
        return (math.log(d) if d > 0 else -745.0) - log_target

    try:
        root = brentq(gap, lo, hi, xtol=1e-13, rtol=4 * np.finfo(float).eps, maxiter=200)
    except ValueError:  # no sign change on the bracket (delta at its end points rounds the same way)
        root = hi
    eps = min(hi, root)
    step = max(abs(eps), 1e-300) * 4 * np.finfo(float).eps
    while gaussian_delta_exact(mu, eps) > delta and eps < hi:
        eps = min(hi, eps + step)
        step *= 2
    return eps
