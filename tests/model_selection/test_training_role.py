"""The training role of PrivateSearchCV: fits paid up front, nothing that depends on a row or on K is released.

The estimator here is a minimal DP estimator written against the public contract of ``privtune.base.PrivacyTags``
(it is not private itself: the tests check what the *search* does with a declared estimator).
"""

import json
import math

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import BudgetExceededError, InvalidParameterError, PrivateSearchCV, PrivtuneError
from privtune.accounting import (
    Budget,
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    RepeatAndSelectEvent,
    compose_events,
)
from privtune.base import PrivacyTags, get_privacy_tags
from privtune.model_selection._training import FitTickets, check_training_estimator
from privtune.space import Categorical, Real

FITS: list[int] = []  # what the test (not the search's outputs) can see: how many fits ran


class DeclaredDP(ClassifierMixin, BaseEstimator):
    """Declares a pure-epsilon fit; ``overcharge`` makes a fit charge more than it declares; ``fragile`` raises
    on a row whose feature 0 is above 100 (after charging)."""

    def __init__(self, epsilon=0.1, c=1.0, classes=(0, 1), accountant=None, covers="rows", clip="rows",
                 overcharge=False, fragile=False):
        self.epsilon = epsilon
        self.c = c
        self.classes = classes
        self.accountant = accountant
        self.covers = covers
        self.clip = clip
        self.overcharge = overcharge
        self.fragile = fragile

    def __privtune_tags__(self):
        return PrivacyTags(covers=self.covers, classes_param="classes", raises_on_rows=self.clip == "raise")

    def _fit_privacy_event(self):
        return EpsilonDeltaEvent(epsilon=self.epsilon, label="one DeclaredDP fit")

    def fit(self, X, y):
        eps = self.epsilon * (2 if self.overcharge else 1)
        if self.accountant is not None:
            self.accountant.spend(LaplaceEvent(epsilon=eps), phase="fit", role="training")
        FITS.append(1)
        if self.fragile and np.any(np.asarray(X)[:, 0] > 100):
            raise ValueError("a row broke the fit")
        self.classes_ = np.asarray(self.classes)
        self.w_ = float(self.c)
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] * self.w_ > 0).astype(int)


