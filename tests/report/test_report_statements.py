"""The report says, for each method, how λ̃ was chosen and what was released (issue 38), and renders the same bytes
when it is read back from its JSON (a stored study re-rendered by ``privtune report``)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from privtune import PrivateSearchCV
from privtune.cli import main
from privtune.report import TuningReport
from privtune.report._tables import EVIDENCE_SELECTION, SELECTION_NOT_RELEASABLE
from privtune.space import Real

SPACE = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}

ARGMAX = "argmax of the GP posterior mean"


def _text(page: str) -> str:
    """The visible text of an HTML page (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def _section(md: str, title: str) -> str:
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 1)
    return md[start:end if end >= 0 else None]


@pytest.fixture(scope="module")
def runs(searches, fit):
    """One small seeded search per method and selection (fitting is the slow part; conftest's are reused)."""
    return {
        **searches,  # random, noisy-ucb, gp-ucb
        "random-stopping": fit("random", method_params={"selection": "random-stopping"}),
        "prescreen": fit("prescreen"),
        "gp-ucb-exact": fit("gp-ucb-exact", method_params={"A": 0.1, "tau": 1.0}),
    }


@pytest.fixture(scope="module")
def rendered(runs):
    return {k: (s.report_.to_markdown(), s.report_.to_html()) for k, s in runs.items()}


def _selection(rendered, key):
    md, page = rendered[key]
    return _section(md, "Selection"), _text(page)


def test_prescreen_says_its_choice_is_the_exponential_mechanism_over_the_screened_candidates(runs, rendered):
    """Issue 38: the report claimed 'argmax of the GP posterior mean over released observations', called the
    screened candidates 'data-independent' and had no selection plot."""
    md, page = rendered["prescreen"]
    sel, text = _selection(rendered, "prescreen")
    screen = runs["prescreen"].release_.diagnostics["prescreen"]
    assert ARGMAX not in md and ARGMAX not in text
    assert (f"exponential mechanism over the validation scores of the {runs['prescreen'].n_iter_} candidates the "
            "screening kept") in sel
    assert f"the best {screen['kept']} of {screen['screened']} candidates" in sel
    assert "cross-validation on the public training rows" in sel and "never on a validation row" in sel
    assert SELECTION_NOT_RELEASABLE in sel and SELECTION_NOT_RELEASABLE in text
    # the candidates are the kept ones: never captioned data-independent
    assert "data-independent candidates" not in text
    assert "candidates kept by the screening on the public training rows" in text
    assert "The evaluated candidates are data-independent" not in md
    # the selection figure random has (best-case selectivity), with candidates and budget
    assert page.count("<img") == 3
    assert re.search(r'<section><h2>Selection</h2><img class="plot" alt="selection"', page)


def test_random_states_a_selection_over_data_independent_candidates(rendered):
    sel, text = _selection(rendered, "random")
    assert "exponential mechanism over the validation scores of the 6 evaluated candidates" in sel
    assert "a data-independent random subset of the candidate set" in sel
    assert "Then λ̃'s score alone was released, with Laplace noise" in sel
    assert SELECTION_NOT_RELEASABLE in sel and ARGMAX not in text
    assert "|Λ| = 32 data-independent candidates" in text


def test_random_stopping_states_a_secret_number_of_runs_and_no_exponential_mechanism(rendered):
    md, page = rendered["random-stopping"]
    sel, text = _selection(rendered, "random-stopping")
    assert "best noisy score among a secret number of runs" in sel
    assert "exponential mechanism" not in sel and "exponential mechanism" not in text
    assert SELECTION_NOT_RELEASABLE not in text and ARGMAX not in text
    assert not re.search(r'alt="selection"', page)  # nothing about the selection is releasable: no figure


def test_noisy_ucb_states_post_processing_of_released_observations(rendered):
    sel, text = _selection(rendered, "noisy-ucb")
    assert EVIDENCE_SELECTION in sel and ARGMAX in text
    assert "released once more, with fresh Gaussian noise" in sel
    assert SELECTION_NOT_RELEASABLE not in text


