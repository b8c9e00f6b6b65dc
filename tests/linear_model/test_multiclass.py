"""More than two classes: one run on one weight vector per class (softmax losses), costing one fit."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.accounting.accountant import compose_events
from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression, DPNonConvexClassifier, _margin
from privtune.optim import dp_accelerated
from privtune.optim.accelerated import gaussian_run_multiplier
from privtune.space import Real
from privtune.svm import DPSVC, DPLinearSVC

ESTIMATORS = (DPLogisticRegression, DPLinearSVC, DPSVC)
NM = gaussian_run_multiplier(1.0, 1e-6)


def _three_blobs(seed: int, n: int = 1500, d: int = 4):
    """Three well-separated classes with labels "a", "b", "c", rows of norm about 1."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    centres = np.eye(d)[:3] * 0.8
    X = centres[y] + rng.normal(size=(n, d)) * 0.1
    return X, np.array(["a", "b", "c"])[y]


def _start_norm(k: int, margin: float, h: float = 1.0) -> float:
    """|p - e_y| at W = 0: p the softmax of margin / h off the row's class and 0 on it."""
    e = math.exp(margin / h)
    p_y, p_j = 1.0 / (1.0 + (k - 1) * e), e / (1.0 + (k - 1) * e)
    return math.sqrt((1.0 - p_y) ** 2 + (k - 1) * p_j**2)


def _precision(result) -> float:
    return float(np.sum(1.0 / result.extra["noise_multipliers"] ** 2))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_three_classes_learn_and_predict_the_largest_score(cls):
    X, y = _three_blobs(0)
    clf = cls(epsilon=10.0, classes=["a", "b", "c"], random_state=0).fit(X, y)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert clf.coef_.shape[0] == 3 and clf.intercept_.shape == (3,)
    scores = clf.decision_function(X)
    assert scores.shape == (X.shape[0], 3)
    assert np.array_equal(clf.predict(X), clf.classes_[np.argmax(scores, axis=1)])
    assert clf.score(X, y) > 0.9
    # one run: K weight vectors (intercept last in each) in one solution
    assert clf.optimize_result_.x.shape == (3 * (clf.coef_.shape[1] + 1),)
    W = clf.optimize_result_.x.reshape(3, -1)
    ratio = clf.intercept_ / W[:, -1]  # the stored intercept column's value (0.5, within float32 rounding)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    assert ratio[0] == pytest.approx(0.5, rel=1e-4)


def test_predict_proba_is_the_softmax_of_the_scores():
    X, y = _three_blobs(1)
    clf = DPLogisticRegression(epsilon=10.0, classes=["a", "b", "c"], random_state=0).fit(X, y)
    proba = clf.predict_proba(X[:50])
    assert proba.shape == (50, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    e = np.exp(clf.decision_function(X[:50]))
    np.testing.assert_allclose(proba, e / e.sum(axis=1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(clf.predict_log_proba(X[:50]), np.log(proba), rtol=1e-10)
    assert np.array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X[:50]))


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 7.0])
@pytest.mark.parametrize("k", [3, 10])
def test_k_classes_are_one_run_with_the_whole_budget(cls, epsilon, k):
    rng = np.random.default_rng(k)
    X = rng.normal(size=(400, 3)) * 0.3
    y = rng.integers(0, k, size=400)
    acc = Accountant(Budget(epsilon, 1e-6), method="rdp")
    clf = cls(epsilon=epsilon, classes=list(range(k)), accountant=acc, random_state=0).fit(X, y)
    nm = gaussian_run_multiplier(epsilon, 1e-6)
    assert len(acc.entries) == 1 and acc.entries[0].event == clf.privacy_event_
    assert clf.privacy_event_.noise_multiplier == nm  # what one binary fit charges
    assert _precision(clf.optimize_result_) == pytest.approx(1.0 / nm**2, rel=1e-12)
    # the per-example L2 sensitivity: 2 x the residual clip x the row bound; at the defaults the clip is the
    # residual's norm at W = 0 (nothing clipped at the start)
    clip = _start_norm(k, 0.0 if cls is DPLogisticRegression else 1.0)
    assert clf.optimize_result_.sensitivity == pytest.approx(2 * clip * math.sqrt(1.25))
    assert clf.privacy_spent_.epsilon <= epsilon
    assert clf.privacy_spent_.epsilon == pytest.approx(compose_events([clf.privacy_event_], delta=1e-6).epsilon,
                                                       rel=1e-6)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.3])
