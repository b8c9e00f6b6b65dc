"""Row isolation of the private scores: one validation row that breaks an estimator moves only its own term.

Each estimator here misbehaves on one "poisoned" row (feature 0 above 100): it raises for the whole batch, returns
NaN for that row, returns a probability outside [0, 1], or returns a wrongly shaped output. Under replace-one, the
score of a validation set with the poisoned row and of its neighbour without it must differ by at most the scorer's
declared sensitivity (the old code scored the whole set at the lower bound: a move of the whole range).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.model_selection import make_bounded_scorer
from privtune.model_selection._isolation import (
    IsolatedEstimator,
    as_indices,
    isolated_block_means,
    isolated_row_values,
)
from privtune.model_selection._search import CandidateFitError
from privtune.space import Categorical

POISON = 1e6
SENTINEL = 424242.4242


class Fragile(ClassifierMixin, BaseEstimator):
    """Predicts sign(x0); misbehaves on rows with x0 > 100 according to ``mode``; counts its calls."""

    def __init__(self, mode="raise", k=0):
        self.mode = mode
        self.k = k

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        self.calls_ = 0
        return self

    def _bad(self, X):
        return np.asarray(X)[:, 0] > 100

    def predict(self, X):
        self.calls_ += 1
        X = np.asarray(X, dtype=float)
        bad = self._bad(X)
        if self.mode == "raise" and bad.any():
            raise ValueError(f"cannot predict {X[bad, 0][0]!r} (a message quoting data: {SENTINEL})")
        if self.mode == "shape" and bad.any():
            return np.zeros(len(X) + 1, dtype=int)
        return (X[:, 0] > 0).astype(int) if self.k == 0 else np.ones(len(X), dtype=int)

    def predict_proba(self, X):
        self.calls_ += 1
        X = np.asarray(X, dtype=float)
        p1 = 1.0 / (1.0 + np.exp(-np.clip(X[:, 0], -50, 50)))
        proba = np.column_stack([1 - p1, p1])
        bad = self._bad(X)
        if self.mode == "raise" and bad.any():
            raise ValueError("overflow")
        if self.mode == "nan":
            proba[bad] = np.nan
        if self.mode == "big":
            proba[bad] = [1e300, 1e300]
        return proba


def _val(m=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _poisoned(X, y, row=3, label=None):
    X2, y2 = X.copy(), y.copy()
    X2[row, 0] = POISON
    if label is not None:
        y2[row] = label
    return X2, y2


def _fitted(mode):
    return Fragile(mode=mode).fit(np.zeros((2, 3)), np.array([0, 1]))


@pytest.mark.parametrize("mode", ["raise", "shape"])
def test_a_row_that_makes_predict_raise_costs_only_its_own_term(mode):
    X, y = _val()
    Xp, yp = _poisoned(X, y)
    scorer = make_bounded_scorer("accuracy")
    est = _fitted(mode)
    clean = scorer(est, X, y)
    poisoned = scorer(est, Xp, yp)
    assert clean == 1.0
    assert poisoned == pytest.approx(19 / 20)  # the poisoned row counts as wrong; the other 19 are right
    assert abs(clean - poisoned) <= scorer.sensitivity(20) + 1e-12


def test_nan_probability_for_one_row_costs_only_its_own_log_loss_term():
    X, y = _val()
    Xp, yp = _poisoned(X, y, label=1)
    scorer = make_bounded_scorer("neg_log_loss", score_bounds=(-5.0, 0.0))
    est = _fitted("nan")
    clean, poisoned = scorer(est, X, y), scorer(est, Xp, yp)
    assert -5.0 < clean < 0.0 and -5.0 < poisoned < 0.0
    assert abs(clean - poisoned) <= scorer.sensitivity(20) + 1e-12


def test_a_probability_above_one_cannot_earn_a_negative_loss():
    X, y = _val()
    Xp, yp = _poisoned(X, y, label=1)
    scorer = make_bounded_scorer("neg_log_loss", score_bounds=(-5.0, 0.0))
    est = _fitted("big")
    clean, poisoned = scorer(est, X, y), scorer(est, Xp, yp)
    # p = 1e300 would give a per-row loss of -690: the row term is clipped to [0, C], so the move is <= C/m
    assert abs(clean - poisoned) <= scorer.sensitivity(20) + 1e-12


def test_balanced_accuracy_isolates_a_failing_row():
    X, y = _val(40)
    Xp, yp = _poisoned(X, y)
    scorer = make_bounded_scorer("balanced_accuracy", min_class_size=5)
    est = _fitted("raise")
    clean, poisoned = scorer(est, X, y), scorer(est, Xp, yp)
    assert clean == 1.0 and poisoned < 1.0
    assert abs(clean - poisoned) <= scorer.sensitivity(40, 2) + 1e-12


def test_the_fast_path_is_one_batch_call():
    X, y = _val(200)
    est = _fitted("raise")
    make_bounded_scorer("accuracy")(est, X, y)
    assert est.calls_ == 1


def test_one_failing_row_costs_a_logarithmic_number_of_calls():
    X, y = _val(256)
    Xp, yp = _poisoned(X, y, row=100)
    est = _fitted("raise")
    make_bounded_scorer("accuracy")(est, Xp, yp)
    # bisection: about two calls per level, log2(256) = 8 levels, then the block once more with the row replaced
    assert est.calls_ <= 2 * 8 + 2


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(["raise", "shape", "nan", "big", "none"]),
       row=st.integers(0, 11), label=st.integers(0, 1), value=st.sampled_from([POISON, 0.5, -0.5, 1.7e308]),
       scoring=st.sampled_from(["accuracy", "neg_zero_one_loss", "neg_log_loss", "balanced_accuracy"]))
def test_property_one_replaced_row_moves_the_score_by_at_most_the_sensitivity(mode, row, label, value, scoring):
    X, y = _val(12, seed=1)
    X2, y2 = X.copy(), y.copy()
    X2[row, 0], y2[row] = value, label
    kw = {"score_bounds": (-4.0, 0.0)} if scoring == "neg_log_loss" else (
        {"min_class_size": 3} if scoring == "balanced_accuracy" else {})
    scorer = make_bounded_scorer(scoring, **kw)
    est = _fitted(mode)
    a, b = scorer(est, X, y), scorer(est, X2, y2)
    assert math.isfinite(a) and math.isfinite(b)
    assert abs(a - b) <= scorer.sensitivity(12, 2) + 1e-12


def _mean_callable(est, X, y):
    """A user scorer that is a mean of per-row terms (accuracy), raising on poisoned rows."""
    return float(np.mean(est.predict(X) == y))


def test_a_mean_callable_is_evaluated_by_blocks_with_isolation():
    X, y = _val()
    Xp, yp = _poisoned(X, y, label=1)  # the view's fallback label for the failing row is 0: one wrong term
    scorer = make_bounded_scorer(_mean_callable, score_bounds=(0.0, 1.0))
    est = _fitted("raise")
    assert scorer(est, X, y) == 1.0
    assert scorer(est, Xp, yp) == pytest.approx(19 / 20)


def test_a_callable_with_declared_sensitivity_sees_an_isolating_view():
    X, y = _val()
    Xp, yp = _poisoned(X, y)
    seen = []

    def precision_like(est, X, y):  # not a mean of per-row terms: a declared sensitivity
        seen.append(type(est).__name__)
        pred = est.predict(X)
        return float(np.sum((pred == 1) & (y == 1)) / max(1, np.sum(pred == 1)))

    scorer = make_bounded_scorer(precision_like, score_bounds=(0.0, 1.0), score_sensitivity=0.2)
    est = _fitted("raise")
    v = scorer(est, Xp, yp)
    assert seen == ["IsolatedEstimator"]
    assert 0.0 < v <= 1.0  # the poisoned row got the fallback label; the score did not collapse to the bound


def test_a_mean_callable_that_cannot_score_single_class_blocks_still_isolates_a_failing_estimator():
    """A callable declared as a mean of per-row terms got the estimator itself: one row on which predict_proba
    raised failed the whole call, and blocks of one class (on which log_loss raises) were scored at the lower bound
    all the way down: 49 times the declared sensitivity with rows sorted by label (found by an audit). The callable
    now gets the isolating view, so the estimator's failure stays on its row."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    def clipped_nll(est, X, y):  # per-row terms in [0, log 1000]
        return -log_loss(y, np.clip(est.predict_proba(X), 1e-3, 1.0))

    rng = np.random.default_rng(0)
    X_tr = rng.normal(size=(200, 2))
    est = LogisticRegression().fit(X_tr, (X_tr[:, 0] > 0).astype(int))
    m = 100
    X, y = rng.normal(size=(m, 2)), None
    y = (X[:, 0] > 0).astype(int)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    scorer = make_bounded_scorer(clipped_nll, score_bounds=(-math.log(1000), 0.0))
    base = scorer(est, X, y)
    for row in (0, 7, 60, 99):
        X2 = X.copy()
        X2[row, 0] = np.nan  # LogisticRegression.predict_proba raises on the whole batch
        assert abs(scorer(est, X2, y) - base) <= scorer.sensitivity(m) + 1e-12


