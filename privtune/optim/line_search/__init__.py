"""Seed 003: Chen & Lee, "Stochastic Adaptive Line Search for Differentially Private Optimization" (University of Georgia preprint, 2022): DP-SGD with a private backtracking (Armijo) line search.
Exports :func:`dp_blsgd` (DP-BLSGD / DP-BLGD), :func:`noisy_backtracking_line_search` (NOISYBTLS), :func:`blsgd_privacy_event`, the objectives (:class:`PerExampleObjective`, :class:`MarginObjective`) and results; the loop in ``_loop``, the accounting in ``_accounting`` (which re-exports the batch scheme, events and RDP costs of ``_costs``, the caps and filters of ``_filters``, the calibration of ``_calibration`` and the Gaussian NOISYBTLS of ``_gaussian_search``).
"""  # noqa: E501

from privtune.optim.line_search._blsgd import ETA0_FACTOR, LineSearchResult, blsgd_privacy_event, dp_blsgd
from privtune.optim.line_search._objective import MarginObjective, PerExampleObjective
from privtune.optim.line_search._step import LineSearchOutcome, noisy_backtracking_line_search

__all__ = [
    "PerExampleObjective",
    "MarginObjective",
    "LineSearchOutcome",
    "LineSearchResult",
    "noisy_backtracking_line_search",
    "dp_blsgd",
    "blsgd_privacy_event",
    "ETA0_FACTOR",
]
