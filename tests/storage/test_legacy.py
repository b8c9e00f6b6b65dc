"""Study files written by the previous release (write-ahead-log mode, no heads) are converted, or refused.

The previous release (before commit 457a5cc) opened every study file with ``PRAGMA journal_mode=WAL`` and
``synchronous=FULL``, had no ``privtune_ledger_head`` / ``privtune_journal_head`` tables, and updated
``privtune_studies.updated`` at every write. Found by an audit: such a file was refused as "damaged or edited" (its
ledger has no head), although the docs said old files are converted on open; and one whose ``-wal`` was lost after a
crash held nothing in its main file (the log was never checkpointed), so it was opened as a new study and its budget
spent again.

The fixtures are written the old way here, with ``sqlite3`` directly (the old schema and pragmas, verbatim), from the
rows of a study the current code wrote: a *closed* file (the old release's connections closed, so SQLite checkpointed
the log into the main file and deleted its ``-wal`` / ``-shm``), and a *crashed* one (copied while the writing
connection is still open, which is what a SIGKILL leaves: the main file as last checkpointed -- its header page
only -- next to the ``-wal`` holding every write, and the ``-shm``). A run of the previous release's code killed
mid-search left exactly that: a 4096-byte main file with no table, a ``-wal`` and a ``-shm``.
"""

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget, LaplaceEvent, SQLiteLedger
from privtune.exceptions import LedgerError
from privtune.space import Real
from privtune.storage import StudyStorage

SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}

# The previous release's schema, verbatim (privtune/storage/_sqlite.py and privtune/accounting/ledger.py at 457a5cc^).
OLD_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS privtune_studies (
        name TEXT PRIMARY KEY, config TEXT NOT NULL, fingerprint TEXT NOT NULL, status TEXT NOT NULL,
        created REAL NOT NULL, updated REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS privtune_journal (
        study TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (study, key))""",
    """CREATE TABLE IF NOT EXISTS privtune_reports (study TEXT PRIMARY KEY, report TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS privtune_locks (
        study TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, token TEXT NOT NULL,
        acquired REAL NOT NULL)""",
]
OLD_LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS privtune_ledger (
    study TEXT NOT NULL,
    idx INTEGER NOT NULL,
    event TEXT NOT NULL,
    phase TEXT NOT NULL,
    role TEXT,
    PRIMARY KEY (study, idx)
)
"""
OLD_TABLES = ("privtune_studies", "privtune_journal", "privtune_reports", "privtune_locks", "privtune_ledger")


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[:350], y[:350], X[350:], y[350:]


def _search(path, resume=True):
    """A search on the study ``s`` (resuming a previous release's file, as every search here but the first means
    to)."""
    return PrivateSearchCV(SVC(random_state=0), SPACE, method="noisy-ucb", epsilon=1.0, delta=1e-6, n_iter=4,
                           n_candidates=8, storage=path, study_name="s", random_state=5, resume=resume)


def _fit(path, resume=True):
    X_tr, y_tr, X_v, y_v = _data()
    return _search(path, resume).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture(scope="module")
def interrupted_rows(tmp_path_factory):
    """The rows of a noisy-ucb study interrupted in its 3rd evaluation (3 charges, 2 released observations),
    with the writer lock its killed process would have left."""
    from privtune.bo.noisy_ucb import NoisyUCB

    path = str(tmp_path_factory.mktemp("legacy") / "current.sqlite")
    real = NoisyUCB._release_score
    calls = []

    def interrupt_third(self, mech, value):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, mech, value)

    NoisyUCB._release_score = interrupt_third
    try:
        with pytest.raises(KeyboardInterrupt):
            _fit(path, resume=False)
    finally:
        NoisyUCB._release_score = real
    conn = sqlite3.connect(path)
    rows = {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in OLD_TABLES}
    conn.close()
    assert len(rows["privtune_ledger"]) == 3 and not rows["privtune_locks"]
    name, config, fingerprint, status, created, _ = rows["privtune_studies"][0]
    rows["privtune_studies"] = [(name, config, fingerprint, status, created, created + 42.0)]  # old: last write
    rows["privtune_locks"] = [("s", _dead_pid(), os.uname().nodename, "0" * 32, created)]
    return rows


def _write_old_way(conn, rows):
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    for stmt in OLD_SCHEMA:
        conn.execute(stmt)
    conn.execute(OLD_LEDGER_SCHEMA)
    for table, table_rows in rows.items():
        for row in table_rows:  # one committed transaction per row, as the old code wrote them
            conn.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)


