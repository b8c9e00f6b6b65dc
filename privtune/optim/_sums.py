r"""Sums over rows with a proven floating-point rounding bound, and the sensitivity factor that pays for it (internal).

The line-search trainer (:func:`privtune.optim.dp_blsgd`, hence the MLP) and the
second-order trainer (:func:`privtune.optim.second_order.dp_second_order`)
release noisy means of per-row terms whose exact sensitivity is ``f T / D``
(``T`` a bound on one row's term, ``D`` the public divisor, ``f = 2`` under
replace-one, 1 under add/remove). A float64 sum of ``m`` terms in an unknown
order (a BLAS product, ``np.sum``) errs by up to ``gamma_{m-1}`` times the sum
of the terms' magnitudes (Higham 2002, eq. (3.5); ``gamma_k = k u / (1 - k u)``,
``u = 2**-53``); one replaced row changes the rounding of the whole sum, so the
*computed* means of two neighbouring data sets can differ by more than the
exact sensitivity: by up to ``2 gamma_{m-1} m T / D`` more, about ``m**2 2**-52``
relative, which is below the mechanisms' documented margins only up to about
``10**6`` rows per sum. (The margin-loss gradient of the accelerated solvers
has its own argument and slack: :meth:`privtune.optim._losses.MarginLoss.gradient`.)

**The sums** (:func:`blocked_sum`): the rows are cut, by position, into blocks
of ``B = min(m, SUM_BLOCK)`` consecutive rows; each block's sum is computed as
before (one BLAS product or ``np.sum`` on that block; for ``m <= SUM_BLOCK``
that is the whole sum, bit for bit the computation before this module existed),
and the blocks' sums are added with :func:`math.fsum` (correctly rounded). Each
term then passes through at most ``B + 2`` roundings (its product, ``B - 1``
additions in its block, the ``fsum``, the division by ``D``) plus the caller's
own (e.g. a difference or a second product, counted by the caller in
``depth``), so the computed mean ``H`` satisfies, per coordinate,

.. math:: |H_j - X_j / D| \le \gamma_{B + 2 + e}\, \sum_i |t_{ij}| / D
          + a_j,

(Higham's Lemma 3.3, any order of the operations) where ``a_j`` collects the
absolute errors of roundings that fall below float64's normal range: each of
the at most ``m (B + 2 + e) + 1`` roundings errs by less than ``2**-1022``
there (with gradual underflow or flush-to-zero). With ``||t_i|| <= T`` for
every row (the norm of the sensitivity; ``||sum_i |t_i| || <= sum_i ||t_i||``),
two neighbouring computed means differ by at most

.. math:: \frac{f T}{D} + 2\Big(\gamma_{B+2+e} \frac{m T}{D} + N\,a\Big)
          = \psi\,\frac{f T}{D}, \qquad
          \psi = 1 + \frac{2 \gamma_{B+2+e}\, m}{f} + \frac{2 N a D}{f T},

``m`` the largest number of terms a sum can have (the batch size, or ``n``),
``N`` the norm of a vector of ones over the coordinates (``sqrt(k)`` in L2).
:func:`rounding_factor` returns ``psi`` (rounded up; it also takes a per-term
bound ``T`` above the nominal one, e.g. for the float64 norm check of a
clipping), and the trainers pass ``psi`` times the exact sensitivity to their
mechanisms: the noise grows by the factor ``psi`` (at most about ``1 + m 2**-40``;
``1 + 1.1e-10`` at 1 000 rows and ``1 + 4.5e-7`` at 10**6 under replace-one), the privacy
events do not change (they are relative to the sensitivity), and the
guarantee holds for the computed values at every number of rows the trainers
accept (``SUM_BLOCK (m + 2) <= 2**45``, i.e. ``psi - 1 <= 2**-6``: about
``8.6 * 10**9`` rows per sum; more is refused before any charge).

**Assumption.** Each row's term must depend on that row, its position and the
public inputs only (not on the values of other rows): true of the products
privtune computes (a BLAS product does not mix rows) and of the objectives it
ships (:class:`~privtune.optim.line_search.MarginObjective`, the MLP's
``vmap``-ed per-example gradients); a user's
:class:`~privtune.optim.line_search.PerExampleObjective` must satisfy it too.

References
----------
.. [Hig02] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd
   ed., SIAM 2002, sections 3.1 and 4.2.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = ["SUM_BLOCK", "MAX_SUM_TERMS", "blocked_sum", "rounding_factor", "check_sum_terms", "clip_norm_bound"]

#: Rows per block of :func:`blocked_sum` (one BLAS product each; the blocks' sums are added with ``math.fsum``).
SUM_BLOCK = 4096
#: The largest number of terms of one sum the trainers accept: ``SUM_BLOCK (m + 2) <= 2**45`` keeps ``psi - 1``
#: below ``2**-6`` (module docstring).
MAX_SUM_TERMS = 2**45 // SUM_BLOCK - 2
_U = Fraction(1, 2**53)
#: Absolute error of one float64 rounding whose result falls below the normal range (either underflow mode).
_TINY = Fraction(1, 2**1022)


def _gamma(k: int) -> Fraction:
    return k * _U / (1 - k * _U)


def _float_up(x: Fraction) -> float:
    """``x`` as a float, rounded up (never below ``x``); ``inf`` beyond the float range."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def check_sum_terms(m: int, owner: str) -> None:
    """Refuse (public sizes, before any charge) a sum of more than :data:`MAX_SUM_TERMS` terms."""
    if m > MAX_SUM_TERMS:
        raise InvalidParameterError(
            f"{owner} sums at most {MAX_SUM_TERMS} rows per noisy mean (beyond, the proven bound on the float "
            f"rounding of the sum exceeds its share of the sensitivity); got {m}. Nothing was spent.")


