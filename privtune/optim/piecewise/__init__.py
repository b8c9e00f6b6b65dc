"""Seed 001: Han, Topcu & Pappas, "Differentially Private Convex Optimization with Piecewise Affine Objectives" (IEEE CDC 2014, arXiv:1403.6135): pure epsilon-DP minimisation of a max-affine function over a box with private offsets.
Exports the four mechanisms :func:`pwa_perturb_objective` (M_P), :func:`pwa_perturb_solution` (M_S), :func:`pwa_exponential` (M_E), :func:`pwa_subgradient`, the baselines, :func:`solve_pwa`, :func:`pwa_objective` and :class:`PiecewiseResult`; M_P, M_S and M_E in ``_mechanisms``, the subgradient method in ``_subgradient``, the baselines in ``_baselines``, the result they build in ``_result``, the LP and checks in ``_core``, the samplers in ``_sampling``.
"""  # noqa: E501

from privtune.optim.piecewise._core import PiecewiseResult, pwa_objective, pwa_reference_value, solve_pwa
from privtune.optim.piecewise._mechanisms import (
    pwa_box_centre,
    pwa_exponential,
    pwa_perturb_objective,
    pwa_perturb_solution,
    pwa_subgradient,
    pwa_uniform,
)

__all__ = [
    "PiecewiseResult",
    "pwa_objective",
    "pwa_reference_value",
    "solve_pwa",
    "pwa_perturb_objective",
    "pwa_perturb_solution",
    "pwa_exponential",
    "pwa_subgradient",
    "pwa_box_centre",
    "pwa_uniform",
]
