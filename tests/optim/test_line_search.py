"""Tests of privtune.optim.line_search (seed 003, Chen & Lee DP-BLSGD): accounting, filters, hygiene, learning."""

from __future__ import annotations

import math

import _svt_table
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp
from scipy import stats
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from privtune.accounting import (
    Accountant,
    Budget,
    GaussianEvent,
    PoissonSampledEvent,
    RenyiEvent,
    SampledWithoutReplacementEvent,
    SparseVectorEvent,
)
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.mechanisms import SparseVector
from privtune.mechanisms._samplers import discrete_laplace, round_to_grid
from privtune.mechanisms.sparse_vector import SparseVectorSession
from privtune.optim import dp_accelerated
from privtune.optim.line_search import (
    LineSearchResult,
    MarginObjective,
    blsgd_privacy_event,
    dp_blsgd,
    noisy_backtracking_line_search,
)
from privtune.optim.line_search import _accounting as A
from privtune.optim.line_search import _blsgd as L
from privtune.optim.line_search import _loop as loop_module
from privtune.optim.line_search import _step as step_module
from privtune.testing import audit_mechanism
from privtune.utils._random import check_random_state


def _data(seed: int, n: int = 300, d: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) >= 0, 1.0, -1.0)
    return X, y


def _objective(seed: int = 0, n: int = 300, d: int = 4) -> MarginObjective:
    X, y = _data(seed, n, d)
    return MarginObjective(X, y, data_norm=1.0)


# ----------------------------------------------------------------------------- MarginObjective
@pytest.mark.parametrize("loss", ["logistic", "smoothed_hinge"])
def test_margin_objective_gradients_match_finite_differences(loss):
    X, y = _data(1, n=20, d=3)
    obj = MarginObjective(X, y, loss, data_norm=1.0)
    obj.validate()
    w = np.array([0.4, -0.7, 1.1])
    idx = np.arange(20)
    G = obj.per_example_gradients(w, idx)
    assert G.shape == (20, 3)
    h = 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        fd = (obj.per_example_losses(w + e, idx) - obj.per_example_losses(w - e, idx)) / (2 * h)
        np.testing.assert_allclose(G[:, j], fd, atol=1e-6)
    assert np.all(obj.per_example_losses(w, idx) >= 0)
    assert np.all(np.linalg.norm(obj._U, axis=1) <= 1.0 + 1e-12)  # rows clipped to the declared norm
    assert obj.smoothness == pytest.approx(0.25 if loss == "logistic" else 1 / 0.5)
    assert obj.gradient_bound == 1.0
    assert np.all(np.linalg.norm(G, axis=1) <= 1.0 + 1e-12)


class _UntouchableX:
    """Array stand-in whose shape is public but whose values must not be read."""

    shape = (200, 3)

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data was read")


def test_margin_objective_reads_only_the_shape_until_validated():
    obj = MarginObjective(_UntouchableX(), np.ones(200), data_norm=1.0)
    assert (obj.n_samples, obj.n_params) == (200, 3)
    with pytest.raises(AssertionError, match="the data was read"):
        obj.validate()


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.ones((2, 2)), np.array([1.0]), "one label per row"),
        (np.ones((2, 2)), np.ones((2, 1)), "one label per row"),
    ],
)
def test_margin_objective_refuses_bad_shapes(X, y, match):
    with pytest.raises(InvalidParameterError, match=match):
        MarginObjective(X, y).validate()


def test_margin_objective_maps_bad_values_into_the_domain():
    X = np.array([[np.nan, 1.0], [0.5, np.inf], [0.3, 0.4], [0.6, 0.8]])
    y = np.array([1.0, -1.0, 0.0, np.nan])
    obj = MarginObjective(X, y, data_norm=1.0)
    G = obj.per_example_gradients(np.array([0.3, -0.2]), np.arange(4))
    np.testing.assert_array_equal(G[2:], 0.0)  # rows with a label outside {-1, +1} contribute nothing
    assert G[0, 0] == 0.0 and G[1, 1] == 0.0  # non-finite entries count as 0 ...
    assert G[0, 1] != 0.0 and G[1, 0] != 0.0  # ... and the rest of their rows is used
    assert np.isnan(X[0, 0]) and y[2] == 0.0  # the caller's arrays are untouched


# ----------------------------------------------------------------------------- NOISYBTLS
def test_line_search_with_a_huge_budget_returns_the_first_armijo_step():
    """With eps_BT = 1e4 the Laplace noise (scale 4 Delta / eps) is ~1e-6 of the slacks: the exact rule is followed."""
    obj = _objective(2, n=400, d=3)
    obj.validate()
    w = np.array([0.3, -0.2, 0.1])
    g = _exact_gradient(obj, w, l2=0.0)
    etas = [8.0 * 0.8**i for i in range(10)]
    idx = np.arange(obj.n_samples)
    f = lambda v: float(np.mean(np.minimum(obj.per_example_losses(v, idx), 1.0)))  # noqa: E731
    slack = [f(w) - 0.5 * e * float(g @ g) - f(w - e * g) for e in etas]
    expected = next(e for e, s in zip(etas, slack, strict=True) if s >= 0)
    assert min(abs(s) for s in slack) > 1e-4  # no candidate sits at the threshold
    out = noisy_backtracking_line_search(obj, w, g, budget=1e4, eta0=8.0, random_state=0)
    assert out.accepted and out.eta == pytest.approx(expected)
    assert out.event == SparseVectorEvent(epsilon=1e4)
    # a direction along which nothing decreases fails (releases 0), or the NN-mode fallback
    assert noisy_backtracking_line_search(obj, w, -g, budget=1e4, eta0=8.0, random_state=0).eta == 0.0
    fb = noisy_backtracking_line_search(obj, w, -g, budget=1e4, eta0=8.0, on_failure="smallest", random_state=0)
    assert not fb.accepted and fb.eta == pytest.approx(8.0 * 0.8**10)


