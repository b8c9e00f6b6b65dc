"""Declared bounds outside float32's normal range: rows stored in float64 there, refused beyond float64's range.

Issue 37, item 2: ``compact_rows`` shrinks the rows by ``1 - 2**-16`` to absorb float32's *relative* rounding, but
below ``2**-126`` float32 rounds absolutely (a stored row was 10 % over its declared L2 bound at ``data_norm =
1e-44``), and near ``3.4e38`` the entries or the gradient's partial sums overflow (the fit raised after its charge,
depending on the rows). ``storage_dtype`` now decides, from public quantities only, whether the rows are stored in
float32, in float64, or refused before any charge.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import privtune.linear_model._margin as margin_module
import privtune.optim.accelerated._solvers as accelerated_module
from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.optim import dp_accelerated
from privtune.optim._losses import MarginLoss, SoftmaxLoss, clip_rows, compact_rows, storage_dtype
from privtune.svm import DPSVC, DPLinearSVC


def _exact_norm_at_most(row: np.ndarray, bound: float, norm: int) -> bool:
    """``||row||_norm <= bound`` in exact rational arithmetic (the stored floats' exact values)."""
    values = [Fraction(float(v)) for v in row]
    if norm == 1:
        return sum((abs(v) for v in values), Fraction(0)) <= Fraction(bound)
    return sum((v * v for v in values), Fraction(0)) <= Fraction(bound) ** 2


def _rows_at_and_over(rng: np.random.Generator, bound: float, n: int, d: int, norm: int) -> np.ndarray:
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, ord=norm, axis=1, keepdims=True)
    X *= bound * (1.0 + 1e-9)  # just over the bound (clipped) ...
    X[::3] *= 5.0  # ... far over
    X[1::3] *= 0.999  # ... and just inside (kept, only shrunk)
    return X


class _Spy:
    """Records the rows the estimator hands to its solver."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rows: np.ndarray | None = None
        original = margin_module.dp_accelerated

        def spy(X, y, **kwargs):
            self.rows = np.array(X)
            return original(X, y, **kwargs)

        monkeypatch.setattr(margin_module, "dp_accelerated", spy)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("Est", [DPLogisticRegression, DPLinearSVC])
@pytest.mark.parametrize("bound", [1e-44, 1e-42, 1e-40])
def test_rows_stored_at_tiny_bounds_stay_inside_the_declared_bound(monkeypatch, Est, noise, bound):
    """The rows the solver reads have exact norms at most the declared bound (L2 for Gaussian noise, L1 for
    Laplace). Before the fix they were float32 rows rounded absolutely: 10 % over at 1e-44, 0.1 % at 1e-42."""
    spy = _Spy(monkeypatch)
    norm = 2 if noise == "gaussian" else 1
    X = _rows_at_and_over(np.random.default_rng(0), bound, 120, 4, norm)
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1.0, 1e-6 if noise == "gaussian" else 0.0))
    Est(data_norm=bound, noise=noise, fit_intercept=False, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    assert spy.rows is not None and spy.rows.dtype == np.float64
    assert all(_exact_norm_at_most(row, bound, norm) for row in spy.rows)
    assert np.isclose(acc.spent.epsilon, 1.0, rtol=3e-3)


@pytest.mark.parametrize("Est", [DPLogisticRegression, DPLinearSVC])
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_a_fit_at_a_huge_bound_does_not_raise_after_its_charge(Est, noise):
    """data_norm = 1e38 (inside float32's range of entries, not of the gradient's sums of 32 rows): the rows at the
    bound used to overflow a partial sum, and the fit raised after charging. Now they are stored in float64."""
    rng = np.random.default_rng(1)
    norm = 2 if noise == "gaussian" else 1
    X = _rows_at_and_over(rng, 1e38, 300, 3, norm)
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1.0, 1e-6 if noise == "gaussian" else 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning may depend on a row either
        clf = Est(data_norm=1e38, noise=noise, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))
    assert np.isclose(acc.spent.epsilon, 1.0, rtol=3e-3)


def test_dpsvc_with_a_huge_intercept_scaling_does_not_raise_after_its_charge():
    """DPSVC's features are bounded by 1, but its intercept column is the declared intercept_scaling: at 1e38 the
    float32 partial sums of that column overflowed (after the charge)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1.0, 1e-6))
    clf = DPSVC(intercept_scaling=1e38, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.coef_)) and np.isclose(acc.spent.epsilon, 1.0, rtol=3e-3)


