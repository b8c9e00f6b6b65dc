"""The search's epsilon has a domain, refused before anything runs (issue 37, robustness items).

``method="random"`` with epsilon >= 1e155 raised a bare ``OverflowError`` (the accountant squares it);
``noisy-ucb`` refused its own plan from epsilon ~ 1e8 (its calibration margin no longer absorbs the accountant's
discretisation); at epsilon = 1e-300 every method charged its plan, evaluated the candidates, then failed to build its
noise (no exact grid that fine); at 1e155 ``gp-ucb`` released the midpoint of the score range (the grid could not hold
the scores, so every release saturated). Each is now an ``InvalidParameterError`` naming ``epsilon`` and the range
this configuration accepts, before any charge.
"""

import re
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privtune import InvalidParameterError, PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.space import Categorical, Real

METHODS = ["random", "prescreen", "noisy-ucb", "gp-ucb", "gp-ucb-exact", "lipschitz", "auto"]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    return X[:60], y[:60], X[60:], y[60:]


def _search(method, epsilon, **kw):
    params = {"method": method, "epsilon": epsilon, "n_iter": 4, "n_candidates": 16, "random_state": 0}
    if method == "gp-ucb-exact":
        params["method_params"] = {"A": 0.1, "tau": 1.0}
    if method == "lipschitz":
        params.update(scoring="neg_log_loss", score_bounds=(-1.0, 0.0),
                      method_params={"regularization": "C", "lambda_bounds": (0.1, 10.0), "lipschitz": 1.0,
                                     "loss_bound": 1.0})
    params.update(kw)
    return PrivateSearchCV(LogisticRegression(), {"C": Real(0.1, 10.0, log=True)}, **params)


def _accepted(message):
    found = re.search(r"accepts epsilon in \[([^,\]]+), ([^\]]+)\]", message)
    assert found, message
    return float(found.group(1)), float(found.group(2))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("epsilon", [1e-300, 1e300])
def test_an_epsilon_outside_the_methods_domain_is_refused_before_anything_is_spent(method, epsilon):
    X_tr, y_tr, X_v, y_v = _data()
    acc = Accountant(Budget(epsilon, 1e-6))
    s = _search(method, epsilon, accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the low-utility warnings of a tiny epsilon
        with pytest.raises(InvalidParameterError, match="'epsilon'") as info:
            s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        message = str(info.value)
        assert acc.entries == ()  # nothing spent
        lo, hi = _accepted(message)
        assert lo <= 1.0 <= hi and not lo <= epsilon <= hi
        if method == "auto":
            assert "method='auto' (resolved to 'prescreen')" in message
        else:
            assert f"method='{method}'" in message
        with pytest.raises(InvalidParameterError, match="'epsilon'"):
            s.privacy_plan(60)
        for edge in (lo, hi):  # the range stated is accepted, at both ends
            _search(method, edge).privacy_plan(60)


@pytest.mark.parametrize("method,epsilon", [("random", 1e155), ("noisy-ucb", 1e8), ("gp-ucb", 1e155),
                                            ("lipschitz", 1e155)])
def test_the_issues_cases_are_refused_with_the_domain(method, epsilon):
    with pytest.raises(InvalidParameterError, match=r"accepts epsilon in \[") as info:
        _search(method, epsilon).privacy_plan(60)
    assert "OverflowError" not in str(info.value)
    lo, hi = _accepted(str(info.value))
    assert hi < epsilon


def test_a_large_accepted_epsilon_does_not_saturate_the_release():
    """At the top of the accepted range the noise grid still holds the whole score range, so the release is the
    score plus noise, never a value pinned near the midpoint."""
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(InvalidParameterError) as info:
        _search("random", 1e300).privacy_plan(60)
    _, hi = _accepted(str(info.value))
    s = _search("random", hi).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    truth = LogisticRegression(C=s.best_params_["C"]).fit(X_tr, y_tr).score(X_v, y_v)
    assert s.release_.score == pytest.approx(truth, abs=1e-3)


def test_ordinary_epsilons_are_untouched():
    for method in METHODS:
        for epsilon in (0.01, 100.0):
            _search(method, epsilon).privacy_plan(60)


def test_the_candidate_count_refusal_names_the_method_asked_for():
    X_tr, y_tr, X_v, y_v = _data()
    space = {"C": Categorical([0.1, 1.0, 10.0])}
    for method, named in (("auto", "method='auto' (resolved to 'prescreen')"), ("prescreen", "method='prescreen'"),
                          ("random", "method='random'")):
        s = PrivateSearchCV(LogisticRegression(), space, method=method, n_iter=5, n_candidates=8, random_state=0)
        with pytest.raises(InvalidParameterError, match="distinct candidates") as info:
            s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        assert str(info.value).startswith(named), str(info.value)
    s = PrivateSearchCV(LogisticRegression(), space, method="auto", cv=None, sensitive="validation", n_iter=5,
                        n_candidates=8, method_params={"selection": "exponential"}, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"^method='auto' \(resolved to 'random'\)"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_the_screening_refusal_names_the_method_asked_for():
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(LogisticRegression(), {"C": Real(0.1, 10.0, log=True)}, n_iter=2, n_candidates=8,
                        method_params={"screen_cv": 5}, random_state=0)  # method="auto": prescreen here
    with pytest.raises(InvalidParameterError, match=r"^method='auto' \(resolved to 'prescreen'\) scores candidates"):
        s.fit(X_tr[:3], y_tr[:3], X_val=X_v, y_val=y_v)
