"""Release methods: budgets, refusals before access, guarantee labels, leaks, invariance."""

import json
import math

import numpy as np
import pytest
from bo_objectives import bump

from privtune.accounting import Accountant, Budget
from privtune.bo import GPUCB, GPUCBExact, LipschitzRelease, NoisyUCB, RandomSearch, UCBEngine, make_method
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.gp import GPPosterior, InputKernel, MultiTaskKernel, TaskKernel
from privtune.space import Real, SearchSpace, candidate_set

SENTINEL = 0.7071067811  # a raw score that must never appear in any output


def make_all():
    return [
        GPUCB(epsilon=1.0, delta=1e-6, n_iter=6),
        GPUCBExact(epsilon=1.0, delta=1e-6, n_iter=6, A=0.1, tau=1.0),
        NoisyUCB(epsilon=1.0, delta=1e-6, n_iter=6, score_sensitivity=0.01),
        RandomSearch(epsilon=1.0, n_iter=6, score_sensitivity=0.01),
        RandomSearch(epsilon=1.0, n_iter=6, score_sensitivity=0.01, selection="random-stopping", delta=1e-12),
    ]


@pytest.mark.parametrize("method", make_all(), ids=lambda m: f"{m.name}")
def test_release_within_budget_and_labelled(method, cands2d):
    acc = Accountant(Budget(1.0, 1e-6))
    rel = method.run(bump, cands2d, accountant=acc, random_state=0)
    assert rel.params in [dict(p) for p in cands2d.params] or dict(rel.params) in cands2d.params
    assert acc.spent <= Budget(1.0 * (1 + 1e-12), 1e-6)
    assert rel.guarantee == ("conditional" if method.name.startswith("gp-ucb") else "unconditional")
    assert acc.guarantee == rel.guarantee
    assert [e.event for e in acc.entries] == list(rel.events)  # the ledger is exactly what the release says
    assert rel.seeded and rel.seed_policy.startswith("seeded")
    json.dumps(rel.to_dict())


@pytest.mark.parametrize("method", make_all(), ids=lambda m: f"{m.name}")
def test_over_budget_is_refused_before_any_evaluation(method, cands2d):
    def objective(p):
        raise AssertionError("the sensitive objective was evaluated")

    acc = Accountant(Budget(0.5, 1e-6))
    with pytest.raises(BudgetExceededError):
        method.run(objective, cands2d, accountant=acc)
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("method", make_all(), ids=lambda m: f"{m.name}")
def test_no_raw_score_in_outputs_or_callbacks(method, cands2d):
    seen = []
    rel = method.run(lambda p: SENTINEL, cands2d, random_state=1, callback=lambda r: seen.append(r.to_dict()))
    text = json.dumps(rel.to_dict()) + json.dumps(seen) + repr(rel)
    assert "7071067811" not in text and "0.70710678" not in text


def test_seeded_runs_are_reproducible_and_secure_runs_are_labelled(cands2d):
    m = NoisyUCB(epsilon=2.0, delta=1e-6, n_iter=5, score_sensitivity=0.01)
    a, b = m.run(bump, cands2d, random_state=3), m.run(bump, cands2d, random_state=3)
    assert a.to_dict() == b.to_dict()
    s = m.run(bump, cands2d)
    assert not s.seeded and s.seed_policy == "secure"


def test_gp_ucb_with_large_epsilon_finds_the_maximiser_of_a_gp_draw():
    """Assumption 1 holds: f is drawn from the declared GP. With epsilon huge, lambda~ is (near) argmax f."""
    space = SearchSpace({"x": Real(0.0, 1.0)})
    cands = candidate_set(space, 64, random_state=1)
    kern = MultiTaskKernel(InputKernel(0.15), TaskKernel(0.95))
    K = kern.input_kernel(cands.X, cands.X) if hasattr(kern, "input_kernel") else InputKernel(0.15)(cands.X, cands.X)
    rng = np.random.default_rng(4)
    f = np.linalg.cholesky(K + 1e-9 * np.eye(64)) @ rng.standard_normal(64)  # GP units
    f = np.clip(f / 3, -1, 1)  # scores in [-1, 1] with bounds (-1, 1): the GP axis
    lookup = {round(p["x"], 12): v for p, v in zip(cands.params, f, strict=False)}
    m = GPUCB(epsilon=1e9, delta=1e-3, n_iter=40, score_bounds=(-1.0, 1.0), kernel=kern, noise_std=0.05)
    rel = m.run(lambda p: lookup[round(p["x"], 12)], cands, random_state=0)
    assert f[rel.index] >= f.max() - 0.05
    # with epsilon = 1e9 the Laplace noise vanishes; v* is the maximum of the 40 *noisy* observations (Alg. 1's
    # v_t = f(lambda_t) + alpha_t, sigma = 0.05), within 5 sigma of the best score observed
    assert abs(rel.score - f.max()) < 0.05 + 5 * 0.05


