r"""Accounting of DP-BLSGD (seed 003, Chen & Lee): events, RDP costs, filters, calibration (internal).

Everything here is a function of public quantities only (``n``, the batch
scheme, the budgets, the hyperparameters); nothing here touches data. The
trainer itself is :mod:`privtune.optim.line_search`, whose module docstring
states the privacy argument in full; this module holds the pieces:

* :class:`Scheme` -- the batch scheme (full batch, fixed-size batches drawn
  without replacement, Poisson batches), its public divisor, its neighbouring
  relation and the sensitivities that follow;
* the mechanism events (:func:`gradient_event`, :func:`search_event`) and their
  RDP curves (:func:`event_rdp`): dp-accounting's RDP accountant (through
  :func:`privtune.accounting.accountant._rdp_curve`) for the (sampled) Gaussian
  gradients, the Bun & Steinke bound (:func:`privtune.accounting.rdp_math.pure_dp_rdp`)
  of the amplified pure epsilon for the Laplace line search, and the stated
  curve of a :class:`~privtune.accounting.events.RenyiEvent` for the Gaussian
  line search;
* the two **filters** fixed in advance that make adaptive budgets sound
  (spec P5): :class:`ZcdpFilter` (full batch, Laplace line search) and
  :class:`RenyiFilter` (one order ``a*``);
* the calibration of the initial budgets (adaptive mode) and of the fixed
  per-iteration budget (fixed mode);
* :class:`GaussianSparseVector`, the Gaussian NOISYBTLS noise on an exact grid,
  whose RDP is proven in :mod:`privtune.optim.line_search._gaussian_search`.

Where they are (issue 39 split this module by concept; every name it defined
is re-exported here, and an object pickled under
``privtune.optim.line_search._accounting`` still loads):

* :mod:`privtune.optim.line_search._costs` -- the batch scheme, the mechanism
  events and their RDP curves, :data:`STATED_ORDERS`;
* :mod:`privtune.optim.line_search._filters` -- the caps and the two filters;
* :mod:`privtune.optim.line_search._calibration` -- the calibration of the
  adaptive and the fixed modes;
* :mod:`privtune.optim.line_search._gaussian_search` -- the Gaussian NOISYBTLS:
  its curve and its noise.

Gaussian line search (why only full batch, and which curve)
-----------------------------------------------------------
The paper's Thm 3 curve for the Gaussian NOISYBTLS is not proven (its proof
never sums over the outputs, spec P1). privtune charges the sound bound of Zhu &
Wang (2020), ``a rho + log(K) / (a - 1)`` for ``K = max_backtracks + 1``
outputs, and offers the Gaussian line search with ``sampling="full"`` only: the
``log K`` term destroys the amplification by subsampling. The proof is in
:mod:`privtune.optim.line_search._gaussian_search`.

References
----------
.. [ZW20] Y. Zhu and Y.-X. Wang, "Improving Sparse Vector Technique with Renyi
   Differential Privacy", NeurIPS 2020.
.. [FZ21] V. Feldman and T. Zrnic, "Individual Privacy Accounting via a Renyi
   Filter", NeurIPS 2021.
.. [BBG18] B. Balle, G. Barthe and M. Gaboardi, "Privacy Amplification by
   Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018.
.. [WBK19] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Renyi
   Differential Privacy and Analytical Moments Accountant", AISTATS 2019.
"""

from __future__ import annotations

# The privacy events its functions build, importable from here as before the split (tests reach them as ``acc.X``).
from privtune.accounting.events import (  # noqa: F401
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RenyiEvent,
    SampledWithoutReplacementEvent,
    SparseVectorEvent,
)

# Re-exported, the private helpers included (the names this module defined before the split keep their path).
from privtune.optim.line_search._calibration import (  # noqa: F401
    _E_HIGH,
    _E_LOW,
    AdaptivePlan,
    FixedPlan,
    _iteration_cost,
    _largest_e,
    _planned_iterations_fit,
    _search_budget,
    calibrate_adaptive,
    calibrate_fixed,
)
from privtune.optim.line_search._costs import (  # noqa: F401
    _TARGETS,
    MAX_WOR_ORDER,
    SAMPLINGS,
    STATED_ORDERS,
    Scheme,
    _event_rdp_cached,
    _inner,
    event_rdp,
    gradient_event,
    noise_multiplier,
    search_event,
)
from privtune.optim.line_search._filters import RenyiFilter, ZcdpFilter, _conversion, renyi_cap, zcdp_cap  # noqa: F401
from privtune.optim.line_search._gaussian_search import GaussianSparseVector, gaussian_search_curve  # noqa: F401

__all__ = [
    "STATED_ORDERS",
    "SAMPLINGS",
    "Scheme",
    "gradient_event",
    "search_event",
    "event_rdp",
    "renyi_cap",
    "zcdp_cap",
    "ZcdpFilter",
    "RenyiFilter",
    "calibrate_adaptive",
    "calibrate_fixed",
    "GaussianSparseVector",
]
