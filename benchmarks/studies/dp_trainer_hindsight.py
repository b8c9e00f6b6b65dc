"""Are the remaining gaps of the DP estimators a matter of defaults? A best-in-hindsight grid (issue 11).

``dp_trainer_defaults.py`` finds gaps at per-fit ε = 1 above the issue's targets
(≤ 4 points for n ≈ 400-1 400 training rows, ≤ 1 point for n ≥ 10 000) on a few
data sets. This script asks whether *any* setting of the estimators' parameters
closes them: for each such (data set, estimator) it fits every point of a grid
of solver, horizon, C, step scale and intercept scaling (``DPSVC``: feature
count, gamma, C, horizon) at per-fit ε = 1, δ = 1e-6, and reports the median
test accuracy over the noise seeds of the default and of the **best grid point
chosen on the test set** -- an optimistic bound (selection on the test rows, and
no privacy spent on the choice), not something a user could obtain. When even
that bound misses the target, no default of this algorithm (noisy full-batch
gradient steps, Kuru et al. 2022 with privtune's Gaussian variant) meets it;
when it meets it, the table names the setting and how far the default is.

Part 2 (``--part sweep``) asks the converse: would one of the settings that win
a cell be a better *default*? It fits ``DPLogisticRegression`` and ``DPLinearSVC``
with fixed alternatives (``solver="gd"`` with the auto horizon; ``gd`` with
T ∈ {12, 25, 50, 100}; ``nag`` with T = 25) on all nine tasks of
``dp_trainer_defaults.py`` at ε ∈ {0.1, 0.3, 1, 3, 10} and reports, per
alternative, how often and by how much it beats or trails the default.

Same data preparation as ``dp_trainer_defaults.py`` (standardised rows scaled to
unit L2 norm, 70/30 stratified split, split seed 0).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dp_trainer_hindsight.py [--seeds 7] [--part grid|sweep|all]
[--quick]`` (about 2 + 4 minutes on 2 cores). Writes ``benchmarks/results/dp_trainer_hindsight.json`` and ``.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import RESULTS, datasets, prepare  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

OUT = RESULTS
EPSILON = 1.0

LINEAR_GRID = [dict(solver=s, horizon="max_iter", max_iter=t, C=c, step_scale=k, intercept_scaling=i)
               for s, t, c, k, i in itertools.product(("nag", "gd"), (3, 6, 12, 25, 50), (0.3, 1.0, 10.0),
                                                      (1.0, 0.5), (0.5, 1.0))]
SVC_GRID = [dict(n_components=m, gamma=g, C=c, horizon="max_iter", max_iter=t)
            for m, g, c, t in itertools.product((50, 100, 300), (0.3, 1.0, 3.0), (0.3, 1.0, 10.0), (6, 12, 25, 50))]

#: (data set, estimator, target in points): the cells of dp_trainer_defaults.md above their target at epsilon = 1.
CELLS = [
    ("breast cancer", "DPLogisticRegression", 4.0), ("breast cancer", "DPLinearSVC", 4.0),
    ("breast cancer", "DPSVC", 4.0),
    ("digits 0-4 vs 5-9", "DPLinearSVC", 4.0), ("digits 0-4 vs 5-9", "DPSVC", 4.0),
    ("moons 2k (noise 0.25)", "DPSVC", 4.0),
    ("synthetic 2k d=50 imbalanced", "DPLogisticRegression", 4.0),
    ("synthetic 2k d=50 imbalanced", "DPLinearSVC", 4.0), ("synthetic 2k d=50 imbalanced", "DPSVC", 4.0),
    ("synthetic 20k d=20", "DPSVC", 1.0),
]
ESTIMATORS = {"DPLogisticRegression": (DPLogisticRegression, LINEAR_GRID),
              "DPLinearSVC": (DPLinearSVC, LINEAR_GRID), "DPSVC": (DPSVC, SVC_GRID)}


def reference(est_name: str, Xtr, ytr, Xte, yte) -> float:
    model = {"DPLogisticRegression": LogisticRegression(max_iter=5000),
             "DPLinearSVC": LinearSVC(max_iter=20000), "DPSVC": SVC(C=1.0, gamma=1.0)}[est_name]
    return float(model.fit(Xtr, ytr).score(Xte, yte))


def median_accuracy(cls, kw, Xtr, ytr, Xte, yte, seeds: int) -> float:
    return float(np.median([cls(epsilon=EPSILON, classes=[0, 1], random_state=s, **kw).fit(Xtr, ytr).score(Xte, yte)
                            for s in range(seeds)]))


SWEEP_EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
SWEEP = {"gd, auto horizon": {"solver": "gd"},
         **{f"gd, T = {t}": {"solver": "gd", "horizon": "max_iter", "max_iter": t} for t in (12, 25, 50, 100)},
         "nag, T = 25": {"solver": "nag", "horizon": "max_iter", "max_iter": 25}}


def sweep(data: dict, seeds: int, quick: bool) -> list[dict]:
    """Fixed alternatives against the default on every task and epsilon (part 2)."""
    out = []
    names = list(data)[:2] if quick else list(data)
    for name in names:
        Xtr, Xte, ytr, yte = prepare(*data[name])
        for est_name in ("DPLogisticRegression", "DPLinearSVC"):
            cls = ESTIMATORS[est_name][0]
            curves = {label: [float(np.median([cls(epsilon=e, classes=[0, 1], random_state=s, **kw)
                                               .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)]))
                              for e in SWEEP_EPS]
                      for label, kw in {"default": {}, **SWEEP}.items()}
            out.append({"dataset": name, "estimator": est_name, "curves": curves})
            print(f"{name[:26]:26s} {est_name:20s} default " + " ".join(f"{a:.3f}" for a in curves["default"]),
                  flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=7)
    ap.add_argument("--part", choices=("grid", "sweep", "all"), default="all")
    ap.add_argument("--quick", action="store_true", help="two cells, a quarter of the grid, one seed; writes nothing")
    args = ap.parse_args()
    if args.quick:
        args.seeds = 1
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    data = {name: (X, y) for name, X, y in datasets(False)}
    cells = [] if args.part == "sweep" else CELLS[:2] if args.quick else CELLS
    rows = []
    for name, est_name, target in cells:
        Xtr, Xte, ytr, yte = prepare(*data[name])
        cls, grid = ESTIMATORS[est_name]
        grid = grid[::4] if args.quick else grid
        ref = reference(est_name, Xtr, ytr, Xte, yte)
        default = median_accuracy(cls, {}, Xtr, ytr, Xte, yte, args.seeds)
        scored = sorted(((median_accuracy(cls, kw, Xtr, ytr, Xte, yte, args.seeds), i) for i, kw in enumerate(grid)),
                        key=lambda t: (-t[0], t[1]))
        best, best_kw = scored[0][0], grid[scored[0][1]]
        row = {"dataset": name, "n_train": int(len(ytr)), "estimator": est_name, "target": target,
               "reference": ref, "default": default, "best": best, "best_setting": best_kw,
               "grid_size": len(grid), "default_gap": 100 * (ref - default), "best_gap": 100 * (ref - best),
               "grid_median": float(np.median([a for a, _ in scored]))}
        rows.append(row)
        print(f"{name[:26]:26s} {est_name:20s} ref {ref:.3f} default {default:.3f} best {best:.3f} "
              f"(gap {row['best_gap']:.1f}, target {target:g}) {best_kw}", flush=True)
    swept = [] if args.part == "grid" else sweep(data, args.seeds, args.quick)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seconds": round(time.perf_counter() - t0, 1), "seeds": args.seeds, "epsilon": EPSILON,
            "part": args.part}
    if args.quick:
        return
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "dp_trainer_hindsight.json"
    if args.part != "all" and path.exists():  # keep the other part of an earlier run
        old = json.loads(path.read_text())
        rows = rows if args.part == "grid" else old.get("rows", [])
        swept = swept if args.part == "sweep" else old.get("sweep", [])
        meta["other_part_from"] = old["meta"]["run"]
    path.write_text(json.dumps({"meta": meta, "rows": rows, "sweep": swept}, indent=1))
    (OUT / "dp_trainer_hindsight.md").write_text(render(meta, rows, swept))
    print(f"wrote {OUT / 'dp_trainer_hindsight.md'} in {meta['seconds']} s")


def render(meta, rows, swept) -> str:
    L = ["# DP estimators: default against the best grid point in hindsight (issue 11)\n",
         f"Run {meta['run']}"
         + (f" (part {'2' if meta['part'] == 'sweep' else '1'} only; the other part from the run of "
            f"{meta['other_part_from']})" if meta.get("other_part_from") else "")
         + f", {meta['platform']}, privtune {meta['privtune']}, per-fit ε = {meta['epsilon']:g}, "
         f"δ = 1e-6, {meta['seeds']} noise seeds per setting (median test accuracy), data prepared as in "
         "`dp_trainer_defaults.py`. `python benchmarks/studies/dp_trainer_hindsight.py`. **Best in hindsight**: "
         "the grid point "
         "with the highest median *test* accuracy -- an optimistic bound no user can reach (chosen on the test "
         f"rows, no budget spent on the choice). Linear grid: {len(LINEAR_GRID)} settings (solver nag/gd, "
         "T 3-50, C 0.3/1/10, step scale 1/0.5, intercept scaling 0.5/1); DPSVC grid: "
         f"{len(SVC_GRID)} settings (D 50/100/300, gamma 0.3/1/3, C 0.3/1/10, T 6-50). Gaps in points against the "
         "non-private scikit-learn model (C = 1).\n",
         "| dataset | n train | estimator | reference | default | gap | best in hindsight | gap | target | "
         "grid median | best setting |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        kw = ", ".join(f"{k}={v}" for k, v in r["best_setting"].items() if k != "horizon")
        L.append(f"| {r['dataset']} | {r['n_train']} | {r['estimator']} | {r['reference']:.3f} | {r['default']:.3f} "
                 f"| {r['default_gap']:.1f} | {r['best']:.3f} | {r['best_gap']:.1f} | ≤ {r['target']:g} "
                 f"| {r['grid_median']:.3f} | {kw} |")
    missed = [r for r in rows if r["best_gap"] > r["target"]]
    L += ["", f"Even the best setting in hindsight misses the target in {len(missed)} of {len(rows)} cells: "
          + (", ".join(f"{r['estimator']} / {r['dataset']} ({r['best_gap']:.1f})" for r in missed) or "none") + "."]
    if swept:
        L += ["", "## Part 2: fixed alternatives against the default, every task and ε", "",
              f"`DPLogisticRegression` and `DPLinearSVC` on the nine tasks of `dp_trainer_defaults.py`, ε ∈ "
              f"{{{', '.join(f'{e:g}' for e in SWEEP_EPS)}}}, {meta['seeds']} noise seeds (median test accuracy). "
              "Per alternative: the (task, estimator, ε) cells where it beats the default by more than 1 point, where "
              "it trails by more than 1 point, and its worst cell.", "",
              "| alternative | cells | better by > 1 point | worse by > 1 point | mean difference | worst cell |",
              "|---|---|---|---|---|---|"]
        for label in SWEEP:
            diffs = [(100 * (a - b), r["dataset"], r["estimator"], e) for r in swept
                     for a, b, e in zip(r["curves"][label], r["curves"]["default"], SWEEP_EPS, strict=True)]
            worst = min(diffs)
            L.append(f"| {label} | {len(diffs)} | {sum(d > 1 for d, *_ in diffs)} | {sum(d < -1 for d, *_ in diffs)} "
                     f"| {np.mean([d for d, *_ in diffs]):+.1f} | {worst[0]:+.1f} ({worst[2]}, {worst[1]}, "
                     f"ε = {worst[3]:g}) |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
