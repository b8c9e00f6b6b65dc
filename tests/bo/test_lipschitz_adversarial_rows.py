"""``lipschitz`` (Kusner Alg. 3) on neighbouring validation sets with one row privtune cannot control.

The paper's per-lambda term L/(m lambda_min) (2L/(m lambda_min) under replace-one) needs every validation row to have
||x|| <= 1 and g(0, x, y) = phi(0). A sensitive row may break both: a row on which ``predict_proba`` fails (NaN) gets
the worst per-row value g* from row isolation, and a row of norm 100 is never clipped. One such row moves a
candidate's score by up to g*/m, which is the per-lambda sensitivity privtune now uses. Also: the exponential
mechanism's scores are each candidate's *first* fit's, never a refit whose derived seed counts the secret
trajectory's visits.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from privtune.bo import LipschitzRelease, lipschitz_constants
from privtune.bo import engine as bo_engine
from privtune.mechanisms import Exponential
from privtune.model_selection import PrivateSearchCV
from privtune.space import Real, SearchSpace, candidate_set


def test_per_lambda_sensitivity_covers_a_failing_row_and_an_unclipped_row():
    """Logistic margin loss capped at g* = 10, ||w|| = 1 / lambda_min = 1, L = 1, m = 100. An honest unit row moves
    at most 2L/(m lambda_min) = 0.02; a failing row (isolation: g*) or a row of norm 100 moves up to ~g*/m = 0.1."""
    m, g_star, lam_min = 100, 10.0, 1.0
    w = np.array([1.0, 0.0, 0.0])  # ||w|| = 1 / lambda_min

    def g(x, y):  # the capped per-row log loss; a NaN row is isolated to g*
        if not np.all(np.isfinite(x)):
            return g_star
        return float(min(g_star, np.log1p(np.exp(-(2 * y - 1) * (w @ x)))))

    honest = (np.array([1.0, 0.0, 0.0]), 1)  # ||x|| = 1, correct side
    got = lipschitz_constants(n_validation=m, epsilon=1.0, lipschitz=1.0, loss_bound=g_star, lambda_min=lam_min,
                              lambda_max=1.001)
    for bad in [(np.array([np.nan, 0.0, 0.0]), 1), (np.array([-100.0, 0.0, 0.0]), 1)]:
        move = abs(g(*bad) - g(*honest)) / m
        assert move > 2.0 * 1.0 / (m * lam_min)  # the paper's branch (doubled) is broken by this row ...
        assert got["per_lambda_sensitivity"] >= move  # ... the per-lambda sensitivity is not
    assert got["per_lambda_sensitivity"] == pytest.approx(g_star / m)
    assert got["sensitivity"] == pytest.approx(g_star / m + 0.001 / 1.001)


class LamLR(ClassifierMixin, BaseEstimator):
    """(lam/2)||w||^2 + mean log loss (sklearn C = 1/(n lam)), no intercept: Kusner's training objective."""

    def __init__(self, lam=1.0):
        self.lam = lam

    def fit(self, X, y):
        self.m_ = LogisticRegression(C=1.0 / (len(X) * self.lam), fit_intercept=False, tol=1e-10,
                                     max_iter=1000).fit(X, y)
        self.classes_ = self.m_.classes_
        return self

    def predict_proba(self, X):
        return self.m_.predict_proba(X)

    def predict(self, X):
        return self.m_.predict(X)


def _unit_rows(rng, n, d=3):
    Z = rng.normal(size=(n, d))
    return Z / np.maximum(1.0, np.linalg.norm(Z, axis=1, keepdims=True))


