"""DPStandardScaler: declared bounds, the charge before any value is read, its sensitivity, sklearn behaviour."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privtune import BudgetExceededError, InvalidParameterError
from privtune.accounting import Accountant, Budget, GaussianEvent, LaplaceEvent
from privtune.preprocessing import DPStandardScaler


def _rows(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.normal(300.0, 50.0, n), rng.uniform(0.0, 10.0, n)])


@pytest.mark.parametrize("bounds, match", [
    (None, "needs declared bounds"),
    ((1.0, 0.0), "lower < upper"),
    ((0.0, np.inf), "finite"),
    (([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "n_features=2"),
    ("wide", "pair"),
])
def test_bounds_are_declared_and_checked_before_any_charge(bounds, match):
    acc = Accountant(Budget(10.0, 1e-5))
    with pytest.raises(InvalidParameterError, match=match):
        DPStandardScaler(bounds=bounds, accountant=acc).fit(_rows(50))
    assert len(acc.ledger) == 0


def test_nothing_to_learn_is_refused():
    with pytest.raises(InvalidParameterError, match="learns nothing"):
        DPStandardScaler(bounds=(0, 1), with_mean=False, with_std=False).fit(_rows(50))


def test_an_unaffordable_fit_is_refused_before_reading_a_value():
    class Unreadable:
        shape = (20, 2)

        def __array__(self, *a, **k):  # any read of the values fails the test
            raise AssertionError("a value was read")

    acc = Accountant(Budget(0.5, 1e-6))
    with pytest.raises(BudgetExceededError):
        DPStandardScaler(bounds=(0, 1), epsilon=1.0, accountant=acc).fit(Unreadable())
    assert len(acc.ledger) == 0
    paid = Accountant(Budget(2.0, 1e-6))
    with pytest.raises(Exception, match="value was read|not a 2-D numeric"):  # the values are read after the charge
        DPStandardScaler(bounds=(0, 1), epsilon=1.0, accountant=paid).fit(Unreadable())
    assert len(paid.ledger) == 1


@pytest.mark.parametrize("noise, kind", [("gaussian", GaussianEvent), ("laplace", LaplaceEvent)])
def test_one_charge_of_the_declared_event(noise, kind):
    acc = Accountant(Budget(10.0, 1e-5))
    scaler = DPStandardScaler(bounds=(0.0, 1000.0), noise=noise, accountant=acc, random_state=0).fit(_rows(100))
    assert [e.event for e in acc.entries] == [scaler._fit_privacy_event()] == [scaler.privacy_event_]
    assert isinstance(scaler.privacy_event_, kind)
    assert scaler.privacy_spent_ == (Budget(1.0, 1e-6) if noise == "gaussian" else Budget(1.0, 0.0))


def test_statistics_of_clipped_rows_at_a_large_epsilon():
    X = _rows()
    bounds = ([200.0, 0.0], [400.0, 5.0])  # the second feature is clipped to [0, 5]
    scaler = DPStandardScaler(bounds=bounds, epsilon=1e6, random_state=0).fit(X)
    clipped = np.clip(X, *map(np.asarray, bounds))
    assert scaler.mean_ == pytest.approx(clipped.mean(axis=0), abs=1e-3)
    assert scaler.var_ == pytest.approx(clipped.var(axis=0), rel=1e-3)
    assert scaler.transform(X)[:, 0].std() == pytest.approx(X[:, 0].std() / scaler.scale_[0])
    assert scaler.inverse_transform(scaler.transform(X)) == pytest.approx(X)


def test_utility_at_epsilon_one_on_a_column_near_1000():
    X = _rows(20_000) * [3.0, 100.0]  # columns near 900 and in [0, 1000]
    scaler = DPStandardScaler(bounds=(0.0, 2000.0), epsilon=1.0, random_state=1).fit(X)
    Z = scaler.transform(X)
    assert np.all(np.abs(Z.mean(axis=0)) < 0.1) and np.all(np.abs(Z.std(axis=0) - 1) < 0.1)


def test_values_a_row_holds_are_mapped_never_refused():
    X = _rows(200).astype(object)
    X[0, 0], X[1, 1], X[2, 0], X[3, 1] = np.nan, np.inf, "text", None
    scaler = DPStandardScaler(bounds=(0.0, 1000.0), random_state=0).fit(X)
    assert np.all(np.isfinite(scaler.mean_)) and np.all(np.isfinite(scaler.scale_))
    Z = scaler.transform(X)
    assert np.isnan(Z[0, 0]) and np.isnan(Z[2, 0]) and np.isnan(Z[3, 1]) and np.isinf(Z[1, 1])


def test_the_sum_vector_moves_by_at_most_the_declared_sensitivity():
    """Replacing one row moves the released vector (sum of u, sum of u**2) by at most sqrt(d) in L2 and d in L1:
    over random pairs of rows in [-1/2, 1/2]**d, the extremes included."""
    rng = np.random.default_rng(0)
    d = 4
    u = np.vstack([rng.uniform(-0.5, 0.5, size=(20_000, d)), np.full((1, d), 0.5), np.full((1, d), -0.5),
                   np.zeros((1, d))])
    v = np.vstack([rng.uniform(-0.5, 0.5, size=(20_000, d)), np.full((1, d), -0.5), np.full((1, d), 0.5),
                   np.full((1, d), 0.5)])
    diff = np.hstack([u - v, u * u - v * v])
    assert np.max(np.linalg.norm(diff, axis=1)) <= np.sqrt(d) * (1 + 1e-12)
    assert np.max(np.abs(diff).sum(axis=1)) <= d * (1 + 1e-12)
    assert DPStandardScaler(bounds=(0, 1))._sensitivity(1000, d) >= np.sqrt(d)
    assert DPStandardScaler(bounds=(0, 1), noise="laplace")._sensitivity(1000, d) >= d


def test_zero_private_variance_scales_by_the_declared_half_width():
    X = np.full((30, 1), 5.0)  # a constant feature: its private variance is 0 or noise
    scaler = DPStandardScaler(bounds=(0.0, 10.0), epsilon=0.1, random_state=3).fit(X)
    assert 0.0 < scaler.scale_[0] <= 5.0


def test_frames_keep_their_feature_names():
    frame = pd.DataFrame(_rows(100), columns=["age", "income"])
    scaler = DPStandardScaler(bounds=(0.0, 1000.0), random_state=0).fit(frame)
    assert list(scaler.feature_names_in_) == ["age", "income"]
    assert list(scaler.get_feature_names_out()) == ["age", "income"]
    out = scaler.set_output(transform="pandas").transform(frame)
    assert list(out.columns) == ["age", "income"]


def test_sparse_input_is_refused_before_any_charge():
    from scipy import sparse

    acc = Accountant(Budget(10.0, 1e-5))
    with pytest.raises(InvalidParameterError, match="Sparse"):
        DPStandardScaler(bounds=(0, 1), accountant=acc).fit(sparse.csr_matrix(np.ones((5, 2))))
    assert len(acc.ledger) == 0