@pytest.mark.parametrize("params", [
    dict(data_norm=1e-130, fit_intercept=False),  # below float64's range (sqrt(d) 2**-400 ~ 1e-120)
    dict(data_norm=1e-130, fit_intercept=False, noise="laplace"),
    dict(data_norm=1e130),  # above 2**400 ~ 2.6e120
    dict(intercept_scaling=1e130),
    dict(data_norm=1e-100, fit_intercept=False, max_slope=1e-30),  # kappa R below the float64 range
    dict(data_norm=1e130, solver="line-search"),
])
@pytest.mark.parametrize("Est", [DPLogisticRegression, DPLinearSVC])
def test_bounds_beyond_float64_are_refused_before_the_charge(Est, params):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="Nothing was spent"):
        Est(classes=[0, 1], accountant=acc, random_state=0, **params).fit(X, y)
    assert acc.spent.epsilon == 0.0 and acc.spent.delta == 0.0


def test_dpsvc_with_a_huge_intercept_scaling_beyond_float64_is_refused_before_the_charge():
    acc = Accountant(Budget(1.0, 1e-6))
    X = np.random.default_rng(4).normal(size=(100, 2))
    with pytest.raises(InvalidParameterError, match="intercept_scaling"):
        DPSVC(intercept_scaling=1e130, classes=[0, 1], accountant=acc, random_state=0).fit(X, (X[:, 0] > 0))
    assert acc.spent.epsilon == 0.0


def _dtype(l2: float, d: int = 4, kappa: float = 0.5, l1: float | None = None, norm: int = 2,
           coefficients: int | None = None):
    return storage_dtype(math.sqrt(d) * l2 if l1 is None else l1, l2, d,
                         coefficients=d if coefficients is None else coefficients, coefficient_l1=kappa,
                         coefficient_l2=kappa, norm=norm)


def test_storage_dtype_ranges():
    """The documented limits, on both sides of each: float32 from sqrt(d) 2**-109 to 2**120 (entries), with kappa R
    at least N(D) 2**-102 and kappa at least 2**-90; float64 from sqrt(d) 2**-400 to 2**400; None beyond. (With a
    margin loss, kappa <= 1, so kappa R >= N(D) 2**-102 is the float32 limit that binds; a large synthetic kappa
    isolates the storage limit.)"""
    f32, f64 = np.float32, np.float64
    assert _dtype(1.0) is f32 and _dtype(1e30) is f32 and _dtype(1e-25) is f32
    low32 = 2.0 * 2.0**-109  # sqrt(4) 2**-109
    assert _dtype(low32, kappa=2.0**8) is f32 and _dtype(math.nextafter(low32, 0.0), kappa=2.0**8) is f64
    assert _dtype(2.0**120) is f32 and _dtype(math.nextafter(2.0**120, math.inf)) is f64
    assert _dtype(1.0, kappa=2.0**-90) is f32 and _dtype(1.0, kappa=2.0**-91) is f64
    assert _dtype(2.0**-100, kappa=2.0**-1) is f32  # kappa R = 2**-101 = N(4) 2**-102: inside
    assert _dtype(2.0**-100, kappa=2.0**-2) is f64
    assert _dtype(2.0**-100, kappa=2.0**-1, coefficients=16) is f64  # N(16) = 4: K = 4 classes need 2**-100
    low64 = 2.0 * 2.0**-400
    assert _dtype(low64, kappa=1.0) is f64 and _dtype(math.nextafter(low64, 0.0), kappa=1.0) is None
    assert _dtype(2.0**400) is f64 and _dtype(math.nextafter(2.0**400, math.inf)) is None
    assert _dtype(1.0, kappa=1e-130) is None and _dtype(math.inf) is None and _dtype(0.0) is None
    # L1 (Laplace): N(d) = d; the L1 bound itself must reach d 2**-109, and kappa R_1 must reach D 2**-102
    l1 = 4 * 2.0**-109
    assert _dtype(1.0, l1=l1, kappa=2.0**8, norm=1) is f32
    assert _dtype(1.0, l1=math.nextafter(l1, 0.0), kappa=2.0**8, norm=1) is f64
    assert _dtype(1.0, l1=4 * 2.0**-102, kappa=1.0, norm=1) is f32
    assert _dtype(1.0, l1=math.nextafter(4 * 2.0**-102, 0.0), kappa=1.0, norm=1) is f64
    assert _dtype(1.0, d=2**30 + 1) is f64  # more than 2**30 columns: float64


@pytest.mark.parametrize("bound", [2.0 * 2.0**-109, 1e-32, 1.0, 2.0**120])
def test_stored_float32_rows_stay_inside_at_the_edges_of_the_float32_range(bound):
    """At the edges of the range the argument of storage_dtype's docstring needs, with rows made to round up:
    one large entry and many tiny ones (subnormal in float32 at the low edge), and rows at the bound."""
    d = 4
    assert _dtype(bound, d=d, kappa=2.0**8) is np.float32  # the storage limit (kappa isolates it, see above)
    rng = np.random.default_rng(5)
    X = _rows_at_and_over(rng, bound, 60, d, 2)
    X[0] = [bound * (1 - 2.0**-30), bound * 2.0**-40, bound * 2.0**-41, bound * 2.0**-42]
    U, _ = compact_rows(X, math.sqrt(d) * bound, bound, mode="rows", owner="t")
    assert U.dtype == np.float32 and np.all(np.isfinite(U))
    assert all(_exact_norm_at_most(row, bound, 2) for row in U)


