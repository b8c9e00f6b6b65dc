"""A release method refuses, before any charge, releases it cannot draw or that would saturate (issue 37)."""

import pytest

from privtune.accounting import Accountant, Budget
from privtune.bo import GPUCB, LipschitzRelease, NoisyUCB, RandomSearch
from privtune.exceptions import InvalidParameterError


def _never_called(params):
    raise AssertionError("the objective ran")


@pytest.mark.parametrize("make, match", [
    (lambda: RandomSearch(epsilon=1e-300, n_iter=4, score_sensitivity=0.01), "exact noise grid"),
    (lambda: RandomSearch(epsilon=1e13, n_iter=4, score_sensitivity=0.01), "cannot hold"),
    (lambda: RandomSearch(epsilon=1.0, n_iter=4, score_sensitivity=1e-14), "cannot hold"),
    (lambda: RandomSearch(epsilon=1e-300, n_iter=4, score_sensitivity=0.01, delta=1e-6,
                          selection="random-stopping"), "exact noise grid"),
    (lambda: NoisyUCB(epsilon=1e-6, delta=1e-6, n_iter=4, score_sensitivity=0.01), "exact noise grid"),
    (lambda: GPUCB(epsilon=1e-300, delta=1e-6, n_iter=4), "exact noise grid"),
    (lambda: GPUCB(epsilon=1e155, delta=1e-6, n_iter=4), "cannot hold"),
], ids=["random-tiny", "random-huge", "random-minute-sensitivity", "stopping-tiny", "noisy-ucb-tiny",
        "gp-ucb-tiny", "gp-ucb-huge"])
def test_run_refuses_before_any_charge(cands2d, make, match):
    method = make()
    acc = Accountant(Budget(method.epsilon, method.delta))
    with pytest.raises(InvalidParameterError, match=match):
        method.run(_never_called, cands2d, accountant=acc, random_state=0)
    assert acc.entries == ()


def test_lipschitz_refuses_a_huge_epsilon_before_any_charge():
    from privtune.space import Real, SearchSpace, candidate_set

    cands = candidate_set(SearchSpace({"lam": Real(0.1, 1.0)}), 8, random_state=0)
    method = LipschitzRelease(epsilon=1e15, n_iter=3, regularization="lam", lambda_bounds=(0.1, 1.0),
                              lipschitz=1.0, loss_bound=1.0, n_validation=1000)
    acc = Accountant(Budget(1e15, 0.0))
    with pytest.raises(InvalidParameterError, match="cannot hold"):
        method.run(_never_called, cands, accountant=acc, random_state=0)
    assert acc.entries == ()


def test_an_ordinary_release_is_untouched(cands2d):
    for method in (RandomSearch(epsilon=1.0, n_iter=4, score_sensitivity=0.01),
                   NoisyUCB(epsilon=1.0, delta=1e-6, n_iter=4, score_sensitivity=0.01),
                   GPUCB(epsilon=1.0, delta=1e-6, n_iter=4)):
        method.check_release(cands2d)
