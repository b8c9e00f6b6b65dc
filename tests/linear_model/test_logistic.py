"""Tests of privtune.linear_model.DPLogisticRegression (and the shared margin-classifier base)."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from privtune.accounting import Accountant, Budget
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.optim._losses import clip_rows
from privtune.svm import DPSVC, DPLinearSVC


def _blobs(seed: int, n: int = 3000, d: int = 3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, d)) * 0.15 + np.where(y[:, None] == 1, 0.2, -0.2) / math.sqrt(d)
    return X, y


def test_fit_charges_its_own_accountant_and_exposes_the_budget():
    X, y = _blobs(0)
    clf = DPLogisticRegression(epsilon=0.8, noise="laplace", random_state=0).fit(X, y)
    assert clf.privacy_spent_ == Budget(0.8, 0.0) or math.isclose(clf.privacy_spent_.epsilon, 0.8, rel_tol=1e-12)
    assert math.isclose(clf.accountant_.spent.epsilon, 0.8, rel_tol=1e-12)
    assert len(clf.accountant_.entries) == 1 and clf.accountant_.entries[0].role == "training"
    assert clf.coef_.shape == (1, 3) and clf.intercept_.shape == (1,) and clf.n_iter_ >= 1
    assert clf.score(X, y) > 0.85  # well-separated blobs, n = 3000


def test_fit_charges_a_given_accountant():
    X, y = _blobs(1)
    acc = Accountant(Budget(2.0, 0.0))
    DPLogisticRegression(epsilon=0.5, solver="gd", max_iter=20, accountant=acc, noise="laplace",
                         random_state=0).fit(X, y)
    DPLogisticRegression(epsilon=0.5, solver="hb", max_iter=20, accountant=acc, noise="laplace",
                         random_state=1).fit(X, y)
    assert len(acc.entries) == 2 and math.isclose(acc.spent.epsilon, 1.0, rel_tol=1e-12)
    assert acc.entries[0].phase == "DPLogisticRegression"


def test_over_budget_accountant_refuses_with_nothing_spent_and_not_fitted():
    X, y = _blobs(2)
    acc = Accountant(Budget(0.3, 0.0))
    clf = DPLogisticRegression(epsilon=0.5, accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError):
        clf.fit(X, y)
    assert len(acc.entries) == 0 and not hasattr(clf, "coef_")


def _nan(X, y):
    X = X.copy()
    X[3, 1] = np.nan
    return X, y


def _inf(X, y):
    X = X.copy()
    X[0, 0] = np.inf
    return X, y


@pytest.mark.parametrize(
    ("mutate", "params", "match"),
    [
        (lambda X, y: (X, y[:-1]), {}, r"X has \d+ rows but y has \d+"),
        (lambda X, y: (X[:, 0], y), {}, "2-D"),
        (lambda X, y: (X, y), {"epsilon": 0.0}, r"'epsilon' parameter of DPLogisticRegression"),
        (lambda X, y: (X, y), {"epsilon": -1}, r"'epsilon'"),
        (lambda X, y: (X, y), {"C": 0}, r"'C'"),
        (lambda X, y: (X, y), {"solver": "lbfgs"}, r"'solver'"),
        (lambda X, y: (X, y), {"data_norm": -1.0}, r"'data_norm'"),
        (lambda X, y: (X, y), {"batch_size": 10**6, "noise": "laplace"}, r"'batch_size'.*at most n_samples"),
        (lambda X, y: (X, y), {"clip": "no"}, r"'clip'"),
        (lambda X, y: (X, y), {"classes": [0, 0]}, r"'classes'"),
        (lambda X, y: (X, y), {"accountant": object()}, r"'accountant'"),
        (lambda X, y: (X, y), {"step_scale": 2.0}, r"'step_scale'"),
        (lambda X, y: (X, y), {"initial_gap": 0.0}, r"'initial_gap'"),
        (lambda X, y: (X, y), {"initial_gap": "big"}, r"'initial_gap'"),
    ],
)
def test_public_defects_are_refused_before_anything_is_spent(mutate, params, match):
    """Hyperparameters and the inputs' shapes are public: a defect there is refused with nothing charged."""
    X, y = _blobs(3, n=200)
    X, y = mutate(X, y)
    acc = Accountant(Budget(10.0, 0.0))
    kw = dict(accountant=acc, max_iter=10, random_state=0, noise="laplace")
    kw.update(params)
    with pytest.raises(InvalidParameterError, match=match):
        DPLogisticRegression(**kw).fit(X, y)
    assert len(acc.entries) == 0