def _data(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    return X[: n // 2], y[: n // 2], X[n // 2:], y[n // 2:]


SPACE = {"c": Categorical([-1.0, 0.5, 1.0, 2.0])}


def _stopping(seed, **kw):
    return PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, sensitive="both", epsilon=1.0, delta=1e-6, n_iter=4,
                           n_candidates=4, method_params={"selection": "random-stopping"}, random_state=seed, **kw)


def _public_outputs(search):
    """Everything a search releases apart from the released values themselves (which depend on the noise)."""
    rep = search.report_.to_dict()
    for k in ("release", "history", "seed_policy", "timings", "candidates"):
        rep.pop(k)
    return (json.dumps(rep, sort_keys=True, default=repr), [e.to_dict() for e in search.ledger_],
            {k: v.to_dict() for k, v in search.privacy_spent_.items()}, search.search_time_, search.n_iter_,
            list(search.cv_results_))


def test_random_stopping_releases_nothing_that_depends_on_the_secret_number_of_runs():
    X_tr, y_tr, X_v, y_v = _data()
    outputs, runs = set(), set()
    for seed in range(12):
        FITS.clear()
        s = _stopping(seed).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        runs.add(len(FITS))
        outputs.add(json.dumps(_public_outputs(s), sort_keys=True, default=repr))
    assert len(runs) > 3  # K varied across seeds ...
    assert len(outputs) == 1  # ... and no output (ledger, spend, report, timings, cv_results_ keys) shows it


def test_random_stopping_charges_one_repeat_and_select_event_per_role_before_any_fit():
    """The roles' rows are disjoint: the validation role pays for the runs' noisy scores, the training role for the
    runs' fits, each through Papernot & Steinke's bound with the same law of K; no refit (the selected run's fit is
    best_estimator_)."""
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = _stopping(0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    train = [e for e in s.ledger_ if e.role == "training"]
    val = [e for e in s.ledger_ if e.role in (None, "validation")]
    assert [type(e.event) for e in val] == [RepeatAndSelectEvent]
    assert [type(e.event) for e in train] == [RepeatAndSelectEvent]  # the runs; no refit
    assert val[0].event.event == LaplaceEvent(epsilon=1.0 / 3, label="noisy score of one run")  # (2 + eta) eps = 1
    assert train[0].event.event == DeclaredDP(epsilon=0.1)._fit_privacy_event()
    assert (train[0].event.mean, train[0].event.shape) == (val[0].event.mean, val[0].event.shape) == (4.0, 1.0)
    assert s.privacy_spent_["training"].epsilon == pytest.approx(0.3)  # (2 + 1) x 0.1
    assert s.privacy_spent_["validation"].epsilon == pytest.approx(1.0)
    assert s.search_time_ is None and s.n_iter_ is None and s.release_.history == ()


class GaussianDeclared(DeclaredDP):
    """Declares (and charges) a Gaussian fit: an RDP curve, no pure epsilon."""

    def _fit_privacy_event(self):
        from privtune.accounting import GaussianEvent

        return GaussianEvent(noise_multiplier=1.0 / self.epsilon, vector=True, label="one GaussianDeclared fit")

    def fit(self, X, y):
        if self.accountant is not None:
            self.accountant.spend(self._fit_privacy_event(), phase="fit", role="training")
        FITS.append(self)
        self.classes_ = np.asarray(self.classes)
        self.w_ = float(self.c) * float(np.random.default_rng(len(FITS)).uniform(0.5, 1.5))
        return self


def test_random_stopping_takes_gaussian_fits_through_their_rdp_curve():
    from privtune.accounting import GaussianEvent, compose_events

    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = PrivateSearchCV(GaussianDeclared(epsilon=0.1), SPACE, sensitive="both", epsilon=1.0, delta=1e-6, n_iter=4,
                        n_candidates=4, method_params={"selection": "random-stopping"}, random_state=0)
    plan = s.privacy_plan(len(y_v))
    s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    (train,) = [e for e in s.ledger_ if e.role == "training"]
    assert isinstance(train.event, RepeatAndSelectEvent) and isinstance(train.event.event, GaussianEvent)
    expected = compose_events([train.event], delta=1e-6)
    assert s.privacy_spent_["training"] == expected == plan["training_total"]
    assert 0.1 < expected.epsilon < 1.0 and expected.delta == pytest.approx(1e-6)
    # best_estimator_ is (a copy, taken before scoring, of) one of the runs' own fits (no refit: every fit is a run)
    assert any(f.w_ == s.best_estimator_.w_ for f in FITS) and all(f is not s.best_estimator_ for f in FITS)
    too_much = PrivateSearchCV(GaussianDeclared(epsilon=0.9), SPACE, sensitive="both", epsilon=1.0, delta=1e-6,
                               n_iter=4, n_candidates=4, method_params={"selection": "random-stopping"})
    FITS.clear()
    with pytest.raises(BudgetExceededError, match=r"GaussianDeclared\(epsilon=0.9\).*largest per-fit epsilon"):
        too_much.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == []


def test_random_stopping_keeps_the_selected_runs_own_fit():
    """Candidates run more than once; each fit has its own model. best_estimator_ is the fit of the run whose noisy
    score was the best (the noise is negligible at this epsilon), not another run of the same candidate, and no
    refit is made."""
    rng = np.random.default_rng(0)
    X_v = rng.normal(size=(4000, 2))
    y_v = (X_v[:, 0] > 0).astype(int)
    X_tr, y_tr = X_v[:20], y_v[:20]

    class Threshold(GaussianDeclared):
        def predict(self, X):  # each fit's own random threshold: every run scores differently
            return (np.asarray(X)[:, 0] > self.w_ - 1.0).astype(int)

    for seed in range(3):
        FITS.clear()
        s = PrivateSearchCV(Threshold(epsilon=1.0), {"c": Categorical([0.9, 1.0])}, sensitive="both", epsilon=40.0,
                            delta=1e-6, n_iter=8, n_candidates=2, method_params={"selection": "random-stopping"},
                            random_state=seed).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        scores = [f.score(X_v, y_v) for f in FITS]
        assert len(FITS) > 2  # some candidate ran more than once
        assert s.best_estimator_.w_ == FITS[int(np.argmax(scores))].w_  # a copy of it, taken before scoring


def test_random_stopping_refuses_fits_without_a_pure_or_rdp_bound():
    class ApproximateFit(DeclaredDP):
        def _fit_privacy_event(self):
            return EpsilonDeltaEvent(epsilon=self.epsilon, delta=1e-7)

    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(ApproximateFit(), SPACE, sensitive="both", n_iter=4, n_candidates=4,
                        method_params={"selection": "random-stopping"})
    with pytest.raises(InvalidParameterError, match="pure epsilon-DP or has an RDP curve"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_random_stopping_refusal_names_the_event_without_dumping_it():
    """The message quoted the declared event's repr (for an RDP filter cap, thousands of characters of orders and
    epsilons). It names the event's kind and label."""
    class Approximate(DeclaredDP):
        def _fit_privacy_event(self):
            return ComposedEvent(events=tuple(EpsilonDeltaEvent(epsilon=self.epsilon / 100, delta=1e-9)
                                              for _ in range(100)), label="one Approximate fit")

    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(Approximate(), SPACE, sensitive="both", n_iter=4, n_candidates=4,
                        method_params={"selection": "random-stopping"})
    with pytest.raises(InvalidParameterError, match=r"declares a ComposedEvent \(one Approximate fit\)") as exc:
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(str(exc.value)) < 500


def test_random_stopping_takes_line_search_fits_through_their_stated_rdp_bound():
    """The line-search solver's fit is charged as the cap of its Renyi filter (a RenyiEvent, stated at finite
    orders), which dp-accounting cannot take; random stopping over it is Papernot & Steinke's Thm 2 on that curve.
    It used to be refused. The training role is charged one RepeatAndSelectEvent over that RenyiEvent, within the
    budget; the per-fit epsilon random stopping affords is within 0.5 % of the Gaussian fits' (the filter's cap is a
    zCDP bound)."""
    from privtune.accounting import RenyiEvent
    from privtune.linear_model import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = (X[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(int)
    X_tr, y_tr, X_v, y_v = X[:250], y[:250], X[250:], y[250:]

    def search(solver, eps=1.0):
        return PrivateSearchCV(DPLogisticRegression(solver=solver, epsilon=eps, classes=[0, 1]),
                               {"C": Real(0.1, 10, log=True)}, sensitive="both", epsilon=1.0, delta=1e-6, n_iter=4,
                               n_candidates=8, method_params={"selection": "random-stopping"}, random_state=0)

    per_fit = search("line-search").largest_fit_epsilon(len(y_v))
    assert per_fit == pytest.approx(search("nag").largest_fit_epsilon(len(y_v)), rel=5e-3)
    s = search("line-search", per_fit).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    (train,) = [e for e in s.ledger_ if e.role == "training"]
    assert isinstance(train.event, RepeatAndSelectEvent) and isinstance(train.event.event, RenyiEvent)
    assert train.event.event == DPLogisticRegression(solver="line-search", epsilon=per_fit,
                                                     classes=[0, 1])._fit_privacy_event()
    assert s.privacy_spent_["training"].epsilon <= 1.0 * (1 + 1e-6)
    assert s.privacy_spent_["training"].delta <= 1e-6 * (1 + 1e-6)
    assert s.n_iter_ is None and s.best_estimator_.solver == "line-search"
    assert s.best_estimator_.score(X_v, y_v) > 0.6


def test_random_stopping_with_cv_charges_every_fold_fit_of_a_run():
    """Regression (found this session): with cv each run fits one model per fold and a row is a training row of all
    folds but one, yet a run was charged one fit. With cv=10 and fits at 0.1 a run costs a row 0.9 of training,
    so the training role must charge at least (2 + eta) x 0.9; it charged (2 + eta) x (0.1 + the score)."""
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, sensitive="both", cv=10, epsilon=8.0, delta=1e-6, n_iter=4,
                        n_candidates=4, method_params={"selection": "random-stopping"}, refit=False)
    plan = s.privacy_plan(30)
    assert plan["training_total"].epsilon >= 3 * 10 * 0.1 - 1e-9  # eta = 1: (2 + 1) x (10 fits at 0.1)
    assert plan["overall"].epsilon >= plan["training_total"].epsilon
    with pytest.raises(InvalidParameterError, match="cannot cover random stopping"):  # 10 fits at 0.3: 3 x 3 > 3
        PrivateSearchCV(DeclaredDP(epsilon=0.3), SPACE, sensitive="both", cv=10, epsilon=6.0, delta=1e-6, n_iter=4,
                        n_candidates=4, method_params={"selection": "random-stopping"}, refit=False).privacy_plan(30)


def test_the_training_plan_is_one_entry_whatever_happens_to_the_fits():
    """Neighbouring training sets, one with a row that makes every fit raise: identical ledgers and spend."""
    X_tr, y_tr, X_v, y_v = _data()
    X_bad = X_tr.copy()
    X_bad[0, 0] = 1e6
    outs = []
    for X in (X_tr, X_bad):
        s = PrivateSearchCV(DeclaredDP(epsilon=0.1, fragile=True), SPACE, sensitive="both", n_iter=3, n_candidates=4,
                            refit=False, random_state=0).fit(X, y_tr, X_val=X_v, y_val=y_v)
        outs.append(([e.to_dict() for e in s.ledger_], s.privacy_spent_))
    assert outs[0] == outs[1]
    train = [e for e in outs[0][0] if e["role"] == "training"]
    assert len(train) == 1 and train[0]["event"]["count"] == 3


def test_a_fit_that_charges_more_than_it_declared_aborts_the_search():
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1, overcharge=True), SPACE, sensitive="both", n_iter=2, n_candidates=4,
                        random_state=0)
    with pytest.raises(BudgetExceededError):  # never swallowed into a lower-bound score
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


@pytest.mark.parametrize("method", ["random", "gp-ucb", "noisy-ucb"])
def test_a_space_over_the_fits_price_is_refused_before_anything_is_spent(method):
    # A candidate declaring a costlier fit than the estimator would abort the search when fitted; with a raw-score
    # method whether it is fitted depends on the validation rows. So it is refused up front, from the space alone.
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1), {"epsilon": Categorical([0.05, 0.1, 0.2])}, method=method,
                        sensitive="training", epsilon=5.0, n_iter=2, n_candidates=16, random_state=0)
    with pytest.raises(InvalidParameterError, match="epsilon=0.2"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == [] and not hasattr(s, "ledger_")
    with pytest.raises(InvalidParameterError, match="declares a fit of"):
        s.privacy_plan(n_validation=30)
    # candidates that cost at most the declaration are fine (they are paid for at the declaration)
    ok = PrivateSearchCV(DeclaredDP(epsilon=0.2), {"epsilon": Categorical([0.05, 0.1, 0.2])}, method=method,
                         sensitive="training", epsilon=5.0, n_iter=2, n_candidates=16, random_state=0)
    ok.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert ok.best_params_["epsilon"] in (0.05, 0.1, 0.2)


class PricedDP(DeclaredDP):
    """Declares a Gaussian fit, or a pure-epsilon one with ``kind="pure"`` (``nm`` sets the Gaussian's noise)."""

    def __init__(self, epsilon=0.1, c=1.0, classes=(0, 1), accountant=None, covers="rows", clip="rows",
                 overcharge=False, fragile=False, kind="gaussian", nm=4.0):
        super().__init__(epsilon=epsilon, c=c, classes=classes, accountant=accountant, covers=covers, clip=clip,
                         overcharge=overcharge, fragile=fragile)
        self.kind = kind
        self.nm = nm

    def _fit_privacy_event(self):
        if self.kind == "pure":
            return EpsilonDeltaEvent(epsilon=self.epsilon, label="one PricedDP fit")
        return GaussianEvent(noise_multiplier=self.nm, vector=True, label="one PricedDP fit")

    def fit(self, X, y):
        if self.accountant is not None:
            self.accountant.spend(self._fit_privacy_event(), phase="fit", role="training")
        FITS.append(1)
        self.classes_ = np.asarray(self.classes)
        self.w_ = float(self.c)
        return self


def test_a_candidate_within_one_fits_budget_but_composing_worse_is_refused():
    # One Gaussian fit (nm 4) costs about 1.2 at delta 1e-6; a pure fit at epsilon 1 is within that single ticket,
    # but eight of them cost 8 where eight Gaussian fits cost about 3.9: the plan (8 x the Gaussian) would
    # under-charge them. Found by an audit (a space over DPLogisticRegression's noise, epsilon and max_iter).
    X_tr, y_tr, X_v, y_v = _data()
    est = PricedDP(nm=4.0)
    one = compose_events([est._fit_privacy_event()], delta=1e-6)
    assert one.epsilon > 1.0
    assert compose_events([GaussianEvent(noise_multiplier=4.0, vector=True)] * 8, delta=1e-6).epsilon < 4.5
    space = {"kind": Categorical(["pure"]), "epsilon": Categorical([1.0]), "c": Real(0.1, 1.0)}
    FITS.clear()
    s = PrivateSearchCV(est, space, sensitive="both", epsilon=5.0, delta=1e-6, n_iter=8, n_candidates=8,
                        refit=False, random_state=0)
    with pytest.raises(InvalidParameterError, match="does not bound once composed"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    with pytest.raises(InvalidParameterError, match="does not bound once composed"):
        s.privacy_plan(n_validation=30)
    assert FITS == []
    # more Gaussian noise on the same sensitivity is dominated at every delta: accepted, and charged as planned
    ok = PrivateSearchCV(PricedDP(nm=4.0), {"nm": Categorical([4.0, 6.0, 9.0]), "c": Real(0.1, 1.0)},
                         sensitive="both", epsilon=5.0, delta=1e-6, n_iter=4, n_candidates=8, random_state=0)
    ok.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert ok.best_params_["nm"] in (4.0, 6.0, 9.0)
    # less noise than declared is refused (more than one ticket), as before
    with pytest.raises(InvalidParameterError, match="does not bound once composed"):
        PrivateSearchCV(PricedDP(nm=4.0), {"nm": Categorical([3.0, 4.0])}, sensitive="both", epsilon=5.0,
                        delta=1e-6, n_iter=2, n_candidates=2).privacy_plan(n_validation=30)


@pytest.mark.parametrize("space,match", [
    ({"clip": Categorical(["rows", "raise"])}, "clip='rows'"),
    ({"classes": Categorical([(0, 1), None])}, "declare DeclaredDP's label set"),
    ({"covers": Categorical(["rows", "labels"])}, "covers the labels only"),
])
def test_a_space_cannot_undo_what_the_training_guarantee_rests_on(space, match):
    # the estimator itself passes check_training_estimator, but a candidate of the space would refuse rows by
    # value or read the label set off the sensitive rows: refused before anything is read or spent
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = PrivateSearchCV(DeclaredDP(), space, sensitive="both", epsilon=5.0, n_iter=2, n_candidates=2,
                        random_state=0)
    with pytest.raises(InvalidParameterError, match=match) as info:
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "The search space's candidate" in str(info.value)
    assert FITS == []
    assert not hasattr(s, "ledger_")


def test_fit_tickets_refuse_a_fit_beyond_the_plan():
    tickets = FitTickets(Budget(0.1, 0.0), 2)
    tickets.accountant()
    tickets.accountant()
    with pytest.raises(PrivtuneError, match="more than the 2 training fits"):
        tickets.accountant()


@pytest.mark.parametrize("kwargs,match", [
    ({"covers": "labels"}, "covers the labels only"),
    ({"clip": "raise"}, "clip='rows'"),
    ({"classes": None}, "declare DeclaredDP's label set"),
])
def test_estimators_whose_guarantee_does_not_cover_training_rows_are_refused(kwargs, match):
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(InvalidParameterError, match=match):
        PrivateSearchCV(DeclaredDP(**kwargs), SPACE, sensitive="both", n_iter=2, n_candidates=4).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_an_estimator_without_tags_is_refused_even_with_an_epsilon_parameter():
    class LooksPrivate(DeclaredDP):
        __privtune_tags__ = None

    assert get_privacy_tags(LooksPrivate()) is None
    with pytest.raises(InvalidParameterError, match="declares no privacy guarantee"):
        check_training_estimator(LooksPrivate())


def test_lipschitz_is_refused_with_sensitive_training_data():
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(DeclaredDP(), {"c": Real(0.1, 1.0)}, sensitive="both", method="lipschitz", n_iter=2,
                        n_candidates=4)
    with pytest.raises(InvalidParameterError, match="lipschitz"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_privacy_plan_shows_the_training_role_and_names_the_key_to_change():
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, sensitive="both", epsilon=1.0, n_iter=4, n_candidates=4)
    plan = s.privacy_plan(30)
    assert set(plan["training_phases"]) == {"fits"}  # random with one split: the selected fit is reused
    assert plan["training_total"].epsilon == pytest.approx(0.4)  # 4 fits at 0.1
    assert plan["overall"].epsilon == pytest.approx(max(plan["total"].epsilon, 0.4))
    too_much = PrivateSearchCV(DeclaredDP(epsilon=0.3), SPACE, sensitive="both", epsilon=1.0, n_iter=4,
                               n_candidates=4)
    with pytest.raises(BudgetExceededError, match=r"DeclaredDP\(epsilon=0.3\).*largest per-fit epsilon"):
        too_much.privacy_plan(30)


def test_an_unaffordable_training_plan_is_refused_before_any_fit():
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.3), SPACE, sensitive="both", epsilon=1.0, n_iter=4, n_candidates=4)
    with pytest.raises(BudgetExceededError, match="n_iter"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == []


def test_training_role_spend_equals_the_plan():
    X_tr, y_tr, X_v, y_v = _data()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, sensitive="both", epsilon=1.0, n_iter=3, n_candidates=4,
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert s.privacy_spent_["training"].epsilon == pytest.approx(0.3)  # 3 fits; best_estimator_ is the selected fit
    assert math.isclose(s.privacy_spent_["overall"].epsilon,
                        max(s.privacy_spent_["training"].epsilon, s.privacy_spent_["validation"].epsilon))


def test_best_estimator_is_the_selected_candidates_own_fit_when_nothing_else_can_differ():
    """One split, random selection: best_estimator_ is the fit that was scored (no refit is planned or run)."""
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, sensitive="both", epsilon=1.0, n_iter=3, n_candidates=4,
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(FITS) == 3  # the three candidate fits, and no fourth
    assert [e.phase for e in s.training_accountant_.entries] == ["fits"]
    assert s.best_estimator_.c == s.best_params_["c"] and s.best_estimator_.w_ == float(s.best_params_["c"])
    assert s.best_estimator_.accountant is None  # the estimator's own (None), not the fit's spent prepaid ticket


class RemembersPredictions(DeclaredDP):
    """Keeps the rows its predict saw (state from predict, as a cache would)."""

    def predict(self, X):
        self.seen_ = np.asarray(X).copy()
        return super().predict(X)


@pytest.mark.parametrize("stopping", [False, True])
def test_the_reused_fit_never_holds_state_from_scoring_the_validation_rows(stopping):
    """best_estimator_ was the very object scored on the sensitive validation rows, so an estimator keeping state
    from predict released them with the model (found by an audit). The kept model is copied before scoring."""
    X_tr, y_tr, X_v, y_v = _data()
    kw = {"method_params": {"selection": "random-stopping"}} if stopping else {}
    s = PrivateSearchCV(RemembersPredictions(epsilon=0.1), SPACE, sensitive="both", epsilon=1.0, delta=1e-6,
                        n_iter=3, n_candidates=4, random_state=0, **kw).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert [e.phase for e in s.training_accountant_.entries][-1] != "refit"  # the selected fit itself is kept
    assert not hasattr(s.best_estimator_, "seen_")


def test_a_refit_is_still_planned_where_the_selected_fit_is_not_the_refit():
    """With cv (the candidates saw a fold, not all rows) the refit is a new fit, planned and charged up front."""
    X_tr, y_tr, _, _ = _data()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.05), SPACE, sensitive="both", epsilon=1.0, n_iter=2, n_candidates=4,
                        cv=2, random_state=0)
    plan = s.privacy_plan(len(y_tr) // 2)
    assert set(plan["training_phases"]) == {"fits", "refit"}
    assert plan["training_total"].epsilon == pytest.approx(0.05 * 5)  # 2 candidates x 2 folds + the refit


def test_a_selected_candidate_whose_fit_failed_is_reported_without_a_new_fit():
    """The selected fit raised (so nothing was kept): no unplanned refit, a CandidateFitError naming no value."""
    from privtune.model_selection._search import CandidateFitError

    X_tr, y_tr, X_v, y_v = _data()
    X_tr = X_tr.copy()
    X_tr[0, 0] = 1e3  # every fit of the fragile estimator raises (after charging)
    FITS.clear()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1, fragile=True), SPACE, sensitive="both", epsilon=1.0, n_iter=2,
                        n_candidates=4, random_state=0)
    with pytest.raises(CandidateFitError, match="failed") as info:
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "1000" not in str(info.value) and len(FITS) == 2


