"""Every benchmark suite's smoke mode runs end to end: ``python -m benchmarks <suite> --quick``.

One subprocess per suite, one thread, from the repository root. ``--quick`` runs each script of the suite on tiny
sizes and writes nothing under ``benchmarks/results/``, which the test checks too (the stored results are the
measurements the docs cite). Marked slow: the whole smoke run takes a few minutes.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SUITES = sorted(d.name for d in BENCHMARKS.iterdir() if (d / "__init__.py").is_file())


def _results_snapshot() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((BENCHMARKS / "results").iterdir())}


def test_suites_are_the_six_groups():
    assert SUITES == ["engine", "papers", "privacy_utility", "search", "studies", "trainers"]


def test_list_names_every_script():
    out = subprocess.run([sys.executable, "-m", "benchmarks", "list"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    scripts = [p.stem for d in SUITES for p in (BENCHMARKS / d).glob("*.py") if not p.name.startswith("_")]
    assert len(scripts) == 36
    for name in scripts:
        assert f"  {name} " in out, name


@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_suite_quick_runs_and_writes_no_results(suite):
    before = _results_snapshot()
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "benchmarks", suite, "--quick"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    scripts = [p.stem for p in (BENCHMARKS / suite).glob("*.py") if not p.name.startswith("_")]
    for name in scripts:
        assert re.search(rf"^== {suite}/{name}( [^\n]*)?: ok in ", proc.stdout, re.M), (name, tail)
    assert "FAILED" not in proc.stdout, tail
    assert _results_snapshot() == before, "a --quick run wrote into benchmarks/results/"
