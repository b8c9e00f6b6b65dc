"""scikit-learn's estimator checks on PrivateSearchCV (with a fast, DP-free estimator, sensitive="validation").

Every check passes: ``EXPECTED_FAILED`` is empty. Some of scikit-learn's check functions draw from numpy's
global generator themselves, so its state is saved and restored around each check (the autouse guard in
tests/conftest.py would otherwise blame privtune for sklearn's test code).
"""

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from privtune import PrivateSearchCV
from privtune.space import Real

EXPECTED_FAILED: dict[str, str] = {}


@parametrize_with_checks(
    [PrivateSearchCV(LogisticRegression(max_iter=200), {"C": Real(0.01, 10.0, log=True)}, n_iter=2, n_candidates=4,
                     validation_size=0.3, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED,
)
def test_sklearn_estimator_checks(estimator, check):
    state = np.random.get_state()
    try:
        check(estimator)
    finally:
        np.random.set_state(state)
