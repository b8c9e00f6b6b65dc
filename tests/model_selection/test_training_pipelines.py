"""Pipelines with sensitive training rows (issue 38): data-independent or DP steps before a DP estimator.

Accepted: stateless transformers (Normalizer, FunctionTransformer), transformers fitted on public data and wrapped in
sklearn.frozen.FrozenEstimator, and DP transformers (privtune.preprocessing.DPStandardScaler), whose events compose
with the estimator's into the per-fit event the search charges up front. Anything else is refused naming the step.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler

from privtune import BudgetExceededError, InvalidParameterError, PrivateSearchCV
from privtune.accounting import Accountant, Budget, ComposedEvent, SelfComposedEvent, compose_events
from privtune.linear_model import DPLogisticRegression
from privtune.model_selection._training import (
    check_training_pipeline,
    fit_training,
    isolated_transform,
    per_fit_event,
    set_fit_accountant,
)
from privtune.preprocessing import DPStandardScaler
from privtune.space import Real
from privtune.svm import DPSVC


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(500.0, 100.0, size=(n, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) * 100 > 500).astype(int)
    k = int(n * 0.7)
    return X[:k], y[:k], X[k:], y[k:]


def _search(pipe, **kw):
    params = dict(sensitive="both", epsilon=2.0, n_iter=3, n_candidates=6, method="random", random_state=0)
    params.update(kw)
    last = pipe.steps[-1][0]
    return PrivateSearchCV(pipe, {f"{last}__C": Real(0.1, 10.0, log=True)}, **params)


def test_normalizer_before_dpsvc_is_accepted_and_charged_as_the_estimator():
    """The issue's own example: refused before ('use a DP estimator'), now a search whose spend is the plan."""
    X_tr, y_tr, X_v, y_v = _data()
    search = _search(make_pipeline(Normalizer(), DPSVC(epsilon=0.5, classes=[0, 1])))
    plan = search.privacy_plan(len(y_v))
    search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search.privacy_spent_["training"] == plan["training_total"]
    one = per_fit_event(DPSVC(epsilon=0.5, classes=[0, 1]))[0]
    assert search.privacy_spent_["training"] == compose_events([SelfComposedEvent(event=one, count=3)], delta=1e-6)
    assert search.best_estimator_.predict(X_v).shape == y_v.shape


@pytest.mark.parametrize("step, name", [
    (StandardScaler(), "standardscaler"),
    (ColumnTransformer([("s", StandardScaler(), [0])], remainder="passthrough"), "columntransformer"),
])
def test_a_step_that_reads_the_rows_is_refused_by_name_before_anything_is_spent(step, name):
    X_tr, y_tr, X_v, y_v = _data()
    acc = Accountant(Budget(2.0, 1e-6))
    search = _search(make_pipeline(step, DPLogisticRegression(epsilon=0.5, classes=[0, 1])), accountant=acc)
    with pytest.raises(InvalidParameterError, match=f"pipeline step '{name}' .*reads the training rows") as info:
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "DPStandardScaler" in str(info.value) and "FrozenEstimator" in str(info.value)
    assert len(acc.ledger) == 0


def test_the_last_step_must_be_a_dp_estimator():
    search = _search(make_pipeline(Normalizer(), DPLogisticRegression(epsilon=0.5)))  # no declared classes
    with pytest.raises(InvalidParameterError, match="classes=.*last step, 'dplogisticregression'"):
        search.privacy_plan(100)


