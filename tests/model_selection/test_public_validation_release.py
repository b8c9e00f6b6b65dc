"""sensitive="training": the validation rows are public, so the selection and the score are post-processing of
the paid DP fits -- the validation role spends nothing, and the released score is the exact one (issue 40)."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import MinMaxScaler

from privtune import PrivateSearchCV
from privtune.accounting import EpsilonDeltaEvent, LaplaceEvent, RepeatAndSelectEvent
from privtune.base import PrivacyTags
from privtune.bo import RandomSearch
from privtune.bo.post_processing import PostProcessingSelection
from privtune.exceptions import InvalidParameterError
from privtune.linear_model import DPLogisticRegression
from privtune.space import CandidateSet, Categorical, Real, SearchSpace

FITS: list[int] = []  # what the test (not the search's outputs) can see: how many fits ran


class DeclaredDP(ClassifierMixin, BaseEstimator):
    """Declares a pure-epsilon fit (it is not private itself: the tests check what the *search* does)."""

    def __init__(self, epsilon=0.1, c=1.0, classes=(0, 1), accountant=None):
        self.epsilon = epsilon
        self.c = c
        self.classes = classes
        self.accountant = accountant

    def __privtune_tags__(self):
        return PrivacyTags(covers="rows", classes_param="classes")

    def _fit_privacy_event(self):
        return EpsilonDeltaEvent(epsilon=self.epsilon, label="one DeclaredDP fit")

    def fit(self, X, y):
        if self.accountant is not None:
            self.accountant.spend(LaplaceEvent(epsilon=self.epsilon), phase="fit", role="training")
        FITS.append(1)
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


def _search(sensitive="training", **kw):
    params = {"epsilon": 1.0, "delta": 1e-6, "n_iter": 3, "n_candidates": 4, "random_state": 0, "method": "random"}
    params.update(kw)
    return PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, sensitive=sensitive, **params)


def test_the_validation_role_spends_nothing_and_the_score_is_exact():
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    s = _search().fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert [e for e in s.ledger_ if e.role in (None, "validation")] == []
    assert s.privacy_spent_["validation"].epsilon == 0.0 and s.privacy_spent_["validation"].delta == 0.0
    assert s.privacy_spent_["training"].epsilon == pytest.approx(0.3)  # 3 fits, no refit: the selected fit is kept
    assert s.privacy_spent_["overall"].epsilon == pytest.approx(0.3)
    assert len(FITS) == 3 and s.guarantee_ == "unconditional" and s.release_.events == ()
    # exact: the best of the three evaluated candidates' own scores, and best_estimator_ is that fit
    assert s.best_score_ == s.best_estimator_.score(X_v, y_v)
    assert s.release_.noise == {}
    assert "exact" in s.release_.diagnostics["selection"]


def test_the_same_candidates_are_fitted_as_with_a_private_selection():
    """The wrapper keeps how the method chooses what to fit: only the release changes."""
    X_tr, y_tr, X_v, y_v = _data()
    a = _search("training").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    b = _search("both").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert [r.params for r in a.release_.history] == [r.params for r in b.release_.history]
    assert b.privacy_spent_["validation"].epsilon == pytest.approx(1.0)  # the validation rows are sensitive there
    assert a.privacy_spent_["training"] == b.privacy_spent_["training"]


def test_random_stopping_charges_only_the_training_role():
    X_tr, y_tr, X_v, y_v = _data()
    s = _search(n_iter=4, method_params={"selection": "random-stopping"}).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    train = [e for e in s.ledger_ if e.role == "training"]
    assert [type(e.event) for e in train] == [RepeatAndSelectEvent]
    assert [e for e in s.ledger_ if e.role in (None, "validation")] == []
    assert s.privacy_spent_["training"].epsilon == pytest.approx(0.3)  # (2 + 1) x 0.1
    assert s.privacy_spent_["validation"].epsilon == 0.0
    assert s.n_iter_ is None and s.release_.history == ()  # K stays secret
    assert s.best_score_ == s.best_estimator_.score(X_v, y_v)  # the kept run is the exact best


@pytest.mark.parametrize("method", ["gp-ucb", "gp-ucb-exact", "noisy-ucb"])
def test_gp_methods_observe_exact_scores_and_release_unconditionally(method):
    X_tr, y_tr, X_v, y_v = _data()
    s = _search(method=method, n_iter=4).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert s.guarantee_ == "unconditional"  # no GP prior: the guarantee is the training role's
    assert s.privacy_spent_["validation"].epsilon == 0.0
    assert s.privacy_spent_["training"].epsilon == pytest.approx(0.5)  # 4 fits and the refit, planned up front
    scores = {c: DeclaredDP(c=c).fit(X_tr, y_tr).score(X_v, y_v) for c in (-1.0, 0.5, 1.0, 2.0)}
    assert s.best_score_ == pytest.approx(scores[s.best_params_["c"]])
    assert s.best_score_ == pytest.approx(max(scores.values()))  # 4 iterations over 4 candidates find the best


def test_privacy_plan_shows_no_validation_cost():
    plan = _search().privacy_plan(n_validation=30)
    assert plan["total"].epsilon == 0.0 and plan["phases"] == {}
    assert plan["overall"].epsilon == pytest.approx(plan["training_total"].epsilon)
    assert plan["noise"] == {}


def test_a_real_dp_estimator_end_to_end():
    X, y = load_breast_cancer(return_X_y=True)
    X = MinMaxScaler().fit_transform(X) / np.sqrt(X.shape[1])  # rows of norm <= 1 (scaled with public bounds)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    tr, va = idx[:400], idx[400:]
    est = DPLogisticRegression(epsilon=0.5, classes=[0, 1])
    s = PrivateSearchCV(est, {"C": Real(0.1, 10.0, log=True)}, sensitive="training", epsilon=2.0,
                        n_iter=4, random_state=0).fit(X[tr], y[tr], X_val=X[va], y_val=y[va])
    assert s.privacy_spent_["validation"].epsilon == 0.0
    assert s.privacy_spent_["training"].epsilon <= 2.0
    assert s.best_score_ == s.best_estimator_.score(X[va], y[va])


def test_post_processing_selection_is_the_exact_argmax_over_the_same_order():
    cands = CandidateSet(SearchSpace({"k": Categorical(list(range(10)))}), [{"k": k} for k in range(10)])
    values = {int(c["k"]): float(v) for c, v in zip(cands, np.linspace(0.1, 0.9, len(cands))[::-1], strict=True)}
    inner = RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01)
    rel = PostProcessingSelection(inner).run(lambda p: values[int(p["k"])], cands, random_state=3)
    visited = [int(r.params["k"]) for r in rel.history]
    assert len(visited) == 5 and rel.params["k"] == max(visited, key=values.get)
    assert rel.score == values[rel.params["k"]] and rel.events == () and rel.spent.epsilon == 0.0
    noisy = inner.run(lambda p: values[int(p["k"])], cands, random_state=3)
    assert [int(r.params["k"]) for r in noisy.history] == visited


def test_post_processing_selection_refuses_methods_that_assume_public_training_rows():
    with pytest.raises(InvalidParameterError, match="wraps"):
        PostProcessingSelection(object())


def test_gp_methods_refuse_release_parameters_that_have_no_effect_with_public_validation_rows():
    X_tr, y_tr, X_v, y_v = _data()
    FITS.clear()
    with pytest.raises(InvalidParameterError, match="noise_std"):
        _search(method="noisy-ucb", method_params={"noise_std": 0.1}).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert FITS == []  # refused before any fit


# ----------------------------------------------------------------------------- public proxy rows (issue 40)
def _proxy(seed=1, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("sensitive", ["training", "validation", "both"])
def test_proxy_rows_rank_the_candidates_for_free_and_the_search_runs_over_the_best(sensitive):
    X_tr, y_tr, X_v, y_v = _data()
    X_p, y_p = _proxy()
    grid = [{"c": [-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]}]  # c < 0 predicts the wrong class everywhere
    FITS.clear()
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1), grid, sensitive=sensitive, method="random", epsilon=1.0, n_iter=3,
                        random_state=0)
    s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p, y_proxy=y_p)
    assert sorted(c["c"] for c in s.candidates_) == [0.5, 1.0, 2.0]  # the three that work on the proxy rows
    info = s.proxy_screening_
    assert info["kept"] == 3 and info["screened"] == 6 and "proxy" in info["on"]
    assert not any(isinstance(v, float) for v in info.values())  # sizes and folds only, no score
    # the proxy fits are free: the training role pays for the three candidate fits only
    if sensitive != "validation":
        assert s.privacy_spent_["training"].epsilon == pytest.approx(0.3)
    assert s.best_params_["c"] > 0


def test_proxy_screening_fits_never_charge_the_estimators_accountant():
    from privtune.accounting import Accountant, Budget

    X_tr, y_tr, X_v, y_v = _data()
    X_p, y_p = _proxy()
    cap = Accountant(Budget(10.0, 0.0))
    s = PrivateSearchCV(DeclaredDP(epsilon=0.1, accountant=cap), {"c": Categorical([-1.0, 0.5, 1.0, 2.0])},
                        sensitive="training", epsilon=1.0, n_iter=2, n_candidates=4, random_state=0)
    s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p, y_proxy=y_p)
    assert cap.spent.epsilon == pytest.approx(0.2)  # the search's plan (two fits), not the proxy screening's fits


def test_proxy_rows_are_checked_before_anything_is_read_or_spent():
    X_tr, y_tr, X_v, y_v = _data()
    X_p, y_p = _proxy()
    s = _search()
    FITS.clear()
    with pytest.raises(InvalidParameterError, match="both X_proxy and y_proxy"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p)
    with pytest.raises(InvalidParameterError, match="X_proxy has 40 rows but y_proxy has 39"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p, y_proxy=y_p[:-1])
    with pytest.raises(InvalidParameterError, match="features"):
        s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p[:, :1], y_proxy=y_p)
    for method in ("prescreen", "auto"):  # auto resolves to prescreen with public training rows: said so
        with pytest.raises(InvalidParameterError, match="prescreen"):
            PrivateSearchCV(DeclaredDP(), SPACE, method=method, n_iter=2, n_candidates=4).fit(
                X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p, y_proxy=y_p)
    assert FITS == []


def test_without_proxy_rows_nothing_changes():
    X_tr, y_tr, X_v, y_v = _data()
    a = _search().fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert a.proxy_screening_ is None and len(a.candidates_) == 4


def test_the_report_says_the_candidates_were_ranked_on_proxy_rows():
    X_tr, y_tr, X_v, y_v = _data()
    X_p, y_p = _proxy()
    s = _search(method="random").fit(X_tr, y_tr, X_val=X_v, y_val=y_v, X_proxy=X_p, y_proxy=y_p)
    cands = s.report_.to_dict()["candidates"]
    assert "proxy rows" in cands["source"] and cands["proxy_screening"]["kept"] == 3
    assert "proxy" not in _search().fit(X_tr, y_tr, X_val=X_v, y_val=y_v).report_.to_dict()["candidates"]["source"]


# ----------------------------------------------------------------------------- declarations that depend on n
def test_a_one_split_search_charges_the_exact_event_of_a_fit_on_the_training_part():
    """DP-SGD (and the MLP) declare a size-free (epsilon, delta) bound before the rows are known; a one-split search
    knows every fit's row count (public), so it charges the exact RDP event: it composes, and random stopping takes
    it (it refused the size-free bound)."""
    pytest.importorskip("opacus")
    import torch

    from privtune.neural_network import DPSGDClassifier

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] > 0).astype(int)
    est = DPSGDClassifier(epsilon=1.0, delta=1e-6, classes=[0, 1], epochs=1, batch_size=32)
    space = {"lr": Categorical([0.1, 0.5])}
    for selection, event_kind in (("exponential", "SelfComposedEvent"), ("random-stopping", "RepeatAndSelectEvent")):
        s = PrivateSearchCV(est, space, sensitive="training", epsilon=3.0, delta=1e-5, n_iter=2, random_state=0,
                            validation_size=0.25, method_params={"selection": selection})
        s.fit(X, y)
        (entry,) = [e for e in s.ledger_ if e.role == "training"]
        assert type(entry.event).__name__ == event_kind
        assert entry.event.event == est._fit_privacy_event(n_samples=90)  # the 90 training rows of the split
    plan = PrivateSearchCV(est, space, sensitive="training", epsilon=3.0, delta=1e-5, n_iter=2).privacy_plan(30)
    assert plan["training_total"].epsilon == pytest.approx(2.0)  # without the rows: two size-free bounds, basic
    exact = PrivateSearchCV(est, space, sensitive="training", epsilon=3.0, delta=1e-5, n_iter=2, random_state=0,
                            validation_size=0.25).fit(X, y)
    assert exact.privacy_spent_["training"].epsilon < 2.0  # the exact events compose below the plan's bound


def test_privacy_plan_and_largest_fit_epsilon_take_the_training_size():
    """Without the rows the plan bounds each DP-SGD fit for any n (basic composition); with n_train it plans the
    exact event fit charges, so largest_fit_epsilon gives what fit accepts (found by the issue-40 benchmark: the
    size-free figure left more than half of the budget unspent)."""
    pytest.importorskip("opacus")
    from privtune.exceptions import BudgetExceededError
    from privtune.neural_network import DPSGDClassifier

    est = DPSGDClassifier(epsilon=1.0, delta=1e-7, classes=[0, 1], epochs=2, batch_size=32)
    space = {"lr": Real(0.05, 1.0, log=True)}
    search = PrivateSearchCV(est, space, sensitive="training", epsilon=3.0, delta=1e-5, n_iter=5, n_candidates=8)
    loose = search.largest_fit_epsilon(30, rtol=0.05)
    exact = search.largest_fit_epsilon(30, n_train=600, rtol=0.05)
    assert exact > 1.5 * loose
    search.set_params(estimator__epsilon=exact)
    assert search.privacy_plan(30, n_train=600)["training_total"].epsilon <= 3.0
    with pytest.raises(BudgetExceededError):
        search.privacy_plan(30)  # the size-free bounds of those fits do not fit
    stopping = PrivateSearchCV(est, space, sensitive="training", epsilon=3.0, delta=1e-5, n_iter=5, n_candidates=8,
                               method_params={"selection": "random-stopping"})
    with pytest.raises(InvalidParameterError, match="Random stopping"):
        stopping.privacy_plan(30)
    assert stopping.privacy_plan(30, n_train=600)["training_total"].epsilon > 0


# ----------------------------------------------------------------------------- the default with sensitive training rows
def test_auto_is_random_stopping_with_public_validation_rows():
    """method='auto' with sensitive='training': random stopping (mean n_iter), chosen from tuning_pays; the
    exponential selection where random stopping cannot run (delta = 0, n_iter = 1) or is not asked for."""
    X_tr, y_tr, X_v, y_v = _data()

    def auto(**kw):
        params = {"epsilon": 1.0, "delta": 1e-6, "n_iter": 3, "n_candidates": 4, "random_state": 0}
        params.update(kw)
        return PrivateSearchCV(DeclaredDP(epsilon=0.1), SPACE, **params).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)

    s = auto(sensitive="training")
    assert s.method_ == "random" and s.release_.diagnostics["mean_runs"] == 3
    assert [type(e.event).__name__ for e in s.ledger_] == ["RepeatAndSelectEvent"]
    for kw in ({"delta": 0.0}, {"n_iter": 1}, {"sensitive": "both"},
               {"sensitive": "training", "method_params": {"selection": "exponential"}}):
        kw = {"sensitive": "training", **kw}
        other = auto(**kw)
        assert "mean_runs" not in other.release_.diagnostics, kw
