"""Tests of privtune.neural_network: the torch per-example objective and DPMLPClassifier (DP-BLSGD, seed 003)."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from privtune.accounting import Accountant, Budget, EpsilonDeltaEvent, RenyiEvent, compose_events
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.neural_network import DPMLPClassifier
from privtune.neural_network._objective import TorchObjective, init_parameters, layer_shapes, mlp_logits
from privtune.optim.line_search import blsgd_privacy_event

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------- helpers
def _moons(n: int = 1000, seed: int = 0):
    X, y = make_moons(n, noise=0.2, random_state=seed)
    return StandardScaler().fit_transform(X) / 2.0, y


def _split(X, y, frac: float = 0.7):
    k = int(frac * X.shape[0])
    return X[:k], y[:k], X[k:], y[k:]


def _objective(n_classes: int, activation: str, hidden=(5, 4), n: int = 12, d: int = 3, seed: int = 0,
               weights=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, n_classes, size=n)
    ob = TorchObjective(X, y, n_classes=n_classes, hidden_layer_sizes=hidden, activation=activation,
                        weights=weights)
    w = init_parameters(d, hidden, ob.n_outputs, activation, rng) + 0.1 * rng.normal(size=ob.n_params)
    return ob, w, X, y


def _reference_loss(w, x, label, shapes, activation, n_classes):
    """One example's cross-entropy from torch.nn.functional (an implementation independent of the objective's)."""
    F = torch.nn.functional
    h = torch.as_tensor(x, dtype=torch.float64).reshape(1, -1)
    offset = 0
    for k, (fan_out, fan_in) in enumerate(shapes):
        W = w[offset:offset + fan_out * fan_in].reshape(fan_out, fan_in)
        offset += fan_out * fan_in
        b = w[offset:offset + fan_out]
        offset += fan_out
        h = F.linear(h, W, b)
        if k < len(shapes) - 1:
            h = F.relu(h) if activation == "relu" else torch.tanh(h)
    if n_classes == 2:
        return F.binary_cross_entropy_with_logits(h[:, 0], torch.tensor([float(label)], dtype=torch.float64))
    return F.cross_entropy(h, torch.tensor([int(label)]))


# ----------------------------------------------------------------------------- the objective
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_per_example_gradients_match_autograd_on_single_examples(n_classes, activation):
    ob, w, X, y = _objective(n_classes, activation)
    G = ob.per_example_gradients(w, np.arange(ob.n_samples))
    L = ob.per_example_losses(w, np.arange(ob.n_samples))
    assert G.shape == (ob.n_samples, ob.n_params) and G.dtype == np.float64
    for i in range(ob.n_samples):
        wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
        loss = _reference_loss(wt, X[i], y[i], ob.shapes, activation, n_classes)
        (g,) = torch.autograd.grad(loss, wt)
        np.testing.assert_allclose(G[i], g.numpy(), rtol=1e-10, atol=1e-12)
        assert L[i] == pytest.approx(float(loss.detach()), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_per_example_gradients_match_central_finite_differences(n_classes):
    ob, w, _, _ = _objective(n_classes, "tanh", hidden=(6,), n=5)
    idx = np.arange(ob.n_samples)
    G = ob.per_example_gradients(w, idx)
    h = 1e-6
    fd = np.empty_like(G)
    for p in range(ob.n_params):
        e = np.zeros(ob.n_params)
        e[p] = h
        fd[:, p] = (ob.per_example_losses(w + e, idx) - ob.per_example_losses(w - e, idx)) / (2 * h)
    np.testing.assert_allclose(G, fd, rtol=1e-6, atol=1e-8)


def test_losses_are_the_cross_entropy_of_the_predicted_probabilities_and_non_negative():
    for n_classes in (2, 3):
        ob, w, X, y = _objective(n_classes, "relu", n=200, seed=3)
        L = ob.per_example_losses(w * 30.0, np.arange(200))  # large weights: saturated logits
        assert np.all(L >= 0.0) and np.all(np.isfinite(L))
        f = mlp_logits(w * 30.0, X, ob.shapes, "relu")
        if n_classes == 2:
            expected = np.logaddexp(0.0, f[:, 0]) - y * f[:, 0]
        else:
            expected = np.logaddexp.reduce(f, axis=1) - f[np.arange(200), y]
        np.testing.assert_allclose(L, expected, rtol=1e-9, atol=1e-9)


def test_rows_with_weight_zero_contribute_exactly_nothing():
    weights = np.array([1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1], dtype=float)
    ob, w, _, _ = _objective(3, "relu", weights=weights)
    idx = np.arange(12)
    G, L = ob.per_example_gradients(w, idx), ob.per_example_losses(w, idx)
    assert np.all(G[weights == 0] == 0.0) and np.all(L[weights == 0] == 0.0)
    assert np.all(np.abs(G[weights == 1]).sum(axis=1) > 0) and np.all(L[weights == 1] > 0)


def test_objective_is_deterministic_subsets_agree_and_threads_are_restored():
    ob, w, _, _ = _objective(3, "relu", n=40)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        G1 = ob.per_example_gradients(w, np.arange(40))
        assert torch.get_num_threads() == 2  # one thread inside, the caller's setting afterwards
        G2 = ob.per_example_gradients(w, np.arange(40))
        L1 = ob.per_example_losses(w, np.arange(40))
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(G1, G2)
    idx = np.array([7, 3, 3, 39])
    np.testing.assert_allclose(ob.per_example_gradients(w, idx), G1[idx], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ob.per_example_losses(w, idx), L1[idx], rtol=1e-13, atol=1e-15)
    assert ob.per_example_gradients(w, np.array([], dtype=int)).shape == (0, ob.n_params)
    assert not w.flags.writeable or np.array_equal(w, w.copy())  # w is not modified in place


def test_concurrent_calls_restore_the_callers_thread_setting():
    from concurrent.futures import ThreadPoolExecutor

    ob, w, _, _ = _objective(2, "relu", n=40)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with ThreadPoolExecutor(4) as pool:
            out = list(pool.map(lambda _: ob.per_example_gradients(w, np.arange(40)), range(16)))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert all(np.array_equal(g, out[0]) for g in out)


def test_gradients_are_built_in_blocks_with_the_same_result(monkeypatch):
    import privtune.neural_network._objective as objective_module

    ob, w, _, _ = _objective(3, "tanh", n=30)
    whole = ob.per_example_gradients(w, np.arange(30))
    monkeypatch.setattr(objective_module, "_GRAD_CHUNK_ENTRIES", 2 * ob.n_params)  # blocks of 2 rows
    np.testing.assert_allclose(ob.per_example_gradients(w, np.arange(30)), whole, rtol=1e-13, atol=1e-15)


def test_objective_refuses_bad_input():
    ob, w, _, _ = _objective(2, "relu")
    with pytest.raises(InvalidParameterError, match="shape"):
        ob.per_example_losses(w[:-1], np.arange(3))
    with pytest.raises(InvalidParameterError, match="out of range"):
        ob.per_example_gradients(w, np.array([0, 12]))
    with pytest.raises(InvalidParameterError, match="activation"):
        TorchObjective(np.zeros((3, 2)), np.zeros(3, dtype=int), n_classes=2, hidden_layer_sizes=(2,),
                       activation="sigmoid")


def test_layout_and_initialisation_are_public_and_seeded():
    shapes = layer_shapes(4, (8, 3), 1)
    assert shapes == [(8, 4), (3, 8), (1, 3)]
    a = init_parameters(4, (8, 3), 1, "relu", np.random.default_rng(5))
    b = init_parameters(4, (8, 3), 1, "relu", np.random.default_rng(5))
    assert np.array_equal(a, b) and a.shape == (4 * 8 + 8 + 8 * 3 + 3 + 3 + 1,)


# ----------------------------------------------------------------------------- privacy plumbing
class _UntouchableX:
    """Array stand-in whose shape is public but whose values must not be read (it counts the attempts)."""

    shape = (500, 2)

    def __init__(self):
        self.reads = 0

    def __array__(self, *args, **kwargs):
        self.reads += 1
        raise AssertionError("the data was read")


def test_over_budget_accountant_refuses_before_any_data_is_read():
    acc = Accountant(Budget(0.5, 1e-6))
    X = _UntouchableX()
    clf = DPMLPClassifier(epsilon=1.0, classes=[0, 1], n_iter=20, accountant=acc)
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        clf.fit(X, np.zeros(500))
    assert X.reads == 0 and len(acc.entries) == 0 and acc.spent.epsilon == 0.0


def test_untouchable_mock_really_records_a_read():  # the control for the test above
    acc = Accountant(Budget(1.0, 1e-6))
    X = _UntouchableX()
    with pytest.raises(InvalidParameterError, match="values are not shown"):  # the read failed after the charge
        DPMLPClassifier(epsilon=1.0, classes=[0, 1], n_iter=20, accountant=acc).fit(X, np.zeros(500))
    assert X.reads > 0 and len(acc.entries) == 1  # charged (write-ahead) before the first value was read


def test_privacy_spent_is_the_up_front_event_charged_once():
    X, y = _moons(400)
    acc = Accountant(Budget(2.0, 1e-5))
    clf = DPMLPClassifier(epsilon=0.7, delta=1e-6, n_iter=30, classes=[0, 1], accountant=acc, random_state=0)
    planned = clf._fit_privacy_event(400, 2)
    clf.fit(X, y)
    assert isinstance(planned, RenyiEvent) and planned.relation == "replace_one"
    assert clf.privacy_event_ == planned == blsgd_privacy_event(
        400, epsilon=0.7, delta=1e-6, mode="fixed", n_iter=30, batch_fraction=0.1, clip_grad=0.3, clip_obj=1.0,
        l2=1e-3, armijo=0.001, backtrack=0.8, max_backtracks=10, eta0=0.5, line_search_share=0.1)
    assert len(acc.entries) == 1 and acc.entries[0].event == planned and acc.entries[0].role == "training"
    spent = compose_events([planned], delta=1e-6)
    assert clf.privacy_spent_.delta == 1e-6
    assert clf.privacy_spent_.epsilon == pytest.approx(spent.epsilon, rel=1e-9)
    assert 0.7 * (1 - 1e-6) <= clf.privacy_spent_.epsilon <= 0.7 and acc.spent.epsilon <= 0.7 * (1 + 1e-9)
    assert clf.accountant_ is acc and clf.n_iter_ == 30 and clf.step_sizes_.shape == (30,)


@pytest.mark.parametrize("n", [7, 150, 5000])
def test_the_size_free_event_bounds_the_charge_on_any_number_of_rows(n):
    clf = DPMLPClassifier(epsilon=0.5, delta=1e-6, n_iter=50, batch_fraction=0.2)
    bound = clf._fit_privacy_event()
    assert bound == EpsilonDeltaEvent(epsilon=0.5, delta=1e-6, label=bound.label)
    exact = compose_events([clf._fit_privacy_event(n, 3)], delta=1e-6)
    assert exact.epsilon <= 0.5 and exact.epsilon > 0.49
    prepaid = Accountant(Budget(0.5, 1e-6))  # what PrivateSearchCV hands each fit
    prepaid.spend(clf._fit_privacy_event(n, 3))


def test_default_accountant_and_no_global_rng_use():
    X, y = _moons(300)
    clf = DPMLPClassifier(epsilon=2.0, n_iter=10, random_state=0).fit(X, y)  # classes read from y
    assert clf.accountant_.budget == Budget(2.0, 1e-6) and len(clf.accountant_.entries) == 1
    assert clf.optimize_result_.seeded and list(clf.classes_) == [0, 1]


@pytest.mark.parametrize(("change", "match"), [
    ({"epsilon": 0.0}, "epsilon"), ({"delta": 0.0}, "delta"), ({"n_iter": 0}, "n_iter"),
    ({"batch_fraction": 0.0}, "batch_fraction"), ({"batch_fraction": 1.5}, "batch_fraction"),
    ({"clip_grad": -1.0}, "clip_grad"), ({"clip_obj": 0.0}, "clip_obj"), ({"l2": -1e-3}, "l2"),
    ({"armijo": 1.0}, "armijo"), ({"backtrack": 0.0}, "backtrack"), ({"max_backtracks": 0}, "max_backtracks"),
    ({"eta0": 0.0}, "eta0"), ({"line_search_share": 1.0}, "line_search_share"), ({"data_norm": 0.0}, "data_norm"),
    ({"hidden_layer_sizes": (0,)}, "hidden_layer_sizes"), ({"hidden_layer_sizes": "32"}, "hidden_layer_sizes"),
    ({"activation": "sigmoid"}, "activation"), ({"sampling": "poisson"}, "sampling"),
    ({"classes": [1]}, "classes"), ({"classes": [1, 1]}, "classes"), ({"random_state": -1}, "random_state"),
    ({"accountant": Accountant(Budget(1.0, 1e-6), relation="add_remove")}, "replace_one"),
    ({"accountant": "budget"}, "accountant"),
    ({"epsilon": 1e-4, "n_iter": 5000}, r"cannot pay for 5000 fixed DP-BLSGD iterations"),  # the calibration
])
def test_bad_hyperparameters_are_refused_before_anything_is_spent(change, match):
    acc = Accountant(Budget(10.0, 1e-5))
    params = {"accountant": acc, "classes": [0, 1], "n_iter": 5, **change}
    clf = DPMLPClassifier(**params)
    X = _UntouchableX()
    with pytest.raises(InvalidParameterError, match=match):
        clf.fit(X, np.zeros(500))
    assert X.reads == 0 and len(acc.entries) == 0


def test_rows_outside_the_declared_domain_are_mapped_not_refused():
    X, y = _moons(300)
    X = X.copy()
    X[0, 0] = np.nan
    X[1, 1] = np.inf
    X[2] *= 1e6  # far above data_norm: scaled down
    y = y.astype(object)
    y[3] = "stranger"  # a label outside the declared classes: contributes nothing
    clf = DPMLPClassifier(epsilon=1.0, n_iter=10, classes=[0, 1], random_state=0).fit(X, y)
    assert list(clf.classes_) == [0, 1] and np.all(np.isfinite(clf.coefs_[0]))
    assert np.all(np.isin(clf.predict(X), [0, 1])) and np.all(np.isfinite(clf.predict_proba(X)))


def test_adversarial_rows_change_neither_the_ledger_nor_the_outcome_type():
    """Neighbouring training sets: one row NaN, of huge norm, or with a label outside the declared classes."""
    X0, y0 = _moons(300)
    ledgers = set()
    for mutate in (None, "nan", "huge", "label"):
        X, y = X0.copy(), y0.astype(object)
        if mutate == "nan":
            X[0, 0] = np.nan
        elif mutate == "huge":
            X[0] *= 1e300
        elif mutate == "label":
            y[0] = "SENTINEL-ALICE-7731"
        acc = Accountant(Budget(1.0, 1e-6))
        clf = DPMLPClassifier(epsilon=1.0, n_iter=10, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
        assert np.all(np.isfinite(clf.predict_proba(X0)))
        ledgers.add(repr(([e.event.to_dict() for e in acc.entries], acc.spent, clf.privacy_spent_)))
    assert len(ledgers) == 1


@pytest.mark.parametrize("where", ["X", "Xnum", "y", "shape"])
@pytest.mark.parametrize("classes", [[0, 1], None])
def test_no_message_warning_or_log_quotes_a_data_value(where, classes, caplog):
    import logging
    import warnings

    sentinel = "SENTINEL-ALICE-7731"
    X0, y0 = _moons(120)
    X, y = X0.astype(object), y0.astype(object)
    if where == "X":
        X[1, 1] = sentinel
    elif where == "Xnum":
        X = X0.copy()
        X[1, 1] = 1234567.891
    elif where == "y":
        y[1] = sentinel
    else:
        X = np.array([1234567.891, 1234568.891])
    caplog.set_level(logging.DEBUG, logger="privtune")
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for role in ("fit", "predict"):
            try:
                clf = DPMLPClassifier(epsilon=1.0, n_iter=5, sampling="full", classes=classes, random_state=0)
                if role == "fit":
                    clf.fit(X, y)
                else:
                    clf.fit(X0, y0).predict(X)
            except Exception as exc:  # noqa: BLE001 - the message is what is checked
                texts.append(f"{type(exc).__name__}: {exc}")
    blob = "\n".join(texts + [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records])
    for needle in (sentinel, "1234567.891", "1.234567891e+06", "1234567"):
        assert needle not in blob, blob[:2000]


# ----------------------------------------------------------------------------- estimator behaviour
def test_seeded_fits_are_reproducible_and_seeds_matter():
    X, y = _moons(300)
    kw = dict(epsilon=1.0, n_iter=20, classes=[0, 1])
    a = DPMLPClassifier(random_state=3, **kw).fit(X, y)
    b = DPMLPClassifier(random_state=3, **kw).fit(X, y)
    c = DPMLPClassifier(random_state=4, **kw).fit(X, y)
    for Wa, Wb in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_, strict=True):
        assert np.array_equal(Wa, Wb)
    assert np.array_equal(a.step_sizes_, b.step_sizes_)
    assert not np.array_equal(a.coefs_[0], c.coefs_[0])
    s1 = DPMLPClassifier(**kw).fit(X, y)  # secure noise: not seeded, not reproducible
    s2 = DPMLPClassifier(**kw).fit(X, y)
    assert not s1.optimize_result_.seeded and not np.array_equal(s1.coefs_[0], s2.coefs_[0])


def test_clone_and_pickle_round_trip():
    X, y = _moons(300)
    clf = DPMLPClassifier(hidden_layer_sizes=(8, 4), activation="tanh", epsilon=3.0, n_iter=15, classes=[0, 1],
                          random_state=0)
    twin = clone(clf)
    assert twin.get_params() == clf.get_params() and not hasattr(twin, "coefs_")
    clf.fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    assert restored.privacy_spent_ == clf.privacy_spent_ and restored.privacy_event_ == clf.privacy_event_
    assert [W.shape for W in clf.coefs_] == [(2, 8), (8, 4), (4, 1)] and clf.n_layers_ == 4
    assert clf.set_params(eta0=1.0).get_params()["eta0"] == 1.0


def test_multiclass_predictions_and_probabilities():
    rng = np.random.default_rng(0)
    centres = np.array([[0.6, 0.0], [-0.3, 0.5], [-0.3, -0.5]])
    y = rng.integers(0, 3, size=900)
    X = centres[y] + 0.15 * rng.normal(size=(900, 2))
    labels = np.array(["a", "b", "c"])
    clf = DPMLPClassifier(epsilon=5.0, n_iter=100, classes=labels, random_state=0).fit(X, labels[y])
    P = clf.predict_proba(X)
    assert P.shape == (900, 3) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), P, rtol=1e-10)
    assert clf.decision_function(X).shape == (900, 3) and clf.out_activation_ == "softmax"
    assert np.array_equal(clf.predict(X), labels[np.argmax(P, axis=1)])
    assert clf.score(X, labels[y]) > 0.8


def test_binary_decision_function_is_the_logit_of_the_second_class():
    X, y = _moons(300)
    clf = DPMLPClassifier(epsilon=2.0, n_iter=20, classes=[0, 1], random_state=1).fit(X, y)
    f = clf.decision_function(X)
    assert f.shape == (300,) and clf.out_activation_ == "logistic"
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], 1.0 / (1.0 + np.exp(-f)), rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), (f > 0).astype(int))


@pytest.mark.slow
def test_fit_learns_two_moons_at_epsilon_1_and_10():
    """Held-out accuracy well above the majority rate (0.5) at the default hyperparameters, median of 3 seeds."""
    X, y = _moons(1000)
    Xtr, ytr, Xte, yte = _split(X, y)
    majority = max(np.mean(yte), 1 - np.mean(yte))
    for eps, floor in ((1.0, 0.7), (10.0, 0.8)):
        accs = [DPMLPClassifier(epsilon=eps, classes=[0, 1], random_state=s).fit(Xtr, ytr).score(Xte, yte)
                for s in range(3)]
        assert np.median(accs) >= max(floor, majority + 0.15), (eps, accs)


def test_fit_learns_breast_cancer_at_epsilon_1():
    """398 training rows (standardised, divided by sqrt(30)): well above the majority rate (0.63), 3 seeds."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(X.shape[0])
    X = StandardScaler().fit_transform(X[order]) / math.sqrt(X.shape[1])
    Xtr, ytr, Xte, yte = _split(X, y[order])
    majority = max(np.mean(yte), 1 - np.mean(yte))
    accs = [DPMLPClassifier(epsilon=1.0, classes=[0, 1], random_state=s).fit(Xtr, ytr).score(Xte, yte)
            for s in range(3)]
    assert np.median(accs) >= majority + 0.15, (majority, accs)


