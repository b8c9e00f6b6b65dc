"""Unit tests of privtune.mechanisms.Exponential."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtune.accounting.events import ExponentialEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Exponential
from privtune.mechanisms.exponential import _uniform_below
from privtune.utils import check_random_state


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, r"The 'epsilon' parameter of Exponential must be a float in the range "
                           r"\(0\.0, inf\)\. Got 0\.0 instead\."),
        ({"epsilon": float("nan")}, r"The 'epsilon' parameter of Exponential .* Got nan"),
        ({"epsilon": float("inf")}, r"The 'epsilon' parameter of Exponential .* Got inf"),
        ({"sensitivity": -1}, r"The 'sensitivity' parameter of Exponential must be a float in "
                              r"the range \(0\.0, inf\)\. Got -1 instead\."),
        ({"sensitivity": float("nan")}, r"The 'sensitivity' parameter of Exponential"),
        ({"monotonic": "yes"}, r"The 'monotonic' parameter of Exponential must be a bool\. "
                               r"Got 'yes' instead\."),
        ({"monotonic": 1}, r"The 'monotonic' parameter of Exponential must be a bool"),
        ({"random_state": -3}, r"The 'random_state' parameter of Exponential"),
    ],
)
def test_bad_parameters_are_refused(kwargs, match):
    params = {"epsilon": 1.0, "sensitivity": 1.0, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        Exponential(**params)


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError):
        Exponential(1.0, 1.0)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("utilities", "match"),
    [
        ([], r"The 'utilities' parameter of Exponential must not be empty"),
        (np.empty(0), r"The 'utilities' parameter of Exponential must not be empty"),
        ([0.0, float("nan")], r"The 'utilities' parameter of Exponential contains NaN or inf"),
        ([float("inf"), 0.0], r"contains NaN or infinite values"),
        ([[1.0, 2.0]], r"The 'utilities' parameter of Exponential must have 1 dimension\(s\); "
                       r"got 2"),
        (3.0, r"The 'utilities' parameter of Exponential must have 1 dimension"),
        (["a", "b"], r"The 'utilities' parameter of Exponential must be an array of real"),
    ],
)
def test_select_refuses_bad_utilities_without_drawing(generator, utilities, match):
    mech = Exponential(epsilon=1.0, sensitivity=1.0, random_state=generator)
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=match):
        mech.select(utilities)
    with pytest.raises(InvalidParameterError, match=match):
        mech.probabilities(utilities)
    assert generator.bit_generator.state == before


def test_probabilities_match_closed_form():
    u = np.array([0.0, 1.0, 2.5, -3.0])
    for monotonic, factor in ((False, 0.8 / (2 * 2.0)), (True, 0.8 / 2.0)):
        mech = Exponential(epsilon=0.8, sensitivity=2.0, monotonic=monotonic)
        w = np.exp(factor * u)
        np.testing.assert_allclose(mech.probabilities(u), w / w.sum(), rtol=1e-14)
        assert mech.monotonic is monotonic


@pytest.mark.parametrize(
    ("utilities", "expected"),
    [
        ([1e300, -1e300, 1e300], [0.5, 0.0, 0.5]),
        ([1.7e308, 1.7e308], [0.5, 0.5]),
        ([-1.7e308, 1.7e308], [0.0, 1.0]),
        ([-1e300, -1e300, -1e300], [1 / 3, 1 / 3, 1 / 3]),
        ([1e-300, 0.0, -1e-300, 5e-324], [0.25, 0.25, 0.25, 0.25]),
    ],
)
def test_extreme_utilities_are_stable(utilities, expected):
    mech = Exponential(epsilon=1.0, sensitivity=1.0, random_state=0)
    np.testing.assert_allclose(mech.probabilities(utilities), expected, atol=1e-15)
    picks = {mech.select(utilities) for _ in range(200)}
    assert picks == {i for i, p in enumerate(expected) if p > 0}


def test_infinite_weight_factor_selects_among_the_best():
    # epsilon / sensitivity overflows to inf: the mechanism degenerates to argmax (ties uniform)
    mech = Exponential(epsilon=1e300, sensitivity=1e-300, random_state=1)
    u = [0.0, 1.0, 1.0, -5.0]
    np.testing.assert_allclose(mech.probabilities(u), [0.0, 0.5, 0.5, 0.0])
    assert {mech.select(u) for _ in range(100)} == {1, 2}


def test_million_candidates():
    n = 10**6
    rng = np.random.default_rng(0)
    u = rng.normal(size=n)
    mech = Exponential(epsilon=1.0, sensitivity=1.0, random_state=2)
    idx = mech.select(u)
    assert isinstance(idx, int) and 0 <= idx < n
    p = mech.probabilities(u)
    assert p.shape == (n,) and math.isclose(p.sum(), 1.0, rel_tol=1e-12)
    # a single dominant candidate at the very end of the array: weight e^100 vs ~1e6 * e^0.5
    u[-1] = 200.0
    assert mech.select(u) == n - 1
    # a dominant block in the middle, probability ~ 1 - 1e-8
    u = np.zeros(n)
    u[500_000:500_010] = 60.0
    assert all(500_000 <= mech.select(u) < 500_010 for _ in range(5))


def test_single_candidate_and_ties():
    mech = Exponential(epsilon=1.0, sensitivity=1.0, random_state=3)
    assert mech.select([42.0]) == 0
    assert {mech.select([0.0, 0.0, 0.0]) for _ in range(200)} == {0, 1, 2}


def test_reproducible_and_secure():
    u = np.linspace(0, 3, 20)
    a = Exponential(epsilon=1.0, sensitivity=0.5, random_state=11)
    b = Exponential(epsilon=1.0, sensitivity=0.5, random_state=11)
    assert [a.select(u) for _ in range(30)] == [b.select(u) for _ in range(30)]
    assert a.seeded is True
    secure = Exponential(epsilon=1.0, sensitivity=0.5)
    assert secure.seeded is False and 0 <= secure.select(u) < 20


def test_uniform_below_big_totals():
    source = check_random_state(np.random.default_rng(0))
    for total in (1, 2, 2**62, 2**62 + 1, 3 * 2**70 + 5):
        draws = [_uniform_below(total, source) for _ in range(50)]
        assert all(0 <= d < total for d in draws)
    # spread over a total far beyond one limb
    draws = [_uniform_below(2**100, source) for _ in range(200)]
    assert max(draws) > 2**99 and min(draws) < 2**99


def test_event_and_immutability():
    mech = Exponential(epsilon=0.25, sensitivity=1.0)
    event = mech.privacy_event()
    assert isinstance(event, ExponentialEvent) and event == ExponentialEvent(epsilon=0.25)
    assert event.epsilon_delta() == (0.25, 0.0)
    for name in ("epsilon", "monotonic", "_monotonic", "x"):
        with pytest.raises(AttributeError):
            setattr(mech, name, True)


# ------------------------------------------------------------------ no weight floored to zero (issue 10, item 7)
def test_no_candidate_with_a_finite_utility_gets_probability_zero():
    """A weight exp(l) below 2**-62 of the best was floored to 0 on one data set and not on its neighbour
    (an (eps, |Lambda| 2**-62)-DP mechanism). The envelope never is 0 and the acceptance restores exp(l) exactly."""
    from fractions import Fraction

    from privtune.mechanisms.exponential import _ACCEPT_DEN, _ENVELOPE_BITS, _acceptance_numerator, _envelope

    logw = np.array([0.0, -43.6, -50.0, -700.0, -1e6])
    W = _envelope(logw)
    assert (W >= 1).all() and W[0] >= 2**_ENVELOPE_BITS
    for lw, w in zip(logw, W, strict=True):
        k = _acceptance_numerator(float(lw), int(w))
        # W exp(-k / 2**40) is exp(l) 2**61 up to a factor in [exp(-2**-40), 1] (and float error of the logs)
        log_target = lw + _ENVELOPE_BITS * math.log(2)
        log_got = math.log(int(w)) - k / _ACCEPT_DEN
        assert log_target - 2.0**-39 - 1e-9 * max(1.0, abs(lw)) <= log_got <= log_target + 1e-9 * max(1.0, abs(lw))
    assert Fraction(int(W[1])) >= 1  # old code: floor(exp(-43.6) 2**62) = 0
    assert math.floor(math.ldexp(math.exp(-43.6), 62)) == 0


def test_acceptance_is_exercised_and_the_law_is_unchanged():
    """The rejection step leaves the law exactly exp(eps u / (2 Delta)): chi-square on a spread of utilities,
    including one far below the others (alpha = 1e-4, 40 000 draws; a 5 % error in any probability above 0.05 is
    detected with power close to 1)."""
    from scipy import stats

    m = Exponential(epsilon=3.0, sensitivity=0.5, random_state=11)
    u = np.array([0.0, 0.2, 0.4, 0.9, 1.0, -3.0])
    n = 40_000
    counts = np.bincount([m.select(u) for _ in range(n)], minlength=6)
    p = m.probabilities(u)
    assert stats.chisquare(counts, p * n).pvalue > 1e-4
