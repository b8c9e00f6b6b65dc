"""PrivateSearchCV takes the search spaces RandomizedSearchCV / GridSearchCV users write (issue 38)."""

import pytest
import scipy.stats as st
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import ParameterGrid
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.space import Integer, Real


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)  # public scaling, for the test only
    return X[:300], y[:300], X[300:], y[300:]


def test_scipy_distributions_and_lists_are_searched_as_their_translation():
    Xt, yt, Xv, yv = _data()
    s = PrivateSearchCV(LogisticRegression(max_iter=200),
                        {"C": st.loguniform(1e-3, 1e3), "fit_intercept": [True, False],
                         "max_iter": st.randint(50, 300)},
                        method="random", n_iter=5, n_candidates=16, random_state=0, refit=False)
    s.fit(Xt, yt, X_val=Xv, y_val=yv)
    for p in s.cv_results_["params"]:
        assert 1e-3 <= p["C"] <= 1e3 and p["fit_intercept"] in (True, False) and 50 <= p["max_iter"] <= 299
        assert isinstance(p["max_iter"], int)


def test_a_list_of_dicts_searches_exactly_the_grid_search_points():
    Xt, yt, Xv, yv = _data()
    grid = [{"kernel": ["linear"], "C": [0.1, 1.0]}, {"kernel": ["rbf"], "C": [0.1, 1.0], "gamma": [0.01, 0.1]}]
    s = PrivateSearchCV(SVC(), grid, method="random", n_iter=6, random_state=0, refit=False)
    s.fit(Xt, yt, X_val=Xv, y_val=yv)
    searched = s.cv_results_["params"]
    expected = [{"gamma": "scale"} | p for p in ParameterGrid(grid)]  # a left-out key keeps SVC's own value
    assert len(searched) == len(expected) == 6
    for p in expected:
        assert p in searched


@pytest.mark.parametrize("estimator,space,needle", [
    (SVC, {"C": [1.0]}, "Did you mean SVC()?"),
    (SVC(), {"CC": [1.0]}, "'CC' (did you mean 'C'?)"),
    (SVC(), {"C": st.norm()}, "'C' scipy.stats.norm"),
    (SVC(), {"C": 1.0}, "write [1.0]"),
    (SVC(), "C", "Got a value of type builtins.str"),
    (SVC(), {"C": Real(0.1, 1), "gamma": Integer(1, 3), "kernel": object()}, "'kernel' a value of type"),
])
def test_a_space_that_cannot_be_searched_is_refused_before_anything_is_spent(estimator, space, needle):
    Xt, yt, Xv, yv = _data()
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError) as err:
        PrivateSearchCV(estimator, space, accountant=acc, n_iter=2).fit(Xt, yt, X_val=Xv, y_val=yv)
    assert needle in str(err.value)
    assert acc.spent.epsilon == 0.0 and len(acc.ledger) == 0
