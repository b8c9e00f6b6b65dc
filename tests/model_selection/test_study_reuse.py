"""A stored study is continued only on request (issue 38): fitting again on a completed study returned its old
release silently, even on other data; the command line asks for --resume, and so does Python (resume=True)."""

import os

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privtune import PrivateSearchCV
from privtune.accounting import SQLiteLedger
from privtune.exceptions import BudgetExceededError, InvalidParameterError
from privtune.space import Real
from privtune.storage import StudyStorage


def _data(seed=0, n=200):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X[:140], y[:140], X[140:], y[140:]


def _search(path, **kw):
    return PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, method="random", n_iter=3,
                           n_candidates=8, random_state=0, storage=path, study_name="s", **kw)


def _charges(path, name="s"):
    led = SQLiteLedger(path, study=name)
    try:
        return len(list(led.entries()))
    finally:
        led.close()


def test_fitting_again_on_a_completed_study_is_refused_without_resume(tmp_path):
    path = str(tmp_path / "s.sqlite")
    X_tr, y_tr, X_v, y_v = _data()
    first = _search(path).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    n = _charges(path)
    other = _data(seed=1)  # other data of the same sizes: the old release used to come back, silently
    with pytest.raises(InvalidParameterError, match=r"already exists .*\(status: complete\).*resume=True") as info:
        _search(path).fit(other[0], other[1], X_val=other[2], y_val=other[3])
    assert "without reading the data you pass now" in str(info.value) and "Nothing was read or spent" in str(info.value)
    assert _charges(path) == n
    again = _search(path, resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)  # explicit: loaded, nothing spent
    assert again.best_params_ == first.best_params_ and again.best_score_ == first.best_score_
    assert _charges(path) == n


def test_a_running_study_is_resumed_only_with_resume(tmp_path):
    path = str(tmp_path / "s.sqlite")
    X_tr, y_tr, X_v, y_v = _data()

    class Interrupting(LogisticRegression):
        def fit(self, X, y):
            if os.environ.get("FRAMES_INTERRUPT") and len(Interrupting.calls) == 2:
                raise KeyboardInterrupt
            Interrupting.calls.append(1)
            return super().fit(X, y)

    Interrupting.calls = []
    os.environ["FRAMES_INTERRUPT"] = "1"
    try:
        with pytest.raises(KeyboardInterrupt):
            PrivateSearchCV(Interrupting(), {"C": Real(0.01, 10.0, log=True)}, method="random", n_iter=3,
                            n_candidates=8, random_state=0, storage=path, study_name="s").fit(
                X_tr, y_tr, X_val=X_v, y_val=y_v)
    finally:
        del os.environ["FRAMES_INTERRUPT"]
    assert StudyStorage(path).status("s") == "running"
    n = _charges(path)
    assert n > 0
    search = PrivateSearchCV(Interrupting(), {"C": Real(0.01, 10.0, log=True)}, method="random", n_iter=3,
                             n_candidates=8, random_state=0, storage=path, study_name="s")
    with pytest.raises(InvalidParameterError, match=r"\(status: running\).*resume=True"):
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert _charges(path) == n
    done = search.set_params(resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert _charges(path) == n  # random charges its whole plan up front: resuming adds nothing
    assert done.best_params_ is not None


def test_resume_needs_a_study_that_exists_and_a_storage(tmp_path):
    path = str(tmp_path / "none.sqlite")
    X_tr, y_tr, X_v, y_v = _data()
    with pytest.raises(InvalidParameterError, match="there is no study 's' .* to resume"):
        _search(path, resume=True).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert not os.path.exists(path)  # nothing written
    with pytest.raises(InvalidParameterError, match="resume=True needs a stored study"):
        PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, resume=True).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v)
    with pytest.raises(InvalidParameterError, match="'resume' parameter .* must be a bool"):
        _search(path, resume="yes").fit(X_tr, y_tr, X_val=X_v, y_val=y_v)


def test_a_training_sensitive_study_refused_before_its_first_charge_needs_resume_too(tmp_path):
    from privtune.linear_model import DPLogisticRegression

    path = str(tmp_path / "t.sqlite")
    X_tr, y_tr, X_v, y_v = _data()

    def search(**kw):
        return PrivateSearchCV(DPLogisticRegression(epsilon=0.9, classes=[0, 1]), {"C": Real(0.1, 10.0, log=True)},
                               method="random", sensitive="both", n_iter=4, n_candidates=8, storage=path,
                               study_name="s", **kw)

    with pytest.raises(BudgetExceededError):  # the plan cannot be paid: refused after the study row exists
        search().fit(X_tr / 10, y_tr, X_val=X_v / 10, y_val=y_v)
    with pytest.raises(InvalidParameterError, match="holds no charge yet.*resume=True"):
        search().fit(X_tr / 10, y_tr, X_val=X_v / 10, y_val=y_v)
    with pytest.raises(BudgetExceededError):  # started again on request, refused for its plan again
        search(resume=True).fit(X_tr / 10, y_tr, X_val=X_v / 10, y_val=y_v)
    assert _charges(path) == 0
