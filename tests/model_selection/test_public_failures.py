"""Never spend on a failure that public information reveals (issue 38).

Each audited case is refused (or handled) before the first charge: the Accountant's ledger stays empty. With public
training rows the candidates are fitted and scored there first (prescreen's screening fits, or one pre-flight fit for
the other methods); with sensitive training rows the inputs' public structure is checked.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.model_selection._search import CandidateFitError
from privtune.space import Categorical, Real

METHODS = ["auto", "random", "noisy-ucb"]


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X[:160], y[:160], X[160:], y[160:]


def _search(est, space=None, **kw):
    kw.setdefault("n_iter", 2)
    kw.setdefault("n_candidates", 8)
    kw.setdefault("random_state", 0)
    return PrivateSearchCV(est, space or {"C": Real(0.01, 10.0, log=True)}, **kw)


def _refused(est, X_tr, y_tr, X_v, y_v, match, *, exc=ValueError, space=None, fit_kw=None, **kw):
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(exc, match=match) as info:
        _search(est, space, accountant=acc, **kw).fit(X_tr, y_tr, X_val=X_v, y_val=y_v, **(fit_kw or {}))
    assert len(acc.ledger) == 0, "something was spent"
    return info


@pytest.mark.parametrize("method", METHODS)
def test_a_regressor_under_accuracy_is_refused_before_anything_is_spent(method):
    info = _refused(LinearRegression(), *_data(), "is a regressor", space={"fit_intercept": Categorical([True, False])},
                    method=method)
    assert "Nothing was read or spent" in str(info.value)


@pytest.mark.parametrize("method", METHODS)
def test_neg_log_loss_without_predict_proba_is_refused_before_anything_is_spent(method):
    info = _refused(SVC(), *_data(), "has no attribute 'predict_proba'", method=method, scoring="neg_log_loss",
                    score_bounds=(-5.0, 0.0))
    assert "All the 8 candidates failed" in str(info.value)


def test_candidates_without_predict_proba_are_left_out_with_a_warning():
    X_tr, y_tr, X_v, y_v = _data()
    space = {"C": Real(0.1, 10.0, log=True), "probability": Categorical([True, False])}
    with pytest.warns(FitFailedWarning, match="left out of the candidate set"):
        s = _search(SVC(random_state=0), space, method="random", scoring="neg_log_loss", score_bounds=(-5.0, 0.0),
                    n_candidates=16).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert all(p["probability"] for p in s.candidates_.params)
    assert s.best_params_["probability"] is True


def _raises(est, X, y):
    raise RuntimeError("this scorer is broken")


def _array(est, X, y):
    return (est.predict(X) == y).astype(float)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("scorer, text", [(_raises, "RuntimeError: this scorer is broken"),
                                          (_array, "returned a ndarray of shape")])
def test_a_scorer_that_raises_or_returns_an_array_is_refused_before_anything_is_spent(method, scorer, text):
    info = _refused(LogisticRegression(), *_data(), "All the .* candidates failed", method=method, scoring=scorer,
                    score_bounds=(0.0, 1.0))
    assert text in str(info.value)


@pytest.mark.parametrize("method", METHODS)
def test_a_string_feature_with_no_encoder_is_refused_before_anything_is_spent(method):
    X_tr, y_tr, X_v, y_v = _data()
    X_tr = X_tr.astype(object)
    X_tr[:, 1] = np.where(np.arange(len(X_tr)) % 2, "red", "blue")
    info = _refused(LogisticRegression(), X_tr, y_tr, X_v, y_v, "All the .* candidates failed", method=method)
    assert "could not convert string to float" in str(info.value)  # scikit-learn's own message (public rows)


@pytest.mark.parametrize("method", METHODS)
def test_nan_in_public_training_rows_is_refused_where_the_estimator_refuses_it(method):
    X_tr, y_tr, X_v, y_v = _data()
    X_tr = X_tr.copy()
    X_tr[3, 0] = np.nan
    info = _refused(LogisticRegression(), X_tr, y_tr, X_v, y_v, "All the .* candidates failed", method=method)
    assert "Input X contains NaN" in str(info.value)
    s = _search(HistGradientBoostingClassifier(max_iter=5), {"learning_rate": Real(0.05, 0.5)},
                method=method).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)  # an estimator that takes NaN: no refusal
    assert s.best_params_ is not None


@pytest.mark.parametrize("method", METHODS)
def test_error_score_raise_raises_before_any_charge_when_the_failure_is_on_public_rows(method):
    X_tr, y_tr, X_v, y_v = _data()
    X_tr = X_tr.copy()
    X_tr[3, 0] = np.nan
    info = _refused(LogisticRegression(), X_tr, y_tr, X_v, y_v, "error_score='raise'", exc=CandidateFitError,
                    method=method, error_score="raise")
    assert "Input X contains NaN" in str(info.value) and isinstance(info.value.__cause__, ValueError)


class FailsForSome(ClassifierMixin, BaseEstimator):
    """Fits (a threshold on x0) unless k is odd, where its fit raises; k decides nothing else."""

    def __init__(self, k=0):
        self.k = k

    def fit(self, X, y):
        if self.k % 2:
            raise ValueError(f"k={self.k} cannot be fitted")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] > 0).astype(int)


def test_a_failing_first_candidate_is_left_out_and_the_search_runs():
    X_tr, y_tr, X_v, y_v = _data()
    acc = Accountant(Budget(1.0, 1e-6))
    grid = [{"k": 1}, {"k": 3}, {"k": 2}, {"k": 5}, {"k": 4}]
    with pytest.warns(FitFailedWarning, match="2 candidates failed to fit or score on the public training rows"):
        s = _search(FailsForSome(), {"k": Categorical([1, 2, 3, 4, 5])}, method="random", n_candidates=0,
                    candidate_grid=grid, accountant=acc).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert [p["k"] for p in s.candidates_.params] == [2, 5, 4]  # the first two failed: left out; 5 not tried
    assert s.privacy_spent_["validation"].epsilon == pytest.approx(1.0)


def test_prescreen_leaves_failing_candidates_out_of_the_kept_set():
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.warns(FitFailedWarning, match="in prescreen's screening"):
        s = _search(FailsForSome(), {"k": Categorical(list(range(10)))}, n_candidates=10, n_iter=3).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert s.method_ == "prescreen"
    assert all(p["k"] % 2 == 0 for p in s.candidates_.params)


def test_every_candidate_failing_is_refused_with_scikit_learns_message():
    X_tr, y_tr, X_v, y_v = _data()
    for method in METHODS:
        info = _refused(FailsForSome(), X_tr, y_tr, X_v, y_v, "All the .* candidates failed",
                        space={"k": Categorical([1, 3, 5])}, method=method, n_candidates=3, n_iter=2)
        text = str(info.value)
        assert "It is very likely that your model is misconfigured" in text and "cannot be fitted" in text


def test_screening_folds_that_fail_while_all_the_rows_fit_fall_back_to_unranked_candidates():
    """A class missing from prescreen's small folds made every screening fit fail, though the candidates fit on all
    the training rows (scikit-learn's check_fit2d_1feature): the selection then runs unranked, with a warning."""
    rng = np.random.RandomState(0)
    X = 3 * rng.uniform(size=(10, 1))
    y = X[:, 0].astype(int)
    with pytest.warns(FitFailedWarning, match="unranked"):
        s = PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, n_iter=2, n_candidates=4,
                            validation_size=0.3, random_state=0).fit(X, y)
    assert s.method_ == "prescreen" and len(s.candidates_) == 2
    assert s.release_.diagnostics["prescreen"]["failed"] > 0