@pytest.mark.parametrize("method,loop", [("gp-ucb", "with Gaussian observation noise added to each score"),
                                         ("gp-ucb-exact", "observed without noise")])
def test_gp_methods_state_the_exponential_mechanism_over_the_posterior_mean(rendered, method, loop):
    sel, text = _selection(rendered, method)
    assert "exponential mechanism over the GP posterior mean μ_T on Λ" in sel and loop in sel
    assert "Neither the trajectory nor μ_T is released" in sel
    assert ARGMAX not in text and SELECTION_NOT_RELEASABLE in text


class _LamLR(ClassifierMixin, BaseEstimator):
    """L2-regularised logistic regression in Kusner's lambda (no intercept), on rows of norm <= 1."""

    def __init__(self, lam: float = 1.0) -> None:
        self.lam = lam

    def fit(self, X, y):
        self.m_ = LogisticRegression(C=1.0 / (self.lam * len(X)), fit_intercept=False).fit(X, y)
        self.classes_ = self.m_.classes_
        return self

    def predict_proba(self, X):
        return self.m_.predict_proba(X)

    def predict(self, X):
        return self.m_.predict(X)


def test_lipschitz_states_the_exponential_mechanism_over_every_candidate():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = (X[:, 0] > 0).astype(int)
    s = PrivateSearchCV(_LamLR(), {"lam": Real(1.0, 10.0)}, method="lipschitz", epsilon=1.0, n_iter=3,
                        n_candidates=8, scoring="neg_log_loss", score_bounds=(-10.0, 0.0), random_state=0,
                        method_params=dict(regularization="lam", lambda_bounds=(1.0, 10.0), lipschitz=1.0,
                                           loss_bound=10.0)).fit(X[:200], y[:200], X_val=X[200:], y_val=y[200:])
    md, page = s.report_.to_markdown(), s.report_.to_html()
    sel = _section(md, "Selection")
    assert "exponential mechanism over the validation scores of every candidate in Λ" in sel and "f_BO" in sel
    assert ARGMAX not in _text(page) and SELECTION_NOT_RELEASABLE in sel


def test_a_report_read_back_from_its_json_renders_the_same_bytes(runs):
    """Issue 38: the Markdown and HTML of a report re-read from its JSON listed tables in another order."""
    for s in runs.values():
        r = s.report_
        back = TuningReport.from_dict(json.loads(r.to_json()))
        assert back.to_markdown() == r.to_markdown()
        assert back.to_html() == r.to_html()


def test_privtune_report_rerenders_a_stored_study_byte_for_byte(data, tmp_path, capsys):
    """The files of the first run (``report_.write``) and ``privtune report``'s re-rendering are identical."""
    X_tr, y_tr, X_val, y_val = data
    # a space whose names are not in sorted order, and an estimator whose parameters are
    space = {"gamma": SPACE["gamma"], "C": SPACE["C"]}
    from sklearn.svm import SVC

    study = tmp_path / "study.sqlite"
    search = PrivateSearchCV(SVC(random_state=0), space, method="prescreen", n_iter=4, n_candidates=16,
                             storage=str(study), study_name="s", random_state=3).fit(X_tr, y_tr, X_val=X_val,
                                                                                      y_val=y_val)
    first = search.report_.write(tmp_path / "first")
    assert main(["report", str(study), "--study", "s", "--json", str(tmp_path / "again.json"),
                 "--markdown", str(tmp_path / "again.md"), "--html", str(tmp_path / "again.html")]) == 0
    capsys.readouterr()
    for fmt, ext in (("json", "json"), ("md", "md"), ("html", "html")):
        assert (tmp_path / f"again.{ext}").read_bytes() == open(first[fmt], "rb").read(), fmt
    md = (tmp_path / "again.md").read_text(encoding="utf-8")
    # hyperparameters in the search space's order, not sorted
    assert re.search(r"\| Released hyperparameters \| gamma = [^|]*, C = ", md)
