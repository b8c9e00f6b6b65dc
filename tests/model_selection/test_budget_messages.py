"""Over-budget messages with sensitive training rows (issue 38): the per-fit epsilon set, and the largest that fits,
in Python's vocabulary."""

from __future__ import annotations

import re

import numpy as np
import pytest

from privtune import BudgetExceededError, PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.linear_model import DPLogisticRegression
from privtune.space import Real


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 3))
    y = (X[:, 0] > 0).astype(int)
    return X[:100], y[:100], X[100:], y[100:]


def _search(epsilon, **kw):
    params = dict(sensitive="both", epsilon=1.0, n_iter=4, n_candidates=8, method="random", random_state=0)
    params.update(kw)
    est = DPLogisticRegression(epsilon=epsilon, classes=[0, 1], **params.pop("est", {}))
    return PrivateSearchCV(est, {"C": Real(0.1, 10.0, log=True)}, **params)


def _figure(message):
    found = re.search(r"DPLogisticRegression\(epsilon=([0-9.e-]+)\) \(search\.set_params\(estimator__epsilon=", message)
    assert found, message
    return float(found.group(1))


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_the_refusal_gives_the_largest_per_fit_epsilon_and_echoes_the_one_set(noise):
    X_tr, y_tr, X_v, y_v = _data()
    search = _search(0.9, est={"noise": noise})
    with pytest.raises(BudgetExceededError) as info:
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    msg = str(info.value)
    assert "DPLogisticRegression(epsilon=0.9)" in msg  # the epsilon the user set
    assert "estimator.params" not in msg and "config key" not in msg  # the command line's words stay there
    figure = _figure(msg)
    exact = search.largest_fit_epsilon(len(y_v))
    assert figure <= exact and figure >= exact * (1 - 1e-3)  # rounded down to 4 digits
    if noise == "laplace":
        assert figure == pytest.approx(0.25, rel=1e-3)  # 4 Laplace fits add up to 1
    ok = _search(figure, est={"noise": noise}).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)  # the figure is accepted
    assert ok.privacy_spent_["training"].epsilon <= 1.0 + 1e-12
    assert info.value.largest_fit_epsilon == figure


def test_the_estimators_own_accountant_refusal_gives_its_figure():
    X_tr, y_tr, X_v, y_v = _data()
    cap = Accountant(Budget(0.5, 1e-6))
    search = _search(0.2, est={"noise": "laplace", "accountant": cap})
    with pytest.raises(BudgetExceededError, match="own accountant") as info:
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert _own_figure(str(info.value)) == pytest.approx(0.125, rel=1e-3)  # 4 Laplace fits within 0.5
    assert len(cap.ledger) == 0


def _own_figure(message):
    found = re.search(r"affords is ([0-9.e-]+): use DPLogisticRegression\(epsilon=", message)
    assert found, message
    return float(found.group(1))


def test_no_figure_when_the_space_sets_the_epsilon():
    X_tr, y_tr, X_v, y_v = _data()
    search = PrivateSearchCV(DPLogisticRegression(epsilon=0.9, classes=[0, 1]), {"epsilon": Real(0.5, 0.9)},
                             sensitive="both", epsilon=1.0, n_iter=4, n_candidates=8, method="random")
    with pytest.raises(BudgetExceededError, match="the search space sets it"):
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_privacy_plan_says_the_same():
    with pytest.raises(BudgetExceededError, match=r"DPLogisticRegression\(epsilon=0.9\)"):
        _search(0.9).privacy_plan(60)
