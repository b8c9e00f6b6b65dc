"""prescreen's screening: its cost as planned and bounded, visible (progress, log), public rows only (issue 38)."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import PrivateSearchCV
from privtune.bo.prescreen import PrescreenedRandomSearch
from privtune.exceptions import InvalidParameterError, LowUtilityWarning
from privtune.model_selection._plan import SearchData, SearchPlan, SearchSettings
from privtune.model_selection._prescreen import screen_on_public_rows
from privtune.model_selection._progress import _Progress
from privtune.model_selection._scoring import make_bounded_scorer
from privtune.space import Real, SearchSpace, candidate_set

SPACE = {"C": Real(1e-2, 1e2, log=True)}


class Counting(ClassifierMixin, BaseEstimator):
    """Threshold on feature 1 at log10(C) (best near C = 1); records the row ids (feature 0) of every fit."""

    fits: list[np.ndarray] = []

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def fit(self, X, y):
        Counting.fits.append(np.asarray(X)[:, 0].copy())
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 1] > np.log10(self.C)).astype(int)


def _data(n, seed=0, offset=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    X = np.column_stack([offset + np.arange(n, dtype=float), z])
    return X, (z > 0).astype(int)


def _plan_and_data(estimator, method, scorer, cands, X, y, seeds, fit_params, verbose=0):
    """The (plan, data) screen_on_public_rows reads; the fields it does not read hold neutral values."""
    settings = SearchSettings(epsilon=1.0, delta=0.0, n_iter=4, n_candidates=len(cands),
                              validation_size=None, verbose=verbose, space=cands.space, grid=None, scorer=scorer,
                              method="prescreen", stopping=False)
    plan = SearchPlan(settings=settings, source=None, fit_estimator=estimator, ships=True, scorer=scorer, n_classes=2,
                      n_validation=0, n_train=len(X), sensitivity=0.0, budget=None, train_budget=None, method=method,
                      seeds=seeds, candidates=cands)
    return plan, SearchData(X, y, None, None, fit_params)


def _screen(n_cand, n_rows, n_iter=4, **kw):
    method = PrescreenedRandomSearch(epsilon=1.0, n_iter=n_iter, score_sensitivity=0.01, **kw)
    cands = candidate_set(SearchSpace(SPACE), n_cand, random_state=np.random.default_rng(0))
    X, y = _data(n_rows)
    Counting.fits.clear()
    kept = screen_on_public_rows(*_plan_and_data(Counting(), method, make_bounded_scorer("accuracy"), cands, X, y,
                                                 [1, 2], {}))
    return method, cands, kept


def test_the_screening_runs_exactly_its_plan():
    method, cands, kept = _screen(128, 900, n_iter=4)
    plan = method.screening_plan(len(cands), 900)
    assert (plan.screened, plan.folds) == (64, 2)  # max(128, 12 * 4) = 128 fits: 64 candidates at 2 folds
    assert len(Counting.fits) == plan.fits == 128
    # every fit trains on the public training rows but one fold; a candidate's folds cover every row
    assert all(len(f) == 450 for f in Counting.fits)
    assert set(np.concatenate(Counting.fits[:2]).astype(int)) == set(range(900))
    assert method.screen_info["fits"] == 128 and method.screen_info["screened"] == 64
    assert method.screen_info["candidate_set_size"] == 128 and method.screen_info["budget_fits"] == 128
    # the kept candidates are the best on the training rows (C near 1: threshold near 0)
    assert len(kept) == 4 and max(abs(np.log10(p["C"])) for p in kept.params) < 0.5
    assert method.kept_public_scores is not None and len(method.kept_public_scores) == 4


def test_the_folds_are_the_previous_screenings_with_its_settings():
    """screen_size=64, screen_cv=3 and a budget of 192 give the screening of a50eace (the same subset, folds)."""
    method, cands, kept = _screen(256, 600, n_iter=10, screen_size=64, screen_cv=3, screen_budget=192)
    assert len(Counting.fits) == 192 and all(len(f) == 400 for f in Counting.fits)


def test_no_fit_when_the_candidate_set_is_no_larger_than_the_kept_set():
    method, cands, kept = _screen(4, 300, n_iter=4)
    assert Counting.fits == [] and len(kept) == len(cands) and method.screen_info["fits"] == 0
    assert method.screen_info["screened"] == 0
    assert method.kept_public_scores is None


def test_a_budget_that_cannot_pay_for_the_screening_is_refused_before_any_fit_or_charge():
    X, y = _data(400)
    Xv, yv = _data(200, 1, offset=10_000)
    Counting.fits.clear()
    search = PrivateSearchCV(Counting(), SPACE, method="prescreen", n_iter=5, n_candidates=64, random_state=0,
                             method_params={"screen_budget": 3})
    with pytest.raises(InvalidParameterError, match=r"at least 12 fits, over method_params\['screen_budget'\]=3\. "):
        search.fit(X, y, X_val=Xv, y_val=yv)
    assert Counting.fits == []  # nothing was fitted, no validation row read, nothing charged
    assert not hasattr(search, "ledger_")


def test_the_screening_never_reads_a_validation_row():
    X, y = _data(600)
    Xv, yv = _data(200, 1, offset=10_000)  # validation row ids from 10 000
    Counting.fits.clear()
    search = PrivateSearchCV(Counting(), SPACE, method="prescreen", n_iter=4, n_candidates=128, random_state=0,
                             refit=False)
    search.fit(X, y, X_val=Xv, y_val=yv)
    screen = search.release_.diagnostics["prescreen"]
    assert screen["fits"] == 128 and len(Counting.fits) == 128 + 4
    assert all(f.max() < 10_000 for f in Counting.fits)


def test_the_progress_display_writes_plain_lines_when_not_a_terminal():
    """Issue 38: '\\r' redraws piled up into one 2 KB line in a log file."""
    out = io.StringIO()
    bar = _Progress(200, enabled=True, label="screening", stream=out)
    for done in range(1, 201):
        bar.advance(done, f"{done}/200 fits")
    bar.close()
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert 1 <= len(lines) <= 4 and lines[-1].startswith("[privtune] screening [") and "200/200 fits" in lines[-1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_display_redraws_one_line_on_a_terminal():
    out = _Terminal()
    bar = _Progress(3, enabled=True, stream=out)
    for i in range(1, 4):
        bar.evaluated(i)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1 and text.endswith("\n")
    assert "evaluated 3/3" in text.split("\r")[-1]


def test_the_screening_shows_progress_and_logs_its_schedule(capsys, caplog):
    method = PrescreenedRandomSearch(epsilon=1.0, n_iter=4, score_sensitivity=0.01)
    cands = candidate_set(SearchSpace(SPACE), 64, random_state=np.random.default_rng(0))
    X, y = _data(600)
    with caplog.at_level(logging.INFO, logger="privtune"):
        screen_on_public_rows(*_plan_and_data(Counting(), method, make_bounded_scorer("accuracy"), cands, X, y,
                                              [1, 2], {}, verbose=1))
    plan = method.screening_plan(64, 600)
    err = capsys.readouterr().err
    assert f"{plan.fits}/{plan.fits} fits" in err and "screening on public rows" in err and "\r" not in err
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert f"{plan.fits} fits" in logged and "screening done" in logged and "nothing spent" in logged


def test_the_warning_judges_the_candidates_the_selection_faces():
    """Issue 38: LowUtilityWarning fired at eps = 0.1 where the kept candidates were all within a point."""
    method = PrescreenedRandomSearch(epsilon=0.1, n_iter=10, score_sensitivity=1 / 171)
    cands = candidate_set(SearchSpace(SPACE), 10, random_state=np.random.default_rng(0))
    generic = method.low_utility_warnings(cands, (0.0, 1.0))  # before the screening: as random
    assert any("random pick" in w for w in generic)
    method.kept_public_scores = tuple(np.linspace(0.95, 0.965, 10))  # screened: all within 1.5 points
    assert method.low_utility_warnings(cands, (0.0, 1.0)) == []
    method.kept_public_scores = tuple(np.linspace(0.6, 0.96, 10))  # screened, but far apart
    (text,) = method.low_utility_warnings(cands, (0.0, 1.0))
    assert "the 10 candidates the screening kept" in text and "0.6 to 0.96" in text
    # at a real budget the same spread costs little: no warning
    method = PrescreenedRandomSearch(epsilon=3.0, n_iter=10, score_sensitivity=1 / 171)
    method.kept_public_scores = tuple(np.linspace(0.6, 0.96, 10))
    assert method.low_utility_warnings(cands, (0.0, 1.0)) == []


def test_no_low_utility_warning_for_the_default_where_the_kept_candidates_score_alike():
    """The issue's case: breast cancer, eps = 0.1, the default method. Needs PrivateSearchCV to judge prescreen's
    selection after its (free) screening (see the screening's kept_public_scores)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.svm import SVC

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    space = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1e-1, log=True)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = PrivateSearchCV(SVC(), space, epsilon=0.1, n_iter=10, validation_size=0.3, random_state=0).fit(X, y)
    assert s.method_ == "prescreen"
    assert not [w for w in caught if issubclass(w.category, LowUtilityWarning)]
    # the random method at the same budget is warned: its selection faces data-independent candidates
    with pytest.warns(LowUtilityWarning, match="random pick"):
        PrivateSearchCV(SVC(), space, method="random", epsilon=0.1, n_iter=10, validation_size=0.3,
                        random_state=0).fit(X, y)


