"""The command line on a damaged, emptied or previous-release study file: exit 2 with a message, nothing spent.

Found by an audit: damage on the page holding the ledger's head ended ``privtune tune --resume`` with a traceback and
exit 1 (a bare ``sqlite3.DatabaseError``); an emptied study file, and a previous release's file whose ``-wal`` was
lost, were opened as new studies and their budget spent again; and a previous release's file was refused as
"damaged or edited" although it is converted on open.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from privtune.cli import main


def _ledger_rows(path: Path) -> list:
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return conn.execute("SELECT * FROM privtune_ledger").fetchall()
    finally:
        conn.close()


def _damage(path: Path, btree: str) -> None:
    """Overwrite every page of ``btree`` (found with SQLite's dbstat table) with 0xFF bytes."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (btree,))]
    finally:
        conn.close()
    assert pages and 1 not in pages
    with open(path, "r+b") as fh:
        for p in pages:
            fh.seek((p - 1) * page_size)
            fh.write(b"\xff" * page_size)


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("privtune: error:")
    return err


def test_damage_on_the_ledger_head_page_exits_2(small_config, capsys):
    study = small_config.parent / "study.sqlite"
    assert main(["tune", str(small_config), "--quiet"]) == 0
    _damage(study, "privtune_ledger_head")
    before = _ledger_rows(study)
    capsys.readouterr()
    assert main(["tune", str(small_config), "--quiet", "--resume"]) == 2  # was: a traceback and exit 1
    err = _error(capsys)
    assert str(study) in err and "damaged" in err
    assert _ledger_rows(study) == before  # nothing spent


def test_report_of_a_damaged_study_file_exits_2(small_config, capsys):
    study = small_config.parent / "study.sqlite"
    assert main(["tune", str(small_config), "--quiet"]) == 0
    _damage(study, "privtune_studies")
    capsys.readouterr()
    assert main(["report", str(study)]) == 2
    assert str(study) in _error(capsys)


def test_an_emptied_study_file_exits_2_and_spends_nothing(small_config, capsys):
    study = small_config.parent / "study.sqlite"
    study.write_bytes(b"")
    assert main(["tune", str(small_config), "--quiet"]) == 2  # was: a new study, the budget spent again
    err = _error(capsys)
    assert str(study) in err and "0 bytes" in err
    assert study.stat().st_size == 0
    assert main(["report", str(study)]) == 2


def test_a_previous_release_study_file_is_rendered_and_one_that_lost_its_wal_is_refused(small_config, capsys):
    d = small_config.parent
    study = d / "study.sqlite"
    assert main(["tune", str(small_config), "--quiet"]) == 0
    capsys.readouterr()
    # the previous release's format: no head tables, write-ahead-log mode (closed cleanly: no side files)
    conn = sqlite3.connect(study, isolation_level=None)
    conn.execute("DROP TABLE privtune_ledger_head")
    conn.execute("DROP TABLE privtune_journal_head")
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.close()
    assert main(["report", str(study), "--json", str(d / "again.json")]) == 0  # was: "damaged or edited"
    assert json.loads((d / "again.json").read_text()) == json.loads((d / "out" / "report.json").read_text())

    # what a killed run of the previous release left without its -wal: the main file's header page, no table
    study.unlink()
    conn = sqlite3.connect(study, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    before = study.read_bytes()
    capsys.readouterr()
    assert main(["tune", str(small_config), "--quiet"]) == 2  # was: a new study, the budget spent again
    err = _error(capsys)
    assert "older privtune" in err and "study.sqlite-wal" in err
    assert study.read_bytes() == before
