"""SQLite study storage: configuration, journaled releases, the privacy ledger and the report, in one file.

A *study* is one private search with a name. Its rows live in a SQLite file
(standard library ``sqlite3``), next to its privacy ledger
(:class:`~privtune.accounting.SQLiteLedger`, same file):

* ``privtune_studies`` -- the public configuration and its fingerprint, the
  status (``running`` / ``complete``) and the time the study was created;
  ``updated`` equals ``created`` (kept for the schema): privtune stores no
  time of a later write, since how long the work on sensitive rows took can
  depend on them (the file system's own modification time of the file is
  outside privtune's control);
* ``privtune_journal`` -- released values by key (noisy observations, the final
  release), written durably before they are used further;
* ``privtune_reports`` -- the tuning report (JSON);
* ``privtune_locks`` -- the single writer of each study.

Resuming. Opening an existing study with the same configuration continues it:
its ledger is replayed into the accountant (past charges count against the
budget), charges the search had already made are recognised and not made again,
and released observations are reused. A completed study returns its release
without evaluating or spending anything. A different configuration is refused.
A study whose training rows are sensitive also holds the training role's ledger
(:meth:`Study.training_ledger`) and is never resumed: ``PrivateSearchCV``
refuses such a study once it holds a charge, since its DP fits would run again
with new noise on the training rows.

Concurrency. One writer per study: a second process (or a second handle in the
same process) opening a study for writing gets :class:`StudyLockedError`. A lock
left by a process that died (``SIGKILL``) on this host is detected (its pid is
gone) and taken over.

Durability. Every write is a committed transaction in rollback-journal mode with
``synchronous=EXTRA`` (the journal's deletion, which commits, is synced too):
when a charge returns it is in the main ``.sqlite`` file, so a crash, a power
loss, a copy of that file alone, or a lost ``-journal`` cannot lose it. A new
file is made aside with its first page written and linked into place, so a
study file is never empty.

Damage. Every read and write of the file is checked: a page SQLite cannot read
(a malformed disk image), a value that no longer parses, or a file another
process holds raises :class:`~privtune.exceptions.LedgerError` naming the file
and what to do (the command line exits with status 2), and nothing more is read
or spent. A study file of 0 bytes is refused as damage: privtune never leaves
one empty, and opening it would start a new study that spends again.

Files of the previous release. privtune before 2026-11-24 wrote study files in
write-ahead-log mode, where a killed run leaves its latest writes -- often all
of them -- in the ``-wal`` side file, and had no heads. Such a file is
converted on open: SQLite replays its ``-wal``, the switch to rollback-journal
mode checkpoints it into the main file, and the heads below are written from
what the file holds (``updated`` is set to ``created``). One whose ``-wal`` is
detectably lost is refused (nothing written): a ``-shm`` without its ``-wal``
(an unclean stop), or a main file without the ledger's table (everything was in
the log). Converting needs no other process to hold the file open. What such a
file lost before its conversion (it had no heads to check) cannot be detected.

Consistency is checked when a study is opened for writing, before anything is
spent, and a study that fails a check is refused with
:class:`~privtune.exceptions.LedgerError` instead of resumed:

* the ledger's rows must reproduce its head (length and hash chain, written with
  every charge): rows deleted or edited are detected;
* the journal must hold as many keys as it has written, and never have seen more
  charges than the ledger now holds: a ledger rolled back behind its releases is
  detected;
* a completed study must have charges.

A ledger or journal whose head row is missing while it holds entries is refused
too (the head is written in the same transaction as every entry).

What cannot be detected: a **deleted** study file (the next run creates a new
one and spends the budget again), and a *whole, consistent* **older copy** of
the file (a backup restored after more was spent), which is indistinguishable
from a study that simply stopped there, so resuming it spends again what was
spent after the copy. Likewise a previous release's file whose ``-wal`` was lost
after its tables had been checkpointed into the main file (a clean close leaves
the same file). Keep the study file where the search writes it, and do not
replace it. The checks catch damage and partial losses, not deliberate edits:
the hash chain has no key, so whoever can write the file can rewrite rows and
heads consistently (and journal values are not chained). Protect the file like
the budget it records.

Nothing private is stored: no raw score, no statistic of sensitive rows, and no
hash of the data (a hash of sensitive data would allow membership tests).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from typing import Any

from privtune.accounting.ledger import SQLiteLedger, durable_connection, study_file_error, table_names
from privtune.bo.journal import Journal
from privtune.exceptions import InvalidParameterError, LedgerError, PrivtuneError

__all__ = ["StudyStorage", "Study", "StudyJournal", "StudyLockedError", "TRAINING_LEDGER_SUFFIX"]

#: A study whose training rows are sensitive keeps the training role's charges in a ledger of its own (each role's
#: accountant checks its own budget -- composed in parallel for disjoint roles, split with ``cv`` -- and an
#: accountant composes every entry of its ledger), in the same file, under the study's name with this suffix.
TRAINING_LEDGER_SUFFIX = "::training"

# How many journal keys each study has written, and the ledger length when each was written: a study whose journal
# lost rows, or whose ledger holds fewer charges than its journal had seen, is refused on open.
_JOURNAL_HEAD_SCHEMA = """CREATE TABLE IF NOT EXISTS privtune_journal_head (
        study TEXT PRIMARY KEY, n_keys INTEGER NOT NULL, max_ledger_n INTEGER NOT NULL)"""
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS privtune_studies (
        name TEXT PRIMARY KEY, config TEXT NOT NULL, fingerprint TEXT NOT NULL, status TEXT NOT NULL,
        created REAL NOT NULL, updated REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS privtune_journal (
        study TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (study, key))""",
    _JOURNAL_HEAD_SCHEMA,
    """CREATE TABLE IF NOT EXISTS privtune_reports (study TEXT PRIMARY KEY, report TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS privtune_locks (
        study TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, token TEXT NOT NULL,
        acquired REAL NOT NULL)""",
]