@pytest.mark.parametrize("mutate", [_nan, _inf, lambda X, y: (X * 1e300, y)])
def test_non_finite_or_huge_rows_are_mapped_into_the_domain_after_the_charge(mutate):
    """A value defect is not refused (whether fit raises would depend on one row): it is mapped row by row."""
    X, y = _blobs(3, n=200)
    X, y = mutate(X, y)
    acc = Accountant(Budget(10.0, 0.0))
    clf = DPLogisticRegression(accountant=acc, max_iter=10, random_state=0, noise="laplace", classes=[0, 1]).fit(X, y)
    assert len(acc.entries) == 1 and np.isfinite(clf.coef_).all()


@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(classes=[0, 1], random_state=0),
    lambda: DPLogisticRegression(classes=[0, 1, 2], random_state=0),
    lambda: DPLinearSVC(classes=[0, 1], random_state=0),
    lambda: DPSVC(classes=[0, 1], features="fourier", random_state=0),
    lambda: DPSVC(classes=[0, 1], features="taylor", random_state=0),
], ids=["logistic", "logistic-3-classes", "linear-svc", "svc-fourier", "svc-taylor"])
def test_prediction_counts_a_non_finite_entry_as_0_as_fit_does(make):
    """fit maps a non-finite entry to 0; predictions used to give such a row a NaN score (and a RuntimeWarning for
    an infinite entry), or, on the random features, the features of no row at all."""
    X, y = _blobs(4, n=600)
    if len(make().classes) == 3:
        y = np.arange(600) % 3
    clf = make().fit(X, y)
    Z = X[:4].copy()
    Z[0, 0], Z[1, 2], Z[2, 1], Z[3] = np.nan, np.inf, -np.inf, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning on such rows either
        scores = clf.decision_function(Z)
        np.testing.assert_array_equal(scores, clf.decision_function(np.where(np.isfinite(Z), Z, 0.0)))
        np.testing.assert_array_equal(clf.predict(Z), clf.predict(np.where(np.isfinite(Z), Z, 0.0)))
    assert np.isfinite(scores).all()


@pytest.mark.parametrize(("mutate", "params", "match"), [
    (lambda X, y: (X, np.ones_like(y)), {}, "at least two classes"),
    (lambda X, y: (X, y.astype(float) + 0.5), {}, "Unknown label type"),
    (lambda X, y: (X * 10, y), {"clip": "raise"}, "exceed the declared bound"),
])
def test_data_dependent_refusals_happen_only_after_the_charge(mutate, params, match):
    """With classes=None (the label set read off y) or clip='raise', fit can still refuse data -- after charging,
    so the ledger is the same for neighbours (a training-sensitive search refuses both configurations)."""
    X, y = _blobs(3, n=200)
    X, y = mutate(X, y)
    acc = Accountant(Budget(10.0, 0.0))
    with pytest.raises(InvalidParameterError, match=match):
        DPLogisticRegression(accountant=acc, max_iter=10, random_state=0, noise="laplace", **params).fit(X, y)
    assert len(acc.entries) == 1


def test_line_search_refuses_more_than_two_read_classes_only_after_the_charge():
    """The line search fits two classes; with classes=None, a third label is refused after the charge."""
    X, y = _blobs(3, n=200)
    y = np.where(np.arange(y.size) % 3 == 0, 2, y)
    acc = Accountant(Budget(10.0, 1e-6), method="rdp")
    with pytest.raises(InvalidParameterError, match="Only binary classification"):
        DPLogisticRegression(accountant=acc, solver="line-search", random_state=0).fit(X, y)
    assert len(acc.entries) == 1


def test_line_search_refuses_more_than_two_declared_classes_before_the_charge():
    X, y = _blobs(3, n=200)
    acc = Accountant(Budget(10.0, 1e-6), method="rdp")
    with pytest.raises(InvalidParameterError, match=r"two classes only .*; got 3 declared classes"):
        DPLogisticRegression(accountant=acc, solver="line-search", classes=[0, 1, 2]).fit(X, y)
    assert len(acc.entries) == 0


