"""Study storage: a search killed at any point resumes without re-spending, exceeding or losing anything."""

import os
import subprocess
import sys
import textwrap

import pytest
from killer import KillSVC
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget, SQLiteLedger
from privtune.exceptions import InvalidParameterError, LedgerError
from privtune.space import Real
from privtune.storage import StudyLockedError, StudyStorage

HERE = os.path.dirname(__file__)
SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[:350], y[:350], X[350:], y[350:]


def _search(path, method, **kw):
    return PrivateSearchCV(KillSVC(random_state=0), SPACE, method=method, epsilon=1.0, delta=1e-6, n_iter=6,
                           n_candidates=16, storage=path, study_name="s", random_state=5, **kw)


CHILD_SECURE = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from test_resume import _data, _secure_search
    X_tr, y_tr, X_v, y_v = _data()
    _secure_search({path!r}).fit(X_tr, y_tr)
""")


def _secure_search(path):
    """Secure noise (random_state=None) and a split of the whole data set made by the search itself."""
    return PrivateSearchCV(KillSVC(random_state=0), SPACE, method="noisy-ucb", epsilon=1.0, delta=1e-6, n_iter=6,
                           n_candidates=16, validation_size=0.3, storage=path, study_name="s")


CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from test_resume import _data, _search
    X_tr, y_tr, X_v, y_v = _data()
    _search({path!r}, {method!r}).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    print("finished without being killed")
""")


def _run_child_killed_at(tmp_path, method, kill_at):
    path = str(tmp_path / "study.sqlite")
    env = dict(os.environ, PRIVTUNE_KILL_AT=str(kill_at), PRIVTUNE_KILL_COUNTER=str(tmp_path / "count"))
    code = CHILD.format(here=HERE, path=path, method=method)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stdout + proc.stderr  # really killed by SIGKILL
    return path


@pytest.mark.parametrize("method,kill_at", [("noisy-ucb", 1), ("noisy-ucb", 4), ("noisy-ucb", 7),
                                            ("random", 3), ("random", 7), ("gp-ucb", 2)])
def test_killed_search_resumes_without_respending(tmp_path, method, kill_at):
    path = _run_child_killed_at(tmp_path, method, kill_at)
    before = list(SQLiteLedger(path, study="s").entries())
    X_tr, y_tr, X_v, y_v = _data()
    s = _search(path, method, resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)  # resume here (no kill env)
    ledger = list(s.accountant_.entries)
    plan = list(s.release_.events)
    # never re-spends: the ledger is exactly the plan, each charge once, and the pre-crash charges kept
    assert [e.event for e in ledger] == [e for e in s.release_.events]
    assert [e.event for e in ledger[: len(before)]] == [e.event for e in before]
    assert len(ledger) == len(plan)
    # never exceeds the budget
    assert s.privacy_spent_["overall"].epsilon <= 1.0 * (1 + 1e-12) and s.privacy_spent_["overall"].delta <= 1e-6
    assert StudyStorage(path).status("s") == "complete" and StudyStorage(path).load_report("s") is not None
    if method == "noisy-ucb":  # completed observations are kept: the replayed trajectory starts with them
        assert s.n_iter_ == 6 and len(s.release_.history) == 6


