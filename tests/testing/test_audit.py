"""Unit tests of the DP audit helper :mod:`privtune.testing`.

Mechanisms here are small numpy references whose true epsilon is known in
closed form (randomised response, a "leaky" randomised response with a known
delta, the textbook Laplace mechanism), so that the audit can be checked both
for validity (its bound stays below the truth) and for power (it gets close).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from privtune.exceptions import InvalidParameterError
from privtune.testing import (
    AuditResult,
    audit_histograms,
    audit_mechanism,
    clopper_pearson,
    discrete_epsilon,
    epsilon_lower_bound_from_counts,
    hockey_stick_delta,
)

# --------------------------------------------------------------------------- reference mechanisms


def rr_probs(eps: float, k: int, true: int) -> np.ndarray:
    """k-ary randomised response: the true value w.p. e^eps / (e^eps + k - 1)."""
    p = np.full(k, 1.0 / (math.exp(eps) + k - 1))
    p[true] = math.exp(eps) / (math.exp(eps) + k - 1)
    return p


def categorical_sampler(p: np.ndarray, seed: int, values=None):
    rng = np.random.default_rng(seed)
    vals = np.arange(len(p)) if values is None else np.asarray(values, dtype=object)

    def sample(n: int):
        return vals[rng.choice(len(p), size=n, p=p)]

    return sample


def laplace_sampler(value: float, scale: float, seed: int):
    rng = np.random.default_rng(seed)
    return lambda n: value + rng.laplace(scale=scale, size=n)


def leaky_rr_probs(eps: float, delta0: float, true: int) -> np.ndarray:
    """Binary RR that, with probability delta0, outputs 2 + true (a leak): exactly (eps, delta0)-DP."""
    p = np.zeros(4)
    p[:2] = (1 - delta0) * rr_probs(eps, 2, true)
    p[2 + true] = delta0
    return p


def _ok_sampler(n):
    return np.zeros(n)


# --------------------------------------------------------------------------- validation

BAD_EPSILONS = [0, -1.0, math.nan, math.inf, "1", True, None]
BAD_DELTAS = [-0.1, 1.0, 1.5, math.nan, "0"]
BAD_N = [0, 3, 2.5, True, None, "100"]
BAD_CONFIDENCE = [0.0, 1.0, 1.5, math.nan, None]


@pytest.mark.parametrize("epsilon", BAD_EPSILONS)
def test_audit_rejects_bad_epsilon(epsilon):
    with pytest.raises(InvalidParameterError, match="epsilon"):
        audit_mechanism(_ok_sampler, _ok_sampler, epsilon=epsilon, n_samples=100)


@pytest.mark.parametrize("delta", BAD_DELTAS)
def test_audit_rejects_bad_delta(delta):
    with pytest.raises(InvalidParameterError, match="delta"):
        audit_mechanism(_ok_sampler, _ok_sampler, epsilon=1.0, delta=delta, n_samples=100)


@pytest.mark.parametrize("n_samples", BAD_N)
def test_audit_rejects_bad_n_samples(n_samples):
    with pytest.raises(InvalidParameterError, match="n_samples"):
        audit_mechanism(_ok_sampler, _ok_sampler, epsilon=1.0, n_samples=n_samples)


@pytest.mark.parametrize("confidence", BAD_CONFIDENCE)
def test_audit_rejects_bad_confidence(confidence):
    with pytest.raises(InvalidParameterError, match="confidence"):
        audit_mechanism(_ok_sampler, _ok_sampler, epsilon=1.0, n_samples=100, confidence=confidence)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_bins": 1}, "n_bins"),
        ({"max_selected": 0}, "max_selected"),
        ({"selection_fraction": 0.0}, "selection_fraction"),
        ({"selection_fraction": 1.0}, "selection_fraction"),
        ({"output_type": "vector"}, "output_type"),
        ({"random_state": -1}, "random_state"),
        ({"random_state": "seed"}, "random_state"),
        ({"events": [lambda x: x > 0], "outcomes": [0, 1]}, "at most one"),
        ({"events": "x > 0"}, "events"),
        ({"events": []}, "events"),
        ({"events": [1]}, "events"),
        ({"outcomes": []}, "outcomes"),
        ({"outcomes": [0, 0]}, "outcomes"),
        ({"outcomes": ["a"]}, "outcomes"),
        ({"outcomes": 3}, "outcomes"),
        ({"outcomes": [0, 1], "output_type": "continuous"}, "outcomes"),
    ],
)
def test_audit_rejects_bad_options(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        audit_mechanism(_ok_sampler, _ok_sampler, epsilon=1.0, n_samples=100, **kwargs)


def test_validation_happens_before_sampling():
    calls = []

    def sampler(n):
        calls.append(n)
        return np.zeros(n)

    with pytest.raises(InvalidParameterError):
        audit_mechanism(sampler, sampler, epsilon=-1.0, n_samples=100)
    with pytest.raises(InvalidParameterError):
        audit_mechanism(sampler, sampler, epsilon=1.0, n_samples=100, confidence=2.0)
    assert calls == []


@pytest.mark.parametrize(
    "bad_sampler",
    [
        "not callable",
        lambda n: np.zeros(n - 1),  # wrong length
        lambda n: np.zeros((n, 2)),  # vector outputs
        lambda n: 0.0,  # a scalar
        lambda n: np.full(n, np.nan),
        lambda n: np.full(n, np.inf),
        lambda n: np.array(["a"] * n),
        lambda n: np.array([1.5, "a"] * (n // 2), dtype=object),
    ],
)
def test_audit_rejects_bad_sampler_output(bad_sampler):
    with pytest.raises(InvalidParameterError):
        audit_mechanism(bad_sampler, _ok_sampler, epsilon=1.0, n_samples=100, random_state=0)
    with pytest.raises(InvalidParameterError):
        audit_mechanism(_ok_sampler, bad_sampler, epsilon=1.0, n_samples=100, random_state=0)


def test_continuous_outputs_cannot_be_none():
    def with_none(n):
        return np.array([None] + [0.5] * (n - 1), dtype=object)

    with pytest.raises(InvalidParameterError, match="None"):
        audit_mechanism(with_none, with_none, epsilon=1.0, n_samples=100,
                        output_type="continuous", random_state=0)


@pytest.mark.parametrize(
    "event", [lambda x: (x > 0).astype(int), lambda x: np.ones(3, dtype=bool)]
)
def test_events_must_return_boolean_masks(event):
    with pytest.raises(InvalidParameterError, match="boolean"):
        audit_mechanism(_ok_sampler, _ok_sampler, epsilon=1.0, n_samples=100, events=[event])


@pytest.mark.parametrize(
    ("cd", "cp"),
    [([1, 2], [1, 2, 3]), ([1.0, 2.0], [1, 2]), ([-1, 2], [1, 2]), ([0, 0], [1, 2]), ([5], [5]),
     ([[1, 2]], [[1, 2]])],
)
def test_audit_histograms_rejects_bad_counts(cd, cp):
    with pytest.raises(InvalidParameterError):
        audit_histograms(cd, cp, epsilon=1.0)


def test_audit_histograms_rejects_bad_claims():
    with pytest.raises(InvalidParameterError, match="epsilon"):
        audit_histograms([1, 2], [2, 1], epsilon=0.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        audit_histograms([1, 2], [2, 1], epsilon=1.0, delta=1.0)
    with pytest.raises(InvalidParameterError, match="ordered"):
        audit_histograms([1, 2], [2, 1], epsilon=1.0, ordered="yes")


@pytest.mark.parametrize(
    ("k", "n", "alpha"),
    [(1, 0, 0.05), (5, 3, 0.05), (-1, 3, 0.05), (1, 3, 0.0), (1, 3, 1.0), (1.5, 3, 0.05),
     (1, 3, math.nan)],
)
def test_clopper_pearson_rejects_bad_input(k, n, alpha):
    with pytest.raises(InvalidParameterError):
        clopper_pearson(k, n, alpha=alpha)


@pytest.mark.parametrize(
    ("p", "q"),
    [([0.5, 0.5], [0.5, 0.4]), ([1.2, -0.2], [0.5, 0.5]), ([0.5, 0.5], [1.0]), ([], []),
     ([[0.5, 0.5]], [[0.5, 0.5]]), ([np.nan, 1.0], [0.5, 0.5])],
)
def test_exact_helpers_reject_bad_distributions(p, q):
    with pytest.raises(InvalidParameterError):
        discrete_epsilon(p, q)
    with pytest.raises(InvalidParameterError):
        hockey_stick_delta(p, q, epsilon=1.0)


# --------------------------------------------------------------------------- Clopper–Pearson


def test_clopper_pearson_matches_scipy_beta_quantiles():
    n = np.array([1, 2, 10, 57, 1000, 10**6])
    for alpha in (0.2, 0.025, 1e-6):
        for nn in n:
            k = np.unique(np.linspace(0, nn, 9).astype(np.int64))
            lo, hi = clopper_pearson(k, nn, alpha=alpha)
            exp_lo = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), nn - k + 1), 0.0)
            exp_hi = np.where(k < nn, stats.beta.ppf(1 - alpha, k + 1, np.maximum(nn - k, 1)), 1.0)
            np.testing.assert_allclose(lo, exp_lo, rtol=1e-9, atol=1e-300)
            np.testing.assert_allclose(hi, exp_hi, rtol=1e-9, atol=1e-300)
            assert np.all(lo <= k / nn) and np.all(hi >= k / nn)


def test_clopper_pearson_edges_and_broadcasting():
    lo, hi = clopper_pearson(np.array([0, 10]), 10, alpha=0.05)
    assert lo[0] == 0.0 and hi[1] == 1.0
    # Closed forms at the edges: (alpha)^(1/n) and 1 - alpha^(1/n).
    assert hi[0] == pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-12)
    assert lo[1] == pytest.approx(0.05 ** (1 / 10), rel=1e-12)
    lo, hi = clopper_pearson(3, np.array([10, 20, 30]), alpha=0.05)
    assert lo.shape == hi.shape == (3,)


@pytest.mark.parametrize("p", [0.003, 0.1, 0.37, 0.5, 0.93])
@pytest.mark.parametrize("n", [20, 150])
def test_clopper_pearson_exact_coverage(p, n):
    """Coverage computed exactly from the binomial pmf (no simulation): at least 1 - alpha."""
    alpha = 0.05
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, p)
    lo, hi = clopper_pearson(k, n, alpha=alpha)
    assert pmf[lo > p].sum() <= alpha + 1e-12
    assert pmf[hi < p].sum() <= alpha + 1e-12


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 0.0), (0.5, 0.0), (1.0, 0.05)])
def test_epsilon_bound_from_counts_exact_coverage(eps, delta):
    """P[bound > true log((p - delta) / q)] <= 2 alpha, summed exactly over both binomials."""
    n, alpha = 400, 0.05
    q = 0.2
    p = math.exp(eps) * q + delta
    k = np.arange(n + 1)
    kd, kp = np.meshgrid(k, k, indexing="ij")
    joint = np.outer(stats.binom.pmf(k, n, p), stats.binom.pmf(k, n, q))
    b = epsilon_lower_bound_from_counts(kd, n, kp, n, delta=delta, alpha=alpha)
    assert joint[b > eps + 1e-12].sum() <= 2 * alpha
    # ... and the bound is informative: it exceeds eps / 2 with good probability.
    assert joint[b > eps / 2].sum() > 0.3


def test_epsilon_bound_from_counts_values():
    lo, _ = clopper_pearson(700, 1000, alpha=1e-3)
    _, hi = clopper_pearson(250, 1000, alpha=1e-3)
    b = epsilon_lower_bound_from_counts(700, 1000, 250, 1000, alpha=1e-3)
    assert float(b) == pytest.approx(math.log(lo / hi), rel=1e-12)
    b = epsilon_lower_bound_from_counts(700, 1000, 250, 1000, delta=0.1, alpha=1e-3)
    assert float(b) == pytest.approx(math.log((lo - 0.1) / hi), rel=1e-12)
    # No evidence when the lower bound does not exceed delta.
    assert epsilon_lower_bound_from_counts(1, 1000, 0, 1000, delta=0.5, alpha=1e-3) == -np.inf


# --------------------------------------------------------------------------- exact (eps, delta)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("k", [2, 5])
def test_exact_epsilon_of_randomised_response(eps, k):
    p, q = rr_probs(eps, k, 0), rr_probs(eps, k, 1)
    assert discrete_epsilon(p, q) == pytest.approx(eps, rel=1e-12)
    assert hockey_stick_delta(p, q, epsilon=eps) == pytest.approx(0.0, abs=1e-15)
    assert hockey_stick_delta(p, q, epsilon=0.9 * eps) > 1e-6
    # Identical inputs: epsilon 0.
    assert discrete_epsilon(p, p) == 0.0


def test_exact_epsilon_of_leaky_mechanism():
    eps, d0 = 1.0, 0.01
    p, q = leaky_rr_probs(eps, d0, 0), leaky_rr_probs(eps, d0, 1)
    assert discrete_epsilon(p, q) == math.inf
    assert discrete_epsilon(p, q, delta=d0) == pytest.approx(eps, rel=1e-9)
    assert hockey_stick_delta(p, q, epsilon=eps) == pytest.approx(d0, rel=1e-12)
    # A delta below d0 cannot be bought with any finite epsilon.
    assert discrete_epsilon(p, q, delta=d0 / 2) == math.inf


def test_exact_epsilon_and_delta_are_inverse():
    rng = np.random.default_rng(3)
    for _ in range(50):
        p = rng.dirichlet(np.ones(6))
        q = rng.dirichlet(np.ones(6))
        for delta in (0.0, 0.01, 0.2):
            e = discrete_epsilon(p, q, delta=delta)
            assert hockey_stick_delta(p, q, epsilon=e) <= delta + 1e-12
            if e > 1e-9:
                assert hockey_stick_delta(p, q, epsilon=e * (1 - 1e-6)) > delta


# --------------------------------------------------------------------------- audits of references


@pytest.mark.parametrize("k", [2, 4])
def test_randomised_response_known_outcomes_close_to_truth(k):
    """Truth eps = 1 exactly; with 10^6 runs the bound is valid and within 0.05 of it."""
    eps = 1.0
    res = audit_mechanism(categorical_sampler(rr_probs(eps, k, 0), 1),
                          categorical_sampler(rr_probs(eps, k, 1), 2),
                          epsilon=eps, n_samples=10**6, outcomes=range(k), random_state=0)
    assert isinstance(res, AuditResult)
    assert not res.violation
    assert eps - 0.05 < res.epsilon_lower_bound <= eps
    assert res.n_selection == 0 and res.n_evaluation == 10**6
    assert res.output_type == "discrete"
    assert res.worst_set in ("{0}", "{1}", "not {0}", "not {1}")


def test_randomised_response_learnt_outcomes_close_to_truth():
    eps, k = 1.0, 4
    res = audit_mechanism(categorical_sampler(rr_probs(eps, k, 0), 1),
                          categorical_sampler(rr_probs(eps, k, 1), 2),
                          epsilon=eps, n_samples=10**6, random_state=0)
    assert res.output_type == "discrete"
    assert res.n_selection == res.n_evaluation == 500_000
    assert res.n_tests == 8
    assert eps - 0.08 < res.epsilon_lower_bound <= eps


def test_randomised_response_with_understated_epsilon_is_flagged():
    """RR built at eps = 1.3 but claimed at 1.0 is flagged; claimed at 1.3 it passes."""
    p, q = rr_probs(1.3, 3, 0), rr_probs(1.3, 3, 1)
    bad = audit_mechanism(categorical_sampler(p, 5), categorical_sampler(q, 6), epsilon=1.0,
                          n_samples=200_000, outcomes=[0, 1, 2], random_state=0)
    assert bad.violation and bad.epsilon_lower_bound > 1.0
    assert bad.delta_lower_bound > 0.0
    good = audit_mechanism(categorical_sampler(p, 5), categorical_sampler(q, 6), epsilon=1.3,
                           n_samples=200_000, outcomes=[0, 1, 2], random_state=0)
    assert not good.violation and good.delta_lower_bound == 0.0
    assert 1.2 < good.epsilon_lower_bound <= 1.3


def test_delta_claims_on_a_leaky_mechanism():
    """(1, 0.01)-DP exactly: passes the (1, 0.01) claim, fails (1, 0) and (1, 0.002)."""
    eps, d0 = 1.0, 0.01
    sd = categorical_sampler(leaky_rr_probs(eps, d0, 0), 7)
    sp = categorical_sampler(leaky_rr_probs(eps, d0, 1), 8)
    ok = audit_mechanism(sd, sp, epsilon=eps, delta=d0, n_samples=200_000, outcomes=range(4))
    assert not ok.violation
    assert ok.epsilon_lower_bound > 0.9
    sd = categorical_sampler(leaky_rr_probs(eps, d0, 0), 7)
    sp = categorical_sampler(leaky_rr_probs(eps, d0, 1), 8)
    pure = audit_mechanism(sd, sp, epsilon=eps, n_samples=200_000, outcomes=range(4))
    assert pure.violation and pure.epsilon_lower_bound > 3.0
    assert "2" in pure.worst_set or "3" in pure.worst_set  # the leak outcome
    assert pure.delta_lower_bound > 0.005
    sd = categorical_sampler(leaky_rr_probs(eps, d0, 0), 7)
    sp = categorical_sampler(leaky_rr_probs(eps, d0, 1), 8)
    small = audit_mechanism(sd, sp, epsilon=eps, delta=0.002, n_samples=200_000, outcomes=range(4))
    assert small.violation


def test_none_outcome_is_audited():
    """A selection that leaks through 'None' (no selection) is caught, learnt or declared."""
    vals = [0, 1, None]
    p = np.array([0.45, 0.45, 0.10])
    q = np.array([0.49, 0.49, 0.02])  # None is 5x less likely under D': eps = log 5
    for outcomes in (None, [0, 1, None]):
        res = audit_mechanism(categorical_sampler(p, 1, vals), categorical_sampler(q, 2, vals),
                              epsilon=1.0, n_samples=100_000, outcomes=outcomes, random_state=0)
        assert res.violation
        assert "None" in res.worst_set and res.worst_direction == "D"
        assert res.epsilon_lower_bound < math.log(5)


def test_reference_laplace_passes_and_broken_twin_is_flagged():
    ok = audit_mechanism(laplace_sampler(0.0, 1.0, 1), laplace_sampler(1.0, 1.0, 2), epsilon=1.0,
                         n_samples=200_000, random_state=0)
    assert ok.output_type == "continuous"
    assert not ok.violation and 0.85 < ok.epsilon_lower_bound <= 1.0
    bad = audit_mechanism(laplace_sampler(0.0, 0.5, 1), laplace_sampler(1.0, 0.5, 2), epsilon=1.0,
                          n_samples=200_000, random_state=0)
    assert bad.violation and bad.epsilon_lower_bound > 1.8
    assert "VIOLATION" in str(bad) and "no violation" in str(ok)


def test_identical_inputs_give_zero_lower_bound():
    """D = D' in distribution: the true epsilon is 0, and the bound must be 0 on every seed."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        cauchy = rng.standard_cauchy
        res = audit_mechanism(cauchy, cauchy, epsilon=0.01, n_samples=20_000, random_state=seed)
        assert res.epsilon_lower_bound == 0.0
        assert res.delta_lower_bound == 0.0
        assert not res.violation


