"""DPSVC's deterministic Taylor features (``features="taylor"``) and the ``features="auto"`` rule."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone

from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.optim.accelerated import gaussian_run_multiplier
from privtune.svm import DPSVC
from privtune.svm._rbf import COLUMN_BALANCE_MAX, auto_column_balance
from privtune.svm._taylor import (
    taylor_block_shares,
    taylor_coefficients,
    taylor_degree_for,
    taylor_dimension,
    taylor_map,
    taylor_sphere_mean,
)


def _unit_rows(seed: int, n: int, d: int) -> np.ndarray:
    U = np.random.default_rng(seed).normal(size=(n, d))
    return U / np.maximum(1.0, np.linalg.norm(U, axis=1, keepdims=True)) * 0.999


@pytest.mark.parametrize("d,degree", [(1, 5), (2, 8), (3, 4), (7, 2), (12, 3)])
@pytest.mark.parametrize("g,share", [(0.05, 0.0), (1.0, 0.0), (1.0, 0.25), (7.0, 0.6)])
def test_taylor_map_computes_the_truncated_series_exactly(d, degree, g, share):
    """<tau(u), tau(u')> = s u.u' + (1 - s) sum_{k=1..K} a_k (u.u')^k / S, a_k = (2g)^k / k! (module docstring):
    the monomials with their multinomial weights reproduce every power of the inner product."""
    U = _unit_rows(d * degree, 9, d)
    F = taylor_map(U, g, degree, share)
    assert F.shape == (9, taylor_dimension(d, degree)) == (9, math.comb(d + degree, degree) - 1)
    a = np.array([(2 * g) ** k / math.factorial(k) for k in range(1, degree + 1)])
    G = U @ U.T
    series = sum(a[k - 1] * G ** k for k in range(1, degree + 1)) / a.sum()
    np.testing.assert_allclose(F @ F.T, share * G + (1 - share) * series, rtol=1e-10, atol=1e-12)
    assert np.all(np.linalg.norm(F, axis=1) <= 1.0)


def test_taylor_coefficients_saturate_instead_of_overflowing():
    np.testing.assert_allclose(taylor_coefficients(1e308, 4), [0, 0, 0, 1])
    np.testing.assert_allclose(taylor_coefficients(0.0, 4), [1, 0, 0, 0])
    c = taylor_coefficients(1e200, 3)  # 2g finite but (2g)^k overflows a float: computed in log space
    assert np.all(np.isfinite(c)) and c[-1] == pytest.approx(1.0)
    np.testing.assert_allclose(np.sum(taylor_coefficients(0.7, 6) ** 2), 1.0)


def test_auto_degree_fills_the_feature_budget():
    assert taylor_degree_for(20, 500) == 2  # 230 columns; degree 3 would be 1 770
    assert taylor_degree_for(2, 100) == 8  # 44 columns, the top degree
    assert taylor_degree_for(64, 100) == 2  # never below 2, even over the budget (2 144 columns)
    assert taylor_dimension(5, 3) == 55 and taylor_dimension(5, 4) == 125
    assert taylor_degree_for(5, 124) == 3 and taylor_degree_for(5, 125) == 4


@pytest.mark.parametrize("n,d,expected", [(14000, 20, "taylor"), (3500, 20, "taylor"), (398, 30, "fourier"),
                                          (919, 20, "fourier"), (920, 20, "taylor"), (1400, 2, "taylor"),
                                          (175, 2, "fourier"), (176, 2, "taylor"), (1257, 64, "fourier")])
def test_auto_rule_reads_public_sizes_only(n, d, expected):
    """Taylor when n >= 4 x its columns (degree "auto"); every choice is a function of (n, d) and parameters."""
    kind, columns, degree = DPSVC()._feature_map_for(n, d)
    assert kind == expected
    if kind == "taylor":
        assert n >= 4 * columns and columns == taylor_dimension(d, degree)
    rows = np.random.default_rng(0).normal(size=(n, d))
    clf = DPSVC(epsilon=1.0, classes=[0, 1], random_state=0, max_iter=2).fit(rows, np.arange(n) % 2)
    assert clf.features_ == expected and clf.n_components_ == columns and clf.coef_.shape[1] == (
        columns if kind == "taylor" else columns + d)
    assert hasattr(clf, "random_weights_") == (kind == "fourier")


def test_taylor_fit_declares_the_same_event_and_sensitivity_as_fourier():
    """Both maps are public and clipped to the L2 norm 1: the Gaussian fit's event and its noise are the same."""
    X = _unit_rows(3, 3000, 2)
    y = (np.linalg.norm(X, axis=1) < 0.6).astype(int)
    fits = {f: DPSVC(features=f, epsilon=2.0, classes=[0, 1], random_state=0) for f in ("fourier", "taylor")}
    assert fits["taylor"]._fit_privacy_event() == fits["fourier"]._fit_privacy_event()
    for clf in fits.values():
        clf.fit(X, y)
    assert fits["taylor"].optimize_result_.sensitivity == pytest.approx(fits["fourier"].optimize_result_.sensitivity)
    spent = [fits[f].privacy_spent_ for f in ("taylor", "fourier")]  # other horizons: rounding apart only
    assert spent[0].delta == spent[1].delta and spent[0].epsilon == pytest.approx(spent[1].epsilon, rel=1e-12)
    assert fits["taylor"].score(X, y) > 0.9  # a circle: exact in the degree-2 monomials


@settings(deadline=None, max_examples=60)
@given(X=arrays(np.float64, (6, 3), elements=st.floats(-1.7e308, 1.7e308)), degree=st.integers(1, 6),
       gamma=st.floats(1e-300, 1e300), share=st.floats(0.0, 0.99), ref=st.sampled_from([1.0, 1e-3, 50.0, None]),
       balance=st.sampled_from([0.0, 0.3, 1.0, "auto"]))
def test_taylor_rows_satisfy_the_declared_bounds(X, degree, gamma, share, ref, balance):
    """Any finite input, huge or tiny, any gamma and balance: finite rows inside the declared L1 / L2 bounds."""
    clf = DPSVC(features="taylor", degree=degree, gamma=gamma, linear_share=share, reference_norm=ref,
                column_balance=balance, epsilon=100.0, random_state=0, max_iter=1)
    clf.fit(np.vstack((np.zeros((7, 3)), np.ones((7, 3)))), np.r_[np.zeros(7), np.ones(7)])
    U = clf._features(X, fitting=False)
    r1, r2 = clf._feature_bounds(3)
    assert np.all(np.isfinite(U)) and U.shape == (6, taylor_dimension(3, degree))
    assert np.all(np.linalg.norm(U, axis=1) <= r2 * (1 + 1e-12))
    assert np.all(np.abs(U).sum(axis=1) <= r1 * (1 + 1e-12))


def test_non_finite_inputs_are_mapped_alike_in_fit_and_predict():
    X = _unit_rows(4, 400, 3)
    X[0, 1], X[1, 0] = np.nan, np.inf
    y = np.arange(400) % 2
    clf = DPSVC(features="taylor", epsilon=3.0, classes=[0, 1], random_state=0).fit(X, y)
    Xf = np.where(np.isfinite(X), X, 0.0)
    np.testing.assert_array_equal(clf.decision_function(X), clf.decision_function(Xf))
    assert np.isfinite(clf.coef_).all()


def test_parameters_validated_before_spending():
    X, y = _unit_rows(5, 100, 3), np.arange(100) % 2
    acc = Accountant(Budget(10.0, 1e-5))
    for bad in ({"features": "nystroem"}, {"features": None}, {"degree": 0}, {"degree": 11}, {"degree": 2.5},
                {"degree": "high"}, {"column_balance": -0.1}, {"column_balance": 1.5}, {"column_balance": "max"},
                {"column_balance": None}, {"column_balance": float("nan")}, {"horizon_floor": -0.5},
                {"horizon_floor": float("nan")}, {"horizon_floor": True}, {"horizon_floor": None},
                {"horizon_floor": 1e7}):
        with pytest.raises(InvalidParameterError, match="'features'|'degree'|'column_balance'|'horizon_floor'"):
            DPSVC(accountant=acc, classes=[0, 1], **bad).fit(X, y)
    with pytest.raises(InvalidParameterError, match="monomials"):  # C(400 + 10, 10) columns: public sizes
        DPSVC(accountant=acc, classes=[0, 1], features="taylor", degree=10).fit(np.zeros((4, 400)), [0, 1, 0, 1])
    assert len(acc.entries) == 0


def test_clone_pickle_and_multiclass():
    X = _unit_rows(6, 900, 2)
    y = np.digitize(np.linalg.norm(X, axis=1), [0.4, 0.7])
    clf = DPSVC(features="taylor", epsilon=5.0, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, clf.n_components_) and clf.degree_ == taylor_degree_for(2, 120)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))
    np.testing.assert_array_equal(clone(clf).fit(X, y).coef_, clf.coef_)  # seeded: reproducible
    assert clf.score(X, y) > 0.6