def test_noisy_ucb_completed_observations_are_reused_not_reevaluated(tmp_path, monkeypatch):
    path = _run_child_killed_at(tmp_path, "noisy-ucb", 6)  # the pre-flight fit, then killed in the 5th evaluation
    stored = [StudyStorage(path)._conn.execute(
        "SELECT value FROM privtune_journal WHERE study='s' AND key=?", (f"observation:{t}",)).fetchone()
        for t in range(1, 7)]
    assert [v is not None for v in stored] == [True] * 4 + [False] * 2  # 4 releases made it to disk
    counter = tmp_path / "resume_count"
    monkeypatch.setenv("PRIVTUNE_KILL_COUNTER", str(counter))
    X_tr, y_tr, X_v, y_v = _data()
    s = _search(path, "noisy-ucb", resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    fits = int(counter.read_text())
    assert fits <= 5  # the pre-flight, observations 5 and 6, perhaps the final release, the refit -- not 8
    import json

    for t, v in enumerate(stored[:4], start=1):  # the pre-crash releases are reused exactly
        assert s.release_.history[t - 1].released_score == json.loads(v[0])["released_score"]
    with pytest.raises(InvalidParameterError, match="different configuration"):
        _search(path, "noisy-ucb", scoring="balanced_accuracy", min_class_size=20, resume=True).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_completed_study_is_loaded_without_spending_or_evaluating(tmp_path):
    path = str(tmp_path / "done.sqlite")
    X_tr, y_tr, X_v, y_v = _data()
    a = _search(path, "random").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    n = len(a.accountant_.entries)
    b = _search(path, "random", resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert b.best_params_ == a.best_params_ and b.best_score_ == a.best_score_
    assert len(b.accountant_.entries) == n and b.privacy_spent_ == a.privacy_spent_


def test_two_writers_get_a_clear_error(tmp_path):
    path = str(tmp_path / "locked.sqlite")
    st = StudyStorage(path)
    study = st.open("s", {"a": 1})
    with pytest.raises(StudyLockedError, match="already open for writing"):
        StudyStorage(path).open("s", {"a": 1})
    code = f"from privtune.storage import StudyStorage; StudyStorage({path!r}).open('s', {{'a': 1}})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "already open for writing" in proc.stderr
    study.close()
    StudyStorage(path).open("s", {"a": 1}).close()  # free again


def test_stale_lock_of_a_killed_process_is_taken_over(tmp_path):
    path = str(tmp_path / "stale.sqlite")
    code = (f"import os, signal; from privtune.storage import StudyStorage; StudyStorage({path!r}).open('s', {{}}); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == -9
    StudyStorage(path).open("s", {}).close()


def test_storage_refuses_bad_combinations(tmp_path):
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(InvalidParameterError, match="either 'accountant' or 'storage'"):
        _search(str(tmp_path / "x.sqlite"), "random", accountant=Accountant(Budget(1.0))).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v)
    with pytest.raises(InvalidParameterError, match="SQLite file path"):
        _search("postgresql://host/db", "random").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    path = str(tmp_path / "plan.sqlite")
    _search(path, "random").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    with pytest.raises(InvalidParameterError, match="differs in: epsilon"):
        _search(path, "random", resume=True).set_params(epsilon=2.0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_journal_refuses_a_ledger_that_is_not_a_prefix_of_the_plan():
    """A resumed search whose ledger holds charges its plan does not start with is refused, spending nothing."""
    from privtune.accounting import LaplaceEvent
    from privtune.bo.journal import Journal

    acc = Accountant(Budget(2.0, 0.0))
    acc.spend(LaplaceEvent(epsilon=0.3), phase="selection", role="validation")

    class Resumed(Journal):
        def paid_prefix(self, accountant):
            return list(accountant.entries)

    plan = [(LaplaceEvent(epsilon=0.5), "selection"), (LaplaceEvent(epsilon=0.5), "score_release")]
    with pytest.raises(LedgerError, match="does not match"):
        Resumed().open_plan(acc, plan)
    assert len(acc.entries) == 1
    ok = Resumed()
    acc2 = Accountant(Budget(2.0, 0.0))
    acc2.spend(LaplaceEvent(epsilon=0.5), phase="selection", role="validation")
    ok.open_plan(acc2, plan)  # a matching prefix: only the rest is charged
    for ev, ph in plan:
        ok.charge(acc2, ev, ph, "validation")
    assert [e.event for e in acc2.entries] == [ev for ev, _ in plan]


def test_secure_noise_study_resumes_with_the_same_split_and_candidates(tmp_path):
    """With random_state=None the split and the candidate set come from seeds stored in the study."""
    path = str(tmp_path / "secure.sqlite")
    env = dict(os.environ, PRIVTUNE_KILL_AT="4", PRIVTUNE_KILL_COUNTER=str(tmp_path / "count"))
    proc = subprocess.run([sys.executable, "-c", CHILD_SECURE.format(here=HERE, path=path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stdout + proc.stderr
    X_tr, y_tr, _, _ = _data()
    s = _secure_search(path).set_params(resume=True).fit(X_tr, y_tr)  # LedgerError if the candidates or split changed
    assert not s.seeded_ and len(s.release_.history) == 6
    assert [e.event for e in s.accountant_.entries] == list(s.release_.events)


# --------------------------------------------------------------------- durability and consistency (issue 10, item 6)
def _copy_main_file_only(src, tmp_path):
    import shutil

    dst = str(tmp_path / "copy.sqlite")
    shutil.copyfile(src, dst)  # not the -wal, -shm or -journal side files
    return dst


@pytest.mark.parametrize("method,kill_at", [("noisy-ucb", 4), ("random", 3)])
def test_a_copy_of_the_study_file_alone_keeps_every_charge(tmp_path, method, kill_at):
    """After a SIGKILL, the .sqlite file by itself must hold every committed charge: resuming from a copy of it
    never starts over (which would spend the budget again)."""
    path = _run_child_killed_at(tmp_path, method, kill_at)
    copy = _copy_main_file_only(path, tmp_path)  # before anything opens (and checkpoints) the original
    before = [e.event for e in SQLiteLedger(path, study="s").entries()]
    assert before  # the child had charged something before it was killed
    in_copy = [e.event for e in SQLiteLedger(copy, study="s").entries()]
    assert in_copy == before  # a resume from the copy counts (and replays) every pre-crash charge
    X_tr, y_tr, X_v, y_v = _data()
    s = _search(copy, method, resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    ledger = [e.event for e in s.accountant_.entries]
    assert ledger[: len(before)] == before and ledger == list(s.release_.events)
    assert s.privacy_spent_["overall"].epsilon <= 1.0 * (1 + 1e-12)


def test_lost_side_files_lose_nothing(tmp_path):
    path = _run_child_killed_at(tmp_path, "noisy-ucb", 4)
    copy = _copy_main_file_only(path, tmp_path)
    for side in ("-wal", "-shm", "-journal"):  # lost side files (on the original, before anything reopens it)
        if os.path.exists(path + side):
            os.remove(path + side)
    before = [e.event for e in SQLiteLedger(copy, study="s").entries()]
    assert len(before) >= 3  # the child had charged its first observations (killed during the 4th fit)
    assert [e.event for e in SQLiteLedger(path, study="s").entries()] == before


def _raw(path):
    import sqlite3

    return sqlite3.connect(path, isolation_level=None)


def test_a_study_whose_ledger_lost_rows_is_refused_nothing_spent(tmp_path):
    path = _run_child_killed_at(tmp_path, "noisy-ucb", 5)
    conn = _raw(path)
    conn.execute("DELETE FROM privtune_ledger WHERE study = 's' AND idx >= 2")  # simulate lost charges
    conn.close()
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(LedgerError, match="does not match its recorded head"):
        _search(path, "noisy-ucb", resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    conn = _raw(path)
    assert conn.execute("SELECT COUNT(*) FROM privtune_ledger WHERE study='s'").fetchone()[0] == 2  # nothing added
    assert conn.execute("SELECT COUNT(*) FROM privtune_locks").fetchone()[0] == 0  # the lock was released


def test_a_study_whose_ledger_and_head_were_rolled_back_behind_its_journal_is_refused(tmp_path):
    path = _run_child_killed_at(tmp_path, "noisy-ucb", 5)
    conn = _raw(path)
    conn.execute("DELETE FROM privtune_ledger WHERE study = 's'")
    conn.execute("DELETE FROM privtune_ledger_head WHERE study = 's'")
    conn.close()
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(LedgerError, match="journal was written after"):
        _search(path, "noisy-ucb", resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


@pytest.mark.parametrize("delete_head, match", [(False, "journal holds"), (True, "no recorded head")])
def test_a_study_whose_journal_lost_releases_is_refused(tmp_path, delete_head, match):
    """Deleting the journal's head with a release used to pass (the check ran only when a head existed): the
    release would be drawn again while its charge is replayed as paid."""
    path = _run_child_killed_at(tmp_path, "noisy-ucb", 5)
    conn = _raw(path)
    conn.execute("DELETE FROM privtune_journal WHERE study = 's' AND key = 'observation:2'")
    if delete_head:
        conn.execute("DELETE FROM privtune_journal_head WHERE study = 's'")
    conn.close()
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(LedgerError, match=match):
        _search(path, "noisy-ucb", resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_a_study_a_callback_stopped_resumes_after_a_crash_in_its_final_release(tmp_path, monkeypatch):
    # A callback stopped noisy-ucb at iteration 2: the ledger holds two observations, the four not run (charged as
    # planned at the stop) and then the final release. A crash after that last charge used to make the resume refuse
    # the study ("configuration changed").
    from privtune.bo.noisy_ucb import NoisyUCB

    path = str(tmp_path / "study.sqlite")
    X_tr, y_tr, X_v, y_v = _data()
    calls = []
    real = NoisyUCB._release_score

    def crash_in_final_release(self, mech, value):
        calls.append(1)
        if len(calls) == 3:  # the final release: charged, not yet stored
            raise KeyboardInterrupt
        return real(self, mech, value)

    monkeypatch.setattr(NoisyUCB, "_release_score", crash_in_final_release)
    stop_at_2 = [lambda record: record.iteration == 2]
    with pytest.raises(KeyboardInterrupt):
        _search(path, "noisy-ucb", callbacks=stop_at_2).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    phases = [e.phase for e in SQLiteLedger(path, study="s").entries()]
    assert phases == ["observations"] * 2 + ["observations_not_run"] * 4 + ["score_release"]
    monkeypatch.setattr(NoisyUCB, "_release_score", real)
    s = _search(path, "noisy-ucb", callbacks=stop_at_2, resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert [e.phase for e in s.ledger_] == phases  # nothing charged again
    assert s.n_iter_ == 2
