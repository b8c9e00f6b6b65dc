"""The estimator's own ``accountant`` when the training rows are public (``sensitive="validation"``).

Each fit used to charge the estimator's accountant itself. In worker processes (``n_jobs=2``) a fit got a read-only
copy of an in-memory accountant and raised ``LedgerError``, so a parallel search failed where the serial one ran;
and serially the accountant's ledger counted the fits, which with random stopping is the secret number of runs K
(its bound for the validation rows needs K secret). With public training rows a fit reads no sensitive row: the
search now charges the estimator's accountant (nested ones too) nothing, every fit runs without it, serial and
parallel alike, ``best_estimator_`` carries it again, and a ``PrivtuneWarning`` says so before anything is read.
"""

import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from privtune import InvalidParameterError, PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import PrivtuneWarning
from privtune.linear_model import DPLogisticRegression
from privtune.space import Categorical, Real

SPACE = {"C": Real(0.1, 10.0, log=True)}


def _data(n=200):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] > 0).astype(int)
    k = (3 * n) // 4
    return X[:k], y[:k], X[k:], y[k:]


def _fit(search):
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.warns(PrivtuneWarning, match="is not charged"):
        return search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


@pytest.mark.parametrize("method", ["random", "prescreen"])
def test_parallel_and_serial_searches_agree_and_charge_the_estimators_accountant_nothing(method):
    results = []
    for n_jobs in (1, 2):
        cap = Accountant(Budget(5.0, 1e-5))
        est = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=cap)
        s = _fit(PrivateSearchCV(est, SPACE, method=method, n_iter=3, n_candidates=8, epsilon=1.0,
                                 random_state=0, n_jobs=n_jobs,
                                 method_params={"screen_size": 8} if method == "prescreen" else None))
        assert cap.entries == ()  # the fits read public rows only: nothing to charge
        assert s.best_estimator_.accountant is cap  # the user's accountant, given back
        assert s.best_estimator_.accountant_ is not cap  # the refit charged a throw-away accountant of its own
        assert est.accountant is cap  # the user's estimator is untouched
        results.append(s)
    serial, parallel = results
    assert serial.release_.to_dict() == parallel.release_.to_dict()
    assert np.array_equal(serial.best_estimator_.coef_, parallel.best_estimator_.coef_)


def test_a_nested_accountant_is_left_alone_too():
    cap = Accountant(Budget(5.0, 1e-5))
    est = make_pipeline(StandardScaler(), DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=cap))
    s = _fit(PrivateSearchCV(est, {"dplogisticregression__C": Real(0.1, 10.0, log=True)}, method="random",
                             n_iter=3, n_candidates=8, random_state=0, n_jobs=2))
    assert cap.entries == ()
    assert s.best_estimator_[-1].accountant is cap


def test_random_stopping_leaves_no_count_of_its_runs_in_the_estimators_accountant():
    """Serially each run's fit charged the accountant: its ledger held K + 1 entries (K the secret number of runs,
    e.g. 1, 2, 2, 3 over four seeds)."""
    for seed in range(4):
        cap = Accountant(Budget(100.0, 1e-5))
        est = DPLogisticRegression(epsilon=0.5, classes=[0, 1], accountant=cap)
        _fit(PrivateSearchCV(est, SPACE, method="random", n_iter=3, n_candidates=8, delta=1e-9,
                             random_state=seed, method_params={"selection": "random-stopping"}))
        assert cap.entries == ()


def test_no_warning_without_an_accountant_and_none_with_sensitive_training_rows():
    X_tr, y_tr, X_v, y_v = _data()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), SPACE, method="random", n_iter=2,
                        n_candidates=4, random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        cap = Accountant(Budget(5.0, 1e-5))
        PrivateSearchCV(DPLogisticRegression(epsilon=0.2, classes=[0, 1], accountant=cap), SPACE,
                        method="random", sensitive="both", n_iter=2, n_candidates=4,
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert not [w for w in seen if "is not charged" in str(w.message)]
    assert len(cap.entries) == 1  # the training plan, as with sensitive rows (unchanged)


def test_a_search_space_over_the_accountant_is_refused_with_public_training_rows_too():
    X_tr, y_tr, X_v, y_v = _data()
    a, b = Accountant(Budget(5.0, 1e-5)), Accountant(Budget(5.0, 1e-5))
    with pytest.raises(InvalidParameterError, match="accountant"):
        PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), {"accountant": Categorical([a, b])},
                        method="random", n_iter=2, n_candidates=2, random_state=0,
                        n_jobs=2).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert a.entries == () and b.entries == ()