def test_dp_scaler_and_estimator_compose_into_the_per_fit_event():
    X_tr, y_tr, X_v, y_v = _data()
    scaler = DPStandardScaler(bounds=(0.0, 1000.0), epsilon=0.4)
    est = DPLogisticRegression(epsilon=0.4, classes=[0, 1])
    pipe = make_pipeline(scaler, est)
    event, budget = per_fit_event(pipe)
    assert isinstance(event, ComposedEvent)
    assert event.events == (per_fit_event(scaler)[0], per_fit_event(est)[0])
    assert budget == compose_events([event], delta=2e-6)  # the steps' deltas add up
    search = _search(pipe, epsilon=3.0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search.privacy_spent_["training"] == compose_events([SelfComposedEvent(event=event, count=3)],
                                                               delta=1e-6)
    fitted = search.best_estimator_.steps[0][1]
    assert np.all(np.abs(fitted.mean_ - 500.0) < 200.0) and fitted.accountant is None  # the user's again (None)
    assert search.best_estimator_.score(X_v, y_v) > 0.7  # the features near 500 are usable once scaled


def test_the_plan_that_does_not_fit_names_both_steps():
    pipe = make_pipeline(DPStandardScaler(bounds=(0.0, 1000.0), epsilon=1.0),
                         DPLogisticRegression(epsilon=1.0, classes=[0, 1]))
    with pytest.raises(BudgetExceededError, match=r"DPLogisticRegression\(epsilon=1.0\) \(after "
                                                  r"DPStandardScaler\(epsilon=1.0\) in the pipeline\)") as info:
        _search(pipe).privacy_plan(100)
    figure = info.value.largest_fit_epsilon
    assert figure is not None
    pipe.set_params(dplogisticregression__epsilon=figure)
    _search(pipe).privacy_plan(100)  # the figure is accepted


def test_frozen_public_transformer_is_not_refitted():
    X_tr, y_tr, X_v, y_v = _data()
    public = StandardScaler().fit(_data(seed=9)[0])
    mean = public.mean_.copy()
    search = _search(make_pipeline(FrozenEstimator(public), DPLogisticRegression(epsilon=0.5, classes=[0, 1])))
    search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert np.array_equal(public.mean_, mean)
    assert search.best_estimator_.score(X_v, y_v) > 0.7


def test_an_unfitted_frozen_transformer_is_refused():
    search = _search(make_pipeline(FrozenEstimator(StandardScaler()), DPLogisticRegression(classes=[0, 1])))
    with pytest.raises(InvalidParameterError, match="unfitted StandardScaler"):
        search.privacy_plan(100)


def test_one_row_cannot_make_a_stateless_step_fail():
    """Normalizer refuses NaN and inf; in a plain Pipeline.fit one such sensitive row failed the whole fit (the
    candidate then scored the lower bound: a release that depends on one row). Here it is that row's entries only."""
    X_tr, y_tr, _, _ = _data()
    bad = X_tr.copy()
    bad[4, 1], bad[9, 0] = np.nan, np.inf
    with pytest.raises(ValueError):
        make_pipeline(Normalizer(), DPLogisticRegression(classes=[0, 1], random_state=0)).fit(bad, y_tr)
    out_bad = isolated_transform(Normalizer(), bad, 3)
    out_ok = isolated_transform(Normalizer(), X_tr, 3)
    assert np.all(np.isnan(out_bad[[4, 9]]))
    keep = np.setdiff1d(np.arange(len(X_tr)), [4, 9])
    assert np.array_equal(out_bad[keep], out_ok[keep])  # every other row bit for bit as without the bad rows
    pipe = make_pipeline(Normalizer(), DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=0))
    fit_training(pipe, bad, y_tr)
    assert np.all(np.isfinite(pipe.steps[-1][1].coef_))


def test_strings_in_a_sensitive_row_do_not_fail_the_dp_scaler():
    X_tr, y_tr, _, _ = _data()
    bad = X_tr.astype(object)
    bad[0, 0] = "text"
    pipe = make_pipeline(DPStandardScaler(bounds=(0.0, 1000.0), random_state=0),
                         DPLogisticRegression(classes=[0, 1], random_state=0))
    set_fit_accountant(pipe, Accountant(Budget(2.0, 1e-5)))
    fit_training(pipe, bad, y_tr)
    assert np.all(np.isfinite(pipe.steps[0][1].mean_))


