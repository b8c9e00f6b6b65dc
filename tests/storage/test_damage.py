"""A damaged or emptied study file is refused with ``LedgerError`` (exit 2 on the command line), nothing spent.

Found by an audit: damage on the SQLite page holding the ledger's head reached the caller as a bare
``sqlite3.DatabaseError`` (a traceback and exit 1 on the command line), since ``SQLiteLedger`` read the head outside
its ``try``; the study storage's readers (``status``, ``study_names``, ``load_report``, the journal) had no ``try``
at all; and an emptied (0-byte) study file was opened as a new study, so a search spent its budget again.

The damage is real: the bytes of the page SQLite keeps a table on are overwritten in a study file written by a real
search (the page is found with SQLite's ``dbstat`` table and the file's page size).
"""

import os
import sqlite3
import threading

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import SQLiteLedger
from privtune.exceptions import LedgerError
from privtune.space import Real
from privtune.storage import StudyStorage

SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[:350], y[:350], X[350:], y[350:]


def _search(path, resume=True):
    return PrivateSearchCV(SVC(random_state=0), SPACE, method="random", epsilon=1.0, delta=1e-6, n_iter=4,
                           n_candidates=8, storage=path, study_name="s", random_state=5, resume=resume)


def _fit(path, resume=True):
    """A search on the study ``s`` (resuming it, as every search on a damaged copy here means to)."""
    X_tr, y_tr, X_v, y_v = _data()
    return _search(path, resume).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


@pytest.fixture(scope="module")
def study_file(tmp_path_factory):
    """A completed study (4 charges, journal, report) written by a real search."""
    path = str(tmp_path_factory.mktemp("damage") / "study.sqlite")
    _fit(path, resume=False)
    return path


def _raw_rows(path, table):
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return conn.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        conn.close()


def _damaged_copy(src, dst, btree):
    """Copy ``src`` to ``dst`` and overwrite every page of the b-tree ``btree`` (a table or an index) with 0xFF."""
    conn = sqlite3.connect(f"file:{src}?immutable=1", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (btree,))]
    finally:
        conn.close()
    assert pages and 1 not in pages  # the table's own pages, never the file header
    with open(src, "rb") as fh:
        data = bytearray(fh.read())
    for p in pages:
        data[(p - 1) * page_size: p * page_size] = b"\xff" * page_size
    with open(dst, "wb") as fh:
        fh.write(data)
    return str(dst)


def test_damage_on_the_ledger_head_page_is_a_ledger_error(study_file, tmp_path):
    """The audit's case: the page holding the ledger's head. It was a bare sqlite3.DatabaseError."""
    path = _damaged_copy(study_file, tmp_path / "head.sqlite", "privtune_ledger_head")
    ledger_rows = _raw_rows(path, "privtune_ledger")
    with pytest.raises(LedgerError, match="head.sqlite") as info:
        SQLiteLedger(path, study="s")
    assert "damaged" in str(info.value) and "new study" in str(info.value)  # says what happened and what to do
    with pytest.raises(LedgerError, match="head.sqlite"):
        _fit(path)  # the resumed search: refused before anything is read or spent
    assert _raw_rows(path, "privtune_ledger") == ledger_rows  # nothing spent


@pytest.mark.parametrize("btree", [
    "privtune_ledger_head", "sqlite_autoindex_privtune_ledger_head_1", "privtune_ledger",
    "privtune_journal", "sqlite_autoindex_privtune_journal_1", "privtune_journal_head",
    "privtune_studies", "privtune_reports", "privtune_locks",
])
def test_a_search_on_a_damaged_study_file_raises_ledger_error_and_spends_nothing(study_file, tmp_path, btree):
    path = _damaged_copy(study_file, tmp_path / "damaged.sqlite", btree)
    before = _raw_rows(path, "privtune_ledger") if btree != "privtune_ledger" else None
    with pytest.raises(LedgerError, match="damaged.sqlite"):
        _fit(path)
    if before is not None:
        assert _raw_rows(path, "privtune_ledger") == before


@pytest.mark.parametrize("btree,read", [
    ("privtune_studies", lambda st: st.study_names()),
    ("sqlite_autoindex_privtune_studies_1", lambda st: st.status("s")),
    ("privtune_studies", lambda st: st.status("s")),
    ("privtune_studies", lambda st: st.load_config("s")),
    ("privtune_reports", lambda st: st.load_report("s")),
])
def test_the_study_storage_readers_raise_ledger_error_on_damage(study_file, tmp_path, btree, read):
    path = _damaged_copy(study_file, tmp_path / "damaged.sqlite", btree)
    st = StudyStorage(path)
    try:
        with pytest.raises(LedgerError, match="damaged.sqlite"):
            read(st)
    finally:
        st.close()


def test_a_damaged_journal_value_is_a_ledger_error(study_file, tmp_path):
    """A row whose bytes no longer parse (damage inside a value, which SQLite cannot see) is damage too."""
    path = str(tmp_path / "value.sqlite")
    with open(study_file, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE privtune_journal SET value = '[1, 2' WHERE study = 's' AND key = 'seeds'")
    conn.execute("UPDATE privtune_reports SET report = '{\"a\": ' WHERE study = 's'")
    conn.close()
    st = StudyStorage(path)
    try:
        with pytest.raises(LedgerError, match="value.sqlite"):
            st.load_report("s")
    finally:
        st.close()
    with pytest.raises(LedgerError, match="value.sqlite"):
        _fit(path)


# -- an emptied file --------------------------------------------------------------------------------
def test_an_emptied_study_file_is_refused_not_started_again(study_file, tmp_path):
    """A 0-byte file at the study path was opened as a new study: the search spent its whole budget again."""
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    with pytest.raises(LedgerError, match="empty.sqlite.*0 bytes"):
        _fit(str(path))
    with pytest.raises(LedgerError, match="0 bytes"):
        SQLiteLedger(path, study="s")
    with pytest.raises(LedgerError, match="0 bytes"):
        StudyStorage(str(path))
    assert path.stat().st_size == 0  # nothing written, nothing spent
    assert sorted(os.listdir(tmp_path)) == ["empty.sqlite"]


def test_sqlite_never_opens_a_new_study_file_empty(tmp_path, monkeypatch):
    """A new file appears at its path with its first page written (made aside, then linked). Before, SQLite created
    it empty and wrote its first page only with the first table: another process opening the same new path in
    between would find a 0-byte file, which is now refused as damage."""
    path = str(tmp_path / "new.sqlite")
    real = sqlite3.connect
    sizes = []

    def connect(database, *args, **kwargs):
        conn = real(database, *args, **kwargs)
        if os.fspath(database) == path:
            sizes.append(os.path.getsize(path))  # what a concurrent opener would find now
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    StudyStorage(path).close()
    SQLiteLedger(path, study="s").close()
    assert sizes and min(sizes) > 0


def test_concurrent_openers_of_a_new_study_file_all_succeed(tmp_path):
    """Eight threads open the same new path at once: none finds an empty file (or is refused)."""
    path = str(tmp_path / "new.sqlite")
    errors = []
    start = threading.Barrier(8)

    def open_one(i):
        start.wait()
        try:
            SQLiteLedger(path, study=f"s{i}").close()
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert os.path.getsize(path) > 0
    assert sorted(os.listdir(tmp_path)) == ["new.sqlite"]  # no file made aside is left behind