def test_model_pickled_before_features_still_predicts_with_fourier():
    X = _unit_rows(7, 300, 2)
    y = (X[:, 0] > 0).astype(int)
    clf = DPSVC(features="fourier", n_components=20, epsilon=5.0, classes=[0, 1], random_state=0).fit(X, y)
    before = clf.decision_function(X)
    for name in ("features_", "degree_", "n_components_"):
        del clf.__dict__[name]  # the fitted state of a release without the parameter
    np.testing.assert_array_equal(clf.decision_function(X), before)


@pytest.mark.parametrize("features", ["taylor", "fourier"])
@pytest.mark.parametrize("share", [0.0, 0.25])
def test_the_plan_declares_what_the_fit_uses(features, share):
    """The plan (read before the charge, from n and d) and the fitted map agree on the columns and the declared
    L1 / L2 bounds, so a Laplace fit's sensitivity is the planned one."""
    X = _unit_rows(8, 600, 3)
    y = (X[:, 0] > 0).astype(int)
    clf = DPSVC(features=features, linear_share=share, noise="laplace", epsilon=2.0, classes=[0, 1],
                random_state=0)
    width, r1, r2 = clf._planned_features(600, 3)
    clf.fit(X, y)
    assert clf.coef_.shape[1] == width and (r1, r2) == clf._feature_bounds(3)
    assert clf.optimize_result_.sensitivity == pytest.approx(2 * min(r1 + 0.5, math.sqrt(width + 1) * math.hypot(
        r2, 0.5)))  # the L1 bound of the rows with the intercept column (scaling 0.5), as in test_svm.py
    assert math.isclose(clf.privacy_spent_.epsilon, 2.0, rel_tol=1e-9) and clf.privacy_spent_.delta == 0.0



