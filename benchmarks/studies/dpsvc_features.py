"""DPSVC's centred kernel features (random Fourier or Taylor) against the plain map, over gamma and epsilon (issue 11).

``DPSVC(reference_norm=1.0)`` (the default) centres and scales the random Fourier features for inputs of unit
norm, ``(phi(x) - e^{-gamma} phi(0)) / sqrt(1 - e^{-2 gamma})``, then clips them to norm 1;
``reference_norm=None`` is the plain map ``phi`` clipped to norm 1 (the map before this change). Both are
public, data-independent maps with the same declared bounds, so the guarantee is the same: only accuracy moves.

Protocol: the nine binary tasks of ``benchmarks/trainers/dp_trainer_defaults.py`` (standardised, rows scaled to unit
L2 norm, 70/30 stratified split), ``DPSVC`` at its defaults but ``gamma`` in {0.1, 0.3, 1 (the default), 3} and
``reference_norm`` in {1.0, None}, per-fit epsilon in {0.1, 0.3, 1, 3, 10} (delta 1e-6), median test accuracy
over noise seeds 0..S-1 (``--seeds``, default 5). Reported: every cell, and per gamma the mean, the worst and the
best difference (centred minus plain, in points) over the 45 (task, epsilon) cells, and how many cells move by
more than one point either way. A second part keeps the rows standardised only (norms near sqrt(d), away from
the reference norm 1) with ``gamma = 1 / d`` (scikit-learn's ``"scale"`` for standardised features), the case the
default ``reference_norm`` is not tuned for.

``--features auto`` (the default) measures the map ``DPSVC`` picks at its defaults (``features="auto"``: the
Taylor map where the training set has at least 4 rows per column of it, else the random Fourier features; the
table names each cell's map). The Taylor map is centred on the unit sphere with ``reference_norm=1.0`` and left
uncentred with ``None`` (``privtune/svm/_taylor.py``). It writes ``benchmarks/results/dpsvc_features.json`` and
``.md``. ``--features fourier`` runs the study the default ``reference_norm`` was chosen on (2026-11-26 16:42,
before the Taylor map, the linear share, the 1 000-step cap and the horizon floor) with that study's map and
parameters: the random Fourier features with ``linear_share=0``, ``max_iter=100`` and ``horizon_floor=0``,
writing ``dpsvc_features_fourier.json`` and ``.md``. The stored files are that first run's. A rerun on
2026-11-27 moved 383 of the 450 cells (the horizon rule and the noise streams changed in between) and kept its
summary: centred minus plain +5.8 / +2.8 / +0.8 / -0.0 points at gamma 0.1 / 0.3 / 1 / 3 (first run +5.9 / +3.0
/ +0.8 / +0.1), +0.3 on standardised rows (+0.4).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dpsvc_features.py [--seeds 5] [--features auto|fourier]``
(4 to 6 minutes on one core on 2026-11-27; 9 minutes on 2026-11-26).
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
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import QUICK_HELP, RESULTS, datasets, output_dir, quick_tasks  # noqa: E402
from privtune.svm import DPSVC  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
GAMMAS = (0.1, 0.3, 1.0, 3.0)
MAPS = {"centred": 1.0, "plain": None}
#: Per ``--features``: the parameters pinned beside ``gamma`` and ``reference_norm`` and the results' file stem.
SETTINGS = {"auto": ({}, "dpsvc_features"),
            "fourier": ({"features": "fourier", "linear_share": 0.0, "max_iter": 100, "horizon_floor": 0.0},
                        "dpsvc_features_fourier")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--features", choices=sorted(SETTINGS), default="auto")
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args()
    if args.quick:  # breast cancer cut to 600 rows, one seed
        args.seeds = 1
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    pinned, stem = SETTINGS[args.features]
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    rows = []
    for part, name, X, y in [("unit", *t) for t in quick_tasks(datasets(False), args.quick)] + \
            [("standardised", *t) for t in quick_tasks(datasets(False), args.quick)]:
        X = StandardScaler().fit_transform(X)
        if part == "unit":
            X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        for gamma in (GAMMAS if part == "unit" else (1.0 / X.shape[1],)):
            row = {"part": part, "dataset": name, "n_train": int(len(ytr)), "gamma": gamma,
                   "majority": float(max(np.mean(yte), 1 - np.mean(yte)))}
            for label, r in MAPS.items():
                row[label] = [float(np.median([DPSVC(gamma=gamma, epsilon=e, classes=[0, 1], reference_norm=r,
                                                     random_state=s, **pinned).fit(Xtr, ytr).score(Xte, yte)
                                               for s in range(args.seeds)])) for e in EPS]
            fitted = DPSVC(gamma=gamma, epsilon=1.0, classes=[0, 1], random_state=0, **pinned).fit(Xtr, ytr)
            row["map"] = (f"taylor, degree {fitted.degree_}" if fitted.features_ == "taylor" else "fourier") \
                + f", {fitted.n_components_} columns"
            rows.append(row)
            print(f"{part[:5]} {name[:24]:24s} gamma={gamma:<6.3g} plain " + " ".join(f"{a:.3f}" for a in row["plain"])
                  + " | centred " + " ".join(f"{a:.3f}" for a in row["centred"]), flush=True)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seeds": args.seeds, "seconds": round(time.perf_counter() - t0, 1), "features": args.features,
            "pinned": pinned}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{stem}.json").write_text(json.dumps({"meta": meta, "epsilons": EPS, "rows": rows}, indent=1))
    (OUT / f"{stem}.md").write_text(render(meta, rows))
    print(f"wrote {OUT / (stem + '.md')} in {meta['seconds']} s")


def render(meta, rows) -> str:
    pinned = meta.get("pinned", {})
    pinned_text = (" but " + ", ".join(f"`{k}={v!r}`" for k, v in pinned.items())) if pinned else ""
    L = ["# DPSVC: centred kernel features against the plain map (issue 11)\n",
         f"Run {meta['run']}, {meta['platform']}, privtune {meta['privtune']}, {meta['seeds']} noise seeds per cell "
         f"(median test accuracy), {meta['seconds']} s. `OMP_NUM_THREADS=1 .venv/bin/python "
         f"benchmarks/studies/dpsvc_features.py --features {meta.get('features', 'fourier')}`. Rows standardised "
         f"(and in "
         "the first part scaled to unit L2 norm), 70/30 stratified split, δ = 1e-6, every other parameter at its "
         f"default{pinned_text}. centred: `reference_norm=1.0` (the default); plain: `reference_norm=None`. Map: "
         "the kernel map the fit at ε = 1 used.\n",
         "## Summary (centred minus plain, points, over the nine tasks × five ε)\n",
         "| rows | γ | mean | worst | best | cells better by > 1 point | cells worse by > 1 point |",
         "|---|---|---|---|---|---|---|"]
    groups = [("unit", g, lambda r, g=g: r["part"] == "unit" and r["gamma"] == g) for g in GAMMAS]
    groups.append(("standardised", "1/d", lambda r: r["part"] == "standardised"))
    for part, gamma, keep in groups:
        d = np.array([100 * (c - p) for r in rows if keep(r) for p, c in zip(r["plain"], r["centred"], strict=True)])
        L.append(f"| {'unit norm' if part == 'unit' else 'standardised only'} | {gamma} | {d.mean():+.1f} | "
                 f"{d.min():+.1f} | {d.max():+.1f} | {int((d > 1).sum())} of {d.size} | "
                 f"{int((d < -1).sum())} of {d.size} |")
    L += ["", "## Every cell\n",
          "| rows | dataset | n train | γ | map | centring | " + " | ".join(f"ε = {e:g}" for e in EPS)
          + " | majority |",
          "|---|---|---|---|---|---|" + "---|" * (len(EPS) + 1)]
    for r in rows:
        for label in MAPS:
            L.append(f"| {r['part']} | {r['dataset']} | {r['n_train']} | {r['gamma']:.3g} | "
                     f"{r.get('map', 'fourier')} | {label} | "
                     + " | ".join(f"{a:.3f}" for a in r[label]) + f" | {r['majority']:.3f} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
