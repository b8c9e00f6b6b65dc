"""The ``privtune`` command line: tune, budget, report and demo, in process and through the console script."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import BASE_CONFIG, write_config, write_csv

from privtune.accounting import SQLiteLedger
from privtune.cli import main
from privtune.config import BUNDLED_DATASETS, ConfigError, load_config, public_sizes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "configs"
SCRIPT = Path(sys.executable).with_name("privtune")


def _ledger_len(path: Path, study: str) -> int:
    led = SQLiteLedger(str(path), study=study)
    try:
        return len(list(led.entries()))
    finally:
        led.close()


def _studies(path: Path) -> list[str]:
    if not path.exists():
        return []
    with sqlite3.connect(path) as conn:
        try:
            return [r[0] for r in conn.execute("SELECT name FROM privtune_studies")]
        except sqlite3.OperationalError:
            return []


# -- tune ---------------------------------------------------------------------------------------------
def test_tune_end_to_end_then_resume_spends_nothing(small_config, capsys):
    d = small_config.parent
    assert main(["tune", str(small_config), "--quiet"]) == 0
    out = capsys.readouterr().out
    for piece in ("released parameters: svc__C = ", "released accuracy: ", "selection", "score_release",
                  "total: epsilon = 1", "guarantee: unconditional", "seeded (reproducible, not for release)",
                  "charges made by this run: 2", "report (html):", str(d / "out" / "report.json")):
        assert piece in out, (piece, out)
    for name in ("report.json", "report.html", "report.md"):
        assert (d / "out" / name).stat().st_size > 0
    rep = json.loads((d / "out" / "report.json").read_text())
    assert rep["method"] == "random" and rep["guarantee"]["label"] == "unconditional"
    assert rep["budget"]["spent"]["overall"]["epsilon"] == pytest.approx(1.0)
    assert "<html" in (d / "out" / "report.html").read_text().lower()
    study = d / "study.sqlite"
    assert _studies(study) == ["small"]  # study_name defaults to the config file's stem
    n = _ledger_len(study, "small")
    assert n == 2

    # a completed study is refused without --resume, and loaded without spending with it
    assert main(["tune", str(small_config), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "storage.study_name" in err and "--resume" in err
    assert main(["tune", str(small_config), "--quiet", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "charges made by this run: 0" in out and "nothing new spent" in out
    assert _ledger_len(study, "small") == n


@pytest.mark.parametrize("method, timed", [("random", True), ("gp-ucb", False)])
def test_tune_prints_its_time_only_where_the_amount_of_work_is_public(small_config, capsys, method, timed):
    """gp-ucb's work follows its raw-score path: no wall-clock time is printed for it (audit finding)."""
    path = write_config(small_config.parent, method=method)
    assert main(["tune", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert ("finished in" in out) is timed
    assert timed or "finished (no wall-clock time" in out


def test_resume_of_a_missing_study_is_refused(small_config, capsys):
    assert main(["tune", str(small_config), "--quiet", "--resume"]) == 2
    assert "storage.study_name" in capsys.readouterr().err
    assert _studies(small_config.parent / "study.sqlite") == []


def _config_with(tmp_path: Path, old: str, new: str) -> Path:
    text = BASE_CONFIG.format(method="random")
    assert old in text
    return write_config(tmp_path, text.replace(old, new))


BAD = [
    # (replace this, with that, the key the message must name)
    ('[storage]\npath = "study.sqlite"', '[storage]\npath = "study.sqlite"\ncolour = "blue"', "storage.colour"),
    ("epsilon = 1.0", 'epsilon = "one"', "search.epsilon"),
    ("epsilon = 1.0", "epsilon = -1.0", "search.epsilon"),
    ("n_iter = 4", "n_iter = 4.5", "search.n_iter"),
    ('method = "random"', 'method = "bayes"', "search.method"),
    ('bundled = "breast_cancer"', 'train = "missing.csv"\ntarget = "label"', "data.train"),
    ('class = "sklearn.svm.SVC"', 'class = "sklearn.svm.NoSuchSVC"', "estimator.class"),
    ('class = "sklearn.svm.SVC"', 'class = "collections.OrderedDict"', "estimator.class"),
    ('class = "sklearn.svm.SVC"', 'class = "no_such_module.Model"', "estimator.class"),
    ("gamma = {", "gama = {", "search_space.gama"),
    ("low = 0.1, high = 100.0", "low = 100.0, high = 0.1", "search_space.C"),
    ('type = "real", low = 0.1', 'type = "float", low = 0.1', "search_space.C.type"),
    ("[data]", "[data]\nsensitive = \"training\"", "data.sensitive"),
    # the Gaussian phases of noisy-ucb cannot be covered by a budget with delta = 0
    ('method = "random"', 'method = "noisy-ucb"', None),
    ("validation_size = 0.3", "validation_size = 0.003", "data.n_validation"),
    ("n_candidates = 16", "n_candidates = 0", "search.n_candidates"),  # 0 needs a candidate_grid
]


@pytest.mark.parametrize("old,new,key", BAD)
def test_bad_configuration_exits_2_naming_the_key_and_writes_nothing(tmp_path, capsys, old, new, key):
    if key is None:  # noisy-ucb with delta = 0
        path = _config_with(tmp_path, "delta = 1e-6", "delta = 0.0")
        path.write_text(path.read_text().replace('method = "random"', 'method = "noisy-ucb"'))
        key = "search.delta"
    else:
        path = _config_with(tmp_path, old, new)
    assert main(["tune", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert key in err, err
    assert not (tmp_path / "study.sqlite").exists()  # nothing stored, nothing spent
    assert not (tmp_path / "out").exists()


def test_error_message_format(tmp_path):
    path = _config_with(tmp_path, "epsilon = 1.0", 'epsilon = "one"')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert 'search.epsilon: expected a float > 0, got "one"' in str(info.value)


def test_every_problem_is_reported_at_once(tmp_path):
    text = BASE_CONFIG.format(method="random").replace("epsilon = 1.0", 'epsilon = "one"').replace(
        "n_iter = 4", "n_iterations = 4")
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, text))
    assert {"search.epsilon", "search.n_iterations"} <= set(info.value.keys)
    assert "did you mean 'n_iter'" in str(info.value)


def test_over_budget_plan_is_refused_before_any_storage(small_config, capsys, monkeypatch):
    from privtune import PrivateSearchCV
    from privtune.accounting import Budget
    from privtune.exceptions import BudgetExceededError

    def refuse(self, n_validation, n_classes=2, **kwargs):
        raise BudgetExceededError("planned epsilon 2 exceeds the budget epsilon 1", requested=Budget(2.0, 0.0),
                                  ceiling=Budget(1.0, 0.0))

    monkeypatch.setattr(PrivateSearchCV, "privacy_plan", refuse)
    assert main(["tune", str(small_config), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "search.epsilon" in err and "cannot cover" in err
    assert not (small_config.parent / "study.sqlite").exists()


def test_a_training_sensitive_study_is_stored_and_never_run_twice(tmp_path, capsys):
    """Rule 1 for the command line: with sensitive training rows the study file records both roles' charges (it used
    to be silently left out, so running the file again spent the budget again), and the same study is refused on a
    second run and on --resume, spending nothing."""
    from privtune.accounting import SQLiteLedger
    from privtune.storage._sqlite import TRAINING_LEDGER_SUFFIX

    text = BASE_CONFIG.format(method="random").replace(
        'class = "sklearn.svm.SVC"\nparams = { random_state = 0 }  # SVC would otherwise draw from numpy\'s global '
        'RNG\npipeline_scaler = "standard"',
        'class = "privtune.linear_model.DPLogisticRegression"\nparams = { epsilon = 0.1, classes = [0, 1] }').replace(
        'gamma = { type = "real", low = 1e-4, high = 1.0, log = true }\n', "").replace(
        "[data]", '[data]\nsensitive = "both"')
    path = write_config(tmp_path, text)
    assert main(["tune", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "study: 'small' in" in out and "charges made by this run: 3" in out
    store = str(tmp_path / "study.sqlite")

    def lengths():
        return tuple(len(SQLiteLedger(store, study=s).entries()) for s in ("small", "small" + TRAINING_LEDGER_SUFFIX))

    spent = lengths()
    assert spent[0] >= 1 and spent[1] >= 1
    assert main(["tune", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "storage.study_name" in err and "not resumed" in err and "--resume" not in err
    assert main(["tune", str(path), "--quiet", "--resume"]) == 2
    assert "not resumed or reloaded" in capsys.readouterr().err
    assert lengths() == spent
    assert main(["report", store]) == 0
    assert "training:fits" in capsys.readouterr().out
    # storage.enabled = false still runs without a study file (each run then spends again: the user's choice)
    off = write_config(tmp_path, text.replace('path = "study.sqlite"', 'path = "other.sqlite"\nenabled = false'),
                       name="off.toml")
    assert main(["tune", str(off), "--quiet"]) == 0
    assert not (tmp_path / "other.sqlite").exists()


def test_csv_config_from_examples(tmp_path, capsys):
    config = tmp_path / "csv_logistic.toml"
    shutil.copy(EXAMPLES / "csv_logistic.toml", config)
    write_csv(tmp_path / "train.csv", 120, seed=0)
    write_csv(tmp_path / "valid.csv", 60, seed=1)
    assert main(["budget", str(config)]) == 0
    assert "validation size m = 60 (rows of valid.csv)" in capsys.readouterr().out
    assert main(["tune", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "released parameters: logisticregression__C = " in out
    assert (tmp_path / "csv_logistic.report.json").exists() and (tmp_path / "csv_logistic.report.md").exists()
    assert _studies(tmp_path / "csv_logistic.sqlite") == ["csv_logistic"]


def test_public_training_csv_with_a_non_numeric_feature_is_refused_without_showing_the_value(tmp_path, capsys):
    config = tmp_path / "csv_logistic.toml"
    shutil.copy(EXAMPLES / "csv_logistic.toml", config)
    write_csv(tmp_path / "train.csv", 40, seed=0, garbage=True)  # public here: a clear refusal helps
    write_csv(tmp_path / "valid.csv", 20, seed=1)
    assert main(["tune", str(config), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "data.train" in err and "line 2" in err and "???" not in err
    assert not (tmp_path / "csv_logistic.sqlite").exists()


def test_sensitive_csv_rows_are_never_refused_for_their_values(tmp_path, capsys):
    """Rule 7: a sensitive file's odd cell is mapped (NaN feature, a label of its own), and no message points at
    its line or column; the other rows keep their numeric labels (one "?" no longer turns every label into a
    string, which made every validation row miss)."""
    from privtune.config._data import _read_csv

    config = tmp_path / "csv_logistic.toml"
    shutil.copy(EXAMPLES / "csv_logistic.toml", config)
    write_csv(tmp_path / "train.csv", 40, seed=0)
    write_csv(tmp_path / "valid.csv", 20, seed=1, bad_row=3)
    assert main(["tune", str(config), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "???" not in captured.out + captured.err and "line" not in captured.err
    X_val, y_val, _ = _read_csv(tmp_path / "valid.csv", "validation", "label", None, strict=False)
    assert np.isnan(X_val[3]).all() and np.isfinite(np.delete(X_val, 3, axis=0)).all()
    assert y_val[3] == "?" and all(isinstance(v, int) and v in (0, 1) for v in np.delete(y_val, 3))
    text = (tmp_path / "valid.csv").read_text().splitlines()
    text[5] += ",Smith"  # one record with an extra field (an unquoted comma in a value)
    (tmp_path / "valid.csv").write_text("\n".join(text) + "\n")
    X_val, y_val, _ = _read_csv(tmp_path / "valid.csv", "validation", "label", None, strict=False)
    assert np.isnan(X_val[4]).all() and y_val[4] == "" and np.isfinite(X_val[5]).all()
    raw = (tmp_path / "valid.csv").read_bytes().split(b"\n")
    raw[6] = raw[6].replace(b",", b',"', 1)  # a stray quote: csv records would run on to the end of the file
    raw[8] = raw[8][:3] + b"\xff" + raw[8][4:]  # a byte that is not UTF-8
    (tmp_path / "valid.csv").write_bytes(b"\n".join(raw))
    X_val, y_val, _ = _read_csv(tmp_path / "valid.csv", "validation", "label", None, strict=False)
    assert X_val.shape[0] == 20 and public_sizes(load_config(config).data)[0] == 20  # m stays the row count
    assert np.isfinite(X_val[9]).all() and np.isnan(X_val[7]).sum() >= 1  # one record each, nothing else moves
    (tmp_path / "csv_logistic.sqlite").unlink()  # a new study on the edited file
    assert main(["budget", str(config)]) == 0 and main(["tune", str(config), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "0xff" not in captured.out + captured.err and "position" not in captured.err


@pytest.mark.parametrize("cell,label", [("1" * 200_000, "1"),  # a field over the csv module's size limit
                                        ("0.1\r2", "1"),  # a bare carriage return inside an unquoted field
                                        ("0.1", "1e20")])  # an integral label beyond int64
def test_one_sensitive_cell_cannot_crash_or_warn(tmp_path, capsys, recwarn, cell, label):
    """Rule 7: each of these cells in one sensitive row made `privtune tune` end in an uncaught csv.Error (exit 1, no
    study) or print numpy's cast RuntimeWarning, where the neighbour without it ran normally. The record is now
    unreadable (all-NaN features, an empty label) or keeps its float label, and nothing is printed about it."""
    from privtune.config._data import _read_csv

    config = tmp_path / "csv_logistic.toml"
    shutil.copy(EXAMPLES / "csv_logistic.toml", config)
    write_csv(tmp_path / "train.csv", 40, seed=0)
    write_csv(tmp_path / "valid.csv", 20, seed=1)
    lines = (tmp_path / "valid.csv").read_text().split("\n")
    lines[4] = f"{cell},0.2,0.3,{label}"
    (tmp_path / "valid.csv").write_text("\n".join(lines), newline="")
    assert main(["tune", str(config), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "Error" not in captured.err and "RuntimeWarning" not in captured.err
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    X_val, y_val, _ = _read_csv(tmp_path / "valid.csv", "validation", "label", None, strict=False)
    assert X_val.shape[0] == 20 and np.isfinite(np.delete(X_val, 3, axis=0)).all()


def test_a_validation_size_split_types_the_training_labels_from_their_own_entries():
    """One validation label 0.5 (or NaN) made the whole label column float, and a string label of 40 characters
    made it '<U40': the refit on the public training part showed it in classes_ and predict's dtype. Each part
    now gets its own types (row 18 is the odd one; the seed puts it in the validation part)."""
    from privtune.model_selection._config import _SearchConfigMixin

    n, m = 20, 5
    seed = next(s for s in range(1000) if 18 in np.random.default_rng(s).permutation(n)[:m])
    X = np.arange(float(n))[:, None]
    for y, own in ((np.array([0.0, 1.0] * 9 + [0.5, 1.0]), np.dtype(np.int64)),
                   (np.array([0.0, 1.0] * 9 + [np.nan, 1.0]), np.dtype(np.int64)),
                   (np.array(["no", "yes"] * 9 + ["x" * 40, "no"]), np.dtype("<U3"))):
        X_tr, y_tr, X_v, y_v = _SearchConfigMixin._split(X, y, m, np.random.default_rng(seed))
        assert 18.0 in X_v[:, 0] and y_tr.dtype == own, (y.dtype, y_tr.dtype)


def test_parquet_needs_pandas_and_pyarrow(tmp_path, capsys):
    pytest.importorskip("tomllib")
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
        pytest.skip("pandas and pyarrow are installed")
    except ImportError:
        pass
    (tmp_path / "train.parquet").write_bytes(b"PAR1")
    text = BASE_CONFIG.format(method="random").replace('bundled = "breast_cancer"',
                                                         'train = "train.parquet"\ntarget = "label"')
    assert main(["tune", str(write_config(tmp_path, text)), "--quiet"]) == 2
    assert "pandas and pyarrow" in capsys.readouterr().err


# -- budget -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["random", "noisy-ucb"])
def test_budget_equals_privacy_plan(small_config, capsys, method):
    path = write_config(small_config.parent, method=method)
    assert main(["budget", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    cfg = load_config(path)
    m, k, _ = public_sizes(cfg.data)
    assert m == int(0.3 * 569)
    plan = cfg.make_search(storage=False).privacy_plan(m, n_classes=k)
    assert got["phases"] == {p: b.to_dict() for p, b in plan["phases"].items()}
    assert got["total"] == plan["total"].to_dict()
    assert got["noise"] == dict(plan["noise"]) and got["guarantee"] == plan["guarantee"]
    assert main(["budget", str(path)]) == 0
    text = capsys.readouterr().out
    for phase, b in plan["phases"].items():
        assert re.search(rf"{phase}\s+epsilon = {b.epsilon:.6g}, delta = {b.delta:.3g}", text), text
    for name, value in plan["noise"].items():
        assert f"{name}" in text and f"{value:.6g}" in text
    assert f"guarantee: {plan['guarantee']}" in text
    assert not (small_config.parent / "study.sqlite").exists()


def test_budget_reads_no_data_values(tmp_path, capsys, monkeypatch):
    config = tmp_path / "csv_logistic.toml"
    shutil.copy(EXAMPLES / "csv_logistic.toml", config)
    write_csv(tmp_path / "train.csv", 50, seed=0, garbage=True)
    write_csv(tmp_path / "valid.csv", 37, seed=1, garbage=True)  # every value is garbage; the row count is right

    import privtune.config
    import privtune.config._data

    def no_reading(*args, **kwargs):
        raise AssertionError("budget must not read the data")

    monkeypatch.setattr(privtune.config, "load_data", no_reading)
    monkeypatch.setattr(privtune.config._data, "_read_table", no_reading)
    assert main(["budget", str(config), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["n_validation"] == 37
    search = load_config(config).make_search(storage=False)
    assert got["total"] == search.privacy_plan(37)["total"].to_dict()


def test_declared_n_validation_is_used_by_budget_and_checked_by_tune(tmp_path, capsys):
    text = BASE_CONFIG.format(method="random").replace("validation_size = 0.3",
                                                       "validation_size = 0.3\nn_validation = 100")
    path = write_config(tmp_path, text)
    assert main(["budget", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_validation"] == 100
    assert main(["tune", str(path), "--quiet"]) == 2
    assert "data.n_validation" in capsys.readouterr().err
    assert not (tmp_path / "study.sqlite").exists()


def test_bundled_sizes_match_the_loaders():
    from sklearn import datasets

    for loader, n, k in BUNDLED_DATASETS.values():
        _, y = getattr(datasets, loader)(return_X_y=True)
        assert (len(y), len(set(y.tolist()))) == (n, k)


def test_example_configs_are_valid():
    for path in sorted(EXAMPLES.glob("*.toml")):
        if "csv" in path.name:
            continue  # its CSV files are generated by test_csv_config_from_examples
        cfg = load_config(path)
        assert cfg.search.epsilon > 0


# -- report -------------------------------------------------------------------------------------------
def test_report_rerenders_a_stored_study(small_config, capsys):
    d = small_config.parent
    assert main(["tune", str(small_config), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(d / "study.sqlite")]) == 0
    md = capsys.readouterr().out
    assert "Guarantee: unconditional" in md and "selection" in md
    out = d / "rerender"
    assert main(["report", str(d / "study.sqlite"), "--study", "small", "--json", str(out / "r.json"),
                 "--html", str(out / "r.html"), "--markdown", str(out / "r.md")]) == 0
    original = json.loads((d / "out" / "report.json").read_text())
    again = json.loads((out / "r.json").read_text())
    assert again == original  # the stored report is the whole report: candidates, environment and all
    assert "<html" in (out / "r.html").read_text().lower() and (out / "r.md").stat().st_size > 0

    # a second study in the file: listed when none is named
    second = write_config(d, name="second.toml")
    assert main(["tune", str(second), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(d / "study.sqlite")]) == 0
    listing = capsys.readouterr().out
    assert "small" in listing and "second" in listing and "--study" in listing
    assert main(["report", str(d / "study.sqlite"), "--json", str(out / "x.json")]) == 2
    assert main(["report", str(d / "study.sqlite"), "--study", "nope"]) == 2
    assert main(["report", str(d / "missing.sqlite")]) == 2
    assert not (d / "missing.sqlite").exists()


# -- demo ---------------------------------------------------------------------------------------------
def test_demo_split_never_reads_labels():
    """The demo's split used stratify=y: which rows became public training rows depended on the sensitive
    validation labels (found by an audit). Any change of labels now leaves every part's rows where they were."""
    from privtune.cli import _demo_split

    X = np.arange(400, dtype=float).reshape(200, 2)
    y = (np.arange(200) % 3 == 0).astype(int)
    parts = _demo_split(X, y)
    flipped = _demo_split(X, 1 - y)
    for a, b in zip(parts[:3], flipped[:3], strict=True):
        assert np.array_equal(a, b)
    assert sum(len(p) for p in parts[:3]) == 200


def test_demo_writes_study_and_report(tmp_path, capsys):
    out = tmp_path / "demo"
    args = ["demo", "--quiet", "--out", str(out), "--n-iter", "5", "--n-candidates", "32"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "released parameters: C = " in text and "report (html):" in text
    assert (out / "report.json").exists() and (out / "report.html").exists()
    assert main(args) == 0  # a second run is a new study in the same file
    names = _studies(out / "demo.sqlite")
    assert len(names) == 2 and all(n.startswith("demo-") for n in names)


# -- the console script -------------------------------------------------------------------------------
@pytest.mark.skipif(not SCRIPT.exists(), reason="the privtune console script is not installed")
def test_console_script(tmp_path):
    config = write_config(tmp_path)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([str(SCRIPT), "tune", str(config)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "released parameters" in proc.stdout
    bad = write_config(tmp_path, BASE_CONFIG.format(method="random").replace("epsilon = 1.0", 'epsilon = "one"'),
                       name="bad.toml")
    proc = subprocess.run([str(SCRIPT), "budget", str(bad)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and 'search.epsilon: expected a float > 0, got "one"' in proc.stderr


def _training_config(tmp_path, epsilon):
    text = BASE_CONFIG.format(method="random").replace(
        'class = "sklearn.svm.SVC"\nparams = { random_state = 0 }  # SVC would otherwise draw from numpy\'s global '
        'RNG\npipeline_scaler = "standard"',
        f'class = "privtune.linear_model.DPLogisticRegression"\nparams = {{ epsilon = {epsilon}, '
        'noise = "laplace", classes = [0, 1] }').replace(
        'gamma = { type = "real", low = 1e-4, high = 1.0, log = true }\n', "").replace(
        "[data]", '[data]\nsensitive = "both"')
    return write_config(tmp_path, text)


def _json_budget(config, capsys):
    assert main(["budget", str(config), "--json"]) == 0
    return capsys.readouterr().out


def test_budget_shows_the_training_fits_and_refuses_what_tune_would_refuse(tmp_path, capsys):
    ok = _training_config(tmp_path, 0.1)
    assert main(["budget", str(ok)]) == 0
    out = capsys.readouterr().out
    assert "training role" in out and "fits" in out and "overall: epsilon" in out  # (the CLI does not refit)
    largest = float(re.search(r"the largest this plan affords is ([0-9.]+)", out).group(1))
    assert 0.2497 <= largest <= 0.25  # 4 Laplace fits within epsilon 1, printed rounded down
    assert json.loads(_json_budget(ok, capsys))["largest_fit_epsilon"] == pytest.approx(0.25, rel=1e-4)
    bad = _training_config(tmp_path, 0.3)  # 4 fits at 0.3 > 1
    assert main(["budget", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "estimator.params.epsilon" in err
    assert "The largest estimator.params.epsilon this plan affords is 0.2499" in err
    assert main(["tune", str(bad), "--quiet"]) == 2
    assert "estimator.params.epsilon" in capsys.readouterr().err


def test_interrupt_prints_one_message_and_exits_130(small_config, capsys, monkeypatch):
    from privtune.model_selection import PrivateSearchCV

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(PrivateSearchCV, "fit", interrupted)
    assert main(["tune", str(small_config), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert err.count("interrupted") == 1 and "--resume" in err and "Traceback" not in err
    assert main(["demo", "--quiet", "--out", str(small_config.parent / "demo")]) == 130
    assert capsys.readouterr().err.count("interrupted") == 1


def test_a_training_sensitive_study_interrupted_before_its_first_charge_can_be_resumed(tmp_path, capsys,
                                                                                          monkeypatch):
    """Interrupted after its study row exists but before any charge, the study may be resumed (nothing was read
    or spent); once it holds a charge it is refused, and the messages say which case applies."""
    from privtune.model_selection import PrivateSearchCV

    config = _training_config(tmp_path, 0.1)
    real = PrivateSearchCV._fit_search

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(PrivateSearchCV, "_fit_search", interrupted)
    assert main(["tune", str(config), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert err.count("interrupted") == 1 and "not resumed once it holds a charge" in err
    monkeypatch.setattr(PrivateSearchCV, "_fit_search", real)
    assert main(["tune", str(config), "--quiet"]) == 2
    assert "continue it with --resume" in capsys.readouterr().err  # it holds no charge
    assert main(["tune", str(config), "--quiet", "--resume"]) == 0
    assert "charges made by this run: 3" in capsys.readouterr().out
    assert main(["tune", str(config), "--quiet", "--resume"]) == 2
    assert "not resumed or reloaded" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly(small_config, monkeypatch, capfd):
    """``privtune budget CONFIG | head -1``: no BrokenPipeError traceback, exit 141 like a command killed by SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone
    saved = os.dup(1)
    broken = os.fdopen(write_end, "w")  # block-buffered, as stdout into a pipe: the error comes at the flush
    try:
        monkeypatch.setattr(sys, "stdout", broken)
        status = main(["budget", str(small_config)])
        monkeypatch.undo()
        broken.close()  # main() pointed the descriptor at /dev/null: nothing left to fail
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert status == 141
    assert "Traceback" not in capfd.readouterr().err


def test_a_closed_pipe_from_the_console_script(small_config):
    script = Path(sys.executable).parent / "privtune"
    for verb in (["budget", str(small_config)], ["demo", "--quiet", "--out", str(small_config.parent / "d")]):
        shell = f"'{script}' {' '.join(verb)} | head -n 1 > /dev/null"
        result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


def test_budget_warns_when_the_release_would_say_next_to_nothing(tmp_path, capsys):
    tiny = write_config(tmp_path, BASE_CONFIG.format(method="random").replace("epsilon = 1.0", "epsilon = 0.05"))
    assert main(["budget", str(tiny)]) == 0
    out = capsys.readouterr().out
    assert "warning: the selection is close to a random pick" in out
    assert main(["budget", str(tiny), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"]
    normal = write_config(tmp_path, name="normal.toml")
    assert main(["budget", str(normal)]) == 0
    assert "warning:" not in capsys.readouterr().out


def test_privtune_warnings_print_as_one_plain_line(tmp_path, capsys):
    import warnings

    from privtune.exceptions import LowUtilityWarning

    tiny = write_config(tmp_path, BASE_CONFIG.format(method="random").replace("epsilon = 1.0", "epsilon = 0.05"))
    with warnings.catch_warnings():
        warnings.simplefilter("always", LowUtilityWarning)  # the test configuration ignores it
        assert main(["tune", str(tiny), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "privtune: warning: PrivateSearchCV: the selection is close to a random pick" in err
    assert "LowUtilityWarning" not in err and ".py:" not in err  # not Python's file:line format


def test_budget_and_tune_use_the_same_class_count(tmp_path, capsys):
    """balanced_accuracy's K: with a split of one table `tune` cannot count classes (the validation labels are
    still in y), so `budget` must not count them either (it printed K = 3 for wine while tune used 2)."""
    from privtune.config import load_data

    path = write_config(tmp_path, """
        [estimator]
        class = "sklearn.svm.SVC"
        params = { random_state = 0 }
        [search_space]
        C = { type = "real", low = 0.1, high = 10.0, log = true }
        [data]
        bundled = "wine"
        validation_size = 0.3
        [search]
        method = "random"
        epsilon = 1.0
        n_iter = 3
        n_candidates = 8
        scoring = "balanced_accuracy"
        min_class_size = 5
        random_state = 0
        """)
    assert main(["budget", str(path), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    cfg = load_config(path)
    X, y, _, _ = load_data(cfg.data)
    search = cfg.make_search(storage=False).fit(X, y)
    assert planned["score_sensitivity"] == search.score_sensitivity_ == pytest.approx(2 / (2 * 5))
    assert planned["n_classes"] == 2


def test_an_unseeded_run_refuses_a_seeded_dp_estimator_on_sensitive_training_rows(tmp_path, capsys):
    """A seed in estimator.params would make the fits' noise on sensitive rows reproducible under a 'secure' label:
    budget and tune refuse it when [search] has no random_state; with one, the run is seeded and allowed."""
    seeded = _training_config(tmp_path, 0.1).read_text().replace(
        "classes = [0, 1] }", "classes = [0, 1], random_state = 0 }")
    assert "random_state = 3" in seeded
    unseeded = write_config(tmp_path, seeded.replace("random_state = 3\n", ""))
    assert main(["budget", str(unseeded)]) == 2
    err = capsys.readouterr().err
    assert "random_state" in err and "secure" in err
    assert main(["tune", str(unseeded), "--quiet"]) == 2
    assert "random_state" in capsys.readouterr().err
    assert main(["budget", str(write_config(tmp_path, seeded))]) == 0


def test_subsampled_tuning_runs_from_a_config_and_budget_plans_it_from_row_counts(tmp_path, capsys):
    """Subsampled tuning's plan depends on the training rows (floor(q n) to tune on): ``budget`` takes n from the
    row counts (the bundled set's size minus the split's validation rows), ``tune`` from the rows it loaded, and
    both plan what the search charges. The command line does not refit (it releases the choice, not a model), so the
    plan is the amplified tuning phase alone."""
    text = _training_config(tmp_path, 0.5).read_text().replace('sensitive = "both"', 'sensitive = "training"')
    text = text.replace('method = "random"', 'method = "random"\nmethod_params = { selection = "random-stopping", '
                        'subsample = 0.25 }')
    config = write_config(tmp_path, text, name="subsampled.toml")
    budget = json.loads(_json_budget(config, capsys))
    assert set(budget["training_phases"]) == {"selection (random stopping)"}
    assert main(["tune", str(config), "--quiet"]) == 0
    capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "secret subset of 99 of 399" in json.dumps(report)  # floor(0.25 * (569 - 170)) of the 399 training rows