def test_line_search_refuses_repeated_rows_before_spending():
    """A row listed k times enters the Armijo query k times (k x the declared sensitivity; audit finding: with
    rows=[0]*n, P(accept) went from 1.0 to 0.0 when row 0's label changed, at epsilon = 1)."""
    obj = _objective(2, n=50, d=3)
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="must not repeat a row index"):
        noisy_backtracking_line_search(obj, np.zeros(3), np.ones(3), budget=0.5, rows=np.array([0, 1, 1]),
                                       accountant=acc)
    assert len(acc.entries) == 0
    out = noisy_backtracking_line_search(obj, np.zeros(3), np.ones(3), budget=0.5, rows=np.array([0, 1, 2]),
                                         accountant=acc, random_state=0)
    assert [e.event for e in acc.entries] == [out.event]


def _exact_gradient(obj, w, l2):
    idx = np.arange(obj.n_samples)
    return obj.per_example_gradients(w, idx).mean(axis=0) + l2 * w


def test_line_search_charges_its_event_before_reading():
    acc = Accountant(Budget(0.5, 0.0))
    obj = MarginObjective(_UntouchableX(), np.ones(200))
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        noisy_backtracking_line_search(obj, np.zeros(3), np.ones(3), budget=1.0, accountant=acc)
    assert len(acc.entries) == 0
    obj2 = _objective(3, n=200, d=3)
    acc2 = Accountant(Budget(1.0, 0.0))
    out = noisy_backtracking_line_search(obj2, np.zeros(3), np.ones(3), budget=0.4, accountant=acc2,
                                         random_state=1)
    assert [e.event for e in acc2.entries] == [out.event] and acc2.spent.epsilon == pytest.approx(0.4)


def test_gaussian_line_search_is_charged_with_the_log_k_term():
    obj = _objective(4, n=200, d=3)
    out = noisy_backtracking_line_search(obj, np.zeros(3), np.ones(3) * 0.1, budget=0.05, noise="gaussian",
                                         max_backtracks=7, random_state=0)
    assert isinstance(out.event, RenyiEvent)
    a = np.asarray(out.event.orders)
    np.testing.assert_allclose(out.event.epsilons, a * 0.05 + math.log(8) / (a - 1), rtol=1e-12)


# ----------------------------------------------------------------------------- SVT DP audit
# Setting (alpha = 1e-5 for every statistical test below; N_AUDIT runs per input):
# one NOISYBTLS call at eps_BT = 1 on a table objective of N_ROWS rows with one parameter, at w = 0 along a
# direction of norm 1e-12 (so the Armijo term and the regulariser vanish and each candidate's slack is exactly the
# sum of the rows' clipped loss differences / n). Row 0 is the replaced row: on D its loss is 0 at w and C_obj at
# every candidate (slack contribution -C/n), on D' the reverse (+C/n); the other rows contribute a constant base.
# So every query moves by exactly the declared sensitivity Delta = 2 C / n (replace-one): on D the ten queries sit at
# base - Delta, on D' at base (the worst case for the "failed" outcome, as in tests/statistical/test_dp_audit.py).
N_ROWS = 200
C_OBJ = 1.0
EPS_BT = 1.0
N_AUDIT = 2 * 10**5
K = 10
OUTCOMES = [*range(K), None]
ALPHA = 1e-5


def table_pair(base: float):
    """(D, D'): every candidate's slack at ``base - Delta`` on D and ``base`` on D' (see ``_svt_table``)."""
    return _svt_table.table_pair(base, n_rows=N_ROWS, c_obj=C_OBJ)


W0 = np.zeros(1)
DIRECTION = np.array([1e-12])


def real_queries(obj) -> list[float]:
    """The slacks the trainer's own query function computes for the K candidates."""
    sv = SparseVector(epsilon=EPS_BT, sensitivity=2 * C_OBJ / N_ROWS, threshold=0.0, random_state=0)
    etas = [0.8**i for i in range(K)]
    return list(L._armijo_slacks(obj, W0, DIRECTION, np.arange(N_ROWS), etas, clip_obj=C_OBJ, divisor=N_ROWS,
                                 l2=0.0, armijo=0.5, limit=math.ldexp(sv.grid_spacing, 48)))


def batched(queries, seed: int, *, reused_threshold: int | None = None):
    """Vectorised NOISYBTLS on fixed queries: the mechanism the trainer builds, its grid and exact sampler.

    Mirrors ``SparseVectorSession`` (threshold noise once per call, fresh noise per candidate, first "above").
    ``reused_threshold``: the broken twin, one noisy threshold drawn once and reused by every call.
    """
    mech = SparseVector(epsilon=EPS_BT, sensitivity=2 * C_OBJ / N_ROWS, threshold=0.0, random_state=seed)
    q = round_to_grid(np.asarray(queries, dtype=np.float64), mech._g, "queries", "batched")

    def sample(n: int) -> np.ndarray:
        src = mech._source
        if reused_threshold is None:
            thr = mech._threshold_index + discrete_laplace(2**mech._k, 1, n, src)
        else:
            thr = np.full(n, reused_threshold, dtype=np.int64)
        nu = discrete_laplace(2 ** (mech._k + 1), 1, (n, q.shape[0]), src)
        above = q[None, :] + nu >= thr[:, None]
        out = np.empty(n, dtype=object)
        out[:] = np.argmax(above, axis=1).tolist()
        out[~above.any(axis=1)] = None
        return out

    return sample, mech


