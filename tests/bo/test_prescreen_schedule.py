"""prescreen's screening schedule: at most screen_budget fits, the most candidates first (issue 38).

The schedule is a function of public sizes only (the candidate set's and the training rows'); these tests check its
arithmetic against its contract, for many sizes.
"""

from __future__ import annotations

import itertools
import math

import pytest

from privtune.bo.prescreen import SCREEN_BUDGET_MIN, SCREEN_BUDGET_PER_KEPT, PrescreenedRandomSearch
from privtune.exceptions import InvalidParameterError


def _method(n_iter=10, **kw) -> PrescreenedRandomSearch:
    return PrescreenedRandomSearch(epsilon=1.0, n_iter=n_iter, score_sensitivity=0.01, **kw)


SIZES = list(itertools.product((5, 12, 64, 256, 5000), (1, 10, 30), (None, 2, 3, 5), (None, 20, 100, 1000),
                               (None, 40)))


def _check_contract(n_cand, n_iter, folds, budget, size):
    m = _method(n_iter, screen_cv=folds, screen_budget=budget, screen_size=size)
    keep = min(n_iter, n_cand)
    cap = n_cand if size is None else min(n_cand, size)
    low = folds or 2
    limit = budget if budget is not None else max(SCREEN_BUDGET_MIN, SCREEN_BUDGET_PER_KEPT * n_iter)
    try:
        plan = m.screening_plan(n_cand, 500)
    except InvalidParameterError as exc:
        assert cap > keep  # never refused when there is nothing to screen
        assert (min(cap, limit // low) <= keep) if size is None else (cap * low > limit)
        assert "screen_budget" in str(exc) and "Nothing was read or spent" in str(exc)
        return
    assert plan.kept == min(keep, cap) and plan.budget == limit
    if cap <= keep:
        assert plan.screened == 0 and plan.fits == 0
        return
    assert keep < plan.screened <= cap and plan.fits == plan.folds * plan.screened <= limit
    if size is None:  # the most candidates the budget pays for at the fewest folds
        assert plan.screened == cap or (plan.screened + 1) * low > limit
    else:
        assert plan.screened == cap
    if folds is not None:
        assert plan.folds == folds
    else:  # 2 folds, or 3 when the budget pays for them
        assert plan.folds == (3 if 3 * plan.screened <= limit else 2)


def test_the_schedule_keeps_its_contract():
    for sizes in SIZES:
        _check_contract(*sizes)


def test_the_default_fits_at_most_12_n_iter_and_never_more_than_before():
    """RandomizedSearchCV(n_iter, cv=5) makes 5 n_iter fits; the default screening at most max(128, 12 n_iter)
    (2.4 times from n_iter = 11), and never more than before issue 38 (3 max(64, 4 n_iter) fits)."""
    for n_iter in (1, 5, 10, 11, 16, 20, 30, 100):
        for n_cand in (64, 256, 10_000):
            plan = _method(n_iter).screening_plan(n_cand, 2000)
            assert plan.budget == max(128, 12 * n_iter) and plan.fits <= plan.budget
            assert plan.fits <= 3 * max(64, 4 * n_iter)
            if n_iter >= 11:
                assert plan.fits <= 2.4 * 5 * n_iter
    # part A of benchmarks/privacy_utility/privacy_utility.py: 64 candidates, n_iter 10 and 30: every one, as before
    assert (_method(10).screening_plan(64, 228).screened, _method(10).screening_plan(64, 228).folds) == (64, 2)
    assert (_method(30).screening_plan(64, 228).screened, _method(30).screening_plan(64, 228).folds) == (64, 3)
    # the default candidate set (256) at n_iter = 10 and 20 (PrivateSearchCV's default)
    assert _method(10).screening_plan(256, 20_000).fits == 128  # 64 candidates at 2 folds (before: 64 at 3)
    assert _method(20).screening_plan(256, 20_000).fits == 240  # 120 at 2 (before: 80 at 3)


def test_the_previous_screening_is_one_setting_away():
    """Before issue 38: max(64, 4 n_iter) candidates at 3 folds (192 fits at n_iter = 10)."""
    plan = _method(10, screen_size=64, screen_cv=3, screen_budget=192).screening_plan(256, 3000)
    assert (plan.screened, plan.folds, plan.fits) == (64, 3, 192)


def test_the_folds_never_exceed_the_rows():
    m = _method(1, screen_size=4)  # 12 fits pay for 3 folds of 4 candidates
    assert m.screening_plan(64, 2).folds == 2 and m.screening_plan(64, 3).folds == 3


def test_no_screening_when_the_candidate_set_is_no_larger_than_the_kept_set():
    plan = _method(10).screening_plan(8, 300)
    assert plan.screened == 0 and plan.kept == 8 and plan.fits == 0


def test_a_budget_that_cannot_screen_is_refused_with_the_minimum():
    with pytest.raises(InvalidParameterError) as info:
        _method(10, screen_budget=20).screening_plan(64, 500, label="method='auto' (resolved to 'prescreen')")
    text = str(info.value)
    assert text.startswith("method='auto' (resolved to 'prescreen')")
    assert "at least 22 fits" in text and "screen_budget']=20" in text  # 2 folds of 11 candidates
    with pytest.raises(InvalidParameterError, match=r"screen_size=60 .* at least 180 fits.*lower screen_size"):
        _method(10, screen_size=60, screen_cv=3, screen_budget=150).screening_plan(256, 500)


@pytest.mark.parametrize("kwargs,match", [({"screen_budget": 0}, "screen_budget"),
                                          ({"screen_budget": 2.5}, "screen_budget"),
                                          ({"screen_cv": 1}, "screen_cv"),
                                          ({"keep": 3}, "keep")])
def test_parameters_are_checked(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        _method(10, **kwargs)


def test_the_expected_shortfall_follows_the_selection_and_the_scores():
    """What the selection faces: the exponential mechanism over the kept candidates' (public) screening scores."""
    m = _method(3)  # eps 1: eps_sel 0.5, sensitivity 0.01: weight 25 per score unit
    assert m.selection_weight() == pytest.approx(25.0)
    assert m.expected_shortfall([0.95, 0.95, 0.95]) == pytest.approx(0.0, abs=1e-12)
    p = [math.exp(25 * s) for s in (0.9, 0.5, 0.1)]
    exact = 0.9 - sum(pi * s for pi, s in zip(p, (0.9, 0.5, 0.1), strict=True)) / sum(p)
    assert m.expected_shortfall([0.9, 0.5, 0.1]) == pytest.approx(exact)
    cold = PrescreenedRandomSearch(epsilon=1e-5, n_iter=3, score_sensitivity=0.01)  # close to a random pick
    assert cold.expected_shortfall([0.9, 0.5, 0.1]) == pytest.approx(0.4, abs=1e-3)
    # keep > n_iter: the selection scores a random n_iter of the kept (averaged over subsets)
    wide = PrescreenedRandomSearch(epsilon=1e-5, n_iter=1, score_sensitivity=0.01, keep=3)
    assert wide.expected_shortfall([0.9, 0.5, 0.1]) == pytest.approx(0.4, abs=0.05)
