"""Journals: what lets a private search resume after a crash without re-spending budget.

A release method routes every charge and every release through a :class:`Journal`:

* **charges** -- ``journal.open_plan(accountant, plan)`` verifies that the
  charges already in the accountant's ledger for this search are exactly a
  prefix of the plan (same events, same phases, in order), checks the *rest*
  of the plan against the budget, and later ``journal.charge(...)`` skips the
  events that were already paid (a resumed study) and spends the others before
  the data access they pay for;
* **releases** -- ``journal.put(key, value)`` stores a released value (a noisy
  observation, the final release) durably; ``journal.get(key)`` returns it on
  resume, so the value is reused, never re-drawn.

Why this is safe. A charge is in the ledger before its access; a release is
stored after its noise is drawn. If the process dies in between, the noise that
was drawn never left the process, so drawing it again on resume reveals nothing
more than one release; and since the charge is replayed, not repeated, the
ledger never holds more than the plan. Raw scores are never journaled.

:class:`Journal` (the default) keeps nothing: a fresh search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privtune.accounting import Accountant, PrivacyEvent
from privtune.accounting.accountant import Reservation
from privtune.exceptions import LedgerError

__all__ = ["Journal"]


class Journal:
    """A journal of one search's charges and releases (in memory: nothing to resume).

    Subclasses backed by study storage override :meth:`get`, :meth:`put` and
    :meth:`paid_prefix`.
    """

    def __init__(self) -> None:
        self._replay: list[Any] = []
        self._reservation: Reservation | None = None
        self._store: dict[str, Any] = {}

    # -- storage hooks ---------------------------------------------------------------
    def paid_prefix(self, accountant: Accountant) -> list[Any]:
        """Ledger entries this search already charged (a resumed study); none for a fresh one."""
        return []

    def get(self, key: str) -> Any:
        """A stored release, or None."""
        return self._store.get(key)

    def put(self, key: str, value: Any) -> None:
        """Store a release (durably, for storage-backed journals) before it is used further."""
        self._store[key] = value

    # -- the protocol --------------------------------------------------------------------
    def open_plan(self, accountant: Accountant, plan: Sequence[tuple[PrivacyEvent, str]]) -> None:
        """Verify the already-paid prefix, then check (and reserve) the rest of the plan.

        Raises
        ------
        LedgerError
            If the ledger's charges for this search are not a prefix of the plan
            (the configuration changed since the study started).
        BudgetExceededError
            If the unpaid part of the plan does not fit the budget.
        """
        paid = self.paid_prefix(accountant)
        mismatch = any(e.event != ev or e.phase != ph for e, (ev, ph) in zip(paid, plan, strict=False))
        if len(paid) > len(plan) or mismatch:
            raise LedgerError(
                "The study's ledger does not match this search's plan: its configuration (budget split, "
                "method, iterations or candidate set) changed since the study started. Nothing was spent; "
                "resume with the original configuration or start a new study.")
        self._replay = list(paid)
        rest = [ev for ev, _ in plan[len(paid):]]
        self._reservation = accountant.reserve(rest) if rest else None  # checks the unpaid rest as a whole

    def charge(self, accountant: Accountant, event: PrivacyEvent, phase: str, role: str) -> None:
        """Spend ``event`` before its data access, unless a resumed study already paid it."""
        if self._replay:
            entry = self._replay.pop(0)
            if entry.event != event or entry.phase != phase:  # pragma: no cover - open_plan checked the prefix
                raise LedgerError("The study's ledger does not match this search's charges.")
            return
        accountant.spend(event, phase=phase, role=role, reservation=self._reservation)

    @property
    def resumed(self) -> bool:
        """True if this search continues a study that had already charged something."""
        return bool(self._replay)
