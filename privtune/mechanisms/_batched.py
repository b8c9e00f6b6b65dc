"""Noise for a sequence of grid mechanisms, drawn up front (internal).

An iterative DP algorithm (a noisy gradient method, say) calls one Laplace or
Gaussian mechanism per step on a value that depends on the previous releases.
The noise itself does not depend on any value, so it can be drawn before the
first step: :class:`PredrawnNoise` draws the integer noise of every step in one
exact-sampler call per distinct noise parameter, then releases each step's
value on its grid. Each release has exactly the law of the step mechanism's
:meth:`randomise` (same grid, same integer noise distribution, independent
across steps), so the privacy guarantee and its accounting are unchanged; only
the order in which uniform randomness is consumed differs (a seeded run draws
a different, equally distributed, noise sequence than step-by-step calls).

Each step's noise is used once: a second :meth:`PredrawnNoise.release` of the
same step is refused (it would reuse the noise, and the difference of the two
releases would be the exact difference of the two values). A Gaussian
mechanism calibrated for one coordinate (``"analytic"`` or ``"classic"``,
whose :meth:`~privtune.mechanisms.Gaussian.randomise` refuses arrays) is
refused for ``dim > 1``, as its ``randomise`` would refuse it.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import grid_to_float, round_to_grid
from privtune.utils import check_finite_array

__all__ = ["PredrawnNoise"]

#: Gaussian calibrations proven for one coordinate only (their ``randomise`` refuses arrays).
_SCALAR_CALIBRATIONS = ("analytic", "classic")


class PredrawnNoise:
    """Integer grid noise for ``len(mechanisms)`` releases of ``dim`` coordinates each.

    Parameters
    ----------
    mechanisms : sequence of Laplace or Gaussian
        One mechanism per release, all drawing from the same random source.
    dim : int
        Number of coordinates of every released value.

    Raises
    ------
    InvalidParameterError
        If the mechanisms do not share one random source, a Gaussian mechanism
        calibrated for one coordinate (``"analytic"``, ``"classic"``) is given
        ``dim > 1``, or a grid does not exist for ``dim`` coordinates (nothing
        is drawn then).
    """

    def __init__(self, mechanisms: Sequence[Any], dim: int) -> None:
        self._used: set[int] = set()
        if not mechanisms:
            self._rows: list[np.ndarray] = []
            self._spacings: list[float] = []
            self._owners: list[str] = []
            return
        source = mechanisms[0]._source
        if any(m._source is not source for m in mechanisms):
            raise InvalidParameterError("PredrawnNoise needs mechanisms that share one random source.")
        if dim > 1 and any(getattr(m, "_calibration", None) in _SCALAR_CALIBRATIONS for m in mechanisms):
            raise InvalidParameterError(
                f"PredrawnNoise cannot release {dim} coordinates with a Gaussian mechanism calibrated for one "
                "coordinate (calibration 'analytic' or 'classic'); use calibration='rdp' or "
                "Gaussian.from_noise_multiplier. Nothing was drawn.")
        grids = [m._grid(dim) for m in mechanisms]  # (k, g) of each step; refuses before drawing anything
        groups: dict[tuple[type, int], list[int]] = defaultdict(list)  # same kind and k: same integer law
        for t, (m, (k, _g)) in enumerate(zip(mechanisms, grids, strict=True)):
            groups[(type(m), k)].append(t)
        rows: list[np.ndarray | None] = [None] * len(grids)
        for (_kind, k), steps in groups.items():
            block = mechanisms[steps[0]]._integer_noise(k, (len(steps), dim))
            for j, t in enumerate(steps):
                rows[t] = block[j]
        self._rows = rows  # type: ignore[assignment]
        self._spacings = [g for (_k, g) in grids]
        self._owners = [type(m).__name__ for m in mechanisms]

    def __len__(self) -> int:
        return len(self._rows)

    def release(self, step: int, value: Any) -> np.ndarray:
        """``value`` released on step ``step``'s grid with that step's noise.

        Same law as ``mechanisms[step].randomise(value)`` for a 1-D ``value``
        of ``dim`` coordinates. Each step is released at most once.

        Raises
        ------
        InvalidParameterError
            If ``step`` was released before (its noise is spent), or ``value``
            has the wrong size or is not finite (the step is not consumed then).
            Coordinates beyond ``2**51`` grid steps are clipped to that range
            (1-Lipschitz), never refused.
        """
        step = operator.index(step)
        owner = self._owners[step]
        if step < 0:
            step += len(self._rows)
        if step in self._used:
            raise InvalidParameterError(
                f"Step {step} of PredrawnNoise was already released: its noise is spent, and a second release "
                "with the same noise would reveal the exact difference of the two values.")
        arr = check_finite_array(value, "value", owner=owner).reshape(-1)
        noise = self._rows[step]
        if arr.shape != noise.shape:
            raise InvalidParameterError(
                f"The value released by {owner} must have {noise.shape[0]} coordinate(s); got {arr.shape[0]}.")
        g = self._spacings[step]
        base = round_to_grid(arr, g, "value", owner)
        self._used.add(step)
        return grid_to_float(base, noise, g)
