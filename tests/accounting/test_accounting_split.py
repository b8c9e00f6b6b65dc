"""Issue 39's splits of ``privtune/accounting/ledger.py`` and ``events.py``: every name keeps its path, pickles load.

``ledger.py`` kept the ledger classes; the SQLite study file under them (tables, hash chain, durable connection,
checks before opening, legacy conversion) moved to ``_study_file``. ``tests/accounting/data/
events_before_issue39_split.pkl`` was written by the code before the splits (one event of every type, with its
``to_dict`` and ``epsilon_delta``; a ``LedgerEntry``, an ``InMemoryLedger``, a ``DetachedLedger`` and an
``Accountant``, every class recorded under ``privtune.accounting.events`` / ``privtune.accounting.ledger``).
"""

from __future__ import annotations

import ast
import json
import pathlib
import pickle
import sqlite3
import subprocess
import sys

import pytest

from privtune.accounting import _study_file, ledger
from privtune.exceptions import BudgetExceededError, LedgerError

DATA = pathlib.Path(__file__).parent / "data" / "events_before_issue39_split.pkl"

#: Every module-level name ``ledger.py`` defined before the split, by the module now defining it.
LEDGER_NAMES_BEFORE = {
    "privtune.accounting.ledger": ["LedgerEntry", "Ledger", "InMemoryLedger", "_RESTORE", "SQLiteLedger",
                                   "DetachedLedger"],
    "privtune.accounting._study_file": ["_SCHEMA", "_HEAD_SCHEMA", "_GENESIS", "_chain", "study_file_error",
                                        "_SQLITE_MAGIC", "table_names", "_tables_in_main_file",
                                        "_refuse_unusable_file", "_create", "_convert_legacy_heads",
                                        "durable_connection"],
}
LEDGER_MODULES = {"privtune.accounting.ledger": ledger, "privtune.accounting._study_file": _study_file}