def test_labels_outside_the_declared_classes_contribute_nothing():
    X, y = _blobs(3, n=200)
    acc = Accountant(Budget(10.0, 0.0))
    a = DPLogisticRegression(accountant=acc, max_iter=10, random_state=0, noise="laplace", classes=[0, 1])
    y_bad = y.copy().astype(object)
    y_bad[:5] = "ALIEN"
    a.fit(X, y_bad)  # not refused
    assert len(acc.entries) == 1 and set(a.predict(X)) <= {0, 1}


def test_declared_classes_allow_a_single_observed_class_and_string_labels():
    X, y = _blobs(4, n=300)
    labels = np.where(y == 1, "sick", "well")
    clf = DPLogisticRegression(classes=["well", "sick"], random_state=0, max_iter=10).fit(X, labels)
    assert list(clf.classes_) == ["sick", "well"]
    assert set(clf.predict(X)) <= {"sick", "well"}
    DPLogisticRegression(classes=["well", "sick"], random_state=0, max_iter=10).fit(X, np.full(300, "well"))


def test_probabilities_and_decision_function_agree():
    X, y = _blobs(5, n=500)
    clf = DPLogisticRegression(random_state=0).fit(X, y)
    p = clf.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), p, rtol=1e-10)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(p[:, 1] > 0.5).astype(int)])


def test_clone_pickle_and_reproducibility():
    X, y = _blobs(6, n=500)
    clf = DPLogisticRegression(epsilon=2.0, solver="masg-opt", batch_size=100, noise="laplace",
                               random_state=7).fit(X, y)
    again = clone(clf).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, again.coef_)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.decision_function(X), clf.decision_function(X))
    assert restored.privacy_spent_ == clf.privacy_spent_


def test_large_epsilon_approaches_sklearn_on_the_same_objective():
    """epsilon = 1e5 leaves almost no noise: the estimator's objective (mean loss + ||w||^2/(2Cn) with the
    intercept as a regularised constant feature) matches sklearn's LogisticRegression on clipped,
    augmented data."""
    X, y = _blobs(7, n=2000)
    C = 0.05
    clf = DPLogisticRegression(epsilon=1e5, C=C, solver="nag", horizon="max_iter", max_iter=3000, max_slope=1.0,
                               intercept_scaling=1.0, random_state=0).fit(X, y)
    Xc = np.hstack((clip_rows(X, 1.0, 1.0, mode="rows", owner="t"), np.ones((X.shape[0], 1))))
    ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(Xc, y)
    np.testing.assert_allclose(clf.coef_[0], ref.coef_[0][:-1], atol=5e-3)
    np.testing.assert_allclose(clf.intercept_[0], ref.coef_[0][-1], atol=5e-3)


def test_intercept_enters_the_declared_bounds():
    X, y = _blobs(8, n=400)
    kw = dict(data_norm=2.0, noise="laplace", random_state=0, max_iter=5)  # the L1 bound sets the sensitivity
    with_b = DPLogisticRegression(intercept_scaling=0.5, **kw).fit(X, y)
    no_b = DPLogisticRegression(fit_intercept=False, **kw).fit(X, y)
    # 2 kappa R_1 with the default max_slope kappa = 1/2
    assert with_b.optimize_result_.sensitivity == pytest.approx(2 * 0.5 * 2.5)
    assert no_b.optimize_result_.sensitivity == pytest.approx(2 * 0.5 * 2.0)
    assert no_b.intercept_[0] == 0.0


# ----------------------------------------------------------------------------- noise="gaussian" (privtune's extension)
def test_gaussian_fit_charges_approximate_dp_and_learns():
    X, y = _blobs(7)
    clf = DPLogisticRegression(epsilon=0.8, noise="gaussian", delta=1e-6, random_state=0).fit(X, y)
    spent = clf.privacy_spent_
    assert 0.8 * (1 - 2e-3) < spent.epsilon <= 0.8 and spent.delta == 1e-6
    assert 0.8 * (1 - 2e-3) < clf.accountant_.spent.epsilon <= 0.8 and clf.accountant_.budget == Budget(0.8, 1e-6)
    assert clf.optimize_result_.noise == "gaussian" and clf.score(X, y) > 0.85
    # 2 kappa R_2 with the intercept (default scaling 1/2) and the default max_slope kappa = 1/2
    assert clf.optimize_result_.sensitivity == pytest.approx(2 * 0.5 * math.sqrt(1.0 + 0.25))


