"""When should ``DPSVC(features="auto")`` take the Taylor map? Its rows-per-column threshold, re-measured (issue 11).

``features="auto"`` takes the deterministic Taylor map when the training set has at least ``c`` rows per column of
it (``TAYLOR_ROWS_PER_FEATURE``), else the random Fourier features. ``c = 20`` was chosen in
``benchmarks/studies/dpsvc_taylor.py`` on fourteen tasks, before the Taylor map had its column balance, its centring,
the 1 000-step cap and the horizon floor. This script measures the two maps side by side on tasks *below* 20 rows per
column (the only ones a lower threshold would change), and reports, for each candidate ``c``, what the default
would gain or lose on the cells whose map it changes. Both maps are public, data-independent maps clipped to the
same declared norm: the guarantee is the same, only accuracy moves.

Groups. ``dev``: the five tasks of ``dp_trainer_defaults.py`` where ``"auto"`` keeps the random features (breast
cancer, digits 0-4 against 5-9, wine, the 3 500-row and the 50-feature synthetic sets) and eighteen synthetic
tasks (``make_classification``, 600 / 1 500 / 3 500 rows, 10 / 30 / 60 features, balanced or 70/30). The
threshold is chosen on them. ``heldout``: tasks made after that choice and never used for it (other generators,
label noise, class separations and sizes).

Protocol: data prepared as in ``dp_trainer_defaults.py`` (standardised, rows scaled to unit L2 norm, 70/30
stratified split); ``DPSVC`` at its defaults but ``features`` in {"fourier", "taylor"} (the Taylor map at the degree
``"auto"`` would give it) and ``gamma`` in {0.3, 1, 3}; per-fit epsilon in {0.1, 0.3, 1, 3, 10} (delta 1e-6);
median test accuracy over noise seeds 0..S-1 (``--seeds``, default 5). Reported per group and candidate ``c``:
the tasks and cells it changes, Taylor minus Fourier over those cells (mean, cells better or worse by more than
one point, worst), the cells where the Taylor map falls to the majority-class rate (within one test row) where
the random features did not, and whether every changed task stays non-decreasing in epsilon.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dpsvc_taylor_threshold.py --group dev|heldout [--seeds 5]
[--jobs 2]``. Writes ``benchmarks/results/dpsvc_taylor_threshold_<group>.json`` and the Markdown table
``benchmarks/results/dpsvc_taylor_threshold.md`` of the groups run so far.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.datasets import (  # noqa: E402
    make_circles,
    make_classification,
    make_gaussian_quantiles,
    make_hastie_10_2,
    make_moons,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import QUICK_HELP, RESULTS, datasets, output_dir, prepare, quick_tasks  # noqa: E402
from privtune.svm import DPSVC  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
GAMMAS = (0.3, 1.0, 3.0)
CANDIDATES = (1.0, 2.0, 4.0, 8.0, 20.0)
CURRENT = 20.0


def dev_tasks():
    """The five nine-task sets where ``"auto"`` keeps the random features, and eighteen synthetic ones."""
    for name, X, y in datasets(False):
        if any(key in name for key in ("breast", "digits", "wine", "5k d=20", "d=50")):
            yield name, X, y
    seed = 100
    for n in (600, 1500, 3500):
        for d in (10, 30, 60):
            for weights in (None, [0.7, 0.3]):
                seed += 1
                X, y = make_classification(n, d, n_informative=max(3, d // 3), weights=weights, random_state=seed)
                yield f"synthetic {n} d={d}{' 70/30' if weights else ''}", X, y


def heldout_tasks():
    """Tasks made after the threshold was chosen on ``dev`` (none used to choose it)."""
    yield "heldout 800 d=8 flip 0.05", *make_classification(800, 8, n_informative=5, flip_y=0.05, random_state=201)
    yield "heldout 2000 d=16 sep 0.7", *make_classification(2000, 16, n_informative=8, class_sep=0.7,
                                                            random_state=202)
    yield "heldout 5000 d=24 80/20", *make_classification(5000, 24, n_informative=10, weights=[0.8, 0.2],
                                                          random_state=203)
    yield "heldout 1200 d=40 2 clusters", *make_classification(1200, 40, n_informative=12, n_clusters_per_class=2,
                                                               random_state=204)
    yield "heldout 4000 d=45 sep 1.5", *make_classification(4000, 45, n_informative=20, class_sep=1.5,
                                                            random_state=205)
    rng = np.random.default_rng(206)
    Xm, ym = make_moons(1500, noise=0.3, random_state=206)
    yield "heldout moons 1 500 + 6 noise features", np.hstack([Xm, rng.normal(size=(1500, 6))]), ym
    Xc, yc = make_circles(2500, noise=0.1, factor=0.5, random_state=207)
    yield "heldout circles 2 500 + 10 noise features", np.hstack([Xc, rng.normal(size=(2500, 10))]), yc
    Xh, yh = make_hastie_10_2(2000, random_state=208)
    yield "heldout hastie 2 000 d=10", Xh, (yh > 0).astype(int)
    Xq, yq = make_gaussian_quantiles(n_samples=1500, n_features=6, n_classes=2, random_state=209)
    yield "heldout quantiles 1 500 d=6", Xq, yq
    yield "heldout 900 d=20 flip 0.1", *make_classification(900, 20, n_informative=6, flip_y=0.1, random_state=210)


def tasks(group: str):
    return dev_tasks() if group == "dev" else heldout_tasks()


def run_task(group: str, name: str, X: np.ndarray, y: np.ndarray, seeds: int) -> list[dict]:
    warnings.filterwarnings("ignore")
    Xtr, Xte, ytr, yte = prepare(X, y)
    taylor = DPSVC(classes=[0, 1], random_state=0, features="taylor").fit(Xtr, ytr)
    ratio = len(ytr) / taylor.n_components_
    if ratio >= CURRENT:  # "auto" already takes the Taylor map: no threshold below 20 changes it
        return []
    majority = float(max(np.mean(yte), 1.0 - np.mean(yte)))
    rows = []
    for gamma in GAMMAS:
        row = {"group": group, "task": name, "n_train": int(len(ytr)), "d": int(Xtr.shape[1]),
               "degree": int(taylor.degree_), "columns": int(taylor.n_components_), "rows_per_column": ratio,
               "gamma": gamma, "majority": majority, "test_rows": int(len(yte)), "accuracy": {}}
        for kind in ("fourier", "taylor"):
            row["accuracy"][kind] = [
                float(np.median([DPSVC(gamma=gamma, epsilon=e, classes=[0, 1], features=kind, random_state=s)
                                 .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)])) for e in EPS]
        rows.append(row)
        print(f"{group:8s} {name[:34]:34s} rows/col {ratio:5.1f} γ={gamma:<4g} F "
              + " ".join(f"{a:.3f}" for a in row["accuracy"]["fourier"]) + " | T "
              + " ".join(f"{a:.3f}" for a in row["accuracy"]["taylor"]), flush=True)
    return rows


def _monotone(acc: list[float], test_rows: int) -> bool:
    slack = max(0.01, 2.0 / test_rows)
    return all(b >= a - slack for a, b in zip(acc, acc[1:], strict=False))


def summary(rows: list[dict], c: float) -> dict:
    """Taylor minus Fourier over the cells whose map a threshold ``c`` changes (rows/col in [c, 20))."""
    changed = [r for r in rows if c <= r["rows_per_column"] < CURRENT]
    diffs = np.array([100 * (t - f) for r in changed
                      for t, f in zip(r["accuracy"]["taylor"], r["accuracy"]["fourier"], strict=True)])
    collapses = sum(1 for r in changed
                    for t, f in zip(r["accuracy"]["taylor"], r["accuracy"]["fourier"], strict=True)
                    if t <= r["majority"] + 1.0 / r["test_rows"] < f)
    not_monotone = sorted({f"{r['task']} (γ = {r['gamma']:g})" for r in changed
                           if not _monotone(r["accuracy"]["taylor"], r["test_rows"])})
    if diffs.size == 0:
        return {"tasks": 0, "cells": 0}
    return {"tasks": len({r["task"] for r in changed}), "cells": int(diffs.size), "mean": float(diffs.mean()),
            "better": int((diffs > 1).sum()), "worse": int((diffs < -1).sum()), "worst": float(diffs.min()),
            "collapses": collapses, "not_monotone": not_monotone}


def markdown() -> str:
    L = ["# DPSVC: the rows-per-column threshold of `features=\"auto\"` (issue 11)\n",
         "`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dpsvc_taylor_threshold.py --group dev|heldout`. "
         "Median test "
         "accuracy over the noise seeds; data prepared as in `dp_trainer_defaults.py`; `DPSVC` at its defaults but "
         "`features` and `gamma` (0.3 / 1 / 3), ε 0.1 / 0.3 / 1 / 3 / 10, δ = 1e-6. Only tasks below 20 training rows "
         "per column of the Taylor map (where `\"auto\"` keeps the random features today). For a threshold c: the "
         "cells of the tasks with c ≤ rows per column < 20, whose map it would change; Taylor minus Fourier in points. "
         "Collapses: cells where the Taylor map scores at most the majority-class rate (plus one test row) and the "
         "random features more.\n",
         "| group | run | c | tasks changed | cells | mean (points) | better by > 1 | worse by > 1 | worst | collapses "
         "| not monotone (Taylor) |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for group in ("dev", "heldout"):
        path = OUT / f"dpsvc_taylor_threshold_{group}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        for c in CANDIDATES:
            s = summary(data["rows"], c)
            if not s["cells"]:
                L.append(f"| {group} | {data['meta']['run']} | {c:g} | 0 | 0 | | | | | | |")
                continue
            L.append(f"| {group} | {data['meta']['run']} | {c:g} | {s['tasks']} | {s['cells']} | {s['mean']:+.2f} | "
                     f"{s['better']} | {s['worse']} | {s['worst']:+.1f} | {s['collapses']} | "
                     f"{', '.join(s['not_monotone']) or 'none'} |")
    L += ["", "## Every task (ε = 0.1 / 0.3 / 1 / 3 / 10)\n",
          "| group | task | n train | d | Taylor degree, columns | rows per column | γ | random features | Taylor "
          "| majority |", "|---|---|---|---|---|---|---|---|---|---|"]
    for group in ("dev", "heldout"):
        path = OUT / f"dpsvc_taylor_threshold_{group}.json"
        if not path.exists():
            continue
        for r in sorted(json.loads(path.read_text())["rows"], key=lambda r: (-r["rows_per_column"], r["gamma"])):
            L.append(f"| {group} | {r['task']} | {r['n_train']} | {r['d']} | {r['degree']}, {r['columns']} | "
                     f"{r['rows_per_column']:.1f} | {r['gamma']:g} | "
                     + " / ".join(f"{a:.3f}" for a in r["accuracy"]["fourier"]) + " | "
                     + " / ".join(f"{a:.3f}" for a in r["accuracy"]["taylor"]) + f" | {r['majority']:.3f} |")
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", choices=("dev", "heldout"), required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (the group's first task, 600 rows, one seed)")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.jobs = 1, 1
    global OUT
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/ (markdown() reads it)
    t0 = time.perf_counter()
    per_task = Parallel(n_jobs=args.jobs)(delayed(run_task)(args.group, name, X, y, args.seeds)
                                          for name, X, y in quick_tasks(tasks(args.group), args.quick))
    rows = [r for task in per_task for r in task]
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seeds": args.seeds, "seconds": round(time.perf_counter() - t0, 1)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"dpsvc_taylor_threshold_{args.group}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (OUT / "dpsvc_taylor_threshold.md").write_text(markdown())
    print(f"wrote {OUT / 'dpsvc_taylor_threshold.md'} in {meta['seconds']} s")


if __name__ == "__main__":
    main()
