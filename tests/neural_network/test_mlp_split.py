"""Issue 39's split of ``privtune/neural_network/_mlp.py``: the public checks and plan moved to ``_mlp_plan``.

``tests/neural_network/data/mlp_before_issue39_split.pkl`` was written by the code before the split: a binary
(``hidden_layer_sizes=(4,)``) and a three-class (``(4, 3)``, tanh, string labels) :class:`DPMLPClassifier`, each
fitted on 60 rows with ``n_iter=20``, with their ``predict``, ``decision_function`` and ``predict_proba`` on 8 test
rows computed by that same code.
"""

from __future__ import annotations

import pathlib
import pickle

import numpy as np
import pytest

from privtune.exceptions import InvalidParameterError
from privtune.neural_network import DPMLPClassifier, _mlp, _mlp_plan

DATA = pathlib.Path(__file__).parent / "data" / "mlp_before_issue39_split.pkl"


@pytest.fixture(scope="module")
def stored():
    return pickle.loads(DATA.read_bytes())


def test_the_fixture_was_written_before_the_split():
    raw = DATA.read_bytes()
    assert b"privtune.neural_network._mlp" in raw and b"_mlp_plan" not in raw


@pytest.mark.parametrize("key", ["binary", "multiclass"])
def test_a_classifier_pickled_before_the_split_loads_and_predicts_the_same(stored, key):
    est, expected, X = stored["estimators"][key], stored["expected"][key], stored["X_test"]
    assert type(est) is DPMLPClassifier and isinstance(est, _mlp_plan._MLPPublicPlanMixin)
    for method in ("predict", "decision_function", "predict_proba"):
        np.testing.assert_array_equal(getattr(est, method)(X), expected[method])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict_proba(X), expected["predict_proba"])
    # the moved plan still answers for the unpickled estimator, from its hyperparameters only
    assert again._fit_privacy_event().epsilon == est.epsilon


def test_the_multiclass_fixture_has_three_classes(stored):
    assert list(stored["estimators"]["multiclass"].classes_) == ["a", "b", "c"]
    assert stored["expected"]["multiclass"]["decision_function"].shape == (8, 3)


def test_the_moved_names_keep_their_old_import_path_and_pickle_name():
    for name in ("_check_hidden", "_SAMPLINGS", "_MAX_LAYERS", "_MAX_WIDTH", "_MLPPublicPlanMixin"):
        assert getattr(_mlp, name) is getattr(_mlp_plan, name), name
    assert pickle.loads(b"cprivtune.neural_network._mlp\nDPMLPClassifier\n.") is DPMLPClassifier
    assert DPMLPClassifier.__module__ == "privtune.neural_network._mlp"


def test_the_mixin_methods_are_the_estimators():
    for name in ("_validate_params_public", "_fit_privacy_event", "_public_plan", "_check_fit_plan"):
        assert getattr(DPMLPClassifier, name) is getattr(_mlp_plan._MLPPublicPlanMixin, name), name
    with pytest.raises(InvalidParameterError, match="hidden_layer_sizes"):
        DPMLPClassifier(hidden_layer_sizes=(0,))._check_fit_plan(10, 2)
