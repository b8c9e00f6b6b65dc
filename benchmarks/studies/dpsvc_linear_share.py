"""DPSVC with a linear share in its kernel, against the plain RBF kernel, over epsilon (issue 11).

``DPSVC(linear_share=s)`` maps a row to ``[sqrt(s) xbar, sqrt(1 - s) psi(x)]``: ``xbar`` the input clipped to
the L2 norm ``reference_norm`` (1) and divided by it, ``psi`` the centred random Fourier features clipped to norm
1. The kernel is ``s <xbar, xbar'> + (1 - s) k_rbf``; every mapped row keeps L2 norm at most 1, so the Gaussian
noise and the guarantee are those of ``s = 0`` (only accuracy moves). The Taylor map adds the share to its
degree-1 block instead (the same kernel, no duplicated columns); that block is already linear, so there the
share moves weight from the higher degrees to the linear part. Under noise the random features learn
the linear part of a decision function slowly (it is spread over all ``D`` coordinates, each carrying noise),
while ``d`` explicit coordinates learn it cheaply; a kernel with a linear part can also learn less where the
task needs the RBF part (concentric circles).

Protocol: the nine binary tasks of ``benchmarks/trainers/dp_trainer_defaults.py`` (standardised, rows scaled to unit
L2 norm, 70/30 stratified split), ``DPSVC`` at its defaults but ``linear_share`` in {0, 0.25, 0.5}, per-fit
epsilon in {0.1, 0.3, 1, 3, 10} (delta 1e-6), median test accuracy over noise seeds 0..S-1 (``--seeds``, default
9). References: non-private ``SVC(kernel="rbf")`` (C = 1, gamma = 1) and ``LinearSVC`` (C = 1) on the same rows.
Reported: every cell; per share and epsilon the mean gap to ``SVC`` over the nine tasks and the worst one; per
share the number of (task, epsilon) cells more than one point above or below ``s = 0``, and whether each task is
non-decreasing in epsilon (within one point or two test rows).

``--features auto`` (the default) measures the map ``DPSVC`` picks at its defaults (``features="auto"``: the
Taylor map where the training set has at least 4 rows per column of it, else the random Fourier features; the
table names each task's map), writing ``benchmarks/results/dpsvc_linear_share.json`` and ``.md``.
``--features fourier`` repeats the study the default ``linear_share`` was chosen on (2026-11-27 06:45, before
the Taylor map, the 1 000-step cap and the horizon floor): the random Fourier features with ``max_iter=100`` and
``horizon_floor=0``, writing ``dpsvc_linear_share_fourier.json`` and ``.md`` (a rerun on 2026-11-27 22:41
reproduced that first run's 135 cells exactly).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dpsvc_linear_share.py [--seeds 9] [--jobs 2]
[--features auto|fourier]`` (2 to 4 minutes on 2 cores on 2026-11-27).
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
from sklearn.svm import SVC, LinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import QUICK_HELP, RESULTS, datasets, output_dir, prepare, quick_tasks  # noqa: E402
from privtune.svm import DPSVC  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
SHARES = (0.0, 0.25, 0.5)
#: Per ``--features``: the parameters pinned beside ``linear_share`` and the results' file stem.
SETTINGS = {"auto": ({}, "dpsvc_linear_share"),
            "fourier": ({"features": "fourier", "max_iter": 100, "horizon_floor": 0.0}, "dpsvc_linear_share_fourier")}


def run_task(name: str, X: np.ndarray, y: np.ndarray, seeds: int, pinned: dict) -> list[dict]:
    warnings.filterwarnings("ignore")
    Xtr, Xte, ytr, yte = prepare(X, y)  # public preprocessing, for the benchmark
    svc = SVC(C=1.0, gamma=1.0).fit(Xtr, ytr).score(Xte, yte)
    lin = LinearSVC(C=1.0, max_iter=20000).fit(Xtr, ytr).score(Xte, yte)
    slack = max(0.01, 2.0 / len(yte))
    rows = []
    for share in SHARES:
        accs = []
        for eps in EPS:
            accs.append(float(np.median([DPSVC(epsilon=eps, classes=[0, 1], linear_share=share, random_state=s,
                                               **pinned).fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)])))
        fitted = DPSVC(epsilon=1.0, classes=[0, 1], linear_share=share, random_state=0, **pinned).fit(Xtr, ytr)
        kind = (f"taylor, degree {fitted.degree_}" if fitted.features_ == "taylor" else "fourier") \
            + f", {fitted.n_components_} columns"
        rows.append({"dataset": name, "n_train": int(len(ytr)), "d": int(X.shape[1]), "linear_share": share,
                     "map": kind,
                     "accuracy": accs, "svc": svc, "linear_svc": lin,
                     "monotone": all(b >= a - slack for a, b in zip(accs, accs[1:], strict=False))})
        print(f"{name[:28]:28s} s={share:<4g} " + " ".join(f"{a:.3f}" for a in accs)
              + f" | SVC {svc:.3f} LinearSVC {lin:.3f}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=9)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--features", choices=sorted(SETTINGS), default="auto")
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args()
    if args.quick:  # breast cancer cut to 600 rows, one seed, one process
        args.seeds, args.jobs = 1, 1
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    pinned, stem = SETTINGS[args.features]
    t0 = time.perf_counter()
    per_task = Parallel(n_jobs=args.jobs)(delayed(run_task)(name, X, y, args.seeds, pinned)
                                          for name, X, y in quick_tasks(datasets(False), args.quick))
    rows = [r for task in per_task for r in task]
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seconds": round(time.perf_counter() - t0, 1), "seeds": args.seeds, "features": args.features,
            "pinned": pinned}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{stem}.json").write_text(json.dumps({"meta": meta, "epsilons": EPS, "rows": rows}, indent=1))
    (OUT / f"{stem}.md").write_text(render(meta, rows))
    print(f"wrote {OUT / (stem + '.md')} in {meta['seconds']} s")


def render(meta: dict, rows: list[dict]) -> str:
    L = ["# DPSVC: a linear share in the kernel (issue 11)\n",
         f"Run {meta['run']}, {meta['platform']}, privtune {meta['privtune']}, {meta['seeds']} noise seeds per cell "
         "(median test accuracy), rows standardised and scaled to unit L2 norm, 70/30 stratified split, δ = 1e-6, "
         f"`DPSVC` at its defaults but `linear_share`{pinned_text(meta)}. "
         f"`python benchmarks/studies/dpsvc_linear_share.py --features {meta.get('features', 'fourier')}` "
         f"({meta['seconds']:.0f} s). Gap: points below non-private `SVC` (C = 1, γ = 1) on the same rows. Map: "
         "the kernel map the fit at ε = 1 used.\n",
         "| dataset | n train | map | linear_share | " + " | ".join(f"ε = {e:g}" for e in EPS)
         + " | SVC | LinearSVC | gap at ε = 1 | monotone |",
         "|---|---|---|---|" + "---|" * (len(EPS) + 4)]
    for r in rows:
        L.append(f"| {r['dataset']} | {r['n_train']} | {r.get('map', 'fourier')} | {r['linear_share']:g} | "
                 + " | ".join(f"{a:.3f}" for a in r["accuracy"])
                 + f" | {r['svc']:.3f} | {r['linear_svc']:.3f} | {100 * (r['svc'] - r['accuracy'][2]):.1f} "
                 f"| {'yes' if r['monotone'] else 'NO'} |")
    L += ["", "## Summary over the nine tasks\n",
          "| linear_share | ε | mean gap to SVC | worst gap (task) | cells > 1 point above s = 0 "
          "| cells > 1 point below |",
          "|---|---|---|---|---|---|"]
    base = {r["dataset"]: r for r in rows if r["linear_share"] == 0.0}
    for share in SHARES:
        sel = [r for r in rows if r["linear_share"] == share]
        for k, eps in enumerate(EPS):
            gaps = [(100 * (r["svc"] - r["accuracy"][k]), r["dataset"]) for r in sel]
            diffs = [100 * (r["accuracy"][k] - base[r["dataset"]]["accuracy"][k]) for r in sel]
            worst = max(gaps)
            L.append(f"| {share:g} | {eps:g} | {np.mean([g for g, _ in gaps]):.1f} | {worst[0]:.1f} ({worst[1]}) "
                     f"| {sum(d > 1 for d in diffs)} | {sum(d < -1 for d in diffs)} |")
    L += ["", "## Monotone in ε\n"]
    for share in SHARES:
        sel = [r for r in rows if r["linear_share"] == share]
        bad = [r["dataset"] for r in sel if not r["monotone"]]
        L.append(f"- linear_share {share:g}: {len(sel) - len(bad)} of {len(sel)} tasks"
                 + (f"; not: {', '.join(bad)}" if bad else "") + ".")
    return "\n".join(L) + "\n"


def pinned_text(meta: dict) -> str:
    """The parameters pinned beside ``linear_share``, for the results' header."""
    pinned = meta.get("pinned", {})
    return (" and " + ", ".join(f"`{k}={v!r}`" for k, v in pinned.items())) if pinned else ""


if __name__ == "__main__":
    main()