def test_function_level_float32_rows_at_a_tiny_bound_are_read_in_float64(monkeypatch):
    """dp_accelerated keeps a float32 array in float32 only inside float32's range of the declared bounds."""
    seen = {}
    original = accelerated_module._execute

    def spy(plan, U, z, *, noise):
        seen["U"] = np.array(U)
        return original(plan, U, z, noise=noise)

    monkeypatch.setattr(accelerated_module, "_execute", spy)
    bound = 1e-40
    X = _rows_at_and_over(np.random.default_rng(6), bound, 90, 3, 2).astype(np.float32)
    y = np.where(np.arange(90) % 2 == 0, 1.0, -1.0)
    dp_accelerated(X, y, solver="gd", epsilon=1.0, alpha=0.1, data_norm=bound, noise="gaussian", delta=1e-6,
                   n_iter=2, random_state=0)
    assert seen["U"].dtype == np.float64
    assert all(_exact_norm_at_most(row, bound, 2) for row in seen["U"])
    dp_accelerated(X * np.float32(1e40), y, solver="gd", epsilon=1.0, alpha=0.1, data_norm=1.0, noise="gaussian",
                   delta=1e-6, n_iter=2, random_state=0)
    assert seen["U"].dtype == np.float32  # an ordinary bound: float32 kept


def test_clip_rows_scales_huge_float32_rows_inside_the_bound():
    """A float32 row far over the bound whose scale factor is below float32's normal range (here about 3e-41) is
    scaled in float64 and rounded once: before, the factor itself was rounded absolutely and the clipped rows came
    out up to 1.4e-5 over their L2 bound (d = 50 000, these rows)."""
    rng = np.random.default_rng(1)
    X = (rng.uniform(0.5, 1.0, size=(3, 50_000)) * 3.4e38).astype(np.float32)
    out = clip_rows(X, math.inf, 1.0, mode="rows", owner="t")
    assert out.dtype == np.float32
    for row in out:  # squares of float32 values are exact in float64; fsum rounds their sum once: far inside
        assert math.fsum(float(v) * float(v) for v in row) < 1.0 - 2.0**-20


@pytest.mark.parametrize("loss", ["logistic", "smoothed_hinge"])
@pytest.mark.parametrize("kappa", [0.5, 1.0])
def test_a_nan_or_infinite_margin_gets_a_derivative_inside_the_clip(loss, kappa):
    L = MarginLoss(loss, smoothing=0.5, max_slope=kappa)
    for dtype in (np.float32, np.float64):
        d = L.derivative(np.array([np.nan, np.inf, -np.inf, 0.0], dtype=dtype))
        assert d.dtype == dtype and np.all(np.isfinite(d)) and np.all((d >= -kappa) & (d <= 0.0))
        assert d[1] == 0.0 and d[2] == -kappa


def test_an_infinite_logit_gets_the_residual_zero():
    S = SoftmaxLoss(3, 0.5)
    r = S.residuals(np.array([[np.inf, 0.0, 1.0], [np.nan, 0.0, 0.0], [0.0, 1.0, 2.0]]), np.array([0, 1, 2]))
    assert np.array_equal(r[:2], np.zeros((2, 3))) and np.all(np.isfinite(r)) and np.any(r[2] != 0.0)


@pytest.mark.parametrize("loss", ["logistic", "smoothed_hinge"])
def test_an_iterate_beyond_float32_does_not_make_the_gradient_nan(loss):
    """x0 = (1e300, 0, 0) is cast to float32 as inf; rows with a 0 in that column had the margin 0 * inf = NaN,
    the gradient was NaN and the run raised after its charge, for those rows only. Now such a margin gets a fixed
    derivative and the run completes; no warning depends on the rows."""
    rng = np.random.default_rng(8)
    X = (rng.normal(size=(200, 3)) / 3).astype(np.float32)
    X[::2, 0] = 0.0
    y = np.where(rng.normal(size=200) > 0, 1.0, -1.0)
    acc = Accountant(Budget(1.0, 1e-6))
    res = dp_accelerated(X, y, epsilon=1.0, alpha=0.01, data_norm=1.0, x0=np.array([1e300, 0.0, 0.0]), loss=loss,
                         noise="gaussian", delta=1e-6, accountant=acc, random_state=0, n_iter=3, solver="gd")
    assert np.all(np.isfinite(res.x)) and np.isclose(acc.spent.epsilon, 1.0, rtol=3e-3)
    w = np.array([1e300, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = MarginLoss(loss).gradient(w, np.ascontiguousarray(X), y.astype(np.float32), 0.0)
    assert np.all(np.isfinite(g))
