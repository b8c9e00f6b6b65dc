"""Calibration of the Gaussian mechanism: the exact privacy curve and the noise multipliers.

Balle & Wang's (2018) exact ``delta(epsilon)`` and its inversion (``"analytic"``),
the RDP calibration the DP trainers use for vector releases (``"rdp"``), and the
classic ``sqrt(2 ln(1.25 / delta)) / epsilon`` (``"classic"``), each rounded up so
that the computed noise is never below the exact requirement. The mechanism that
uses them is :class:`privtune.mechanisms.Gaussian` (``gaussian.py``, whose
module docstring has the references: Balle & Wang 2018; Dwork & Roth 2014,
Thm. A.1).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from scipy.special import log_ndtr

from privtune.accounting.events import GaussianEvent
from privtune.exceptions import InvalidParameterError
from privtune.utils import check_delta, check_epsilon, check_real, check_sensitivity

__all__ = ["calibrate_analytic_gaussian", "calibrate_rdp_gaussian", "gaussian_delta"]


def _delta_of_sigma(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Balle & Wang's exact delta(epsilon) of the Gaussian mechanism (no validation)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    log_t1 = float(log_ndtr(a - b))
    log_t2 = epsilon + float(log_ndtr(-a - b))
    if log_t2 >= log_t1:  # only through rounding: the curve is non-negative
        return 0.0
    # Phi(a - b) - e^eps Phi(-a - b) = Phi(a - b) * (1 - exp(log_t2 - log_t1))
    return max(0.0, -math.exp(log_t1) * math.expm1(log_t2 - log_t1))


def gaussian_delta(*, sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    r"""Exact delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018, Thm. 8).

    .. math::

        \delta(\varepsilon) = \Phi\Big(\frac{\Delta}{2\sigma}
            - \frac{\varepsilon\sigma}{\Delta}\Big)
            - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma}
            - \frac{\varepsilon\sigma}{\Delta}\Big)

    Parameters
    ----------
    sigma : float in (0, inf)
        Standard deviation of the noise.
    epsilon : float in [0, inf)
        The epsilon at which the privacy curve is evaluated.
    sensitivity : float in (0, inf), default=1.0
        L2 sensitivity of the query.

    Returns
    -------
    float
        The smallest delta for which the mechanism is (epsilon, delta)-DP.

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain.

    References
    ----------
    .. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
       Differential Privacy: Analytical Calibration and Optimal Denoising",
       ICML 2018.
    """
    owner = "gaussian_delta"
    s = check_real(sigma, "sigma", low=0.0, owner=owner)
    eps = check_real(epsilon, "epsilon", low=0.0, closed="left", owner=owner)
    sens = check_sensitivity(sensitivity, owner=owner)
    return _delta_of_sigma(s, eps, sens)


#: The analytic calibration bisects against ``delta * (1 - _DELTA_MARGIN)``: the float evaluation of the
#: curve (log_ndtr, expm1) is off by a relative 3e-11 to 2e-9 at some (epsilon, delta), and stopping at
#: "computed delta <= target" then left the true delta that much above the target.
_DELTA_MARGIN = 1e-6


def _analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest float sigma (to adjacent floats) whose computed delta is at most ``delta (1 - 1e-6)``."""
    def f(s: float) -> float:
        return _delta_of_sigma(s, epsilon, sensitivity)

    target = delta * (1.0 - _DELTA_MARGIN)
    hi = sensitivity * max(1.0, math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    while f(hi) > target:
        hi *= 2.0
        if not math.isfinite(hi):  # pragma: no cover - delta > 0 is always reachable
            raise InvalidParameterError("Gaussian calibration diverged.")
    lo = hi / 2.0
    while f(lo) <= target:
        hi, lo = lo, lo / 2.0
        if lo == 0.0:  # pragma: no cover - f(s) -> 1 > delta as s -> 0
            raise InvalidParameterError("Gaussian calibration underflowed.")
    # invariant: f(lo) > target >= f(hi); bisect down to adjacent floats
    while True:
        mid = lo + (hi - lo) / 2.0
        if mid <= lo or mid >= hi:
            return hi
        if f(mid) <= target:
            hi = mid
        else:
            lo = mid


@functools.lru_cache(maxsize=256)
def _rdp_multiplier(epsilon: float, delta: float) -> float:
    from privtune.accounting.accountant import compose_events

    def eps_of(nm: float) -> float:
        return compose_events([GaussianEvent(noise_multiplier=nm, vector=True)], delta=delta, method="rdp").epsilon

    lo, hi = 1e-3, 1.0
    while eps_of(hi) > epsilon:  # eps_of decreases in nm
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            raise InvalidParameterError(f"No noise multiplier reaches epsilon={epsilon!r} at delta={delta!r}.")
    for _ in range(200):  # bisection down to adjacent floats; the answer is the upper end (never too little)
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if eps_of(mid) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


def calibrate_rdp_gaussian(*, epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest noise multiplier (times ``sensitivity``: sigma) whose RDP curve gives ``(epsilon, delta)``.

    For vector releases of discrete Gaussian noise, whose privacy is proven through
    RDP (see :class:`~privtune.accounting.GaussianEvent`). The epsilon is the one the
    accountant computes for ``GaussianEvent(noise_multiplier, vector=True)`` at
    ``delta`` (the same orders and RDP-to-DP conversion), so a run calibrated
    here fits the budget it was calibrated for. About 15-25 % more noise than
    :func:`calibrate_analytic_gaussian`, whose exact curve is proven for one
    coordinate only.

    Parameters
    ----------
    epsilon : float in (0, inf)
    delta : float in (0, 1)
    sensitivity : float in (0, inf), default=1.0

    Returns
    -------
    float
        sigma = noise multiplier * sensitivity.
    """
    owner = "calibrate_rdp_gaussian"
    eps = check_epsilon(epsilon, owner=owner)
    dlt = check_delta(delta, owner=owner, allow_zero=False)
    sens = check_sensitivity(sensitivity, owner=owner)
    return _rdp_multiplier(eps, dlt) * sens


def calibrate_analytic_gaussian(*, epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    r"""Smallest sigma for which Gaussian noise is (epsilon, delta)-DP (Balle & Wang 2018).

    Parameters
    ----------
    epsilon : float in (0, inf)
        Target epsilon.
    delta : float in (0, 1)
        Target delta.
    sensitivity : float in (0, inf), default=1.0
        L2 sensitivity of the query.

    Returns
    -------
    float
        ``sigma`` such that :func:`gaussian_delta` ``(sigma=sigma, epsilon=epsilon,
        sensitivity=sensitivity) <= delta (1 - 1e-6)``, while the next smaller
        float violates it (bisection to adjacent floats, rounded up). The
        relative margin ``1e-6`` covers the float error of the computed curve
        (measured up to 2e-9 relative), so the exact curve at ``sigma`` is below
        ``delta``; it costs about ``1e-7`` relative noise.

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain.

    Notes
    -----
    The privacy curve is decreasing in sigma, so the calibration is a
    one-dimensional root finding problem (Balle & Wang 2018, Alg. 1 solves the
    same equation by a change of variables). Unlike the classic
    ``sqrt(2 ln(1.25/delta)) / epsilon`` it is exact and valid for every epsilon.

    References
    ----------
    .. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
       Differential Privacy: Analytical Calibration and Optimal Denoising",
       ICML 2018.

    Examples
    --------
    >>> from privtune.mechanisms import calibrate_analytic_gaussian
    >>> round(calibrate_analytic_gaussian(epsilon=1.0, delta=1e-5), 2)
    3.73
    """
    owner = "calibrate_analytic_gaussian"
    eps = check_epsilon(epsilon, owner=owner)
    dlt = check_delta(delta, owner=owner, allow_zero=False)
    sens = check_sensitivity(sensitivity, owner=owner)
    return _analytic_sigma(eps, dlt, sens)


def _classic_multiplier(epsilon: float, delta: float) -> float:
    """``sqrt(2 ln(1.25/delta)) / epsilon``, rounded up to be at least the exact value."""
    nm = math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    return math.nextafter(nm, math.inf)  # absorb the float rounding of log/sqrt/division


def _round_up_product(*factors: float) -> float:
    """The float product of ``factors``, moved up one float if it fell below the exact product."""
    value = math.prod(factors)
    exact = math.prod(Fraction(f) for f in factors)
    while Fraction(value) < exact:
        value = math.nextafter(value, math.inf)
    return value