def test_importing_the_package_does_not_import_torch():
    code = "import sys, privtune.neural_network; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- inside PrivateSearchCV
def test_usable_as_the_inner_trainer_of_a_training_sensitive_search():
    from privtune import PrivateSearchCV
    from privtune.space import Categorical

    X, y = _moons(600)
    Xtr, ytr, Xv, yv = _split(X, y, 0.6)
    est = DPMLPClassifier(epsilon=0.5, n_iter=40, classes=[0, 1])
    space = {"eta0": Categorical([0.5, 2.0]), "hidden_layer_sizes": Categorical([(8,), (16,)])}
    search = PrivateSearchCV(est, space, sensitive="both", epsilon=1.0, delta=1e-5, n_iter=2, n_candidates=4,
                             random_state=0).fit(Xtr, ytr, X_val=Xv, y_val=yv)
    train = [e for e in search.ledger_ if e.role == "training"]
    assert train[0].phase == "fits" and {e.phase for e in train} <= {"fits", "refit"}
    # one split: every fit reads len(ytr) rows, so the plan charges the exact event of such a fit (an RDP curve),
    # not the size-free bound EpsilonDeltaEvent(0.5, 1e-6) -- two of those composed only to 1.0
    assert train[0].event.count == 2 and train[0].event.event == est._fit_privacy_event(n_samples=len(ytr))
    assert search.privacy_spent_["training"].epsilon < 1.0 - 0.1
    assert isinstance(search.best_estimator_, DPMLPClassifier) and hasattr(search.best_estimator_, "coefs_")
    assert search.best_params_["eta0"] in (0.5, 2.0)
    with pytest.raises(InvalidParameterError, match="label set"):
        PrivateSearchCV(clone(est).set_params(classes=None), space, sensitive="both", n_iter=2,
                        n_candidates=4).fit(Xtr, ytr, X_val=Xv, y_val=yv)


