"""PrivateSearchCV end to end: budgets, labels, refusals, reproducibility, callbacks, parallelism."""

import json
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.space import Categorical, Integer, Real, SearchSpace

SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_tr, X_val, y_tr, y_val = train_test_split(X, y, test_size=0.3, random_state=0)
    return X_tr, y_tr, X_val, y_val


METHOD_KW = {
    "random": {},
    "noisy-ucb": {},
    "gp-ucb": {},
    "gp-ucb-exact": {"method_params": {"A": 0.1, "tau": 1.0}},
}


@pytest.mark.parametrize("method", sorted(METHOD_KW))
@pytest.mark.parametrize("epsilon", [0.5, 5.0])
def test_svc_end_to_end_each_method(data, method, epsilon):
    X_tr, y_tr, X_val, y_val = data
    s = PrivateSearchCV(
        SVC(random_state=0),
        SPACE,
        method=method,
        epsilon=epsilon,
        delta=1e-6,
        n_iter=6,
        n_candidates=32,
        random_state=0,
        **METHOD_KW[method],
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert SearchSpace(SPACE).validate(s.best_params_) == s.best_params_  # raises if outside the space
    assert 0.1 <= s.best_params_["C"] <= 100 and 1e-4 <= s.best_params_["gamma"] <= 1
    assert s.best_params_ in s.candidates_.params
    spent = s.privacy_spent_["overall"]
    assert spent.epsilon <= epsilon * (1 + 1e-12) and spent.delta <= 1e-6
    assert s.privacy_spent_["validation"] == s.accountant_.spent
    from privtune.accounting import compose_events

    assert compose_events([e.event for e in s.ledger_], delta=1e-6) == s.accountant_.spent  # events add up
    assert s.guarantee_ == ("conditional" if method.startswith("gp-ucb") else "unconditional")
    assert s.summary_["guarantee"] == s.guarantee_ and s.summary_["seed_policy"].startswith("seeded")
    assert s.predict(X_val).shape == y_val.shape and 0 <= s.score(X_val, y_val) <= 1
    assert s.cv_results_["selected"].sum() == 1 and s.cv_results_["params"][s.best_index_] == s.best_params_
    json.dumps(s.summary_)
    assert s.report_.to_json() and s.report_.guarantee["label"] == s.guarantee_


def test_lipschitz_method_through_the_search(data):
    X_tr, y_tr, X_val, y_val = data

    def neg_sigmoid_loss(est, X, y):  # a 1-Lipschitz bounded validation loss in [0, 1] (user's declaration)
        z = est.decision_function(X) * np.where(y == 1, 1, -1)
        return -float(np.mean(1 / (1 + np.exp(z))))

    s = PrivateSearchCV(
        LogisticRegression(max_iter=200),
        {"C": Real(1.0, 10.0, log=True)},
        method="lipschitz",
        scoring=neg_sigmoid_loss,
        score_bounds=(-1.0, 0.0),
        epsilon=1.0,
        n_iter=4,
        n_candidates=8,
        random_state=0,
        method_params={"regularization": "C", "lambda_bounds": (1.0, 10.0), "lipschitz": 1.0, "loss_bound": 1.0},
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert s.guarantee_ == "unconditional" and s.privacy_spent_["overall"] == Budget(1.0, 0.0)


def test_fit_without_a_validation_set_asks_for_one_nothing_spent(data):
    X_tr, y_tr, _, _ = data
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="validation_size=.*X_val=|X_val=.*validation_size="):
        PrivateSearchCV(SVC(), SPACE, n_iter=3, n_candidates=8, accountant=acc).fit(X_tr, y_tr)
    assert len(acc.ledger) == 0


def test_whole_dataset_split_never_looks_at_values(data):
    X_tr, y_tr, _, _ = data
    kw = dict(n_iter=3, n_candidates=8, random_state=3, validation_size=0.3)
    a = PrivateSearchCV(SVC(random_state=0), SPACE, **kw).fit(X_tr, y_tr)
    b = PrivateSearchCV(SVC(random_state=0), SPACE, **kw).fit(X_tr, 1 - y_tr)
    assert a.summary_["configuration"]["n_validation"] == b.summary_["configuration"]["n_validation"]
    assert a.best_estimator_.shape_fit_ == b.best_estimator_.shape_fit_  # same rows in training either way


def _acc(tmp=None):
    return Accountant(Budget(1.0, 1e-6))


@pytest.mark.parametrize(
    "kwargs,fit_kwargs,match",
    [
        ({}, {"X_val_size": 1}, "1 sample"),
        ({}, {"X_val_size": 0}, "0 sample|1 sample|at least|minimum"),
        ({}, {"mismatch": True}, r"X_val has \d+ rows but y_val has \d+"),
        ({"scoring": lambda e, X, y: 0.5}, {}, "score_bounds"),
        ({"scoring": "r2"}, {}, "r2"),
        ({"sensitive": "both"}, {}, "declares no privacy guarantee"),
        ({"epsilon": -1.0}, {}, "'epsilon' parameter of PrivateSearchCV"),
        ({"method": "tpe"}, {}, "'method' parameter"),
        ({"search_space": {"not_a_param": Real(0, 1)}}, {}, "does not have"),
        ({"scoring": "balanced_accuracy"}, {}, "min_class_size"),
    ],
)
def test_bad_input_is_refused_before_anything_is_spent(data, kwargs, fit_kwargs, match):
    X_tr, y_tr, X_val, y_val = (a.copy() for a in data)
    if "X_val_size" in fit_kwargs:
        k = fit_kwargs["X_val_size"]
        X_val, y_val = X_val[:k], y_val[:k]
    if fit_kwargs.get("mismatch"):
        y_val = y_val[:-1]
    acc = _acc()
    params = {
        "estimator": SVC(random_state=0),
        "search_space": SPACE,
        "n_iter": 3,
        "n_candidates": 8,
        "accountant": acc,
        **kwargs,
    }
    with pytest.raises(InvalidParameterError, match=match):
        PrivateSearchCV(**params).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert len(acc.ledger) == 0


def test_budget_that_cannot_cover_the_plan_is_refused_before_any_fit(data):
    X_tr, y_tr, X_val, y_val = data

    class Exploding(SVC):
        def fit(self, X, y):
            raise AssertionError("a model was fit on sensitive data")

    acc = Accountant(Budget(0.5, 1e-6))
    with pytest.raises(BudgetExceededError):
        PrivateSearchCV(Exploding(), SPACE, epsilon=1.0, n_iter=3, n_candidates=8, accountant=acc).fit(
            X_tr, y_tr, X_val=X_val, y_val=y_val
        )
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("method", ["random", "noisy-ucb"])
def test_same_seed_same_results_with_one_or_two_jobs(data, method):
    X_tr, y_tr, X_val, y_val = data
    outs = []
    for n_jobs in (1, 2, 1):
        s = PrivateSearchCV(
            SVC(random_state=0),
            SPACE,
            method=method,
            epsilon=2.0,
            n_iter=5,
            n_candidates=16,
            n_jobs=n_jobs,
            random_state=7,
        ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
        outs.append(
            (
                s.best_params_,
                s.best_score_,
                json.dumps(s.summary_["ledger"]),
                json.dumps({k: np.asarray(v).tolist() for k, v in s.cv_results_.items() if k != "params"}),
            )
        )
    assert outs[0] == outs[1] == outs[2]


def test_callbacks_see_released_values_and_can_stop(data):
    X_tr, y_tr, X_val, y_val = data
    records = []

    def stop_after_two(rec):
        records.append(rec)
        return rec.iteration >= 2

    s = PrivateSearchCV(
        SVC(random_state=0),
        SPACE,
        method="noisy-ucb",
        n_iter=8,
        n_candidates=16,
        callbacks=[stop_after_two],
        random_state=0,
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert [r.iteration for r in records] == [1, 2] and s.n_iter_ == 2
    # the six observations not run are charged at the stop, as planned (the plan's total bounds a data-dependent stop)
    assert [e.phase for e in s.ledger_] == ["observations"] * 2 + ["observations_not_run"] * 6 + ["score_release"]
    with pytest.raises(TypeError):
        records[0].params["C"] = 1.0  # immutable record


def test_clone_get_set_params_pickle(data):
    X_tr, y_tr, X_val, y_val = data
    s = PrivateSearchCV(SVC(random_state=0), SPACE, n_iter=3, n_candidates=8, random_state=0)
    c = clone(s)
    assert c.get_params()["n_iter"] == 3 and c.set_params(n_iter=4).n_iter == 4
    s.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    back = pickle.loads(pickle.dumps(s))
    assert back.best_params_ == s.best_params_ and np.array_equal(back.predict(X_val), s.predict(X_val))


def test_spaces_with_integers_and_categoricals(data):
    from sklearn.ensemble import RandomForestClassifier

    X_tr, y_tr, X_val, y_val = data
    s = PrivateSearchCV(
        RandomForestClassifier(n_estimators=5, random_state=0),
        {"max_depth": Integer(1, 6), "criterion": Categorical(["gini", "entropy"])},
        n_iter=4,
        n_candidates=16,
        random_state=0,
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert isinstance(s.best_params_["max_depth"], int) and s.best_params_["criterion"] in ("gini", "entropy")


def test_verbose_progress_bar_shows_no_scores(data, capsys):
    X_tr, y_tr, X_val, y_val = data
    PrivateSearchCV(
        SVC(random_state=0), SPACE, method="noisy-ucb", n_iter=3, n_candidates=8, verbose=1, random_state=0
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    err = capsys.readouterr().err
    assert "3/3" in err and "eps spent" in err


def test_dask_backend_gives_the_same_results(data, tmp_path):
    """The same stored study on a 2-worker LocalCluster over loopback; the ledger stays in this process."""
    pytest.importorskip("dask.distributed")
    import joblib
    from dask.distributed import Client, LocalCluster

    X_tr, y_tr, X_val, y_val = data
    kw = dict(method="random", epsilon=2.0, n_iter=6, n_candidates=16, n_jobs=2, random_state=11)
    local = PrivateSearchCV(SVC(random_state=0), SPACE, **kw).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster),
        joblib.parallel_backend("dask"),
    ):
        remote = PrivateSearchCV(
            SVC(random_state=0), SPACE, storage=str(tmp_path / "dask.sqlite"), study_name="d", **kw
        ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert remote.best_params_ == local.best_params_ and remote.best_score_ == local.best_score_
    assert json.dumps(remote.summary_["ledger"]) == json.dumps(local.summary_["ledger"])
    from privtune.accounting import SQLiteLedger

    stored = [e.event for e in SQLiteLedger(tmp_path / "dask.sqlite", study="d").entries()]
    assert stored == [e.event for e in remote.accountant_.entries]  # charged once, by the controlling process


def test_training_sensitive_search_with_a_dp_estimator(data):
    from privtune.linear_model import DPLogisticRegression

    X_tr, y_tr, X_val, y_val = data
    X_tr = X_tr / np.abs(X_tr).sum(1, keepdims=True)  # rows inside the declared L1 bound (data_norm=1)
    X_val = X_val / np.abs(X_val).sum(1, keepdims=True)
    s = PrivateSearchCV(
        DPLogisticRegression(epsilon=0.2, classes=[0, 1], noise="laplace"),  # pure-DP fits: they add up
        {"C": Real(0.1, 100, log=True)},
        sensitive="both",
        epsilon=1.0,
        n_iter=3,
        n_candidates=16,
        random_state=0,
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    spent = s.privacy_spent_
    assert spent["training"].epsilon == pytest.approx(0.6)  # 3 fits at 0.2; best_estimator_ is the selected fit
    assert spent["validation"].epsilon == pytest.approx(1.0)
    assert spent["overall"] == Budget(max(spent["training"].epsilon, spent["validation"].epsilon), 0.0)
    assert any(e.phase.startswith("training") or e.role in (None, "training") for e in s.training_accountant_.entries)
    with pytest.raises(BudgetExceededError):  # 3 fits at 0.5 cannot fit a training budget of 1: refused up front
        PrivateSearchCV(
            DPLogisticRegression(epsilon=0.5, classes=[0, 1], noise="laplace"),
            {"C": Real(0.1, 100, log=True)},
            sensitive="both",
            epsilon=1.0,
            n_iter=3,
            n_candidates=16,
        ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)


def test_training_sensitive_search_with_the_default_gaussian_fits(data):
    """The estimators' default fits are Gaussian: the training role composes them exactly (far below the sum)."""
    from privtune.accounting import compose_events
    from privtune.linear_model import DPLogisticRegression

    X_tr, y_tr, X_val, y_val = data
    X_tr = X_tr / np.abs(X_tr).sum(1, keepdims=True)
    X_val = X_val / np.abs(X_val).sum(1, keepdims=True)
    s = PrivateSearchCV(
        DPLogisticRegression(epsilon=0.2, classes=[0, 1]),
        {"C": Real(0.1, 100, log=True)},
        sensitive="both",
        epsilon=1.0,
        delta=1e-6,
        n_iter=3,
        n_candidates=16,
        random_state=0,
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    training = s.privacy_spent_["training"]
    events = [e.event for e in s.training_accountant_.entries]
    assert [e.phase for e in s.training_accountant_.entries] == ["fits"]  # the plan, charged up front
    assert events[0].count == 3  # 3 fits; no refit (best_estimator_ is the selected candidate's fit)
    assert training == compose_events(events, delta=1e-6)
    assert training.delta == 1e-6 and 0.2 < training.epsilon < 0.6 * 0.7  # exact Gaussian composition: ~sqrt(3) x 0.2
    assert s.privacy_spent_["overall"].delta <= 2e-6


def test_cross_validation_over_one_sensitive_dataset(data):
    from privtune.accounting import compose_events
    from privtune.linear_model import DPLogisticRegression

    X_tr, y_tr, _, _ = data
    X = X_tr / np.abs(X_tr).sum(1, keepdims=True)
    kw = dict(sensitive="both", cv=3, epsilon=2.0, n_iter=3, n_candidates=8, random_state=0)
    s = PrivateSearchCV(
        DPLogisticRegression(epsilon=0.05, classes=[0, 1], noise="laplace", random_state=0),
        {"C": Real(0.1, 100, log=True)}, **kw
    ).fit(X, y_tr)
    n = X.shape[0]
    assert s.score_sensitivity_ == pytest.approx(1 / (n // 3) / 3)  # one row, one fold, mean over 3 folds
    # 3 evaluations x 3 folds + the refit at 0.05 each (PLD at the training delta is a little below the sum)
    assert 0.49 < s.privacy_spent_["training"].epsilon <= 0.05 * (3 * 3 + 1)
    assert s.privacy_spent_["validation"].epsilon == pytest.approx(1.0)  # half of the budget
    events = [e.event for e in s.accountant_.entries] + [e.event for e in s.training_accountant_.entries]
    assert s.privacy_spent_["overall"] == compose_events(events, delta=1e-6)  # roles overlap: composed
    assert s.privacy_spent_["overall"].epsilon <= 2.0
    threads = PrivateSearchCV(
        DPLogisticRegression(epsilon=0.05, classes=[0, 1], noise="laplace", random_state=0),
        {"C": Real(0.1, 100, log=True)},
        n_jobs=2,
        **kw,
    ).fit(X, y_tr)
    assert threads.best_params_ == s.best_params_ and threads.privacy_spent_ == s.privacy_spent_
    with pytest.raises(InvalidParameterError, match="sensitive='both'"):
        PrivateSearchCV(SVC(random_state=0), SPACE, cv=3).fit(X, y_tr)
    with pytest.raises(InvalidParameterError, match="either cv or X_val"):
        PrivateSearchCV(DPLogisticRegression(epsilon=0.05, classes=[0, 1]), {"C": Real(0.1, 100, log=True)},
                        **kw).fit(
            X, y_tr, X_val=X[:10], y_val=y_tr[:10]
        )


def test_training_sensitive_parallel_search_charges_the_real_accountant(data):
    """Workers must charge the shared training accountant, not copies of it (threads, not processes)."""
    from privtune.linear_model import DPLogisticRegression

    X_tr, y_tr, X_val, y_val = data
    X_tr = X_tr / np.abs(X_tr).sum(1, keepdims=True)
    X_val = X_val / np.abs(X_val).sum(1, keepdims=True)
    s = PrivateSearchCV(
        DPLogisticRegression(epsilon=0.1, classes=[0, 1], noise="laplace"),
        {"C": Real(0.1, 100, log=True)},
        sensitive="both",
        method="random",
        epsilon=1.0,
        n_iter=4,
        n_candidates=8,
        n_jobs=2,
        random_state=0,
    ).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert s.privacy_spent_["training"].epsilon == pytest.approx(0.1 * 4)  # 4 fits, all recorded (no refit)


def test_up_front_plan_composes_gaussian_fits_exactly(data):
    """The plan check uses an event composing like one fit's real charge: Gaussian fits are not over-counted."""
    from privtune.accounting import compose_events
    from privtune.linear_model import DPLogisticRegression

    X_tr, y_tr, X_val, y_val = data
    X_tr = X_tr / np.abs(X_tr).sum(1, keepdims=True)
    X_val = X_val / np.abs(X_val).sum(1, keepdims=True)
    est = DPLogisticRegression(epsilon=0.3, classes=[0, 1])
    one = est._fit_privacy_event()
    fits = next(k for k in range(1, 200) if compose_events([one] * k, delta=1e-6).epsilon > 1.0)
    assert fits > 1.0 / 0.3  # more fits than basic composition would allow
    kw = dict(sensitive="both", epsilon=1.0, delta=1e-6, n_candidates=64, random_state=0)
    s = PrivateSearchCV(est, {"C": Real(0.1, 100, log=True)}, n_iter=fits - 1, **kw).fit(
        X_tr, y_tr, X_val=X_val, y_val=y_val)  # fits - 1 evaluations (the selected fit is reused): affordable
    assert s.privacy_spent_["training"] == compose_events([e.event for e in s.training_accountant_.entries],
                                                          delta=1e-6)
    assert s.privacy_spent_["training"].epsilon <= 1.0
    with pytest.raises(BudgetExceededError):  # one more evaluation does not fit: refused before any fit
        PrivateSearchCV(est, {"C": Real(0.1, 100, log=True)}, n_iter=fits, **kw).fit(
            X_tr, y_tr, X_val=X_val, y_val=y_val)
    # the planned event composes exactly like a real fit's charge
    fitted = DPLogisticRegression(epsilon=0.3, classes=[0, 1], random_state=0).fit(X_tr, y_tr)
    real = compose_events([fitted.privacy_event_] * 3, delta=1e-6)
    assert real.epsilon == pytest.approx(compose_events([one] * 3, delta=1e-6).epsilon, rel=1e-6)
    lap = DPLogisticRegression(epsilon=0.3, noise="laplace")._fit_privacy_event()
    assert lap.epsilon_delta() == (0.3, 0.0)
    with pytest.raises(InvalidParameterError):
        DPLogisticRegression(epsilon=-1)._fit_privacy_event()


def test_balanced_accuracy_class_count_never_reads_validation_labels():
    """K in 2 / (K M) is public: with validation_size the labels are read before the split, so one validation row
    with a new label must not change the declared sensitivity (it lowered it from 0.1 to 0.067: too little noise)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)

    def search(X_val=None, y_val=None, Xt=X, yt=y):
        s = PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, method="random", epsilon=1.0,
                            n_iter=3, n_candidates=8, scoring="balanced_accuracy", min_class_size=10,
                            validation_size=None if X_val is not None else 0.3, random_state=0)
        return s.fit(Xt, yt, X_val=X_val, y_val=y_val)

    base = search()
    assert base.score_sensitivity_ == pytest.approx(2 / (2 * 10))
    for i in range(0, 300, 3):  # rows on both sides of the split: the figure never moves
        y2 = y.copy()
        y2[i] = 2
        assert search(yt=y2).score_sensitivity_ == base.score_sensitivity_
    # public training labels passed apart from the validation rows do set K (three classes here)
    y3 = np.where(X[:, 1] > 0.5, 2, y)
    apart = search(X_val=X[200:], y_val=y3[200:], Xt=X[:200], yt=y3[:200])
    assert apart.score_sensitivity_ == pytest.approx(2 / (3 * 10))


def test_balanced_accuracy_averages_over_the_k_its_sensitivity_assumes():
    """K counts the public training labels, but a model may know fewer classes (scikit-learn's semi-supervised
    models drop the unlabelled marker -1): averaging recalls over its own classes_ let one replaced validation row
    move the score by 2 / (2 M) against a declared 2 / (3 M). Found by an audit; every neighbour is checked."""
    from sklearn.semi_supervised import LabelSpreading

    rng = np.random.default_rng(1)
    M = 10
    X = rng.normal(size=(120, 2))
    y = (X[:, 0] > 0).astype(int)
    y_tr = np.where(rng.random(60) < 0.3, -1, y[:60])  # some training rows unlabelled
    X_v, y_v = X[60:90], y[60:90]
    s = PrivateSearchCV(LabelSpreading(), {"gamma": Real(1.0, 20.0, log=True)}, method="random", epsilon=1.0,
                        n_iter=2, n_candidates=4, scoring="balanced_accuracy", min_class_size=M, random_state=0)
    s.fit(X[:60], y_tr, X_val=X_v, y_val=y_v)
    assert s.score_sensitivity_ == pytest.approx(2 / (3 * M))
    model = LabelSpreading(gamma=s.best_params_["gamma"]).fit(X[:60], y_tr)
    assert list(model.classes_) == [0, 1]
    base = s.scorer_(model, X_v, y_v)
    worst = 0.0
    for i in range(len(y_v)):  # replace one validation row: its label, or the row itself by another of the pool
        for x_new, y_new in [(X_v[i], 1 - y_v[i]), (X[90 + i], y[90 + i]), (X_v[i], -1)]:
            Xn, yn = X_v.copy(), y_v.copy()
            Xn[i], yn[i] = x_new, y_new
            worst = max(worst, abs(s.scorer_(model, Xn, yn) - base))
    assert 0 < worst <= s.score_sensitivity_ + 1e-12


@pytest.mark.filterwarnings("ignore::privtune.exceptions.LowUtilityWarning")
def test_score_bounds_far_from_zero_never_make_the_release_refuse():
    """The exact Laplace sampler refuses |value| / grid >= 2**51. A score released as is, with declared bounds far
    from 0, crossed that line or not depending on the private score (a refusal after the charge that one
    validation row could flip). Scores are released from the bounds' public midpoint: both sides run."""
    from privtune.bo import make_method
    from privtune.mechanisms import Laplace
    from privtune.space import candidate_set

    m = 20
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(200, 2)), rng.normal(size=(m, 2))
    y, yv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    space = {"C": Real(0.01, 10, log=True)}
    method = make_method("random", epsilon=1.0, delta=1e-6, n_iter=5, score_bounds=(0, 1), score_sensitivity=1 / m)
    eps_score = [e.epsilon for e, _ in method.plan(candidate_set(SearchSpace(space), 16,
                                                                 random_state=np.random.default_rng(0)))][1]
    threshold = 2**51 * Laplace(epsilon=eps_score, sensitivity=1 / m, random_state=0).grid_spacing()
    low = threshold - 0.5  # an accuracy above 0.5 used to cross the line, one below did not

    def run(y_val):
        s = PrivateSearchCV(LogisticRegression(), space, method="random", epsilon=1.0, n_iter=5, n_candidates=16,
                            scoring=lambda est, X, y: low + float(np.mean(est.predict(X) == y)),
                            score_bounds=(low, low + 1.0), random_state=0)
        return s.fit(X, y, X_val=Xv, y_val=y_val)

    good, bad = run(yv), run(1 - yv)
    assert len(good.ledger_) == len(bad.ledger_) == 2
    assert np.isfinite(good.best_score_) and np.isfinite(bad.best_score_)


@pytest.mark.filterwarnings("ignore::privtune.exceptions.LowUtilityWarning")
@pytest.mark.parametrize("method", ["random", "noisy-ucb", "gp-ucb"])
def test_a_minute_sensitivity_never_makes_the_release_refuse(method):
    """With a declared sensitivity minute against the score range, even a centred score can cross the exact
    sampler's 2**51 grid limit; whether it did depended on the private score. The value is clipped to the grid's
    range (1-Lipschitz: same sensitivity), so no release refuses after its charge; and since such a release would be
    pinned near the midpoint whatever the score (issue 37), the configuration itself is refused before any charge,
    the same way for half-correct and fully correct labels (gp-ucb's release noise does not use the declared
    sensitivity: it runs)."""
    from privtune.accounting import Accountant, Budget

    m = 20
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(200, 2)), rng.normal(size=(m, 2))
    y, yv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    pred = LogisticRegression().fit(X, y).predict(Xv)
    half = np.where(np.arange(m) % 2 == 0, pred, 1 - pred)
    kw = dict(method=method, epsilon=1.0, n_iter=4, n_candidates=8, score_bounds=(0.0, 1.0),
              score_sensitivity=2e-13, random_state=0,
              scoring=lambda est, X, y: float(np.mean(est.predict(X) == y)))
    if method == "gp-ucb":
        runs = [PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10, log=True)}, **kw).fit(
            X, y, X_val=Xv, y_val=labels) for labels in (half, yv)]
        assert all(np.isfinite(r.best_score_) for r in runs) and len(runs[0].ledger_) == len(runs[1].ledger_)
        return
    messages = []
    for labels in (half, yv):
        acc = Accountant(Budget(1.0, 1e-6))
        with pytest.raises(InvalidParameterError, match="cannot hold the values it randomises") as info:
            PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10, log=True)}, accountant=acc,
                            **kw).fit(X, y, X_val=Xv, y_val=labels)
        assert acc.entries == ()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_prescreen_with_fewer_training_rows_than_folds_says_so_and_spends_nothing(data):
    from privtune.accounting import Accountant, Budget
    X_tr, y_tr, X_val, y_val = data
    acc = Accountant(Budget(1.0, 1e-6))
    # with screen_cv=None the screening uses at most as many folds as there are rows (2 at least)
    with pytest.raises(InvalidParameterError, match="needs at least 2 of them; got 1"):
        PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, method="prescreen", n_iter=2,
                        n_candidates=4, accountant=acc).fit(X_tr[:1], y_tr[:1], X_val=X_val, y_val=y_val)
    # 2 rows make 2 folds of one row each, where SVC cannot fit: scikit-learn's message, nothing spent
    with pytest.raises(InvalidParameterError, match="All the 4 candidates failed"):
        PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, method="prescreen", n_iter=2,
                        n_candidates=4, accountant=acc).fit(X_tr[:2], y_tr[:2], X_val=X_val, y_val=y_val)
    assert len(acc.entries) == 0


