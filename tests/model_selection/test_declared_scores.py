"""scoring="r2" / "roc_auc" (issue 38): their proven sensitivities, the declarations they need, their messages."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score, roc_auc_score

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.model_selection import make_bounded_scorer
from privtune.space import Real


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.3 * rng.normal(size=240)
    return X[:160], y[:160], X[160:], y[160:]


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=240) > 0).astype(int)
    return X[:160], y[:160], X[160:], y[160:]


def test_r2_sensitivity_is_the_width_of_its_declared_bounds():
    """One row can move R² over its whole range: no smaller sensitivity is proven, and none below it is accepted."""
    with pytest.raises(InvalidParameterError, match="score_bounds") as info:
        make_bounded_scorer("r2")
    assert "score_bounds=(-1.0, 1.0)" in str(info.value)  # the message shows how, and that way works:
    scorer = make_bounded_scorer("r2", score_bounds=(-1.0, 1.0))
    assert scorer.name == "r2" and scorer.sensitivity(100) == 2.0
    with pytest.raises(InvalidParameterError, match="below the sensitivity"):
        make_bounded_scorer("r2", score_bounds=(-1.0, 1.0), score_sensitivity=0.1).sensitivity(100)
    assert make_bounded_scorer("r2", score_bounds=(-1.0, 1.0), score_sensitivity=3.0).sensitivity(100) == 3.0


def test_r2_one_row_moving_the_whole_range_is_within_its_sensitivity():
    """Constant targets predicted exactly score 1.0; one target changed: about -0.02, within the width 2."""
    from sklearn.dummy import DummyRegressor

    scorer = make_bounded_scorer("r2", score_bounds=(-1.0, 1.0))
    est = DummyRegressor(strategy="constant", constant=0.0).fit(np.zeros((3, 1)), np.zeros(3))
    t, t2 = np.zeros(50), np.zeros(50)
    t2[0] = 1.0
    a, b = scorer(est, np.zeros((50, 1)), t), scorer(est, np.zeros((50, 1)), t2)
    assert a == 1.0 and b < 0.0 and abs(a - b) <= scorer.sensitivity(50)


def test_roc_auc_needs_a_declared_min_class_size():
    with pytest.raises(InvalidParameterError, match="min_class_size") as info:
        make_bounded_scorer("roc_auc")
    assert "min_class_size=20" in str(info.value)
    scorer = make_bounded_scorer("roc_auc", min_class_size=20)
    assert scorer.name == "roc_auc" and scorer.sensitivity(100) == pytest.approx(1.5 / 20)
    assert make_bounded_scorer("roc_auc", min_class_size=1).sensitivity(100) == 1.0  # never above the range
    with pytest.raises(InvalidParameterError, match="below the sensitivity"):
        make_bounded_scorer("roc_auc", min_class_size=20, score_sensitivity=0.05).sensitivity(100)


def test_roc_auc_bounds_default_to_zero_one():
    assert make_bounded_scorer("roc_auc", min_class_size=5).bounds == (0.0, 1.0)


def test_r2_search_runs_and_scores_as_sklearn(regression):
    X_tr, y_tr, X_val, y_val = regression
    acc = Accountant(Budget(1.0, 1e-6))
    search = PrivateSearchCV(Ridge(), {"alpha": Real(1e-3, 10.0, log=True)}, scoring="r2", score_bounds=(-1.0, 1.0),
                             method="random", n_iter=3, n_candidates=8, accountant=acc,
                             random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert search.best_params_ is not None and len(acc.ledger) > 0
    model = Ridge().fit(X_tr, y_tr)
    assert search.scorer_(model, X_val, y_val) == pytest.approx(r2_score(y_val, model.predict(X_val)))


def test_roc_auc_search_runs_and_scores_as_sklearn(binary):
    X_tr, y_tr, X_val, y_val = binary
    search = PrivateSearchCV(LogisticRegression(), {"C": Real(1e-2, 10.0, log=True)}, scoring="roc_auc",
                             min_class_size=20, method="random", n_iter=3, n_candidates=8,
                             random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert search.best_params_ is not None
    model = LogisticRegression().fit(X_tr, y_tr)
    expected = roc_auc_score(y_val, model.decision_function(X_val))
    assert min(np.sum(y_val == 0), np.sum(y_val == 1)) >= 20  # both classes have M rows: the usual ROC AUC
    assert search.scorer_(model, X_val, y_val) == pytest.approx(expected)


def test_r2_one_row_cannot_break_the_score(regression):
    """A NaN, a string or a huge target moves its own row only: the score stays finite, never the bound by failure."""
    X_tr, y_tr, X_val, y_val = regression
    scorer = make_bounded_scorer("r2", score_bounds=(-1.0, 1.0))
    model = Ridge().fit(X_tr, y_tr)
    base = scorer(model, X_val, y_val)
    assert base > 0.8
    for bad in (np.nan, np.inf, "text", 1e300):
        y_bad = y_val.astype(object)
        y_bad[3] = bad
        v = scorer(model, X_val, y_bad)
        assert np.isfinite(v) and -1.0 <= v <= 1.0
        if not (isinstance(bad, float) and bad == 1e300):  # mapped to 0.0: an ordinary row
            assert abs(v - base) < 0.2
    X_bad = X_val.copy()
    X_bad[5] = np.nan  # Ridge.predict raises on NaN: the view gives that row the fallback prediction
    assert abs(scorer(model, X_bad, y_val) - base) < 0.2


def test_roc_auc_one_class_or_unknown_label(binary):
    X_tr, y_tr, X_val, y_val = binary
    scorer = make_bounded_scorer("roc_auc", min_class_size=20)
    model = LogisticRegression().fit(X_tr, y_tr)
    assert scorer(model, X_val, np.ones_like(y_val)) == 0.5  # one class present: chance, not a failure
    y_bad = y_val.astype(object)
    y_bad[0] = "unseen"
    v = scorer(model, X_val, y_bad)
    assert abs(v - scorer(model, X_val, y_val)) <= scorer.sensitivity(len(y_val))


def test_roc_auc_multiclass_scores_the_lower_bound():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(60, 3)), np.arange(60) % 3
    scorer = make_bounded_scorer("roc_auc", min_class_size=5, score_bounds=(0.2, 1.0))
    assert scorer(LogisticRegression().fit(X, y), X, y) == 0.2


class _Fixed:
    """A binary classifier whose decision value for row ``i`` is ``s[X[i, 0]]`` (an index into fixed scores)."""

    classes_ = np.array([0, 1])

    def __init__(self, s):
        self.s = s

    def decision_function(self, X):
        return self.s[np.asarray(X, dtype=int).ravel()]


@pytest.mark.parametrize("M", [1, 2, 3, 4, 6])
def test_roc_auc_sensitivity_holds_on_every_replace_one_neighbour_of_small_sets(M):
    """Over small sets, every row replaced by every (label, score) of a grid with ties: |change| <= 3 / (2M)."""
    rng = np.random.default_rng(M)
    scorer = make_bounded_scorer("roc_auc", min_class_size=M)
    levels = np.array([-1.0, 0.0, 0.0, 1.0, 2.0, np.nan])  # ties and a non-finite score (read as 0.0)
    worst = 0.0
    for _ in range(60):
        m = int(rng.integers(1, 9))
        idx = rng.integers(0, len(levels), size=m)
        y = rng.integers(0, 2, size=m)
        a = scorer(_Fixed(levels), idx.reshape(-1, 1), y)
        for i in range(m):
            for j in range(len(levels)):
                for label in (0, 1):
                    idx2, y2 = idx.copy(), y.copy()
                    idx2[i], y2[i] = j, label
                    worst = max(worst, abs(a - scorer(_Fixed(levels), idx2.reshape(-1, 1), y2)))
    assert worst <= scorer.sensitivity(8) + 1e-12
    assert worst > 0.5 * scorer.sensitivity(8)  # the sets reach a good part of the bound (the test can fail)


def test_roc_auc_sensitivity_holds_where_a_class_is_nearly_absent():
    """The review's pair: one positive scored lowest (AUC 0) against no positive (0.5): within 3/(2M) now."""
    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(300, 3))
    est = LogisticRegression().fit(Xt, (Xt[:, 0] > 0).astype(int))
    scorer = make_bounded_scorer("roc_auc", min_class_size=20)
    X = rng.normal(size=(30, 3))
    X[0] = -5.0 * np.abs(X[0])
    y, y2 = np.zeros(30, dtype=int), np.zeros(30, dtype=int)
    y[0] = 1
    assert abs(scorer(est, X, y) - scorer(est, X, y2)) <= scorer.sensitivity(30)


