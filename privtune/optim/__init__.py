"""Differentially private optimisers: the inner training routines of privtune's trainers.

Each function returns a frozen :class:`DPOptimizeResult` holding the solution,
its history of public or privatised quantities, and the privacy events it
charged.

Seed 002 (Kuru et al. 2022, pure epsilon-DP, Laplace noise, replace-one):
:func:`dp_accelerated` and its fixed-solver forms :func:`dp_gradient_descent`,
:func:`dp_heavy_ball`, :func:`dp_nesterov`, :func:`dp_nesterov_opt`,
:func:`dp_masg`, :func:`dp_masg_opt`.
"""

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
]
