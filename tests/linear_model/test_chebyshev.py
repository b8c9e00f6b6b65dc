"""Tests of DPChebyshevRegressor: sklearn conventions, the problem solved, clipping, accounting."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from privtune.accounting import Accountant, Budget, LaplaceEvent
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.linear_model._chebyshev import DPChebyshevRegressor
from privtune.optim.piecewise import solve_pwa

ESTIMATORS = [
    DPChebyshevRegressor(random_state=0),
    DPChebyshevRegressor(method="perturb-solution", random_state=0),
    DPChebyshevRegressor(method="subgradient", n_iter=20, random_state=0),
    # sklearn's check data are wide; a 3-sweep Gibbs chain has no useful certificate there
    DPChebyshevRegressor(method="exponential", n_steps=3, certified_only=False, random_state=0),
]


# The targets are private, so their values are never refused (whether fit raises would depend on one target): a
# NaN target is mapped to the middle of the declared range and every target is clipped to it.
EXPECTED_FAILED = {"check_supervised_y_no_nan": "private targets are mapped into the declared range, not refused"}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    """All of scikit-learn's estimator checks pass; no expected failures are declared.

    A few sklearn checks draw their test data from numpy's *global* generator
    (e.g. ``check_methods_sample_order_invariance``); its state is restored after
    the check so that the conftest guard (privtune never touches the global RNG)
    stays meaningful for every other test in this file.
    """
    state = np.random.get_state()
    try:
        check(estimator)
    finally:
        np.random.set_state(state)


def data(seed=0, n=60, d=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = X @ np.array([0.4, -0.3])[:d] + 0.1 + 0.05 * rng.uniform(-1, 1, n)
    return X, y


def reference_fit(X, y, lo, hi, ilo, ihi):
    Z = np.hstack([X, np.ones((len(X), 1))])
    d = X.shape[1]
    w, value = solve_pwa(np.vstack([Z, -Z]), np.r_[-y, y], np.r_[np.full(d, lo), ilo], np.r_[np.full(d, hi), ihi])
    return w, value


@pytest.mark.parametrize("method", ["perturb-objective", "perturb-solution"])
def test_huge_epsilon_gives_the_chebyshev_fit(method):
    X, y = data()
    reg = DPChebyshevRegressor(epsilon=1e10, method=method, random_state=0).fit(X, y)
    w, value = reference_fit(X, y, -1.0, 1.0, -1.0, 1.0)
    assert reg.coef_ == pytest.approx(w[:-1], abs=1e-5) and reg.intercept_ == pytest.approx(w[-1], abs=1e-5)
    assert np.max(np.abs(reg.predict(X) - y)) == pytest.approx(value, abs=1e-5)
    assert value < 0.06  # the data are a line plus noise of at most 0.05


def test_subgradient_and_exponential_near_the_fit_at_large_epsilon():
    X, y = data(1)
    _, value = reference_fit(X, y, -1.0, 1.0, -1.0, 1.0)
    sg = DPChebyshevRegressor(epsilon=1e7, method="subgradient", n_iter=3000, random_state=0).fit(X, y)
    em = DPChebyshevRegressor(epsilon=2e4, method="exponential", n_steps=100, certified_only=False,
                              random_state=0).fit(X, y)
    for reg in (sg, em):
        assert np.max(np.abs(reg.predict(X) - y)) - value < 0.05


def test_no_intercept_and_custom_boxes():
    X, y = data(2)
    reg = DPChebyshevRegressor(epsilon=1e10, fit_intercept=False, bounds=([0.0, -0.1], [1.0, 0.1]),
                               random_state=0).fit(X, y)
    assert reg.intercept_ == 0.0 and 0.0 <= reg.coef_[0] <= 1.0 and abs(reg.coef_[1]) <= 0.1 + 1e-12
    w, _ = solve_pwa(np.vstack([X, -X]), np.r_[-y, y], np.array([0.0, -0.1]), np.array([1.0, 0.1]))
    assert reg.coef_ == pytest.approx(w, abs=1e-5)


def test_targets_are_clipped_to_the_declared_range():
    """Outliers beyond target_bound change nothing once clipped: same seed, same output."""
    X, y = data(3)
    y_out = y.copy()
    y_out[:5] = 1e6 * np.sign(y_out[:5] + 1e-3)
    y_clip = np.clip(y_out, -0.5, 0.5)
    for method in ("perturb-objective", "subgradient"):
        a = DPChebyshevRegressor(method=method, target_bound=0.5, random_state=7).fit(X, y_out)
        b = DPChebyshevRegressor(method=method, target_bound=0.5, random_state=7).fit(X, y_clip)
        assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_


def test_sensitivities_follow_the_target_range():
    X, y = data(4)
    reg = DPChebyshevRegressor(epsilon=0.5, target_bound=(-1.0, 3.0), random_state=0).fit(X, y)
    # one target replaced: two offsets move by at most hi - lo = 4 each -> L1 sensitivity 8
    assert reg.result_.history["l1_sensitivity"] == pytest.approx(8.0)
    assert reg.result_.history["scale"] == pytest.approx(8.0 * (1 + 2**-10) / 0.5)
    assert -1.0 <= reg.intercept_ <= 3.0  # default intercept box = target range


@pytest.mark.parametrize("method", ["perturb-objective", "perturb-solution", "subgradient"])
def test_accountant_is_charged(method):
    X, y = data(5)
    acc = Accountant(Budget(1.0, 0.0))
    reg = DPChebyshevRegressor(epsilon=0.4, method=method, accountant=acc, random_state=0).fit(X, y)
    assert reg.privacy_spent_ == Budget(0.4, 0.0) and acc.spent.epsilon == pytest.approx(0.4)
    assert reg.privacy_guarantee_ == "unconditional" and reg.seeded_
    reg.fit(X, y)
    assert acc.spent.epsilon == pytest.approx(0.8)
    with pytest.raises(BudgetExceededError):
        reg.fit(X, y)
    assert acc.spent.epsilon == pytest.approx(0.8)


def test_over_budget_fit_sets_nothing():
    X, y = data(6)
    acc = Accountant(Budget(0.5, 0.0))
    acc.spend(LaplaceEvent(epsilon=0.3))
    reg = DPChebyshevRegressor(epsilon=0.4, accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError):
        reg.fit(X, y)
    assert not hasattr(reg, "coef_") and len(acc) == 1


@pytest.mark.parametrize("params, match", [
    (dict(epsilon=-1.0), "epsilon"),
    (dict(method="lasso"), "method"),
    (dict(bounds=(1.0, 0.0)), "lo < hi"),
    (dict(target_bound=0.0), "target_bound"),
    (dict(target_bound=(2.0, 1.0)), "target_bound"),
    (dict(intercept_bounds=(0.0, np.inf)), "intercept_bounds"),
    (dict(n_iter=0), "n_iter"),
    (dict(sampler="hmc"), "sampler"),
    (dict(fit_intercept="yes"), "fit_intercept"),
    (dict(random_state=-3), "random_state"),
    (dict(method="exponential", sampler="metropolis"), "certificate"),
])
def test_bad_parameters_refused_before_spending(params, match):
    X, y = data(7)
    acc = Accountant(Budget(10.0, 0.0))
    with pytest.raises(InvalidParameterError, match=match):
        DPChebyshevRegressor(accountant=acc, **params).fit(X, y)
    assert len(acc) == 0


def test_bad_public_data_refused_before_spending_private_targets_never_refused():
    X, y = data(8)
    acc = Accountant(Budget(10.0, 0.0))
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    for XX, yy in ((X_inf, y), (X, y[:-1])):  # the features and the shapes are public
        with pytest.raises(InvalidParameterError):
            DPChebyshevRegressor(accountant=acc).fit(XX, yy)
    assert len(acc) == 0
    for bad in (np.nan, np.inf, -1e300):  # a target's value is private: mapped into the range, one charge each
        yy = y.copy()
        yy[0] = bad
        DPChebyshevRegressor(accountant=acc, random_state=0).fit(X, yy)
    assert len(acc) == 3


def test_tags_say_the_guarantee_covers_labels_only():
    from privtune.base import get_privacy_tags

    assert get_privacy_tags(DPChebyshevRegressor()).covers == "labels"


def test_clone_and_pickle():
    X, y = data(9)
    reg = DPChebyshevRegressor(epsilon=2.0, method="subgradient", random_state=3).fit(X, y)
    again = pickle.loads(pickle.dumps(reg))
    assert np.array_equal(again.predict(X), reg.predict(X))
    fresh = clone(reg)
    assert not hasattr(fresh, "coef_") and fresh.get_params() == reg.get_params()
    assert np.array_equal(fresh.fit(X, y).coef_, reg.coef_)  # seeded: same output


def test_unseeded_fits_differ_and_are_marked_secure():
    X, y = data(10)
    # LP solutions sit on vertices, so two noisy fits can coincide; ten fits at a small epsilon cannot all do so
    # except with negligible probability.
    fits = [DPChebyshevRegressor(epsilon=0.01).fit(X, y) for _ in range(10)]
    assert not any(f.seeded_ for f in fits)
    assert len({(tuple(f.coef_), float(f.intercept_)) for f in fits}) > 1


@pytest.mark.parametrize("method", ["perturb-objective", "perturb-solution"])
def test_a_range_too_far_from_zero_for_the_exact_grid_is_refused_before_the_charge(method):
    """The exact Laplace sampler refuses |value| / grid >= 2**51. Checked on the noisy value, after the charge,
    that refusal depended on the private targets (one side of the line or the other); it is now decided from
    the declared target range / box before anything is spent, whatever the targets."""
    from privtune.accounting import Accountant, Budget
    from privtune.exceptions import InvalidParameterError
    from privtune.mechanisms import Laplace

    X = np.random.default_rng(0).normal(size=(30, 2))
    far = 2.0**51 * Laplace(epsilon=1.0, sensitivity=2.0, random_state=0).grid_spacing(60)
    if method == "perturb-objective":
        kw = dict(target_bound=(far - 0.5, far + 0.5))
    else:
        kw = dict(bounds=(1e15, 1e15 + 1.0), fit_intercept=False)  # the solution lies in this box
    for y in (np.full(30, far - 0.4), np.full(30, far + 0.4)):
        acc = Accountant(Budget(10.0, 0.0))
        with pytest.raises(InvalidParameterError, match="too far from 0 for the exact noise grid"):
            DPChebyshevRegressor(method=method, epsilon=1.0, accountant=acc, random_state=0, **kw).fit(X, y)
        assert len(acc.entries) == 0


_LP_METHODS = [("perturb-solution", {}), ("perturb-objective", {}),
               ("exponential", dict(sampler="rejection", n_steps=50, certified_only=False))]


@pytest.mark.parametrize(("method", "extra"), _LP_METHODS)
def test_a_target_past_the_lp_solvers_infinity_is_never_refused_after_the_charge(method, extra):
    """HiGHS rejects a right-hand side of 1e20 or more as "infinite". With a declared range of 1e30, a target of
    1e25 (inside it) made the exact LP of M_S and of the rejection sampler fail after the charge while small
    targets did not: a refusal that depended on one target's value. The LP is now rescaled (powers of two) when
    HiGHS rejects it, so both fit and charge once; M_P (whose noisy offsets, at this range, always broke HiGHS)
    fits too, as does any fit on huge public features (which failed after the charge whatever the targets)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) / 2
    small = np.clip(0.5 * X[:, 0], -1.0, 1.0)
    big = small.copy()
    big[5] = 1e25
    cases = [(X, small, 1e30), (X, big, 1e30), (X * 1e154, small, 1.0)]
    for Xc, y, bound in cases:
        acc = Accountant(Budget(1e300, 0.5))
        reg = DPChebyshevRegressor(method=method, target_bound=bound, accountant=acc, random_state=0, **extra)
        reg.fit(Xc, y)
        assert len(acc.entries) == 1
        assert np.all(np.abs(reg.coef_) <= 1.0) and abs(reg.intercept_) <= bound


