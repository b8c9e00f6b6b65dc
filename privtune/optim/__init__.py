"""Differentially private optimisers: the inner training routines of privtune's trainers.

Each function returns a frozen :class:`DPOptimizeResult` holding the solution,
its history of public or privatised quantities, and the privacy events it
charged. Each paper's optimiser is a subpackage (:mod:`~privtune.optim.piecewise`,
:mod:`~privtune.optim.accelerated`, :mod:`~privtune.optim.line_search`,
:mod:`~privtune.optim.second_order`); the modules beside them are shared: the
margin losses (``_losses``), the softmax loss (``_softmax_loss``), row
storage and clipping (``_row_storage``), the gradients' sums over rows
(``_row_sums``), the exactly bounded sums (``_sums``) and the result type
(``_result``).

Seed 001 (Han, Topcu & Pappas 2014, pure epsilon-DP minimisation of a
max-affine function over a box): :func:`pwa_perturb_objective`,
:func:`pwa_perturb_solution`, :func:`pwa_exponential`, :func:`pwa_subgradient`,
the baselines :func:`pwa_box_centre` and :func:`pwa_uniform`, and
:func:`solve_pwa`, :func:`pwa_objective`, :class:`PiecewiseResult`.

Seed 002 (Kuru et al. 2022, pure epsilon-DP, Laplace noise, replace-one):
:func:`dp_accelerated` and its fixed-solver forms :func:`dp_gradient_descent`,
:func:`dp_heavy_ball`, :func:`dp_nesterov`, :func:`dp_nesterov_opt`,
:func:`dp_masg`, :func:`dp_masg_opt`.

Seed 003 (Chen & Lee 2022, private backtracking line search): :func:`dp_blsgd`
(DP-BLSGD / DP-BLGD, budget adaptation behind a Rényi filter, adaptive clipping,
the fixed-budget neural-network mode), :func:`noisy_backtracking_line_search`
(NOISYBTLS), :func:`blsgd_privacy_event`, :class:`MarginObjective`.

Seed 004 (Gao & Wright 2023, second-order stationary points of non-convex ERM):
:func:`dp_second_order` (OPT, OPT-LS, OPT-B and the two-phase 2OPT variants) and
:func:`second_order_privacy_event`.
"""

import importlib
import sys

from privtune.optim._result import DPOptimizeResult
from privtune.optim.accelerated import (
    dp_accelerated,
    dp_gradient_descent,
    dp_heavy_ball,
    dp_masg,
    dp_masg_opt,
    dp_nesterov,
    dp_nesterov_opt,
)
from privtune.optim.line_search import (
    LineSearchResult,
    MarginObjective,
    blsgd_privacy_event,
    dp_blsgd,
    noisy_backtracking_line_search,
)
from privtune.optim.piecewise import (
    PiecewiseResult,
    pwa_box_centre,
    pwa_exponential,
    pwa_objective,
    pwa_perturb_objective,
    pwa_perturb_solution,
    pwa_subgradient,
    pwa_uniform,
    solve_pwa,
)
from privtune.optim.second_order import SecondOrderResult, dp_second_order, second_order_privacy_event

__all__ = [
    "DPOptimizeResult",
    "dp_accelerated",
    "dp_gradient_descent",
    "dp_heavy_ball",
    "dp_nesterov",
    "dp_nesterov_opt",
    "dp_masg",
    "dp_masg_opt",
    "PiecewiseResult",
    "pwa_box_centre",
    "pwa_exponential",
    "pwa_objective",
    "pwa_perturb_objective",
    "pwa_perturb_solution",
    "pwa_subgradient",
    "pwa_uniform",
    "solve_pwa",
    "LineSearchResult",
    "MarginObjective",
    "blsgd_privacy_event",
    "dp_blsgd",
    "noisy_backtracking_line_search",
    "SecondOrderResult",
    "dp_second_order",
    "second_order_privacy_event",
]

#: Module paths of the layout before issue 39 (one flat ``optim/``), each mapped to the module that now holds
#: its code. Pickles name a class by its module path, so objects pickled under an old path must still load, and
#: code importing an old path gets the very module object now in use (monkeypatching through it keeps working).
_MOVED_MODULES = {
    "_accelerated_plan": "accelerated._plan",
    "_schedules": "accelerated._schedules",
    "_line_search_accounting": "line_search._accounting",
    "_line_search_loop": "line_search._loop",
    "_line_search_objective": "line_search._objective",
    "_line_search_step": "line_search._step",
    "_second_order_plan": "second_order._plan",
    "_second_order_steps": "second_order._steps",
    "_nonconvex": "second_order._nonconvex",
    "piecewise_core": "piecewise._core",
    "piecewise_sampling": "piecewise._sampling",
}


def _alias_moved_modules() -> None:
    """Register each old module path in :data:`sys.modules` as an alias of its new module.

    Every new module is already imported by this package (the imports above), so the aliases cost nothing and
    ``import privtune.optim._schedules``, ``from privtune.optim._schedules import ...`` and unpickling a class
    recorded under ``privtune.optim._schedules`` all resolve to ``privtune.optim.accelerated._schedules``.
    """
    for old, new in _MOVED_MODULES.items():
        sys.modules.setdefault(f"{__name__}.{old}", importlib.import_module(f"{__name__}.{new}"))


_alias_moved_modules()