def write_legacy(directory, rows, *, crashed):
    """A study file as the previous release left it: closed cleanly, or killed (``crashed``)."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "study.sqlite")
    if not crashed:
        conn = sqlite3.connect(path, isolation_level=None)
        _write_old_way(conn, rows)
        conn.close()  # the last connection checkpoints the log into the main file and deletes -wal and -shm
        assert not os.path.exists(path + "-wal") and not os.path.exists(path + "-shm")
    else:
        staging = os.path.join(directory, "staging")
        os.makedirs(staging)
        live = os.path.join(staging, "study.sqlite")
        conn = sqlite3.connect(live, isolation_level=None)
        conn.execute("PRAGMA wal_autocheckpoint=0")  # a small study never reached the 1000-page checkpoint
        _write_old_way(conn, rows)
        for suffix in ("", "-wal", "-shm"):  # what a SIGKILL leaves on disk
            shutil.copyfile(live + suffix, path + suffix)
        conn.close()
        shutil.rmtree(staging)
        assert _tables_in_main_file(path) == []  # every write is in the -wal only
    with open(path, "rb") as fh:
        header = fh.read(100)
    assert header[18] == header[19] == 2  # a write-ahead-log mode file
    return path


def _tables_in_main_file(path):
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    finally:
        conn.close()


def _journal_mode(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("crashed", [False, True], ids=["closed", "crashed-with-its-wal"])
def test_a_legacy_study_is_converted_and_resumes_without_respending(tmp_path, interrupted_rows, crashed):
    path = write_legacy(tmp_path, interrupted_rows, crashed=crashed)
    legacy_events = [e.event for e in SQLiteLedger(path, study="s").entries()]  # was: "damaged or edited"
    assert len(legacy_events) == 3
    assert _journal_mode(path) == "delete"
    assert not os.path.exists(path + "-wal")
    conn = sqlite3.connect(path)
    created, updated = conn.execute("SELECT created, updated FROM privtune_studies").fetchone()
    conn.close()
    s = _fit(path)  # the stale lock of the killed process is taken over; the study resumes
    ledger = [e.event for e in s.accountant_.entries]
    assert ledger[:3] == legacy_events  # the legacy charges are counted and replayed, not made again
    assert ledger == list(s.release_.events) and len(ledger) == 5  # 4 observations + the final release
    assert s.privacy_spent_["overall"].epsilon <= 1.0 * (1 + 1e-12)
    conn = sqlite3.connect(path)
    created, updated = conn.execute("SELECT created, updated FROM privtune_studies").fetchone()
    heads = conn.execute("SELECT study, n FROM privtune_ledger_head").fetchall()
    conn.close()
    assert updated == created  # the old release's time of the last write is not kept (a timing of the work)
    assert heads == [("s", 5)]
    assert StudyStorage(path).status("s") == "complete"


def test_a_converted_legacy_file_still_detects_lost_charges(tmp_path, interrupted_rows):
    """Conversion writes the heads of what the file holds; a loss after that is refused as for any study."""
    path = write_legacy(tmp_path, interrupted_rows, crashed=False)
    SQLiteLedger(path, study="s").close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM privtune_ledger WHERE study = 's' AND idx = 2")
    conn.close()
    with pytest.raises(LedgerError, match="does not match its recorded head"):
        _fit(path)


@pytest.mark.parametrize("keep_shm,empty_wal", [(True, False), (False, False), (True, True)],
                         ids=["shm-kept", "both-side-files-lost", "wal-emptied"])
def test_a_legacy_study_whose_wal_is_lost_is_refused_not_started_again(tmp_path, interrupted_rows, keep_shm,
                                                                       empty_wal):
    """Its charges were in the -wal only: the main file alone opened as an empty file, a new study that spent its
    budget again."""
    path = write_legacy(tmp_path, interrupted_rows, crashed=True)
    os.remove(path + "-wal")
    if empty_wal:
        open(path + "-wal", "wb").close()
    if not keep_shm:
        os.remove(path + "-shm")
    with open(path, "rb") as fh:
        before = fh.read()
    for attempt in (lambda: _fit(path), lambda: SQLiteLedger(path, study="s"), lambda: StudyStorage(path)):
        with pytest.raises(LedgerError, match="study.sqlite-wal") as info:
            attempt()
        assert "older privtune" in str(info.value) and "new study" in str(info.value)
    with open(path, "rb") as fh:
        assert fh.read() == before  # nothing written: no new study, no charge
    left = ["study.sqlite"] + (["study.sqlite-shm"] if keep_shm else []) + (["study.sqlite-wal"] if empty_wal else [])
    assert sorted(os.listdir(tmp_path)) == sorted(left)


def test_a_legacy_ledger_file_is_converted(tmp_path):
    """A SQLiteLedger used on its own by the previous release (WAL mode, no head), closed."""
    path = str(tmp_path / "ledger.sqlite")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(OLD_LEDGER_SCHEMA)
    for i, eps in enumerate((0.25, 0.5)):
        conn.execute("INSERT INTO privtune_ledger VALUES (?, ?, ?, ?, ?)",
                     ("default", i, f'{{"epsilon": {eps}, "label": "", "relation": "replace_one", "type": "laplace"}}',
                      "selection", None))
    conn.close()
    acc = Accountant(Budget(1.0, 0.0), ledger=SQLiteLedger(path))
    assert acc.spent.epsilon == pytest.approx(0.75)  # the legacy charges count against the budget
    acc.spend(LaplaceEvent(epsilon=0.25))
    assert [e.event.epsilon for e in SQLiteLedger(path).entries()] == [0.25, 0.5, 0.25]
    assert _journal_mode(path) == "delete"
