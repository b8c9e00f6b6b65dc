"""Study (issue 40): should subsampled tuning rescale DP-SGD's batch size for the final fit on all the rows?

Subsampled tuning (``method_params={"subsample": q}``) picks hyperparameters from runs on a secret fraction q of
the training rows (``m = floor(q n)`` rows) and fits the released model once on all ``n`` rows. Koskela & Kulkarni
(2023) extrapolate the chosen values to the full data. For DP-SGD the natural rule, from the accounting itself, keeps
what sets a run's privacy and its trajectory: the sampling rate ``B / m`` and the number of steps (``epochs`` passes
of ``m / B`` steps), hence, at the same per-fit ε, the same noise multiplier. That is ``B' = B n / m`` on the full
rows, with the learning rate and the epochs unchanged (privtune divides the noisy sum by the public expected batch
size, so the averaged gradient keeps its scale and its noise falls by q). The alternative is to carry the values
unchanged (``B`` on ``n`` rows: more steps at a lower rate).

This study isolates the rule from the privacy of the selection: per seed, a random m-subset, the learning rate
with the best *exact* validation accuracy among the subset's DP fits (a log grid of 12 in [1e-2, 5]), then two
final fits on all the rows at that learning rate, one per rule, at the same per-fit ε, scored on the test rows.
Also shown: the best test accuracy each regime reaches over the grid (its own optimum). DP-SGD as
``tuning_pays.py`` runs it: ``DPSGDClassifier`` with its default MLP, 3 epochs, batch 64, replace-one; tasks digits
0-4 vs 5-9 (703 training rows) and the synthetic 5 000 (1 960 training rows), with ``tuning_pays.split``'s rows;
q in {0.1, 0.25}, per-fit ε in {1, 3}, 5 seeds.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/subsample_extrapolation.py [--seeds 5] [--quick]``.
Writes ``benchmarks/results/subsample_extrapolation.{json,md}``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, have, output_dir  # noqa: E402
from benchmarks.privacy_utility.tuning_pays import DPSGD_EPOCHS, split, tasks  # noqa: E402

LRS = [float(v) for v in np.geomspace(1e-2, 5.0, 12)]
FRACTIONS = (0.1, 0.25)
PER_FIT = (1.0, 3.0)
BATCH = 64
TASKS = ("digits 0-4 vs 5-9", "synthetic 5 000")


def fit(X, y, eps: float, lr: float, batch: int, seed: int):
    from privtune.neural_network import DPSGDClassifier

    return DPSGDClassifier(classes=[0, 1], epochs=DPSGD_EPOCHS, epsilon=eps, lr=lr, batch_size=int(batch),
                           random_state=seed).fit(X, y)


def run(seeds: int, quick: bool) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    rows = []
    lrs = LRS[::3] if quick else LRS
    for task, (X, y) in tasks(quick=False):
        if task not in TASKS or (quick and task != TASKS[0]):
            continue
        Xtr, ytr, Xva, yva, _, _, Xte, yte = split(X, y, quick)
        n = len(ytr)
        for eps in PER_FIT[:1] if quick else PER_FIT:
            for s in range(seeds):
                # the full rows at B: the "unchanged" rule's fits, shared by both fractions
                same = {lr: fit(Xtr, ytr, eps, lr, BATCH, 1000 * s + i).score(Xte, yte) for i, lr in enumerate(lrs)}
                for q in FRACTIONS:
                    m = int(np.floor(q * n))
                    sub = np.sort(np.random.default_rng(10_000 * s + int(100 * q)).choice(n, m, replace=False))
                    val = {lr: fit(Xtr[sub], ytr[sub], eps, lr, BATCH, 2000 * s + i).score(Xva, yva)
                           for i, lr in enumerate(lrs)}
                    chosen = max(lrs, key=lambda lr: val[lr])
                    scaled_b = min(n, round(BATCH * n / m))
                    scaled = {lr: fit(Xtr, ytr, eps, lr, scaled_b, 3000 * s + i).score(Xte, yte)
                              for i, lr in enumerate(lrs)}
                    rows.append({"task": task, "n": n, "m": m, "q": q, "per_fit_epsilon": eps, "seed": s,
                                 "chosen_lr": chosen, "scaled_batch": scaled_b,
                                 "unchanged_test": same[chosen], "scaled_test": scaled[chosen],
                                 "unchanged_best": max(same.values()), "scaled_best": max(scaled.values()),
                                 "lr_best_unchanged": max(lrs, key=lambda lr: same[lr]),
                                 "lr_best_scaled": max(lrs, key=lambda lr: scaled[lr])})
                    r = rows[-1]
                    print(f"{task[:12]} eps={eps:g} q={q:g} seed={s} lr*={chosen:.3g} unchanged "
                          f"{r['unchanged_test']:.3f} scaled {r['scaled_test']:.3f}", flush=True)
    return rows


def render(meta, rows) -> str:
    L = ["# Subsampled tuning of DP-SGD: carry the batch size unchanged, or keep the sampling rate? (issue 40)\n",
         f"Run {meta['run']}, {meta['platform']}, {meta['seeds']} seeds, {meta['seconds']:.0f} s, load average "
         f"{meta['load_start']} at the start and {meta['load_end']} at the end. "
         f"`OMP_NUM_THREADS=1 {meta['command']}`.\n",
         "Per seed: a random subset of m = floor(q n) training rows; the learning rate with the best exact "
         "validation accuracy among the subset's DP fits (12 log-spaced in [1e-2, 5], batch 64, 3 epochs); then "
         "one fit on all n rows at that learning rate under each rule, at the same per-fit ε: **unchanged** "
         "(batch 64 on n rows) or **same rate** (batch 64 n / m: the subset run's sampling rate and number of "
         "steps, hence the same noise multiplier). Test accuracy, mean over seeds; \"own best\": the best test "
         "accuracy of that regime over the 12 learning rates (its optimum, for reference).\n",
         "| task | n | q | per-fit ε | unchanged | same rate | difference (points) | unchanged's own best | "
         "same rate's own best | chosen lr (median) | best lr, unchanged / same rate (median) |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys((r["task"], r["q"], r["per_fit_epsilon"]) for r in rows))
    diffs = []
    for task, q, eps in keys:
        sel = [r for r in rows if (r["task"], r["q"], r["per_fit_epsilon"]) == (task, q, eps)]
        u, sc = np.mean([r["unchanged_test"] for r in sel]), np.mean([r["scaled_test"] for r in sel])
        diffs.append(100 * (sc - u))
        L.append(f"| {task} | {sel[0]['n']} | {q:g} | {eps:g} | {u:.3f} | {sc:.3f} | {100 * (sc - u):+.1f} | "
                 f"{np.mean([r['unchanged_best'] for r in sel]):.3f} | {np.mean([r['scaled_best'] for r in sel]):.3f}"
                 f" | {np.median([r['chosen_lr'] for r in sel]):.3g} | "
                 f"{np.median([r['lr_best_unchanged'] for r in sel]):.3g} / "
                 f"{np.median([r['lr_best_scaled'] for r in sel]):.3g} |")
    if diffs:
        better = sum(d > 0 for d in diffs)
        L += ["", f"**Answer.** Keeping the sampling rate instead of the batch size changes the final fit's test "
                  f"accuracy by {np.mean(diffs):+.1f} points on average over the {len(diffs)} cells "
                  f"(range {min(diffs):+.1f} to {max(diffs):+.1f}; better in {better} of them). "
                  + ("privtune carries the chosen hyperparameters unchanged (no rescaling rule), which this does "
                     "not contradict." if np.mean(diffs) <= 0 else
                     "The same-rate rule did better on average here.")]
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args()
    if not (have("torch") and have("opacus")):
        sys.exit("needs the dpsgd extra (torch, opacus)")
    if args.quick:
        args.seeds = 1
    warnings.filterwarnings("ignore")
    load_start = [round(v, 2) for v in os.getloadavg()]
    t0 = time.perf_counter()
    rows = run(args.seeds, args.quick)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "seeds": args.seeds,
            "seconds": time.perf_counter() - t0, "load_start": load_start,
            "load_end": [round(v, 2) for v in os.getloadavg()],
            "command": f"python benchmarks/studies/subsample_extrapolation.py --seeds {args.seeds}"}
    out = output_dir(args.quick)
    (out / "subsample_extrapolation.md").write_text(render(meta, rows))
    (out / "subsample_extrapolation.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {out / 'subsample_extrapolation.md'} in {meta['seconds']:.0f} s")


if __name__ == "__main__":
    main()