def test_the_isolating_view_serves_no_method_that_bypasses_isolation():
    """``est.score`` (and any other method) on the view reached the real estimator: one poisoned row made it raise
    and the whole score fell to the bound (100 times the declared sensitivity; found by an audit)."""
    from sklearn.metrics import get_scorer

    X, y = _val()
    Xp, yp = _poisoned(X, y, row=3, label=1)
    est = _fitted("raise")
    view = IsolatedEstimator(est)
    assert view.score(X, y) == 1.0
    assert view.score(Xp, yp) == pytest.approx(19 / 20)  # the poisoned row gets the fallback label 0: wrong
    assert get_scorer("accuracy")(view, Xp, yp) == pytest.approx(19 / 20)  # scikit-learn's scorers work on it
    for name in ("fit", "set_params", "get_params", "_bad", "transform"):
        with pytest.raises(AttributeError):
            getattr(view, name)
    assert view.calls_ == est.calls_ and view.mode == "raise"  # plain fitted data is served
    labelled = _fitted("raise")
    labelled.classes_ = np.array(["no", "yes"], dtype=object)  # string labels held as objects (pandas)
    assert IsolatedEstimator(labelled).classes_.tolist() == ["no", "yes"]
    labelled.inner_ = np.array([est], dtype=object)  # an estimator inside an object array is not plain data
    with pytest.raises(AttributeError):
        _ = IsolatedEstimator(labelled).inner_
    with pytest.raises(AttributeError):
        view.mode = "nan"
    scorer = make_bounded_scorer(lambda e, X, y: e.score(X, y), score_bounds=(0.0, 1.0), score_sensitivity=1 / 20)
    assert abs(scorer(est, Xp, yp) - scorer(est, X, y)) <= 1 / 20 + 1e-12


