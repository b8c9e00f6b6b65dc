"""Every privtune SQLite connection runs with ``synchronous=EXTRA`` (audit finding: durability).

In rollback-journal mode (``journal_mode=DELETE``) a transaction commits when its journal file is
deleted; only ``synchronous=EXTRA`` syncs the directory after that deletion. With ``FULL`` (used
before) a power loss right after COMMIT returned could leave the journal's directory entry on disk,
and the next open would roll back the last charge -- a charge the caller had already paid data
access with. The power loss itself cannot be simulated here; the setting is what is tested.
"""

from privtune.accounting import SQLiteLedger
from privtune.accounting.ledger import durable_connection
from privtune.storage._sqlite import StudyStorage

EXTRA = 3  # PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA


def test_the_ledger_connection_syncs_the_journal_deletion(tmp_path):
    led = SQLiteLedger(tmp_path / "l.sqlite", study="s")
    assert led._conn.execute("PRAGMA synchronous").fetchone()[0] == EXTRA
    assert led._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "delete"


def test_the_study_storage_connection_syncs_the_journal_deletion(tmp_path):
    storage = StudyStorage(str(tmp_path / "s.sqlite"))
    assert storage._conn.execute("PRAGMA synchronous").fetchone()[0] == EXTRA
    conn = durable_connection(str(tmp_path / "d.sqlite"))
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == EXTRA
