"""Reproduction grid of Han, Topcu & Pappas (2014), §5 (seed-001 spec §4), at reduced size.

Instances: ``a_i ~ N(0, I_d)``, ``b_i ~ N(0, 1)`` drawn once (seed 0); box
``[-c, c]^d``; epsilon = 0.1 everywhere (the paper's value). Each cell is the
mean objective ``f(x_out)`` evaluated with the TRUE offsets, with a 2-sigma
spread (the paper's error bars are 2 sigma of the draws), over ``N_DRAWS``
independent mechanism runs on the fixed instance.

Reduced against the paper (to run in a few minutes on one core): 100 draws per
cell instead of 1000; c in {0.5, 1, 2, 5}; M_E by a 20-sweep Gibbs chain (exact
conditionals) instead of 5000-step Metropolis; the certified delta of that chain
is reported, and cells where the certificate is vacuous are marked heuristic.
Adjacency: the paper's eq. 4 (all m offsets may move by b_max), so M_P's L1
sensitivity is m * b_max. Baselines: the centre of the box and a uniform point
(both exactly 0-DP).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/papers/seed001_piecewise.py``.
Writes ``benchmarks/results/seed001_piecewise.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from privtune.optim.piecewise import (
    pwa_box_centre,
    pwa_exponential,
    pwa_objective,
    pwa_perturb_objective,
    pwa_perturb_solution,
    pwa_subgradient,
    pwa_uniform,
    solve_pwa,
)
from privtune.utils import check_random_state

EPS = 0.1
N_DRAWS = 100
GIBBS_SWEEPS = 20
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, RESULTS, output_dir  # noqa: E402

OUT = RESULTS


def instance(m, d, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, d)), rng.standard_normal(m)


def stats(vals):
    v = np.asarray(vals)
    return {"mean": float(v.mean()), "two_sigma": float(2 * v.std(ddof=1))}


def run_cell(A, b, c, bmax, seed, k=100):
    d = A.shape[1]
    bounds = (-c, c)
    src = check_random_state(seed)
    lo, hi = np.full(d, -c), np.full(d, c)
    _, f_opt = solve_pwa(A, b, lo, hi)
    mechs = {
        "M_P": lambda: pwa_perturb_objective(A, b, bounds=bounds, epsilon=EPS, offset_bound=bmax, random_state=src),
        "M_S (proj.)": lambda: pwa_perturb_solution(A, b, bounds=bounds, epsilon=EPS, random_state=src),
        "M_E (Gibbs)": lambda: pwa_exponential(A, b, bounds=bounds, epsilon=EPS, offset_bound=bmax, sampler="gibbs",
                                               n_steps=GIBBS_SWEEPS, certified_only=False, random_state=src),
        "DP-SG avg": lambda: pwa_subgradient(A, b, bounds=bounds, epsilon=EPS, offset_bound=bmax, n_iter=k,
                                             random_state=src),
        "DP-SG last": lambda: pwa_subgradient(A, b, bounds=bounds, epsilon=EPS, offset_bound=bmax, n_iter=k,
                                              output="last", random_state=src),
        "uniform (0-DP)": lambda: pwa_uniform(bounds, d, random_state=src),
    }
    row = {"f_opt": f_opt, "centre (0-DP)": pwa_objective(A, b, pwa_box_centre(bounds, d).x)}
    extra = {}
    for name, fn in mechs.items():
        results = [fn() for _ in range(N_DRAWS)]
        row[name] = stats([pwa_objective(A, b, r.x) for r in results])
        if name.startswith("M_E"):
            extra["M_E guarantee"] = results[0].guarantee
            extra["M_E delta"] = results[0].delta
    return row, extra


def fmt(cell):
    return f"{cell:.3f}" if isinstance(cell, float) else f"{cell['mean']:.2f} ± {cell['two_sigma']:.2f}"


def table(rows, key, title):
    cols = [c for c in rows[0]["row"] if c not in ()]
    lines = [f"### {title}", "", "| " + key + " | " + " | ".join(cols) + " | M_E guarantee (delta) |",
             "|" + "---|" * (len(cols) + 2)]
    for r in rows:
        g = f"{r['extra'].get('M_E guarantee', '')} ({r['extra'].get('M_E delta', 0):.2g})" if r["extra"] else ""
        lines.append(f"| {r[key]} | " + " | ".join(fmt(r["row"][c]) for c in cols) + f" | {g} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (3 draws per cell)")
    args = ap.parse_args(argv)
    if args.quick:
        global N_DRAWS
        N_DRAWS = 3
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    t0 = time.time()
    out = {"epsilon": EPS, "n_draws": N_DRAWS, "gibbs_sweeps": GIBBS_SWEEPS, "fig2": [], "fig3": [], "fig1": [],
           "machine": platform.platform(), "python": platform.python_version(),
           "started": time.strftime("%Y-%m-%d %H:%M"), "loadavg_start": [round(v, 2) for v in os.getloadavg()]}
    md = ["# Seed 001 (Han et al. 2014) reproduction, reduced grid", "",
          f"epsilon = {EPS}; {N_DRAWS} draws per cell (paper: 1000); mean ± 2 sigma of f(x_out) on the true b; "
          "instance a ~ N(0, I), b ~ N(0, 1), seed 0; adjacency eq. 4 (all offsets move by b_max).", ""]
    # Fig. 2: objective vs c
    for d in (2, 10):
        for bmax in (1.0, 0.1):
            rows = []
            A, b = instance(20, d)
            for c in (0.5, 1.0, 2.0, 5.0):
                row, extra = run_cell(A, b, c, bmax, seed=int(1000 * c) + d)
                rows.append({"c": c, "d": d, "b_max": bmax, "m": 20, "row": row, "extra": extra})
                print(f"fig2 d={d} bmax={bmax} c={c}: " + ", ".join(f"{k}={fmt(v)}" for k, v in row.items()),
                      flush=True)
            out["fig2"].extend(rows)
            md.append(table(rows, "c", f"Fig. 2: objective vs c (d={d}, m=20, b_max={bmax})"))
    # Fig. 3: objective vs m (nested pieces), c = 1, d = 2
    A_all, b_all = instance(100, 2, seed=1)
    rows = []
    for m in (5, 10, 20, 50, 100):
        row, extra = run_cell(A_all[:m], b_all[:m], 1.0, 1.0, seed=m)
        rows.append({"m": m, "d": 2, "c": 1.0, "b_max": 1.0, "row": row, "extra": extra})
        print(f"fig3 m={m}: " + ", ".join(f"{k}={fmt(v)}" for k, v in row.items()), flush=True)
    out["fig3"] = rows
    md.append(table(rows, "m", "Fig. 3: objective vs m (nested pieces, d=2, c=1, b_max=1)"))
    # Fig. 1: objective vs k; DP-SG vs the non-private subgradient method (epsilon -> inf) and uniform selection
    A, b = instance(20, 2)
    lines = ["### Fig. 1: objective vs iterations k (d=2, m=20, c=1, b_max=1)", "",
             "| k | DP-SG avg | DP-SG last | non-private SG avg | uniform selection avg |", "|---|---|---|---|---|"]
    for k in (10, 30, 100, 300, 1000):
        src = check_random_state(k)
        n = N_DRAWS if k <= 300 else N_DRAWS // 2
        cell = {}
        for name, eps, output in (("DP-SG avg", EPS, "average"), ("DP-SG last", EPS, "last"),
                                  ("non-private SG avg", 1e12, "average"), ("uniform selection avg", 1e-12,
                                                                            "average")):
            vals = [pwa_objective(A, b, pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=eps, offset_bound=1.0,
                                                        n_iter=k, output=output, random_state=src).x)
                    for _ in range(n if eps == EPS or name.startswith("uniform") else 1)]
            cell[name] = stats(vals) if len(vals) > 1 else {"mean": float(vals[0]), "two_sigma": 0.0}
        out["fig1"].append({"k": k, **cell})
        lines.append(f"| {k} | " + " | ".join(fmt(v) for v in cell.values()) + " |")
        print(f"fig1 k={k}: " + ", ".join(f"{a}={fmt(v)}" for a, v in cell.items()), flush=True)
    md.append("\n".join(lines) + "\n")
    out["seconds"] = time.time() - t0
    out["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    md.append(f"Run {out['started']}; total run time {out['seconds']:.0f} s on {out['machine']} (one thread); "
              f"load average {out['loadavg_start']} at start, {out['loadavg_end']} at end.\n")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "seed001_piecewise.json").write_text(json.dumps(out, indent=1, default=float))
    (OUT / "seed001_piecewise.md").write_text("\n".join(md))
    print(f"done in {out['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    assert math.isfinite(EPS)
    main()