def test_post_processing_invariance_of_noisy_ucb(cands2d, monkeypatch):
    """If the released observations are identical, the search is identical whatever the raw scores."""
    from privtune.mechanisms import gaussian as gmod

    counter = {"n": 0}

    def fake_randomise(self, value):  # released value independent of the raw score
        counter["n"] += 1
        return 0.5 + 0.01 * math.sin(counter["n"])

    monkeypatch.setattr(gmod.Gaussian, "randomise", fake_randomise)
    m = NoisyUCB(epsilon=2.0, delta=1e-6, n_iter=8, score_sensitivity=0.01)
    counter["n"] = 0
    a = m.run(bump, cands2d, random_state=0)
    counter["n"] = 0
    b = m.run(lambda p: 1.0 - bump(p), cands2d, random_state=0)
    assert [h.params for h in a.history] == [h.params for h in b.history] and a.index == b.index


def test_engine_is_deterministic_given_observations(cands2d):
    kern = MultiTaskKernel(InputKernel(0.2), TaskKernel(0.9))
    seqs = []
    for _ in range(2):
        eng = UCBEngine(GPPosterior(cands2d, kern, noise_var=0.01, score_bounds=(0, 1)), delta=1e-3)
        asks = []
        for v in (0.2, 0.9, 0.4, 0.6):
            i = eng.ask()
            asks.append(i)
            eng.tell(i, v)
        seqs.append(asks)
    assert seqs[0] == seqs[1]


def test_callback_stops_early_and_the_ledger_holds_the_whole_plan(cands2d):
    # a data-dependent stop is bounded by the plan, not by the prefix that ran (test_noisy_ucb_stopped_plan.py)
    acc = Accountant(Budget(1.0, 1e-6))
    m = NoisyUCB(epsilon=1.0, delta=1e-6, n_iter=10, score_sensitivity=0.01)
    rel = m.run(bump, cands2d, accountant=acc, random_state=0, callback=lambda r: r.iteration >= 3)
    assert rel.n_iter == 3 and len(rel.history) == 3
    assert [e.phase for e in acc.entries] == ["observations"] * 3 + ["observations_not_run"] * 7 + ["score_release"]
    assert 1.0 * (1 - 2e-3) < acc.spent.epsilon <= 1.0


def test_noisy_ucb_plan_uses_the_whole_budget_exactly():
    from privtune.accounting import compose_events

    m = NoisyUCB(epsilon=1.5, delta=1e-5, n_iter=25, score_sensitivity=0.002, observation_share=0.7)
    spent = compose_events([e for e, _ in m.plan(None)], delta=1e-5)
    assert 1.5 * (1 - 2e-3) < spent.epsilon <= 1.5


def test_random_stopping_hides_k(cands2d):
    acc = Accountant(Budget(1.0, 1e-12))
    rel = RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-12).run(
        bump, cands2d, accountant=acc, random_state=0, callback=lambda r: pytest.fail("callback called"))
    assert rel.history == () and rel.n_iter is None and len(acc.ledger) == 1
    # (2 + eta) eps_run with eta = 1, and the cap on K: delta (1 + e) 2**-100
    assert acc.spent.epsilon == 1.0 and acc.spent.delta == pytest.approx((1 + math.e) * 2.0**-100)


def test_random_stopping_never_exceeds_its_cap_and_refuses_a_pure_budget(cands2d):
    from privtune.accounting.selection import repetition_cap, sample_repetitions

    cap, tail = repetition_cap(3.0, 1.0)
    assert tail == 2.0**-100 and cap > 3
    ks = sample_repetitions(3.0, shape=1.0, size=20_000, random_state=0)
    assert ks.max() <= cap and ks.min() >= 1
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping")
    with pytest.raises(BudgetExceededError, match="capped law"):
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-12).run(
            bump, cands2d, accountant=Accountant(Budget(1.0, 0.0)), random_state=0)


