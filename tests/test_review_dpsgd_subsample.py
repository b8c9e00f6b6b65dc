"""Adversarial review of issue 40's code: DP-SGD estimators, subsampled tuning, SubsampledEvent, random stopping.

Each test asks "what if one training row were adversarial?" of a path that touches data, or checks an accounting
figure against a computation written here, independently of privtune's. The review's findings (F1 to F5) were fixed
after it; their reproductions are the tests named in the comments "REVIEW Fn".
"""

from __future__ import annotations

import decimal
import json
import logging
import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import PrivateSearchCV
from privtune.accounting import (
    Accountant,
    Budget,
    GaussianEvent,
    LaplaceEvent,
    RepeatAndSelectEvent,
    SubsampledEvent,
    compose_events,
)
from privtune.accounting._composition import _rdp_curve
from privtune.accounting.rdp_math import DEFAULT_ORDERS
from privtune.base import PrivacyTags
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.model_selection import _evaluation, _subsampling

SENTINEL = 123456.789
SENTINEL_TEXTS = ("123456.789", "1.23456789e+05", "123456", "SENTINEL-BOB-4417")


def _torch():
    """torch and opacus, or a clean skip (the extra ``privtune[dpsgd]`` is optional)."""
    pytest.importorskip("opacus")
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


# ============================================================================ accounting: independent computations
def _wbk_thm9(eps: dict[int, float], eps_inf: float, gamma: float, alpha: int) -> float:
    """Wang, Balle & Kasiviswanathan (2019), Theorem 9, evaluated directly in 50-digit decimals (no logs).

    ``eps[j]`` is the inner mechanism's RDP at integer order ``j``; ``eps_inf`` its pure epsilon (inf if none).
    """
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        D = decimal.Decimal
        g = D(gamma)
        e = {j: D(v) for j, v in eps.items()}
        big = None if math.isinf(eps_inf) else D(eps_inf).exp() - 1  # None: unknown, min{2, .} = 2

        def cap(power: int) -> decimal.Decimal:
            return D(2) if big is None else min(D(2), big ** power)

        second = min(4 * (e[2].exp() - 1), e[2].exp() * cap(2))
        total = 1 + g ** 2 * math.comb(alpha, 2) * second
        for j in range(3, alpha + 1):
            total += g ** j * math.comb(alpha, j) * ((j - 1) * e[j]).exp() * cap(j)
        return float(total.ln() / (alpha - 1))


INTEGER = tuple(float(a) for a in range(2, 13))


@pytest.mark.parametrize(("inner_kind", "eps", "n", "m"), [
    ("laplace", 0.5, 1000, 50), ("laplace", 2.0, 400, 100), ("laplace", 0.1, 100, 1),
    ("gaussian", None, 1000, 100), ("gaussian", None, 300, 150),
])
@pytest.mark.parametrize("shape", [0.0, 1.0])
def test_subsampled_random_stopping_curve_is_thm9_of_the_inner_curve(inner_kind, eps, n, m, shape):
    """SubsampledEvent(RepeatAndSelectEvent(one fit)) at integer orders: never below WBK Thm. 9 applied (here,
    independently) to the inner curve, and equal to it wherever that is below the inner curve (so not looser
    either); never above the inner curve; eps_inf is P&S's pure (2 + eta) eps when the fit is pure."""
    fit = (LaplaceEvent(epsilon=eps) if inner_kind == "laplace" else GaussianEvent(noise_multiplier=3.0))
    runs = RepeatAndSelectEvent(event=fit, mean=5.0, shape=shape)
    sub = SubsampledEvent(event=runs, dataset_size=n, sample_size=m)
    inner = np.asarray(_rdp_curve(runs, INTEGER, "replace_one"))  # as the accountant reads it
    got = np.asarray(_rdp_curve(sub, INTEGER, "replace_one"))
    assert np.all(np.diff(inner) >= -1e-12)  # a non-decreasing inner curve: each order's own value is the input
    eps_inf = (2.0 + shape) * eps if inner_kind == "laplace" else math.inf
    assert runs.epsilon_delta() == ((eps_inf, 0.0) if inner_kind == "laplace" else None)
    curve = dict(zip(range(2, 13), inner.tolist(), strict=True))
    want = np.array([_wbk_thm9(curve, eps_inf, m / n, a) for a in range(2, 13)])
    want = np.minimum(want, inner)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    assert np.all(got <= inner + 1e-15)