def test_false_alarm_rate_at_the_truth_is_at_most_alpha():
    """Claim exactly at the truth (binary RR, eps = 1) with confidence 0.8, 300 repetitions.

    Each audit flags a correct claim with probability at most alpha = 0.2; the
    Bonferroni correction makes it far smaller. Under the worst case alpha = 0.2
    the count is Binomial(300, 0.2) (mean 60), so 60 is a lenient ceiling; a bug
    that swapped the lower and upper bounds would flag almost every run.
    """
    eps = 1.0
    rng = np.random.default_rng(11)
    p, q = rr_probs(eps, 2, 0), rr_probs(eps, 2, 1)
    flagged = 0
    for _ in range(300):
        res = audit_mechanism(lambda n: rng.choice(2, size=n, p=p),
                              lambda n: rng.choice(2, size=n, p=q),
                              epsilon=eps, n_samples=3000, confidence=0.8, outcomes=[0, 1])
        flagged += res.violation
    assert flagged <= 60


def test_fixed_events_match_manual_bonferroni_bounds():
    """With fixed events the bound is exactly the max of per-set bounds at alpha / (2 m)."""
    events = {"x >= 1": lambda x: x >= 1.0, "x < 0": lambda x: x < 0.0}
    res = audit_mechanism(laplace_sampler(0.0, 1.0, 1), laplace_sampler(1.0, 1.0, 2), epsilon=1.0,
                          n_samples=50_000, events=events, confidence=0.99)
    x = laplace_sampler(0.0, 1.0, 1)(50_000)
    y = laplace_sampler(1.0, 1.0, 2)(50_000)
    a = 0.01 / (2 * 4)
    bounds = []
    for f in events.values():
        cx, cy = int(f(x).sum()), int(f(y).sum())
        bounds.append(float(epsilon_lower_bound_from_counts(cx, 50_000, cy, 50_000, alpha=a)))
        bounds.append(float(epsilon_lower_bound_from_counts(cy, 50_000, cx, 50_000, alpha=a)))
    assert res.n_tests == 4 and res.output_type == "events"
    assert res.epsilon_lower_bound == pytest.approx(max(bounds), rel=1e-12)
    assert res.worst_set in events
    assert res.count_d == int(events[res.worst_set](x).sum())