def test_random_stopping_with_a_gaussian_run_event_fills_the_budget_exactly(cands2d):
    """An RDP run event (a Gaussian DP fit): the score gets the largest Laplace epsilon whose whole
    RepeatAndSelectEvent still fits (epsilon, delta); a slightly larger one would not."""
    from privtune.accounting import ComposedEvent, GaussianEvent, LaplaceEvent, RepeatAndSelectEvent

    fit = GaussianEvent(noise_multiplier=8.0, vector=True)
    m = RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                     stopping_shape=0.5, run_event=fit)
    eps_s = m.score_epsilon()
    assert 0.0 < eps_s < 1.0 / 2.5  # the training event takes its share
    (event, phase), = m.plan(cands2d)
    assert phase == "selection" and isinstance(event, RepeatAndSelectEvent) and event.event.events[0] == fit
    Accountant(Budget(1.0, 1e-6)).check(event)  # fits
    bigger = RepeatAndSelectEvent(event=ComposedEvent(events=(fit, LaplaceEvent(epsilon=eps_s * 1.01))), mean=5.0,
                                  shape=0.5)
    with pytest.raises(BudgetExceededError):
        Accountant(Budget(1.0, 1e-6)).check(bigger)
    acc = Accountant(Budget(1.0, 1e-6))
    rel = m.run(bump, cands2d, accountant=acc, random_state=0)
    assert rel.params is not None and acc.spent.epsilon <= 1.0 * (1 + 1e-9)


def test_random_stopping_refuses_a_run_event_it_cannot_bound_or_afford(cands2d):
    from privtune.accounting import EpsilonDeltaEvent, GaussianEvent

    with pytest.raises(InvalidParameterError, match="RDP accountant"):  # (eps, delta > 0): no RDP curve
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                     run_event=EpsilonDeltaEvent(epsilon=0.1, delta=1e-7))
    with pytest.raises(InvalidParameterError, match="cannot cover random stopping"):
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                     run_event=GaussianEvent(noise_multiplier=0.3, vector=True))
    with pytest.raises(InvalidParameterError, match="cannot cover random stopping"):  # pure: (2 + 1) 0.4 > 1
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                     run_event=EpsilonDeltaEvent(epsilon=0.4))


def test_random_stopping_tells_the_objective_which_run_to_keep(cands2d):
    """The objective's keep_last_run() is called right after each run that is the best so far (and never with a
    score): the run kept is the one released, even when the same candidate runs more than once."""
    rng = np.random.default_rng(5)

    class Objective:
        def __init__(self):
            self.values, self.kept = [], None

        def __call__(self, params):
            self.values.append(float(rng.uniform()))  # a run's own score, different at every run
            return self.values[-1]

        def keep_last_run(self):
            self.kept = len(self.values) - 1

    for seed in range(5):
        obj = Objective()
        m = RandomSearch(epsilon=30.0, n_iter=6, score_sensitivity=1e-3, selection="random-stopping", delta=1e-6)
        rel = m.run(obj, cands2d, random_state=seed)
        assert obj.kept == int(np.argmax(obj.values))  # the noise is negligible at this epsilon
        assert rel.score == pytest.approx(max(obj.values), abs=1e-3)


def test_lipschitz_release_and_space_checks():
    space = SearchSpace({"alpha": Real(0.1, 1.0, log=True)})
    cands = candidate_set(space, 16, random_state=0)
    m = LipschitzRelease(epsilon=1.0, n_iter=5, regularization="alpha", lambda_bounds=(0.1, 1.0), lipschitz=1.0,
                         loss_bound=1.0, n_validation=1000)
    acc = Accountant(Budget(1.0, 0.0))
    rel = m.run(lambda p: -0.3, cands, accountant=acc, random_state=0)
    assert rel.guarantee == "unconditional" and acc.spent == Budget(1.0, 0.0)
    assert rel.noise["score_laplace_scale"] == pytest.approx(m.constants()["laplace_scale"] * (1 + 2**-10))
    bad = candidate_set(SearchSpace({"alpha": Real(0.01, 1.0)}), 8, random_state=0)
    with pytest.raises(InvalidParameterError, match="lambda_bounds"):
        m.run(lambda p: -0.3, bad)
    with pytest.raises(InvalidParameterError, match="single hyperparameter"):
        m.run(lambda p: -0.3, candidate_set(SearchSpace({"C": Real(0.1, 1.0)}), 8, random_state=0))


