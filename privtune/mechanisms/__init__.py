"""Differentially private mechanisms with floating-point-safe noise.

* :class:`Laplace` (pure epsilon-DP, L1 sensitivity) and :class:`Gaussian`
  ((epsilon, delta)-DP, L2 sensitivity, analytic or classic calibration) add
  noise sampled *exactly* on a fine grid (discrete Laplace / discrete Gaussian,
  Canonne, Kamath & Steinke 2020) and account for the rounding to the grid, so
  that the floating-point attack on textbook samplers (Mironov 2012) does not
  apply.
* :class:`Exponential` selects from a finite candidate set (McSherry & Talwar
  2007), stably for any utility magnitude and millions of candidates.
* :class:`SparseVector` is AboveThreshold (Dwork & Roth 2014): the index of the
  first query above a public threshold.

Every mechanism is immutable, validated at construction, draws from a
cryptographically secure source unless given a seed (``random_state``), never
touches numpy's global generator, and returns the privacy event to charge
(:meth:`privacy_event`). The exact integer samplers live in
:mod:`privtune.mechanisms._samplers`.
"""

from privtune.mechanisms._samplers import bernoulli_exp, discrete_gaussian, discrete_laplace
from privtune.mechanisms.exponential import Exponential
from privtune.mechanisms.gaussian import Gaussian, calibrate_analytic_gaussian, gaussian_delta
from privtune.mechanisms.laplace import Laplace
from privtune.mechanisms.sparse_vector import SparseVector, SparseVectorSession

__all__ = [
    "Laplace",
    "Gaussian",
    "Exponential",
    "SparseVector",
    "SparseVectorSession",
    "calibrate_analytic_gaussian",
    "gaussian_delta",
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
]
