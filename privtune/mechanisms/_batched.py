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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._samplers import grid_to_float, round_to_grid
from privtune.utils import check_finite_array

__all__ = ["PredrawnNoise"]


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
        If the mechanisms do not share one random source, or a grid does not
        exist for ``dim`` coordinates (nothing is drawn then).
    """

    def __init__(self, mechanisms: Sequence[Any], dim: int) -> None:
        if not mechanisms:
            self._rows: list[np.ndarray] = []
            self._spacings: list[float] = []
            self._owners: list[str] = []
            return
        source = mechanisms[0]._source
        if any(m._source is not source for m in mechanisms):
            raise InvalidParameterError("PredrawnNoise needs mechanisms that share one random source.")
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
        of ``dim`` coordinates.
        """
        owner = self._owners[step]
        arr = check_finite_array(value, "value", owner=owner).reshape(-1)
        noise = self._rows[step]
        if arr.shape != noise.shape:
            raise InvalidParameterError(
                f"The value released by {owner} must have {noise.shape[0]} coordinate(s); got {arr.shape[0]}.")
        g = self._spacings[step]
        return grid_to_float(round_to_grid(arr, g, "value", owner), noise, g)
