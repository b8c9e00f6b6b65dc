r"""Grid arithmetic behind privtune's exact noise: choosing the grid, rounding to it, reading it back.

Used by :mod:`privtune.mechanisms.laplace`, ``gaussian`` and
``sparse_vector``: a mechanism with continuous-equivalent scale ``s`` picks a
grid spacing ``g = s / 2**k``, rounds the value to the grid
(``round(v / g)``, an integer) and adds integer noise of scale exactly ``2**k``;
the output ``g * (round(v / g) + Z)`` is post-processing of that integer. The
rounding can move neighbouring inputs apart by up to two grid steps per
coordinate (half a step from each rounding, plus the floating-point error of
``v / g``, which is below a quarter step while ``|v / g| < 2**51``; a private
value beyond that is clipped to it, a 1-Lipschitz map, see :func:`round_to_grid`),
so the mechanisms charge a sensitivity of ``Delta / g + 2 d`` (L1) or
``Delta / g + 2 sqrt(d)`` (L2) integer steps, and choose ``k`` so that this fits
inside a headroom ``eta = 2**-10`` of the declared sensitivity: the noise is
0.1 % larger than the textbook scale, and in exchange the stated guarantee
holds *exactly*, rounding included. Every such
condition is checked in exact rational arithmetic (:class:`fractions.Fraction`).

The integer noise itself comes from :mod:`privtune.mechanisms._discrete`, built on
the Bernoulli(exp) primitives of :mod:`privtune.mechanisms._bernoulli` (overview of
the exact samplers: :mod:`privtune.mechanisms._samplers`).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._bernoulli import _INT64_MAX

__all__ = [
    "GRID_HEADROOM",
    "MIN_GRID_EXPONENT",
    "MAX_GRID_INDEX",
    "laplace_grid",
    "gaussian_grid",
    "round_to_grid",
    "grid_to_float",
]

#: Headroom ``eta``: the sensitivity is inflated by ``1 + eta`` to pay for rounding.
GRID_HEADROOM = 2.0**-10
#: Noise on the grid always has integer scale ``2**k`` with ``k >= MIN_GRID_EXPONENT``.
MIN_GRID_EXPONENT = 10
#: Largest grid exponent the Laplace mechanisms accept (keeps draws inside ``2**62``).
MAX_LAPLACE_GRID_EXPONENT = 60
#: Largest grid exponent the Gaussian mechanism accepts (``2 sigma_grid**2 <= 2**61``).
MAX_GAUSSIAN_GRID_EXPONENT = 30
#: Values are refused when ``|v / g|`` reaches this bound (rounding stays exact below it).
MAX_GRID_INDEX = 2.0**51


# --------------------------------------------------------------------------------------
# grid helpers shared by the mechanisms
# --------------------------------------------------------------------------------------
def laplace_grid(*, scale: float, sensitivity: float, epsilon: float, dim: int,
                 owner: str, max_exponent: int = MAX_LAPLACE_GRID_EXPONENT) -> tuple[int, float]:
    """Smallest ``k >= 10`` and ``g = scale / 2**k`` with ``(Delta/g + 2 dim) / 2**k <= epsilon``.

    The inequality is checked exactly (rationals). Discrete Laplace noise of
    scale ``2**k`` on an integer query whose L1 sensitivity is at most
    ``Delta/g + 2 dim`` is then ``epsilon``-DP.
    """
    found = _laplace_grid_cached(float(scale), float(sensitivity), float(epsilon), int(dim), int(max_exponent))
    if found is None:
        raise InvalidParameterError(
            f"{owner} cannot place {dim} coordinate(s) on an exact noise grid at epsilon={epsilon!r} "
            f"(it would need a grid exponent above {max_exponent}); use fewer coordinates or a "
            "larger epsilon."
        )
    return found


@functools.lru_cache(maxsize=4096)
def _laplace_grid_cached(scale: float, sensitivity: float, epsilon: float, dim: int,
                         max_exponent: int) -> tuple[int, float] | None:
    """The search behind :func:`laplace_grid`, memoised (None when no grid exists)."""
    eps, delta_l1 = Fraction(epsilon), Fraction(sensitivity)
    for k in range(MIN_GRID_EXPONENT, max_exponent + 1):
        g = math.ldexp(scale, -k)
        if g <= 0.0:
            break
        if delta_l1 / Fraction(g) + 2 * dim <= eps * 2**k:
            return k, g
    return None


def gaussian_grid(*, sigma: float, sensitivity: float, noise_multiplier: float, dim: int,
                  owner: str) -> tuple[int, float]:
    """Smallest ``k >= 10`` and ``g = sigma / 2**k`` with ``2**k / (Delta/g + 2 sqrt(dim)) >= nm``.

    Checked exactly: with ``A = 2**k / nm - Delta/g`` the condition is
    ``A >= 0`` and ``A**2 >= 4 dim``. Discrete Gaussian noise of scale
    ``2**k`` on an integer query of L2 sensitivity ``Delta/g + 2 sqrt(dim)``
    then has noise multiplier at least ``nm``.
    """
    found = _gaussian_grid_cached(float(sigma), float(sensitivity), float(noise_multiplier), int(dim))
    if found is None:
        raise InvalidParameterError(
            f"{owner} cannot place {dim} coordinate(s) on an exact noise grid (it would need a grid "
            f"exponent above {MAX_GAUSSIAN_GRID_EXPONENT}, noise multiplier {noise_multiplier:.4g}); use fewer "
            "coordinates or a larger epsilon (less noise)."
        )
    return found


@functools.lru_cache(maxsize=4096)
def _gaussian_grid_cached(sigma: float, sensitivity: float, noise_multiplier: float,
                          dim: int) -> tuple[int, float] | None:
    """The search behind :func:`gaussian_grid`, memoised (None when no grid exists)."""
    nm, delta_l2 = Fraction(noise_multiplier), Fraction(sensitivity)
    for k in range(MIN_GRID_EXPONENT, MAX_GAUSSIAN_GRID_EXPONENT + 1):
        g = math.ldexp(sigma, -k)
        if g <= 0.0:
            break
        a = Fraction(2**k) / nm - delta_l2 / Fraction(g)
        if a >= 0 and a * a >= 4 * dim:
            return k, g
    return None


def round_to_grid(values: np.ndarray, g: float, name: str, owner: str, *, public: bool = False) -> np.ndarray:
    """``round(values / g)`` as int64, inside ``|values / g| < 2**51`` (the exactness limit).

    A private value (the default) beyond the limit is clipped to
    ``+-(2**51 - 1)`` grid steps before rounding; it is never refused. A refusal
    would be a release: whether ``|v / g|`` crossed the limit can depend on one
    row (a gradient sum, a score), and it would come after the charge
    (DESIGN rule 7). The clip is a 1-Lipschitz map of each coordinate, so the
    rounded neighbouring values still differ by at most ``Delta / g`` plus two
    steps per coordinate: the float error of ``v / g`` that decides the clip is
    below a quarter step on the side below the limit (``2**51 * 2**-53``), and
    two clipped values are equal. The sensitivity and guarantee are unchanged;
    the release saturates at about ``+-2**51 g``, which a value reaches only
    with a signal-to-noise ratio above ``2**41``. A *public* value (a declared
    threshold) is refused instead, since saying so reveals nothing.
    """
    scaled = values / g
    if scaled.size and not np.all(np.abs(scaled) < MAX_GRID_INDEX):
        if public or np.isnan(scaled).any():
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} is too large for the exact noise grid: "
                f"|{name}| / grid spacing must stay below 2**51 (grid spacing {g!r}). "
                "Rescale the query or clip it to its declared range."
            )
        scaled = np.clip(scaled, -(MAX_GRID_INDEX - 1.0), MAX_GRID_INDEX - 1.0)
    return np.rint(scaled).astype(np.int64)


def grid_to_float(base: np.ndarray, noise: np.ndarray, g: float) -> np.ndarray:
    """``g * (base + noise)`` as float64 (post-processing of the integer release)."""
    big = noise.dtype == object or (
        noise.size and int(np.abs(noise).max()) + int(np.abs(base).max()) > _INT64_MAX
    )
    if big:  # exact Python integers, then one rounding to float
        total = base.astype(object) + noise.astype(object)
        return np.asarray([g * float(v) for v in total.tolist()], dtype=np.float64)
    return g * (base + noise).astype(np.float64)
