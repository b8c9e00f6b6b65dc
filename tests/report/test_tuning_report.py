"""TuningReport: exact JSON round trip, renderers, the reproducibility contract and the no-leak property."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import subprocess
import sys
import textwrap

import pytest

from privtune.exceptions import InvalidParameterError
from privtune.model_selection import PrivateSearchCV
from privtune.report import SCHEMA_VERSION, TuningReport
from privtune.report._tables import CONDITIONAL_WARNING, SELECTION_NOT_RELEASABLE, TRAJECTORY_NOT_RELEASABLE

METHODS = ("random", "noisy-ucb", "gp-ucb")


@pytest.fixture(scope="module")
def reports(searches):
    return {m: TuningReport.from_search(s) for m, s in searches.items()}


@pytest.fixture(scope="module")
def pages(reports):
    return {m: r.to_html() for m, r in reports.items()}


# -- serialisation ------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_json_round_trip_is_exact(reports, method):
    r = reports[method]
    text = r.to_json()
    back = TuningReport.from_json(text)
    assert back == r
    assert back.to_json() == text
    assert TuningReport.from_dict(r.to_dict()) == r
    assert hash(back) == hash(r)


def test_json_is_canonical_and_has_no_nan_literals(reports):
    r = dataclasses.replace(reports["random"], release={**reports["random"].to_dict()["release"],
                                                       "diagnostics": {"a": float("nan"), "b": float("inf"),
                                                                       "c": -float("inf"), "d": 0.1}})
    text = r.to_json()
    assert "NaN" not in text and "Infinity" not in text
    assert json.dumps(json.loads(text), sort_keys=True, indent=2) + "\n" == text  # sorted keys
    assert json.loads(text)["release"]["diagnostics"] == {"a": "nan", "b": "inf", "c": "-inf", "d": 0.1}
    back = TuningReport.from_json(text)
    assert back == r and back.to_json() == text
    # floats are written by repr: the shortest text that reads back as the same float
    assert '"d": 0.1' in text


def test_schema_and_sections(reports, searches):
    r = reports["noisy-ucb"]
    s = searches["noisy-ucb"]
    assert r.schema_version == SCHEMA_VERSION == "1.0"
    d = r.to_dict()
    assert d["method"] == "noisy-ucb"
    assert d["release"]["params"] == s.best_params_
    assert d["release"]["score"] == s.release_.score and d["release"]["best_score"] == s.best_score_
    assert d["guarantee"]["label"] == "unconditional"
    assert d["seed_policy"] == {"label": "seeded (reproducible, not for release)", "seeded": True, "random_state": 7}
    assert d["candidates"]["n_candidates"] == len(s.candidates_) and d["candidates"]["seed"] == 7
    assert len(d["candidates"]["points"]) == len(s.candidates_)
    assert d["ledger"] == [e.to_dict() for e in s.ledger_]
    assert set(d["budget"]["by_phase"]) == {"observations", "score_release"}
    assert [h["released_score"] for h in d["history"]] == [h.released_score for h in s.release_.history]
    pk = d["environment"]["packages"]
    assert {"privtune", "numpy", "scipy", "scikit-learn", "joblib", "torch", "gpytorch", "botorch",
            "dp-accounting"} <= set(pk)
    assert pk["numpy"] is not None and d["environment"]["python"]
    # no timing of work on sensitive rows is released (it can depend on a row): only the public refit's
    assert set(d["timings"]) == {"created_utc", "refit_seconds"}
    assert d["search_space"]["C"] == {"type": "Real", "repr": "Real(0.1, 100.0, log=True)", "low": 0.1,
                                      "high": 100.0, "log": True}


def test_report_is_frozen_and_validated(reports):
    r = reports["random"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.method = "gp-ucb"  # type: ignore[misc]
    with pytest.raises(TypeError):
        r.release["score"] = 1.0
    with pytest.raises(InvalidParameterError, match="schema"):
        TuningReport.from_dict({**r.to_dict(), "schema_version": "2.0"})
    with pytest.raises(InvalidParameterError, match="unknown sections"):
        TuningReport.from_dict({**r.to_dict(), "raw_scores": [0.9]})
    with pytest.raises(InvalidParameterError, match="fitted"):
        TuningReport.from_search(PrivateSearchCV(None, {}))


def test_write_creates_the_three_files(reports, tmp_path):
    r = reports["random"]
    paths = r.write(tmp_path / "study")
    assert sorted(paths) == ["html", "json", "md"]
    assert TuningReport.from_json((tmp_path / "study.json").read_text(encoding="utf-8")) == r
    assert (tmp_path / "study.md").read_text(encoding="utf-8") == r.to_markdown()
    assert r.write(tmp_path, formats=("json",)) == {"json": str(tmp_path / "tuning_report.json")}
    with pytest.raises(InvalidParameterError, match="formats"):
        r.write(tmp_path, formats=("pdf",))


# -- Markdown ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_markdown_shows_the_released_values_and_the_label(reports, searches, method):
    md = reports[method].to_markdown()
    s = searches[method]
    from privtune.report._canonical import fmt

    for name, value in s.best_params_.items():  # 4 significant digits for people; the JSON keeps them all
        assert f"{name} = {fmt(value, 4)}" in md
        assert repr(value) not in md or len(repr(value)) <= 6
    assert f"{fmt(s.best_score_, 4)} ± " in md  # the release clipped to the bounds leads, with its noise sd
    if s.best_score_ != s.release_.score:
        assert f"raw release {s.release_.score:.6g}" in md
    assert reports[method].to_dict()["release"]["params"] == {k: v for k, v in s.best_params_.items()}
    assert f"**{s.guarantee_}**" in md and f"**Guarantee: {s.guarantee_}.**" in md
    assert "seeded (reproducible, not for release)" in md and "not for release" in md
    assert "| observations |" in md or "| selection |" in md  # budget per phase table
    assert "## Privacy ledger" in md and "## Utility bounds" in md
    if method == "gp-ucb":
        assert CONDITIONAL_WARNING in md
        assert "holds only under the declared GP prior (Kusner et al. Assumption 1), with probability at least " \
               "1 − δ" in md
        assert "selection_gap" in md and "score_error" in md
        assert TRAJECTORY_NOT_RELEASABLE in md
    else:
        assert CONDITIONAL_WARNING not in md


# -- HTML ------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,n_img", [("noisy-ucb", 4), ("random", 3), ("gp-ucb", 3)])
def test_html_is_self_contained_with_plots(pages, method, n_img):
    page = pages[method]
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "http://" not in page and "https://" not in page
    refs = re.findall(r"""\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page)
    assert refs and all(u.startswith("data:image/png;base64,") for u in refs)
    assert page.count("<img") == n_img == len(refs)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    assert "<style>" in page


