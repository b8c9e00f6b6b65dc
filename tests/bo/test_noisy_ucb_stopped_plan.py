"""``noisy-ucb`` stopped early by a callback states (and charges) its whole plan, the proven bound.

A callback sees the released observations, so where it stops is data-dependent. The stopped run is covered by the
plan checked up front (each planned slot holds a mechanism dominated by the planned one; after the stop, a
constant), so the plan's total is a proven bound. The charged prefix (k observations and the final release) is an
odometer reading, not a proven (epsilon, delta) of what was released (Rogers et al. 2016). It used to be what the
ledger, ``Release.spent``, ``privacy_spent_`` and the report stated. The observations not run are now charged at
the stop, as planned (phase ``"observations_not_run"``).
"""

import numpy as np
import pytest
from bo_objectives import bump

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget, compose_events
from privtune.bo import NoisyUCB
from privtune.bo.journal import Journal
from privtune.bo.noisy_ucb import NOT_RUN
from privtune.space import Real

PLAN_PHASES = ["observations"] * 10 + ["score_release"]


def _method():
    return NoisyUCB(epsilon=1.0, delta=1e-6, n_iter=10, score_sensitivity=0.01)


def test_a_stopped_run_charges_and_states_the_whole_plan(cands2d):
    m = _method()
    acc = Accountant(Budget(1.0, 1e-6))
    rel = m.run(bump, cands2d, accountant=acc, random_state=0, callback=lambda r: r.iteration >= 3)
    assert rel.n_iter == 3 and len(rel.history) == 3  # three observations ran
    assert [e.phase for e in acc.entries] == ["observations"] * 3 + [NOT_RUN] * 7 + ["score_release"]
    plan_events = [e for e, _ in m.plan(cands2d)]
    assert [e.event for e in acc.entries] == plan_events == list(rel.events)  # the same events as planned
    total = compose_events(plan_events, delta=1e-6)
    assert acc.spent == total and rel.spent == total
    full = Accountant(Budget(1.0, 1e-6))
    m.run(bump, cands2d, accountant=full, random_state=0)
    assert acc.spent == full.spent  # a stop does not lower the stated bound
    # the odometer reading the run used to state, for the record: strictly less than the proven bound
    prefix = compose_events(plan_events[:3] + plan_events[-1:], delta=1e-6)
    assert prefix.epsilon < 0.9 * total.epsilon


def test_a_stop_at_the_last_iteration_leaves_nothing_unrun(cands2d):
    acc = Accountant(Budget(1.0, 1e-6))
    _method().run(bump, cands2d, accountant=acc, random_state=0, callback=lambda r: r.iteration >= 10)
    assert [e.phase for e in acc.entries] == PLAN_PHASES


class _PreviousReleaseStudy(Journal):
    """A journal holding what a previous privtune release left for a study a callback stopped at iteration 2: two
    released observations, the stop, and a ledger with the final release charged right after them (the process
    died before the release was stored)."""

    def __init__(self, stored):
        super().__init__()
        self._store.update(stored)

    def paid_prefix(self, accountant):
        return list(accountant.entries)


def test_a_study_stopped_by_the_previous_release_resumes_and_charges_the_rest_after_its_final_release(cands2d):
    m = _method()
    first = Journal()
    m.run(bump, cands2d, random_state=0, callback=lambda r: r.iteration >= 2, journal=first)
    stored = {k: v for k, v in first._store.items() if k.startswith(("observation:", "stopped:"))}
    plan = m.plan(cands2d)
    acc = Accountant(Budget(1.0, 1e-6))
    for event, phase in plan[:2] + plan[-1:]:  # the previous release's layout
        acc.spend(event, phase=phase, role="validation")
    rel = m.run(bump, cands2d, accountant=acc, random_state=0, journal=_PreviousReleaseStudy(stored))
    assert [e.phase for e in acc.entries] == ["observations"] * 2 + ["score_release"] + [NOT_RUN] * 8
    total = compose_events([e for e, _ in plan], delta=1e-6)  # the same events in another order: equal to rounding
    assert acc.spent.epsilon == pytest.approx(total.epsilon, rel=1e-12) and acc.spent.delta == total.delta
    assert rel.n_iter == 2


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    return X[:200], y[:200], X[200:], y[200:]


def _search(**kw):
    from sklearn.linear_model import LogisticRegression

    return PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 100.0, log=True)}, method="noisy-ucb",
                           epsilon=1.0, delta=1e-6, n_iter=8, n_candidates=16, random_state=0, **kw)


def test_private_search_cv_stopped_by_a_callback_reports_the_plan_total(tmp_path):
    X_tr, y_tr, X_v, y_v = _data()
    full = _search().fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    stopped = _search(callbacks=[lambda r: r.iteration >= 2]).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert stopped.n_iter_ == 2
    for role in ("validation", "overall"):
        assert stopped.privacy_spent_[role] == full.privacy_spent_[role]
    report = stopped.report_.to_dict()
    assert report["budget"]["spent"]["validation"] == full.report_.to_dict()["budget"]["spent"]["validation"]
    assert list(report["budget"]["by_phase"]) == ["observations", NOT_RUN, "score_release"]
    assert [e["phase"] for e in report["ledger"]] == ["observations"] * 2 + [NOT_RUN] * 6 + ["score_release"]
    assert "observations_not_run" in stopped.report_.to_markdown()
    # a stored study holds the same total, and loading it again spends nothing more
    path = str(tmp_path / "study.sqlite")
    a = _search(callbacks=[lambda r: r.iteration >= 2], storage=path, study_name="s").fit(
        X_tr, y_tr, X_val=X_v, y_val=y_v)
    b = _search(callbacks=[lambda r: r.iteration >= 2], storage=path, study_name="s", resume=True).fit(
        X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert a.privacy_spent_["validation"] == b.privacy_spent_["validation"] == full.privacy_spent_["validation"]
    assert len(b.ledger_) == 9


def test_the_report_says_a_stopped_run_is_charged_its_whole_plan():
    X_tr, y_tr, X_v, y_v = _data()
    stopped = _search(callbacks=[lambda r: r.iteration >= 2]).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    statement = stopped.report_.to_dict()["guarantee"]["statement"]
    assert "stopped" in statement and "whole plan" in statement
    full = _search().fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "stopped" not in full.report_.to_dict()["guarantee"]["statement"]


@pytest.mark.parametrize("stop_at", [1, 5])
def test_the_stop_never_changes_the_events_only_their_phase(cands2d, stop_at):
    m = _method()
    acc = Accountant(Budget(1.0, 1e-6))
    m.run(bump, cands2d, accountant=acc, random_state=1, callback=lambda r: r.iteration >= stop_at)
    assert [e.event for e in acc.entries] == [e for e, _ in m.plan(cands2d)]
