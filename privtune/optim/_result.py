"""The frozen result object returned by every private optimiser in :mod:`privtune.optim`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privtune.accounting.events import PrivacyEvent

__all__ = ["DPOptimizeResult"]


def _readonly(a: Any, dtype: Any = np.float64) -> np.ndarray:
    """A read-only copy of ``a`` (the results' arrays cannot be modified in place)."""
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class DPOptimizeResult:
    """Output of a differentially private optimiser (shaped like ``scipy.optimize.OptimizeResult``).

    Everything stored here is either public (step sizes, noise scales, budget
    split, the declared constants) or a privatised release (iterates and noisy
    gradients). No quantity computed on the data without noise (objective
    values, exact gradients) is stored, so the whole object may be published.

    Attributes
    ----------
    x : ndarray of shape (n_features,)
        The output, chosen from the released iterates by a public rule
        (``output="last"`` or ``"tail_average"``), i.e. post-processing.
    solver : str
        Name of the algorithm (``"gd"``, ``"hb"``, ``"nag"``, ``"nag-opt"``,
        ``"masg"``, ``"masg-opt"``).
    n_iter : int
        Number of noisy-gradient queries actually run (``T*`` for the opt
        variants, otherwise the requested horizon).
    horizon : int
        The requested horizon ``T`` (the cap for the opt variants).
    iterates : ndarray of shape (n_iter + 1, n_features)
        ``x_0, x_1, ..., x_T`` (``x_0`` is public).
    query_points : ndarray of shape (n_iter, n_features)
        The points at which the gradients were queried (``x_t`` for GD/HB,
        ``z_t`` for NAG/MASG).
    noisy_gradients : ndarray of shape (n_iter, n_features)
        The released noisy (mini-batch) gradients, including the regulariser.
    step_sizes, momentums : ndarray of shape (n_iter,)
        Step size and momentum used at each step (momentum 0 at a MASG restart).
    step_epsilons : ndarray of shape (n_iter,)
        Laplace: privacy cost of each step *after* amplification by
        subsampling; they sum to ``epsilon``. Gaussian: each step's share of
        ``epsilon`` in proportion to its zCDP ``rho_t`` (they sum to
        ``epsilon`` but are not per-step guarantees).
    noise_scales : ndarray of shape (n_iter,)
        Laplace scale ``b_t`` of each step (per coordinate; variance ``2 b_t**2``),
        or the Gaussian standard deviation ``sigma_t`` with ``noise="gaussian"``.
    events : tuple of PrivacyEvent
        One event per step, in order.
    privacy_event : PrivacyEvent
        The composition of ``events`` (what was charged to the accountant).
    epsilon : float
        Total privacy cost: pure (``delta = 0``) by basic composition for
        Laplace; the exact composition at ``delta`` for Gaussian.
    sensitivity : float
        Per-example L1 sensitivity ``S_1`` (Laplace) or L2 sensitivity
        ``S_2`` (Gaussian) of the gradient of the data term.
    batch_size : int
    n_samples : int
    smoothness, strong_convexity : float
        The public constants ``L`` and ``mu`` the schedule was built from.
    seeded : bool
        True when the noise came from a seeded generator (not for release).
    extra : dict
        Public diagnostics (declared constants, the ``horizon_rule``; for Gaussian also the
        per-step ``noise_multipliers`` and ``precision_shares``).
    noise : {"laplace", "gaussian"}
        The noise kind (``"gaussian"`` is privtune's extension).
    delta : float
        The delta of the guarantee (0 for Laplace).
    """

    x: np.ndarray
    solver: str
    n_iter: int
    horizon: int
    iterates: np.ndarray
    query_points: np.ndarray
    noisy_gradients: np.ndarray
    step_sizes: np.ndarray
    momentums: np.ndarray
    step_epsilons: np.ndarray
    noise_scales: np.ndarray
    events: tuple[PrivacyEvent, ...]
    privacy_event: PrivacyEvent
    epsilon: float
    sensitivity: float
    batch_size: int
    n_samples: int
    smoothness: float
    strong_convexity: float
    seeded: bool
    extra: dict = field(default_factory=dict)
    noise: str = "laplace"
    delta: float = 0.0

    def __post_init__(self) -> None:
        for name in ("x", "iterates", "query_points", "noisy_gradients", "step_sizes", "momentums",
                     "step_epsilons", "noise_scales"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "events", tuple(self.events))

    def __repr__(self) -> str:
        return (f"DPOptimizeResult(solver={self.solver!r}, n_iter={self.n_iter}, horizon={self.horizon}, "
                f"epsilon={self.epsilon!r}, batch_size={self.batch_size}, n_samples={self.n_samples}, "
                f"seeded={self.seeded})")