def test_html_labels_and_non_releasable_notes(pages):
    assert 'class="badge conditional"' in pages["gp-ucb"] and CONDITIONAL_WARNING in pages["gp-ucb"]
    assert 'class="badge unconditional"' in pages["noisy-ucb"]
    for page in pages.values():
        assert "Seeded — not for release." in page
    assert "the trajectory is not releasable for this method" in pages["gp-ucb"].lower()
    for m in ("random", "gp-ucb"):
        assert html.escape(SELECTION_NOT_RELEASABLE) in pages[m]
    assert html.escape(SELECTION_NOT_RELEASABLE) not in pages["noisy-ucb"]


def test_html_of_a_secure_run_has_no_seed_banner(fit):
    r = TuningReport.from_search(fit("random", random_state=None))
    assert r.seed_policy == {"label": "secure", "seeded": False, "random_state": None}
    assert r.candidates["seed"] is None
    page = r.to_html()
    assert "not for release" not in page and 'class="badge unconditional"' in page


# -- the reproducibility contract ----------------------------------------------------------------
@pytest.mark.parametrize("method", ["random", "noisy-ucb"])
def test_seeded_rerun_is_byte_identical_apart_from_timings(reports, fit, method):
    first = reports[method]
    second = TuningReport.from_search(fit(method))
    d1, d2 = first.to_dict(), second.to_dict()
    differing = {k for k in d1 if d1[k] != d2[k]}
    assert differing <= {"timings"}  # timings are the only section that may differ ...
    assert set(d1["timings"]) == set(d2["timings"])
    assert first.without_timings().to_json() == second.without_timings().to_json()  # ... byte for byte
    assert first.without_timings().to_html() == second.without_timings().to_html()  # plots are deterministic
    assert first.without_timings().to_markdown() == second.without_timings().to_markdown()


