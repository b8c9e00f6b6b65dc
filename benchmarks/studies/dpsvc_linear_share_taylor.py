"""DPSVC's linear share on the Taylor map: does the default ``linear_share=0.25`` help there (issue 11)?

``linear_share`` was chosen on the random Fourier features (``benchmarks/studies/dpsvc_linear_share.py``), whose random
columns learn the linear part of a decision function slowly: it is spread over all D columns, each carrying noise,
and d explicit columns learn it cheaply. The Taylor map (``features="taylor"``, picked by ``features="auto"`` when
the training set has at least 4 rows per column) already holds those d columns: its degree-1 block. There the
share only moves kernel weight from the higher degrees to the degree-1 block (``taylor_block_shares``), the
opposite of what the column balance does once the noise is small. Every variant is a public map clipped to the
same declared norm: the guarantee is the same, only accuracy moves.

Protocol: the tasks of ``benchmarks/studies/dpsvc_horizon_floor.py``'s three groups (``dev``: the nine tasks of
``dp_trainer_defaults.py`` and the five of ``dpsvc_taylor.py``; ``heldout``: the eight of
``dpsvc_column_balance.py``; ``confirm``: its own six), data prepared as in ``dp_trainer_defaults.py``; only the
tasks where ``DPSVC`` at its defaults picks the Taylor map (at gamma = 1, epsilon = 1; the choice depends on n
and d only). ``DPSVC`` at its defaults but ``gamma`` in {0.3, 1, 3} and ``linear_share`` in {0, 0.25 (the
default)}; per-fit epsilon in {0.1, 0.3, 1, 3, 10} (delta 1e-6); median test accuracy over noise seeds 0..S-1
(``--seeds``, default 5). Reported per group: the mean difference (0.25 minus 0, points), the cells better or
worse by more than one point, the worst and best cell; and every cell.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dpsvc_linear_share_taylor.py [--seeds 5] [--jobs 2]``.
Writes ``benchmarks/results/dpsvc_linear_share_taylor.json`` and ``.md``.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import QUICK_HELP, RESULTS, output_dir, prepare, quick_tasks  # noqa: E402
from benchmarks.studies.dpsvc_horizon_floor import tasks  # noqa: E402
from privtune.svm import DPSVC  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
GAMMAS = (0.3, 1.0, 3.0)
SHARES = (0.0, 0.25)
GROUPS = ("dev", "heldout", "confirm")


def run_task(group: str, name: str, X: np.ndarray, y: np.ndarray, seeds: int) -> list[dict]:
    warnings.filterwarnings("ignore")
    Xtr, Xte, ytr, yte = prepare(X, y)
    probe = DPSVC(classes=[0, 1], random_state=0).fit(Xtr, ytr)
    if probe.features_ != "taylor":
        return []
    rows = []
    for gamma in GAMMAS:
        row = {"group": group, "task": name, "n_train": int(len(ytr)), "d": int(Xtr.shape[1]), "gamma": gamma,
               "degree": int(probe.degree_), "columns": int(probe.n_components_), "accuracy": {}}
        for share in SHARES:
            row["accuracy"][str(share)] = [
                float(np.median([DPSVC(gamma=gamma, epsilon=e, classes=[0, 1], linear_share=share, random_state=s)
                                 .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)])) for e in EPS]
        rows.append(row)
        print(f"{group:8s} {name[:30]:30s} γ={gamma:<4g} " + " | ".join(
            f"s={share:g} " + " ".join(f"{a:.3f}" for a in row["accuracy"][str(share)]) for share in SHARES),
            flush=True)
    return rows


def summary(rows: list[dict]) -> dict:
    diffs = np.array([100 * (a - b) for r in rows
                      for a, b in zip(r["accuracy"]["0.25"], r["accuracy"]["0.0"], strict=True)])
    if diffs.size == 0:
        return {"cells": 0}
    return {"cells": int(diffs.size), "tasks": len({r["task"] for r in rows}), "mean": float(diffs.mean()),
            "better": int((diffs > 1).sum()), "worse": int((diffs < -1).sum()), "worst": float(diffs.min()),
            "best": float(diffs.max())}


def render(meta: dict, rows: list[dict]) -> str:
    L = ["# DPSVC: the linear share on the Taylor map (issue 11)\n",
         f"Run {meta['run']}, {meta['platform']}, privtune {meta['privtune']}, {meta['seeds']} noise seeds per cell "
         f"(median test accuracy), {meta['seconds']:.0f} s. `OMP_NUM_THREADS=1 .venv/bin/python "
         "benchmarks/studies/dpsvc_linear_share_taylor.py`. Data prepared as in `dp_trainer_defaults.py` "
         "(standardised, "
         "rows scaled to unit L2 norm, 70/30 stratified split), δ = 1e-6, `DPSVC` at its defaults but `gamma` and "
         "`linear_share`; only the tasks where the default picks the Taylor map. Difference: `linear_share=0.25` "
         "(the default) minus `linear_share=0`, in points of test accuracy.\n",
         "## Summary (0.25 minus 0, over the (task, γ, ε) cells)\n",
         "| group | tasks | cells | mean | cells better by > 1 point | worse by > 1 point | worst | best |",
         "|---|---|---|---|---|---|---|---|"]
    for group in (*GROUPS, "all"):
        s = summary([r for r in rows if group in ("all", r["group"])])
        if s["cells"]:
            L.append(f"| {group} | {s['tasks']} | {s['cells']} | {s['mean']:+.2f} | {s['better']} | {s['worse']} "
                     f"| {s['worst']:+.1f} | {s['best']:+.1f} |")
    L += ["", "## Per γ (all groups)\n", "| γ | cells | mean | better by > 1 | worse by > 1 |", "|---|---|---|---|---|"]
    for gamma in GAMMAS:
        s = summary([r for r in rows if r["gamma"] == gamma])
        if s["cells"]:
            L.append(f"| {gamma:g} | {s['cells']} | {s['mean']:+.2f} | {s['better']} | {s['worse']} |")
    L += ["", "## Every cell\n",
          "| group | task | n train | d | degree, columns | γ | linear_share | "
          + " | ".join(f"ε = {e:g}" for e in EPS) + " |",
          "|---|---|---|---|---|---|---|" + "---|" * len(EPS)]
    for r in rows:
        for share in SHARES:
            L.append(f"| {r['group']} | {r['task']} | {r['n_train']} | {r['d']} | {r['degree']}, {r['columns']} | "
                     f"{r['gamma']:g} | {share:g} | " + " | ".join(f"{a:.3f}" for a in r["accuracy"][str(share)])
                     + " |")
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args()
    if args.quick:  # one task per group (moons for dev), 600 rows, one seed, one process
        args.seeds, args.jobs = 1, 1
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    t0 = time.perf_counter()
    jobs = [(group, name, X, y) for group in GROUPS for name, X, y in
            quick_tasks(tasks(group), args.quick, skip=3 if group == "dev" else 0)]  # --quick: Taylor-map tasks
    per_task = Parallel(n_jobs=args.jobs)(delayed(run_task)(*job, args.seeds) for job in jobs)
    rows = [r for task in per_task for r in task]
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seeds": args.seeds, "seconds": round(time.perf_counter() - t0, 1)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "dpsvc_linear_share_taylor.json").write_text(json.dumps({"meta": meta, "epsilons": EPS, "rows": rows},
                                                                   indent=1))
    (OUT / "dpsvc_linear_share_taylor.md").write_text(render(meta, rows))
    print(f"wrote {OUT / 'dpsvc_linear_share_taylor.md'} in {meta['seconds']} s")


if __name__ == "__main__":
    main()