class _ReusedThresholdSession(SparseVectorSession):
    """The real session, except that the noisy threshold is drawn once and reused by every later call (broken)."""

    __slots__ = ()
    cached: dict[str, int] = {}

    def __init__(self, mechanism):
        super().__init__(mechanism)
        if "t" not in self.cached:
            self.cached["t"] = self._noisy_threshold
        self._set("_noisy_threshold", self.cached["t"])


class ReusedThresholdSVT(SparseVector):
    __slots__ = ()

    def start(self):
        return _ReusedThresholdSession(self)


def _counts(x):
    return np.array([sum(v is None for v in x) if o is None else int(np.sum(x == o)) for o in OUTCOMES])


def _homogeneity_pvalue(a, b) -> float:
    table = np.vstack([_counts(a), _counts(b)])
    small = table.sum(axis=0) * table.sum(axis=1).min() / table.sum() < 5
    if small.any():
        table = np.hstack([table[:, ~small], table[:, small].sum(axis=1, keepdims=True)])
    return float(stats.chi2_contingency(table)[1])


def _real_runs(obj, n: int, seed: int):
    src = check_random_state(seed)
    out = np.empty(n, dtype=object)
    for i in range(n):
        r = noisy_backtracking_line_search(obj, W0, DIRECTION, budget=EPS_BT, clip_obj=C_OBJ, eta0=1.0,
                                           max_backtracks=K, random_state=src)
        out[i] = None if not r.accepted else int(round(math.log(r.eta) / math.log(0.8)))
    return out


@pytest.mark.statistical
def test_svt_batched_sampler_matches_the_real_line_search(monkeypatch):
    """The batched samplers used by the audits have the law of the real code (and the twin that of its real form).

    H0: 3 000 real ``noisy_backtracking_line_search`` calls and 3 * 10**4 batched draws on D share one
    distribution over the 11 outcomes (chi-square homogeneity, alpha = 1e-5 each); the same for the broken twin's
    real form (a subclass of the real session) against its batched form. Power: the correct and the
    reused-threshold laws differ grossly (with one threshold for all calls the outcome law is that of a fixed
    threshold, not of the mixture over its noise), which is asserted at the same sizes.
    """
    obj_d, _ = table_pair(0.0)
    q = real_queries(obj_d)
    np.testing.assert_allclose(q, -2 * C_OBJ / N_ROWS, rtol=1e-9)  # every query at base - Delta
    real = _real_runs(obj_d, 3000, 11)
    good, _ = batched(q, 12)
    assert _homogeneity_pvalue(real, good(30_000)) > ALPHA
    _ReusedThresholdSession.cached.clear()
    monkeypatch.setattr(step_module, "SparseVector", ReusedThresholdSVT)
    real_bad = _real_runs(obj_d, 3000, 13)
    t0 = _ReusedThresholdSession.cached["t"]
    bad, _ = batched(q, 14, reused_threshold=t0)
    assert _homogeneity_pvalue(real_bad, bad(30_000)) > ALPHA
    assert _homogeneity_pvalue(real, real_bad) < ALPHA


@pytest.mark.statistical
def test_svt_line_search_passes_the_audit():
    """H0: one NOISYBTLS call is eps_BT = 1-DP on the worst-case replace-one pair (alpha = 1e-5, 2e5 runs each).

    Outcomes are declared (candidate indices and "failed"), so the audit's Clopper-Pearson bounds run over a fixed
    family with a Bonferroni correction. The true epsilon on this pair is about 0.5 (the pair of
    tests/statistical/test_dp_audit.py, computed there by numerical integration); measured lower bound 0.35.
    """
    obj_d, obj_p = table_pair(0.0)
    s_d, _ = batched(real_queries(obj_d), 21)
    s_p, _ = batched(real_queries(obj_p), 22)
    res = audit_mechanism(s_d, s_p, epsilon=EPS_BT, n_samples=N_AUDIT, outcomes=OUTCOMES, confidence=1 - ALPHA,
                          random_state=0)
    assert not res.violation, str(res)
    assert res.epsilon_lower_bound < EPS_BT


@pytest.mark.statistical
def test_svt_line_search_with_a_reused_threshold_is_flagged():
    """Broken twin: the noisy threshold drawn once and reused by every call (P8), same audit, same sizes.

    The auditor knows the implementation, so the pair is placed at the reused threshold ``T0``: D's ten queries
    at ``T0 - Delta``, D''s at ``T0``. Every call then compares the queries to the same ``T0``, so the ten
    comparisons are independent and "failed" has probability ``F(1)**10 = 0.0072`` on D against
    ``F(0)**10 = 0.00098`` on D' (F the CDF of the query noise Lap(4) in units of Delta): a true epsilon of
    10 log(F(1)/F(0)) = 2.0 against the claim 1. At 2e5 runs (measured: 1 431 and 208 hits) the Clopper-Pearson
    losses leave a lower bound of 1.44 (1.49 to 1.62 for five other seeds of the reused threshold).
    """
    mech = SparseVector(epsilon=EPS_BT, sensitivity=2 * C_OBJ / N_ROWS, threshold=0.0, random_state=31)
    t0 = mech._threshold_index + int(discrete_laplace(2**mech._k, 1, 1, mech._source)[0])
    base = t0 * mech._g  # the reused threshold as a value
    obj_d, obj_p = table_pair(base)
    q_d, q_p = real_queries(obj_d), real_queries(obj_p)
    np.testing.assert_allclose(q_p, base, atol=1e-12 + 1e-9 * abs(base))
    s_d, _ = batched(q_d, 32, reused_threshold=t0)
    s_p, _ = batched(q_p, 33, reused_threshold=t0)
    res = audit_mechanism(s_d, s_p, epsilon=EPS_BT, n_samples=N_AUDIT, outcomes=OUTCOMES, confidence=1 - ALPHA,
                          random_state=0)
    assert res.violation and res.epsilon_lower_bound > 1.2, str(res)