def test_an_explicit_feature_count_caps_the_taylor_map_under_auto():
    """n_components=50 on 20 features: the degree-2 map has 230 columns, more than asked, so "auto" keeps the
    50 random features; with the default count (473 at 14 000 rows) it takes the 230 Taylor columns."""
    assert DPSVC(n_components=50)._feature_map_for(14000, 20) == ("fourier", 50, None)
    assert DPSVC()._feature_map_for(14000, 20) == ("taylor", 230, 2)
    assert DPSVC(n_components=230)._feature_map_for(14000, 20) == ("taylor", 230, 2)
    assert DPSVC(n_components=50, features="taylor")._feature_map_for(14000, 20) == ("taylor", 230, 2)


@pytest.mark.parametrize("d,degree", [(2, 8), (7, 2), (5, 3)])
@pytest.mark.parametrize("g,share", [(0.3, 0.0), (1.0, 0.25), (3.0, 0.25)])
@pytest.mark.parametrize("beta", [0.0, 0.4, 0.75, 1.0])
def test_column_balance_is_a_reweighted_dot_product_kernel(d, degree, g, share, beta):
    """<tau(u), tau(u')> = sum_k w_k (u.u')^k with w = s**(1 - beta) (m / M)**beta renormalised (module
    docstring): still exact, still of norm 1 at ||u|| = 1; beta = 0 is the kernel's weighting, beta = 1 the
    blocks' column counts."""
    U = _unit_rows(d + degree, 8, d)
    kernel = taylor_block_shares(g, degree, d, share)
    counts = np.array([math.comb(d + k - 1, k) for k in range(1, degree + 1)], dtype=float)
    w = taylor_block_shares(g, degree, d, share, beta)
    expected = kernel ** (1 - beta) * (counts / counts.sum()) ** beta
    np.testing.assert_allclose(w, expected / expected.sum(), rtol=1e-12)
    F = taylor_map(U, g, degree, share, beta)
    G = U @ U.T
    np.testing.assert_allclose(F @ F.T, sum(w[k - 1] * G ** k for k in range(1, degree + 1)), rtol=1e-10,
                               atol=1e-12)
    V = U / np.linalg.norm(U, axis=1, keepdims=True)
    np.testing.assert_allclose(np.linalg.norm(taylor_map(V, g, degree, share, beta), axis=1), 1.0, rtol=1e-12)
    if beta == 1.0:
        np.testing.assert_allclose(w, counts / counts.sum(), rtol=1e-12)


