"""Issue 39's split of ``privtune/linear_model/_logistic.py``: the shared base moved to ``_margin``, old pickles load.

``tests/linear_model/data/estimators_before_issue39_split.pkl`` was written by the code before the split: a binary
and a three-class :class:`DPLogisticRegression`, a :class:`DPLinearSVC` and a :class:`DPSVC` (the three estimators
on the shared base ``_DPMarginClassifier``), each fitted on 60 rows, with their ``predict``, ``decision_function``
and (logistic) ``predict_proba`` on 8 test rows computed by that same code.
"""

from __future__ import annotations

import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

from privtune.linear_model import DPLogisticRegression, _logistic, _margin
from privtune.svm import DPSVC, DPLinearSVC

DATA = pathlib.Path(__file__).parent / "data" / "estimators_before_issue39_split.pkl"
KINDS = {"logistic": DPLogisticRegression, "logistic_multiclass": DPLogisticRegression, "linear_svc": DPLinearSVC,
         "svc": DPSVC}


@pytest.fixture(scope="module")
def stored():
    return pickle.loads(DATA.read_bytes())


def test_the_fixture_was_written_before_the_split():
    raw = DATA.read_bytes()
    assert b"privtune.linear_model._logistic" in raw and b"privtune.linear_model._margin" not in raw


@pytest.mark.parametrize("key", sorted(KINDS))
def test_an_estimator_pickled_before_the_split_loads_and_predicts_the_same(stored, key):
    est, expected, X = stored["estimators"][key], stored["expected"][key], stored["X_test"]
    assert type(est) is KINDS[key]
    assert isinstance(est, _margin._DPMarginClassifier)
    np.testing.assert_array_equal(est.predict(X), expected["predict"])
    np.testing.assert_array_equal(est.decision_function(X), expected["decision_function"])
    if "predict_proba" in expected:
        np.testing.assert_array_equal(est.predict_proba(X), expected["predict_proba"])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), expected["predict"])


def test_the_multiclass_fixture_has_three_classes(stored):
    assert list(stored["estimators"]["logistic_multiclass"].classes_) == ["a", "b", "c"]
    assert stored["expected"]["logistic_multiclass"]["decision_function"].shape == (8, 3)


def test_the_base_keeps_its_old_import_path_and_pickle_name():
    assert _logistic._DPMarginClassifier is _margin._DPMarginClassifier
    assert _logistic._ClippedLinearMixin is _margin._ClippedLinearMixin
    for name in ("LINE_SEARCH", "ESTIMATOR_SOLVERS", "_CLIPS", "_NOISES", "_MULTICLASS_LOSS",
                 "_LINE_SEARCH_PLACEHOLDER_N"):
        assert getattr(_logistic, name) is getattr(_margin, name), name
    # the GLOBAL opcode an earlier privtune wrote for the base class
    assert pickle.loads(b"cprivtune.linear_model._logistic\n_DPMarginClassifier\n.") is _margin._DPMarginClassifier


def test_the_estimators_load_in_a_fresh_interpreter():
    code = ("import pickle, sys; d = pickle.load(open(sys.argv[1], 'rb')); "
            "print(*(type(e).__module__ for e in d['estimators'].values()))")
    out = subprocess.run([sys.executable, "-c", code, str(DATA)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["privtune.linear_model._logistic", "privtune.linear_model._logistic",
                                  "privtune.svm._linear", "privtune.svm._rbf"]
