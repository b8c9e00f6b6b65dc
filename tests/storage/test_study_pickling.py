"""A fitted search with ``storage=`` round-trips through pickle and joblib (issue 12)."""

from __future__ import annotations

import pickle

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget, DetachedLedger, LaplaceEvent, SQLiteLedger
from privtune.exceptions import LedgerError
from privtune.space import Real


def _fitted(path):
    X, y = load_breast_cancer(return_X_y=True)
    search = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 100, log=True)}, epsilon=2.0, n_iter=5,
                             validation_size=0.3, storage=str(path), study_name="s", random_state=0)
    return search.fit(X, y), X


@pytest.mark.parametrize("dumps", ["pickle", "joblib"])
def test_fitted_search_with_storage_round_trips(tmp_path, dumps):
    search, X = _fitted(tmp_path / "study.sqlite")
    if dumps == "pickle":
        again = pickle.loads(pickle.dumps(search))
    else:
        joblib.dump(search, tmp_path / "s.joblib")
        again = joblib.load(tmp_path / "s.joblib")
    assert again.best_params_ == search.best_params_ and again.best_score_ == search.best_score_
    assert again.privacy_spent_ == search.privacy_spent_
    assert again.accountant_.spent == search.accountant_.spent
    assert [e.to_dict() for e in again.accountant_.ledger.entries()] == \
        [e.to_dict() for e in search.accountant_.ledger.entries()]
    np.testing.assert_array_equal(again.predict(X[:20]), search.predict(X[:20]))
    assert again.report_.to_dict() == search.report_.to_dict()
    # the copy reports; it cannot spend (its charges could not be made durable in the study)
    assert isinstance(again.accountant_.ledger, DetachedLedger)
    with pytest.raises(LedgerError, match="read-only snapshot of study 's'"):
        again.accountant_.ledger.append(LaplaceEvent(epsilon=0.01), phase="extra")
    assert again.accountant_.spent == search.accountant_.spent
    # the study itself is untouched and can be reopened by its path
    assert len(SQLiteLedger(tmp_path / "study.sqlite", study="s").entries()) == len(search.ledger_)


def test_accountant_on_a_sqlite_ledger_pickles_as_a_snapshot(tmp_path):
    acc = Accountant(Budget(1.0, 0.0), ledger=SQLiteLedger(tmp_path / "a.sqlite", study="x"))
    acc.spend(LaplaceEvent(epsilon=0.25), phase="p")
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.spent == acc.spent and copy.spent_by_phase() == acc.spent_by_phase()
    with pytest.raises(LedgerError):
        copy.spend(LaplaceEvent(epsilon=0.25), phase="p")
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(acc.ledger)  # the ledger alone still refuses: a connection cannot travel


def test_configuration_errors_are_found_before_the_study_is_opened(tmp_path):
    """Issue 12: noisy-ucb with delta = 0 and storage= used to leave a study that could never run."""
    X, y = load_breast_cancer(return_X_y=True)
    path = tmp_path / "s.sqlite"
    search = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 100, log=True)}, method="noisy-ucb", delta=0.0,
                             n_iter=3, validation_size=0.3, storage=str(path), study_name="s", random_state=0)
    from privtune.exceptions import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="delta"):
        search.fit(X, y)
    assert not path.exists()  # no study row, no file: the name is not poisoned
    search.set_params(delta=1e-6).fit(X, y)  # the same name runs once the configuration is right
    assert search.best_params_ is not None
