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
from privtune.svm import DPSVC as _DPSVC
from privtune.svm import DPLinearSVC


def DPSVC(**params):  # noqa: N802 - stands for the class in this file
    """``DPSVC`` on its random Fourier map, the map this file tests (the Taylor map: ``test_taylor_features.py``)."""
    return _DPSVC(**{"features": "fourier", **params})


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


@pytest.mark.parametrize("reference_norm", [1.0, None])
def test_rbf_svc_beats_linear_on_a_circle(reference_norm):
    X, y = _circle(2)
    # L1 bound of the D = 20 features: sqrt(D) after the L2 clip (centred map) or sqrt(2 D) (plain map), and the
    # default linear share s = 0.25 of the d = 2 inputs: sqrt(s d) + sqrt(1 - s) (that bound)
    r1 = math.sqrt(20) if reference_norm is not None else math.sqrt(40)
    r1 = math.sqrt(0.25 * 2) + math.sqrt(0.75) * r1
    laplace_sens = 2 * min(r1 + 0.5, math.sqrt(23) * math.sqrt(1.25))  # intercept_scaling 0.5
    for noise, sens in (("laplace", laplace_sens), ("gaussian", 2 * math.sqrt(1 + 0.25))):
        rbf = DPSVC(C=100.0, gamma=0.5, n_components=20, epsilon=10.0, noise=noise, random_state=0,
                    reference_norm=reference_norm).fit(X, y)
        lin = DPLinearSVC(C=100.0, data_norm=10.0, epsilon=10.0, noise=noise, random_state=0).fit(X, y)
        assert rbf.score(X, y) > 0.8 > lin.score(X, y) - 0.1
        assert rbf.score(X, y) > lin.score(X, y) + 0.1
        # L1 bound min(R_1 + s, sqrt(D + 1) sqrt(1 + s^2)) (Laplace) or L2 bound sqrt(1 + s^2) (Gaussian),
        # s = 0.5, of the augmented features, whose L2 norm is clipped to 1 before the intercept is appended
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


def test_centred_features_are_the_documented_public_map():
    """psi(x) = (phi(x) - a phi(0)) / sqrt(1 - a^2), a = exp(-gamma r^2), clipped to norm 1, in fit and predict;
    the map depends on public parameters only, so the guarantee's bounds hold for any input, huge ones included."""
    X, y = _circle(5, n=300)
    clf = DPSVC(gamma=0.3, n_components=40, reference_norm=2.0, epsilon=5.0, random_state=0,
                linear_share=0.0).fit(X, y)  # the RBF part alone (the linear share is tested below)
    W, b = clf.random_weights_, clf.random_offset_
    phi = math.sqrt(2 / 40) * np.cos(X @ W + b)
    a = math.exp(-0.3 * 4.0)
    psi = (phi - a * math.sqrt(2 / 40) * np.cos(b)) / math.sqrt(1 - a * a)
    psi = psi / np.maximum(1.0, np.linalg.norm(psi, axis=1, keepdims=True))
    np.testing.assert_allclose(clf._features(X, fitting=False), psi, rtol=1e-9, atol=1e-12)
    w = clf.coef_.ravel()
    np.testing.assert_allclose(clf.decision_function(X), psi @ w + clf.intercept_[0], rtol=1e-6, atol=1e-9)
    huge = np.vstack([X[:5], [[1e300, -1e300], [np.inf, 0.0]]])
    out = clf._features(np.nan_to_num(huge, posinf=1e308), fitting=False)
    assert np.all(np.isfinite(out)) and np.all(np.linalg.norm(out, axis=1) <= 1.0)
    with pytest.raises(InvalidParameterError, match="reference_norm"):
        DPSVC(reference_norm=0.0).fit(X, y)


