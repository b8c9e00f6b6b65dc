"""A seeded search is exactly reproducible, fits included; an unseeded one never seeds a DP fit on sensitive rows.

Before: the search passed no seed to the estimators it fitted, so with ``random_state=0`` on the search and a DP
trainer left at ``random_state=None`` (its default), two identical runs released different scores and models under a
"seeded (reproducible)" label; and a trainer seeded by the user inside an unseeded search had its noise reproducible
from that seed under a "secure" label (DESIGN rule 5).
"""

import json

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.model_selection._seeding import CANDIDATE, FitSeeder, explicit_random_states
from privtune.space import Integer, Real


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


SPACE = {"C": Real(0.1, 10.0, log=True)}


@pytest.fixture
def seen(monkeypatch):
    """The random_state each DPLogisticRegression fit starts with, in order."""
    out = []
    real_fit = DPLogisticRegression.fit

    def spy(self, *args, **kwargs):
        out.append(self.random_state)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(DPLogisticRegression, "fit", spy)
    return out


def _outputs(search):
    est = search.best_estimator_
    return (json.dumps(search.best_params_), repr(search.release_.score), est.coef_.tobytes(),
            est.intercept_.tobytes())


def _dp_search(random_state, *, estimator=None, **kw):
    est = estimator if estimator is not None else DPLogisticRegression(epsilon=0.5, classes=[0, 1])
    params = dict(epsilon=2.0, delta=1e-6, n_iter=4, n_candidates=8, sensitive="both", random_state=random_state)
    params.update(kw)
    return PrivateSearchCV(est, SPACE, **params)


@pytest.mark.parametrize("kw", [
    dict(validation_size=0.3),  # the selected candidate's own fit is kept (no refit)
    dict(cv=2, epsilon=6.0),  # fold fits and a refit
    dict(validation_size=0.3, method_params={"selection": "random-stopping"}),  # runs counted in this process
    dict(cv=2, epsilon=6.0, n_jobs=2),  # fits in threads sharing the ticket book: seeds by candidate and fold
], ids=["split", "cv", "random-stopping", "cv-threads"])
def test_a_seeded_search_over_dp_fits_on_sensitive_rows_is_exactly_reproducible(kw):
    X, y = _data()
    first = _dp_search(3, **kw).fit(X, y)
    second = _dp_search(3, **kw).fit(X, y)
    assert _outputs(first) == _outputs(second)
    assert first.seeded_
    assert first.best_estimator_.random_state is None  # the derived seed is not left on the returned model
    assert _outputs(_dp_search(4, **kw).fit(X, y)) != _outputs(first)  # the seed matters


def test_an_unseeded_search_leaves_every_dp_fit_to_the_secure_source(seen):
    X, y = _data()
    search = _dp_search(None, validation_size=0.3).fit(X, y)
    assert seen and all(r is None for r in seen)  # every fit drew secure noise
    assert not search.seeded_
    seen.clear()
    _dp_search(3, validation_size=0.3).fit(X, y)
    assert seen and all(isinstance(r, int) for r in seen) and len(set(seen)) == len(seen)


def test_a_returned_model_carries_no_derived_seed_even_after_a_refit():
    """Public training rows (seeded from the stored seeds even unseeded): best_estimator_, refitted, keeps the
    user's random_state=None, so that a clone of it fitted later on sensitive rows draws secure noise."""
    X, y = _data()
    for rs in (None, 3):
        search = PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), SPACE, epsilon=2.0, n_iter=3,
                                 n_candidates=8, validation_size=0.3, random_state=rs).fit(X, y)
        assert search.best_estimator_.random_state is None


def test_the_users_own_seed_is_never_replaced():
    X, y = _data()
    search = _dp_search(3, estimator=DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=11),
                        validation_size=0.3).fit(X, y)
    assert search.best_estimator_.random_state == 11


@pytest.mark.parametrize("how", ["estimator", "space"])
def test_an_unseeded_search_refuses_a_seeded_dp_fit_on_sensitive_rows_before_anything(how):
    X, y = _data()
    acc = Accountant(Budget(2.0, 1e-6))
    if how == "estimator":
        search = _dp_search(None, estimator=DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=0),
                            validation_size=0.3, accountant=acc)
    else:
        search = PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]),
                                 {"C": Real(0.1, 10.0, log=True), "random_state": Integer(0, 9)}, epsilon=2.0,
                                 delta=1e-6, n_iter=4, sensitive="both", validation_size=0.3, accountant=acc)
    with pytest.raises(InvalidParameterError, match="random_state.*secure"):
        search.fit(X, y)
    assert len(acc.ledger) == 0
    with pytest.raises(InvalidParameterError, match="random_state"):
        search.privacy_plan(n_validation=72)