def test_gaussian_needs_a_delta_budget_and_refuses_batches():
    X, y = _blobs(8, n=200)
    acc = Accountant(Budget(5.0, 0.0))
    with pytest.raises(BudgetExceededError):
        DPLogisticRegression(epsilon=1.0, noise="gaussian", accountant=acc).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'batch_size'.*noise='gaussian'"):
        DPLogisticRegression(noise="gaussian", batch_size=50, accountant=acc).fit(X, y)
    for bad, match in [(dict(noise="gauss"), "'noise'"), (dict(noise="gaussian", delta=0.0), "'delta'"),
                       (dict(delta=1.5), "'delta'")]:
        with pytest.raises(InvalidParameterError, match=match):
            DPLogisticRegression(accountant=acc, **bad).fit(X, y)
    assert len(acc.entries) == 0


def test_noise_and_delta_are_sklearn_parameters():
    clf = DPLogisticRegression(noise="gaussian", delta=1e-7)
    assert clf.get_params()["noise"] == "gaussian" and clf.get_params()["delta"] == 1e-7
    c2 = clone(clf)
    assert c2.noise == "gaussian" and c2.delta == 1e-7
    X, y = _blobs(9, n=500)
    a = c2.set_params(random_state=3).fit(X, y)
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    # the default is the Gaussian variant at delta = 1e-6 (see the class docs); "laplace" is the paper's pure DP
    assert DPLogisticRegression().noise == "gaussian" and DPLogisticRegression().delta == 1e-6


def test_declared_initial_gap_sets_the_opt_horizon_and_matches_the_solver():
    """``initial_gap`` (E_0) is passed to the *-opt solver: a larger E_0 gives a longer T* (public constants only)."""
    from privtune.optim import dp_accelerated

    X, y = _blobs(5, n=400, d=3)
    horizons = []
    for e0 in (None, 10.0, 1000.0):
        clf = DPLogisticRegression(epsilon=1.0, solver="nag-opt", horizon="paper", initial_gap=e0, max_iter=200,
                                   random_state=0).fit(X, y)
        horizons.append(clf.n_iter_)
        assert 1.0 * (1 - 2e-3) < clf.privacy_spent_.epsilon <= 1.0
    assert horizons[0] <= horizons[1] <= horizons[2] and horizons[0] < horizons[2]
    # the same T* as the solver with the same declaration (the estimator appends the intercept column)
    U = np.hstack((X, np.full((X.shape[0], 1), 0.5)))  # the default intercept_scaling
    res = dp_accelerated(U, np.where(y == 1, 1.0, -1.0), epsilon=1.0, alpha=1.0 / X.shape[0], data_norm=2.0,
                         data_norm_l2=math.sqrt(1.25), n_iter=200, initial_gap=10.0, max_slope=0.5, random_state=0,
                         noise="gaussian", delta=1e-6)
    assert res.n_iter == horizons[1]
    # horizon="max_iter" ignores it
    clf = DPLogisticRegression(epsilon=1.0, solver="nag", horizon="max_iter", initial_gap=1000.0, max_iter=7,
                               random_state=0).fit(X, y)
    assert clf.n_iter_ == 7


def test_default_max_slope_halves_the_noise_and_one_restores_the_papers_loss():
    X, y = _blobs(9, n=500)
    half = DPLogisticRegression(epsilon=1.0, solver="nag", max_iter=4, random_state=0).fit(X, y)
    paper = DPLogisticRegression(epsilon=1.0, solver="nag", max_iter=4, max_slope=1.0, random_state=0).fit(X, y)
    assert half.max_slope == 0.5
    np.testing.assert_allclose(half.optimize_result_.noise_scales, paper.optimize_result_.noise_scales / 2)
    assert half.privacy_spent_ == paper.privacy_spent_
    with pytest.raises(InvalidParameterError, match="max_slope"):
        DPLogisticRegression(max_slope=0.0).fit(X, y)