def test_centred_features_keep_small_gamma_from_the_majority_model():
    """The plain map at gamma = 0.1 on unit-norm breast-cancer rows returned the majority-class model at
    epsilon = 0.3 (these 5 seeds: 0.626, the majority rate); the centred map learns (measured 0.877)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    accs = {r: np.median([DPSVC(gamma=0.1, epsilon=0.3, classes=[0, 1], reference_norm=r, random_state=s,
                                linear_share=0.0).fit(Xtr, ytr).score(Xte, yte) for s in range(5)])
            for r in (1.0, None)}
    majority = max(np.mean(yte), 1 - np.mean(yte))
    assert accs[None] < majority + 0.01  # the plain map: the majority-class model
    assert accs[1.0] > 0.85


# ----------------------------------------------------------------------------- linear share
@given(X=arrays(np.float64, (7, 3), elements=st.floats(-1.7e308, 1.7e308)), D=st.integers(1, 64),
       gamma=st.floats(1e-3, 1e3), share=st.floats(0.0, 0.99), ref=st.sampled_from([1.0, 1e-3, 50.0, None]))
def test_linear_share_rows_satisfy_the_declared_bounds(X, D, gamma, share, ref):
    """[sqrt(s) xbar, sqrt(1 - s) psi] stays inside the declared L1 / L2 bounds for any finite input, huge ones
    included (the linear part clips the input to the reference norm before dividing by it)."""
    svc = DPSVC(n_components=D, gamma=gamma, linear_share=share, reference_norm=ref, random_state=0, max_iter=1)
    svc.fit(np.vstack((np.zeros((7, 3)), np.ones((7, 3)))), np.r_[np.zeros(7), np.ones(7)])
    U = svc._features(X, fitting=False)
    r1, r2 = svc._feature_bounds(3)
    assert np.all(np.isfinite(U)) and U.shape == (7, (3 if share > 0 else 0) + D)
    assert np.all(np.abs(U).sum(axis=1) <= r1 * (1 + 1e-12))
    assert np.all(np.linalg.norm(U, axis=1) <= r2 * (1 + 1e-12))


def test_linear_share_is_the_documented_public_map_and_costs_the_same():
    """Features [sqrt(s) clip(x, r) / r, sqrt(1 - s) psi(x)]; the fit's declared event and its noise
    (sensitivity 2 sqrt(1 + intercept_scaling**2), the L2 bound) are those of the plain RBF map."""
    X, y = _circle(6, n=400)
    X[0] = [30.0, -40.0]  # norm 50: the linear part clips it to the reference norm 2
    X[1, 0] = np.nan
    plain = DPSVC(gamma=0.3, n_components=40, reference_norm=2.0, epsilon=2.0, classes=[0, 1], random_state=0,
                  linear_share=0.0)
    mixed = DPSVC(gamma=0.3, n_components=40, reference_norm=2.0, epsilon=2.0, classes=[0, 1], random_state=0,
                  linear_share=0.3)
    assert mixed._fit_privacy_event() == plain._fit_privacy_event()
    plain.fit(X, y)
    mixed.fit(X, y)
    assert mixed.linear_share_ == 0.3 and plain.linear_share_ == 0.0
    assert mixed.coef_.shape == (1, 2 + 40) and plain.coef_.shape == (1, 40)
    assert mixed.optimize_result_.sensitivity == pytest.approx(plain.optimize_result_.sensitivity)
    assert mixed.privacy_spent_ == plain.privacy_spent_
    Xf = np.where(np.isfinite(X), X, 0.0)
    xbar = Xf / np.maximum(2.0, np.linalg.norm(Xf, axis=1, keepdims=True))
    expected = np.hstack((math.sqrt(0.3) * xbar, math.sqrt(0.7) * plain._features(Xf, fitting=False)))
    expected /= np.maximum(1.0, np.linalg.norm(expected, axis=1, keepdims=True))
    np.testing.assert_allclose(mixed._features(Xf, fitting=False), expected, rtol=1e-9, atol=1e-12)  # as fit sees X
    np.testing.assert_array_equal(mixed.random_weights_, plain.random_weights_)  # the same public RBF part


def test_linear_share_validated_before_spending():
    X, y = _circle(5, n=100)
    acc = Accountant(Budget(10.0, 0.0))
    for bad in (1.0, -0.1, float("nan"), "0.5"):
        with pytest.raises(InvalidParameterError, match="'linear_share'"):
            DPSVC(accountant=acc, classes=[0, 1], noise="laplace", linear_share=bad).fit(X, y)
    assert len(acc.entries) == 0


def test_model_pickled_before_linear_share_still_predicts():
    X, y = _circle(7, n=300)
    clf = DPSVC(n_components=20, epsilon=5.0, classes=[0, 1], random_state=0, linear_share=0.0).fit(X, y)
    before = clf.decision_function(X)
    del clf.__dict__["linear_share_"]  # the fitted state of a release without the parameter
    np.testing.assert_array_equal(clf.decision_function(X), before)


@pytest.mark.parametrize("reference_norm", [1e-300, 5e-324, 1e300, 1.7e308])
@pytest.mark.parametrize("share", [0.0, 0.25])
@pytest.mark.parametrize("features,gamma", [("fourier", 1e3), ("taylor", 1e-300), ("taylor", 1.0), ("taylor", 1e3)])
def test_extreme_reference_norm_neither_raises_after_the_charge_nor_leaves_the_bounds(reference_norm, share,
                                                                                      features, gamma):
    """gamma * r**2 overflowed Python's float power (OverflowError) inside fit, after the charge; it now saturates
    (the centring constant a = e^{-inf} = 0: the plain map) and every row stays inside the declared bounds. The
    Taylor map alike (``privtune/svm/_taylor.py``): gamma r**2 under- or overflows (the weight goes to degree 1 or
    to the top degree) and the inputs are clipped to a denormal or huge norm and divided by it."""
    X = np.array([[1e-310, 0.0, 0.0], [1e300, -1e300, 5.0], [3.0, 4.0, 0.0], [0.0, 0.0, 0.0]] * 3)
    acc = Accountant(Budget(2.0, 1e-5))
    clf = DPSVC(reference_norm=reference_norm, linear_share=share, gamma=gamma, n_components=8, classes=[0, 1],
                random_state=0, accountant=acc, features=features).fit(X, np.r_[[0, 1] * 6])
    assert clf.features_ == features
    U = clf._features(X, fitting=False)
    r1, r2 = clf._feature_bounds(3)
    assert len(acc.entries) == 1 and np.isfinite(U).all() and np.isfinite(clf.coef_).all()
    assert np.all(np.linalg.norm(U, axis=1) <= r2 * (1 + 1e-12))
    assert np.all(np.abs(U).sum(axis=1) <= r1 * (1 + 1e-12))


@pytest.mark.filterwarnings("ignore::privtune.exceptions.LowUtilityWarning")
@pytest.mark.parametrize("estimator", ["DPLogisticRegression", "DPLinearSVC", "DPSVC"])
@pytest.mark.parametrize("solver", ["nag", "gd", "nag-opt"])
def test_a_huge_budget_never_makes_the_noisy_gradient_refuse(estimator, solver):
    """With a huge per-step budget a gradient sum can pass 2**51 steps of the Laplace path's exact grid, and
    whether it did depended on the rows (aligned labels: a large sum; alternating labels: a small one). The
    sampler used to refuse it after the charge; it now clips it to the grid's range (1-Lipschitz, same
    sensitivity): both data sets are fitted and charged alike, for every margin classifier and solver."""
    from privtune.accounting import Accountant, Budget
    from privtune.linear_model import DPLogisticRegression
    from privtune.svm import DPSVC, DPLinearSVC

    cls = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}[estimator]
    n = 400
    X = np.tile([[1.0, 0.0]], (n, 1))
    aligned, alternating = np.ones(n, dtype=int), np.arange(n) % 2
    aligned[0] = 0  # two classes in both
    ledgers = []
    for y in (aligned, alternating):
        acc = Accountant(Budget(1e16, 0.0))
        model = cls(epsilon=1e15, noise="laplace", solver=solver, accountant=acc, random_state=0).fit(X, y)
        assert np.all(np.isfinite(model.coef_))
        ledgers.append([e.event.to_dict() for e in acc.entries])
    assert ledgers[0] == ledgers[1] and len(ledgers[0]) == 1


_UNPLANNABLE = [
    ("DPLogisticRegression", dict(epsilon=1e-30), "exact noise grid"),
    ("DPLinearSVC", dict(epsilon=1e-30, noise="laplace"), "exact noise grid"),
    ("DPSVC", dict(epsilon=1e-30), "exact noise grid"),
    ("DPSVC", dict(epsilon=1e-30, solver="line-search"), "exact noise grid"),
    ("DPLogisticRegression", dict(intercept_scaling=1e200), "row bounds .* overflow"),
    ("DPLinearSVC", dict(intercept_scaling=1e200, solver="line-search"), "row bounds .* overflow"),
    ("DPSVC", dict(intercept_scaling=1e200, noise="laplace"), "row bounds .* overflow"),
    ("DPLogisticRegression", dict(data_norm=1e300), "row bounds .* overflow"),
    ("DPLinearSVC", dict(C=1e-300, solver="nag-opt"), "step schedule's coefficients are not finite"),
    ("DPSVC", dict(smoothing=1e300, solver="nag-opt"), "step schedule's coefficients are not finite"),
]


@pytest.mark.parametrize(("estimator", "params", "match"), _UNPLANNABLE)
def test_a_plan_no_grid_or_float_can_hold_is_refused_before_the_charge(estimator, params, match):
    """Public misconfigurations that no exact noise grid or float can hold were refused inside the solver, after
    the fit's charge (no leak, but the budget was lost; an IndexError for the opt horizon). The whole solver plan
    is now built from public sizes before the charge: refused with nothing spent, and the same from
    ``_check_fit_plan`` (what a search calls before it prepays its fits)."""
    from privtune.accounting import Accountant, Budget
    from privtune.exceptions import InvalidParameterError
    from privtune.linear_model import DPLogisticRegression
    from privtune.svm import DPSVC, DPLinearSVC

    cls = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}[estimator]
    X = np.random.default_rng(0).normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1e300, 0.5))
    model = cls(accountant=acc, random_state=0, **params)
    with pytest.raises(InvalidParameterError, match=match):
        model.fit(X, y)
    assert len(acc.entries) == 0 and not hasattr(model, "coef_")
    with pytest.raises(InvalidParameterError, match=match):
        model._check_fit_plan(300, 4)


@pytest.mark.parametrize("estimator", ["DPLogisticRegression", "DPLinearSVC", "DPSVC"])
@pytest.mark.parametrize("params", [{}, dict(solver="line-search"), dict(noise="laplace", solver="gd"),
                                    dict(fit_intercept=False, solver="nag-opt"), dict(noise="laplace", batch_size=64)])
def test_the_public_plan_matches_the_fit(estimator, params):
    """``fit`` checks that the features it builds have the width and bounds of its public plan (else an internal
    error): every solver, both noises, with and without the intercept, and DPSVC's linear share on and off."""
    from privtune.linear_model import DPLogisticRegression
    from privtune.svm import DPSVC, DPLinearSVC

    cls = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}[estimator]
    X = np.random.default_rng(1).normal(size=(200, 3))
    y = (X[:, 1] > 0).astype(int)
    shares = [{}, {"linear_share": 0.0}] if estimator == "DPSVC" else [{}]
    for extra in shares:
        model = cls(epsilon=1.0, random_state=0, **params, **extra).fit(X, y)
        width, r1, r2 = model._public_plan(200, 3, model._validate_common(estimator), estimator)
        assert width == model.coef_.shape[1] + int(model.fit_intercept)
