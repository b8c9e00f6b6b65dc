"""Data-independent baselines of seed 001 (0-DP): the centre of the box and a uniform random point of it.

Any private mechanism of :mod:`privtune.optim.piecewise._mechanisms` should
beat them. Split out of ``_mechanisms`` (issue 39), which re-exports both.
"""

from __future__ import annotations

from typing import Any

from privtune.optim.piecewise._core import PiecewiseResult, check_box
from privtune.optim.piecewise._result import _result
from privtune.utils import check_integer, check_random_state


def pwa_box_centre(bounds: Any, n_features: int) -> PiecewiseResult:
    """Data-independent baseline: the centre of the box (0-DP; spec §4 baseline (i)).

    Parameters
    ----------
    bounds : pair (lo, hi)
        The box.
    n_features : int in [1, inf)
        ``d``.

    Returns
    -------
    PiecewiseResult
        With no events.

    Notes
    -----
    **Privacy.** Reads nothing private: exactly 0-DP. Any private mechanism
    should beat it; the spec's prototype found it often does not at epsilon = 0.1.
    """
    d = check_integer(n_features, "n_features", low=1, owner="pwa_box_centre")
    lo, hi = check_box(bounds, d, "pwa_box_centre")
    return _result(0.5 * (lo + hi), "centre", (), False, {})


def pwa_uniform(bounds: Any, n_features: int, *, random_state: Any = None) -> PiecewiseResult:
    """Data-independent baseline: a uniform random point of the box (0-DP; spec §4 baseline (ii)).

    Parameters
    ----------
    bounds : pair (lo, hi)
    n_features : int in [1, inf)
    random_state : None, int, Generator or RandomSource, default=None

    Returns
    -------
    PiecewiseResult

    Notes
    -----
    **Privacy.** Reads nothing private: exactly 0-DP.
    """
    d = check_integer(n_features, "n_features", low=1, owner="pwa_uniform")
    lo, hi = check_box(bounds, d, "pwa_uniform")
    source = check_random_state(random_state)
    x = lo + source.uniform53(d) * (hi - lo)
    return _result(x, "uniform", (), source.seeded, {})
