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
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import sqlite3
import stat
import threading
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS privtune_ledger (
    study TEXT NOT NULL,
    idx INTEGER NOT NULL,
    event TEXT NOT NULL,
    phase TEXT NOT NULL,
    role TEXT,
    PRIMARY KEY (study, idx)
)
"""
# The head of each study's ledger: its length and a hash chain of its entries, written in the same transaction as
# every append. A ledger whose rows no longer reproduce its head was truncated or edited.
_HEAD_SCHEMA = """
CREATE TABLE IF NOT EXISTS privtune_ledger_head (
    study TEXT PRIMARY KEY,
    n INTEGER NOT NULL,
    digest TEXT NOT NULL
)
"""
_GENESIS = "privtune-ledger-v1"
_RESTORE = ("The file is damaged or was edited, and charges may have been lost, so resuming could spend the budget "
            "again; it is refused and nothing was spent. Restore the original file, or start a new study in a new "
            "file and count what this one already spent.")


def _chain(digest: str, idx: int, payload: str, phase: str, role: str | None) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([digest, idx, payload, phase, role]).encode())
    return h.hexdigest()


def study_file_error(path: str, action: str, exc: BaseException) -> LedgerError:
    """The :class:`~privtune.exceptions.LedgerError` for a study file SQLite could not read or write.

    Every read and write of a study file goes through ``try`` and raises this
    (never a bare :class:`sqlite3.Error`), naming the file and what to do. A row
    whose value no longer parses (``ValueError`` / ``TypeError`` from JSON) is
    damage too. Nothing is read from the data or spent after it.

    Parameters
    ----------
    path : str
        The study file.
    action : str
        What failed, completing "Cannot ..." (e.g. ``"read the ledger's head of study 's'"``).
    exc : BaseException
        The error SQLite (or the JSON decoder) raised.
    """
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        advice = "Another process is using the file: let it finish (or stop it), then try again."
    elif isinstance(exc, sqlite3.OperationalError):
        advice = ("Check that the file and its directory exist and can be read and written. If the file is damaged, "
                  "restore the original file (not an older copy, which would spend again what was spent after it), "
                  "or start a new study in a new file and count what this one already spent.")
    else:  # sqlite3.DatabaseError proper (a malformed page, not a database), or a value that does not parse
        advice = ("The file is damaged, so the study cannot be resumed from it: restore the original file (not an "
                  "older copy, which would spend again what was spent after it), or start a new study in a new "
                  "file and count what this one already spent (`sqlite3 FILE 'PRAGMA integrity_check'` lists the "
                  "damage).")
    return LedgerError(f"Cannot {action} in the study file {path!r}: {exc}. Nothing more is read or spent. {advice}")


_SQLITE_MAGIC = b"SQLite format 3\x00"


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the tables of an open SQLite connection's main database."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _tables_in_main_file(path: str) -> set[str]:
    """The tables of the main database file alone (``immutable``: no side file is read, created or changed)."""
    conn = sqlite3.connect(f"{pathlib.Path(path).resolve().as_uri()}?immutable=1", uri=True)
    try:
        return table_names(conn)
    finally:
        conn.close()


def _refuse_unusable_file(path: str) -> bool:
    """Refuse an emptied study file, or one of an older privtune whose write-ahead log is lost; True if it exists.

    Runs before SQLite opens the file (opening it converts a write-ahead-log
    file, and from then on nothing tells what it lost).

    * A file of 0 bytes: every study file privtune writes holds at least its
      first page (a new one is made aside and linked into place,
      :func:`_create`), so an empty one was emptied (or an older privtune was
      killed while creating it, before anything was spent), and SQLite would
      open it as a new, empty database -- a study that starts over and spends
      again.
    * A file in write-ahead-log mode (bytes 18 and 19 of its header are 2),
      which only privtune before 2026-11-24 wrote, without its ``-wal`` (or
      with an empty one, which holds nothing to replay): that
      release closed its files cleanly by checkpointing the log into the main
      file and deleting ``-wal`` and ``-shm``, and a killed run left both next
      to a main file holding only what was last checkpointed (often nothing:
      a small study never reached SQLite's 1000-page checkpoint). So a ``-shm``
      without its ``-wal`` means the log of an unclean stop is lost, and a main
      file without the ledger's table means everything (the tables included)
      was in the lost log. Both are refused. A file that has its ledger table
      and no side file is converted: it is what a clean close leaves, and it
      cannot be told apart from a log lost after a checkpoint.

    Raises
    ------
    LedgerError
        If the file is refused; nothing is read, written or spent.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:  # unreadable: SQLite's own error (with the path) is clearer
        return True
    if not stat.S_ISREG(st.st_mode):
        return True
    if st.st_size == 0:
        raise LedgerError(
            f"The study file {path!r} is empty (0 bytes): it was emptied (truncated, or overwritten by an empty "
            "file), or an older privtune was killed while creating it. Opening it would start a new study and spend "
            "the budget again, so it is refused; nothing was read, written or spent. Restore the original file; if "
            "no study ever ran in it, delete it; otherwise start a new study in a new file and count what the lost "
            "one spent.")
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError:
        return True
    if len(header) < 100 or header[:16] != _SQLITE_MAGIC or 2 not in (header[18], header[19]):
        return True  # not a database (SQLite says so), or in rollback-journal mode
    wal, shm = path + "-wal", path + "-shm"
    try:
        wal_size: int | None = os.path.getsize(wal)
    except OSError:
        wal_size = None
    if wal_size:
        return True  # SQLite replays the log on open; the switch to rollback-journal mode checkpoints it
    if wal_size is None and os.path.exists(shm):
        why = (f"its {os.path.basename(shm)} is there but its {os.path.basename(wal)} is not: the privtune that "
               "wrote it stopped without closing it, and the log it left, which held its latest writes, is gone")
    else:
        try:
            tables = _tables_in_main_file(path)
        except sqlite3.Error as exc:
            raise study_file_error(path, "read the tables of the main file", exc) from exc
        if "privtune_ledger" in tables:
            return True
        why = (f"its main file holds no ledger table, so everything it recorded was in its {os.path.basename(wal)}, "
               f"which is {'missing' if wal_size is None else 'empty'} (the file was copied, or its side files "
               "deleted or emptied, while a search had it open or after one was killed)")
    raise LedgerError(
        f"The study file {path!r} was written by an older privtune in write-ahead-log mode, and {why}. Opening it "
        "now would lose the charges that were recorded there, and resuming would spend them again, so it is "
        "refused; nothing was read, written or spent. Put the file's -wal (and -shm) back next to it, from the same "
        "moment as the file; if no study ever ran in it, delete it; otherwise start a new study in a new file and "
        "count what this one spent.")


def _create(path: str) -> None:
    """Create a new study file whose first page is written before it appears at ``path``.

    The file is made aside (same directory), given the ledger's tables, synced,
    and hard-linked into place, so that no process ever finds a 0-byte file at
    the path (which :func:`_refuse_unusable_file` refuses as damage) while
    another one is creating it. If another process linked its file first, that
    one is used. Where hard links are not supported, SQLite creates the file in
    place (a concurrent opener may then find it empty for an instant and be
    refused, spending nothing).
    """
    tmp = f"{path}.privtune-new-{uuid.uuid4().hex}"
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA synchronous=EXTRA")
            conn.execute(_SCHEMA)
            conn.execute(_HEAD_SCHEMA)
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            return
        except OSError:  # no hard links here: let SQLite create the file in place
            return
        try:  # the new directory entry is durable before any charge is written to the file
            fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        except OSError:  # pragma: no cover - a directory that cannot be opened (e.g. on Windows)
            return
        try:
            os.fsync(fd)
        except OSError:  # pragma: no cover
            pass
        finally:
            os.close(fd)
    finally:
        for leftover in (tmp, tmp + "-journal"):
            try:
                os.remove(leftover)
            except OSError:
                pass


def _convert_legacy_heads(conn: sqlite3.Connection) -> None:
    """Write the ledger heads of a file written before heads existed (the previous release), in one transaction.

    Such a file has a ``privtune_ledger`` table and no ``privtune_ledger_head``
    table (every file since has both). Each study's head is computed from the
    rows the file holds, so from here on a loss is detected as for any study;
    what the file lost before it was converted (it had no head to check against)
    cannot be.
    """
    names = table_names(conn)
    if "privtune_ledger" not in names or "privtune_ledger_head" in names:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if "privtune_ledger_head" not in table_names(conn):  # another process may have converted it in between
            conn.execute(_HEAD_SCHEMA)
            for (study,) in conn.execute("SELECT DISTINCT study FROM privtune_ledger").fetchall():
                digest = _GENESIS
                rows = conn.execute("SELECT idx, event, phase, role FROM privtune_ledger WHERE study = ? ORDER BY idx",
                                    (study,)).fetchall()
                for idx, event_json, phase, role in rows:
                    digest = _chain(digest, idx, event_json, phase, role)
                conn.execute("INSERT INTO privtune_ledger_head VALUES (?, ?, ?)", (study, len(rows), digest))
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise


def durable_connection(path: str) -> sqlite3.Connection:
    """A connection whose every committed transaction is in the main database file when COMMIT returns.

    Rollback-journal mode (``journal_mode=DELETE``) with ``synchronous=EXTRA``:
    a commit writes the pages to the database file itself and syncs it, so a
    copy of the ``.sqlite`` file alone, or the loss of any side file, keeps every
    committed charge. ``EXTRA`` (not ``FULL``) also syncs the directory after
    the rollback journal is deleted, which is what commits the transaction in
    this mode: with ``FULL`` a power loss right after COMMIT returned could
    leave the journal's directory entry on disk, and the next open would roll
    the last charge back (SQLite documents ``EXTRA`` as the durable setting for
    ``journal_mode=DELETE``).

    A new file is created with its first page written before it appears at
    ``path`` (:func:`_create`). An existing file is checked before SQLite opens
    it (:func:`_refuse_unusable_file`): an empty (0-byte) file is refused, as is
    a file of the previous release (write-ahead-log mode, used before
    2026-11-24, which could leave committed charges only in the ``-wal`` file
    after a crash) whose ``-wal`` is detectably lost. Any other file of that
    release is converted: SQLite replays its ``-wal`` if there is one, the
    switch to rollback-journal mode checkpoints it (that needs no other
    connection to hold the file open), and its ledgers get their heads
    (:func:`_convert_legacy_heads`).

    What cannot be detected: a deleted study file (a new one is created), a
    whole, consistent older copy restored in its place, or the ``-wal`` of an
    older privtune's file lost after that release had checkpointed the file's
    tables into it: each looks like a study that stopped earlier (or never
    started), and resuming it spends again what was spent after.

    Raises
    ------
    LedgerError
        If the file is refused (nothing is read, written or spent).
    sqlite3.Error
        If the file cannot be opened or switched to rollback-journal mode.
    """
    if not _refuse_unusable_file(path):
        _create(path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        if str(mode).lower() != "delete":
            raise sqlite3.OperationalError(
                f"could not switch {path!r} to rollback-journal mode (it is in {mode!r} mode and open elsewhere)")
        conn.execute("PRAGMA synchronous=EXTRA")
        if conn.execute("PRAGMA synchronous").fetchone()[0] != 3:  # 3 = EXTRA (SQLite >= 3.12)
            raise sqlite3.OperationalError(
                f"could not set synchronous=EXTRA on {path!r}: this SQLite ({sqlite3.sqlite_version}) cannot make "
                "a committed charge durable against a power loss")
        _convert_legacy_heads(conn)
    except BaseException:
        conn.close()
        raise
    return conn


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