class StudyLockedError(PrivtuneError, RuntimeError):
    """The study is open for writing elsewhere (another process or handle)."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - exists, owned by someone else
        return True
    return True


def _path_from(storage: Any) -> str:
    if isinstance(storage, os.PathLike):
        return os.fspath(storage)
    if isinstance(storage, str):
        if storage.startswith("sqlite:///"):
            return storage[len("sqlite:///"):]
        if "://" in storage:
            raise InvalidParameterError(
                f"The 'storage' parameter must be a SQLite file path or a 'sqlite:///path' URL. Got {storage!r}.")
        return storage
    raise InvalidParameterError(
        f"The 'storage' parameter must be a file path, a 'sqlite:///path' URL or a StudyStorage. Got {storage!r}.")


def _convert_legacy_journal(conn: sqlite3.Connection) -> None:
    """Give a file of the previous release its journal heads, in one transaction (after its ledger heads).

    That release (write-ahead-log mode, before 2026-11-24) had no
    ``privtune_journal_head`` table: each study's head is written from what the
    file holds (its journal's key count, its ledger's length), so from here on a
    lost journal row is detected as for any study. That release also updated
    ``privtune_studies.updated`` at every write; it is set to ``created``, as
    privtune now stores it (the time of the last write is a timing of the work
    on sensitive rows).
    """
    names = table_names(conn)
    if "privtune_journal" not in names or "privtune_journal_head" in names:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        names = table_names(conn)  # another process may have converted it in between
        if "privtune_journal_head" not in names:
            conn.execute(_JOURNAL_HEAD_SCHEMA)
            for study, n_keys in conn.execute(
                    "SELECT study, COUNT(*) FROM privtune_journal GROUP BY study").fetchall():
                n_ledger = (conn.execute("SELECT COUNT(*) FROM privtune_ledger WHERE study = ?",
                                         (study,)).fetchone()[0] if "privtune_ledger" in names else 0)
                conn.execute("INSERT INTO privtune_journal_head VALUES (?, ?, ?)", (study, n_keys, n_ledger))
            if "privtune_studies" in names:
                conn.execute("UPDATE privtune_studies SET updated = created")
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise


class StudyStorage:
    """A SQLite file holding studies.

    Parameters
    ----------
    storage : str or os.PathLike
        A file path or a ``"sqlite:///path"`` URL. The file is created if missing.
    """

    def __init__(self, storage: Any) -> None:
        self.path = _path_from(storage)
        self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = None
        try:
            conn = durable_connection(self.path)  # refuses an emptied file, converts a previous release's
            _convert_legacy_journal(conn)
            for stmt in _SCHEMA:
                conn.execute(stmt)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise study_file_error(self.path, "open the study storage", exc) from exc
        return conn

    def _read(self, sql: str, args: tuple[Any, ...], what: str) -> list[Any]:
        """Rows of ``sql``; damage (or a busy file) is a :class:`~privtune.exceptions.LedgerError` naming the file."""
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise study_file_error(self.path, f"read {what}", exc) from exc

    def _json(self, text: Any, what: str) -> Any:
        """A stored JSON value; one that no longer parses is damage (SQLite cannot see inside a value)."""
        try:
            return json.loads(text)
        except (ValueError, TypeError) as exc:
            raise study_file_error(self.path, f"parse {what}", exc) from exc

    def study_names(self) -> list[str]:
        """Names of the studies in this file."""
        return [r[0] for r in self._read("SELECT name FROM privtune_studies ORDER BY created", (),
                                         "the names of its studies")]

    def load_config(self, name: str) -> dict[str, Any] | None:
        """The stored public configuration of a study, or None."""
        rows = self._read("SELECT config FROM privtune_studies WHERE name = ?", (name,),
                          f"the configuration of study {name!r}")
        return None if not rows else self._json(rows[0][0], f"the configuration of study {name!r}")

    def load_report(self, name: str) -> dict[str, Any] | None:
        """The stored report of a study, or None."""
        rows = self._read("SELECT report FROM privtune_reports WHERE study = ?", (name,),
                          f"the report of study {name!r}")
        return None if not rows else self._json(rows[0][0], f"the report of study {name!r}")

    def status(self, name: str) -> str | None:
        """The status of a study (``"running"`` or ``"complete"``), or None if the file does not hold it."""
        rows = self._read("SELECT status FROM privtune_studies WHERE name = ?", (name,),
                          f"the status of study {name!r}")
        return None if not rows else rows[0][0]

    def open(self, name: str, config: dict[str, Any]) -> Study:
        """Open (create or resume) a study for writing.

        Raises
        ------
        InvalidParameterError
            If the study exists with a different configuration (the differing keys are named).
        StudyLockedError
            If another live writer holds the study.
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameterError(f"The 'study_name' must be a non-empty str. Got {name!r}.")
        fingerprint = json.dumps(config, sort_keys=True, default=repr)
        conn = self._conn
        token = uuid.uuid4().hex
        now = time.time()
        try:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT pid, host, token FROM privtune_locks WHERE study = ?", (name,)).fetchone()
            if row is not None:
                pid, host, _ = row
                stale = host == socket.gethostname() and pid != os.getpid() and not _pid_alive(pid)
                if not stale:
                    conn.execute("ROLLBACK")
                    where = "this process" if pid == os.getpid() else f"process {pid} on {host}"
                    raise StudyLockedError(
                        f"Study {name!r} in {self.path!r} is already open for writing by {where}. Close it first "
                        "(or wait for it to finish); two writers would corrupt the study's ledger.")
                conn.execute("DELETE FROM privtune_locks WHERE study = ?", (name,))
            existing = conn.execute("SELECT fingerprint FROM privtune_studies WHERE name = ?", (name,)).fetchone()
            if existing is None:
                conn.execute("INSERT INTO privtune_studies VALUES (?, ?, ?, 'running', ?, ?)",
                             (name, fingerprint, fingerprint, now, now))
            elif existing[0] != fingerprint:
                conn.execute("ROLLBACK")
                old = self._json(existing[0], f"the stored configuration of study {name!r}")
                if not isinstance(old, dict):
                    raise study_file_error(self.path, f"parse the stored configuration of study {name!r}",
                                           ValueError("it is not a JSON object"))
                diff = sorted(k for k in set(old) | set(config)
                              if json.dumps(old.get(k), sort_keys=True, default=repr)
                              != json.dumps(config.get(k), sort_keys=True, default=repr))
                raise InvalidParameterError(
                    f"Study {name!r} exists in {self.path!r} with a different configuration (differs in: "
                    f"{', '.join(diff)}). Resume it with the original configuration, or use another study_name.")
            conn.execute("INSERT INTO privtune_locks VALUES (?, ?, ?, ?, ?)",
                         (name, os.getpid(), socket.gethostname(), token, now))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise study_file_error(self.path, f"open study {name!r}", exc) from exc
        return Study(self, name, token, config)

    def close(self) -> None:
        self._conn.close()

    def __repr__(self) -> str:
        return f"StudyStorage({self.path!r})"