def _defined(module) -> set[str]:
    """The names a module's own source defines at top level (classes, functions, assignments)."""
    out = set()
    for node in ast.parse(pathlib.Path(module.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


@pytest.fixture(scope="module")
def stored():
    return pickle.loads(DATA.read_bytes())


@pytest.mark.parametrize("module, names", sorted(LEDGER_NAMES_BEFORE.items()))
def test_every_name_of_the_old_ledger_module_is_the_object_of_its_new_module(module, names):
    defining = LEDGER_MODULES[module]
    assert set(names) <= _defined(defining)
    for name in names:
        assert getattr(ledger, name) is getattr(defining, name), name
        value = getattr(defining, name)
        if isinstance(value, type) or callable(value):
            assert value.__module__ == module, name


def test_the_ledger_names_before_the_split_are_all_accounted_for():
    listed = {name for names in LEDGER_NAMES_BEFORE.values() for name in names}
    assert len(listed) == 18  # the module-level definitions and assignments of ledger.py before the split
    assert set(ledger.__all__) <= listed and _defined(ledger) - {"__all__"} <= listed
    assert _defined(_study_file) - {"__all__"} <= listed


def test_the_ledger_classes_did_not_move():
    for name in ledger.__all__:
        assert getattr(ledger, name).__module__ == "privtune.accounting.ledger", name


def test_a_sqlite_ledger_writes_the_same_rows_and_head_and_reopens(tmp_path):
    from privtune.accounting import ComposedEvent, LaplaceEvent

    path = tmp_path / "study.sqlite"
    first, second = LaplaceEvent(epsilon=0.5, label="inf"), ComposedEvent(events=(LaplaceEvent(epsilon=0.25),))
    led = ledger.SQLiteLedger(path, study="s")
    led.append(first, phase="selection")
    led.append(second, phase="training", role="training")
    led.close()
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT idx, event, phase, role FROM privtune_ledger ORDER BY idx").fetchall()
    head = conn.execute("SELECT n, digest FROM privtune_ledger_head WHERE study = 's'").fetchone()
    conn.close()
    assert [r[1] for r in rows] == [json.dumps(first.to_dict(), sort_keys=True),
                                    json.dumps(second.to_dict(), sort_keys=True)]
    digest = _study_file._GENESIS
    for idx, payload, phase, role in rows:
        digest = _study_file._chain(digest, idx, payload, phase, role)
    assert head == (2, digest)
    again = ledger.SQLiteLedger(path, study="s")
    assert [e.event for e in again.entries()] == [first, second]
    again.close()


def test_the_study_file_checks_run_through_the_old_path(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(LedgerError, match="is empty"):
        ledger.SQLiteLedger(empty)
    conn = ledger.durable_connection(str(tmp_path / "new.sqlite"))
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 3
        assert {"privtune_ledger", "privtune_ledger_head"} <= ledger.table_names(conn)
    finally:
        conn.close()


def test_ledgers_pickled_before_the_split_load(stored):
    entry = stored["entry"]
    assert type(entry) is ledger.LedgerEntry and entry.phase == "score_release" and entry.role == "training"
    assert entry.to_dict()["event"] == stored["to_dict"]["composed"]
    mem = stored["in_memory_ledger"]
    assert type(mem) is ledger.InMemoryLedger
    assert [e.event for e in mem.entries()] == [e for e in stored["events"].values() if e.relation == "replace_one"]
    mem.append(stored["events"]["laplace"], expected_index=len(mem))  # its lock was rebuilt on load
    detached = stored["detached_ledger"]
    assert type(detached) is ledger.DetachedLedger and len(detached) == len(mem) - 1
    with pytest.raises(LedgerError, match="read-only snapshot"):
        detached.append(stored["events"]["laplace"])
    acc = stored["accountant"]
    assert (acc.spent.epsilon, acc.spent.delta) == stored["accountant_spent"]
    assert type(acc.ledger) is ledger.DetachedLedger
    with pytest.raises((LedgerError, BudgetExceededError)):
        acc.spend(stored["events"]["laplace"])
    assert pickle.loads(pickle.dumps(mem)).entries() == mem.entries()


def test_the_fixture_loads_in_a_fresh_interpreter():
    code = ("import pickle, sys; d = pickle.load(open(sys.argv[1], 'rb')); "
            "print(type(d['entry']).__module__, type(d['in_memory_ledger']).__module__, "
            "type(d['accountant'].ledger).__module__)")
    out = subprocess.run([sys.executable, "-c", code, str(DATA)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["privtune.accounting.ledger"] * 3


# ----------------------------------------------------------------------------- events.py
#: Every module-level name ``events.py`` defined before the split, by the module now defining it.
EVENT_NAMES_BEFORE = {
    "privtune.accounting._event_base": ["RELATIONS", "GUARANTEES", "_REGISTRY", "_check_choice", "PrivacyEvent",
                                        "event_from_dict", "_other_relations", "_check_event"],
    "privtune.accounting._mechanism_events": ["LaplaceEvent", "GaussianEvent", "ExponentialEvent",
                                              "SparseVectorEvent", "EpsilonDeltaEvent", "RenyiEvent"],
    "privtune.accounting._composite_events": ["_amplify_pure", "PoissonSampledEvent",
                                              "SampledWithoutReplacementEvent", "ComposedEvent", "SelfComposedEvent",
                                              "RepeatAndSelectEvent", "ThresholdSelectionEvent"],
}


#: Event types added after the split (issue 40): not in the pickled fixture, defined in the split's modules.
EVENTS_ADDED_AFTER = {"SubsampledEvent": "subsampled"}
#: Every module-level name added after the split: those types, and the sampled events' shared fixed guarantee.
NAMES_ADDED_AFTER = set(EVENTS_ADDED_AFTER) | {"_amplified"}


def _event_modules():
    from privtune.accounting import _composite_events, _event_base, _mechanism_events

    return {"privtune.accounting._event_base": _event_base, "privtune.accounting._mechanism_events": _mechanism_events,
            "privtune.accounting._composite_events": _composite_events}


@pytest.mark.parametrize("module, names", sorted(EVENT_NAMES_BEFORE.items()))
def test_every_name_of_the_old_events_module_is_the_object_of_its_new_module(module, names):
    from privtune.accounting import events

    defining = _event_modules()[module]
    assert set(names) <= _defined(defining)
    for name in names:
        assert getattr(events, name) is getattr(defining, name), name
        value = getattr(defining, name)
        if isinstance(value, type) or callable(value):
            assert value.__module__ == module, name


def test_the_event_names_before_the_split_are_all_accounted_for():
    import privtune.accounting
    from privtune.accounting import events

    listed = {name for names in EVENT_NAMES_BEFORE.values() for name in names}
    assert len(listed) == 21  # the module-level definitions and assignments of events.py before the split
    assert set(events.__all__) <= listed | NAMES_ADDED_AFTER
    for module in _event_modules().values():
        assert _defined(module) - {"__all__"} <= listed | NAMES_ADDED_AFTER
    for name in privtune.accounting.__all__:  # the package's public names are the same objects
        if hasattr(events, name):
            assert getattr(privtune.accounting, name) is getattr(events, name), name


def test_events_pickled_before_the_split_load_and_serialise_byte_identically(stored):
    import privtune.accounting as pa
    from privtune.accounting import events

    raw = DATA.read_bytes()
    assert b"privtune.accounting.events" in raw
    assert b"_mechanism_events" not in raw and b"_composite_events" not in raw and b"_event_base" not in raw
    # the fixture holds one event of every type there was at the split
    assert sorted(stored["events"]) == sorted(set(events._REGISTRY) - set(EVENTS_ADDED_AFTER.values()))
    for kind, event in stored["events"].items():
        cls = events._REGISTRY[kind]
        assert type(event) is cls and cls is getattr(pa, cls.__name__), kind
        assert json.dumps(event.to_dict(), sort_keys=True) == json.dumps(stored["to_dict"][kind], sort_keys=True)
        assert event.epsilon_delta() == stored["epsilon_delta"][kind], kind
        assert events.event_from_dict(stored["to_dict"][kind]) == event, kind
        assert pickle.loads(pickle.dumps(event)) == event, kind
    nested = stored["events"]["poisson_sampled"]
    assert type(nested.event) is pa.GaussianEvent and nested.event.vector


def test_every_event_type_is_rebuilt_from_its_dict_in_a_fresh_interpreter():
    code = ("import json, pickle, sys; from privtune.accounting._event_base import event_from_dict; "
            "d = pickle.load(open(sys.argv[1], 'rb')); "
            "ok = [event_from_dict(json.loads(json.dumps(v))) == d['events'][k] for k, v in d['to_dict'].items()]; "
            "print(len(ok), all(ok), type(d['events']['renyi']).__module__)")
    out = subprocess.run([sys.executable, "-c", code, str(DATA)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["12", "True", "privtune.accounting._mechanism_events"]


def test_a_class_recorded_under_the_old_events_path_unpickles_to_the_class_now():
    import privtune.accounting as pa

    for name in ("PrivacyEvent", "LaplaceEvent", "GaussianEvent", "PoissonSampledEvent", "RepeatAndSelectEvent",
                 "RenyiEvent"):
        # the GLOBAL opcode an earlier privtune wrote for the class: ``c<module>\n<name>\n``
        assert pickle.loads(f"cprivtune.accounting.events\n{name}\n.".encode()) is getattr(pa, name)
