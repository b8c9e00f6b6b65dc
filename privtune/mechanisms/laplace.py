r"""The Laplace mechanism, sampled exactly on a grid (floating-point safe).

:class:`Laplace` releases ``value + noise`` where the noise is a discrete
Laplace variable on a fine grid, drawn exactly with integer arithmetic
(:func:`~privtune.mechanisms._samplers.discrete_laplace`). Textbook samplers
(``-b log(u)`` on a float uniform) leave value-dependent holes in the output and
can reveal the input (Mironov 2012); this one cannot.

How the grid is chosen, and why the guarantee is exact:

* the continuous-equivalent scale is ``b = Delta (1 + eta) / epsilon`` with a
  headroom ``eta = 2**-10``: the noise is 0.1 % larger than the textbook
  ``Delta / epsilon``;
* for a call on ``d`` coordinates the grid spacing is ``g = b / 2**k`` with the
  smallest ``k >= 10`` such that ``(Delta / g + 2 d) / 2**k <= epsilon``
  (checked in exact rational arithmetic; it holds as soon as
  ``2 d g <= eta Delta``);
* the value is rounded to the grid, ``n = round(v / g)``; between neighbouring
  inputs the rounded integers differ by at most ``Delta / g + 2 d`` in L1 norm
  (half a step per rounding plus the floating-point error of ``v / g``, which is
  below a quarter step because ``|v / g| < 2**51``: a value beyond it is clipped to
  ``+-(2**51 - 1) g`` first, a 1-Lipschitz map that keeps the sensitivity);
* integer noise ``Z`` with ``P[Z = z]`` proportional to ``exp(-|z| / 2**k)`` is
  added, so ``n + Z`` is ``epsilon``-DP, and the release ``g (n + Z)`` is
  post-processing. Its noise has scale exactly ``g 2**k = b``.

References
----------
.. [DMNS06] C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating Noise to
   Sensitivity in Private Data Analysis", TCC 2006.
.. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for
   Differential Privacy", ACM CCS 2012.
.. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.events import LaplaceEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import (
    GRID_HEADROOM,
    _Frozen,
    discrete_laplace,
    grid_to_float,
    laplace_grid,
    round_to_grid,
)
from privtune.utils import check_epsilon, check_finite_array, check_integer, check_sensitivity
from privtune.utils._random import check_random_state

__all__ = ["Laplace"]


class Laplace(_Frozen):
    r"""Laplace mechanism for real values and vectors, with exact grid noise.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Privacy parameter: each call to :meth:`randomise` is ``(epsilon, 0)``-DP.
    sensitivity : float in (0, inf)
        Declared sensitivity of the value to be released: the absolute change of
        a scalar, or the **L1 norm** of the change of a vector, when one record is
        replaced. It is a public bound; privtune never reads it off the data.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None`` draws noise from the operating system's CSPRNG. An int or a
        Generator makes outputs exactly reproducible (two mechanisms built with
        the same int give identical outputs) and is **not for release**: anyone
        holding the seed can remove the noise. Resolved once, at construction.

    Attributes
    ----------
    epsilon : float
    sensitivity : float
    scale : float
        Continuous-equivalent noise scale ``b = sensitivity (1 + 2**-10) / epsilon``.
    seeded : bool
        True when the noise is reproducible from a seed (not for release).

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain.

    See Also
    --------
    Gaussian : L2-sensitivity noise with an (epsilon, delta) guarantee.

    Notes
    -----
    **Privacy.** Each :meth:`randomise` call is ``(epsilon, 0)``-DP under the
    neighbouring relation the sensitivity was declared for (replace-one by
    default), *including* the rounding to the grid (see the module docstring).
    Public: epsilon, the sensitivity, the shape of the value and the grid.
    Charge :meth:`privacy_event`, a ``LaplaceEvent(epsilon=epsilon)``, once per
    call, before the call.

    The released noise is discrete Laplace on the grid ``g Z`` with ``g``
    depending on the number of coordinates (:meth:`grid_spacing`); its scale is
    exactly :attr:`scale`, 0.1 % above the textbook ``sensitivity / epsilon``.

    References
    ----------
    .. [DMNS06] C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating Noise
       to Sensitivity in Private Data Analysis", TCC 2006.
    .. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for
       Differential Privacy", ACM CCS 2012.
    .. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020.

    Examples
    --------
    >>> from privtune.mechanisms import Laplace
    >>> mech = Laplace(epsilon=1.0, sensitivity=1.0, random_state=0)
    >>> out = mech.randomise([1.0, 2.0, 3.0])
    >>> out.shape, mech.privacy_event().epsilon
    ((3,), 1.0)
    """

    __slots__ = ("_epsilon", "_sensitivity", "_scale", "_source")

    def __init__(self, *, epsilon: float, sensitivity: float, random_state: Any = None) -> None:
        owner = "Laplace"
        eps = check_epsilon(epsilon, owner=owner)
        sens = check_sensitivity(sensitivity, owner=owner)
        scale = sens * (1.0 + GRID_HEADROOM) / eps
        if not math.isfinite(scale) or scale <= 0.0:
            raise InvalidParameterError(
                f"The noise scale sensitivity/epsilon of {owner} must be a finite positive "
                f"float; got sensitivity={sens!r} and epsilon={eps!r}."
            )
        self._set("_epsilon", eps)
        self._set("_sensitivity", sens)
        self._set("_scale", scale)
        self._set("_source", check_random_state(random_state, owner=owner))

    # -- read-only parameters ------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """Privacy parameter of one call."""
        return self._epsilon

    @property
    def sensitivity(self) -> float:
        """Declared L1 sensitivity."""
        return self._sensitivity

    @property
    def scale(self) -> float:
        """Continuous-equivalent noise scale ``sensitivity (1 + 2**-10) / epsilon``."""
        return self._scale

    @property
    def seeded(self) -> bool:
        """True when the noise is reproducible from a seed (not for release)."""
        return bool(self._source.seeded)

    # -- grid ------------------------------------------------------------------------
    def _grid(self, dim: int) -> tuple[int, float]:
        return laplace_grid(scale=self._scale, sensitivity=self._sensitivity,
                            epsilon=self._epsilon, dim=dim, owner="Laplace")

    def _integer_noise(self, k: int, size: int | tuple[int, ...]) -> np.ndarray:
        """Integer noise of the grid with exponent ``k`` (scale ``2**k``), ``size`` draws (internal)."""
        return discrete_laplace(2**k, 1, size, self._source)

    def grid_spacing(self, size: int = 1) -> float:
        """Spacing ``g`` of the output grid for a value with ``size`` coordinates.

        Outputs are integer multiples of ``g`` (up to the float rounding of the
        final product); the integer noise has scale ``scale / g``, a power of two
        at least ``2**10``.

        Parameters
        ----------
        size : int in [1, inf), default=1
            Number of coordinates of the value.

        Returns
        -------
        float
        """
        return self._grid(check_integer(size, "size", low=1, owner="Laplace"))[1]

    # -- release -------------------------------------------------------------------
    def randomise(self, value: Any) -> float | np.ndarray:
        """Release ``value`` plus exact discrete Laplace noise on a grid.

        Parameters
        ----------
        value : float or array_like of float
            The private value; finite. For an array, ``sensitivity`` bounds the
            L1 norm of the change of the whole array.

        Returns
        -------
        float or ndarray
            A float for a scalar input, otherwise an array of the same shape.

        Raises
        ------
        InvalidParameterError
            If ``value`` is empty or contains NaN or infinities. No randomness is
            drawn. A finite value too large for the exact grid
            (``|value| / g >= 2**51``) is not refused: it is clipped to
            ``+-(2**51 - 1) g`` (1-Lipschitz, so the guarantee is unchanged; a
            refusal could depend on the private value).

        Notes
        -----
        **Privacy.** ``(epsilon, 0)``-DP per call; charge :meth:`privacy_event`.
        """
        arr = check_finite_array(value, "value", owner="Laplace")
        k, g = self._grid(arr.size)
        base = round_to_grid(arr.reshape(-1), g, "value", "Laplace")
        noise = self._integer_noise(k, arr.size)
        released = grid_to_float(base, noise, g).reshape(arr.shape)
        return float(released) if arr.ndim == 0 else released

    def variance(self, size: int = 1) -> float:
        """Variance of the noise added to each coordinate.

        Exactly ``g**2 / (2 sinh(1 / (2 t))**2)`` for grid spacing ``g`` and
        integer scale ``t = 2**k`` (:meth:`grid_spacing`), i.e.
        ``2 scale**2 - g**2 / 6`` up to terms of order ``g**4 / scale**2``.
        The rounding of the value to the grid adds a deterministic error of at
        most ``g / 2``.

        Parameters
        ----------
        size : int in [1, inf), default=1
            Number of coordinates released together.

        Returns
        -------
        float
        """
        k, g = self._grid(check_integer(size, "size", low=1, owner="Laplace"))
        half = math.sinh(0.5 * 2.0**-k)
        return g * g / (2.0 * half * half)

    def privacy_event(self) -> LaplaceEvent:
        """The event to charge for one :meth:`randomise` call: ``LaplaceEvent(epsilon)``."""
        return LaplaceEvent(epsilon=self._epsilon)

    def __repr__(self) -> str:
        return (f"Laplace(epsilon={self._epsilon!r}, sensitivity={self._sensitivity!r}, "
                f"random_state={'<seeded>' if self.seeded else '<secure>'})")

