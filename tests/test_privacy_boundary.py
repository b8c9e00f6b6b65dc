"""No raw private value reaches a log line, a callback, cv_results_, report_, a warning or an exception.

A scorer returns sentinel values (distinct digits per candidate) computed "on sensitive data"; every output
channel is captured and searched for the sentinels' digits. Each release method is covered.
"""

import json
import logging
import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import BudgetExceededError
from privtune.linear_model import DPLogisticRegression
from privtune.space import Real

SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}


def sentinel_scorer(est, X, y):
    """0.31415926... plus a per-candidate offset: distinctive digits that must never leak."""
    return 0.3141592653 + 1e-7 * (hash((round(float(est.C), 9), repr(getattr(est, "gamma", None)))) % 1000)


class _RecordingScorer:
    """The sentinel scorer, keeping every raw value it returned (module level: the fitted search pickles)."""

    def __init__(self, sign=1.0):
        self.raw, self.sign = [], sign

    def __call__(self, est, X, y):
        v = sentinel_scorer(est, X, y)
        self.raw.append(v)
        return self.sign * v


def _needles(values):
    out = set()
    for v in values:
        out.add(f"{v:.9f}"[2:11])  # nine significant digits
        out.add(repr(v))
    return out


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[:400], y[:400], X[400:], y[400:]


def _dump_sqlite(path):
    import sqlite3
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for t in tables for row in conn.execute(f"SELECT * FROM {t}"))


@pytest.mark.parametrize("method,extra", [("random", {}), ("noisy-ucb", {}), ("gp-ucb", {}),
                                          ("gp-ucb-exact", {"method_params": {"A": 0.1, "tau": 1.0}}),
                                          ("prescreen", {}),
                                          ("lipschitz", {"space": {"C": Real(1.0, 10.0, log=True)},
                                                         "score_bounds": (-1.0, 0.0),
                                                         "method_params": {"regularization": "C",
                                                                           "lambda_bounds": (1.0, 10.0),
                                                                           "lipschitz": 1.0, "loss_bound": 1.0}}),
                                          ("random", {"method_params": {"selection": "random-stopping"}}),
                                          ("random", {"cv": 3, "sensitive": "both", "space": {"C": Real(0.1, 10.0)},
                                                      "estimator": "dp"})],
                         ids=["random", "noisy-ucb", "gp-ucb", "gp-ucb-exact", "prescreen", "lipschitz",
                              "random-stopping", "random-cv"])
def test_sentinel_scores_never_leak(data, method, extra, caplog, capsys, tmp_path):
    X_tr, y_tr, X_val, y_val = data
    extra = dict(extra)
    space, bounds = extra.pop("space", SPACE), extra.pop("score_bounds", (0.0, 1.0))
    estimator = (DPLogisticRegression(classes=[0, 1], epsilon=0.02) if extra.pop("estimator", None) == "dp"
                 else SVC(random_state=0))
    scorer = _RecordingScorer(sign=-1.0 if bounds[1] <= 0 else 1.0)
    raw = scorer.raw
    seen = []
    caplog.set_level(logging.DEBUG, logger="privtune")
    store = tmp_path / "study.sqlite"
    cv = extra.pop("cv", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = PrivateSearchCV(estimator, space, method=method, scoring=scorer, score_bounds=bounds,
                            epsilon=1.0, n_iter=5, n_candidates=16, random_state=0, verbose=2,
                            callbacks=[lambda r: seen.append(repr(r) + json.dumps(r.to_dict()))],
                            cv=cv, **({} if cv else {"storage": str(store), "study_name": "boundary"}), **extra)
        if cv is None:
            s.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
        else:  # k folds of one (sensitive) table
            s.fit(np.vstack([X_tr, X_val]), np.concatenate([y_tr, y_val]))
    out = capsys.readouterr()
    haystack = "\n".join([
        caplog.text, out.out, out.err, "\n".join(seen), "\n".join(str(w.message) for w in caught),
        json.dumps(s.summary_, default=str), s.report_.to_json(), s.report_.to_markdown(),
        s.report_.to_html(), repr({k: np.asarray(v).tolist() for k, v in s.cv_results_.items()}),
        json.dumps(s.release_.to_dict(), default=str), repr(s.release_), str(pickle.dumps(s.release_)),
        _dump_sqlite(store) if store.exists() else "",
        str(pickle.dumps({k: v for k, v in vars(s).items() if k != "callbacks"})),
    ])
    assert raw, "the scorer was never called"
    leaked = [n for n in _needles(raw) if n in haystack]
    assert not leaked, f"raw scores leaked: {leaked[:3]}"


def test_exception_messages_carry_no_raw_value(data):
    X_tr, y_tr, X_val, y_val = data
    acc = Accountant(Budget(1.0, 1e-6))
    PrivateSearchCV(SVC(random_state=0), SPACE, scoring=sentinel_scorer, score_bounds=(0.0, 1.0), n_iter=3,
                    n_candidates=8, accountant=acc, random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    with pytest.raises(BudgetExceededError) as info:  # the budget is used up: a second search is refused
        PrivateSearchCV(SVC(random_state=0), SPACE, scoring=sentinel_scorer, score_bounds=(0.0, 1.0), n_iter=3,
                        n_candidates=8, accountant=acc, random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert "3141592" not in str(info.value)

    def failing(est, X, y):  # on the sensitive validation rows only (on public training rows it is refused up front)
        if any(np.array_equal(row, X_val[0]) for row in np.asarray(X)):
            raise RuntimeError(f"scorer failed at {sentinel_scorer(est, X, y)!r}")
        return sentinel_scorer(est, X, y)

    s = PrivateSearchCV(SVC(random_state=0), SPACE, scoring=failing, score_bounds=(0.0, 1.0), n_iter=3,
                        n_candidates=8, random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    # error_score="lower": the failure message is dropped
    assert "3141592" not in json.dumps(s.summary_, default=str) + s.report_.to_json()