# ----------------------------------------------------------------------------- public plan before the charge
_UNPLANNABLE = [
    # the line search's query bound overflows a float (an OverflowError, before; 1e300 did until the query limit
    # became 2**24 grid steps, and is now held)
    (dict(clip_obj=1e307), "within a float"),
    (dict(line_search_share=1e-30), "SparseVector cannot place"),
    (dict(sampling="full", line_search_share=1 - 1e-16), "Gaussian cannot place"),
]


@pytest.mark.parametrize(("params", "match"), _UNPLANNABLE)
def test_a_plan_no_grid_or_float_can_hold_is_refused_before_the_charge(params, match):
    """Public misconfigurations whose noise no exact grid or float can hold were refused inside the trainer,
    after the fit's charge (no leak: public parameters only; but the budget was lost, and an OverflowError for a
    huge clip_obj). The trainer's plan and mechanisms are now built from public sizes first: refused with
    nothing spent, and the same from ``_check_fit_plan`` (what a search calls before it prepays its fits)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    acc = Accountant(Budget(1e300, 0.5))
    model = DPMLPClassifier((4,), n_iter=5, classes=[0, 1], accountant=acc, random_state=0, **params)
    with pytest.raises(InvalidParameterError, match=match):
        model.fit(X, y)
    assert len(acc.entries) == 0 and not hasattr(model, "coefs_")
    with pytest.raises(InvalidParameterError, match=match):
        model._check_fit_plan(200, 3)


def test_the_public_plan_accepts_what_fit_runs():
    """``_check_fit_plan`` passes for configurations that fit (binary, declared multiclass, read labels)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3)) / 2
    y3 = np.digitize(X[:, 0], [-0.2, 0.2])
    for classes, y in (([0, 1], (y3 > 0).astype(int)), ([0, 1, 2], y3), (None, y3)):
        model = DPMLPClassifier((4,), n_iter=5, sampling="full", classes=classes, random_state=0)
        model._check_fit_plan(150, 3)
        assert model.fit(X, y).n_iter_ == 5