def blocked_sum(m: int, block_sum: Callable[[int, int], Any]) -> Any:
    """The sum over rows ``0 .. m - 1`` of ``block_sum(start, stop)``, blocks of :data:`SUM_BLOCK` rows by position.

    ``block_sum`` returns the (float64) sum of the terms of rows
    ``start .. stop - 1``: a float or an array, the same shape for every block.
    With ``m <= SUM_BLOCK`` this is ``block_sum(0, m)`` itself; otherwise the
    blocks' sums are added with :func:`math.fsum`, coordinate by coordinate.
    """
    if m <= SUM_BLOCK:
        return block_sum(0, m)
    parts = [block_sum(start, min(start + SUM_BLOCK, m)) for start in range(0, m, SUM_BLOCK)]
    if np.ndim(parts[0]) == 0:
        return math.fsum(float(p) for p in parts)
    stack = np.stack([np.asarray(p, dtype=np.float64) for p in parts])
    flat = stack.reshape(len(parts), -1)
    return np.array([math.fsum(col) for col in flat.T.tolist()]).reshape(stack.shape[1:])


@functools.lru_cache(maxsize=4096)
def rounding_factor(*, terms: int, bound: float, divisor: float, factor: float, coordinates: int = 1,
                    norm: int = 2, term_bound: float | None = None, depth: int = 0,
                    exact_sensitivity: float | None = None) -> float:
    """``psi``: two neighbouring *computed* means differ by at most ``psi`` times the exact sensitivity.

    Parameters
    ----------
    terms : int
        The largest number of terms of one sum (``m``; ``n`` when the batch
        size is random).
    bound : float
        The nominal bound ``T`` on one row's term, in the sensitivity's norm.
    divisor : float
        ``D``.
    factor : float
        ``f``: 2 under replace-one, 1 under add/remove (or for values in
        ``[0, T]``, whose replacement moves the sum by ``T``).
    coordinates : int, default=1
        Coordinates of the mean (``N`` is ``sqrt(coordinates)`` in L2,
        ``coordinates`` in L1).
    norm : {1, 2}, default=2
    term_bound : float or None, default=None
        A proven bound on one row's term above ``bound`` (e.g.
        :func:`clip_norm_bound`); None is ``bound``.
    depth : int, default=0
        Roundings each term passes through before the sum beyond its product
        (e.g. 1 for a difference of two clipped values, 2 for a product of
        three factors and a symmetrisation).
    exact_sensitivity : float or None, default=None
        The sensitivity the mechanism is calibrated on, when it is larger than
        ``f T / D`` (``psi`` is then relative to it, and may be 1).

    Returns
    -------
    float
        ``psi >= 1``, rounded up (module docstring); ``inf`` if the bound
        overflows.
    """
    m = max(int(terms), 1)
    block = min(m, SUM_BLOCK)
    k = block + 2 + int(depth)
    T, T_hat = Fraction(bound), Fraction(bound if term_bound is None else term_bound)
    D, f = Fraction(divisor), Fraction(factor)
    root = math.isqrt(int(coordinates))
    n_ones = Fraction(coordinates) if norm == 1 else Fraction(root if root * root == coordinates else root + 1)
    absolute = (m * k + 1) * _TINY * (1 + _gamma(k))  # per coordinate, before the division by D (one more rounding)
    per_neighbour = _gamma(k) * m * T_hat / D + n_ones * (absolute / D + _TINY)
    bound_computed = f * T_hat / D + 2 * per_neighbour
    reference = f * T / D if exact_sensitivity is None else Fraction(exact_sensitivity)
    return max(1.0, _float_up(bound_computed / reference))


@functools.lru_cache(maxsize=4096)
def clip_norm_bound(clip: float, coordinates: int) -> float:
    """A proven bound on ``||min(1, clip / ||g||_c) g||_2``, the clipping of a float64 vector, computed in float64.

    ``||g||_c = sqrt(einsum(g, g))`` is computed in float64 (any order), the
    factor ``fl(clip / ||g||_c)`` too, and every row whose computed norm
    exceeds ``2**960 clip`` is zeroed by the caller (so that the factor is a
    normal float): then the exact norm of the clipped vector is at most

    ``clip (1 + u) / (1 - u) * sqrt((1 + 2 k 2**-1022 (1 + gamma_k) (1 + u)**2 / clip**2) / (1 - gamma_k))``

    (``k = coordinates``): the computed sum of squares is within ``gamma_k``
    of the exact one plus ``2 k`` absolute underflow errors, the square root
    and the division round once each. Rounded up; a little above ``clip``
    (``1 + 2**-40`` for a few thousand coordinates).
    """
    c = Fraction(clip)
    k = int(coordinates)
    g = _gamma(k)
    ratio = (1 + 2 * k * _TINY * (1 + g) * (1 + _U) ** 2 / (c * c)) / (1 - g)
    # sqrt(ratio) <= ratio for ratio >= 1: a rational upper bound without a square root
    return _float_up(c * (1 + _U) / (1 - _U) * ratio)
