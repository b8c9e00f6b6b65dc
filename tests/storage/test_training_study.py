"""A stored study with sensitive training rows: both roles' charges are durable, and the study is never resumed.

Rule 1: every charge is recorded durably before the data access it pays for. Before, ``storage=`` was refused
with ``sensitive="both"`` (and the CLI silently ran such a configuration without a study file), so the training
role's charges lived in memory only and running the same search again spent its budget again unnoticed.
"""

import pickle
import sqlite3

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from privtune import PrivateSearchCV
from privtune.accounting import SQLiteLedger
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.space import Real
from privtune.storage import StudyStorage
from privtune.storage._sqlite import TRAINING_LEDGER_SUFFIX

SPACE = {"C": Real(0.01, 100.0, log=True)}


class LedgerCheckingDPLR(DPLogisticRegression):
    """Counts its fits and records, at each fit, how many charges the study file's two ledgers hold."""

    fits: list[tuple[int, int]] = []
    path: str = ""

    def fit(self, X, y, **kw):
        conn = sqlite3.connect(type(self).path)
        try:
            counts = dict(conn.execute("SELECT study, COUNT(*) FROM privtune_ledger GROUP BY study").fetchall())
        finally:
            conn.close()
        type(self).fits.append((counts.get("s", 0), counts.get("s" + TRAINING_LEDGER_SUFFIX, 0)))
        return super().fit(X, y, **kw)


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def _search(path, *, epsilon=0.2, name="s", **kw):
    return PrivateSearchCV(LedgerCheckingDPLR(epsilon=epsilon, classes=[0, 1]), SPACE, sensitive="both",
                           epsilon=1.0, n_iter=4, n_candidates=8, validation_size=0.3, storage=path,
                           study_name=name, **kw)


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "both.sqlite")
    LedgerCheckingDPLR.fits = []
    LedgerCheckingDPLR.path = path
    return path


def _lengths(path, name="s"):
    return tuple(len(SQLiteLedger(path, study=study).entries()) for study in (name, name + TRAINING_LEDGER_SUFFIX))


def test_training_charges_are_in_the_study_file_before_the_first_fit(store):
    X, y = _data()
    search = _search(store).fit(X, y)
    assert LedgerCheckingDPLR.fits, "the search fitted no candidate"
    # every fit ran after the training plan was committed to the file (the validation role's charges come later)
    assert all(n_training >= 1 for _, n_training in LedgerCheckingDPLR.fits)
    n_val, n_train = _lengths(store)
    assert n_train >= 1 and n_val >= 1
    assert n_val + n_train == len(search.ledger_)
    assert [e.role for e in SQLiteLedger(store, study="s" + TRAINING_LEDGER_SUFFIX).entries()] == ["training"] * n_train
    assert StudyStorage(store).status("s") == "complete"
    assert search.study_ == {"storage": store, "study_name": "s"}
    report = search.report_.to_dict() if hasattr(search.report_, "to_dict") else search.report_
    assert "every training set and every validation set" in report["guarantee"]["statement"]
    copy = pickle.loads(pickle.dumps(search))  # the closed study's ledgers travel with the fitted search
    assert copy.training_accountant_.spent == search.training_accountant_.spent
    assert list(copy.predict(X[:5])) == list(search.predict(X[:5]))


@pytest.mark.parametrize("random_state", [None, 0])
def test_a_study_that_holds_a_charge_is_refused_before_any_fit_or_charge(store, random_state):
    X, y = _data()
    _search(store, random_state=random_state).fit(X, y)
    before, n_fits = _lengths(store), len(LedgerCheckingDPLR.fits)
    with pytest.raises(InvalidParameterError, match="not resumed or reloaded") as info:
        _search(store, random_state=random_state).fit(X, y)
    assert "holds 3 charge(s)" in str(info.value) and "new study" in str(info.value)
    assert _lengths(store) == before and len(LedgerCheckingDPLR.fits) == n_fits
    # the refusal released the study's writer lock; another study in the same file runs
    _search(store, name="t", random_state=random_state).fit(X, y)
    assert _lengths(store, "t")[1] >= 1 and _lengths(store) == before


def test_a_study_refused_before_its_first_charge_is_opened_again_not_refused(store):
    """An unaffordable training plan is refused after the study row exists but before any charge: the same
    configuration opens that empty study again with resume=True (it is refused for its plan, not as a spent
    study)."""
    X, y = _data()
    for again in (False, True):
        with pytest.raises(BudgetExceededError):  # four fits at 0.9 cost more than the training budget of 1
            _search(store, epsilon=0.9, resume=again).fit(X, y)
        assert _lengths(store) == (0, 0) and not LedgerCheckingDPLR.fits
    assert StudyStorage(store).status("s") == "running"


def test_cross_validated_study_keeps_each_role_in_its_own_ledger(store):
    X, y = _data()
    search = PrivateSearchCV(LedgerCheckingDPLR(epsilon=0.05, classes=[0, 1]), SPACE, sensitive="both", cv=3,
                             epsilon=1.0, n_iter=3, n_candidates=8, storage=store, study_name="s").fit(X, y)
    n_val, n_train = _lengths(store)
    assert n_val >= 1 and n_train >= 1 and n_val + n_train == len(search.ledger_)
    with pytest.raises(InvalidParameterError, match="not resumed or reloaded"):
        PrivateSearchCV(LedgerCheckingDPLR(epsilon=0.05, classes=[0, 1]), SPACE, sensitive="both", cv=3,
                        epsilon=1.0, n_iter=3, n_candidates=8, storage=store, study_name="s").fit(X, y)


def test_a_study_name_cannot_take_the_training_ledgers_suffix(store):
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="may not contain '::'"):
        _search(store, name="s" + TRAINING_LEDGER_SUFFIX).fit(X, y)
    assert _lengths(store) == (0, 0) and not LedgerCheckingDPLR.fits