# ----------------------------------------------------------------------------- accounting: fixed schedule
def _bun_steinke(orders, eps):
    """Independent closed form: RDP of pure eps-DP, min(eps, log((sinh(a e) - sinh((a-1) e)) / sinh(e)) / (a-1))."""
    a = np.asarray(orders, dtype=float)
    val = np.log((np.sinh(a * eps) - np.sinh((a - 1) * eps)) / np.sinh(eps)) / (a - 1)
    return np.minimum(eps, val)


@pytest.mark.parametrize("sampling", ["without_replacement", "full", "poisson"])
def test_fixed_schedule_matches_an_independent_rdp_computation(sampling):
    n, n_iter, share, eps, delta = 500, 40, 0.1, 1.0, 1e-6
    relation = "add_remove" if sampling == "poisson" else "replace_one"
    res = dp_blsgd(_objective(5, n=n), epsilon=eps, delta=delta, mode="fixed", n_iter=n_iter, sampling=sampling,
                   line_search_share=share, random_state=0)
    rho_g, eps_bt = float(res.rho_grads[0]), float(res.search_budgets[0])
    assert rho_g / (0.5 * eps_bt**2) == pytest.approx((1 - share) / share, rel=1e-9)  # the 90/10 split
    orders = [a for a in A.STATED_ORDERS if sampling != "without_replacement" or a <= 128]
    nm = 1 / math.sqrt(2 * rho_g)
    m, q = 50, 0.1
    if sampling == "without_replacement":
        grad = dp_event.SampledWithoutReplacementDpEvent(n, m, dp_event.GaussianDpEvent(nm))
        eps_svt = math.log1p(m / n * math.expm1(eps_bt))  # Balle et al. 2018, replace-one
        rel = NeighboringRelation.REPLACE_ONE
    elif sampling == "poisson":
        grad = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(nm))
        eps_svt = math.log1p(q * math.expm1(eps_bt))  # Li, Qardaji & Su 2012, add/remove
        rel = NeighboringRelation.ADD_OR_REMOVE_ONE
    else:
        grad, eps_svt, rel = dp_event.GaussianDpEvent(nm), eps_bt, NeighboringRelation.REPLACE_ONE
    acct = dp_rdp.RdpAccountant(orders=orders, neighboring_relation=rel)
    acct.compose(dp_event.SelfComposedDpEvent(grad, n_iter))
    total = np.asarray(acct._rdp) + n_iter * _bun_steinke(orders, eps_svt)
    expected, _ = dp_rdp.compute_epsilon(orders, total, delta)
    assert res.epsilon == pytest.approx(expected, rel=1e-9)
    assert eps * (1 - 1e-6) <= res.epsilon <= eps  # the schedule is calibrated to the budget
    assert res.relation == relation and res.privacy_event.relation == relation
    assert res.n_iter == n_iter == res.n_line_searches and res.n_cheb == 0 and res.filter_kind == "none"
    assert len(res.events) == 2 * n_iter


# ----------------------------------------------------------------------------- accounting: filters
def _cost(event, flt_kind, order):
    if flt_kind == "zcdp":
        inner = event
        return 1 / (2 * inner.noise_multiplier**2) if isinstance(inner, GaussianEvent) else inner.epsilon**2 / 2
    return float(A.event_rdp(event, (order,))[0])


@pytest.mark.parametrize("sampling", ["without_replacement", "full", "poisson"])
@pytest.mark.parametrize("forced", ["grad", "search", "always"])
def test_filter_is_never_exceeded_when_the_angle_test_always_raises_budgets(monkeypatch, sampling, forced):
    """Forced budget increases (a patched angle test) and a too-large eta0 (every search fails): the filter stops."""
    if forced == "grad":
        monkeypatch.setattr(loop_module, "_angle", lambda u, v: 180.0)
    elif forced == "search":
        monkeypatch.setattr(loop_module, "_angle", lambda u, v: 0.0)
    strategy = "always" if forced == "always" else "adaptive"
    res = dp_blsgd(_objective(6, n=400), epsilon=0.8, delta=1e-6, sampling=sampling, eta0=1e4,
                   budget_strategy=strategy, trust_region=False, random_state=1)
    order = res.filter_order
    spent = math.fsum(_cost(e, res.filter_kind, order) for e in res.events)
    assert spent == pytest.approx(res.filter_spent, rel=1e-12)
    assert spent <= res.filter_cap
    s = A.Scheme.build(sampling, 400, 0.1)
    nxt = A.gradient_event(s, res.extra["final_rho_grad"])
    srch = A.search_event(s, "laplace", res.extra["final_search_budget"], 11)
    assert spent + _cost(nxt, res.filter_kind, order) + _cost(srch, res.filter_kind, order) > res.filter_cap
    assert res.n_cheb > 0 and res.n_failed >= res.n_cheb
    if forced in ("grad", "always"):
        assert res.extra["final_rho_grad"] > res.rho_grads[0]
    n_grads = sum(isinstance(getattr(e, "event", e), GaussianEvent) for e in res.events)
    assert n_grads == res.n_iter + res.n_cheb
    assert len(res.events) - n_grads == res.n_line_searches
    # the charged cap converts to the budget
    assert res.epsilon <= 0.8 and res.epsilon == pytest.approx(0.8, rel=1e-6)