@pytest.mark.parametrize("fit", [LaplaceEvent(epsilon=0.3), LaplaceEvent(epsilon=3.0),
                                 GaussianEvent(noise_multiplier=0.7), GaussianEvent(noise_multiplier=5.0, vector=True)],
                         ids=["lap0.3", "lap3", "gauss0.7", "gauss5v"])
@pytest.mark.parametrize("rate", [(1000, 1), (1000, 10), (100, 50), (10, 9)])
def test_amplification_never_raises_a_curve_or_an_epsilon(fit, rate):
    """At every accountant order (fractional ones included) the subsampled curve is at most the inner one, and so
    is the epsilon RDP converts it to, for a fit and for random stopping over it."""
    n, m = rate
    for inner in (fit, RepeatAndSelectEvent(event=fit, mean=8.0, shape=0.5)):
        sub = SubsampledEvent(event=inner, dataset_size=n, sample_size=m)
        orders = tuple(float(a) for a in DEFAULT_ORDERS)
        a = np.asarray(_rdp_curve(sub, orders, "replace_one"))
        b = np.asarray(_rdp_curve(inner, orders, "replace_one"))  # the inner curve as the accountant reads it
        assert np.all(a <= b + 1e-12)
        for delta in (1e-9, 1e-5):  # the same conversion of a lower curve (under "auto" an unsampled Gaussian
            # gets its exact PLD profile and may report less than its subsampled self's RDP bound: safe, see report)
            assert (compose_events([sub], delta=delta, method="rdp").epsilon
                    <= compose_events([inner], delta=delta, method="rdp").epsilon * (1 + 1e-9))


@pytest.mark.parametrize("eps", [0.05, 0.4, 2.0])
@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 3.0])
def test_repeat_and_select_of_a_pure_fit_is_2_plus_eta_epsilon(eps, eta):
    """Papernot & Steinke's pure-DP corollary: (2 + eta) eps, delta 0; nothing pure for Poisson K or an
    approximate-DP fit; and the accountant never reports more than that figure for it."""
    rs = RepeatAndSelectEvent(event=LaplaceEvent(epsilon=eps), mean=10.0, shape=eta)
    assert rs.epsilon_delta() == pytest.approx(((2.0 + eta) * eps, 0.0), rel=1e-15)
    assert compose_events([rs], delta=1e-6).epsilon <= (2.0 + eta) * eps * (1 + 1e-12)
    assert RepeatAndSelectEvent(event=LaplaceEvent(epsilon=eps), mean=10.0, shape=math.inf).epsilon_delta() is None
    assert RepeatAndSelectEvent(event=GaussianEvent(noise_multiplier=2.0), mean=10.0, shape=eta).epsilon_delta() is None


# REVIEW F5 (fixed in e5e5c44): a shape in (-1, 0) over an event dp-accounting knows used to raise its raw
# ValueError; privtune's own Papernot & Steinke curve now answers.
def test_random_stopping_with_a_negative_shape_composes():
    rs = RepeatAndSelectEvent(event=LaplaceEvent(epsilon=0.4), mean=10.0, shape=-0.5)
    assert compose_events([rs], delta=1e-6).epsilon <= 1.5 * 0.4 * (1 + 1e-12)


