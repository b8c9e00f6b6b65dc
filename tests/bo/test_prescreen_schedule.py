"""prescreen's screening schedule: successive halving whose fitting work is bounded by screen_budget (issue 38).

The schedule is a function of public sizes only (the candidate set's and the training rows'); these tests check its
arithmetic against its contract, for many sizes.
"""

from __future__ import annotations

import itertools
import math

import pytest

from privtune.bo.prescreen import SCREEN_BUDGET_PER_KEPT, PrescreenedRandomSearch, ScreeningPlan
from privtune.exceptions import InvalidParameterError


def _method(n_iter=10, **kw) -> PrescreenedRandomSearch:
    return PrescreenedRandomSearch(epsilon=1.0, n_iter=n_iter, score_sensitivity=0.01, **kw)


def _work(plan: ScreeningPlan) -> float:
    """Rows every fit trains on, summed, over the public training rows (computed here independently)."""
    return sum(n * (plan.folds - 1) * r for n, r in plan.rounds) / plan.n_rows


SIZES = list(itertools.product((12, 64, 256, 5000), (40, 228, 1700, 100_000), (1, 10, 30), (2, 3, 5),
                               (None, 50.0, 400.0)))


def test_the_schedule_keeps_its_contract():
    for sizes in SIZES:
        for rounds in (1, 2, 4):
            _check_contract(*sizes, rounds)