def test_column_balance_saturates_with_the_coefficients():
    """A block the kernel gives no weight (gamma overflowing or underflowing) keeps none below beta = 1."""
    np.testing.assert_allclose(taylor_block_shares(1e308, 3, 4, 0.0, 0.5), [0, 0, 1])
    np.testing.assert_allclose(taylor_block_shares(0.0, 3, 4, 0.0, 0.75), [1, 0, 0])
    c = np.array([4, 10, 20], dtype=float)
    np.testing.assert_allclose(taylor_block_shares(0.0, 3, 4, 0.0, 1.0), c / c.sum())


def _ratio(eps, n, columns):
    return 2 * gaussian_run_multiplier(eps, 1e-6) * math.sqrt(columns) / n


def test_auto_column_balance_follows_the_public_noise_to_signal_ratio():
    """0.75 clip(log10(0.1 / r), 0, 1) with r = 2 nm sqrt(columns) / n: none in the noisy regime, 0.75 in the
    quiet one, never smaller with more budget or more rows; none under Laplace noise (not measured)."""
    assert auto_column_balance(0.1, 1e-6, "gaussian", 3500, 231) == 0.0  # r about 0.4
    assert auto_column_balance(10.0, 1e-6, "gaussian", 14000, 231) == COLUMN_BALANCE_MAX
    for eps, n, cols in ((0.3, 14000, 231), (1.0, 1400, 45), (0.1, 35000, 286)):
        r = _ratio(eps, n, cols)
        assert 0.01 < r < 0.1
        assert auto_column_balance(eps, 1e-6, "gaussian", n, cols) == pytest.approx(
            0.75 * math.log10(0.1 / r), rel=1e-12)
    grid = [auto_column_balance(e, 1e-6, "gaussian", n, 231) for n in (700, 3500, 14000, 70000)
            for e in (0.05, 0.1, 0.3, 1, 3, 10, 30)]
    by_eps = np.array(grid).reshape(4, 7)
    assert np.all(np.diff(by_eps, axis=1) >= 0) and np.all(np.diff(by_eps, axis=0) >= 0)
    assert auto_column_balance(10.0, 0.0, "laplace", 14000, 231) == 0.0


def test_fitted_column_balance_is_the_public_rule_and_only_moves_accuracy():
    """The fit records the balance it used (the rule's value from epsilon, delta, n and the columns; None with the
    Fourier map); the charged event does not depend on it."""
    X = _unit_rows(9, 3000, 2)
    y = (np.linalg.norm(X, axis=1) < 0.6).astype(int)
    auto = DPSVC(epsilon=2.0, classes=[0, 1], random_state=0).fit(X, y)
    assert auto.features_ == "taylor" and auto.column_balance_ == auto_column_balance(
        2.0, 1e-6, "gaussian", 3000, auto.n_components_ + 1) > 0
    plain = DPSVC(epsilon=2.0, classes=[0, 1], random_state=0, column_balance=0.0).fit(X, y)
    assert plain.column_balance_ == 0.0 and auto._fit_privacy_event() == plain._fit_privacy_event()
    assert auto.privacy_spent_ == plain.privacy_spent_
    assert not np.allclose(auto._features(X[:5], fitting=False), plain._features(X[:5], fitting=False))
    fixed = DPSVC(epsilon=2.0, classes=[0, 1], random_state=0, column_balance=1).fit(X, y)
    assert fixed.column_balance_ == 1.0
    fourier = DPSVC(features="fourier", epsilon=2.0, classes=[0, 1], random_state=0).fit(X, y)
    assert fourier.column_balance_ is None
    before = plain.decision_function(X)
    del plain.__dict__["column_balance_"]  # a model pickled before the balance: the kernel's weighting
    np.testing.assert_array_equal(plain.decision_function(X), before)