def test_the_rescaled_lp_finds_the_chebyshev_centre_of_an_outlier():
    """One target of 1e25 among small ones: the minimax intercept is half of it (max residual 5e24)."""
    X = np.random.default_rng(1).normal(size=(40, 3)) / 2
    y = np.clip(0.5 * X[:, 0], -1.0, 1.0)
    y[5] = 1e25
    Z = np.c_[X, np.ones(40)]
    lo, hi = np.r_[np.full(3, -1.0), -1e30], np.r_[np.full(3, 1.0), 1e30]
    w, value = solve_pwa(np.vstack([Z, -Z]), np.r_[-y, y], lo, hi)
    assert w[-1] == pytest.approx(5e24, rel=1e-6) and value == pytest.approx(5e24, rel=1e-6)
    assert np.all((lo <= w) & (w <= hi))


@pytest.mark.parametrize(("method", "extra"), _LP_METHODS)
def test_a_failing_lp_solver_never_refuses_after_the_charge(method, extra, monkeypatch):
    """If HiGHS still reported no optimum, M_S and the rejection sampler raised RuntimeError after the charge on
    the raw targets (a refusal depending on them). Now M_S adds its noise to the box's centre (any map into the
    box is covered by its sensitivity), the rejection sampler starts from the closed-form lower bound of min f
    (exact, same certificate), and M_P releases the centre (post-processing)."""
    import privtune.optim.piecewise._core as core

    class _Failed:
        status, x, message = 2, None, "forced failure"

    monkeypatch.setattr(core, "linprog", lambda *a, **k: _Failed())
    X = np.random.default_rng(2).normal(size=(30, 2)) / 2
    y = np.clip(0.4 * X[:, 1], -1.0, 1.0)
    acc = Accountant(Budget(1e300, 0.5))
    reg = DPChebyshevRegressor(method=method, accountant=acc, random_state=0, **extra).fit(X, y)
    assert len(acc.entries) == 1
    assert np.all(np.abs(reg.coef_) <= 1.0) and abs(reg.intercept_) <= 1.0
    if method == "perturb-objective":
        assert np.all(reg.coef_ == 0.0) and reg.intercept_ == 0.0  # the centre of the default boxes