class ExitsOnPoison(Fragile):
    """Raises SystemExit (a BaseException, as a timeout wrapper's exception may be) on a poisoned row."""

    def predict(self, X):
        if self._bad(np.asarray(X, dtype=float)).any():
            raise SystemExit("a row broke predict")
        return super().predict(X)


class ExitsInFit(Fragile):
    def fit(self, X, y):
        if np.any(np.asarray(X)[:, 0] > 100):
            raise SystemExit("a row broke fit")
        return super().fit(X, y)


def test_an_exception_outside_exception_is_isolated_too():
    """A BaseException (SystemExit, a timeout's exception) from predict or fit escaped the search after its charge:
    whether the search aborted depended on one row (found by an audit)."""
    X, y = _val()
    Xp, yp = _poisoned(X, y, row=3, label=1)
    est = ExitsOnPoison().fit(X, y)
    assert make_bounded_scorer("accuracy")(est, Xp, yp) == pytest.approx(19 / 20)
    assert make_bounded_scorer(_mean_callable, score_bounds=(0.0, 1.0))(est, Xp, yp) == pytest.approx(19 / 20)
    Xt, yt = _poisoned(*_val(20, seed=1), row=0)
    acc = Accountant(Budget(1.0, 0.0))
    s = PrivateSearchCV(ExitsInFit(), {"k": Categorical([0, 1])}, method="random", n_iter=2, n_candidates=2,
                        epsilon=1.0, random_state=0, refit=False, accountant=acc)
    # both candidates' fits fail on the (public) training rows: found before the charge, and refused (issue 38)
    with pytest.raises(ValueError, match="All the 2 candidates failed") as info:
        s.fit(Xt, yt, X_val=X, y_val=y)
    assert "SystemExit" in str(info.value) and len(acc.ledger) == 0


def test_isolated_view_gives_failing_rows_the_documented_fallbacks():
    X, _ = _val(8)
    Xp, _ = _poisoned(X, np.zeros(8, int), row=2)
    view = IsolatedEstimator(_fitted("raise"))
    pred = view.predict(Xp)
    assert pred.shape == (8,) and pred[2] == 0
    proba = view.predict_proba(Xp)
    assert proba.shape == (8, 2) and np.allclose(proba[2], [0.5, 0.5])
    assert view.classes_.tolist() == [0, 1]


