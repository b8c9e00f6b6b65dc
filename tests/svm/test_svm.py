"""Tests of privtune.svm: DPLinearSVC (smoothed hinge) and DPSVC (public random Fourier features)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privtune.accounting import Accountant, Budget
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.svm import DPSVC, DPLinearSVC


def _circle(seed: int, n: int = 3000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (np.linalg.norm(X, axis=1) < 1.18).astype(int)
    return X, y


def test_linear_svc_learns_and_charges():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(4000, 2))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    acc = Accountant(Budget(1.0, 0.0))
    clf = DPLinearSVC(epsilon=1.0, C=10.0, accountant=acc, noise="laplace", random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert math.isclose(acc.spent.epsilon, 1.0, rel_tol=1e-12) and clf.accountant_ is acc
    assert not hasattr(clf, "predict_proba")
    assert clf.optimize_result_.smoothness == pytest.approx((1.0 + 0.25) / 1.0 + 1 / (10.0 * 4000))


def test_linear_svc_refuses_bad_smoothing_and_over_budget():
    X, y = _circle(1, n=100)
    acc = Accountant(Budget(0.5, 0.0))
    with pytest.raises(InvalidParameterError, match="'smoothing'"):
        DPLinearSVC(smoothing=0.0, accountant=acc).fit(X, y)
    with pytest.raises(BudgetExceededError):
        DPLinearSVC(epsilon=1.0, accountant=acc).fit(X, y)
    assert len(acc.entries) == 0


def test_rbf_svc_beats_linear_on_a_circle():
    X, y = _circle(2)
    laplace_sens = 2 * min(math.sqrt(40) + 0.5, math.sqrt(21) * math.sqrt(1.25))  # intercept_scaling 0.5
    for noise, sens in (("laplace", laplace_sens), ("gaussian", 2 * math.sqrt(1 + 0.25))):
        rbf = DPSVC(C=100.0, gamma=0.5, n_components=20, epsilon=10.0, noise=noise, random_state=0).fit(X, y)
        lin = DPLinearSVC(C=100.0, data_norm=10.0, epsilon=10.0, noise=noise, random_state=0).fit(X, y)
        assert rbf.score(X, y) > 0.8 > lin.score(X, y) - 0.1
        assert rbf.score(X, y) > lin.score(X, y) + 0.1
        # L1 bound min(sqrt(2 D) + s, sqrt(D + 1) sqrt(1 + s^2)) (Laplace) or L2 bound sqrt(1 + s^2)
        # (Gaussian), s = 0.5, of the
        # augmented features, whose L2 norm is clipped to 1 before the intercept is appended
        assert rbf.optimize_result_.sensitivity == pytest.approx(sens)


def test_rbf_features_are_public_and_data_independent():
    X1, y1 = _circle(3, n=200)
    X2, y2 = _circle(4, n=300)
    a = DPSVC(n_components=30, feature_seed=5, random_state=0, max_iter=5).fit(X1, y1)
    b = DPSVC(n_components=30, feature_seed=5, random_state=1, max_iter=5).fit(X2 * 7, y2)
    np.testing.assert_array_equal(a.random_weights_, b.random_weights_)
    np.testing.assert_array_equal(a.random_offset_, b.random_offset_)
    c = DPSVC(n_components=30, feature_seed=6, random_state=0, max_iter=5).fit(X1, y1)
    assert not np.array_equal(a.random_weights_, c.random_weights_)


@given(X=arrays(np.float64, (7, 3), elements=st.floats(-1e6, 1e6)), D=st.integers(1, 64),
       gamma=st.floats(1e-3, 1e3))
def test_rbf_feature_rows_satisfy_the_declared_bounds(X, D, gamma):
    svc = DPSVC(n_components=D, gamma=gamma, random_state=0, max_iter=1)
    svc.fit(np.vstack((X, X + 1.0)), np.r_[np.zeros(7), np.ones(7)])
    phi = svc._features(X, fitting=False)
    r1, r2 = svc._feature_bounds(3)
    assert np.all(np.abs(phi).sum(axis=1) <= r1 * (1 + 1e-12))
    assert np.all(np.linalg.norm(phi, axis=1) <= r2 * (1 + 1e-12))


def test_rbf_svc_validates_its_parameters_before_spending():
    X, y = _circle(5, n=100)
    acc = Accountant(Budget(10.0, 0.0))
    for bad, match in [({"gamma": 0}, "'gamma'"), ({"n_components": 0}, "'n_components'"),
                       ({"feature_seed": -1}, "'feature_seed'"), ({"C": -1.0}, "'C'")]:
        with pytest.raises(InvalidParameterError, match=match):
            DPSVC(accountant=acc, **bad).fit(X, y)
    assert len(acc.entries) == 0
    X[0, 0] = np.nan  # a value defect is mapped into the domain (to 0), never refused: one charge
    DPSVC(accountant=acc, classes=[0, 1], noise="laplace").fit(X, y)
    assert len(acc.entries) == 1


def test_svms_accept_gaussian_noise():
    rng = np.random.default_rng(2)
    X = rng.uniform(-0.5, 0.5, size=(3000, 2))
    y = (X[:, 0] > 0).astype(int)
    lin = DPLinearSVC(epsilon=1.0, C=10.0, noise="gaussian", delta=1e-6, random_state=0).fit(X, y)
    assert lin.score(X, y) > 0.9 and lin.privacy_spent_.delta == 1e-6
    assert 1.0 * (1 - 2e-3) < lin.privacy_spent_.epsilon <= 1.0
    Xc, yc = _circle(3)
    rbf = DPSVC(C=100.0, gamma=0.5, n_components=20, epsilon=5.0, noise="gaussian", delta=1e-6,
                random_state=0).fit(Xc, yc)
    assert rbf.optimize_result_.sensitivity == pytest.approx(2 * math.sqrt(1.0 + 0.25))  # ||phi||_2 clipped to 1
    phi = rbf._features(Xc, fitting=False)
    assert np.linalg.norm(phi, axis=1).max() <= 1.0 + 1e-12
    assert rbf.score(Xc, yc) > 0.8


def test_dpsvc_row_that_overflows_the_feature_map_neither_raises_nor_poisons_the_model():
    """A finite row with entries near the float maximum overflows X @ W (cos(inf) is NaN). It used to make fit raise
    after the charge (a refusal that depends on one row); its features are now mapped to 0, in fit and predict."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(int)
    X_adv = X.copy()
    X_adv[0] = 1.7e308
    acc = Accountant(Budget(2.0, 1e-5))
    clf = DPSVC(epsilon=1.0, classes=[0, 1], random_state=0, accountant=acc).fit(X_adv, y)
    assert np.all(np.isfinite(clf.coef_)) and np.isfinite(clf.intercept_).all() and len(acc.entries) == 1
    assert np.all(np.isfinite(clf.decision_function(X_adv)))
