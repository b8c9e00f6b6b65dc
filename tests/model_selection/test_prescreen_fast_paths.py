"""The screening's shortcuts (issue 41: ``privtune demo`` under 2 s) keep its kept set, scores and release exactly.

The expected values below were produced by the code before the shortcuts (commit 56c3ee1), with the same seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import privtune.model_selection._preflight as preflight
import privtune.model_selection._prescreen as prescreen
from privtune import PrivateSearchCV
from privtune.cli import _demo_split
from privtune.model_selection._seeding import FitSeeder, keeps_random_states, unset_random_states
from privtune.space import Real

#: (estimator, space, kept candidates, their public scores, released parameters, released score) at 56c3ee1.
CASES = {
    "svc": (
        lambda: make_pipeline(StandardScaler(), SVC(random_state=0)),
        {"svc__C": Real(0.1, 1000.0, log=True), "svc__gamma": Real(1e-5, 1.0, log=True)},
        [[4.233751582, 0.00736204107], [75.17567483, 0.000789398845], [413.8605998, 0.000105058546],
         [8.274215677, 0.0315620816], [20.33012124, 0.00171895358]],
        [0.9710144927536233, 0.9746376811594203, 0.9746376811594203, 0.9710144927536233, 0.9746376811594203],
        [413.8605998, 0.000105058546], 0.9725280602773031),
    # random_state left at None: every screening fit gets a seed derived from the candidate and the fold
    "sgd, derived seeds": (
        lambda: make_pipeline(StandardScaler(), SGDClassifier(max_iter=20, tol=None)),
        {"sgdclassifier__alpha": Real(1e-5, 1.0, log=True)},
        [[0.112680715], [0.032745696], [0.0463132614], [0.0261754342], [0.0508860028]],
        [0.9710144927536233, 0.9746376811594203, 0.9746376811594203, 0.9746376811594203, 0.9746376811594203],
        [0.0508860028], 0.9725280602773031),
}


def _search(case, monkeypatch):
    make, space, *_ = CASES[case]
    seen = {}
    screen = preflight.screen_on_public_rows

    def recording(plan, *args, **kwargs):
        kept = screen(plan, *args, **kwargs)
        seen["public"] = plan.method.kept_public_scores
        return kept

    monkeypatch.setattr(preflight, "screen_on_public_rows", recording)
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_val, _, y_tr, y_val, _ = _demo_split(X, y)
    search = PrivateSearchCV(make(), space, epsilon=1.0, delta=1e-6, n_iter=5, n_candidates=64, random_state=0)
    search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert search.method_ == "prescreen"
    return search, seen["public"]


@pytest.mark.parametrize("case", list(CASES))
def test_kept_set_scores_and_seeded_release_as_before(case, monkeypatch):
    *_, kept, public, best, score = CASES[case]
    search, got_public = _search(case, monkeypatch)
    assert [list(p.values()) for p in search.candidates_.params] == kept
    assert list(got_public) == public
    assert list(search.best_params_.values()) == best and search.best_score_ == score


@pytest.mark.parametrize("case", list(CASES))
def test_same_as_reading_every_fits_parameters(case, monkeypatch):
    """Reading the unset random_state names once gives what reading them at every fit gives."""
    fast, fast_public = _search(case, monkeypatch)
    monkeypatch.setattr(prescreen, "keeps_random_states", lambda base, params: False)
    slow, slow_public = _search(case, monkeypatch)
    assert fast.candidates_.params == slow.candidates_.params and fast_public == slow_public
    assert fast.best_params_ == slow.best_params_ and fast.best_score_ == slow.best_score_


def test_keeps_random_states_only_for_plain_values_of_existing_parameters():
    est = make_pipeline(StandardScaler(), SGDClassifier())
    base = est.get_params(deep=True)
    assert keeps_random_states(base, {"sgdclassifier__alpha": 0.1, "sgdclassifier__loss": "log_loss"})
    assert keeps_random_states(base, {"sgdclassifier__alpha": np.float64(0.1), "sgdclassifier__max_iter": 5})
    assert not keeps_random_states(base, {"sgdclassifier__random_state": 3})  # sets a seed itself
    assert not keeps_random_states(base, {"sgdclassifier": SGDClassifier(random_state=1)})  # replaces a step
    assert not keeps_random_states(base, {"standardscaler": "passthrough"})  # drops a step's parameters
    assert not keeps_random_states(base, {"steps": [("svc", SVC())]})  # the step list itself
    assert not keeps_random_states(base, {"no_such_parameter": 1.0})


def test_seed_with_known_names_sets_what_reading_them_sets():
    seeder = FitSeeder([5, 6, 7], active=True)
    a, b = make_pipeline(StandardScaler(), SGDClassifier()), make_pipeline(StandardScaler(), SGDClassifier())
    names = unset_random_states(a)
    assert names == ["sgdclassifier__random_state"]
    assert seeder.seed(a, 3, {"sgdclassifier__alpha": 0.1}, 1) == names
    assert seeder.seed(b, 3, {"sgdclassifier__alpha": 0.1}, 1, unset=names) == names
    assert a.get_params()["sgdclassifier__random_state"] == b.get_params()["sgdclassifier__random_state"] is not None