def test_public_training_fits_are_seeded_so_a_seeded_search_is_reproducible_with_processes():
    """sensitive='validation' over a forest left at random_state=None: the same release with one job or two
    worker processes (the seeds depend on the fit, never on which worker runs it)."""
    X, y = _data()
    outs = []
    for n_jobs in (1, 2):
        s = PrivateSearchCV(RandomForestClassifier(n_estimators=5), {"max_depth": Integer(1, 6)}, epsilon=2.0,
                            n_iter=4, n_candidates=6, validation_size=0.3, n_jobs=n_jobs, random_state=5).fit(X, y)
        outs.append((s.best_params_, repr(s.release_.score),
                     [t.tree_.threshold.tobytes() for t in s.best_estimator_.estimators_]))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("random_state", [None, 2])
def test_prescreen_screening_fits_are_seeded(seen, random_state):
    """Every fit on the public training rows, the screening's k-fold fits included, gets a derived seed, in an
    unseeded search too; a seeded search then releases the same thing twice."""
    X, y = _data()

    def run():
        return PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), SPACE, method="prescreen",
                               epsilon=1.0, n_iter=4, n_candidates=16, validation_size=0.3,
                               random_state=random_state).fit(X, y)

    first = run()
    screen = first.release_.diagnostics["prescreen"]
    assert len(seen) >= screen["screened"] * screen["cv_folds"] > 4 + 1  # the screening's fits were seen
    assert all(isinstance(r, int) for r in seen)
    if random_state is not None:
        assert _outputs(first) == _outputs(run())


def test_fit_seeds_depend_on_the_fit_and_only_fill_unset_parameters():
    from sklearn.pipeline import make_pipeline

    def pipe():
        return make_pipeline(RandomForestClassifier(random_state=None), RandomForestClassifier(random_state=4))

    seeder = FitSeeder([1, 2], active=True)
    a = pipe()
    names = seeder.seed(a, CANDIDATE, {"x": 1}, fold=0)
    assert names == ["randomforestclassifier-1__random_state"]
    assert a.get_params()["randomforestclassifier-2__random_state"] == 4
    first = a.get_params()["randomforestclassifier-1__random_state"]
    assert isinstance(first, int)
    again = pipe()
    seeder.seed(again, CANDIDATE, {"x": 1}, fold=0)
    assert again.get_params()["randomforestclassifier-1__random_state"] == first
    FitSeeder.unseed(a, names)
    assert a.get_params()["randomforestclassifier-1__random_state"] is None
    assert a.get_params()["randomforestclassifier-2__random_state"] == 4

    def one(params, fold, run):
        est = RandomForestClassifier()
        seeder.seed(est, CANDIDATE, params, fold=fold, run=run)
        return est.random_state

    other = [one(p, f, r) for p, f, r in [({"x": 1}, 0, 0), ({"x": 2}, 0, 0), ({"x": 1}, 1, 0), ({"x": 1}, 0, 1)]]
    assert len(set(other)) == 4
    assert FitSeeder([1, 2], active=False).seed(RandomForestClassifier(), CANDIDATE, {}) == []
    assert explicit_random_states(pipe()) == ["randomforestclassifier-2__random_state"]
    assert explicit_random_states(RandomForestClassifier(), ["random_state", "max_depth"]) == ["random_state"]


@pytest.mark.parametrize("method", ["gp-ucb", "lipschitz"])
def test_a_raw_score_method_fits_each_candidate_with_one_seed_however_often_it_visits_it(method):
    """The run number in a fit's seed counted visits to a candidate, which for the raw-score methods follow the raw
    scores: lipschitz's final batch fitted a candidate visited once with another seed than one never visited, so each
    candidate's utility came from different models on neighbouring validation sets (found by an audit)."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    seeds: dict[float, set] = {}

    class Recorder(ClassifierMixin, BaseEstimator):
        def __init__(self, alpha=1.0, random_state=None):
            self.alpha = alpha
            self.random_state = random_state

        def fit(self, X, y):
            seeds.setdefault(round(float(self.alpha), 9), set()).add(self.random_state)
            self.classes_ = np.array([0, 1])
            return self

        def predict(self, X):
            return (np.asarray(X)[:, 0] > 0).astype(int)

        def predict_proba(self, X):
            p = 1.0 / (1.0 + np.exp(-3.0 * np.asarray(X)[:, 0]))
            return np.column_stack([1.0 - p, p])

    X, y = _data()
    space = {"alpha": Real(0.5, 2.0)}
    kw = {}
    if method == "lipschitz":
        kw = dict(scoring=lambda est, X, y: -float(np.mean(est.predict(X) != y)), score_bounds=(-1.0, 0.0),
                  method_params=dict(regularization="alpha", lambda_bounds=(0.5, 2.0), lipschitz=0.25,
                                     loss_bound=1.0))
    s = PrivateSearchCV(Recorder(), space, method=method, n_iter=6, n_candidates=3, epsilon=1.0, delta=1e-6,
                        random_state=0, refit=False, **kw)
    s.fit(X[:120], y[:120], X_val=X[120:], y_val=y[120:])
    assert sum(len(v) for v in seeds.values()) == len(seeds)  # one seed per candidate
    assert any(isinstance(v, int) for ss in seeds.values() for v in ss)  # the fits were seeded
