"""Study (issue 40): could any split of the budget between tuning and the released fit beat not tuning?

``tuning_pays.py`` found that with sensitive training rows no tuning method beat one fit at the estimator's
defaults with the whole budget. This study asks whether that is a matter of how the budget is split: random
stopping (a geometric number of runs of mean 5, Papernot & Steinke, exact selection on the public validation
rows) over fits at a per-fit ε_t = r ε_f, then the chosen C refitted once at ε_f, with ε_f the largest such that
the two compose (RDP, ``compose_events``) within the total ε. r = 1 is random stopping with a refit; r = 0.1 gives
the released fit about 90 % of the budget. And the limit, the whole budget to the released fit: the candidates
ranked on the task's public proxy rows for free (``fit(X_proxy=, y_proxy=)``, ``n_iter=1``), then one fit of the
best at the total ε. Same tasks, rows, candidate grid and reference (non-private tuning) as
``tuning_pays.py``; ``DPLogisticRegression`` and ``DPSVC`` at total ε ∈ {1, 3}, 10 seeds.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/tuning_budget_share.py [--seeds 10] [--quick]``.
Writes ``benchmarks/results/tuning_budget_share.{json,md}``.
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
from sklearn.base import clone  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, output_dir  # noqa: E402
from benchmarks.privacy_utility.tuning_pays import C_GRID, DELTA, ceiling, split, tasks  # noqa: E402
from privtune import PrivateSearchCV  # noqa: E402
from privtune.accounting import RepeatAndSelectEvent, compose_events  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.space import Real  # noqa: E402
from privtune.svm import DPSVC  # noqa: E402

SHARES = (0.1, 0.3, 1.0)
TOTALS = (1.0, 3.0)
MEAN_RUNS = 5


def _event(base, eps):
    return clone(base).set_params(epsilon=eps)._fit_privacy_event()


def final_epsilon(base, total: float, share: float) -> float:
    """The largest ε_f with random stopping over fits at share * ε_f and one fit at ε_f within ``total``."""
    def cost(eps_f):
        runs = RepeatAndSelectEvent(event=_event(base, share * eps_f), mean=float(MEAN_RUNS), shape=1.0)
        return compose_events([runs, _event(base, eps_f)], delta=DELTA).epsilon

    lo, hi = total * 1e-4, total
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if cost(mid) <= total else (lo, mid)
    return lo


def run(seeds: int, quick: bool) -> list[dict]:
    rows = []
    bases = [("DPLogisticRegression", DPLogisticRegression(classes=[0, 1], delta=DELTA))]
    if not quick:
        bases.append(("DPSVC", DPSVC(classes=[0, 1], delta=DELTA)))
    grid = C_GRID[::8] if quick else C_GRID
    for est_name, base in bases:
        for task, (X, y) in tasks(quick):
            d = split(X, y, quick)
            Xtr, ytr, Xva, yva, _, _, Xte, yte = d
            ref = ceiling(est_name, base, grid, d)
            for total in ((1.0,) if quick else TOTALS):
                accs = [clone(base).set_params(epsilon=total, random_state=80_000 + s).fit(Xtr, ytr).score(Xte, yte)
                        for s in range(seeds)]
                found = {"none (defaults, one fit)": (accs, total)}
                for share in SHARES:
                    eps_f = final_epsilon(base, total, share)
                    accs = []
                    for s in range(seeds):
                        rng = np.random.default_rng(1000 + s)
                        best, best_val = None, -1.0
                        for j in range(int(rng.geometric(1 / MEAN_RUNS))):
                            params = grid[int(rng.integers(len(grid)))]
                            model = clone(base).set_params(epsilon=share * eps_f, random_state=5000 + 100 * s + j,
                                                           **params).fit(Xtr, ytr)
                            val = model.score(Xva, yva)
                            if val > best_val:
                                best, best_val = params, val
                        final = clone(base).set_params(epsilon=eps_f, random_state=9000 + s, **best).fit(Xtr, ytr)
                        accs.append(final.score(Xte, yte))
                    found[f"tune at r={share:g}, refit"] = (accs, eps_f)
                accs = []
                for s in range(seeds):  # the proxy's best candidate, one fit with the whole budget
                    search = PrivateSearchCV(clone(base).set_params(epsilon=total), {"C": Real(1e-2, 1e2, log=True)},
                                             candidate_grid=grid, n_candidates=0, sensitive="training",
                                             epsilon=total, delta=DELTA, n_iter=1, random_state=70_000 + s)
                    search.fit(Xtr, ytr, X_val=Xva, y_val=yva, X_proxy=d[4], y_proxy=d[5])
                    accs.append(search.best_estimator_.score(Xte, yte))
                found["proxy's best, one fit"] = (accs, total)
                for label, (accs, eps_f) in found.items():
                    row = {"task": task, "estimator": est_name, "epsilon_total": total, "method": label,
                           "final_epsilon": eps_f, "test_median": float(np.median(accs)),
                           "regret_median": float(100 * (ref - np.median(accs))), "ceiling": ref, "seeds": seeds}
                    rows.append(row)
                    print(f"{est_name:20s} {task[:16]:16s} eps={total:g} {label:26s} final eps {eps_f:.3f} "
                          f"regret {row['regret_median']:.1f}", flush=True)
    return rows


def render(rows: list[dict], meta: dict) -> str:
    methods = list(dict.fromkeys(r["method"] for r in rows))
    keys = list(dict.fromkeys((r["task"], r["estimator"], r["epsilon_total"]) for r in rows))
    by = {(r["task"], r["estimator"], r["epsilon_total"], r["method"]): r for r in rows}
    L = ["# Study: splitting the budget between tuning and the released fit (issue 40)\n",
         f"Run {meta['run']}, {meta['platform']}, {meta['seeds']} seeds per cell, {meta['seconds']:.0f} s. "
         f"`{meta['command']}`.\n",
         "Random stopping (geometric K, mean 5, exact selection on the public validation rows) over fits at "
         "ε_t = r ε_f, then the chosen C refitted once at ε_f, the largest ε_f whose composition with the tuning "
         "fits stays within the total ε (RDP, δ = 1e-6). Median regret (points of test accuracy against "
         "non-private tuning of the same 64 values of C); final ε in brackets. `proxy's best, one fit`: the "
         "candidates ranked on the task's public proxy rows (prescreen's schedule, for free), the best fitted once "
         "at the total ε.\n",
         "| task | estimator | ε | " + " | ".join(methods) + " |", "|---|---|---|" + "---|" * len(methods)]
    for t, est, e in keys:
        L.append(f"| {t} | {est} | {e:g} | " + " | ".join(
            f"{by[(t, est, e, m)]['regret_median']:.1f} ({by[(t, est, e, m)]['final_epsilon']:.2f})"
            for m in methods) + " |")
    means = {m: np.mean([by[(*k, m)]["regret_median"] for k in keys]) for m in methods}
    L.append("\nMean median regret over the cells: " + ", ".join(f"{m} {v:.1f}" for m, v in means.items()) + ".")
    best = min(means, key=means.get)
    worst = {m: max(by[(*k, m)]["regret_median"] - by[(*k, methods[0])]["regret_median"] for k in keys)
             for m in methods[1:]}
    L.append("Worst cell against one fit at the defaults (points): "
             + ", ".join(f"{m} {v:+.1f}" for m, v in worst.items()) + ".")
    L.append(f"\nLowest: `{best}`. " + ("No split of the budget beat one fit at the defaults on these tasks."
                                          if best.startswith("none") else "A split beat one fit at the defaults."))
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    rows = run(args.seeds, args.quick)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "seeds": args.seeds,
            "seconds": time.perf_counter() - t0, "command": "python benchmarks/studies/tuning_budget_share.py"
            + (f" --seeds {args.seeds}" if args.seeds != 10 else "") + (" --quick" if args.quick else "")}
    out = output_dir(args.quick)
    (out / "tuning_budget_share.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "tuning_budget_share.md").write_text(render(rows, meta))
    print(f"wrote {out / 'tuning_budget_share.md'}")


if __name__ == "__main__":
    main()
