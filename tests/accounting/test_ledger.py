"""Ledgers: durability before return, resume, corruption and concurrent writers."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from privtune.accounting import (
    Accountant,
    Budget,
    GaussianEvent,
    InMemoryLedger,
    LaplaceEvent,
    SQLiteLedger,
)
from privtune.exceptions import BudgetExceededError, InvalidParameterError, LedgerError


def test_in_memory_ledger_appends_in_order():
    led = InMemoryLedger()
    a = led.append(LaplaceEvent(epsilon=0.1), phase="x", role="validation")
    b = led.append(GaussianEvent(noise_multiplier=2.0))
    assert (a.index, b.index) == (0, 1) and len(led) == 2 and led.entries()[0].role == "validation"
    assert led.to_list()[1]["event"]["type"] == "gaussian"


def test_sqlite_ledger_roundtrip_and_resume(tmp_path):
    path = tmp_path / "study.sqlite"
    acc = Accountant(Budget(5.0, 1e-6), ledger=SQLiteLedger(path, study="s1"))
    acc.spend(LaplaceEvent(epsilon=0.25), phase="observations", role="validation")
    acc.spend(GaussianEvent(noise_multiplier=3.0), phase="selection")
    acc.ledger.close()
    reopened = SQLiteLedger(path, study="s1")
    assert [e.event for e in reopened.entries()] == [e.event for e in acc.entries]
    resumed = Accountant(Budget(5.0, 1e-6), ledger=reopened)
    assert resumed.spent == acc.spent
    other = SQLiteLedger(path, study="s2")  # studies share a file without mixing
    assert len(other) == 0


def test_sqlite_ledger_entry_is_durable_when_spend_returns(tmp_path):
    """A process SIGKILLed right after spend() returns has its charge on disk."""
    path = tmp_path / "killed.sqlite"
    code = textwrap.dedent(f"""
        import os, signal
        from privtune.accounting import Accountant, Budget, LaplaceEvent, SQLiteLedger
        acc = Accountant(Budget(1.0, 0.0), ledger=SQLiteLedger({str(path)!r}, study="k"))
        acc.spend(LaplaceEvent(epsilon=0.4), phase="observations")
        print("spent", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no clean shutdown: nothing after spend() runs
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL and "spent" in proc.stdout
    resumed = Accountant(Budget(1.0, 0.0), ledger=SQLiteLedger(path, study="k"))
    assert resumed.spent == Budget(0.4, 0.0)
    with pytest.raises(BudgetExceededError):
        resumed.spend(LaplaceEvent(epsilon=0.7))


def test_second_writer_cannot_interleave(tmp_path):
    path = tmp_path / "two.sqlite"
    first = SQLiteLedger(path, study="s")
    second = SQLiteLedger(path, study="s")
    first.append(LaplaceEvent(epsilon=0.1))
    with pytest.raises(LedgerError, match="Nothing was spent"):
        second.append(LaplaceEvent(epsilon=0.1))  # its view is stale: index 0 is taken
    assert len(SQLiteLedger(path, study="s")) == 1


def test_failed_append_leaves_accountant_unchanged(tmp_path):
    path = tmp_path / "ro.sqlite"
    led = SQLiteLedger(path, study="s")
    acc = Accountant(Budget(1.0, 0.0), ledger=led)
    SQLiteLedger(path, study="s").append(LaplaceEvent(epsilon=0.1))  # someone else wrote index 0
    with pytest.raises(LedgerError):
        acc.spend(LaplaceEvent(epsilon=0.2))
    assert len(acc) == 0 and acc.spent == Budget(0.0, 0.0)


def test_corrupt_ledger_is_refused(tmp_path):
    path = tmp_path / "bad.sqlite"
    SQLiteLedger(path, study="s").append(LaplaceEvent(epsilon=0.1))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE privtune_ledger SET event = '{\"type\": \"nope\"}'")
    with pytest.raises(LedgerError, match="unreadable event"):
        SQLiteLedger(path, study="s")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE privtune_ledger SET idx = 3")
    with pytest.raises(LedgerError, match="corrupt"):
        SQLiteLedger(path, study="s")


def test_ledger_validation(tmp_path):
    with pytest.raises(InvalidParameterError, match="'study'"):
        SQLiteLedger(tmp_path / "x.sqlite", study="")
    with pytest.raises(LedgerError, match="Cannot open"):
        SQLiteLedger(os.path.join(tmp_path, "missing-dir", "x.sqlite"))
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(SQLiteLedger(tmp_path / "p.sqlite"))