def _check_contract(n_cand, n_rows, n_iter, folds, budget, max_rounds):
    m = _method(n_iter, screen_cv=folds, screen_budget=budget, screen_rounds=max_rounds)
    try:
        plan = m.screening_plan(n_cand, n_rows)
    except InvalidParameterError as exc:  # only when even the cheapest screening is over the budget
        keep = min(n_iter, n_cand)
        assert (keep + 1) * (folds - 1) > (budget if budget is not None else SCREEN_BUDGET_PER_KEPT * n_iter)
        assert "screen_budget" in str(exc) and "Nothing was read or spent" in str(exc)
        return
    keep = min(n_iter, n_cand)
    assert plan.kept == keep and plan.budget == (budget if budget is not None else SCREEN_BUDGET_PER_KEPT * n_iter)
    if n_cand <= keep:
        assert plan.rounds == () and plan.fits == 0 and plan.work == 0
        return
    sizes = [n for n, _ in plan.rounds]
    rows = [r for _, r in plan.rounds]
    assert keep < sizes[-1] and sizes[0] <= n_cand and plan.screened == sizes[0]
    assert rows[-1] == n_rows and 1 <= len(plan.rounds) <= max_rounds
    for a, b in zip(sizes, sizes[1:], strict=False):  # each round keeps the best third (rounded up)
        assert b == math.ceil(a / 3)
    for a, b in zip(rows, rows[1:], strict=False):  # on a subsample three times larger
        assert b == (n_rows if b == rows[-1] else 3 * a) or b // 3 == a
    if len(rows) > 1:
        assert rows[0] >= 100  # screen_min_rows
    assert plan.fits == folds * sum(sizes)
    assert plan.work == pytest.approx(_work(plan)) and _work(plan) <= plan.budget * (1 + 1e-9)
    # the most candidates the budget allows: one more in the first round is over it (or over the set)
    if sizes[0] < n_cand:
        for n_rounds in range(1, max_rounds + 1):
            r = [n_rows if i == n_rounds - 1 else n_rows // 3 ** (n_rounds - 1 - i) for i in range(n_rounds)]
            if n_rounds > 1 and r[0] < max(100, folds):
                break
            s = [sizes[0] + 1]
            for _ in range(n_rounds - 1):
                s.append(math.ceil(s[-1] / 3))
            if s[-1] > keep:
                assert sum(n * (folds - 1) * q for n, q in zip(s, r, strict=True)) / n_rows > plan.budget


def test_the_default_is_twice_randomized_search_cv_work():
    """RandomizedSearchCV(n_iter, cv=5) fits n_iter candidates 5 times on 4/5 of the rows: 4 n_iter full fits."""
    for n_iter in (1, 5, 10, 30, 100):
        plan = _method(n_iter).screening_plan(256, 2000)
        assert plan.budget == 2 * 4 * n_iter and plan.work <= 2 * 4 * n_iter
    # with few training rows no subsample is smaller than screen_min_rows: one round on every row
    assert _method(10).screening_plan(64, 228).rounds == ((40, 228),)
    assert _method(10).screening_plan(64, 1700).rounds == ((60, 566), (20, 1700))
    assert _method(10).screening_plan(256, 3000).rounds == ((60, 1000), (20, 3000))  # one halving by default
    assert _method(10, screen_rounds=3).screening_plan(256, 3000).rounds == ((117, 333), (39, 1000), (13, 3000))


def test_the_previous_screening_is_one_setting_away():
    """Before issue 38: max(64, 4 n_iter) candidates, 3 folds on every row; screen_size and a large budget give it."""
    plan = _method(10, screen_size=64, screen_budget=1e9).screening_plan(256, 3000)
    assert plan.rounds == ((64, 3000),) and plan.fits == 192


def test_a_given_screen_size_takes_the_fewest_rounds_the_budget_affords():
    m = _method(10, screen_size=110, screen_budget=80.0, screen_rounds=3)
    plan = m.screening_plan(256, 3000)
    assert plan.rounds == ((110, 333), (37, 1000), (13, 3000)) and plan.work <= 80
    assert _method(10, screen_size=30, screen_budget=80.0).screening_plan(256, 3000).rounds == ((30, 3000),)
    with pytest.raises(InvalidParameterError, match=r"screen_size=200 .* at least .*lower screen_size"):
        _method(10, screen_size=200, screen_budget=20.0).screening_plan(256, 3000)


def test_a_budget_below_the_cheapest_screening_is_refused_with_the_minimum():
    with pytest.raises(InvalidParameterError) as info:
        _method(10, screen_budget=5.0).screening_plan(64, 500, label="method='auto' (resolved to 'prescreen')")
    text = str(info.value)
    assert text.startswith("method='auto' (resolved to 'prescreen')")
    assert "screen_budget']=5" in text and "at least 22" in text  # (10 + 1) kept-plus-one times 2 folds' work


def test_groups_allow_one_round_only():
    plan = _method(10).screening_plan(256, 100_000, max_rounds=1)
    assert len(plan.rounds) == 1 and plan.rounds[0] == (40, 100_000)


@pytest.mark.parametrize("kwargs,match", [({"screen_budget": 0.0}, "screen_budget"),
                                          ({"screen_budget": -1}, "screen_budget"),
                                          ({"halving_factor": 1}, "halving_factor"),
                                          ({"screen_min_rows": 0}, "screen_min_rows"),
                                          ({"screen_rounds": 0}, "screen_rounds")])
def test_parameters_are_checked(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        _method(10, **kwargs)


def test_the_expected_shortfall_follows_the_selection_and_the_scores():
    """What the selection faces: the exponential mechanism over the kept candidates' (public) screening scores."""
    m = _method(3)  # eps 1: eps_sel 0.5, sensitivity 0.01: weight 25 per score unit
    assert m.selection_weight() == pytest.approx(25.0)
    alike = m.expected_shortfall([0.95, 0.95, 0.95])
    assert alike == pytest.approx(0.0, abs=1e-12)
    p = [math.exp(25 * s) for s in (0.9, 0.5, 0.1)]
    exact = 0.9 - sum(pi * s for pi, s in zip(p, (0.9, 0.5, 0.1), strict=True)) / sum(p)
    assert m.expected_shortfall([0.9, 0.5, 0.1]) == pytest.approx(exact)
    cold = PrescreenedRandomSearch(epsilon=1e-5, n_iter=3, score_sensitivity=0.01)  # close to a random pick
    assert cold.expected_shortfall([0.9, 0.5, 0.1]) == pytest.approx(0.4, abs=1e-3)