def test_rerun_in_another_process_gives_the_same_json(reports):
    code = textwrap.dedent("""
        import sys
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC
        from privtune import PrivateSearchCV
        from privtune.report import TuningReport
        from privtune.space import Real
        X, y = load_breast_cancer(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        X_tr, X_val, y_tr, y_val = train_test_split(X, y, test_size=0.3, random_state=0)
        space = {"C": Real(0.1, 100.0, log=True), "gamma": Real(1e-4, 1.0, log=True)}
        s = PrivateSearchCV(SVC(random_state=0), space, method="random", epsilon=1.0, delta=1e-6, n_iter=6,
                            n_candidates=32, random_state=7).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
        sys.stdout.write(TuningReport.from_search(s).without_timings().to_json())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    here = reports["random"].without_timings().to_json()
    diff = [(a, b) for a, b in zip(proc.stdout.splitlines(), here.splitlines(), strict=False) if a != b][:5]
    assert proc.stdout == here, f"first differing lines (other process, this process): {diff}"


def test_importing_the_report_module_is_light():
    code = ("import sys, privtune.report; bad = [m for m in ('torch', 'matplotlib') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- no raw score leaks ---------------------------------------------------------------------------
SENTINEL = 0.3141592653


@pytest.mark.parametrize("method", METHODS)
def test_raw_scores_never_appear_in_any_rendering(fit, method):
    returned: list[float] = []

    def sentinel_scorer(est, X, y):
        v = SENTINEL + 1e-9 * (len(returned) % 97)  # distinct, recognisable raw values
        returned.append(v)
        return v

    search = fit(method, scoring=sentinel_scorer, score_bounds=(0.0, 1.0))
    assert returned, "the scorer was never called"
    r = TuningReport.from_search(search)
    texts = {"json": r.to_json(), "markdown": r.to_markdown(), "html": r.to_html(),
             "json(no indent)": r.to_json(indent=None)}
    for where, text in texts.items():
        assert "31415926" not in text, f"a raw score's digits appear in the {where}"
        for v in set(returned):
            assert repr(v) not in text and f"{v:.6g}" not in text, f"raw score {v!r} appears in the {where}"


def test_report_leads_with_the_clipped_release_and_warns_when_noise_dwarfs_the_range():
    """Issue 12: a raw -23.455 led the headline, the header named Pipeline, random showed an empty box."""
    pytest.importorskip("matplotlib")
    from sklearn.datasets import load_breast_cancer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from privtune import PrivateSearchCV
    from privtune.report._canonical import fmt
    from privtune.space import Real

    X, y = load_breast_cancer(return_X_y=True)
    search = PrivateSearchCV(make_pipeline(StandardScaler(), SVC(random_state=0)),
                             {"svc__C": Real(0.1, 100, log=True)}, epsilon=0.001, n_iter=5,
                             validation_size=0.3, random_state=5).fit(X, y)
    report = search.report_
    assert 0.0 <= search.best_score_ <= 1.0
    md, page = report.to_markdown(), report.to_html()
    for text in (md, page):
        assert "SVC (Pipeline: StandardScaler → SVC)" in text
        assert "almost no information at this budget" in text
        assert fmt(search.best_score_, 4) in text
    head = page[page.index('<div class="cards">'):page.index("</div></div>", page.index("Released score"))]
    assert fmt(search.best_score_, 4) in head.split("Released score")[1].split('class="n"')[0]  # leads
    assert "Released scores over iterations" not in page  # random releases no trajectory: no empty box
    assert "What this method releases" in page and page.count("data:image/png") >= 2
    assert report.to_dict()["release"]["params"]["svc__C"] == search.best_params_["svc__C"]  # full precision

    generous = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 100, log=True)}, epsilon=5.0, n_iter=5,
                               validation_size=0.5, random_state=5).fit(X, y)
    assert "almost no information" not in generous.report_.to_markdown()


def test_report_is_built_on_first_access_and_kept():
    from sklearn.datasets import load_breast_cancer
    from sklearn.svm import SVC

    from privtune import PrivateSearchCV
    from privtune.space import Real

    X, y = load_breast_cancer(return_X_y=True)
    search = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 100, log=True)}, n_iter=4,
                             validation_size=0.3, random_state=2)
    with pytest.raises(AttributeError, match="not fitted"):
        _ = search.report_
    search.fit(X, y)
    first = search.report_
    assert search.report_ is first  # built once
    assert first.timings["created_utc"] == search._started_utc  # when fit started, not of the access
    search.fit(X, y)
    assert search.report_ is not first  # a new fit, a new report