def test_audit_histograms_matches_manual_bounds():
    cd, cp = np.array([7310, 2690]), np.array([2690, 7310])
    res = audit_histograms(cd, cp, epsilon=1.0, confidence=0.999)
    a = 0.001 / (2 * 4)  # sets {0} and {1} (their complements coincide), two directions each
    expected = float(epsilon_lower_bound_from_counts(7310, 10_000, 2690, 10_000, alpha=a))
    assert res.n_tests == 4
    assert res.epsilon_lower_bound == pytest.approx(expected, rel=1e-12)
    assert not res.violation and res.output_type == "histogram"
    bad = audit_histograms(cd, cp, epsilon=0.8)
    assert bad.violation


def test_audit_is_deterministic_with_seeds():
    def run(rs):
        return audit_mechanism(laplace_sampler(0.0, 1.0, 1), laplace_sampler(1.0, 1.0, 2),
                               epsilon=1.0, n_samples=20_000, random_state=rs)

    assert run(5) == run(5)
    assert run(np.random.default_rng(5)) == run(np.random.default_rng(5))


def test_result_is_frozen():
    res = audit_histograms([10, 20], [20, 10], epsilon=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.violation = True  # type: ignore[misc]


def test_split_sizes_and_counts_are_consistent():
    res = audit_mechanism(laplace_sampler(0.0, 1.0, 1), laplace_sampler(1.0, 1.0, 2), epsilon=1.0,
                          n_samples=10_001, selection_fraction=0.3, max_selected=5, random_state=0)
    assert res.n_selection == 3000 and res.n_evaluation == 7001
    assert res.n_tests == 5
    assert 0 <= res.count_d <= res.n_evaluation and 0 <= res.count_d_prime <= res.n_evaluation
    assert res.claimed_epsilon == 1.0 and res.claimed_delta == 0.0 and res.confidence == 0.999


def test_an_output_outside_the_declared_outcomes_is_refused():
    """With ``outcomes`` the family is fixed in advance; an undeclared output (5, or None when None is not
    declared) made the kept codes, and so the Bonferroni divisor, depend on the samples (n_tests 12 or 4 with the
    seed). It is now refused."""
    rng = np.random.default_rng(0)
    for bad in (5, None):
        def sample(n, bad=bad):
            out = rng.integers(0, 2, n).astype(object)
            out[0] = bad
            return out
        with pytest.raises(InvalidParameterError, match="not among the declared 'outcomes'"):
            audit_mechanism(sample, sample, epsilon=1.0, n_samples=200, outcomes=[0, 1])
    with_none = audit_mechanism(lambda n: np.array([None] + [0] * (n - 1), dtype=object),
                                lambda n: np.array([1] * n, dtype=object), epsilon=1.0, n_samples=200,
                                outcomes=[0, 1, None])
    assert with_none.violation