# ----------------------------------------------------------------------------- utility vs epsilon
@pytest.mark.statistical
@pytest.mark.slow
def test_accuracy_does_not_fall_as_epsilon_grows():
    """Median held-out accuracy over 5 seeds at epsilon in {0.3, 1, 10} on two moons (700 training rows).

    Measured at these settings (seeds 0-4): medians 0.73, 0.853, 0.863, seed-to-seed standard deviations
    0.13, 0.033, 0.004. Each comparison allows a drop of 0.03; with the standard error of a 5-seed median
    (about 1.25 sd / sqrt(5)) the probability that other seeds make a correct implementation fail is about
    2 % per comparison (alpha ~ 4 % in all; the seeds are fixed, so the outcome is deterministic). Power: an
    implementation whose accuracy falls by 0.1 from one budget to the next fails with probability above 95 %.
    """
    X, y = _moons(1000)
    Xtr, ytr, Xte, yte = _split(X, y)
    med = []
    for eps in (0.3, 1.0, 10.0):
        accs = [DPMLPClassifier(epsilon=eps, classes=[0, 1], random_state=s).fit(Xtr, ytr).score(Xte, yte)
                for s in range(5)]
        med.append(float(np.median(accs)))
    assert med[0] <= med[1] + 0.03 and med[1] <= med[2] + 0.03, med
    assert med[2] > med[0], med