def test_function_transformer_and_a_public_probe_failure():
    X_tr, y_tr, X_v, y_v = _data()
    ok = _search(make_pipeline(FunctionTransformer(np.log1p), DPLogisticRegression(epsilon=0.5, classes=[0, 1])))
    ok.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)

    def fails_on_zeros(X):
        if np.any(np.asarray(X) == 0):
            raise ValueError("zeros")
        return X

    acc = Accountant(Budget(2.0, 1e-6))
    bad = _search(make_pipeline(FunctionTransformer(fails_on_zeros), DPLogisticRegression(epsilon=0.5,
                                                                                           classes=[0, 1])),
                  accountant=acc)
    with pytest.raises(InvalidParameterError, match="fails on a public probe row"):
        bad.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(acc.ledger) == 0 and bad.privacy_plan(len(y_v))["training_total"] is not None


def test_the_steps_share_one_own_accountant_charged_the_plan():
    X_tr, y_tr, X_v, y_v = _data()
    cap = Accountant(Budget(5.0, 1e-5))
    pipe = make_pipeline(DPStandardScaler(bounds=(0.0, 1000.0), epsilon=0.3, accountant=cap),
                         DPLogisticRegression(epsilon=0.3, classes=[0, 1], accountant=cap))
    search = _search(pipe).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(cap.ledger) == 1  # the whole plan, in one entry
    assert cap.get_epsilon(1e-6) == pytest.approx(search.privacy_spent_["training"].epsilon)
    assert all(step.accountant is cap for _, step in search.best_estimator_.steps)
    two = make_pipeline(DPStandardScaler(bounds=(0.0, 1000.0), epsilon=0.3, accountant=cap),
                        DPLogisticRegression(epsilon=0.3, classes=[0, 1], accountant=Accountant(Budget(5.0, 1e-5))))
    with pytest.raises(InvalidParameterError, match="2 different accountants"):
        _search(two).privacy_plan(100)


def test_fit_parameters_go_to_dp_steps_only():
    X_tr = _data()[0]
    pipe = make_pipeline(Normalizer(), DPLogisticRegression(classes=[0, 1]))
    with pytest.raises(InvalidParameterError, match="'normalizer__copy' is not for a DP step"):
        check_training_pipeline(pipe, X_tr, {"normalizer__copy": True})
    with pytest.raises(InvalidParameterError, match="takes no parameter 'sample_weight'"):
        check_training_pipeline(pipe, X_tr, {"dplogisticregression__sample_weight": np.ones(len(X_tr))})


def test_a_space_over_the_scalers_epsilon_below_its_declaration_is_covered():
    X_tr, y_tr, X_v, y_v = _data()
    pipe = make_pipeline(DPStandardScaler(bounds=(0.0, 1000.0), epsilon=0.4),
                         DPLogisticRegression(epsilon=0.4, classes=[0, 1]))
    space = {"dpstandardscaler__epsilon": Real(0.1, 0.4), "dplogisticregression__C": Real(0.1, 10.0)}
    search = PrivateSearchCV(pipe, space, sensitive="both", epsilon=3.0, n_iter=3, n_candidates=6, method="random",
                             random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search.best_params_ is not None
    above = {"dpstandardscaler__epsilon": Real(0.4, 0.8)}
    with pytest.raises(InvalidParameterError, match="does not bound once composed"):
        PrivateSearchCV(pipe, above, sensitive="both", epsilon=3.0, n_iter=3, n_candidates=6, method="random",
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_public_training_rows_keep_the_ordinary_pipeline_fit():
    X_tr, y_tr, X_v, y_v = _data()
    search = _search(make_pipeline(StandardScaler(), DPLogisticRegression(classes=[0, 1])), sensitive="validation",
                     method="random").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search.best_estimator_.steps[0][1].mean_ == pytest.approx(X_tr.mean(axis=0))


def test_bounds_that_do_not_match_the_features_are_refused_before_any_charge():
    X_tr, y_tr, X_v, y_v = _data()
    acc = Accountant(Budget(3.0, 1e-6))
    pipe = make_pipeline(DPStandardScaler(bounds=([0.0, 0.0], [1000.0, 1000.0]), epsilon=0.3),  # 2 bounds, 3 columns
                         DPLogisticRegression(epsilon=0.3, classes=[0, 1]))
    with pytest.raises(InvalidParameterError, match="n_features=3"):
        _search(pipe, accountant=acc).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(acc.ledger) == 0
