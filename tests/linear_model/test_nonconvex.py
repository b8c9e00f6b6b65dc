"""Tests of privtune.linear_model.DPNonConvexClassifier (seed 004's second-order solvers as an sklearn estimator)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from privtune import BudgetExceededError, InvalidParameterError, PrivateSearchCV
from privtune.accounting import Accountant, Budget, EpsilonDeltaEvent, GaussianEvent, compose_events
from privtune.linear_model import DPNonConvexClassifier
from privtune.model_selection._training import PrepaidFitAccountant, per_fit_event
from privtune.optim.second_order import SecondOrderResult, second_order_privacy_event
from privtune.space import Categorical


def _public_prep(X, y, seed=0):
    """Public preprocessing of the tests: standardise, clip rows to norm 1, split."""
    X = StandardScaler().fit_transform(X)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


@pytest.fixture(scope="module")
def cancer():
    return _public_prep(*load_breast_cancer(return_X_y=True))


@pytest.fixture(scope="module")
def synthetic():
    X, y = make_classification(n_samples=3000, n_features=10, n_informative=5, random_state=0)
    return _public_prep(X, y)


def _blobs(seed: int, n: int = 600, d: int = 3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, d)) * 0.2 + np.where(y[:, None] == 1, 0.4, -0.4) / math.sqrt(d)
    return X, y


def _median_accuracy(data, eps, seeds=5, **kw):
    Xtr, Xte, ytr, yte = data
    return float(np.median([DPNonConvexClassifier(epsilon=eps, classes=[0, 1], random_state=s, **kw)
                            .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)]))


# ----------------------------------------------------------------------------- learning
def test_issue_target_breast_cancer_085_at_epsilon_1(cancer):
    """Issue 13's target with the defaults. Measured: median test accuracy 0.877 over seeds 0-4
    (0.90 / 0.84 / 0.83 / 0.88 / 0.91; 398 training rows, epsilon 1, delta 1e-6); 0.901 over seeds 0-6; the
    majority class is 0.627. With the previous defaults (tolerance 0.07, max_iter 2000) it was 0.830."""
    assert _median_accuracy(cancer, 1.0) >= 0.85


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cancer", "synthetic"])
def test_accuracy_does_not_fall_as_epsilon_grows(name, request):
    """Medians over 7 seeds at epsilon 0.1, 1, 10 (measured: breast cancer 0.78 / 0.90 / 0.93, make_classification
    0.66 / 0.87 / 0.88), within 0.03 of noise."""
    data = request.getfixturevalue(name)
    accs = [_median_accuracy(data, eps, seeds=7) for eps in (0.1, 1.0, 10.0)]
    assert accs[1] >= accs[0] - 0.03 and accs[2] >= accs[1] - 0.03, accs
    assert accs[2] > 0.8, accs


def test_exposes_certified_and_the_solver_result():
    X, y = _blobs(0, n=3000)
    clf = DPNonConvexClassifier(epsilon=10.0, tolerance=0.1, classes=[0, 1], random_state=0).fit(X, y)
    res = clf.optimize_result_
    assert isinstance(res, SecondOrderResult) and isinstance(clf.certified_, bool)
    assert clf.certified_ == res.certified and clf.n_iter_ == res.n_iter
    assert clf.certified_ == (res.history.kind[-1] == "stop")
    assert clf.coef_.shape == (1, 3) and clf.intercept_.shape == (1,) and clf.n_features_in_ == 3
    proba = clf.predict_proba(X)
    assert proba.shape == (3000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(clf.predict(X), clf.classes_[(proba[:, 1] > 0.5).astype(int)])
    assert np.allclose(np.exp(clf.predict_log_proba(X)), proba)


def test_certifies_on_an_easy_problem_with_a_large_budget():
    """A coarse tolerance on well-separated blobs with epsilon 10: the run stops at a certified point that learned."""
    X, y = _blobs(1, n=4000)
    clf = DPNonConvexClassifier(epsilon=10.0, tolerance=0.05, loss="nonconvex_logistic", classes=[0, 1],
                                random_state=0).fit(X, y)
    assert clf.certified_ and clf.score(X, y) > 0.9


# ----------------------------------------------------------------------------- privacy plumbing
@pytest.mark.parametrize("solver", ["2opt-ls", "opt", "2opt", "opt-ls",
                                    pytest.param("2opt-b", marks=pytest.mark.slow)])  # 2opt-b: ~9 s calibration
def test_privacy_spent_fits_inside_the_declared_event_for_every_n(solver):
    X, y = _blobs(2, n=1200)
    est = DPNonConvexClassifier(epsilon=0.7, solver=solver, classes=[0, 1], random_state=0, max_iter=200)
    declared = est._fit_privacy_event()
    assert isinstance(declared, EpsilonDeltaEvent if solver.endswith("-b") else GaussianEvent)
    one = compose_events([declared], delta=1e-6)
    assert one.epsilon <= 0.7
    for n in (200, 1200):
        _, budget = per_fit_event(est)
        est.set_params(accountant=PrepaidFitAccountant(budget)).fit(X[:n], y[:n])  # refused if it charged more
        charged = est.privacy_event_
        assert charged == second_order_privacy_event(n, 4, variant=solver, epsilon=0.7, delta=1e-6, max_iter=200,
                                                     tolerance=0.01, data_norm=math.hypot(1.0, 0.5))
        assert est.privacy_spent_.epsilon <= one.epsilon * (1 + 1e-12) and est.privacy_spent_.delta == 1e-6
        # five declared fits bound five real ones (the search composes the declared event)
        five_real = compose_events([charged] * 5, delta=1e-6).epsilon
        assert five_real <= compose_events([declared] * 5, delta=1e-6).epsilon * (1 + 1e-12)
    if not solver.endswith("-b"):  # full batch: the same RDP curve whatever n, up to the declared margin
        assert est.privacy_spent_.epsilon == pytest.approx(one.epsilon, rel=1e-6)


def test_fit_charges_its_own_or_a_given_accountant_once_before_reading():
    X, y = _blobs(3)
    clf = DPNonConvexClassifier(epsilon=0.5, classes=[0, 1], random_state=0).fit(X, y)
    assert len(clf.accountant_.entries) == 1 and clf.accountant_.entries[0].role == "training"
    assert clf.accountant_.entries[0].event == clf.privacy_event_
    assert 0.49 < clf.privacy_spent_.epsilon <= 0.5
    acc = Accountant(Budget(2.0, 1e-5))
    DPNonConvexClassifier(epsilon=0.5, accountant=acc, classes=[0, 1], random_state=0).fit(X, y)
    DPNonConvexClassifier(epsilon=0.5, accountant=acc, classes=[0, 1], random_state=1).fit(X, y)
    assert len(acc.entries) == 2 and acc.entries[0].phase == "DPNonConvexClassifier"


class _UntouchableX:
    """Array stand-in whose shape is public but whose values must not be read (it counts the attempts)."""

    shape = (500, 2)

    def __init__(self):
        self.reads = 0

    def __array__(self, *args, **kwargs):
        self.reads += 1
        raise AssertionError("the data was read")


def test_over_budget_accountant_refuses_before_any_value_is_read():
    acc = Accountant(Budget(0.5, 1e-6))
    X = _UntouchableX()
    clf = DPNonConvexClassifier(epsilon=1.0, classes=[0, 1], accountant=acc)
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        clf.fit(X, np.zeros(500))
    assert X.reads == 0 and len(acc.entries) == 0 and acc.spent.epsilon == 0.0 and not hasattr(clf, "coef_")


def test_untouchable_mock_really_records_a_read():  # the control for the test above
    acc = Accountant(Budget(1.0, 1e-6))
    X = _UntouchableX()
    with pytest.raises(InvalidParameterError, match="values are not shown"):
        DPNonConvexClassifier(epsilon=1.0, classes=[0, 1], accountant=acc).fit(X, np.zeros(500))
    assert X.reads > 0 and len(acc.entries) == 1  # charged first, then the read failed


@pytest.mark.parametrize(("params", "match"), [
    ({"epsilon": 0.0}, r"'epsilon' parameter of DPNonConvexClassifier"),
    ({"delta": 0.0}, r"'delta'"),
    ({"loss": "hinge"}, r"'loss'"),
    ({"solver": "lbfgs"}, r"'solver'"),
    ({"tolerance": -0.1}, r"'tolerance'"),
    ({"data_norm": 0.0}, r"'data_norm'"),
    ({"intercept_scaling": 0.0}, r"'intercept_scaling'"),
    ({"l2": -1.0}, r"'l2'"),
    ({"fit_intercept": "yes"}, r"'fit_intercept'"),
    ({"batch_size": 10}, r"'batch_size'.*full batch"),
    ({"solver": "opt-b", "batch_size": 10_000}, r"'batch_size'.*at most n_samples"),
    ({"solver": "opt-b", "batch_size": 0}, r"'batch_size'"),
    ({"eigensolver": "qr"}, r"'eigensolver'"),
    ({"max_iter": 0}, r"'max_iter'"),
    ({"classes": [0, 0]}, r"'classes'"),
    ({"accountant": object()}, r"'accountant'"),
])
def test_bad_params_are_refused_before_anything_is_spent_or_read(params, match):
    acc = Accountant(Budget(10.0, 1e-5))
    kw = dict(accountant=acc, classes=[0, 1])
    kw.update(params)
    X = _UntouchableX()
    with pytest.raises(InvalidParameterError, match=match):
        DPNonConvexClassifier(**kw).fit(X, np.zeros(500))
    assert len(acc.entries) == 0 and X.reads == 0
    if "batch_size" not in params or params.get("solver") is None:
        with pytest.raises(InvalidParameterError, match=match):
            DPNonConvexClassifier(**kw)._fit_privacy_event()


# Extreme public hyperparameters (probe /tmp/op/probe_nc2.py): before the fix each raised a raw ZeroDivisionError,
# OverflowError or ValueError from the plan (nothing spent), or, for a full-batch delta next to 1, a RuntimeError of
# the solver after the charge. Each is now an InvalidParameterError before the charge, naming the parameters.
@pytest.mark.parametrize(("params", "match"), [
    ({"tolerance": 1e-300}, r"'tolerance' parameter.*MIN_DEC"),
    ({"tolerance": 1e300}, r"'tolerance' parameter.*MIN_DEC"),
    ({"solver": "2opt-b", "tolerance": 1e300}, r"'tolerance' parameter.*MIN_DEC"),
    ({"data_norm": 1e300}, r"'data_norm', 'intercept_scaling' and 'l2'.*overflow"),
    ({"intercept_scaling": 1e300}, r"'data_norm', 'intercept_scaling' and 'l2'.*overflow"),
    ({"loss": "nonconvex_logistic", "l2": 1e308}, r"'data_norm', 'intercept_scaling' and 'l2'.*overflow"),
    ({"solver": "opt-b", "epsilon": 1e300}, r"'epsilon' and 'delta'.*calibration of solver='opt-b'"),
    ({"solver": "opt-b", "epsilon": 1e-30}, r"'epsilon' and 'delta'.*calibration of solver='opt-b'"),
    ({"solver": "opt-b", "delta": 0.5}, r"'epsilon' and 'delta'.*calibration of solver='opt-b'"),
    ({"solver": "2opt-b", "delta": 0.9}, r"'epsilon' and 'delta'.*calibration of solver='2opt-b'"),
    ({"solver": "opt", "delta": math.nextafter(1.0, 0.0)}, r"'epsilon' and 'delta'.*delta next to 1"),
    ({"solver": "2opt", "delta": math.nextafter(1.0, 0.0)}, r"'epsilon' and 'delta'.*delta next to 1"),
])
def test_extreme_public_hyperparameters_are_refused_before_the_charge(params, match):
    acc = Accountant(Budget(1e300, 0.5))
    X = _UntouchableX()
    with pytest.raises(InvalidParameterError, match=match) as info:
        DPNonConvexClassifier(accountant=acc, classes=[0, 1], **params).fit(X, np.zeros(500))
    assert str(info.value).endswith("Nothing was spent.")
    assert len(acc.entries) == 0 and X.reads == 0


def test_solver_refuses_a_data_norm_whose_constants_overflow():
    with pytest.raises(InvalidParameterError, match=r"'data_norm' and 'l2' parameters of second_order_privacy_event"):
        second_order_privacy_event(500, 4, variant="opt", data_norm=1e300)


def test_rows_over_the_bound_are_clipped_not_refused_in_fit_and_predict():
    X, y = _blobs(4)
    big = X * 50.0  # every row far above data_norm = 1
    clipped = big / np.linalg.norm(big, axis=1, keepdims=True)
    a = DPNonConvexClassifier(classes=[0, 1], random_state=3).fit(big, y)
    b = DPNonConvexClassifier(classes=[0, 1], random_state=3).fit(clipped, y)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    assert np.allclose(a.decision_function(big), a.decision_function(clipped))
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    assert np.isfinite(DPNonConvexClassifier(classes=[0, 1], random_state=0).fit(X_nan, y).coef_).all()


def test_a_label_outside_the_declared_classes_contributes_nothing():
    X, y = _blobs(5)
    y_bad = y.astype(object)
    y_bad[:7] = "other"
    X_alt = X.copy()
    X_alt[:7] = np.random.default_rng(9).normal(size=(7, 3)) * 5  # different values in the unusable rows
    acc = Accountant(Budget(5.0, 1e-5))
    kw = dict(classes=[0, 1], random_state=2, accountant=acc)
    a = DPNonConvexClassifier(**kw).fit(X, y_bad)
    b = DPNonConvexClassifier(**kw).fit(X_alt, y_bad)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    assert list(a.classes_) == [0, 1] and len(acc.entries) == 2


def test_undeclared_classes_are_read_off_y_after_the_charge():
    X, y = _blobs(6)
    clf = DPNonConvexClassifier(random_state=0).fit(X, np.where(y == 1, "yes", "no"))
    assert list(clf.classes_) == ["no", "yes"]
    acc = Accountant(Budget(5.0, 1e-5))
    with pytest.raises(InvalidParameterError, match="Only binary"):
        DPNonConvexClassifier(accountant=acc).fit(X, np.arange(len(y)) % 3)
    assert len(acc.entries) == 1


def test_seeded_fits_are_reproducible_and_seeds_differ():
    X, y = _blobs(7)
    a = DPNonConvexClassifier(classes=[0, 1], random_state=11).fit(X, y)
    b = DPNonConvexClassifier(classes=[0, 1], random_state=11).fit(X, y)
    c = DPNonConvexClassifier(classes=[0, 1], random_state=12).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.n_iter_ == b.n_iter_ and a.optimize_result_.seeded
    assert not np.array_equal(a.coef_, c.coef_)
    assert not DPNonConvexClassifier(classes=[0, 1]).fit(X, y).optimize_result_.seeded


def test_clone_and_pickle():
    X, y = _blobs(8)
    est = DPNonConvexClassifier(epsilon=2.0, loss="nonconvex_logistic", solver="opt", classes=[0, 1], random_state=0)
    twin = clone(est)
    assert twin.get_params() == est.get_params() and not hasattr(twin, "coef_")
    est.fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict(X), est.predict(X)) and again.privacy_spent_ == est.privacy_spent_


def test_privacy_tags():
    tags = DPNonConvexClassifier().__privtune_tags__()
    assert tags.covers == "rows" and tags.classes_param == "classes" and not tags.raises_on_rows


# ----------------------------------------------------------------------------- in a search
def test_usable_as_the_inner_trainer_of_a_training_sensitive_search(cancer):
    Xtr, Xte, ytr, yte = cancer
    s = PrivateSearchCV(DPNonConvexClassifier(epsilon=0.3, classes=[0, 1]),
                        {"tolerance": Categorical([0.05, 0.1]), "loss": Categorical(["sigmoid", "nonconvex_logistic"])},
                        sensitive="both", epsilon=1.0, delta=1e-6, n_iter=3, n_candidates=4,
                        random_state=0).fit(Xtr[:280], ytr[:280], X_val=Xtr[280:], y_val=ytr[280:])
    assert [e.phase for e in s.training_accountant_.entries] == ["fits"]
    assert s.privacy_spent_["training"].epsilon <= 1.0
    assert isinstance(s.best_estimator_, DPNonConvexClassifier) and hasattr(s.best_estimator_, "coef_")
    assert s.best_estimator_.predict(Xte).shape == yte.shape


def test_a_search_refuses_undeclared_classes():
    X, y = _blobs(9, n=100)
    with pytest.raises(InvalidParameterError, match="declare"):
        PrivateSearchCV(DPNonConvexClassifier(epsilon=0.3), {"tolerance": Categorical([0.05, 0.1])},
                        sensitive="both", epsilon=1.0, delta=1e-6, n_iter=2, n_candidates=2,
                        random_state=0).fit(X[:60], y[:60], X_val=X[60:], y_val=y[60:])


# ----------------------------------------------------------------------------- scikit-learn's checks
# Large epsilon and few iterations: sklearn's accuracy checks train on ~100 rows, where any DP model at
# epsilon ~ 1 is close to chance by design.
_CHECKED = [DPNonConvexClassifier(epsilon=1e4, loss="nonconvex_logistic", data_norm=10.0, tolerance=0.05,
                                  max_iter=50, random_state=0)]
EXPECTED_FAILURES: dict[str, str] = {"check_dtype_object": (
    "a non-numeric entry of a sensitive training row is mapped to NaN (then 0) after the charge, "
    "never refused: a refusal would depend on one row (DESIGN rule 7)")}


@parametrize_with_checks(_CHECKED, expected_failed_checks=lambda est: EXPECTED_FAILURES)
def test_sklearn_compatible(estimator, check):
    # sklearn's check_methods_sample_order_invariance draws from numpy's global RNG; restore it (see
    # tests/linear_model/test_sklearn_checks.py).
    state = np.random.get_state()
    try:
        check(estimator)
    finally:
        np.random.set_state(state)


def test_the_minibatch_solvers_calibrate_a_small_epsilon():
    """With calibration orders up to 128 no noise level met epsilon = 0.05 at delta = 1e-6 (log(1/delta)/127 floors
    what those orders certify), so opt-b refused it (before the charge). Orders up to 1024 reach it, and the
    accountant (whose grid contains them) charges no more than epsilon."""
    from privtune.accounting import Accountant, Budget

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(0.05, 1e-6))
    model = DPNonConvexClassifier(epsilon=0.05, solver="opt-b", max_iter=2, accountant=acc, random_state=0).fit(X, y)
    assert model.privacy_spent_.epsilon <= 0.05 and acc.spent.epsilon <= 0.05
