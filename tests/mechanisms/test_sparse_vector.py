"""Unit tests of privtune.mechanisms.SparseVector (AboveThreshold)."""

from __future__ import annotations

import copy
import itertools
import pickle
from fractions import Fraction

import numpy as np
import pytest

from privtune.accounting.events import SparseVectorEvent
from privtune.exceptions import InvalidParameterError, SessionClosedError
from privtune.mechanisms import SparseVector, SparseVectorSession

FAR = 1e6  # far beyond any plausible noise at epsilon = 1, sensitivity = 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": -0.5}, r"The 'epsilon' parameter of SparseVector must be a float in the "
                            r"range \(0\.0, inf\)\. Got -0\.5 instead\."),
        ({"epsilon": float("nan")}, r"The 'epsilon' parameter of SparseVector .* Got nan"),
        ({"sensitivity": 0.0}, r"The 'sensitivity' parameter of SparseVector must be a float"),
        ({"sensitivity": float("inf")}, r"The 'sensitivity' parameter of SparseVector"),
        ({"threshold": float("nan")}, r"The 'threshold' parameter of SparseVector must be a "
                                      r"float in the range \(-inf, inf\)\. Got nan instead\."),
        ({"threshold": float("inf")}, r"The 'threshold' parameter of SparseVector .* Got inf"),
        ({"threshold": "0"}, r"The 'threshold' parameter of SparseVector .* of type str"),
        ({"threshold": 1e300}, r"The 'threshold' parameter of SparseVector is too large for the "
                               r"exact noise grid"),
        ({"random_state": 2.0}, r"The 'random_state' parameter of SparseVector"),
    ],
)
def test_bad_parameters_are_refused(kwargs, match):
    params = {"epsilon": 1.0, "sensitivity": 1.0, "threshold": 0.0, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        SparseVector(**params)


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError):
        SparseVector(1.0, 1.0, 0.0)  # type: ignore[misc]


def test_run_stops_consuming_a_generator_at_the_first_above():
    consumed = []

    def queries():
        for i in itertools.count():
            consumed.append(i)
            yield FAR if i == 5 else -FAR

    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=0)
    assert svt.run(queries()) == 5
    assert consumed == [0, 1, 2, 3, 4, 5]


def test_run_without_above_returns_none_after_exhausting():
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=0)
    assert svt.run([-FAR] * 7) is None
    assert svt.run([]) is None
    assert svt.run(iter([FAR])) == 0


def test_run_refuses_non_iterable_without_drawing(generator):
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=generator)
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=r"The 'queries' parameter of "
                                                    r"SparseVector\.run must be an iterable"):
        svt.run(3.0)  # type: ignore[arg-type]
    assert generator.bit_generator.state == before


def test_session_is_one_shot():
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=1)
    session = svt.start()
    assert isinstance(session, SparseVectorSession)
    assert session.test(-FAR) is False
    assert session.test(-FAR) is False
    assert not session.halted and session.n_queries == 2
    assert session.test(FAR) is True
    assert session.halted and session.n_queries == 3
    with pytest.raises(SessionClosedError, match=r"already answered 'above' and is closed"):
        session.test(-FAR)
    with pytest.raises(SessionClosedError, match=r"is closed"):
        session.test(FAR)
    # a new run is a new session with its own threshold noise
    assert svt.start().test(-FAR) is False


def test_session_refuses_bad_values_without_drawing(generator):
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=generator)
    session = svt.start()
    before = generator.bit_generator.state
    for bad, match in [
        (float("nan"), r"The 'value' parameter of SparseVectorSession must be a float in the "
                       r"range \(-inf, inf\)\. Got nan instead\."),
        (float("inf"), r"The 'value' parameter of SparseVectorSession .* Got inf instead"),
        ("x", r"The 'value' parameter of SparseVectorSession .* of type str"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            session.test(bad)
    assert generator.bit_generator.state == before
    assert session.n_queries == 0 and session.test(-FAR) is False  # still usable


def test_session_clips_a_huge_query_instead_of_refusing_it():
    """|q| / g past 2**51 used to raise, a refusal that could depend on the private query; the query is
    clipped to the grid's range (1-Lipschitz: same sensitivity) and answered."""
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=0)
    assert svt.start().test(-1e300) is False
    assert svt.start().test(1e300) is True


def test_session_cannot_be_copied_or_pickled():
    session = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0).start()
    with pytest.raises(TypeError, match=r"cannot be copied or pickled"):
        pickle.dumps(session)
    with pytest.raises(TypeError, match=r"cannot be copied or pickled"):
        copy.copy(session)


def test_session_exposes_only_the_answers():
    session = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0).start()
    public = {name for name in dir(session) if not name.startswith("_")}
    assert public == {"halted", "n_queries", "test"}
    with pytest.raises(AttributeError):
        session.halted = True  # type: ignore[misc]


def test_threshold_noise_is_drawn_once_per_run():
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=5)
    thresholds = {svt.start()._noisy_threshold for _ in range(20)}
    assert len(thresholds) > 15  # fresh draw per run (continuous-like scale 2**k grid steps)
    session = svt.start()
    fixed = session._noisy_threshold
    for _ in range(10):
        session.test(-FAR)
    assert session._noisy_threshold == fixed  # never redrawn within a run


def test_reproducible_and_secure():
    queries = [-1.0, 0.0, 0.5, -0.5, 1.0, 2.0, -2.0]
    a = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.5, random_state=7)
    b = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.5, random_state=7)
    assert [a.run(queries) for _ in range(50)] == [b.run(queries) for _ in range(50)]
    assert a.seeded is True
    secure = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.5)
    assert secure.seeded is False
    assert secure.run([FAR]) == 0


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1.0), (0.05, 3.0), (30.0, 1e-4)])
def test_grid_pays_for_rounding_exactly(epsilon, sensitivity):
    """2 (Delta/g + 2) / 2**k <= epsilon with threshold scale g 2**k = 2 Delta (1+eta)/eps."""
    svt = SparseVector(epsilon=epsilon, sensitivity=sensitivity, threshold=0.0)
    g, k = svt.grid_spacing, svt._k
    assert k >= 10
    assert Fraction(g) * 2**k == Fraction(2.0 * sensitivity * (1 + 2**-10) / epsilon)
    assert 2 * (Fraction(sensitivity) / Fraction(g) + 2) <= Fraction(epsilon) * 2**k


def test_event_and_immutability():
    svt = SparseVector(epsilon=0.4, sensitivity=1.0, threshold=1.0)
    event = svt.privacy_event()
    assert isinstance(event, SparseVectorEvent) and event == SparseVectorEvent(epsilon=0.4)
    assert event.epsilon_delta() == (0.4, 0.0)
    for name in ("threshold", "epsilon", "_k", "other"):
        with pytest.raises(AttributeError):
            setattr(svt, name, 0.0)
    assert (svt.epsilon, svt.sensitivity, svt.threshold) == (0.4, 1.0, 1.0)


def test_values_near_threshold_give_both_answers():
    svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=0.0, random_state=3)
    answers = {svt.start().test(0.0) for _ in range(100)}
    assert answers == {True, False}
    assert np.isfinite(svt.grid_spacing)
