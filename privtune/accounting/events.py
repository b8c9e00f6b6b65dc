"""Immutable privacy events: *what happened*, separate from *how it is bounded*.

Every access to sensitive data is described by one event before it happens. An
event carries

* its parameters (a noise multiplier, an epsilon, a sampling rate, ...),
* ``relation``: the neighbouring relation its sensitivity refers to,
  ``"replace_one"`` (privtune's default, the relation of seeds 000-002 and 004)
  or ``"add_remove"`` (seed 003's subsampled trainers), and
* ``guarantee``: ``"unconditional"``, or ``"conditional"`` for releases whose
  guarantee holds only under an assumption (Kusner et al. Alg. 1/2 hold under the
  GP prior of their Assumption 1, with probability at least 1 - delta).

Events are frozen dataclasses with a JSON-safe :meth:`~PrivacyEvent.to_dict`
and :func:`event_from_dict`, so that a ledger can store them durably and a study
can be resumed. Noise parameters are *relative to the declared sensitivity*
(as in ``dp_accounting``): a Gaussian event's ``noise_multiplier`` is
sigma / L2-sensitivity.

The module is pure bookkeeping: it never touches data and never draws noise.

Where they are defined (issue 39 split this module by concept; every name is
re-exported here, and an event pickled under ``privtune.accounting.events``
still loads):

* :mod:`privtune.accounting._event_base` -- :class:`PrivacyEvent`, the
  relations and guarantees, the registry of event types and
  :func:`event_from_dict`;
* :mod:`privtune.accounting._mechanism_events` -- the events of one mechanism or
  one stated guarantee (Laplace, Gaussian, exponential, sparse vector,
  (epsilon, delta), Renyi);
* :mod:`privtune.accounting._composite_events` -- events built on other events
  (sampling, composition, private selection).
"""

from __future__ import annotations

# Re-exported, the private helpers included (the names this module defined before the split keep their path).
from privtune.accounting._composite_events import (  # noqa: F401
    ComposedEvent,
    PoissonSampledEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    SubsampledEvent,
    ThresholdSelectionEvent,
    _amplify_pure,
)
from privtune.accounting._event_base import (  # noqa: F401
    _REGISTRY,
    GUARANTEES,
    RELATIONS,
    PrivacyEvent,
    _check_choice,
    _check_event,
    _other_relations,
    event_from_dict,
)
from privtune.accounting._mechanism_events import (
    EpsilonDeltaEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    RenyiEvent,
    SparseVectorEvent,
)

__all__ = [
    "RELATIONS",
    "GUARANTEES",
    "PrivacyEvent",
    "LaplaceEvent",
    "GaussianEvent",
    "ExponentialEvent",
    "SparseVectorEvent",
    "EpsilonDeltaEvent",
    "PoissonSampledEvent",
    "SampledWithoutReplacementEvent",
    "SubsampledEvent",
    "ComposedEvent",
    "SelfComposedEvent",
    "RepeatAndSelectEvent",
    "ThresholdSelectionEvent",
    "RenyiEvent",
    "event_from_dict",
]
