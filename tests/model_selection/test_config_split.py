"""Issue 39's split of ``privtune/model_selection/_config.py``: the release method's set-up moved to ``_method_setup``.

``_MethodSetupMixin`` (``_make_method``, ``_exact_gp_loop``, ``_check_epsilon_domain``, ``_release_refusal``,
``_check_random_coverage``, ``_method_label``) is a base of ``_SearchConfigMixin``, so
:class:`PrivateSearchCV` resolves every method as before. ``tests/model_selection/data/
search_before_issue39_config_split.pkl`` was written by the code before the split: a ``method="random"`` search of a
``LogisticRegression``'s ``C`` (80 training, 40 validation rows, ``n_iter=3``, seeded), with its released
parameters and score, its ``predict`` on 8 test rows and its ``privacy_plan(40)``, computed by that same code.
"""

from __future__ import annotations

import pathlib
import pickle

import numpy as np
import pytest

from privtune import PrivateSearchCV
from privtune.exceptions import InvalidParameterError
from privtune.model_selection import _config, _method_setup

DATA = pathlib.Path(__file__).parent / "data" / "search_before_issue39_config_split.pkl"
MOVED_METHODS = ("_make_method", "_exact_gp_loop", "_check_epsilon_domain", "_release_refusal",
                 "_check_random_coverage", "_method_label")


@pytest.fixture(scope="module")
def stored():
    return pickle.loads(DATA.read_bytes())


def test_the_fixture_was_written_before_the_split():
    assert b"_method_setup" not in DATA.read_bytes()


def test_a_search_pickled_before_the_split_loads_and_answers_the_same(stored):
    search, X = stored["search"], stored["X_test"]
    assert type(search) is PrivateSearchCV
    assert search.best_params_ == stored["best_params"] and search.best_score_ == stored["best_score"]
    np.testing.assert_array_equal(search.predict(X), stored["predict"])
    plan = search.privacy_plan(40)  # the moved _make_method and checks, on the unpickled configuration
    assert plan["total"].epsilon == stored["plan_total"] and dict(plan["noise"]) == stored["plan_noise"]
    again = pickle.loads(pickle.dumps(search))
    np.testing.assert_array_equal(again.predict(X), stored["predict"])


def test_the_moved_methods_are_the_searchs():
    for name in MOVED_METHODS:
        assert getattr(PrivateSearchCV, name) is getattr(_method_setup._MethodSetupMixin, name), name
        assert name not in vars(_config._SearchConfigMixin), name
    assert issubclass(_config._SearchConfigMixin, _method_setup._MethodSetupMixin)


def test_the_moved_names_keep_their_old_import_path():
    for name in ("_GP_LOOP_METHODS", "_METHOD_PARAMS_WITH_SENSITIVITY", "_max_distinct_candidates", "BoundedScorer",
                 "BudgetExceededError", "SelfComposedEvent"):
        assert getattr(_config, name) is getattr(_method_setup, name), name
    assert _config._GP_LOOP_METHODS == ("gp-ucb", "gp-ucb-exact", "noisy-ucb")
    assert _config._METHOD_PARAMS_WITH_SENSITIVITY == ("noisy-ucb", "random", "prescreen")


def test_a_moved_check_still_refuses_before_any_data(stored):
    search = pickle.loads(pickle.dumps(stored["search"]))
    search.set_params(n_iter=50, n_candidates=8)  # random scores distinct candidates: 8 cannot hold 50
    with pytest.raises(InvalidParameterError, match="n_iter=50 distinct candidates"):
        search.privacy_plan(40)