@pytest.mark.parametrize("d,degree", [(1, 8), (2, 8), (3, 5), (7, 2), (4, 4)])
@pytest.mark.parametrize("g,share,beta", [(1.0, 0.25, 0.0), (0.3, 0.0, 0.75), (3.0, 0.25, 0.4)])
def test_taylor_sphere_mean_is_exact(d, degree, g, share, beta):
    """<mu, tau(v)> = E_u <tau(u), tau(v)> = sum_k w_k E[u_1**k] for any unit v (u uniform on the sphere), with
    E[u_1**(2j)] = Gamma(d/2) Gamma(j + 1/2) / (Gamma(1/2) Gamma(d/2 + j)) and odd moments 0: checks every column's
    mean through the kernel; odd-degree blocks have mean 0."""
    mu = taylor_sphere_mean(d, degree, g, share, beta)
    w = taylor_block_shares(g, degree, d, share, beta)
    moments = [0.0 if k % 2 else math.exp(math.lgamma(d / 2) + math.lgamma(k / 2 + 0.5) - math.lgamma(0.5)
                                          - math.lgamma(d / 2 + k / 2)) for k in range(1, degree + 1)]
    V = _unit_rows(d, 6, d)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    np.testing.assert_allclose(taylor_map(V, g, degree, share, beta) @ mu, np.dot(w, moments), rtol=1e-10, atol=1e-13)
    sizes = [math.comb(d + k - 1, k) for k in range(1, degree + 1)]
    blocks = np.split(mu, np.cumsum(sizes)[:-1])
    assert all(np.all(b == 0.0) for k, b in enumerate(blocks, 1) if k % 2)
    if d == 1:  # the sphere is {-1, 1}: tau's even part is constant, so ||mu||**2 is the even blocks' share
        assert mu @ mu == pytest.approx(sum(w[1::2]), rel=1e-12)
    assert mu @ mu < 1.0


def test_dpsvc_centres_the_taylor_map_on_the_reference_sphere():
    """Rows of norm r map to (tau - mu) / sqrt(1 - ||mu||**2): mean 0 over the sphere (exact quadrature on the
    circle) and norm exactly 1 on it (<tau(u), mu> = E_v k(u.v) = ||mu||**2 is the same for every unit u, so
    ||tau(u) - mu||**2 = 1 - ||mu||**2); reference_norm=None keeps the plain map; a model pickled before the
    centring predicts with the plain map."""
    X = _unit_rows(10, 2000, 2)
    y = (np.linalg.norm(X, axis=1) < 0.6).astype(int)
    clf = DPSVC(features="taylor", epsilon=2.0, classes=[0, 1], random_state=0).fit(X, y)
    mu = clf.taylor_centre_
    np.testing.assert_array_equal(mu, taylor_sphere_mean(2, clf.degree_, 1.0, 0.25, clf.column_balance_))
    angles = np.linspace(0.0, 2 * np.pi, 4096, endpoint=False)  # exact for the circle's trigonometric polynomials
    F = clf._features(np.c_[np.cos(angles), np.sin(angles)], fitting=False)
    assert np.abs(F.mean(axis=0)).max() < 1e-12
    np.testing.assert_allclose(np.linalg.norm(F, axis=1), 1.0, rtol=1e-10)
    plain = DPSVC(features="taylor", reference_norm=None, epsilon=2.0, classes=[0, 1], random_state=0).fit(X, y)
    assert plain.taylor_centre_ is None
    np.testing.assert_allclose(plain._features(X[:4], fitting=False),
                               taylor_map(X[:4] / np.maximum(1, np.linalg.norm(X[:4], axis=1, keepdims=True)),
                                          1.0, plain.degree_, 0.25, plain.column_balance_), rtol=1e-12)
    before = clf.decision_function(X)
    del clf.__dict__["taylor_centre_"]
    assert not np.allclose(clf.decision_function(X), before)  # the fitted state of a release before the centring
    assert clf.predict(X).shape == (2000,)
