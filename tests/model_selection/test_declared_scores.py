"""scoring="r2" / "roc_auc" with a declared score_sensitivity (issue 38): they run, and their messages agree."""

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


@pytest.mark.parametrize("scoring", ["r2", "roc_auc"])
def test_declared_sensitivity_is_the_documented_way_in(scoring):
    with pytest.raises(InvalidParameterError, match="needs a declared 'score_sensitivity'") as info:
        make_bounded_scorer(scoring)
    assert "score_sensitivity=" in str(info.value)  # the message shows how, and that way works:
    kw = {"score_bounds": (-1.0, 1.0)} if scoring == "r2" else {}
    scorer = make_bounded_scorer(scoring, score_sensitivity=0.05, **kw)
    assert scorer.name == scoring and scorer.sensitivity(100) == 0.05


def test_r2_needs_declared_bounds():
    with pytest.raises(InvalidParameterError, match="score_bounds"):
        make_bounded_scorer("r2", score_sensitivity=0.05)


def test_roc_auc_bounds_default_to_zero_one():
    assert make_bounded_scorer("roc_auc", score_sensitivity=0.05).bounds == (0.0, 1.0)


def test_r2_search_runs_and_scores_as_sklearn(regression):
    X_tr, y_tr, X_val, y_val = regression
    acc = Accountant(Budget(1.0, 1e-6))
    search = PrivateSearchCV(Ridge(), {"alpha": Real(1e-3, 10.0, log=True)}, scoring="r2", score_bounds=(-1.0, 1.0),
                             score_sensitivity=0.1, method="random", n_iter=3, n_candidates=8, accountant=acc,
                             random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert search.best_params_ is not None and len(acc.ledger) > 0
    model = Ridge().fit(X_tr, y_tr)
    assert search.scorer_(model, X_val, y_val) == pytest.approx(r2_score(y_val, model.predict(X_val)))


def test_roc_auc_search_runs_and_scores_as_sklearn(binary):
    X_tr, y_tr, X_val, y_val = binary
    search = PrivateSearchCV(LogisticRegression(), {"C": Real(1e-2, 10.0, log=True)}, scoring="roc_auc",
                             score_sensitivity=0.05, method="random", n_iter=3, n_candidates=8,
                             random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert search.best_params_ is not None
    model = LogisticRegression().fit(X_tr, y_tr)
    expected = roc_auc_score(y_val, model.decision_function(X_val))
    assert search.scorer_(model, X_val, y_val) == pytest.approx(expected)


def test_r2_one_row_cannot_break_the_score(regression):
    """A NaN, a string or a huge target moves its own row only: the score stays finite, never the bound by failure."""
    X_tr, y_tr, X_val, y_val = regression
    scorer = make_bounded_scorer("r2", score_sensitivity=2.0, score_bounds=(-1.0, 1.0))
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
    scorer = make_bounded_scorer("roc_auc", score_sensitivity=0.05)
    model = LogisticRegression().fit(X_tr, y_tr)
    assert scorer(model, X_val, np.ones_like(y_val)) == 0.5  # one class present: chance, not a failure
    y_bad = y_val.astype(object)
    y_bad[0] = "unseen"
    v = scorer(model, X_val, y_bad)
    assert abs(v - scorer(model, X_val, y_val)) <= 1 / min(np.sum(y_val == 0), np.sum(y_val == 1)) + 1e-12


def test_roc_auc_multiclass_scores_the_lower_bound():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(60, 3)), np.arange(60) % 3
    scorer = make_bounded_scorer("roc_auc", score_sensitivity=0.05, score_bounds=(0.2, 1.0))
    assert scorer(LogisticRegression().fit(X, y), X, y) == 0.2


def test_roc_auc_sensitivity_bound_holds_on_neighbours():
    """The documented bound 1/n_pos + 1/(n_neg + 1) (<= 2/M) over random replacements of one row."""
    rng = np.random.default_rng(3)
    scorer = make_bounded_scorer("roc_auc", score_sensitivity=1.0)

    class Fixed:
        classes_ = np.array([0, 1])

        def __init__(self, s):
            self.s = s

        def decision_function(self, X):
            return self.s[np.asarray(X, dtype=int).ravel()]

    for _ in range(200):
        m = 30
        s = rng.normal(size=m + 1).round(1)
        y = rng.integers(0, 2, size=m)
        y[:3], y[3:6] = 0, 1
        X = np.arange(m).reshape(-1, 1)
        a = scorer(Fixed(s), X, y)
        i = int(rng.integers(m))
        y2, X2 = y.copy(), X.copy()
        y2[i], X2[i] = rng.integers(0, 2), m  # a new label and a new score for row i
        b = scorer(Fixed(s), X2, y2)
        n_min = min(np.sum(y == 0), np.sum(y == 1), np.sum(y2 == 0), np.sum(y2 == 1))
        assert abs(a - b) <= 2 / n_min + 1e-12


@pytest.mark.parametrize("scoring", ["r2", "roc_auc"])
def test_config_accepts_declared_scores(tmp_path, scoring):
    from privtune.config import ConfigError, load_config

    extra = 'score_bounds = [-1.0, 1.0]\n' if scoring == "r2" else ""
    text = ('[estimator]\nclass = "sklearn.linear_model.LogisticRegression"\n[search_space]\n'
            'C = { type = "real", low = 0.1, high = 10.0, log = true }\n[data]\nbundled = "breast_cancer"\n'
            f'[search]\nepsilon = 1.0\nscoring = "{scoring}"\n{extra}')
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.keys == ["search.score_sensitivity"]
    path.write_text(text + "score_sensitivity = 0.05\n")
    assert load_config(path).search.scoring == scoring