@pytest.mark.parametrize(("eps", "n", "m"), [(0.5, 1000, 100), (4.0, 200, 20), (1e-3, 50, 49)])
def test_subsampled_fixed_guarantee_is_the_without_replacement_amplification(eps, n, m):
    """SubsampledEvent's own (eps, delta) over a pure inner fit: log(1 + (m/n)(e^eps - 1)) (Balle, Barthe &
    Gaboardi 2018, Thm. 9, replace-one), computed here in 50-digit decimals; the accountant reports no more."""
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        want = float((1 + decimal.Decimal(m) / n * (decimal.Decimal(eps).exp() - 1)).ln())
    sub = SubsampledEvent(event=LaplaceEvent(epsilon=eps), dataset_size=n, sample_size=m)
    got = sub.epsilon_delta()
    assert got[1] == 0.0 and got[0] == pytest.approx(want, rel=1e-12)
    assert compose_events([sub], delta=1e-6).epsilon <= want * (1 + 1e-9)


# ============================================================================ subsampled tuning (no torch)
READS: list[str] = []  # what happened, in order: "charged" (the training plan) or "read:<rows>" (a fit read rows)


class Recorder(ClassifierMixin, BaseEstimator):
    """A declared pure-epsilon DP fit that records each read of its rows (its output does not depend on them)."""

    def __init__(self, epsilon=0.2, c=1.0, classes=(0, 1), accountant=None):
        self.epsilon = epsilon
        self.c = c
        self.classes = classes
        self.accountant = accountant

    def __privtune_tags__(self):
        return PrivacyTags(covers="rows", classes_param="classes")

    def _fit_privacy_event(self):
        return LaplaceEvent(epsilon=self.epsilon, label="one Recorder fit")

    def fit(self, X, y):
        if self.accountant is not None:
            self.accountant.spend(LaplaceEvent(epsilon=self.epsilon), phase="fit", role="training")
        READS.append(f"read:{len(X)}")
        self.classes_ = np.asarray(self.classes)
        self.w_ = float(self.c)
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] * self.w_ > 0).astype(int)


