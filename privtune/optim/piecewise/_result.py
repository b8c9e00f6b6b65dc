"""What every piecewise-affine mechanism does with its output: the phase of its charge and its result object.

:data:`_PHASE` is the phase under which each mechanism's charge is recorded;
:func:`_result` packs an output point, the events charged for it and whether it
was seeded into a :class:`~privtune.optim.piecewise._core.PiecewiseResult`
(the totals of the events through :func:`~privtune.optim.piecewise._core.totals`).
Shared by the mechanisms (:mod:`privtune.optim.piecewise._mechanisms`), the DP
subgradient method (:mod:`privtune.optim.piecewise._subgradient`) and the
baselines (:mod:`privtune.optim.piecewise._baselines`); split out of
``_mechanisms`` (issue 39), which re-exports both names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privtune.optim.piecewise._core import PiecewiseResult, totals

_PHASE = "training"


def _result(x: np.ndarray, method: str, events: tuple, seeded: bool, history: dict[str, Any]) -> PiecewiseResult:
    eps, delta, guarantee = totals(events)
    return PiecewiseResult(x=np.asarray(x, dtype=np.float64), method=method, events=events, epsilon=eps,
                           delta=delta, guarantee=guarantee, seeded=seeded, history=history)

