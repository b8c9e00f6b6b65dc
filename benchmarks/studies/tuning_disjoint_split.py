"""Study (issue 40): tune on a secret part of the training rows, release a fit on the rest.

``tuning_pays.py`` and ``tuning_budget_share.py`` found that with sensitive training rows every tuning method lost
to one fit at the estimator's defaults with the whole budget: each composes the tuning runs with the released fit
(or releases one of the runs), so the released model is trained at roughly half the budget. Koskela & Kulkarni's
first variant of subsampled tuning avoids the composition: the training rows are split at random, in secret, into a
tuning part (a fraction q) and a final part; random stopping (Papernot & Steinke) runs on the tuning part, and the
released model is fitted once, with the chosen hyperparameters, on the final part. A row lands in one part only, so
the two phases compose in parallel. This study bounds the whole, under replace-one with the public sizes m and
n - m, by the mixture over the part the replaced row lands in: ``eps(a) <= log(r e^{(a-1) eps_tune(a)} + (1 - r)
e^{(a-1) eps_final(a)}) / (a - 1)`` with ``r = m / n``. Derivation (ours; Koskela & Kulkarni's own statement could
not be read here): both outputs are the same mixture over the secret partition; for a fixed partition the pair
differs in one part only, so the Renyi divergence of that pair is at most the tuning phase's curve (the final fit's
input and hyperparameters then agree) or the final fit's (adaptive composition, the tuning output agreeing); and
``(P, Q) -> integral of P^a Q^(1-a)`` is jointly convex for a > 1 (the perspective of t^a), which takes the bound
through the mixture. The released fit gets the *whole* budget (ε_f = total ε) and the tuning runs the
largest per-run ε_t that keeps the mixture within the total: "free" tuning, paid for with the rows it holds out.

This study measures whether that beats one fit at the defaults on all the training rows: the same tasks, rows,
candidate grid and reference (non-private tuning) as ``tuning_pays.py``; ``DPLogisticRegression`` and ``DPSVC``;
q ∈ {0.2, 0.5}; random stopping of mean 5 and 20 (exact selection on the public validation rows); total
ε ∈ {0.3, 1, 3, 8}; 10 seeds.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/tuning_disjoint_split.py [--seeds 10] [--quick]``.
Writes ``benchmarks/results/tuning_disjoint_split.{json,md}``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.base import clone  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, output_dir  # noqa: E402
from benchmarks.privacy_utility.tuning_pays import C_GRID, DELTA, ceiling, split, tasks  # noqa: E402
from privtune.accounting import RepeatAndSelectEvent  # noqa: E402
from privtune.accounting._composition import _rdp_curve  # noqa: E402
from privtune.accounting.rdp_math import DEFAULT_ORDERS, rdp_to_epsilon  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.svm import DPSVC  # noqa: E402

FRACTIONS = (0.2, 0.5)
MEANS = (5, 20)
TOTALS = (0.3, 1.0, 3.0, 8.0)
ORDERS = tuple(float(o) for o in DEFAULT_ORDERS)
NONE = "none (defaults, one fit)"
ORACLE = "best C in hindsight, one fit (chosen on the test rows: no method)"


def _event(base, eps):
    return clone(base).set_params(epsilon=eps)._fit_privacy_event()


def mixture_epsilon(base, eps_t: float, eps_f: float, q: float, mean: int) -> float:
    """ε of the disjoint split at δ: random stopping over fits at ε_t (weight q = m / n) and one fit at ε_f."""
    a = np.asarray(ORDERS)
    runs = RepeatAndSelectEvent(event=_event(base, eps_t), mean=float(mean), shape=1.0)
    t, f = _rdp_curve(runs, ORDERS, "replace_one"), _rdp_curve(_event(base, eps_f), ORDERS, "replace_one")
    curve = np.logaddexp(math.log(q) + (a - 1) * t, math.log1p(-q) + (a - 1) * f) / (a - 1)
    return rdp_to_epsilon(a, curve, DELTA)


def check_mixture_bound() -> float:
    """The bound against an exact computation on a Gaussian pair: the largest (exact - bound) over the cases.

    Tuning output ``a ~ N(x_T, s_t^2)``, final output ``b ~ N(x_F, s_f^2)`` (the sums of the rows in each part);
    rows 0 and a replaced row 1 that lands in the tuning part with probability r. The exact Renyi divergence, both
    directions, by numerical integration over a 2-D grid in log space; the bound with the Gaussian curves
    ``a / (2 s^2)``. A negative result means the bound held in every case.
    """
    from scipy.special import logsumexp
    from scipy.stats import norm

    g = np.linspace(-12.0, 14.0, 1301)
    A, B = np.meshgrid(g, g, indexing="ij")
    worst = -math.inf
    for st in (0.7, 1.5, 3.0):
        for sf in (0.8, 2.0):
            for r in (0.1, 0.5):
                lq = norm.logpdf(A, 0, st) + norm.logpdf(B, 0, sf)
                lp = np.logaddexp(math.log(r) + norm.logpdf(A, 1, st) + norm.logpdf(B, 0, sf),
                                  math.log1p(-r) + norm.logpdf(A, 0, st) + norm.logpdf(B, 1, sf))
                for a in (1.5, 2.0, 4.0, 8.0):
                    bound = np.logaddexp(math.log(r) + (a - 1) * a / (2 * st**2),
                                         math.log1p(-r) + (a - 1) * a / (2 * sf**2)) / (a - 1)
                    for x, y in ((lp, lq), (lq, lp)):
                        exact = (logsumexp(a * x + (1 - a) * y) + 2 * math.log(g[1] - g[0])) / (a - 1)
                        worst = max(worst, exact - bound)
    return float(worst)


def tuning_epsilon(base, total: float, q: float, mean: int) -> float:
    """The largest per-run ε_t with the released fit at ε_f = total and the mixture within ``total``."""
    lo, hi = total * 1e-4, total
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if mixture_epsilon(base, mid, total, q, mean) <= total else (lo, mid)
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
            n = len(ytr)
            ref = ceiling(est_name, base, grid, d)
            for total in ((1.0,) if quick else TOTALS):
                accs = [clone(base).set_params(epsilon=total, random_state=80_000 + s).fit(Xtr, ytr).score(Xte, yte)
                        for s in range(seeds)]
                found = {NONE: (accs, total, total)}
                # what choosing C alone could gain: the single C best in hindsight (by its median test accuracy over
                # the same seeds), fitted at the whole ε on all the rows -- it reads the test rows, so it is no method
                best_c = max(([clone(base).set_params(epsilon=total, random_state=80_000 + s, **params)
                               .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)] for params in grid),
                             key=np.median)
                found[ORACLE] = (best_c, total, total)
                for q in FRACTIONS:
                    m = int(math.floor(q * n))
                    for mean in MEANS:
                        eps_t = tuning_epsilon(base, total, m / n, mean)
                        accs = []
                        for s in range(seeds):
                            rng = np.random.default_rng(1000 + s)
                            perm = rng.permutation(n)
                            tune, final = np.sort(perm[:m]), np.sort(perm[m:])
                            best, best_val = grid[0], -1.0
                            for j in range(int(rng.geometric(1 / mean))):
                                params = grid[int(rng.integers(len(grid)))]
                                model = clone(base).set_params(epsilon=eps_t, random_state=5000 + 100 * s + j,
                                                               **params).fit(Xtr[tune], ytr[tune])
                                val = model.score(Xva, yva)
                                if val > best_val:
                                    best, best_val = params, val
                            model = clone(base).set_params(epsilon=total, random_state=9000 + s, **best)
                            accs.append(model.fit(Xtr[final], ytr[final]).score(Xte, yte))
                        found[f"split q={q:g}, mean {mean}"] = (accs, eps_t, total)
                for label, (accs, eps_t, eps_f) in found.items():
                    row = {"task": task, "estimator": est_name, "epsilon_total": total, "method": label,
                           "tuning_epsilon": eps_t, "final_epsilon": eps_f, "rows": n,
                           "test_median": float(np.median(accs)), "test_p10": float(np.quantile(accs, 0.1)),
                           "regret_median": float(100 * (ref - np.median(accs))), "ceiling": ref, "seeds": seeds}
                    rows.append(row)
                    print(f"{est_name:20s} {task[:16]:16s} eps={total:g} {label:26s} tune eps {eps_t:.3f} "
                          f"regret {row['regret_median']:.1f}", flush=True)
    return rows


def render(rows: list[dict], meta: dict) -> str:
    methods = list(dict.fromkeys(r["method"] for r in rows))
    keys = list(dict.fromkeys((r["task"], r["estimator"], r["epsilon_total"]) for r in rows))
    by = {(r["task"], r["estimator"], r["epsilon_total"], r["method"]): r for r in rows}
    L = ["# Study: tune on a secret part of the training rows, release a fit on the rest (issue 40)\n",
         f"Run {meta['run']}, {meta['platform']}, {meta['seeds']} seeds per cell, {meta['seconds']:.0f} s. "
         f"`{meta['command']}`.\n",
         "`split q, mean k`: the training rows split at random into a tuning part (q) and a final part (1 - q); "
         "random stopping (geometric K of mean k, exact selection on the public validation rows) over fits at "
         "ε_t on the tuning part; the chosen C fitted once at the whole ε on the final part. ε_t (in brackets) is "
         "the largest that keeps the mixture bound within the total ε (RDP, δ = 1e-6). `none`: one fit at the "
         "defaults on all the training rows at the whole ε. Median regret: points of test accuracy against "
         "non-private tuning of the same 64 values of C.\n",
         "The bound checked against an exact computation (a Gaussian tuning output and a Gaussian final output, "
         "numerical integration, both directions, 48 cases: `check_mixture_bound`): largest (exact − bound) "
         f"{meta['bound_check']:.4f} (negative: it held in every case).\n",
         "| task | estimator | ε | " + " | ".join(methods) + " |", "|---|---|---|" + "---|" * len(methods)]
    for t, est, e in keys:
        L.append(f"| {t} | {est} | {e:g} | " + " | ".join(
            f"{by[(t, est, e, m)]['regret_median']:.1f}"
            + ("" if m in (NONE, ORACLE) else f" ({by[(t, est, e, m)]['tuning_epsilon']:.2f})") for m in methods)
            + " |")
    big = [k for k in keys if k[2] >= 1]
    means = {m: np.mean([by[(*k, m)]["regret_median"] for k in big]) for m in methods}
    small = [k for k in keys if k[2] < 1]
    L.append("\nMean median regret over the cells at ε ≥ 1: " + ", ".join(f"{m} {v:.1f}" for m, v in means.items())
             + ".")
    if small:
        L.append("At ε = 0.3: " + ", ".join(
            f"{m} {np.mean([by[(*k, m)]['regret_median'] for k in small]):.1f}" for m in methods) + ".")
    others = [m for m in methods if m not in (NONE, ORACLE)]
    worst = {m: max(by[(*k, m)]["regret_median"] - by[(*k, NONE)]["regret_median"] for k in keys) for m in others}
    over = {m: sum(by[(*k, m)]["regret_median"] - by[(*k, NONE)]["regret_median"] > 1 for k in keys)
            for m in others}
    L.append("Worst cell against one fit at the defaults (points, all ε): "
             + ", ".join(f"{m} {v:+.1f} ({over[m]} of {len(keys)} cells more than 1 point worse)"
                         for m, v in worst.items()) + ".")
    best = min((m for m in means if m != ORACLE), key=means.get)
    gain = {k: by[(*k, NONE)]["regret_median"] - by[(*k, ORACLE)]["regret_median"] for k in big}
    L.append(f"\nLowest at ε ≥ 1 among the methods: `{best}`. What choosing C alone could gain over the "
             "defaults (one fit of the C best in hindsight, chosen on the test rows, at the whole ε on all the rows): "
             f"{np.mean(list(gain.values())):.1f} points on average over the cells at ε ≥ 1, at most "
             f"{max(gain.values()):.1f} in one cell ({sum(g > 1 for g in gain.values())} of {len(gain)} cells "
             "above 1 point).")
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    check = check_mixture_bound()
    print(f"mixture bound against the exact Gaussian case: largest (exact - bound) {check:.4f}", flush=True)
    rows = run(args.seeds, args.quick)
    meta = {"bound_check": check, "run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(),
            "seeds": args.seeds, "seconds": time.perf_counter() - t0,
            "command": "python benchmarks/studies/tuning_disjoint_split.py"
            + (f" --seeds {args.seeds}" if args.seeds != 10 else "") + (" --quick" if args.quick else "")}
    out = output_dir(args.quick)
    (out / "tuning_disjoint_split.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "tuning_disjoint_split.md").write_text(render(rows, meta))
    print(f"wrote {out / 'tuning_disjoint_split.md'}")


if __name__ == "__main__":
    main()