def test_the_worker_kind_is_judged_from_the_containers_as_passed(monkeypatch, data):
    # Threads or processes used to be decided from the converted arrays: one string label in a Python list, or one
    # 'n/a' cell landing in the validation part of a validation_size split, made that part an object array and sent
    # the evaluations to threads (a process table or a dask task stream shows which).
    import privtune.model_selection._evaluation as evaluation_module  # the stage that builds the mapper

    seen = []
    real = evaluation_module.make_mapper

    def spy(n_jobs, *, threads, quiet):
        seen.append(threads)
        return real(n_jobs, threads=threads, quiet=quiet)

    monkeypatch.setattr(evaluation_module, "make_mapper", spy)
    X_tr, y_tr, X_v, y_v = data
    kw = dict(epsilon=1.0, n_iter=2, n_candidates=8, random_state=0, n_jobs=2, refit=False)
    labels = [int(v) for v in y_v]
    odd = list(labels)
    odd[0] = "1 "
    for y_val in (labels, odd):
        PrivateSearchCV(LogisticRegression(max_iter=200), {"C": Real(1e-3, 100.0, log=True)}, **kw).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_val)
    table = np.concatenate([X_tr, X_v]).astype(object)
    y_all = np.concatenate([y_tr, y_v])
    odd_table = table.copy()
    # string cells in both parts (numbers written as strings: a cell that is no number in the public training rows
    # is now refused before anything is spent, issue 38)
    odd_table[:, 0] = np.where(np.arange(len(table)) % 2 == 0, "0.5", odd_table[:, 0])
    for X_all in (table, odd_table):
        PrivateSearchCV(LogisticRegression(max_iter=200), {"C": Real(1e-3, 100.0, log=True)}, validation_size=0.3,
                        **kw).fit(X_all, y_all)
    assert seen == [True, True, True, True]  # lists and object tables as passed: threads, whatever the cells