def test_filter_orders_and_charged_events():
    res = dp_blsgd(_objective(7), epsilon=1.0, delta=1e-6, random_state=0)
    assert res.filter_kind == "renyi" and res.filter_order in A.STATED_ORDERS and res.filter_order <= 128
    assert res.privacy_event == RenyiEvent(orders=(res.filter_order,), epsilons=(res.filter_cap,),
                                           relation="replace_one", label=res.privacy_event.label)
    assert all(isinstance(e, SampledWithoutReplacementEvent) and e.sample_size == 30 and e.dataset_size == 300
               for e in res.events)
    full = dp_blsgd(_objective(7), epsilon=1.0, delta=1e-6, sampling="full", random_state=0)
    assert full.filter_kind == "zcdp" and math.isinf(full.filter_order)
    curve = np.asarray(full.privacy_event.epsilons) / np.asarray(full.privacy_event.orders)
    np.testing.assert_allclose(curve, full.filter_cap, rtol=1e-12)  # the zCDP curve a rho_cap
    assert all(isinstance(e, (GaussianEvent, SparseVectorEvent)) for e in full.events)
    poi = dp_blsgd(_objective(7), epsilon=1.0, delta=1e-6, sampling="poisson", random_state=0)
    assert poi.relation == "add_remove" and all(isinstance(e, PoissonSampledEvent) for e in poi.events)


@pytest.mark.parametrize(
    "kw",
    [dict(), dict(sampling="full"), dict(sampling="poisson"), dict(mode="fixed", n_iter=25),
     dict(initial_budget="paper", epsilon=2.0), dict(sampling="full", line_search_noise="gaussian"),
     dict(mode="fixed", n_iter=10, sampling="full", line_search_noise="gaussian", line_search_share=0.3)],
)
def test_charged_event_equals_the_data_free_event(kw):
    params = dict(epsilon=1.0, delta=1e-6, random_state=3)
    params.update(kw)
    relation = "add_remove" if params.get("sampling") == "poisson" else "replace_one"
    acc = Accountant(Budget(params["epsilon"], 1e-6), relation=relation)
    res = dp_blsgd(_objective(8), accountant=acc, **params)
    expected = blsgd_privacy_event(300, **params)
    assert res.privacy_event == expected
    assert [e.event for e in acc.entries] == [expected] and acc.entries[0].role == "training"
    assert acc.spent.epsilon <= params["epsilon"] * (1 + 1e-12)


def test_over_budget_accountant_refuses_before_any_data_access():
    class Untouchable:
        n_samples, n_params = 300, 4

        def per_example_gradients(self, w, idx):
            raise AssertionError("the data was read")

        per_example_losses = per_example_gradients

        def validate(self):
            raise AssertionError("the data was read")

    acc = Accountant(Budget(0.5, 1e-6))
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        dp_blsgd(Untouchable(), epsilon=1.0, delta=1e-6, accountant=acc)
    assert len(acc.entries) == 0 and acc.spent.epsilon == 0.0
    with pytest.raises(AssertionError, match="the data was read"):  # the control: it does raise when read
        dp_blsgd(Untouchable(), epsilon=0.5, delta=1e-6, accountant=acc)
    assert len(acc.entries) == 1  # ... after the write-ahead charge


def test_bad_values_are_mapped_after_the_charge_never_refused():
    """Rule 7: a NaN entry counts as 0 and a row with a label other than -1/+1 becomes the zero row, so whether
    dp_blsgd completes cannot depend on a row; the seeded run equals the run on the data mapped by hand."""
    X, y = _data(9)
    bad_X, bad_y = X.copy(), y.copy()
    bad_X[3, 1], bad_y[5] = np.nan, 0.0
    ref_X, ref_y = X.copy(), y.copy()
    ref_X[3, 1], ref_X[5], ref_y[5] = 0.0, 0.0, 1.0
    acc = Accountant(Budget(1.0, 1e-6))
    got = dp_blsgd(MarginObjective(bad_X, bad_y, data_norm=1.0), epsilon=1.0, delta=1e-6, accountant=acc,
                   random_state=2)
    ref = dp_blsgd(MarginObjective(ref_X, ref_y, data_norm=1.0), epsilon=1.0, delta=1e-6, random_state=2)
    assert len(acc.entries) == 1 and np.all(np.isfinite(got.x))
    np.testing.assert_array_equal(got.x, ref.x)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(epsilon=0.0), "'epsilon'"),
        (dict(delta=0.0), "'delta'"),
        (dict(mode="online"), "'mode'"),
        (dict(sampling="shuffle"), "'sampling'"),
        (dict(batch_fraction=0.0), "'batch_fraction'"),
        (dict(sampling="poisson", batch_fraction=1.0), "'batch_fraction'"),
        (dict(clip_grad=-1.0), "'clip_grad'"),
        (dict(clip_obj=0.0), "'clip_obj'"),
        (dict(armijo=1.0), "'armijo'"),
        (dict(backtrack=0.0), "'backtrack'"),
        (dict(max_backtracks=0), "'max_backtracks'"),
        (dict(eta0=-1.0), "'eta0'"),
        (dict(line_search_noise="cauchy"), "'line_search_noise'"),
        (dict(line_search_noise="gaussian"), "needs sampling='full'"),
        (dict(phi_max=0.9), "'phi_max'"),
        (dict(phi_min=1.5), "'phi_min'"),
        (dict(psi=1.0), "'psi'"),
        (dict(reset_every=0), "'reset_every'"),
        (dict(adaptive_clipping="yes"), "'adaptive_clipping'"),
        (dict(clip_decay=1.0), "'clip_decay'"),
        (dict(expected_iter=0), "'expected_iter'"),
        (dict(mode="fixed"), "needs n_iter"),
        (dict(mode="fixed", n_iter=5, adaptive_clipping=True), "needs mode='adaptive'"),
        (dict(line_search_share=1.0), "'line_search_share'"),
        (dict(budget_strategy="sometimes"), "'budget_strategy'"),
        (dict(initial_budget="guess"), "'initial_budget'"),
        (dict(w0=np.ones(3)), "'w0'"),
        (dict(accountant="acc"), "'accountant'"),
        (dict(sampling="poisson"), "add/remove"),
        (dict(epsilon=1e-4), "does not fit even one"),
    ],
)
def test_bad_parameters_are_refused_with_nothing_spent(change, match):
    acc = Accountant(Budget(10.0, 1e-6))
    kw = dict(epsilon=1.0, delta=1e-6, accountant=acc)
    kw.update(change)
    with pytest.raises(InvalidParameterError, match=match):
        dp_blsgd(_objective(10), **kw)
    assert len(acc.entries) == 0