def test_roc_auc_equals_sklearn_with_m_rows_per_class_and_shrinks_below():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(4)
    s = rng.normal(size=40).round(1)  # ties included
    y = (s + rng.normal(size=40) > 0).astype(int)
    idx = np.arange(40).reshape(-1, 1)
    n_min = min(np.sum(y == 0), np.sum(y == 1))
    assert make_bounded_scorer("roc_auc", min_class_size=n_min)(_Fixed(s), idx, y) == pytest.approx(
        roc_auc_score(y, s), abs=1e-15)
    shrunk = make_bounded_scorer("roc_auc", min_class_size=40)(_Fixed(s), idx, y)
    assert abs(shrunk - 0.5) < abs(roc_auc_score(y, s) - 0.5)


@pytest.mark.parametrize("scoring", ["r2", "roc_auc"])
def test_config_accepts_declared_scores(tmp_path, scoring):
    from privtune.config import ConfigError, load_config

    extra = 'score_bounds = [-1.0, 1.0]\n' if scoring == "r2" else ""
    needed = "score_bounds" if scoring == "r2" else "min_class_size"
    declared = extra if scoring == "r2" else "min_class_size = 20\n"
    text = ('[estimator]\nclass = "sklearn.linear_model.LogisticRegression"\n[search_space]\n'
            'C = { type = "real", low = 0.1, high = 10.0, log = true }\n[data]\nbundled = "breast_cancer"\n'
            f'[search]\nepsilon = 1.0\nscoring = "{scoring}"\n')
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.keys == [f"search.{needed}"]
    path.write_text(text + declared)
    assert load_config(path).search.scoring == scoring
