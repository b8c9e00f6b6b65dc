"""Privacy ledgers: the durable record of every charge, written *before* the data access.

A ledger is an append-only sequence of :class:`LedgerEntry` records. The
:class:`~privtune.accounting.Accountant` appends an entry only after the charge
has passed the budget check, and returns only after :meth:`Ledger.append` has
returned -- which for :class:`SQLiteLedger` means the row is committed to disk
(SQLite with ``synchronous=EXTRA``). A caller must therefore spend *first* and read
the data *second*; a crash between the two wastes budget but can never spend
more than was recorded (write-ahead accounting).

Two implementations:

* :class:`InMemoryLedger` -- for interactive use and tests;
* :class:`SQLiteLedger` -- one table in a SQLite file, shared with the study
  storage; reopening the file (same ``study``) restores every past charge, so
  that a resumed study starts from what was already spent.

The SQLite file itself -- the ledger's tables and hash chain, the durable
connection, the checks before a file is opened and the conversion of an older
release's file -- is :mod:`privtune.accounting._study_file` (re-exported here).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

# Re-exported (issue 39 moved the study file's tables, checks and connection to _study_file): every name keeps its
# import path.
from privtune.accounting._study_file import (  # noqa: F401
    _GENESIS,
    _HEAD_SCHEMA,
    _SCHEMA,
    _SQLITE_MAGIC,
    _chain,
    _convert_legacy_heads,
    _create,
    _refuse_unusable_file,
    _tables_in_main_file,
    durable_connection,
    study_file_error,
    table_names,
)
from privtune.accounting.events import PrivacyEvent, event_from_dict
from privtune.exceptions import InvalidParameterError, LedgerError

__all__ = ["LedgerEntry", "Ledger", "InMemoryLedger", "SQLiteLedger", "DetachedLedger"]


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded charge.

    Parameters
    ----------
    index : int
        Position in the ledger (0-based, contiguous).
    event : PrivacyEvent
        What was charged.
    phase : str
        Which phase of the computation paid for it (e.g. ``"observations"``,
        ``"selection"``, ``"score_release"``, ``"training"``).
    role : str or None
        Which sensitive data role it touches (``"validation"`` or ``"training"``),
        for parallel composition across disjoint roles; ``None`` when not split.
    """

    index: int
    event: PrivacyEvent
    phase: str = ""
    role: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"index": self.index, "event": self.event.to_dict(), "phase": self.phase,
                "role": self.role}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        """Inverse of :meth:`to_dict`."""
        return cls(index=int(data["index"]), event=event_from_dict(data["event"]),
                   phase=data.get("phase", ""), role=data.get("role"))


class Ledger(ABC):
    """Append-only record of charges.

    Subclasses must make :meth:`append` durable before returning, and must raise
    :class:`~privtune.exceptions.LedgerError` (recording nothing) if they cannot.
    :meth:`append` is a compare-and-swap: given ``expected_index``, it records
    the charge only if the ledger holds exactly that many entries at the moment
    of writing, atomically, and raises :class:`~privtune.exceptions.LedgerError`
    otherwise. The :class:`~privtune.accounting.Accountant` always passes the
    number of charges its budget check counted, so a charge checked against a
    stale view of the ledger (another accountant on the same ledger spent in
    between) is never recorded.
    """

    @abstractmethod
    def append(self, event: PrivacyEvent, *, phase: str = "", role: str | None = None,
               expected_index: int | None = None) -> LedgerEntry:
        """Record a charge durably and return its entry.

        Parameters
        ----------
        event : PrivacyEvent
        phase : str, default=""
        role : str or None, default=None
        expected_index : int or None, default=None
            The index the new entry must get (the number of entries the caller
            checked its budget against). ``None`` appends without that check.

        Raises
        ------
        LedgerError
            If the charge cannot be recorded durably, or the ledger does not
            hold exactly ``expected_index`` entries; nothing is recorded.
        """

    @abstractmethod
    def entries(self) -> tuple[LedgerEntry, ...]:
        """All entries, in order."""

    def __len__(self) -> int:
        return len(self.entries())

    def _refuse_stale(self, expected_index: int | None, n: int, where: str) -> None:
        """Raise :class:`LedgerError` unless ``expected_index`` is None or equals ``n`` (the compare of the CAS)."""
        if expected_index is not None and expected_index != n:
            raise LedgerError(
                f"The charge was checked against {expected_index} recorded charge(s) but {where} holds {n}: "
                "another accountant (or ledger object) on the same ledger has charged it in between. Nothing "
                "was spent; do not access the data. Charge the ledger through one Accountant (it re-reads the "
                "ledger before every check).")

    def __iter__(self):
        return iter(self.entries())

    def to_list(self) -> list[dict[str, Any]]:
        """JSON-safe list of entries (for reports)."""
        return [e.to_dict() for e in self.entries()]