# ----------------------------------------------------------------------------- scikit-learn's checks
# sampling="full": no amplification to calibrate, so each of the checks' many data sizes costs milliseconds
# to plan (the without-replacement calibration takes ~2 s per size); epsilon=1e4 and data_norm=10 because the
# accuracy checks train on ~100 unscaled rows, on which any DP model at epsilon ~ 1 is close to chance by design.
_CHECKED = DPMLPClassifier(hidden_layer_sizes=(16,), epsilon=1e4, n_iter=60, sampling="full", data_norm=10.0,
                           random_state=0)

_EXPECTED_FAILURES: dict[str, str] = {"check_dtype_object": (
    "a non-numeric entry of a sensitive training row is mapped to NaN (then 0) after the charge, "
    "never refused: a refusal would depend on one row (DESIGN rule 7)")}


@parametrize_with_checks([_CHECKED], expected_failed_checks=lambda est: _EXPECTED_FAILURES)
def test_sklearn_compatible(estimator, check):
    # sklearn's check_methods_sample_order_invariance draws from numpy's *global* RNG; restore it so that the
    # conftest guard (privtune never touches global RNGs) does not blame privtune for sklearn's draw.
    state = np.random.get_state()
    try:
        check(estimator)
    finally:
        np.random.set_state(state)


def test_default_construction_stores_only():
    params = DPMLPClassifier().get_params()
    assert params["epsilon"] == 1.0 and params["accountant"] is None and params["random_state"] is None
    assert params["armijo"] == 0.001 and params["line_search_share"] == 0.1 and params["classes"] is None
    bad = DPMLPClassifier(epsilon=-1.0, hidden_layer_sizes="nonsense")  # __init__ validates nothing
    assert bad.epsilon == -1.0
    assert math.isfinite(DPMLPClassifier()._fit_privacy_event().epsilon)