def _rows(n=200, m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + m, 2))
    y = (X[:, 0] > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _recorder_search(q=0.25, epsilon=5.0, random_state=0, estimator=None):
    return PrivateSearchCV(estimator or Recorder(), {"c": [-1.0, 0.5, 1.0, 2.0]}, method="random",
                           method_params={"selection": "random-stopping", "subsample": q}, sensitive="training",
                           epsilon=epsilon, n_iter=4, random_state=random_state)


def test_the_whole_training_plan_is_charged_before_the_first_fit_reads_a_row(monkeypatch):
    real = _evaluation.charge_training_plan

    def charging(*a, **k):
        out = real(*a, **k)
        READS.append("charged")
        return out

    monkeypatch.setattr(_evaluation, "charge_training_plan", charging)
    READS.clear()
    X, y, Xv, yv = _rows()
    search = _recorder_search().fit(X, y, X_val=Xv, y_val=yv)
    assert READS[0] == "charged" and READS.count("charged") == 1
    assert set(READS[1:-1]) == {"read:50"} and READS[-1] == "read:200"  # m = floor(q n) rows, then all n
    assert [e.phase for e in search.training_accountant_.entries] == ["selection (random stopping)", "refit"]


def test_over_budget_subsampled_search_reads_draws_and_spends_nothing(monkeypatch):
    drawn = []
    monkeypatch.setattr(_evaluation, "draw_subset", lambda *a: drawn.append(a))
    own = Accountant(Budget(100.0, 1e-6))
    READS.clear()
    X, y, Xv, yv = _rows()
    with pytest.raises(BudgetExceededError) as exc:
        _recorder_search(epsilon=0.05, estimator=Recorder(epsilon=0.5, accountant=own)).fit(X, y, X_val=Xv, y_val=yv)
    assert "Nothing was read or spent" in str(exc.value)
    assert READS == [] and drawn == [] and len(own.entries) == 0 and own.spent.epsilon == 0.0


# REVIEW F4 (fixed in e5e5c44): the subset's rows used to be copied while the evaluation was built, before the
# training plan was charged; they are now copied at the first evaluation.
def test_the_subsets_rows_are_copied_only_after_the_charge(monkeypatch):
    state = {"charged": False}
    copies = []
    real_charge, real_rows = _evaluation.charge_training_plan, _evaluation.rows

    def charging(*a, **k):
        out = real_charge(*a, **k)
        state["charged"] = True
        return out

    def rows(X, idx):
        copies.append(state["charged"])
        return real_rows(X, idx)

    monkeypatch.setattr(_evaluation, "charge_training_plan", charging)
    monkeypatch.setattr(_evaluation, "rows", rows)
    X, y, Xv, yv = _rows()
    _recorder_search().fit(X, y, X_val=Xv, y_val=yv)
    assert copies and all(copies)


def test_the_subset_comes_from_the_searchs_secure_source_and_its_size_is_public(monkeypatch):
    """Unseeded: a secure source (two searches draw different subsets; numpy's global RNG untouched); seeded:
    the same subset; m = floor(q n) is stated in the plan, the subset's contents nowhere."""
    seen = []

    def recording(source, n, m):
        out = _subsampling.draw_subset(source, n, m)
        seen.append((bool(source.seeded), n, m, out))
        return out

    monkeypatch.setattr(_evaluation, "draw_subset", recording)
    X, y, Xv, yv = _rows()
    state = np.random.get_state()[1].copy()
    for rs in (None, None, 7, 7):
        _recorder_search(q=0.3, random_state=rs).fit(X, y, X_val=Xv, y_val=yv)
    assert np.array_equal(state, np.random.get_state()[1])
    assert [s[:3] for s in seen] == [(False, 200, 60)] * 2 + [(True, 200, 60)] * 2
    assert not np.array_equal(seen[0][3], seen[1][3]) and np.array_equal(seen[2][3], seen[3][3])
    for *_, subset in seen:
        assert subset.shape == (60,) and np.unique(subset).size == 60 and 0 <= subset.min() and subset.max() < 200


def test_draw_subset_is_uniform_over_subsets():
    """Every 2-subset of 4 rows equally likely (the amplification theorem assumes a uniform m-subset)."""
    from privtune.utils._random import check_random_state

    src = check_random_state(11)
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(6000):
        key = tuple(_subsampling.draw_subset(src, 4, 2).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6
    expected = 1000.0
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 20.5  # chi-square, 5 degrees of freedom: p ~ 0.001


def test_no_copy_of_the_subsets_rows_or_indices_is_kept(monkeypatch):
    """The fitted search, its pickle, cv_results_ and report hold neither the subset's indices nor its rows."""
    drawn = []

    def recording(source, n, m):
        drawn.append(_subsampling.draw_subset(source, n, m))
        return drawn[-1]

    monkeypatch.setattr(_evaluation, "draw_subset", recording)
    X, y, Xv, yv = _rows()
    search = _recorder_search().fit(X, y, X_val=Xv, y_val=yv)
    (subset,) = drawn
    blob = pickle.dumps(search)
    assert np.ascontiguousarray(X[subset]).tobytes()[:64] not in blob
    assert np.ascontiguousarray(X[subset][:, 0]).tobytes()[:64] not in blob
    assert subset.astype(np.int64).tobytes()[:40] not in blob
    text = json.dumps(search.report_.to_dict(), default=str) + repr(search.cv_results_)
    assert repr(subset[:3].tolist())[1:-1] not in text


# ============================================================================ DP-SGD: charge first, failure paths
def small_factory(n_features, n_outputs):
    torch = _torch()
    return torch.nn.Sequential(torch.nn.Linear(n_features, 6), torch.nn.Tanh(), torch.nn.Linear(6, n_outputs))


def embedding_factory(n_features, n_outputs):
    """A realistic module: feature 0 is a category code looked up in an embedding table of 10 entries."""
    torch = _torch()

    class Coded(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.out = torch.nn.Linear(4, n_outputs)

        def forward(self, x):
            return self.out(self.emb(x[:, 0].abs().long()))

    return Coded()


def unused_layer_factory(n_features, n_outputs):
    """A module with a trainable layer its forward never uses (public architecture)."""
    torch = _torch()

    class Spare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.used = torch.nn.Linear(n_features, n_outputs)
            self.spare = torch.nn.Linear(n_features, n_outputs)

        def forward(self, x):
            return self.used(x)

    return Spare()


def batch_mixing_factory(n_features, n_outputs):
    """A module that centres each batch (a per-batch statistic: one row moves every other row's gradient)."""
    torch = _torch()

    class Centred(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(n_features, n_outputs)

        def forward(self, x):
            return self.lin(x - x.mean(0, keepdim=True))

    return Centred()


def _blobs(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, 3)), -3, 3)
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


FAST = dict(epochs=1, batch_size=40, classes=[0, 1])


def test_dpsgd_over_budget_on_a_spent_accountant_changes_nothing(monkeypatch):
    """A partly spent accountant that cannot pay: BudgetExceededError, its ledger and spent figure unchanged, the
    rows never converted (a spy on the first value read) and nothing trained."""
    _torch()
    from privtune.neural_network import DPSGDClassifier, _dpsgd_base

    acc = Accountant(Budget(1.5, 1e-6))
    acc.spend(LaplaceEvent(epsilon=1.0), phase="earlier", role="training")
    before = (len(acc.entries), acc.spent)
    touched = []
    monkeypatch.setattr(_dpsgd_base, "_numeric_rows", lambda *a, **k: touched.append("read"))
    monkeypatch.setattr(_dpsgd_base, "zero_non_finite", lambda *a, **k: touched.append("zero"))
    X, y = _blobs()
    with pytest.raises(BudgetExceededError):
        DPSGDClassifier(small_factory, epsilon=1.0, accountant=acc, random_state=0, **FAST).fit(X, y)
    assert touched == [] and (len(acc.entries), acc.spent) == before


def test_dpsgd_reads_no_value_of_a_frame_before_its_charge():
    """A pandas frame that records every conversion of its values: none when the accountant cannot pay, and the
    first only after the charge when it can."""
    _torch()
    pd = pytest.importorskip("pandas")
    from privtune.neural_network import DPSGDClassifier

    log: list[int] = []
    holder: dict[str, Accountant] = {}

    class Spy(pd.DataFrame):
        @property
        def _constructor(self):
            return pd.DataFrame  # only the frame passed to fit is watched

        def __array__(self, *a, **k):
            log.append(len(holder["acc"].entries))
            return super().__array__(*a, **k)

        def to_numpy(self, *a, **k):
            log.append(len(holder["acc"].entries))
            return super().to_numpy(*a, **k)

    X, y = _blobs()
    for budget, expect in ((0.5, []), (2.0, [1])):
        log.clear()
        holder["acc"] = acc = Accountant(Budget(budget, 1e-6))
        est = DPSGDClassifier(small_factory, epsilon=1.0, accountant=acc, random_state=0, **FAST)
        if budget < 1.0:
            with pytest.raises(BudgetExceededError):
                est.fit(Spy(X, columns=["a", "b", "c"]), y)
            assert len(acc.entries) == 0
        else:
            est.fit(Spy(X, columns=["a", "b", "c"]), y)
        assert sorted(set(log)) == expect


@pytest.mark.parametrize("odd", ["nan_row", "inf_row", "float32_overflow", "sentinel_value", "label_outside",
                                 "label_text"])
def test_dpsgd_public_outputs_do_not_depend_on_an_odd_row(odd, caplog):
    """A neighbouring dataset with one odd row: the same charge, n_iter_, sample rate, noise multiplier and event,
    no warning, no log line, and no trace of its values; only the weights differ."""
    _torch()
    from privtune.neural_network import DPSGDClassifier

    X0, y0 = _blobs()
    X, y = X0.copy(), y0.astype(object)
    if odd == "nan_row":
        X[5] = np.nan
    elif odd == "inf_row":
        X[5] = [np.inf, -np.inf, np.inf]
    elif odd == "float32_overflow":
        X[5] = 1e300  # finite in float64, inf in the module's float32
    elif odd == "sentinel_value":
        X[5, 1] = SENTINEL
    elif odd == "label_outside":
        y[5] = 7
    else:
        y[5] = "SENTINEL-BOB-4417"
    caplog.set_level(logging.DEBUG)
    public = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for Xa, ya in ((X0, y0), (X, y)):
            acc = Accountant(Budget(1.0, 1e-6))
            clf = DPSGDClassifier(small_factory, accountant=acc, random_state=0, **FAST).fit(Xa, ya)
            assert np.all(np.isfinite(clf.predict_proba(X0)))
            public.append(repr((clf.n_iter_, clf.sample_rate_, clf.noise_multiplier_, clf.privacy_spent_,
                                clf.privacy_event_, clf.classes_.tolist(), clf.seeded_,
                                [e.event.to_dict() for e in acc.entries], acc.spent)))
    assert public[0] == public[1]
    assert not caught and not caplog.records


@pytest.mark.parametrize("odd", ["nan", "huge", "text", "sentinel"])
def test_dpsgd_regressor_public_outputs_do_not_depend_on_an_odd_target(odd, caplog):
    _torch()
    from privtune.neural_network import DPSGDRegressor

    X, _ = _blobs()
    t0 = X[:, 0] - X[:, 1]
    t = t0.astype(object)
    t[3] = {"nan": np.nan, "huge": 1e300, "text": "SENTINEL-BOB-4417", "sentinel": SENTINEL}[odd]
    caplog.set_level(logging.DEBUG)
    public = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for ta in (t0, t):
            reg = DPSGDRegressor(small_factory, epochs=1, batch_size=40, random_state=0).fit(X, ta)
            assert np.all(np.isfinite(reg.predict(X)))
            public.append(repr((reg.n_iter_, reg.sample_rate_, reg.noise_multiplier_, reg.privacy_event_,
                                [e.event.to_dict() for e in reg.accountant_.entries])))
    assert public[0] == public[1] and not caught and not caplog.records


def test_a_row_that_makes_the_module_raise_does_not_make_fit_raise():
    """REVIEW F1 (fixed): a user module that raises on one finite input (here an embedding lookup whose index comes
    from a feature) made fit raise IndexError after the charge: whether fit raises depended on one row (rule 7;
    DPSGDClassifier tags raises_on_rows=False). _dpsgd_engine.clipped_sum now recomputes a failing chunk row by
    row, each row in its own zero-padded chunk, a raising row contributing a zero gradient."""
    _torch()
    from privtune.neural_network import DPSGDClassifier

    X, y = _blobs()
    X[:, 0] = np.abs(X[:, 0])  # category codes 0..3
    X[5, 0] = SENTINEL  # one row with a code outside the table
    acc = Accountant(Budget(1.0, 1e-6))
    try:
        DPSGDClassifier(embedding_factory, accountant=acc, random_state=0, **FAST).fit(X, y)
    except Exception as exc:  # noqa: BLE001 - the failure is the finding
        assert len(acc.entries) == 1  # charged, then failed on a row
        pytest.fail(f"fit raised {type(exc).__name__} after the charge because of one row")
    assert len(acc.entries) == 1


def test_a_row_that_makes_the_module_raise_does_not_change_a_searchs_scores():
    """REVIEW F1 in a search (fixed): the same row turned a candidate's score into error_score's bound; which
    candidates score the bound, hence the release, depended on one training row beyond what the DP fits cover."""
    _torch()
    from privtune.neural_network import DPSGDClassifier

    X, y = _blobs(200)
    X[:, 0] = np.abs(X[:, 0])
    Xv, yv = X[160:], y[160:]
    X, y = X[:160], y[:160]
    odd = X.copy()
    odd[5, 0] = SENTINEL
    scores = []
    for Xa in (X, odd):
        search = PrivateSearchCV(DPSGDClassifier(embedding_factory, epsilon=1.0, **FAST), {"lr": [0.1, 0.5]},
                                 method="random", sensitive="training", epsilon=20.0, n_iter=2, random_state=0,
                                 refit=False)
        search.fit(Xa, y, X_val=Xv, y_val=yv)
        scores.append(np.asarray(search.cv_results_["released_best_score"], dtype=float))
    # before the fix: 0.6 on the clean rows, exactly the scorer's lower bound 0.0 (every fit raised) with the
    # odd row
    assert scores[1][0] != 0.0


def test_a_module_with_an_unused_trainable_layer_is_refused_before_the_charge():
    """REVIEW F2 (fixed): a public architecture defect (a trainable layer the forward never uses) passed
    check_module and failed after the charge (TypeError: its grad_sample is None), spending the budget. Rule 7:
    check_module now runs a per-example backward on public rows through GradSampleModule and refuses it."""
    _torch()
    from privtune.neural_network import DPSGDClassifier

    X, y = _blobs()
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="Nothing was spent"):
        DPSGDClassifier(unused_layer_factory, accountant=acc, random_state=0, **FAST).fit(X, y)
    assert len(acc.entries) == 0


def test_a_batch_mixing_module_breaks_the_clip_bound():
    """Why F3 matters: with a module that centres its batch, one replaced row moves the clipped gradient sum of a
    step by far more than the 2C (replace-one) the noise is calibrated to; check_module refuses it (it was
    accepted before the fix)."""
    torch = _torch()
    from opacus import GradSampleModule

    from privtune.neural_network import _dpsgd_engine as engine

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = batch_mixing_factory(3, 2)
    with pytest.raises(InvalidParameterError, match="mixes the rows"):
        engine.check_module(net, 3, 2, "DPSGDClassifier")  # accepted before the fix of F3
    gsm = GradSampleModule(net, batch_first=True, loss_reduction="sum")
    params = [p for p in net.parameters() if p.requires_grad]

    def loss(o, t):
        return torch.nn.functional.cross_entropy(o, t, reduction="sum")

    X, y = _blobs(40)
    X = X.astype(np.float32)
    X2 = X.copy()
    X2[0] = 1e4
    keep, idx = np.ones(40, bool), np.arange(40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sums = [engine.clipped_sum(gsm, params, loss, torch.as_tensor(Xa), torch.as_tensor(y), keep, idx, 1.0, 8)
                for Xa in (X, X2)]
    assert np.linalg.norm(sums[0] - sums[1]) > 4.0  # > 2C: the guarantee's sensitivity bound does not hold


def test_a_batch_mixing_module_is_refused_before_the_charge():
    """REVIEW F3 (fixed): a module whose output for one row depends on the other rows of its batch (batch
    statistics: x - x.mean(0)) passed check_module, so fit charged and trained with a sensitivity far above C
    (test_a_batch_mixing_module_breaks_the_clip_bound). check_module now probes, on public random rows before the
    charge, that changing one row of a chunk leaves every other row's output and per-example gradient
    bit-identical, and refuses the module otherwise (documented as a probe)."""
    _torch()
    from privtune.neural_network import DPSGDClassifier

    X, y = _blobs()
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError):
        DPSGDClassifier(batch_mixing_factory, accountant=acc, random_state=0, **FAST).fit(X, y)
    assert len(acc.entries) == 0


# ============================================================================ DP-SGD under subsampled tuning
def _dpsgd_search(estimator, epsilon=3.0, random_state=0):
    return PrivateSearchCV(estimator, {"lr": [0.05, 0.3]}, method="random",
                           method_params={"selection": "random-stopping", "subsample": 0.25},
                           sensitive="training", epsilon=epsilon, n_iter=2, random_state=random_state)


def test_dpsgd_subsampled_tuning_charges_the_tuning_runs_at_m_and_the_final_fit_at_n():
    """The charged plan is SubsampledEvent(RepeatAndSelectEvent(fit at m rows)) then the fit at n rows, the
    released model is fitted on all n rows with exactly that event, and largest_fit_epsilon is what fit accepts
    (a little more is refused with nothing spent)."""
    _torch()
    from privtune.neural_network import DPSGDClassifier
    from privtune.neural_network._dpsgd_accounting import n_steps

    X, y = _blobs(200)
    X, y, Xv, yv = X[:160], y[:160], X[160:], y[160:]
    n, m = 160, 40
    base = DPSGDClassifier(small_factory, epochs=1, batch_size=20, classes=[0, 1])
    search = _dpsgd_search(base)
    eps = search.largest_fit_epsilon(len(yv), n_train=n)
    search.set_params(estimator__epsilon=eps).fit(X, y, X_val=Xv, y_val=yv)
    est = base.set_params(epsilon=eps)
    tuning, refit = (e.event for e in search.training_accountant_.entries)
    assert isinstance(tuning, SubsampledEvent)
    assert (tuning.dataset_size, tuning.sample_size, tuning.relation) == (n, m, "replace_one")
    assert isinstance(tuning.event, RepeatAndSelectEvent) and tuning.event.event == est._fit_privacy_event(m)
    assert refit == est._fit_privacy_event(n)
    best = search.best_estimator_
    assert best.privacy_event_ == refit and best.n_iter_ == n_steps(1, 20, n)
    assert search.privacy_spent_["training"].epsilon <= 3.0 * (1 + 1e-9)
    assert search.privacy_spent_["validation"].epsilon == 0.0
    over = _dpsgd_search(DPSGDClassifier(small_factory, epochs=1, batch_size=20, classes=[0, 1],
                                         epsilon=eps * 1.01))
    with pytest.raises(BudgetExceededError):
        over.fit(X, y, X_val=Xv, y_val=yv)


def test_dpsgd_subsampled_search_shows_no_value_of_a_sensitive_row(caplog):
    """A sentinel feature value and a sentinel label in one training row: nowhere in cv_results_, the report,
    the warnings or the log lines (verbose search), and the charged plan is the same as without them."""
    _torch()
    from privtune.neural_network import DPSGDClassifier

    X, y = _blobs(200)
    X, y, Xv, yv = X[:160], y[:160].astype(object), X[160:], y[160:]
    X[9, 2] = SENTINEL
    y[11] = "SENTINEL-BOB-4417"
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = PrivateSearchCV(DPSGDClassifier(small_factory, epochs=1, batch_size=20, classes=[0, 1],
                                                 epsilon=0.5), {"lr": [0.05, 0.3]}, method="random",
                                 method_params={"selection": "random-stopping", "subsample": 0.25},
                                 sensitive="training", epsilon=4.0, n_iter=2, random_state=0, verbose=2)
        search.fit(X, y, X_val=Xv, y_val=yv)
    blob = "\n".join([repr(search.cv_results_), search.report_.to_markdown(),
                      json.dumps(search.report_.to_dict(), default=str)]
                     + [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records])
    for needle in SENTINEL_TEXTS:
        assert needle not in blob
    clean = PrivateSearchCV(DPSGDClassifier(small_factory, epochs=1, batch_size=20, classes=[0, 1], epsilon=0.5),
                            {"lr": [0.05, 0.3]}, method="random",
                            method_params={"selection": "random-stopping", "subsample": 0.25},
                            sensitive="training", epsilon=4.0, n_iter=2, random_state=0)
    plan = clean.privacy_plan(len(yv), n_train=len(y))
    charged = {e.phase: e.event for e in search.training_accountant_.entries}
    assert set(charged) == set(plan["training_phases"])