def test_n_candidates_zero_searches_exactly_the_grid(data):
    """With n_candidates=0 the candidates are the grid alone (n_candidates >= 1 adds seed-dependent Sobol points)."""
    X_tr, y_tr, X_val, y_val = data
    grid = [{"C": c, "gamma": g} for c in (0.3, 3.0, 30.0) for g in (1e-3, 1e-2)]
    chosen = set()
    for method, extra in [("random", {}), ("gp-ucb", {}), ("gp-ucb-exact", METHOD_KW["gp-ucb-exact"])]:
        for seed in range(3):
            s = PrivateSearchCV(SVC(), SPACE, method=method, epsilon=1.0, n_iter=3, n_candidates=0,
                                candidate_grid=grid, refit=False, random_state=seed, **extra)
            s.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
            assert len(s.candidates_) == len(grid)
            assert [dict(p) for p in s.candidates_.params] == grid
            chosen.add(tuple(sorted(s.best_params_.items())))
    assert chosen <= {tuple(sorted(g.items())) for g in grid}
    with_sobol = PrivateSearchCV(SVC(), SPACE, method="random", epsilon=1.0, n_iter=3, n_candidates=1,
                                 candidate_grid=grid, refit=False, random_state=0).fit(X_tr, y_tr, X_val=X_val,
                                                                                        y_val=y_val)
    assert len(with_sobol.candidates_) == len(grid) + 1


def test_n_candidates_zero_without_a_grid_is_refused_before_anything_is_spent(data):
    X_tr, y_tr, X_val, y_val = data
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="n_candidates.*only with a candidate_grid"):
        PrivateSearchCV(SVC(), SPACE, n_iter=3, n_candidates=0, accountant=acc).fit(
            X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert len(acc.ledger) == 0


def test_more_iterations_than_grid_points_is_refused_naming_the_grid(data):
    X_tr, y_tr, X_val, y_val = data
    grid = [{"C": c, "gamma": 1e-3} for c in (0.3, 3.0, 30.0)]
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match=r"at most 3 \(n_candidates=0 and a candidate_grid of 3"):
        PrivateSearchCV(SVC(), SPACE, method="random", n_iter=4, n_candidates=0, candidate_grid=grid,
                        accountant=acc).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    assert len(acc.ledger) == 0
