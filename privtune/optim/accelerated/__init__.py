"""Seed 002: Kuru, Birbil, Gürbüzbalaban & Yıldırım, "Differentially Private Accelerated Optimization Algorithms", SIAM J. Optim. 32(2), 2022: pure epsilon-DP gradient methods with Laplace noise (plus privtune's Gaussian variant).
Exports :func:`dp_accelerated`, its fixed-solver forms (DP-GD, heavy ball, Nesterov, MASG, the ``*-opt`` splits) and :func:`gaussian_run_multiplier`; algorithms and deviations in ``_solvers``, the plan in ``_plan``, the paper's schedules in ``_schedules``.
"""  # noqa: E501

from privtune.optim.accelerated._plan import gaussian_run_multiplier
from privtune.optim.accelerated._solvers import (
    dp_accelerated,
    dp_gradient_descent,
    dp_heavy_ball,
    dp_masg,
    dp_masg_opt,
    dp_nesterov,
    dp_nesterov_opt,
)

__all__ = [
    "dp_accelerated",
    "dp_gradient_descent",
    "dp_heavy_ball",
    "dp_nesterov",
    "dp_nesterov_opt",
    "dp_masg",
    "dp_masg_opt",
    "gaussian_run_multiplier",
]