def test_largest_fit_epsilon_is_the_edge_of_what_privacy_plan_accepts():
    s = PrivateSearchCV(DeclaredDP(epsilon=0.01), SPACE, sensitive="both", epsilon=1.0, n_iter=4, n_candidates=4)
    eps = s.largest_fit_epsilon(30)
    assert 0.25 * (1 - 1e-4) <= eps <= 0.25  # 4 pure fits (the selected one is best_estimator_)
    s.set_params(estimator__epsilon=eps).privacy_plan(30)
    with pytest.raises(BudgetExceededError):
        s.set_params(estimator__epsilon=eps * 1.01).privacy_plan(30)
    # random stopping over the same pure fits: (2 + eta) x one fit, whatever the mean number of runs
    stopped = PrivateSearchCV(DeclaredDP(epsilon=0.01), SPACE, sensitive="both", epsilon=1.0, delta=1e-6, n_iter=40,
                              n_candidates=4, method_params={"selection": "random-stopping"})
    assert stopped.largest_fit_epsilon(30) == pytest.approx(1 / 3, rel=1e-3)


def test_largest_fit_epsilon_with_gaussian_fits_and_random_stopping():
    """Gaussian fits: k fits compose to about sqrt(k) times one, while random stopping costs a small multiple of one
    fit whatever its mean: with 20 fits it affords a larger per-fit epsilon."""
    from privtune.linear_model import DPLogisticRegression

    common = dict(sensitive="both", epsilon=1.0, delta=1e-6, n_iter=20, n_candidates=32)
    est = DPLogisticRegression(classes=[0, 1])
    space = {"C": Real(0.01, 100.0, log=True)}
    chosen = PrivateSearchCV(est, space, **common).largest_fit_epsilon(100)
    stopped = PrivateSearchCV(est, space, method_params={"selection": "random-stopping", "stopping_shape": 0.0},
                              **common).largest_fit_epsilon(100)
    assert 0.1 < chosen < stopped < 1.0


