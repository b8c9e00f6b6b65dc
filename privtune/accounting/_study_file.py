"""The SQLite study file that holds the privacy ledger: its tables, hash chain and durable connection.

What :class:`~privtune.accounting.ledger.SQLiteLedger` (and the study storage,
:mod:`privtune.storage._sqlite`, which keeps its tables in the same file) needs
from the file itself, independent of any ledger object:

* the ledger's tables (``privtune_ledger`` and its head, ``privtune_ledger_head``)
  and the SHA-256 hash chain of the entries the head records (:func:`_chain`);
* :func:`durable_connection`: rollback-journal mode with ``synchronous=EXTRA``,
  so that a committed charge is in the main file when COMMIT returns;
* the checks before SQLite opens a file (:func:`_refuse_unusable_file`: an
  emptied file, or an older release's write-ahead-log file whose log is lost),
  the creation of a new file aside and linked into place (:func:`_create`),
  and the conversion of an older release's file (:func:`_convert_legacy_heads`);
* :func:`study_file_error`, the one error raised for a file SQLite cannot read
  or write, and :func:`table_names`.

Split out of :mod:`privtune.accounting.ledger` (issue 39), which re-exports
every name defined here.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import sqlite3
import stat
import uuid

from privtune.exceptions import LedgerError

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