def test_method_validation(cands2d):
    with pytest.raises(InvalidParameterError, match="'delta' parameter of GPUCB must be in"):
        GPUCB(epsilon=1.0, delta=0.0, n_iter=5)
    with pytest.raises(InvalidParameterError, match="'selection'"):
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="best")
    with pytest.raises(InvalidParameterError, match="'method' parameter must be one of"):
        make_method("tpe")
    with pytest.raises(InvalidParameterError, match="'kernel'"):
        GPUCB(epsilon=1.0, delta=1e-6, n_iter=5, kernel=InputKernel(0.2))
    with pytest.raises(InvalidParameterError, match="objective"):
        GPUCB(epsilon=1.0, delta=1e-6, n_iter=5).run(3.0, cands2d)
    m = make_method("noisy-ucb", epsilon=1.0, delta=1e-6, n_iter=3, score_sensitivity=0.01)
    assert isinstance(m, NoisyUCB)


def test_non_finite_scores_count_as_the_lower_bound(cands2d):
    rel = RandomSearch(epsilon=1e6, n_iter=4, score_sensitivity=1e-6).run(lambda p: float("nan"), cands2d,
                                                                         random_state=0)
    assert rel.score == pytest.approx(0.0, abs=1e-3)


def test_gamma_t_cache_never_serves_another_candidate_set():
    """gamma_T is cached; a different candidate set of the same size must never get a stale value."""
    import gc

    from privtune.gp import gamma_T

    m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=5)
    space = SearchSpace({"x": Real(0.0, 1.0)})
    values = []
    for seed in range(6):
        cands = candidate_set(space, 16, random_state=seed)
        got = m.gamma_T(cands, 5, 0.01)
        assert got == pytest.approx(gamma_T(cands.X, 5, 0.01, kernel=m.kernel).bound, rel=1e-12)
        values.append(got)
        del cands
        gc.collect()  # ids are recycled after collection
    assert len(set(values)) > 1


# ----------------------------------------------------------------------------- numeric failure paths (audit)
def test_a_lengthscale_that_could_overflow_a_covariance_is_refused():
    """With lengthscale (0.2, (1/3) / 1e154) a Matérn column was NaN for candidates two grid steps apart only:
    gp-ucb raised after its charge on one neighbour's path and not on the other's."""
    with pytest.raises(InvalidParameterError, match="lengthscale.*too small"):
        InputKernel([0.2, (1 / 3) / 1e154])
    k = InputKernel([0.2, 1e-40])  # small but safe: every column finite, far pairs exactly 0
    col = k.column(np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0 / 3.0]]), np.array([0.0, 0.0]))
    assert np.all(np.isfinite(col)) and col[0] == 1.0 and col[1] == 0.0


@pytest.mark.parametrize("make", [
    lambda b: GPUCB(epsilon=1.0, delta=1e-3, n_iter=3, score_bounds=b),
    lambda b: NoisyUCB(epsilon=1.0, delta=1e-3, n_iter=3, score_sensitivity=1.0, score_bounds=b),
    lambda b: RandomSearch(epsilon=1.0, n_iter=3, score_sensitivity=1.0, score_bounds=b),
], ids=["gp-ucb", "noisy-ucb", "random"])
def test_score_bounds_near_the_float_limit_are_refused_before_any_charge(make):
    """(1e308, 1.7e308) charged the budget and then released -inf or NaN (the midpoint overflowed)."""
    with pytest.raises(InvalidParameterError, match="must lie within"):
        make((1e308, 1.7e308))


def test_gp_methods_read_their_public_observations_before_paying(cands2d):
    """A malformed public observation (task 0) was refused after the charge."""
    for method in (GPUCB(epsilon=1.0, delta=1e-6, n_iter=3), GPUCBExact(epsilon=1.0, delta=1e-6, n_iter=3, A=0.1,
                                                                            tau=1.0)):
        acc = Accountant(Budget(1.0, 1e-6))
        with pytest.raises(InvalidParameterError, match="task"):
            method.run(bump, cands2d, accountant=acc, random_state=0,
                       public_observations=[(0, cands2d.X[0], 0.5)])
        assert len(acc.entries) == 0