class Study:
    """One study open for writing (holds the writer lock until :meth:`close`)."""

    def __init__(self, storage: StudyStorage, name: str, token: str, config: dict[str, Any]) -> None:
        self.storage, self.name, self.config = storage, name, config
        self._token = token
        self._conn = storage._conn
        self.closed = False
        self._training_ledger: SQLiteLedger | None = None
        try:
            self.ledger = SQLiteLedger(storage.path, study=name)  # checks the ledger against its head
            self._check_consistency()
        except Exception:
            self._release_lock()
            raise

    def training_ledger(self) -> SQLiteLedger:
        """The training role's ledger (same file, the study's name + :data:`TRAINING_LEDGER_SUFFIX`), opened once.

        Opening checks it against its head, as the study's own ledger.
        """
        if self._training_ledger is None:
            self._training_ledger = SQLiteLedger(self.storage.path, study=self.name + TRAINING_LEDGER_SUFFIX)
        return self._training_ledger

    def _check_consistency(self) -> None:
        """Refuse a study whose ledger or journal lost what was committed (see the module docstring)."""
        n_ledger = len(self.ledger.entries())
        read = self.storage._read
        n_keys = read("SELECT COUNT(*) FROM privtune_journal WHERE study = ?", (self.name,),
                      f"the journal of study {self.name!r}")[0][0]
        heads = read("SELECT n_keys, max_ledger_n FROM privtune_journal_head WHERE study = ?", (self.name,),
                     f"the journal's head of study {self.name!r}")
        head = heads[0] if heads else None
        problems = []
        if head is None and n_keys:  # every journal write updates the head in the same transaction
            problems.append(f"its journal holds {n_keys} released value(s) but no recorded head")
        if head is not None and n_keys != head[0]:
            problems.append(f"its journal holds {n_keys} released value(s) where {head[0]} were written")
        if head is not None and head[1] > n_ledger:
            problems.append(f"its journal was written after {head[1]} charge(s) but the ledger holds {n_ledger}")
        done = (self.storage.status(self.name) == "complete"
                or read("SELECT 1 FROM privtune_reports WHERE study = ?", (self.name,),
                        f"the report of study {self.name!r}"))
        if done and n_ledger == 0:
            problems.append("it is complete but its ledger holds no charge")
        if problems:
            raise LedgerError(
                f"Study {self.name!r} in {self.path_for_messages!r} is inconsistent: {'; '.join(problems)}. Charges "
                "or releases were lost (a partial copy, or a file edited by hand), so resuming could spend the "
                "budget again; it is refused and nothing was spent. Restore the original file, or start a new "
                "study and count what this one already spent.")

    @property
    def path_for_messages(self) -> str:
        return self.storage.path

    @property
    def status(self) -> str:
        return self.storage.status(self.name) or "running"

    def journal(self) -> StudyJournal:
        """The journal a release method resumes from."""
        return StudyJournal(self)

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        if self.closed:
            raise LedgerError(f"Study {self.name!r} is closed.")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            lock = self._conn.execute("SELECT token FROM privtune_locks WHERE study = ?", (self.name,)).fetchone()
            if lock is None or lock[0] != self._token:
                self._conn.execute("ROLLBACK")
                raise StudyLockedError(f"Study {self.name!r} lost its writer lock; stop and resume it.")
            self._conn.execute(sql, args)
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise study_file_error(self.storage.path, f"write to study {self.name!r}", exc) from exc

    def get(self, key: str) -> Any:
        """The released value stored under ``key``, or None.

        Raises
        ------
        LedgerError
            If the file cannot be read there, or the value no longer parses (damage).
        """
        what = f"the journal value {key!r} of study {self.name!r}"
        rows = self.storage._read("SELECT value FROM privtune_journal WHERE study = ? AND key = ?",
                                  (self.name, key), what)
        return None if not rows else self.storage._json(rows[0][0], what)

    def put(self, key: str, value: Any) -> None:
        """Store a released value; the journal head records the key count and the ledger length."""
        if self.closed:
            raise LedgerError(f"Study {self.name!r} is closed.")
        n_ledger = len(self.ledger.entries())
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            lock = self._conn.execute("SELECT token FROM privtune_locks WHERE study = ?", (self.name,)).fetchone()
            if lock is None or lock[0] != self._token:
                self._conn.execute("ROLLBACK")
                raise StudyLockedError(f"Study {self.name!r} lost its writer lock; stop and resume it.")
            new = self._conn.execute("SELECT 1 FROM privtune_journal WHERE study = ? AND key = ?",
                                     (self.name, key)).fetchone() is None
            self._conn.execute("INSERT OR REPLACE INTO privtune_journal VALUES (?, ?, ?)",
                               (self.name, key, json.dumps(value, sort_keys=True)))
            head = self._conn.execute("SELECT n_keys, max_ledger_n FROM privtune_journal_head WHERE study = ?",
                                      (self.name,)).fetchone() or (0, 0)
            self._conn.execute("INSERT OR REPLACE INTO privtune_journal_head VALUES (?, ?, ?)",
                               (self.name, head[0] + (1 if new else 0), max(head[1], n_ledger)))
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise study_file_error(self.storage.path, f"write to study {self.name!r}", exc) from exc

    def save_report(self, report: dict[str, Any]) -> None:
        """Store the tuning report (JSON) and mark the study complete."""
        self._write("INSERT OR REPLACE INTO privtune_reports VALUES (?, ?)",
                    (self.name, json.dumps(report, sort_keys=True, default=repr)))
        self._write("UPDATE privtune_studies SET status = 'complete' WHERE name = ?", (self.name,))

    def _release_lock(self) -> None:
        try:
            self._conn.execute("DELETE FROM privtune_locks WHERE study = ? AND token = ?", (self.name, self._token))
        except sqlite3.Error:  # pragma: no cover - best effort; a dead lock is taken over later
            pass

    def close(self) -> None:
        """Release the writer lock."""
        if self.closed:
            return
        self._release_lock()
        self.ledger.close()
        if self._training_ledger is not None:
            self._training_ledger.close()
        self.closed = True

    def __enter__(self) -> Study:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Study({self.name!r}, path={self.storage.path!r}, status={self.status!r})"


class StudyJournal(Journal):
    """A :class:`~privtune.bo.journal.Journal` backed by a study: resumable after a crash."""

    def __init__(self, study: Study) -> None:
        super().__init__()
        self.study = study

    def paid_prefix(self, accountant: Any) -> list[Any]:
        return [e for e in accountant.entries if e.role in (None, "validation")]

    def get(self, key: str) -> Any:
        return self.study.get(key)

    def put(self, key: str, value: Any) -> None:
        self.study.put(key, value)