def test_largest_fit_epsilon_refuses_what_it_cannot_answer():
    with pytest.raises(InvalidParameterError, match="public"):
        PrivateSearchCV(DeclaredDP(), SPACE, sensitive="validation").largest_fit_epsilon(30)
    with pytest.raises(InvalidParameterError, match="sets the estimator's 'epsilon'"):
        PrivateSearchCV(DeclaredDP(), {"epsilon": Categorical([0.1, 0.2])}, sensitive="both").largest_fit_epsilon(30)

    class Costly(DeclaredDP):  # a fit that costs epsilon 2 whatever its own epsilon parameter says
        def _fit_privacy_event(self):
            return EpsilonDeltaEvent(epsilon=2.0)

    with pytest.raises(BudgetExceededError, match="lower n_iter"):
        PrivateSearchCV(Costly(), SPACE, sensitive="both", epsilon=1.0, n_iter=2).largest_fit_epsilon(30)


@pytest.mark.parametrize("cv", [None, 3])
def test_a_candidate_whose_solver_plan_cannot_be_built_is_refused_before_the_search_charges(monkeypatch, cv):
    """A privtune DP estimator refuses a configuration no exact noise grid or float can hold before its own charge,
    but a search prepays its fits: such a candidate (here intercept_scaling=1e200) used to be charged for with the
    whole plan and then fail inside the search. Every candidate's plan is now built from the public sizes (each
    fold's, and the refit's) before the search charges anything."""
    from privtune.accounting import Accountant
    from privtune.svm import DPLinearSVC

    spent = []
    real_spend = Accountant.spend
    monkeypatch.setattr(Accountant, "spend", lambda self, *a, **k: (spent.append(a), real_spend(self, *a, **k))[1])
    X_tr, y_tr, X_v, y_v = _data(n=120)
    space = {"intercept_scaling": Categorical([1.0, 1e200])}
    s = PrivateSearchCV(DPLinearSVC(epsilon=0.5, classes=[0, 1]), space, method="random", sensitive="both",
                        epsilon=5.0, n_iter=2, n_candidates=2, random_state=0, cv=cv)
    data = dict(X_val=X_v, y_val=y_v) if cv is None else {}
    with pytest.raises(InvalidParameterError, match=r"row bounds .* overflow.*intercept_scaling': 1e\+200"):
        s.fit(X_tr, y_tr, **data)
    assert spent == [] and not hasattr(s, "ledger_")
    ok = PrivateSearchCV(DPLinearSVC(epsilon=0.5, classes=[0, 1]), {"intercept_scaling": Categorical([0.5, 1.0])},
                         method="random", sensitive="both", epsilon=5.0, n_iter=2, n_candidates=2, random_state=0,
                         cv=cv)
    ok.fit(X_tr, y_tr, **data)
    assert spent