def test_the_budget_is_checked_before_prescreens_screening_fits():
    X_tr, y_tr, X_v, y_v = _data()

    fits = []

    class Watched(LogisticRegression):
        def fit(self, X, y):
            fits.append(len(X))
            return super().fit(X, y)

    from privtune.exceptions import BudgetExceededError

    acc = Accountant(Budget(0.5, 1e-6))
    with pytest.raises(BudgetExceededError):
        _search(Watched(), epsilon=1.0, accountant=acc).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(acc.ledger) == 0 and fits == []  # not even a screening fit on the public rows


def test_the_pre_flight_costs_one_fit_when_the_first_candidate_works():
    X_tr, y_tr, X_v, y_v = _data()
    fits = []

    class Counting(LogisticRegression):
        def fit(self, X, y, sample_weight=None):
            fits.append(len(X))
            return super().fit(X, y, sample_weight=sample_weight)

    s = _search(Counting(), method="random", n_iter=3).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert fits == [160] * 5  # the pre-flight, 3 candidates, the refit
    assert s.best_params_ is not None


# -- sensitive training rows: public structure only ---------------------------------------------------------
def _dp(**kw):
    from privtune.linear_model import DPLogisticRegression

    return DPLogisticRegression(epsilon=0.1, **kw)


def test_declared_classes_of_another_kind_than_the_labels_are_refused_before_anything_is_spent():
    X_tr, y_tr, X_v, y_v = _data()
    words = np.array(["no", "yes"])
    info = _refused(_dp(classes=[0, 1]), X_tr / 10, words[y_tr], X_v / 10, words[y_v],
                    r"declares classes=\[0, 1\] \(numbers\), but y holds strings", exc=InvalidParameterError,
                    sensitive="both", method="random", epsilon=4.0)
    assert "Nothing was read or spent" in str(info.value)


def test_a_string_feature_for_a_dp_estimator_is_refused_before_anything_is_spent():
    pd = pytest.importorskip("pandas")
    X_tr, y_tr, X_v, y_v = _data()

    def frame(X):
        return pd.DataFrame({"a": X[:, 0] / 10, "b": X[:, 1] / 10,
                             "colour": np.where(np.arange(len(X)) % 2, "red", "blue")})

    _refused(_dp(classes=[0, 1]), frame(X_tr), y_tr, frame(X_v), y_v, r"X holds strings in the column\(s\) 'colour'",
             exc=InvalidParameterError, sensitive="both", method="random", epsilon=4.0)


def test_sensitive_training_rows_are_never_fitted_before_the_charge():
    """The pre-flight fit is for public training rows only: with sensitive ones the first fit comes after the
    training plan's charge."""
    X_tr, y_tr, X_v, y_v = _data()
    from privtune.linear_model import DPLogisticRegression

    charged_before = []
    acc = Accountant(Budget(4.0, 1e-6))

    class Watching(DPLogisticRegression):
        def fit(self, X, y):
            charged_before.append(len(acc.ledger))
            return super().fit(X, y)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _search(Watching(epsilon=0.1, classes=[0, 1]), sensitive="both", method="random", epsilon=4.0,
                accountant=acc).fit(X_tr / 10, y_tr, X_val=X_v / 10, y_val=y_v)
    assert charged_before and min(charged_before) > 0