@pytest.mark.parametrize(("feature_scale", "box", "target_bound"), [
    (1.0, 1e200, 1.0),         # ||hi - lo|| overflowed: step inf, inf * 0 = NaN in the update
    (1.0, 1.7e308, 1.0),       # hi - lo itself overflows
    (1.0, 1.0, 1e200),         # the intercept's box is the target range
    (1e300, 1.0, 1.0),         # ||a_i|| overflowed: step 0, average 0 / 0
    (1e154, 1e154, 1e154),     # the scores a_i . x + b_i overflowed: refused after the charge
])
def test_subgradient_on_huge_public_magnitudes_is_finite_and_charged_once(feature_scale, box, target_bound):
    """With public boxes, target ranges or features of 1e154 and more, the subgradient method returned NaN
    coefficients (the norms of its default step and its weighted average overflowed) or, where the scores
    overflowed, refused after the charge. The norms, the average and the scores are now computed on values scaled
    by powers of two (exact, and bit-identical for ordinary magnitudes); the events are unchanged."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3)) / 2 * feature_scale
    y = np.clip(0.5 * rng.normal(size=40), -1.0, 1.0) * target_bound
    acc = Accountant(Budget(1e300, 0.5))
    reg = DPChebyshevRegressor(method="subgradient", bounds=(-box, box), target_bound=target_bound, n_iter=20,
                               accountant=acc, random_state=0).fit(X, y)
    w = np.r_[reg.coef_, reg.intercept_]
    assert np.all(np.isfinite(w)) and np.all(np.abs(reg.coef_) <= box) and abs(reg.intercept_) <= target_bound
    assert len(acc.entries) == 1 and reg.privacy_spent_.epsilon == pytest.approx(1.0)
    hist = reg.result_.history
    assert np.all(np.isfinite(hist["step_sizes"])) and np.all(hist["step_sizes"] > 0)
    assert np.all(np.isfinite(hist["iterates"]))
