r"""The Gaussian NOISYBTLS of DP-BLSGD (seed 003): its RDP curve and its noise on an exact grid.

* :func:`gaussian_search_curve` -- the RDP curve of one call, proven below;
* :class:`GaussianSparseVector` -- AboveThreshold with discrete Gaussian noise
  on an exact grid, whose shifts the proof below bounds.

Gaussian line search (why only full batch, and which curve)
-----------------------------------------------------------
The paper's Thm 3 claims ``(a, a rho)``-RDP for the Gaussian NOISYBTLS with
threshold noise ``N(0, 3 Delta**2 / (2 rho))`` and query noise
``N(0, 3 Delta**2 / rho)``. Its proof bounds one output sequence and never sums
over the outputs (spec P1). The sound bound (Zhu & Wang 2020; re-derived here):
for an output ``i`` (first "above" at candidate ``i``), shifting the threshold
noise by ``Delta`` and candidate ``i``'s noise by ``2 Delta`` maps the event on
``D`` into the event on ``D'``; by the data-processing inequality on the
partition ``{i, not i}`` each output contributes at most
``exp((a - 1)(a Delta**2 / (2 s_T**2) + 4 a Delta**2 / (2 s_Q**2)))`` to
``sum_i P_D(i)**a P_D'(i)**(1 - a)``, which is ``exp((a - 1) a rho)`` for the
paper's noises and for privtune's (:class:`GaussianSparseVector`); summing
over the ``K = max_backtracks + 1`` outputs (including "failed") gives

.. math:: \varepsilon(a) \le a\rho + \frac{\log K}{a - 1}.

With Poisson or without-replacement subsampling the ``log K / (a - 1)`` term
enters every order of the general subsampling bounds (Zhu & Wang 2019, Thm 6;
Wang, Balle & Kasiviswanathan 2019, Thm 9) as a factor ``K`` on every higher
moment, which destroys the amplification (about 0.15 per call at ``a = 30``,
``q = 0.1``, ``K = 11``). privtune therefore offers the Gaussian line search
with ``sampling="full"`` only, and refuses it with subsampling.

References
----------
.. [ZW20] Y. Zhu and Y.-X. Wang, "Improving Sparse Vector Technique with Renyi
   Differential Privacy", NeurIPS 2020.
.. [WBK19] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Renyi
   Differential Privacy and Analytical Moments Accountant", AISTATS 2019.

Split out of :mod:`privtune.optim.line_search._accounting` (issue 39), which
re-exports both names.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import (
    GRID_HEADROOM,
    MAX_GAUSSIAN_GRID_EXPONENT,
    MIN_GRID_EXPONENT,
    discrete_gaussian,
    round_to_grid,
)
from privtune.utils._random import RandomSource


def gaussian_search_curve(rho: float, n_outputs: int, orders: tuple[float, ...]) -> np.ndarray:
    """Zhu & Wang's RDP of the Gaussian NOISYBTLS: ``a rho + log(K) / (a - 1)`` (module docstring)."""
    a = np.asarray(orders, dtype=float)
    return a * rho + math.log(n_outputs) / (a - 1.0)


class GaussianSparseVector:
    r"""AboveThreshold with discrete Gaussian noise on an exact grid (the Gaussian NOISYBTLS).

    Threshold noise of standard deviation ``s_T = (1 + eta) Delta / sqrt(rho)`` and
    query noise ``s_Q = 2 s_T`` (headroom ``eta = 2**-10``). The paper's split is
    ``s_T**2 = 1.5 Delta**2 / rho`` and ``s_Q**2 = 3 Delta**2 / rho`` (ratio sqrt 2);
    privtune uses the ratio 2 so that both integer noises have power-of-two
    scales (exact sampling with small denominators), with the same total:
    the shifts ``S`` (threshold) and ``2 S`` (candidate) of the proof in the module
    docstring cost ``a S**2 / (2 s_T**2) + a (2 S)**2 / (2 s_Q**2) = a rho / 2 + a rho / 2``.
    Grid: ``g = s_T / 2**k`` with the smallest ``k >= 10`` such that
    ``Delta / g + 2 <= (1 + eta) Delta / g`` (checked in rationals), so that a
    rounded query moves by at most ``S = Delta / g + 2 <= (1 + eta) Delta / g``
    grid steps between neighbours (as in :class:`privtune.mechanisms.SparseVector`).
    The integer noises are discrete Gaussians of variance ``4**k`` and ``4**(k+1)``;
    the threshold ``0`` is exact on the grid. Discrete Gaussians satisfy the
    continuous Renyi bound ``a c**2 / (2 s**2)`` for integer shifts ``c``
    (Canonne, Kamath & Steinke 2020), so each output costs at most ``a rho`` and
    the call ``a rho + log(K) / (a - 1)``. Queries are compared as exact integers.
    """

    def __init__(self, rho: float, sensitivity: float, source: RandomSource) -> None:
        s_t = sensitivity * (1.0 + GRID_HEADROOM) * (1.0 + 2.0**-40) / math.sqrt(rho)  # rounded up
        delta = Fraction(sensitivity)
        factor = 1 + Fraction(GRID_HEADROOM)
        for k in range(MIN_GRID_EXPONENT, MAX_GAUSSIAN_GRID_EXPONENT):  # 2 * 4**(k+1) <= 2**62
            g = math.ldexp(s_t, -k)
            if g > 0.0 and delta / Fraction(g) + 2 <= factor * delta / Fraction(g):
                break
        else:
            raise InvalidParameterError(
                f"The Gaussian line search cannot place its noise on an exact grid at rho_BT={rho!r}; "
                "raise the line-search budget.")
        self.k, self.g, self.sigma = k, g, s_t
        self._source = source

    def run(self, queries: Any) -> int | None:
        """Index of the first query (lazily consumed) answered "above", or None."""
        threshold = int(discrete_gaussian(4**self.k, 1, 1, self._source)[0])
        for index, value in enumerate(queries):
            q = int(round_to_grid(np.asarray([float(value)]), self.g, "query", "GaussianSparseVector")[0])
            nu = int(discrete_gaussian(4 ** (self.k + 1), 1, 1, self._source)[0])
            if q + nu >= threshold:
                return index
        return None

    def query_limit(self) -> float:
        """Queries are clipped to ``[-L, L]``, ``L = 2**24 g`` (1-Lipschitz, so sensitivity is kept).

        It keeps them on the exact grid, and bounds the rounding of their last
        addition (:class:`privtune.optim.line_search._step._Search`). It was
        ``2**48 g``; beyond ``2**24`` steps (``2**14`` threshold noise
        deviations) the answer was never in doubt.
        """
        return math.ldexp(self.g, 24)