@pytest.mark.parametrize("k", [3, 7])
def test_laplace_fits_spend_at_most_epsilon(cls, epsilon, k):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)) * 0.3
    y = rng.integers(0, k, size=300)
    for batch_size in (None, 60):
        clf = cls(epsilon=epsilon, noise="laplace", classes=list(range(k)), batch_size=batch_size,
                  random_state=0).fit(X, y)
        assert clf.optimize_result_.epsilon <= epsilon
        assert clf.privacy_spent_.epsilon <= epsilon and clf.privacy_spent_.delta == 0.0
        assert clf.accountant_.spent.epsilon <= epsilon
        if cls is DPLogisticRegression:  # L1 sensitivity: 2 min(2, sqrt(K) c) (data_norm + intercept_scaling)
            c = 2 * 0.5 * math.sqrt((k - 1) / k)
            assert clf.optimize_result_.sensitivity == pytest.approx(2 * min(2.0, math.sqrt(k) * c) * 1.5)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_two_classes_run_once_with_the_whole_budget(cls):
    X, y = _three_blobs(3, n=400)
    keep = y != "c"
    clf = cls(classes=["a", "b"], random_state=0).fit(X[keep], y[keep])
    assert clf.coef_.shape[0] == 1 and clf.decision_function(X[:3]).shape == (3,)
    assert clf.optimize_result_.x.shape == (clf.coef_.shape[1] + 1,)
    assert _precision(clf.optimize_result_) == pytest.approx(1.0 / NM**2, rel=1e-12)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_labels_outside_the_declared_classes_contribute_nothing(cls):
    """Rows whose label is not a declared class are mapped to the zero row: whatever their features and labels,
    the seeded fit is the same, bit for bit."""
    X, y = _three_blobs(4, n=600)
    y_bad = y.astype(object)
    y_bad[:20] = None
    y_bad[20:25] = "z"
    acc = Accountant(Budget(10.0, 1e-6), method="rdp")
    clf = cls(epsilon=10.0, classes=["a", "b", "c"], accountant=acc, random_state=0).fit(X, y_bad)
    assert len(acc.entries) == 1 and set(clf.predict(X)) <= {"a", "b", "c"}
    X_other = X.copy()
    X_other[:25] = 50.0  # other features on the same rows ...
    y_other = y_bad.copy()
    y_other[:25] = float("nan")  # ... and another kind of label outside the set
    other = cls(epsilon=10.0, classes=["a", "b", "c"], random_state=0).fit(X_other, y_other)
    np.testing.assert_array_equal(other.coef_, clf.coef_)
    np.testing.assert_array_equal(other.intercept_, clf.intercept_)


def test_labels_are_read_when_undeclared():
    X, y = _three_blobs(5, n=600)
    for cls in ESTIMATORS:
        clf = cls(epsilon=10.0, random_state=0).fit(X, y)
        assert list(clf.classes_) == ["a", "b", "c"] and clf.coef_.shape[0] == 3


@pytest.mark.parametrize("classes", [["a"], ["a", "a", "b"], [["a", "b"]], 5])
def test_invalid_declared_classes_are_refused_before_the_charge(classes):
    X, y = _three_blobs(6, n=100)
    acc = Accountant(Budget(10.0, 1e-6), method="rdp")
    with pytest.raises(InvalidParameterError, match="at least two distinct labels"):
        DPLogisticRegression(classes=classes, accountant=acc).fit(X, y)
    assert len(acc.entries) == 0


def test_nonconvex_classifier_and_line_search_stay_binary():
    X, y = _three_blobs(7, n=100)
    with pytest.raises(InvalidParameterError, match="two distinct labels"):
        DPNonConvexClassifier(classes=["a", "b", "c"]).fit(X, y)
    assert DPNonConvexClassifier().__sklearn_tags__().classifier_tags.multi_class is False
    assert DPLogisticRegression().__sklearn_tags__().classifier_tags.multi_class is True
    assert DPLogisticRegression(solver="line-search").__sklearn_tags__().classifier_tags.multi_class is False


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5, float("nan"), "half"])
def test_budget_share_is_validated(share):
    X = np.zeros((10, 2))
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="budget_share"):
        dp_accelerated(X, np.ones(10), epsilon=1.0, alpha=0.01, data_norm=1.0, budget_share=share, accountant=acc)
    assert len(acc.entries) == 0


def test_the_plan_checked_before_the_charge_is_the_runs_plan(monkeypatch):
    """``fit`` checks its run's plan (K weight vectors) before charging, and again once it has read K classes."""
    seen: list = []
    real = _margin._make_accelerated_plan

    def spy(**kw):
        seen.append((kw["d"], kw["loss"], kw["n_classes"], kw.get("budget_share", 1.0)))
        return real(**kw)

    monkeypatch.setattr(_margin, "_make_accelerated_plan", spy)
    X, y = _three_blobs(8, n=100)
    DPLogisticRegression(classes=["a", "b", "c", "d"], random_state=0).fit(X, y)
    DPLinearSVC(classes=["a", "b", "c", "d"], random_state=0).fit(X, y)
    DPLinearSVC(classes=["a", "b", "c", "d"])._check_fit_plan(100, 4)
    DPLinearSVC(random_state=0).fit(X, y)  # three classes read off y: checked again once read
    hinge = "multiclass_smoothed_hinge"
    assert seen == [(20, "multinomial", 4, 1.0), (20, hinge, 4, 1.0), (20, hinge, 4, 1.0),
                    (5, "smoothed_hinge", None, 1.0), (15, hinge, 3, 1.0)]


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_clone_and_pickle_keep_the_multiclass_model(cls):
    X, y = _three_blobs(9, n=300)
    clf = cls(epsilon=5.0, classes=["a", "b", "c"], random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))
    assert clone(clf).get_params()["classes"] == ["a", "b", "c"]


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_a_training_sensitive_search_charges_k_classes_as_two(cls):
    """Inside PrivateSearchCV(sensitive="both") a K-class candidate's fit is planned and charged as one fit."""
    X, y = _three_blobs(10, n=900)
    spent = {}
    for labels in (["a", "b", "c"], ["a", "b"]):
        keep = np.isin(y, labels)
        Xk, yk = X[keep][:500], y[keep][:500]
        search = PrivateSearchCV(cls(classes=labels), {"C": Real(0.1, 10.0, log=True)}, epsilon=2.0, delta=1e-6,
                                 sensitive="both", n_iter=3, validation_size=0.3, random_state=0).fit(Xk, yk)
        spent[len(labels)] = search.privacy_spent_["training"]
        assert list(search.best_estimator_.classes_) == labels
        assert search.predict(Xk[:5]).shape == (5,) and set(search.predict(Xk)) <= set(labels)
    assert spent[3] == spent[2]
