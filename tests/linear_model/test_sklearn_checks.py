"""scikit-learn's estimator checks on privtune's DP classifiers (linear_model and svm).

The check instances use a small ``max_iter`` (speed) and a large ``epsilon``
with a generous ``data_norm`` where a check measures accuracy: sklearn's
accuracy checks train on ~100 rows, on which any epsilon-DP model at
epsilon ~ 1 is close to chance by design.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from privtune.linear_model import DPLogisticRegression
from privtune.svm import DPSVC, DPLinearSVC

_COMMON = dict(epsilon=1e4, max_iter=10, random_state=0)
ESTIMATORS = [
    DPLogisticRegression(data_norm=10.0, C=100.0, **_COMMON),
    DPLinearSVC(data_norm=10.0, C=100.0, **_COMMON),
    DPSVC(C=100.0, gamma=0.5, n_components=50, features="fourier", **_COMMON),
    DPSVC(C=100.0, gamma=0.5, features="taylor", degree=3, **_COMMON),
    DPLogisticRegression(data_norm=10.0, C=100.0, solver="line-search", epsilon=1e4, random_state=0),
]

#: Deliberate deviations from scikit-learn's conventions, each for a privacy reason.
EXPECTED_FAILURES = {"check_dtype_object": (
    "a non-numeric entry of a sensitive training row is mapped to NaN (then 0) after the charge, "
    "never refused: a refusal would depend on one row (DESIGN rule 7)")}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES)
def test_sklearn_compatible(estimator, check):
    # sklearn's check_methods_sample_order_invariance draws from numpy's *global* RNG
    # (np.random.permutation); restore it so that the conftest guard, which is about
    # privtune never touching global RNGs, does not blame privtune for sklearn's draw.
    state = np.random.get_state()
    try:
        check(estimator)
    finally:
        np.random.set_state(state)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_default_construction_stores_only(est):
    params = type(est)().get_params()
    assert params["epsilon"] == 1.0 and params["accountant"] is None and params["random_state"] is None