def test_wor_accountant_of_the_wrong_relation_is_refused():
    acc = Accountant(Budget(10.0, 1e-6), relation="add_remove")
    with pytest.raises(InvalidParameterError, match="relation='replace_one'"):
        dp_blsgd(_objective(10), epsilon=1.0, delta=1e-6, accountant=acc)
    assert len(acc.entries) == 0


def test_composes_with_a_seed_002_fit_in_one_replace_one_accountant():
    X, y = _data(11, n=300, d=4)
    acc = Accountant(Budget(1.6, 1e-6))
    fit = dp_accelerated(X, y, solver="nag", epsilon=0.5, alpha=0.01, data_norm=2.0, n_iter=10, accountant=acc,
                         random_state=0, phase="seed 002")
    res = dp_blsgd(MarginObjective(X, y, data_norm=1.0), epsilon=1.0, delta=1e-6, accountant=acc, random_state=0,
                   phase="seed 003")
    assert [e.event for e in acc.entries] == [fit.privacy_event, res.privacy_event]
    assert 1.0 < acc.spent.epsilon <= 1.5 + 1e-9  # at most basic composition of the two
    with pytest.raises(BudgetExceededError):
        dp_blsgd(MarginObjective(X, y, data_norm=1.0), epsilon=1.0, delta=1e-6, accountant=acc)


# ----------------------------------------------------------------------------- hygiene
class CountingObjective:
    """Wraps an objective and records every call (method, batch)."""

    def __init__(self, inner):
        self.inner = inner
        self.n_samples, self.n_params = inner.n_samples, inner.n_params
        self.smoothness, self.gradient_bound = inner.smoothness, inner.gradient_bound
        self.calls: list[tuple[str, tuple[int, ...], tuple[float, ...]]] = []

    def per_example_gradients(self, w, idx):
        self.calls.append(("grad", tuple(int(i) for i in idx), tuple(w)))
        return self.inner.per_example_gradients(w, idx)

    def per_example_losses(self, w, idx):
        self.calls.append(("loss", tuple(int(i) for i in idx), tuple(w)))
        return self.inner.per_example_losses(w, idx)


@pytest.mark.parametrize("sampling", ["without_replacement", "poisson"])
def test_every_mechanism_call_gets_a_fresh_batch(sampling):
    obj = CountingObjective(_objective(12, n=400))
    res = dp_blsgd(obj, epsilon=0.5, delta=1e-6, sampling=sampling, eta0=20.0, random_state=2)
    # one mechanism call = one gradient call, or the run of consecutive loss calls of one search (a search is
    # always followed by a gradient: the next iteration's, or CHEB's after a failure)
    groups: list[tuple[str, tuple[int, ...]]] = []
    for kind, idx, _ in obj.calls:
        if kind == "loss" and groups and groups[-1][0] == "loss":
            assert idx == groups[-1][1]  # both loss evaluations of one search use the same batch (P9)
            continue
        groups.append((kind, idx))
    assert sum(k == "grad" for k, _ in groups) == res.n_iter + res.n_cheb
    assert sum(k == "loss" for k, _ in groups) == res.n_line_searches
    assert len(groups) == len(res.events)
    batches = [b for _, b in groups]
    assert len(set(batches)) == len(batches)  # a fresh batch for every mechanism call (P2)
    if sampling == "without_replacement":
        assert {len(b) for b in batches} == {40}
    assert res.n_cheb > 0  # CHEB gradients were exercised


def test_each_search_evaluates_its_losses_on_one_batch():
    obj = CountingObjective(_objective(13, n=400))
    res = dp_blsgd(obj, epsilon=0.5, delta=1e-6, eta0=20.0, random_state=4)
    # within a search: the first loss call is at w, the next ones at candidates; all on one batch
    searches, current = [], None
    for kind, idx, w in obj.calls:
        if kind == "grad":
            current = None
            continue
        if current is None or current[0] != idx or w == current[1]:
            current = (idx, w)
            searches.append([idx])
        else:
            searches[-1].append(idx)
    assert len(searches) == res.n_line_searches
    assert all(len(set(s)) == 1 and 2 <= len(s) <= 11 for s in searches)