class Sleepy(Counting):
    """Counting, and every fit takes at least 2 ms (a lower bound on the time the fits take)."""

    def fit(self, X, y):
        import time

        time.sleep(0.002)
        return super().fit(X, y)


def test_search_time_covers_the_screening():
    """Issue 38: search_time_ (and the progress bar) showed 5 s of a 122 s fit: the screening was left out."""
    X, y = _data(600)
    Xv, yv = _data(200, 1, offset=10_000)
    Counting.fits.clear()
    search = PrivateSearchCV(Sleepy(), SPACE, method="prescreen", n_iter=4, n_candidates=64, random_state=0,
                             refit=False).fit(X, y, X_val=Xv, y_val=yv)
    screening = search.release_.diagnostics["prescreen"]["fits"]
    assert screening > 4 and len(Counting.fits) == screening + 4  # the screening, then the 4 candidates' fits
    assert search.search_time_ >= 0.002 * len(Counting.fits)  # every fit's sleep is inside search_time_


def test_prescreen_warns_after_its_free_screening_and_before_any_validation_row():
    """When the kept candidates differ and the selection is close to a random pick, the warning still comes before
    the first validation row is read (the screening reads public rows only)."""
    X, y = _data(600)
    Xv, yv = _data(200, 1, offset=10_000)
    first_validation = []  # how many warnings had been issued when a validation row was first predicted

    class Watch(Counting):
        def predict(self, X):
            if np.asarray(X)[:, 0].min() >= 10_000 and not first_validation:
                first_validation.append(len(caught))  # the list the warnings are recorded in (below)
            return super().predict(X)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivateSearchCV(Watch(), SPACE, method="prescreen", epsilon=0.02, n_iter=12, n_candidates=16,
                        random_state=0, refit=False).fit(X, y, X_val=Xv, y_val=yv)
    low = [i for i, w in enumerate(caught) if issubclass(w.category, LowUtilityWarning)]
    assert low and "the screening kept" in str(caught[low[0]].message)
    assert first_validation and low[0] < first_validation[0]
