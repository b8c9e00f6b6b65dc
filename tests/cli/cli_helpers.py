"""Helpers of the command-line tests: small, fast configurations written to a temporary directory.

A module of its own (not conftest.py), so that the tests import it by a name no other test folder uses."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

BASE_CONFIG = """
[estimator]
class = "sklearn.svm.SVC"
params = {{ random_state = 0 }}  # SVC would otherwise draw from numpy's global RNG
pipeline_scaler = "standard"

[search_space]
C = {{ type = "real", low = 0.1, high = 100.0, log = true }}
gamma = {{ type = "real", low = 1e-4, high = 1.0, log = true }}

[data]
bundled = "breast_cancer"
validation_size = 0.3

[search]
method = "{method}"
epsilon = 1.0
delta = 1e-6
n_iter = 4
n_candidates = 16
random_state = 3

[storage]
path = "study.sqlite"

[report]
json = "out/report.json"
html = "out/report.html"
markdown = "out/report.md"
"""


def write_config(directory: Path, text: str | None = None, *, name: str = "small.toml",
                 method: str = "random") -> Path:
    """Write a configuration file (the small bundled-data one by default) and return its path."""
    path = directory / name
    path.write_text(textwrap.dedent(text) if text is not None else BASE_CONFIG.format(method=method))
    return path


def write_csv(path: Path, n: int, *, seed: int, garbage: bool = False, bad_row: int | None = None) -> None:
    """A tiny two-class CSV (header x0,x1,x2,label); ``garbage`` fills every value with non-numbers, ``bad_row``
    only that row's."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    lines = ["x0,x1,x2,label"]
    for i, (row, label) in enumerate(zip(X, y, strict=True)):
        bad = garbage or i == bad_row
        lines.append("???,###,!!!,?" if bad else ",".join(f"{v:.6f}" for v in row) + f",{label}")
    path.write_text("\n".join(lines) + "\n")