@pytest.mark.parametrize("sampling", ["without_replacement", "poisson", "full"])
def test_batch_means_divide_by_the_public_size(monkeypatch, sampling):
    seen = []
    grad_mean, slacks = L._clipped_gradient_mean, step_module._armijo_slacks

    def spy_g(objective, w, idx, clip, divisor, d):
        seen.append(("g", len(idx), divisor))
        return grad_mean(objective, w, idx, clip, divisor, d)

    def spy_l(objective, w, g, idx, etas, **kw):  # the searches' loss means (divided inside the slacks)
        seen.append(("l", len(idx), kw["divisor"]))
        return slacks(objective, w, g, idx, etas, **kw)

    monkeypatch.setattr(loop_module, "_clipped_gradient_mean", spy_g)
    monkeypatch.setattr(step_module, "_armijo_slacks", spy_l)
    res = dp_blsgd(_objective(14, n=400), epsilon=0.5, delta=1e-6, sampling=sampling, random_state=5)
    public = {"without_replacement": 40.0, "poisson": 0.1 * 400, "full": 400.0}[sampling]
    assert {d for _, _, d in seen} == {public} and res.extra["divisor"] == public
    if sampling == "poisson":
        assert len({k for _, k, _ in seen}) > 1  # the realised sizes varied; none reached the divisor
    assert res.batch_size == int(public)


def test_batch_mean_uses_the_divisor_and_isolates_bad_rows():
    class Const:
        n_samples, n_params = 10, 2

        def per_example_gradients(self, w, idx):
            G = np.tile([3.0, 4.0], (len(idx), 1))
            G[0] = np.nan  # one row misbehaves: it counts as zero
            return G

        def per_example_losses(self, w, idx):
            out = np.full(len(idx), 0.5)
            out[0], out[1] = np.nan, -3.0  # NaN counts as the clip, negative as 0
            return out

    idx = np.arange(4)
    mean = L._clipped_gradient_mean(Const(), np.zeros(2), idx, 1.0, 8.0, 2)
    np.testing.assert_allclose(mean, 3 * np.array([0.6, 0.8]) / 8.0)  # clipped to norm 1, divided by 8
    assert L._clipped_loss_mean(Const(), np.zeros(2), idx, 1.0, 8.0) == pytest.approx((1.0 + 0 + 0.5 + 0.5) / 8)


def test_seeded_runs_reproduce_and_results_are_read_only():
    a = dp_blsgd(_objective(15), epsilon=1.0, delta=1e-6, random_state=7)
    b = dp_blsgd(_objective(15), epsilon=1.0, delta=1e-6, random_state=7)
    c = dp_blsgd(_objective(15), epsilon=1.0, delta=1e-6, random_state=8)
    assert isinstance(a, LineSearchResult) and a.seeded
    np.testing.assert_array_equal(a.iterates, b.iterates)
    np.testing.assert_array_equal(a.step_sizes, b.step_sizes)
    assert a.events == b.events and not np.array_equal(a.x, c.x)
    with pytest.raises(ValueError):
        a.x[0] = 1.0
    secure = dp_blsgd(_objective(15), epsilon=1.0, delta=1e-6)
    assert not secure.seeded


def test_result_holds_only_public_or_released_values():
    res = dp_blsgd(_objective(16), epsilon=1.0, delta=1e-6, sampling="poisson", random_state=0)
    fields = set(LineSearchResult.__dataclass_fields__)
    assert not fields & {"losses", "objective", "gradients", "batch_sizes", "slacks", "thresholds"}
    assert set(res.extra) == {"eta0", "initial_rho_grad", "initial_search_budget", "initial_budget", "divisor",
                              "expected_iter", "clip_grads", "clip_objs", "adaptive_clipping", "clip_grad",
                              "final_rho_grad", "final_search_budget", "final_clip_grad", "final_clip_obj",
                              "trust_region"}
    np.testing.assert_allclose(res.iterates[1:] - res.iterates[:-1],
                               -res.step_sizes[:, None] * res.noisy_gradients, atol=1e-12)


def test_adaptive_clipping_decays_both_thresholds_once_per_iteration(monkeypatch):
    monkeypatch.setattr(loop_module, "_angle", lambda u, v: 180.0)  # every CHEB raises rho_grad
    res = dp_blsgd(_objective(17, n=400), epsilon=1.0, delta=1e-6, adaptive_clipping=True, eta0=1e3,
                   trust_region=False, random_state=0)
    cg = np.append(res.extra["clip_grads"], res.extra["final_clip_grad"])
    ratios = cg[1:] / cg[:-1]
    assert res.extra["clip_grad"] == 1.0 and cg[0] == 1.0  # the declared gradient bound (rows of norm 1) binds
    assert np.all(np.isclose(ratios, 1.0) | np.isclose(ratios, 0.95)) and np.any(np.isclose(ratios, 0.95))
    np.testing.assert_allclose(res.extra["clip_objs"] / res.extra["clip_objs"][0], cg[:-1] / cg[0])


def test_trust_region_caps_every_step_at_the_loss_clipping_range():
    """With rows of norm 1 each loss is 1-Lipschitz: no released step moves w by more than C_obj / 1."""
    kw = dict(epsilon=2.0, delta=1e-6, eta0=20.0, clip_obj=0.7, random_state=0)
    res = dp_blsgd(_objective(20, n=400), **kw)
    lengths = res.step_sizes * np.linalg.norm(res.noisy_gradients, axis=1)
    assert res.extra["trust_region"] == 1.0 and np.all(lengths <= 0.7 * (1 + 1e-12))
    free = dp_blsgd(_objective(20, n=400), trust_region=False, **kw)
    assert free.extra["trust_region"] is None and np.any(free.step_sizes * np.linalg.norm(
        free.noisy_gradients, axis=1) > 0.7)
    assert free.privacy_event == res.privacy_event  # a post-processing choice: the charge is the same


