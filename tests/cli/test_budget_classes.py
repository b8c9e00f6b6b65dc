"""``privtune budget`` on a 3-class CSV (issue 38): no "classes = 2" line, and the K it uses with its reason."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import write_config

from privtune.cli import main


def _three_class_csv(path, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.arange(n) % 3
    path.write_text("a,b,label\n" + "".join(f"{r[0]:.4f},{r[1]:.4f},{c}\n" for r, c in zip(X, y, strict=True)))


def _config(tmp_path, data_lines, scoring="balanced_accuracy"):
    return write_config(tmp_path, f"""
        [estimator]
        class = "sklearn.svm.SVC"
        params = {{ random_state = 0 }}
        [search_space]
        C = {{ type = "real", low = 0.1, high = 10.0, log = true }}
        [data]
        train = "train.csv"
        target = "label"
        {data_lines}
        [search]
        method = "random"
        epsilon = 1.0
        n_iter = 3
        n_candidates = 8
        scoring = "{scoring}"
        min_class_size = 5
        random_state = 0
        """)


def test_split_of_a_three_class_csv_says_which_k_and_why(tmp_path, capsys):
    _three_class_csv(tmp_path / "train.csv", 90, 0)
    path = _config(tmp_path, "validation_size = 0.3\nn_classes = 3")
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert "classes = 2" not in out  # was printed as if the data had 2 classes
    line = next(s for s in out.splitlines() if "K = " in s)
    assert "K = 2" in line and "split" in line and "3 classes are not used" in line
    assert main(["budget", str(path), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["n_classes"] == 2  # what tune uses: the figures agree
    assert planned["score_sensitivity"] == pytest.approx(2 / (2 * 5))


def test_separate_validation_file_uses_the_declared_classes(tmp_path, capsys):
    _three_class_csv(tmp_path / "train.csv", 60, 0)
    _three_class_csv(tmp_path / "valid.csv", 30, 1)
    path = _config(tmp_path, 'validation = "valid.csv"\nn_classes = 3')
    assert main(["budget", str(path)]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if "K = " in s)
    assert "K = 3" in line and "data.n_classes" in line


def test_a_score_without_classes_prints_none(tmp_path, capsys):
    _three_class_csv(tmp_path / "train.csv", 90, 0)
    path = _config(tmp_path, "validation_size = 0.3", scoring="accuracy")
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert "classes" not in out