class InMemoryLedger(Ledger):
    """A ledger kept in memory (lost when the process ends)."""

    def __init__(self) -> None:
        self._entries: list[LedgerEntry] = []
        self._lock = threading.Lock()

    def append(self, event: PrivacyEvent, *, phase: str = "", role: str | None = None,
               expected_index: int | None = None) -> LedgerEntry:
        if not isinstance(event, PrivacyEvent):
            raise InvalidParameterError(f"Only PrivacyEvent objects can be charged; got {type(event).__name__}.")
        with self._lock:
            self._refuse_stale(expected_index, len(self._entries), "the in-memory ledger")
            entry = LedgerEntry(index=len(self._entries), event=event, phase=phase, role=role)
            self._entries.append(entry)
        return entry

    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def detached(self) -> DetachedLedger:
        """A read-only snapshot of the charges recorded so far (see :class:`DetachedLedger`)."""
        return DetachedLedger(self._entries, source="an in-memory ledger (in another process or object)")

    def __getstate__(self) -> dict[str, Any]:
        return {"_entries": list(self._entries)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._entries = state["_entries"]
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryLedger(n_entries={len(self._entries)})"


_RESTORE = ("The file is damaged or was edited, and charges may have been lost, so resuming could spend the budget "
            "again; it is refused and nothing was spent. Restore the original file, or start a new study in a new "
            "file and count what this one already spent.")


class SQLiteLedger(Ledger):
    """A ledger stored in a SQLite file, durable on every append.

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file (created if missing). The study storage keeps its
        ledger in the same file.
    study : str, default="default"
        Name of the study whose charges this ledger holds; several studies can
        share one file.

    Notes
    -----
    Every :meth:`append` is one committed transaction in rollback-journal mode
    with ``PRAGMA synchronous=EXTRA`` (:func:`durable_connection`), so the entry
    is in the main database file -- surviving a crash, a ``SIGKILL``, and a copy
    of that file alone -- as soon as ``append`` returns. The same transaction
    updates the study's ledger head (length and a SHA-256 hash chain of the
    entries); opening a ledger whose rows do not reproduce its head (rows
    deleted or edited) raises :class:`~privtune.exceptions.LedgerError`. Entries are indexed by a primary key
    ``(study, idx)``: if another process appended to the same study in between,
    the insert fails and :class:`~privtune.exceptions.LedgerError` is raised
    instead of silently interleaving two searches' charges.

    Every read of the file is checked: damage on any page (the head's
    included), an entry that no longer parses, an emptied (0-byte) file, and a
    previous release's write-ahead-log file whose ``-wal`` is detectably lost
    raise :class:`~privtune.exceptions.LedgerError` naming the file, and nothing
    is spent; a previous release's file that is whole is converted on open
    (:func:`durable_connection`). A deleted file, or a whole older copy put in
    its place, cannot be detected: it reads as a ledger that stopped earlier.

    Raises
    ------
    LedgerError
        From the constructor, if the file cannot be opened or read, or fails a
        check above; from :meth:`append`, if the charge cannot be recorded.
    """

    def __init__(self, path: str | os.PathLike[str], *, study: str = "default") -> None:
        if not isinstance(study, str) or not study:
            raise InvalidParameterError(
                f"The 'study' parameter of SQLiteLedger must be a non-empty str. Got {study!r}.")
        self.path = os.fspath(path)
        self.study = study
        self._lock = threading.Lock()
        conn = None
        try:
            conn = durable_connection(self.path)
            conn.execute(_SCHEMA)
            conn.execute(_HEAD_SCHEMA)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise study_file_error(self.path, "open the privacy ledger", exc) from exc
        self._conn = conn
        try:
            self._entries = self._load()
        except BaseException:
            conn.close()
            raise

    def _load(self) -> list[LedgerEntry]:
        # Every read of the file is inside the try: damage on any page (the head's included) is a LedgerError.
        try:
            rows = self._conn.execute(
                "SELECT idx, event, phase, role FROM privtune_ledger WHERE study = ? ORDER BY idx",
                (self.study,),
            ).fetchall()
            head = self._conn.execute("SELECT n, digest FROM privtune_ledger_head WHERE study = ?",
                                      (self.study,)).fetchone()
        except sqlite3.Error as exc:
            raise study_file_error(self.path, f"read the privacy ledger of study {self.study!r}", exc) from exc
        entries = []
        digest = _GENESIS
        for expected, (idx, event_json, phase, role) in enumerate(rows):
            if idx != expected:
                raise LedgerError(f"Privacy ledger {self.path!r} (study {self.study!r}) is corrupt: "
                                  f"entry {expected} is missing. {_RESTORE}")
            try:
                digest = _chain(digest, idx, event_json, phase, role)
                event = event_from_dict(json.loads(event_json))
            except (ValueError, KeyError, TypeError) as exc:
                raise LedgerError(f"Privacy ledger {self.path!r} (study {self.study!r}) holds an unreadable event at "
                                  f"entry {idx}. {_RESTORE}") from exc
            entries.append(LedgerEntry(index=idx, event=event, phase=phase, role=role))
        if head is not None and (head[0] != len(entries) or head[1] != digest):
            raise LedgerError(
                f"Privacy ledger {self.path!r} (study {self.study!r}) does not match its recorded head: it holds "
                f"{len(entries)} charge(s) where {head[0]} were committed, or their contents changed. Charges may "
                "have been lost, so resuming could spend the budget again; it is refused. Restore the original "
                "file, or start a new study (and count what the lost charges spent).")
        if head is None and entries:  # every append writes the head in the same transaction: it was removed
            raise LedgerError(
                f"Privacy ledger {self.path!r} (study {self.study!r}) holds {len(entries)} charge(s) but no recorded "
                "head, which every charge writes with it: the file was damaged or edited, and charges may have "
                "been lost, so resuming could spend the budget again; it is refused. Restore the original file, or "
                "start a new study (and count what the lost charges spent).")
        self._digest = digest
        return entries

    def append(self, event: PrivacyEvent, *, phase: str = "", role: str | None = None,
               expected_index: int | None = None) -> LedgerEntry:
        if not isinstance(event, PrivacyEvent):
            raise InvalidParameterError(f"Only PrivacyEvent objects can be charged; got {type(event).__name__}.")
        with self._lock:
            self._refuse_stale(expected_index, len(self._entries), f"study {self.study!r} in {self.path!r}")
            entry = LedgerEntry(index=len(self._entries), event=event, phase=phase, role=role)
            payload = json.dumps(event.to_dict(), sort_keys=True)
            digest = _chain(self._digest, entry.index, payload, phase, role)
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                head = self._conn.execute("SELECT n FROM privtune_ledger_head WHERE study = ?",
                                          (self.study,)).fetchone()
                if (0 if head is None else head[0]) != entry.index:  # another object or process appended
                    self._conn.execute("ROLLBACK")
                    self._refuse_stale(entry.index, 0 if head is None else head[0],
                                       f"study {self.study!r} in {self.path!r} (on disk)")
                self._conn.execute(
                    "INSERT INTO privtune_ledger (study, idx, event, phase, role) VALUES (?, ?, ?, ?, ?)",
                    (self.study, entry.index, payload, phase, role),
                )
                self._conn.execute("INSERT OR REPLACE INTO privtune_ledger_head VALUES (?, ?, ?)",
                                   (self.study, entry.index + 1, digest))
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                try:
                    self._conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise LedgerError(
                    f"The charge could not be recorded in {self.path!r} (study {self.study!r}): {exc}. "
                    "Nothing was spent; do not access the data. If another process is writing to the "
                    "same study, stop it first; if SQLite reports damage (a malformed disk image), restore the "
                    "original file or start a new study in a new file and count what this one already spent."
                ) from exc
            self._entries.append(entry)
            self._digest = digest
        return entry

    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("SQLiteLedger holds an open database connection and cannot be pickled; "
                        "reopen it by path in the other process (an Accountant on it pickles as a read-only "
                        "snapshot, a DetachedLedger).")

    def detached(self) -> DetachedLedger:
        """A read-only snapshot of the charges recorded so far (see :class:`DetachedLedger`)."""
        return DetachedLedger(self._entries, source=f"study {self.study!r} in {str(self.path)!r}")

    def __repr__(self) -> str:
        return f"SQLiteLedger({self.path!r}, study={self.study!r}, n_entries={len(self._entries)})"


class DetachedLedger(Ledger):
    """A read-only snapshot of another ledger's charges: it reports, it never records.

    What an :class:`~privtune.accounting.Accountant` becomes when it is pickled
    (e.g. inside a fitted ``PrivateSearchCV``, or sent to a joblib worker
    process): the copy can say what was spent, but a charge through it would
    not count against the original budget (for a :class:`SQLiteLedger`, could
    not be made durable in the study), so :meth:`append` refuses it with
    :class:`~privtune.exceptions.LedgerError` and nothing is spent. To spend
    more, use the original accountant, or reopen the study by its path. (An
    accountant on an :class:`InMemoryLedger` used to unpickle as a copy that
    could spend the same budget a second time.)

    Parameters
    ----------
    entries : iterable of LedgerEntry
        The charges, in order.
    source : str, default="a ledger"
        Where they came from (named in the refusal).
    """

    def __init__(self, entries: Any, *, source: str = "a ledger") -> None:
        self._entries = tuple(entries)
        self.source = str(source)

    def append(self, event: PrivacyEvent, *, phase: str = "", role: str | None = None,
               expected_index: int | None = None) -> LedgerEntry:
        raise LedgerError(
            f"This ledger is a read-only snapshot of {self.source} (an accountant that was pickled away from "
            "its ledger, e.g. to another process): a charge here would not count against the original budget, "
            "so nothing is spent. Spend through the original accountant (a SQLite study can be reopened by its "
            "path).")

    def entries(self) -> tuple[LedgerEntry, ...]:
        return self._entries

    def __repr__(self) -> str:
        return f"DetachedLedger(n_entries={len(self._entries)}, source={self.source!r})"