def test_intelligent_backtracking_only_lowers_eta0():
    res = dp_blsgd(_objective(18, n=400), epsilon=4.0, delta=1e-6, eta0=30.0, reset_every=2, random_state=0)
    assert res.eta0s[0] == 30.0 and np.all(np.diff(res.eta0s) <= 0)
    for t in range(2, res.n_iter, 2):  # at every reset: min(1.2 max(accepted steps of the last 2), eta0)
        window = [s for s in res.step_sizes[t - 2:t] if s > 0]
        if window:
            assert res.eta0s[t] == pytest.approx(min(1.2 * max(window), res.eta0s[t - 1]))


def test_budget_strategy_none_never_raises_budgets():
    res = dp_blsgd(_objective(19, n=400), epsilon=1.0, delta=1e-6, budget_strategy="none", eta0=50.0,
                   random_state=0)
    assert res.n_cheb > 0
    assert res.extra["final_rho_grad"] == res.rho_grads[0] and np.all(res.rho_grads == res.rho_grads[0])
    assert np.all(res.search_budgets == res.search_budgets[0])


# ----------------------------------------------------------------------------- learning
def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    y = np.where(y == 1, 1.0, -1.0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    reference = LogisticRegression().fit(Xtr, ytr).score(Xte, yte)
    Ute = Xte / np.maximum(1.0, np.linalg.norm(Xte, axis=1, keepdims=True))  # the same declared row bound
    return Xtr, ytr, Ute, yte, reference


def _dp_accuracy(epsilon: float, seeds, **kw) -> float:
    Xtr, ytr, Ute, yte, _ = _breast_cancer()
    accs = []
    for s in seeds:
        res = dp_blsgd(MarginObjective(Xtr, ytr, data_norm=1.0), epsilon=epsilon, delta=1e-5, random_state=s, **kw)
        accs.append(float(np.mean(np.where(Ute @ res.x >= 0, 1.0, -1.0) == yte)))
    return float(np.mean(accs))


@pytest.mark.xfail(strict=True, reason=(
    "Not met (measured): at epsilon = 1 (delta = 1e-5, replace-one) with the default parameters (batches of 40 of "
    "398 rows drawn without replacement) DP-BLSGD averages 0.886 over 24 seeds (0.899 on these 8) against "
    "sklearn's 0.959 on this split (target 0.909); the full batch (DP-BLGD) averages 0.905, and DP-SGD with the same "
    "batches and accountant, its step size and horizon tuned in hindsight over 20 settings, about 0.90. Poisson "
    "batches (add/remove, a weaker unit) reach 0.915. Strict: the test fails as soon as the target is met."))
def test_learns_breast_cancer_within_5_points_of_sklearn_at_epsilon_1():
    _, _, _, _, reference = _breast_cancer()
    assert _dp_accuracy(1.0, range(8)) >= reference - 0.05


def test_learns_breast_cancer_at_the_default_parameters():
    """What is met at the default parameters (sklearn 0.959, majority 0.63).

    Measured on these 8 seeds: 0.899 at epsilon = 1 and 0.920 at epsilon = 8 (0.880 and 0.923 on 16 other
    seeds); the thresholds sit about 2 standard errors of an 8-seed mean below the 24-seed figures.
    """
    _, _, _, _, reference = _breast_cancer()
    assert _dp_accuracy(1.0, range(8)) >= reference - 0.10
    assert _dp_accuracy(8.0, range(8)) >= reference - 0.05


def test_calibrated_full_batch_budget_fits_expected_iter_iterations_in_the_filter():
    """initial_budget='calibrated' (full batch; the zCDP filter of the Laplace search, the Renyi filter of the
    Gaussian one): E iterations at the calibrated e must pass the filter as it prices them. Rounding put 2E costs
    an ulp over the cap in 246 of 1050 zCDP settings (and 2 of 120 Renyi ones): the run stopped one iteration
    early (at epsilon 2, delta 1e-2, E = 4: 3 iterations, 75 % of the charged budget used), and with E = 1 it
    could run nothing and return w0 while charging the whole cap, or be refused with a message about the paper's
    rule."""
    cases = [(float(eps), delta, E, "laplace") for eps in np.round(np.linspace(0.1, 5, 25), 3)
             for delta in (1e-6, 1e-3, 1e-2) for E in (1, 2, 3, 4, 5, 10)]
    cases += [(1.073, 1e-3, 3, "gaussian"), (1.945, 1e-3, 3, "gaussian")]  # the Renyi filter had them too
    short = []
    for eps, delta, E, noise in cases:
        p = loop_module._make_plan(100, dict(epsilon=eps, delta=delta, sampling="full", expected_iter=E,
                                             line_search_noise=noise), "test")
        ap = p.adaptive
        flt = A.ZcdpFilter(ap.cap) if ap.filter_kind == "zcdp" else A.RenyiFilter(ap.order, ap.cap)
        events = [A.gradient_event(p.scheme, p.rho0), A.search_event(p.scheme, noise, p.search0, p.n_outputs)] * E
        for ev in events:
            if not flt.fits(ev):
                short.append((eps, delta, E, noise))
                break
            flt.pay(ev)
    assert not short, short[:5]
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = np.sign(X[:, 0])
    r = dp_blsgd(MarginObjective(X, y, data_norm=1.0), epsilon=2.0, delta=1e-2, sampling="full", expected_iter=4,
                 budget_strategy="none", random_state=0, eta0=1e-3, max_backtracks=100, backtrack=0.99)
    assert r.n_iter == 4 and r.filter_spent == pytest.approx(r.filter_cap, rel=1e-9)