@pytest.mark.parametrize("row", [[np.nan, 0.0, 0.0], [-100.0, 0.0, 0.0]], ids=["nan-row", "norm-100-row"])
def test_one_adversarial_validation_row_stays_within_the_declared_sensitivities(row, monkeypatch):
    """Documented setting (L = 1, rows of norm <= 1, lambda in [1, 1.001], neg_log_loss in [-10, 0], m = 100); the
    neighbour replaces row 0 by a NaN row or a row of norm 100 (label 1). f_BO (what the Laplace noise is added to)
    and each candidate's score given to the exponential mechanism must move by at most the declared sensitivities.
    Before the fix (per-lambda 2L/(m lambda_min) = 0.02, total 0.021) f_BO moved by 0.094, 4.5 times the declared
    sensitivity."""
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    X_tr = _unit_rows(rng, 200)
    y_tr = (X_tr[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    X_val = _unit_rows(rng, 100)
    y_val = (X_val[:, 0] > 0).astype(int)
    params = dict(regularization="lam", lambda_bounds=(1.0, 1.001), lipschitz=1.0, loss_bound=10.0)
    em_inputs, f_bo = [], []
    select = Exponential.select
    monkeypatch.setattr(Exponential, "select", lambda self, u: (em_inputs.append(np.array(u, float)),
                                                                 select(self, u))[1])
    release = LipschitzRelease._release_score
    monkeypatch.setattr(LipschitzRelease, "_release_score", lambda self, mech, v: (f_bo.append(v),
                                                                                  release(self, mech, v))[1])

    def run(Xv, yv):
        s = PrivateSearchCV(LamLR(), {"lam": Real(1.0, 1.001)}, method="lipschitz", epsilon=2.0, n_iter=3,
                            n_candidates=4, scoring="neg_log_loss", score_bounds=(-10.0, 0.0), method_params=params,
                            refit=False, random_state=1)
        return s.fit(X_tr, y_tr, X_val=Xv, y_val=yv)

    run(X_val, y_val)
    X2, y2 = X_val.copy(), y_val.copy()
    X2[0], y2[0] = row, 1
    c = run(X2, y2).release_.diagnostics["constants"]
    moved = abs(f_bo[1] - f_bo[0])  # the value the Laplace noise is added to
    assert moved > 2.0 * 1.0 / (100 * 1.0) + c["path_term"]  # the pair breaks the paper's (doubled) sensitivity
    assert moved <= c["sensitivity"] * (1 + 1e-9)
    assert len(em_inputs) == 2
    assert np.max(np.abs(em_inputs[1] - em_inputs[0])) <= c["per_lambda_sensitivity"] * (1 + 1e-9)
    assert c["per_lambda_sensitivity"] == pytest.approx(10.0 / 100)


def test_the_selection_uses_each_candidates_first_score_whatever_the_trajectory(monkeypatch):
    """An objective whose value depends on how often a candidate ran (a randomised estimator: the search derives each
    fit's seed from that count) must not reach the exponential mechanism through the final batch, where a visited
    candidate runs for the (visits + 1)-th time: the count is the secret trajectory's. Every candidate's score there
    is its first evaluation's."""
    space = SearchSpace({"alpha": Real(0.1, 1.0, log=True)})
    cands = candidate_set(space, 6, random_state=0)
    em_inputs = []
    select = Exponential.select
    monkeypatch.setattr(Exponential, "select", lambda self, u: (em_inputs.append(np.array(u, float)),
                                                                 select(self, u))[1])
    runs: dict[float, int] = {}

    def objective(p):
        a = p["alpha"]
        runs[a] = runs.get(a, 0) + 1
        first = -abs(math.log(a / 0.3)) / 5  # in [-1, 0]
        return max(-1.0, first - 0.2 * (runs[a] - 1))  # each later run of a candidate scores lower

    m = LipschitzRelease(epsilon=1.0, n_iter=12, regularization="alpha", lambda_bounds=(0.1, 1.0), lipschitz=1.0,
                         loss_bound=1.0, n_validation=1000)
    m.run(objective, cands, random_state=0)
    firsts = np.array([max(-1.0, -abs(math.log(p["alpha"] / 0.3)) / 5) for p in cands.params])
    assert max(runs.values()) > 2  # the trajectory revisited a candidate (12 iterations, 6 candidates)
    assert len(em_inputs) == 1
    np.testing.assert_allclose(em_inputs[0], firsts, rtol=0, atol=1e-12)


class SeededShift(ClassifierMixin, BaseEstimator):
    """A randomised public fit: decision = x0 / lam + u, u drawn from ``random_state`` (left None: privtune derives
    it from the candidate and its run count)."""

    def __init__(self, lam=4.0, random_state=None):
        self.lam = lam
        self.random_state = random_state

    def fit(self, X, y):
        self.u_ = float(np.random.default_rng(self.random_state).uniform(-2.0, 2.0))
        self.classes_ = np.array([0, 1])
        return self

    def decision_function(self, X):
        return np.asarray(X, float)[:, 0] / self.lam + self.u_

    def predict(self, X):
        return (self.decision_function(X) > 0).astype(int)


def _neg_sigmoid_loss(est, X, y):
    z = est.decision_function(X) * np.where(np.asarray(y) == 1, 1.0, -1.0)
    return -float(np.mean(1.0 / (1.0 + np.exp(z))))


def test_search_selection_scores_are_first_fits_not_trajectory_counted_refits(monkeypatch):
    """End to end through PrivateSearchCV: with 2 candidates and 5 iterations the loop revisits; the scores given to
    the exponential mechanism must be the ones the loop observed first for each candidate (the batch's refit of a
    visited candidate has a seed derived from its visit count, a function of the secret trajectory)."""
    told: dict[int, float] = {}
    tell = bo_engine.UCBEngine.tell
    monkeypatch.setattr(bo_engine.UCBEngine, "tell", lambda self, i, v: (told.setdefault(int(i), float(v)),
                                                                         tell(self, i, v))[1])
    em_inputs = []
    select = Exponential.select
    monkeypatch.setattr(Exponential, "select", lambda self, u: (em_inputs.append(np.array(u, float)),
                                                                 select(self, u))[1])
    x0 = np.r_[-np.linspace(1.0, 0.05, 20), np.linspace(0.05, 1.0, 20)]
    X_val, y_val = np.c_[x0, np.zeros(40)], (x0 > 0).astype(int)
    X_tr, y_tr = np.array([[-1.0, 0.0], [1.0, 0.0]] * 3), np.array([0, 1] * 3)
    s = PrivateSearchCV(SeededShift(), {"lam": Real(4.0, 4.04)}, method="lipschitz", epsilon=2.0, n_iter=5,
                        n_candidates=2, scoring=_neg_sigmoid_loss, score_bounds=(-1.0, 0.0), refit=False,
                        method_params=dict(regularization="lam", lambda_bounds=(4.0, 4.04), lipschitz=0.25,
                                           loss_bound=1.0), random_state=3)
    s.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert sorted(told) == [0, 1] and len(em_inputs) == 1
    np.testing.assert_allclose(em_inputs[0], [told[0], told[1]], rtol=0, atol=1e-12)
