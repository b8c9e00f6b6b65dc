"""Seed 004: Gao & Wright, "Differentially Private Optimization for Smooth Nonconvex ERM" (ICLR 2023 submission, arXiv:2302.04972, 2023): second-order stationary points under (epsilon, delta)-DP.
Exports :func:`dp_second_order` (OPT, OPT-LS, OPT-B and the two-phase 2OPT variants), :func:`second_order_privacy_event` and the results; the plan in ``_plan``, the steps in ``_steps``, the non-convex losses in ``_nonconvex``.
"""  # noqa: E501

from privtune.optim.second_order._nonconvex import LossConstants
from privtune.optim.second_order._plan import CALIBRATION_SLACK, VARIANTS
from privtune.optim.second_order._solver import (
    GAP_MARGIN,
    SecondOrderResult,
    dp_second_order,
    second_order_privacy_event,
)
from privtune.optim.second_order._steps import SecondOrderHistory, curvature_direction

__all__ = [
    "dp_second_order",
    "second_order_privacy_event",
    "SecondOrderResult",
    "SecondOrderHistory",
    "VARIANTS",
    "CALIBRATION_SLACK",
    "GAP_MARGIN",
    "LossConstants",
    "curvature_direction",
]
