"""Privacy accounting: budgets, immutable events, the accountant, ledgers, selection bounds.

The accountant composes through Google's ``dp_accounting`` (RDP and PLD) where it
can, and by basic composition for what it cannot (conditional events). Private
selection bounds (Liu & Talwar 2019; Papernot & Steinke 2022) are in
:mod:`privtune.accounting.selection`.
"""

from privtune.accounting.accountant import BUDGET_RTOL, Accountant, compose_events
from privtune.accounting.budget import Budget
from privtune.accounting.events import (
    ComposedEvent,
    EpsilonDeltaEvent,
    ExponentialEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RenyiEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    SparseVectorEvent,
    SubsampledEvent,
    ThresholdSelectionEvent,
    event_from_dict,
)
from privtune.accounting.ledger import DetachedLedger, InMemoryLedger, Ledger, LedgerEntry, SQLiteLedger

__all__ = [
    "Accountant",
    "BUDGET_RTOL",
    "Budget",
    "compose_events",
    "ComposedEvent",
    "EpsilonDeltaEvent",
    "ExponentialEvent",
    "GaussianEvent",
    "InMemoryLedger",
    "LaplaceEvent",
    "Ledger",
    "LedgerEntry",
    "PoissonSampledEvent",
    "PrivacyEvent",
    "RenyiEvent",
    "RepeatAndSelectEvent",
    "SampledWithoutReplacementEvent",
    "SubsampledEvent",
    "SelfComposedEvent",
    "SparseVectorEvent",
    "SQLiteLedger",
    "DetachedLedger",
    "ThresholdSelectionEvent",
    "event_from_dict",
]