def test_a_negative_squared_pivot_from_rounding_is_floored_not_refused():
    """The incremental Cholesky refused a squared pivot below -1e-8 (rounding with zero noise), after the charge,
    with the pivot in the message: whether it happened followed the raw-score path."""
    from privtune.gp._incremental import IncrementalCholesky
    chol = IncrementalCholesky(n_candidates=2, capacity=4, min_pivot=1e-10)
    chol.extend(np.zeros(0), 1.0, np.array([1.0, 0.5]))
    _, pivot, _ = chol.extend(np.array([1.0]), 1.0 - 1e-6, np.array([1.0, 0.5]))  # s - l'l = -1e-6
    assert pivot == pytest.approx(1e-5) and chol.jitter[-1] == pytest.approx(1e-6 + 1e-10)


def test_lipschitz_fits_once_per_iteration_whatever_the_trajectory():
    # A revisited candidate used to be served from a cache, so the number of objective calls (an estimator's side
    # effects, its output) counted the distinct candidates the secret raw-score trajectory visited.
    space = SearchSpace({"alpha": Real(0.1, 1.0, log=True)})
    cands = candidate_set(space, 16, random_state=0)
    counts = []
    for peak in (0.1, 0.3, 1.0):  # objectives standing for neighbouring data sets: different trajectories
        calls = []

        def objective(p, peak=peak, calls=calls):
            calls.append(p["alpha"])
            return -abs(math.log(p["alpha"] / peak))

        m = LipschitzRelease(epsilon=1.0, n_iter=12, regularization="alpha", lambda_bounds=(0.1, 1.0),
                             lipschitz=1.0, loss_bound=1.0, n_validation=1000)
        m.run(objective, cands, random_state=0)
        counts.append(len(calls))
        assert len(set(calls[:12])) < 12  # the trajectory revisits candidates ...
    assert counts == [12 + len(cands)] * 3  # ... and the number of calls is n_iter + |Lambda| every time


@pytest.mark.parametrize("value", [None, "x", 10**400, -(10**400), complex(1, 1), float("nan")])
def test_a_value_that_is_not_a_real_number_scores_the_lower_bound(value):
    space = SearchSpace({"alpha": Real(0.1, 1.0, log=True)})
    cands = candidate_set(space, 8, random_state=0)
    m = GPUCB(epsilon=1.0, delta=1e-6, n_iter=3, score_bounds=(0.0, 1.0))
    rel = m.run(lambda p: value if p["alpha"] > 0.3 else 0.5, cands, random_state=0)  # never raises
    assert np.isfinite(rel.score)


def test_random_stopping_takes_a_run_event_stated_as_an_rdp_bound(cands2d):
    """A RenyiEvent run (a Renyi filter's cap, e.g. the line-search solver's) is bounded through its stated curve;
    it used to be refused for lack of a dp-accounting event. One it cannot afford is refused, naming it briefly."""
    from privtune.accounting import Accountant, Budget, GaussianEvent, RenyiEvent
    from privtune.accounting.rdp_math import DEFAULT_ORDERS, gaussian_rdp

    orders = tuple(float(o) for o in DEFAULT_ORDERS)
    stated = RenyiEvent(orders=orders, epsilons=tuple(float(e) for e in gaussian_rdp(np.asarray(orders), 40.0)))
    m = RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                     run_event=stated)
    ref = RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                       run_event=GaussianEvent(noise_multiplier=40.0))
    assert m.score_epsilon() == pytest.approx(ref.score_epsilon(), rel=1e-6) and m.score_epsilon() > 0
    Accountant(Budget(1.0, 1e-6)).check(m.selection_event(stated))
    with pytest.raises(InvalidParameterError, match=r"training event \(RenyiEvent, a cap\) alone") as exc:
        RandomSearch(epsilon=1.0, n_iter=5, score_sensitivity=0.01, selection="random-stopping", delta=1e-6,
                     run_event=RenyiEvent(orders=orders, epsilons=tuple(1000 * e for e in stated.epsilons),
                                          label="a cap"))
    assert len(str(exc.value)) < 500  # names the event, does not dump its orders