def test_isolated_row_values_never_raise_and_attribute_nonfinite_rows():
    def evaluate(idx):
        idx = as_indices(idx)  # a fixed block comes as a range
        if 5 in idx:
            raise RuntimeError("boom")
        out = np.ones(len(idx))
        out[idx == 7] = np.nan
        return out

    v = isolated_row_values(evaluate, 10, -1.0)
    assert v.tolist() == [1, 1, 1, 1, 1, -1, 1, -1, 1, 1]
    block_mean = isolated_block_means(lambda block: lambda pos: np.nan if 7 in block[pos] else 1.0, 10, -1.0)
    assert block_mean.tolist() == [1, 1, 1, 1, 1, 1, 1, -1, 1, 1]


def test_search_with_a_poisoned_validation_row_still_scores_each_candidate_row_by_row():
    """End to end: the released selection sees 19/20 for the good candidate, not the lower bound."""
    X, y = _val(40, seed=3)
    Xv, yv = _poisoned(X[20:], y[20:], row=0)
    search = PrivateSearchCV(Fragile(), {"k": Categorical([0, 1])}, n_iter=2, n_candidates=2, epsilon=200.0,
                             random_state=0, refit=False)
    search.fit(X[:20], y[:20], X_val=Xv, y_val=yv)
    # with epsilon so large the selection is the argmax: candidate k=0 (19/20 right) beats k=1 (about half)
    assert search.best_params_ == {"k": 0}
    assert search.best_score_ == pytest.approx(19 / 20, abs=0.01)


class FailsToFit(Fragile):
    def fit(self, X, y):
        if self.k == 1:
            raise ValueError(f"training value {SENTINEL} is bad")
        return super().fit(X, y)


def test_error_score_raise_names_the_candidate_never_the_estimators_message():
    # After the charge (the pre-flight fit of the first candidate, k=0, works; k=1 fails when the method fits it),
    # the message names the candidate and the exception's type only. (A failure the pre-flight finds, before any
    # charge, on the public training rows, is raised with its message: test_public_failures.py.)
    X, y = _val(40)
    acc = Accountant(Budget(1.0, 1e-6))
    search = PrivateSearchCV(FailsToFit(), {"k": Categorical([0, 1])}, method="random", n_iter=2, n_candidates=0,
                             candidate_grid=[{"k": 0}, {"k": 1}], error_score="raise", random_state=0,
                             accountant=acc)
    with pytest.raises(CandidateFitError) as info:
        search.fit(X[:20], y[:20], X_val=X[20:], y_val=y[20:])
    msg = str(info.value)
    assert "'k'" in msg and "ValueError" in msg
    assert str(SENTINEL) not in msg and info.value.__cause__ is None and info.value.__suppress_context__


def test_error_score_raise_is_refused_with_sensitive_training_data():
    from privtune.linear_model import DPLogisticRegression

    X, y = _val(40)
    search = PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": Categorical([0.5, 1.0])},
                             sensitive="both", error_score="raise", n_iter=2, n_candidates=2, random_state=0)
    with pytest.raises(Exception, match="error_score='raise'"):
        search.fit(X[:20], y[:20], X_val=X[20:], y_val=y[20:])


def test_public_score_is_not_isolated_so_wrong_inputs_raise():
    X, y = _val(40)
    search = PrivateSearchCV(Fragile(), {"k": Categorical([0, 1])}, n_iter=2, n_candidates=2, random_state=0)
    search.fit(X[:20], y[:20], X_val=X[20:], y_val=y[20:])
    Xp, yp = _poisoned(X, y)
    with pytest.raises(ValueError, match="cannot predict"):
        search.score(Xp, yp)


def test_privacy_plan_says_when_its_candidate_count_is_one_draw_of_many():
    """Issue 12: budget's candidate count for discrete spaces came from seed 0 and could differ from the run's."""
    from sklearn.svm import SVC

    from privtune import PrivateSearchCV
    from privtune.space import Integer, Real

    discrete = {"C": Real(0.1, 10.0, log=True), "degree": Integer(1, 3)}
    plan = PrivateSearchCV(SVC(random_state=0), discrete, n_iter=5, n_candidates=64).privacy_plan(100)
    assert plan["n_candidates_exact"] is False
    seeded = PrivateSearchCV(SVC(random_state=0), discrete, method="random", n_iter=5, n_candidates=64,
                             random_state=4)  # (prescreen's candidates_ are the kept ones)
    assert seeded.privacy_plan(100)["n_candidates_exact"] is True
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    seeded.fit(X[:300], y[:300], X_val=X[300:400], y_val=y[300:400])
    assert seeded.privacy_plan(100)["n_candidates"] == len(seeded.candidates_)  # the very set the run built
    real_only = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10.0, log=True)}, n_iter=5, n_candidates=64)
    assert real_only.privacy_plan(100)["n_candidates_exact"] is True
