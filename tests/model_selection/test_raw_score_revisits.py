"""A raw-score method observes one fixed function f (issue 37, item 5 of the bugs).

Kusner et al.'s analysis of ``gp-ucb`` / ``gp-ucb-exact`` takes the validation score function f as one fixed draw
from the GP prior. With sensitive training rows each fit draws fresh DP noise, so a candidate the GP-UCB loop visited
again was refitted and scored as a different model: the loop observed a different function at every revisit.
A revisit now keeps the score of the candidate's first fit (the fit still runs, so the number of fits stays the
planned ``n_iter``): f(lambda) is the score of the first fit at lambda. (The tests record f as the release method
receives it, before ``gp-ucb`` adds its observation noise alpha_t: see tests/bo/test_gp_ucb_observation_noise.py.)
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import PrivateSearchCV
from privtune.accounting import EpsilonDeltaEvent
from privtune.base import PrivacyTags
from privtune.bo._common import ChargedObjective
from privtune.space import Categorical

FITS: list[int] = []


class NoisyFitDP(ClassifierMixin, BaseEstimator):
    """Each fit lands on a different model (as a DP fit's fresh noise does): its threshold moves with every fit."""

    def __init__(self, epsilon=0.02, c=1.0, classes=(0, 1), accountant=None, clip="rows"):
        self.epsilon = epsilon
        self.c = c
        self.classes = classes
        self.accountant = accountant
        self.clip = clip

    def __privtune_tags__(self):
        return PrivacyTags(covers="rows", classes_param="classes", raises_on_rows=self.clip == "raise")

    def _fit_privacy_event(self):
        return EpsilonDeltaEvent(epsilon=self.epsilon, label="one NoisyFitDP fit")

    def fit(self, X, y):
        if self.accountant is not None:
            self.accountant.spend(self._fit_privacy_event(), phase="fit", role="training")
        FITS.append(1)
        self.classes_ = np.asarray(self.classes)
        self.threshold_ = 0.25 * ((len(FITS) % 7) - 3)  # a new model at every fit, whatever c is
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] * self.c > self.threshold_).astype(int)


def _data(n=200):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    return X[: n // 2], y[: n // 2], X[n // 2:], y[n // 2:]


@pytest.mark.parametrize("method", ["gp-ucb", "gp-ucb-exact"])
@pytest.mark.parametrize("cv", [None, 2])
def test_a_revisited_candidate_keeps_its_first_score(monkeypatch, method, cv):
    told: dict[int, list[float]] = {}  # f(lambda) at each visit, as the release method receives it
    real_call = ChargedObjective.__call__

    def recording_call(self, index):
        value = real_call(self, index)
        told.setdefault(int(index), []).append(float(value))
        return value

    monkeypatch.setattr(ChargedObjective, "__call__", recording_call)
    X_tr, y_tr, X_v, y_v = _data()
    n_iter = 8
    s = PrivateSearchCV(NoisyFitDP(), {"c": Categorical([1.0, -1.0])}, method=method, sensitive="both",
                        epsilon=1.0, delta=1e-6, n_iter=n_iter, n_candidates=2, cv=cv, random_state=None,
                        method_params={"A": 0.1, "tau": 1.0} if method == "gp-ucb-exact" else None)
    FITS.clear()
    if cv is None:
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    else:
        s.fit(np.vstack([X_tr, X_v]), np.concatenate([y_tr, y_v]))
    assert sum(len(v) for v in told.values()) == n_iter
    assert any(len(v) > 1 for v in told.values())  # two candidates, eight iterations: revisits happened
    for values in told.values():
        assert values == [values[0]] * len(values)  # one fixed f: every visit observes the first fit's score
    # the fits still run at every visit (their count must not tell how many distinct candidates were visited)
    assert len(FITS) == n_iter * (cv or 1) + 1  # and the refit
    assert s.guarantee_ == "conditional"


def test_public_training_rows_observe_one_fixed_f_too(monkeypatch):
    """With public training rows the fits are seeded (run 0 at every visit), but an estimator whose fits differ
    anyway (randomness outside random_state) also observed a moving f."""
    told: dict[int, list[float]] = {}  # f(lambda) at each visit, as the release method receives it
    real_call = ChargedObjective.__call__

    def recording_call(self, index):
        value = real_call(self, index)
        told.setdefault(int(index), []).append(float(value))
        return value

    monkeypatch.setattr(ChargedObjective, "__call__", recording_call)
    X_tr, y_tr, X_v, y_v = _data()
    PrivateSearchCV(NoisyFitDP(), {"c": Categorical([1.0, -1.0])}, method="gp-ucb", sensitive="validation",
                    epsilon=1.0, delta=1e-6, n_iter=8, n_candidates=2,
                    random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert any(len(v) > 1 for v in told.values())
    for values in told.values():
        assert values == [values[0]] * len(values)


def test_the_conditional_guarantee_says_what_f_is_and_where_its_model_breaks():
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(NoisyFitDP(), {"c": Categorical([1.0, -1.0])}, method="gp-ucb", sensitive="validation",
                        epsilon=1.0, delta=1e-6, n_iter=3, n_candidates=2,
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    statement = s.report_.to_dict()["guarantee"]["statement"]
    assert "score of the first fit at λ clipped to the declared score bounds" in statement
    assert "not proven" in statement and "leaves the bounds" in statement
    assert "adds that noise to every observation itself" in statement  # gp-ucb observes noisy scores (Alg. 1)
    assert "exact scores" not in statement
    assert "score of the first fit at λ" in s.report_.to_markdown()
