r"""The Gaussian mechanism, calibrated analytically and sampled exactly on a grid.

:class:`Gaussian` releases ``value + noise`` with discrete Gaussian noise on a
fine grid, drawn exactly with integer arithmetic
(:func:`~privtune.mechanisms._samplers.discrete_gaussian`), so that the
floating-point attack on textbook samplers (Mironov 2012) does not apply.

Calibration. The noise multiplier ``nm = sigma / sensitivity`` is either

* ``"analytic"`` (default): Balle & Wang (2018), the smallest ``nm`` whose
  exact Gaussian privacy curve
  ``delta(eps) = Phi(1/(2 nm) - eps nm) - exp(eps) Phi(-1/(2 nm) - eps nm)``
  is at most the target ``delta`` at the target ``epsilon``, found by bisection
  down to adjacent floats and rounded **up**, against the target ``delta``
  times ``1 - 1e-6`` (the computed ``delta(eps)`` at the returned value never
  exceeds that; the margin covers the float error of the computed curve, so the
  exact curve stays below the target); or
* ``"classic"``: ``sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth 2014,
  Thm. A.1), valid only for ``epsilon < 1``.

Grid and rounding. The mechanism adds noise of standard deviation
``sigma = nm * sensitivity * (1 + eta)`` with headroom ``eta = 2**-10`` (0.1 %
more noise than the textbook calibration). For a call on ``d`` coordinates it
picks ``g = sigma / 2**k`` with the smallest ``k >= 10`` such that
``2 sqrt(d) g <= eta * sensitivity`` (checked exactly, in rationals, as
``nm (sensitivity / g + 2 sqrt(d)) <= 2**k``), rounds the value to
``n = round(v / g)`` and adds discrete Gaussian noise of parameter
``sigma_grid = 2**k`` (``sigma_grid**2 = 4**k``, an exact integer). Between
neighbouring inputs the rounded integer vectors differ by at most
``sensitivity / g + 2 sqrt(d)`` in L2 norm (half a step per rounding plus a float
error below a quarter step, as ``|v / g| < 2**51``: a value beyond it is clipped to
``+-(2**51 - 1) g`` first, a 1-Lipschitz map that keeps the sensitivity), which is at most
``(1 + eta) sensitivity / g``; so the integer mechanism's noise multiplier is at
least the calibrated ``nm``. The release ``g (n + Z)`` is post-processing.

Why the charged ``GaussianEvent(noise_multiplier=nm)`` is sound for this sampler.

* RDP / zCDP: the discrete Gaussian with integer sensitivity ``Delta_Z`` satisfies
  the same concentrated-DP bound as the continuous one,
  ``rho = Delta_Z**2 / (2 sigma_grid**2)`` (Canonne, Kamath & Steinke 2020, for
  one coordinate). For ``d`` independent coordinates the Renyi divergence of the
  product is the sum of the coordinates' divergences, so an integer shift vector
  of L2 norm ``Delta_Z`` gives exactly ``alpha Delta_Z**2 / (2 sigma_grid**2)``:
  RDP accounting is valid for vectors too (no extra term).
* (epsilon, delta) and PLD: the discrete privacy curve is *not* identical to the
  continuous one -- lattice tail sums differ from Gaussian tail integrals at a
  relative order of about ``1 / sigma_grid`` -- and the analytic calibration uses
  the continuous curve. The headroom ``eta`` absorbs the difference: for scalar
  releases the test suite computes the exact discrete ``delta(epsilon)`` (the
  hockey-stick divergence summed over the lattice, at the worst-case integer
  shift allowed by the rounding) and checks that it stays below the target
  (measured ratios 0.98-0.996 for epsilon in [0.1, 8] and delta in
  [1e-9, 1e-3]). For vector releases no such proof is known to privtune, so
  vector events (``privacy_event(vector=True)``, the DP trainers' steps) are
  accounted through RDP only, and the trainers calibrate their noise with RDP
  (:func:`calibrate_rdp_gaussian`).
* Subsamples: the integer moments ``E[L**k]`` of the likelihood ratio of two
  lattice Gaussians an integer shift apart equal the continuous ones, so the
  Poisson-subsampled curve is the continuous one at integer orders and is
  interpolated in between
  (:func:`privtune.accounting.rdp_math.poisson_gaussian_rdp`); sampling
  without replacement keeps dp-accounting's bound, whose inputs are such
  integer-order quantities (docs/privacy_model.md, "Accounting").

References
----------
.. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
   Differential Privacy: Analytical Calibration and Optimal Denoising",
   ICML 2018.
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
   Privacy", 2014, Theorem A.1.
.. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020.
.. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for
   Differential Privacy", ACM CCS 2012.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.events import GaussianEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._gaussian_calibration import (
    _analytic_sigma,
    _classic_multiplier,
    _rdp_multiplier,
    _round_up_product,
    calibrate_analytic_gaussian,
    calibrate_rdp_gaussian,
    gaussian_delta,
)
from privtune.mechanisms._samplers import (
    GRID_HEADROOM,
    _Frozen,
    discrete_gaussian,
    gaussian_grid,
    grid_to_float,
    round_to_grid,
)
from privtune.utils import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_integer,
    check_real,
    check_sensitivity,
)
from privtune.utils._random import check_random_state

__all__ = ["Gaussian", "calibrate_analytic_gaussian", "calibrate_rdp_gaussian", "gaussian_delta"]

CALIBRATIONS = ("analytic", "classic", "rdp")


class Gaussian(_Frozen):
    r"""Gaussian mechanism for real values and vectors, with exact grid noise.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Target epsilon of one call (below 1 for ``calibration="classic"``).
    delta : float in (0, 1)
        Target delta of one call.
    sensitivity : float in (0, inf)
        Declared sensitivity: the absolute change of a scalar, or the **L2
        norm** of the change of a vector, when one record is replaced. A public
        bound, never read off the data.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None`` draws noise from the operating system's CSPRNG. An int or a
        Generator makes outputs exactly reproducible and is **not for release**.
        Resolved once, at construction.
    calibration : {"analytic", "classic", "rdp"}, default="analytic"
        How the noise multiplier is derived from (epsilon, delta). ``"analytic"``
        (Balle & Wang) and ``"classic"`` (Dwork & Roth) release **one
        coordinate** per call: their curve is proven for scalar discrete Gaussian
        noise only, and an array of several values is refused. ``"rdp"``
        (:func:`calibrate_rdp_gaussian`) is proven for vectors (Renyi divergence
        tensorises over independent coordinates), costs a few percent more
        noise, and its :meth:`privacy_event` is a vector event (RDP accounting).

    Attributes
    ----------
    epsilon, delta, sensitivity : float
    calibration : str
    noise_multiplier : float
        Calibrated noise multiplier ``nm``: sigma divided by the *effective*
        sensitivity ``(1 + 2**-10) * sensitivity`` that includes the rounding to
        the grid. This is the value the :class:`~privtune.accounting.events.GaussianEvent`
        carries; (epsilon, delta) is attained at it.
    sigma : float
        Standard deviation of the noise, ``nm * sensitivity * (1 + 2**-10)``.
    seeded : bool
        True when the noise is reproducible from a seed (not for release).

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain, or ``calibration="classic"`` with
        ``epsilon >= 1``.

    See Also
    --------
    calibrate_analytic_gaussian, gaussian_delta, Laplace

    Notes
    -----
    **Privacy.** Each :meth:`randomise` call is ``(epsilon, delta)``-DP under
    the neighbouring relation the sensitivity was declared for (replace-one by
    default), including the rounding to the grid; more precisely it has the
    whole privacy curve (and the RDP curve ``alpha / (2 nm**2)``) of a Gaussian
    mechanism with noise multiplier :attr:`noise_multiplier`. Public: epsilon,
    delta, the sensitivity, the shape of the value and the grid. Charge
    :meth:`privacy_event`, ``GaussianEvent(noise_multiplier=nm)``, once per
    call, before the call. See the module docstring for why the continuous
    Gaussian's curve is a sound description of the discrete Gaussian used here.

    References
    ----------
    .. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
       Differential Privacy: Analytical Calibration and Optimal Denoising",
       ICML 2018.
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
       Privacy", 2014.
    .. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020.

    Examples
    --------
    >>> from privtune.mechanisms import Gaussian
    >>> mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=0)
    >>> mech.randomise_each([0.0, 1.0]).shape
    (2,)
    """

    __slots__ = ("_epsilon", "_delta", "_sensitivity", "_calibration", "_noise_multiplier",
                 "_sigma", "_source")

    def __init__(self, *, epsilon: float, delta: float, sensitivity: float,
                 random_state: Any = None, calibration: str = "analytic") -> None:
        owner = "Gaussian"
        eps = check_epsilon(epsilon, owner=owner)
        dlt = check_delta(delta, owner=owner, allow_zero=False)
        sens = check_sensitivity(sensitivity, owner=owner)
        if not isinstance(calibration, str) or calibration not in CALIBRATIONS:
            raise InvalidParameterError(
                f"The 'calibration' parameter of {owner} must be one of {list(CALIBRATIONS)}. "
                f"Got {calibration!r} instead."
            )
        if calibration == "classic":
            if eps >= 1.0:
                raise InvalidParameterError(
                    f"The 'epsilon' parameter of {owner} must be a float in the range (0.0, 1.0) "
                    f"when calibration='classic' (Dwork & Roth 2014, Thm. A.1). Got {epsilon!r} "
                    "instead; use calibration='analytic'."
                )
            nm = _classic_multiplier(eps, dlt)
        elif calibration == "rdp":
            nm = _rdp_multiplier(eps, dlt)
        else:
            nm = _analytic_sigma(eps, dlt, 1.0)
        sigma = _round_up_product(nm, sens, 1.0 + GRID_HEADROOM)
        if not math.isfinite(sigma):
            raise InvalidParameterError(
                f"The noise scale of {owner} overflows for sensitivity={sens!r}, epsilon={eps!r}, "
                f"delta={dlt!r}."
            )
        self._set("_epsilon", eps)
        self._set("_delta", dlt)
        self._set("_sensitivity", sens)
        self._set("_calibration", calibration)
        self._set("_noise_multiplier", nm)
        self._set("_sigma", sigma)
        self._set("_source", check_random_state(random_state, owner=owner))

    @classmethod
    def from_noise_multiplier(cls, noise_multiplier: float, *, sensitivity: float,
                              random_state: Any = None) -> Gaussian:
        """A Gaussian mechanism with a given noise multiplier instead of an (epsilon, delta) target.

        Use it when a whole plan of Gaussian releases is calibrated at once (the
        composition of Gaussians with multipliers ``nm_i`` is exactly a Gaussian
        with ``1 / nm**2 = sum 1 / nm_i**2``); the accountant then bounds the
        plan from the events. ``epsilon`` and ``delta`` of the result are None
        and ``calibration`` is ``"noise_multiplier"``. Its :meth:`randomise`
        accepts vectors, so its :meth:`privacy_event` is a vector event (RDP
        accounting) unless ``vector=False`` is passed for scalar releases.

        Parameters
        ----------
        noise_multiplier : float in (0, inf)
            sigma / sensitivity, as charged by :meth:`privacy_event`.
        sensitivity : float in (0, inf)
            Declared L2 sensitivity.
        random_state : None, int, Generator or RandomSource, default=None

        Returns
        -------
        Gaussian
        """
        owner = "Gaussian.from_noise_multiplier"
        nm = check_real(noise_multiplier, "noise_multiplier", low=0.0, owner=owner)
        sens = check_sensitivity(sensitivity, owner=owner)
        sigma = _round_up_product(nm, sens, 1.0 + GRID_HEADROOM)
        if not math.isfinite(sigma):
            raise InvalidParameterError(f"The noise scale of {owner} overflows.")
        self = cls.__new__(cls)
        self._set("_epsilon", None)
        self._set("_delta", None)
        self._set("_sensitivity", sens)
        self._set("_calibration", "noise_multiplier")
        self._set("_noise_multiplier", nm)
        self._set("_sigma", sigma)
        self._set("_source", check_random_state(random_state, owner=owner))
        return self

    # -- read-only parameters ------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """Target epsilon."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """Target delta."""
        return self._delta

    @property
    def sensitivity(self) -> float:
        """Declared L2 sensitivity."""
        return self._sensitivity

    @property
    def calibration(self) -> str:
        """``"analytic"`` or ``"classic"``."""
        return self._calibration

    @property
    def noise_multiplier(self) -> float:
        """Noise multiplier charged to the accountant (sigma / effective sensitivity)."""
        return self._noise_multiplier

    @property
    def sigma(self) -> float:
        """Standard deviation of the noise on each coordinate."""
        return self._sigma

    @property
    def seeded(self) -> bool:
        """True when the noise is reproducible from a seed (not for release)."""
        return bool(self._source.seeded)

    # -- grid ------------------------------------------------------------------------
    def _grid(self, dim: int) -> tuple[int, float]:
        return gaussian_grid(sigma=self._sigma, sensitivity=self._sensitivity,
                             noise_multiplier=self._noise_multiplier, dim=dim, owner="Gaussian")

    def _integer_noise(self, k: int, size: int | tuple[int, ...]) -> np.ndarray:
        """Integer noise of the grid with exponent ``k`` (sigma ``2**k``), ``size`` draws (internal)."""
        return discrete_gaussian(4**k, 1, size, self._source)

    def grid_spacing(self, size: int = 1) -> float:
        """Spacing ``g`` of the output grid for a value with ``size`` coordinates.

        The integer noise has parameter ``sigma / g``, a power of two at least
        ``2**10``.

        Parameters
        ----------
        size : int in [1, inf), default=1
            Number of coordinates of the value.

        Returns
        -------
        float
        """
        return self._grid(check_integer(size, "size", low=1, owner="Gaussian"))[1]

    # -- release -------------------------------------------------------------------
    def randomise(self, value: Any) -> float | np.ndarray:
        """Release ``value`` plus exact discrete Gaussian noise on a grid.

        Parameters
        ----------
        value : float or array_like of float
            The private value; finite. For an array, ``sensitivity`` bounds the
            L2 norm of the change of the whole array.

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
        **Privacy.** ``(epsilon, delta)``-DP per call; charge :meth:`privacy_event`.
        """
        arr = check_finite_array(value, "value", owner="Gaussian")
        if arr.size > 1 and self._calibration in ("analytic", "classic"):
            raise InvalidParameterError(
                f"Gaussian(calibration={self._calibration!r}) releases one coordinate: its (epsilon, delta) curve is "
                f"proven for scalar discrete Gaussian noise only. For {arr.size} coordinates use "
                "calibration='rdp' (proven for vectors through RDP, a few percent more noise) and charge "
                "privacy_event(), which is then a vector event. No randomness was drawn.")
        k, g = self._grid(arr.size)
        base = round_to_grid(arr.reshape(-1), g, "value", "Gaussian")
        noise = self._integer_noise(k, arr.size)
        released = grid_to_float(base, noise, g).reshape(arr.shape)
        return float(released) if arr.ndim == 0 else released

    def randomise_each(self, values: Any) -> np.ndarray:
        """Independent scalar releases: entry ``i`` is released exactly as ``randomise(values[i])`` would.

        Each entry is its own query of the declared sensitivity, on the scalar
        grid, with fresh noise: ``len(values)`` releases, each costing
        :meth:`privacy_event` (charge one per entry). Available for every
        calibration (it is the scalar mechanism, repeated).

        Parameters
        ----------
        values : array_like of float

        Returns
        -------
        ndarray of the same shape
        """
        arr = check_finite_array(values, "values", owner="Gaussian")
        k, g = self._grid(1)
        base = round_to_grid(arr.reshape(-1), g, "values", "Gaussian")
        noise = self._integer_noise(k, arr.size)
        return grid_to_float(base, noise, g).reshape(arr.shape)

    def variance(self) -> float:
        """Variance of the noise on each coordinate: ``sigma**2``.

        The discrete Gaussian's variance is below ``sigma_grid**2`` by a relative
        amount of order ``exp(-2 pi**2 sigma_grid**2)`` with ``sigma_grid >= 2**10``,
        i.e. it equals ``sigma**2`` in double precision. The rounding of the
        value to the grid adds a deterministic error of at most ``g / 2``.

        Returns
        -------
        float
        """
        return self._sigma * self._sigma

    def privacy_event(self, *, vector: bool | None = None) -> GaussianEvent:
        """The event to charge for one :meth:`randomise` call.

        ``vector=True`` marks a release of several coordinates, accounted
        through RDP only (see :class:`~privtune.accounting.GaussianEvent`). It
        is the default for the calibrations that may release vectors:
        ``"rdp"`` and ``"noise_multiplier"`` (:meth:`from_noise_multiplier`,
        whose :meth:`randomise` accepts arrays). Pass ``vector=False`` only
        when every charged call releases one coordinate: the scalar event's
        (epsilon, delta) curve is proven for one coordinate only. The
        ``"analytic"`` and ``"classic"`` mechanisms refuse arrays and default
        to ``vector=False``.
        """
        vec = self._calibration in ("rdp", "noise_multiplier") if vector is None else bool(vector)
        return GaussianEvent(noise_multiplier=self._noise_multiplier, vector=vec)

    def __repr__(self) -> str:
        return (f"Gaussian(epsilon={self._epsilon!r}, delta={self._delta!r}, "
                f"sensitivity={self._sensitivity!r}, calibration={self._calibration!r}, "
                f"random_state={'<seeded>' if self.seeded else '<secure>'})")
