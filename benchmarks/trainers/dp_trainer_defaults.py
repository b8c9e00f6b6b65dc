"""Do the DP estimators learn at their defaults, on several data sets and budgets? (issue 11)

Each of ``DPLogisticRegression``, ``DPLinearSVC`` and ``DPSVC`` is fitted at its
defaults (every parameter but ``epsilon`` and ``classes``) on eight binary tasks
that ship with scikit-learn or are generated (nothing is downloaded), with rows
standardised (public preprocessing, for the benchmark) and scaled to unit L2
norm (the declared bound), per-fit ε ∈ {0.1, 0.3, 1, 3, 10}, δ = 1e-6 (the
default Gaussian noise), median test accuracy over the noise seeds, and the
steps the solver ran. References, fitted on the same rows: non-private
scikit-learn ``LogisticRegression`` / ``LinearSVC`` / ``SVC(kernel="rbf")`` with
the same ``C`` (and ``gamma``), and for ``DPSVC`` also a non-private
``LinearSVC`` on the variant's own feature map (as fitted at ε = 1: the Taylor
map or the random Fourier features, with their centring, balance and linear
share), whose gap to ``SVC`` is the map's approximation, not privacy. Two older settings are
measured alongside for ``DPLogisticRegression``: ``horizon="paper"`` with
``solver="nag-opt"`` (Kuru et al.'s T*) and the previous default (an L1 row bound
of 1 under Gaussian noise, 20 steps, intercept scaling 1), emulated by clipping
the rows to L1 norm 1 first; and for ``DPSVC`` the plain random-feature map
(``reference_norm=None``, its previous default) beside the centred one, and the random Fourier features
(``features="fourier"``, the map before ``features="auto"``) beside the default.

Checks printed at the end: (a) accuracy non-decreasing in ε within one point
(or two test rows, whichever is larger) for every estimator and data set;
(b) at per-fit ε = 1, the gap to the non-private reference for n ≥ 10 000
training rows (target ≤ 1 point) and for n ≈ 400-1 400 (target ≤ 4 points).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_trainer_defaults.py [--seeds 9] [--quick]``
(about 10 minutes on 2 cores with 9 seeds).
Writes ``benchmarks/results/dp_trainer_defaults.json`` and ``.md``.
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
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

import privtune  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.optim._losses import clip_rows  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, RESULTS, datasets, output_dir, prepare  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)


def references(Xtr, ytr, Xte, yte, est) -> dict[str, float]:
    C = est.C
    if isinstance(est, DPLogisticRegression):
        return {"sklearn": LogisticRegression(C=C, max_iter=5000).fit(Xtr, ytr).score(Xte, yte)}
    if isinstance(est, DPLinearSVC):
        return {"sklearn": LinearSVC(C=C, max_iter=20000).fit(Xtr, ytr).score(Xte, yte)}
    # The estimator's own feature map as fitted at ε = 1 (public: it reads n, d and the parameters only; the
    # Taylor map's column balance depends on ε, so the map of the ε = 1 column), with a non-private LinearSVC.
    mapped = clone(est).set_params(epsilon=1.0, random_state=0).fit(Xtr, ytr)
    Ftr, Fte = mapped._features(Xtr, fitting=False), mapped._features(Xte, fitting=False)
    return {"sklearn": SVC(C=C, gamma=est.gamma).fit(Xtr, ytr).score(Xte, yte),
            "same_features": LinearSVC(C=C, max_iter=20000).fit(Ftr, ytr).score(Fte, yte),
            "map": f"{mapped.features_} {mapped.n_components_}"
                   + (f" + {Xtr.shape[1]} linear" if mapped.features_ == "fourier" and mapped.linear_share_ else "")}


def median_acc(make, Xtr, ytr, Xte, yte, seeds):
    fits = [make(s).fit(Xtr, ytr) for s in range(seeds)]
    return float(np.median([f.score(Xte, yte) for f in fits])), int(np.median([f.n_iter_ for f in fits]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (two tasks, two seeds)")
    args = ap.parse_args()
    if args.quick:
        args.seeds = 2
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    rows = []
    for name, X, y in datasets(args.quick):
        Xtr, Xte, ytr, yte = prepare(X, y)
        majority = float(max(np.mean(yte), 1 - np.mean(yte)))
        variants = {
            "DPLogisticRegression": (DPLogisticRegression, {}, None),
            "DPLinearSVC": (DPLinearSVC, {}, None),
            "DPSVC": (DPSVC, {}, None),
            "DPSVC, random Fourier features (features='fourier')": (DPSVC, {"features": "fourier"}, None),
            "DPSVC, plain random features (reference_norm=None)": (DPSVC, {"reference_norm": None,
                                                                          "features": "fourier"}, None),
            "DPLogisticRegression, paper (nag-opt, horizon='paper')":
                (DPLogisticRegression, {"solver": "nag-opt", "horizon": "paper"}, None),
            "DPLogisticRegression, previous default (L1 bound 1, 20 steps)":
                (DPLogisticRegression, {"horizon": "max_iter", "max_iter": 20, "intercept_scaling": 1.0}, "l1"),
        }
        for label, (cls, kw, clip) in variants.items():
            Xa, Xb = Xtr, Xte
            if clip == "l1":
                Xa = clip_rows(Xtr, 1.0, 1.0, mode="rows", owner="benchmark")
                Xb = clip_rows(Xte, 1.0, 1.0, mode="rows", owner="benchmark")
            refs = references(Xtr, ytr, Xte, yte, cls(classes=[0, 1], **kw))
            accs, steps = [], []
            for eps in EPS:
                a, t = median_acc(lambda s, e=eps, c=cls, k=kw: c(epsilon=e, classes=[0, 1], random_state=s, **k),
                                  Xa, ytr, Xb, yte, args.seeds)
                accs.append(a)
                steps.append(t)
            slack = max(0.01, 2.0 / len(yte))
            monotone = all(b >= a - slack for a, b in zip(accs, accs[1:], strict=False))
            row = {"dataset": name, "n_train": int(len(ytr)), "d": int(X.shape[1]), "estimator": label,
                   "accuracy": accs, "steps": steps, "references": refs, "majority": majority,
                   "monotone": monotone, "gap_eps1": 100 * (refs["sklearn"] - accs[2])}
            rows.append(row)
            print(f"{name[:26]:26s} n={len(ytr):6d} {label[:40]:40s} "
                  + " ".join(f"{a:.3f}(T={t})" for a, t in zip(accs, steps, strict=True))
                  + f" | ref {refs['sklearn']:.3f} gap@1 {row['gap_eps1']:.1f} mono {monotone}", flush=True)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seconds": round(time.perf_counter() - t0, 1), "seeds": args.seeds, "quick": args.quick}
    OUT.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    (OUT / f"dp_trainer_defaults{suffix}.json").write_text(json.dumps({"meta": meta, "epsilons": EPS, "rows": rows},
                                                                      indent=1))
    (OUT / f"dp_trainer_defaults{suffix}.md").write_text(render(meta, rows))
    print(f"wrote {OUT / f'dp_trainer_defaults{suffix}.md'} in {meta['seconds']} s")


def render(meta, rows) -> str:
    L = ["# DP estimators at their defaults (issue 11)\n",
         f"Run {meta['run']}, {meta['platform']}, privtune {meta['privtune']}, {meta['seeds']} noise seeds per cell "
         f"(median test accuracy; T = median steps run), rows standardised and scaled to unit L2 norm, 70/30 "
         f"stratified split, δ = 1e-6. `python benchmarks/trainers/dp_trainer_defaults.py`. Reference: non-private "
         "scikit-learn with the same C (LogisticRegression / LinearSVC / SVC(rbf)); for DPSVC also \"same "
         "features\": a non-private LinearSVC on the variant's own feature map as fitted at ε = 1 (map and column "
         "count in brackets). Gap: reference minus DP accuracy at per-fit ε = 1, in points. "
         "Monotone: non-decreasing in ε within max(1 point, 2 test rows).\n",
         "| dataset | n train | estimator | " + " | ".join(f"ε = {e:g}" for e in EPS)
         + " | reference | same features | gap at ε = 1 | monotone | majority |",
         "|---|---|---|" + "---|" * (len(EPS) + 5)]
    for r in rows:
        cells = " | ".join(f"{a:.3f} (T={t})" for a, t in zip(r["accuracy"], r["steps"], strict=True))
        same = r["references"].get("same_features")
        if same is not None and "map" in r["references"]:
            same = f"{same:.3f} ({r['references']['map']})"
        elif same is not None:
            same = f"{same:.3f}"
        L.append(f"| {r['dataset']} | {r['n_train']} | {r['estimator']} | {cells} "
                 f"| {r['references']['sklearn']:.3f} "
                 f"| {'' if same is None else same} | {r['gap_eps1']:.1f} "
                 f"| {'yes' if r['monotone'] else 'NO'} "
                 f"| {r['majority']:.3f} |")
    defaults = [r for r in rows if r["estimator"] in ("DPLogisticRegression", "DPLinearSVC", "DPSVC")]
    L += ["", "## Checks (defaults only)", ""]
    L.append(f"- monotone in ε on {sum(r['monotone'] for r in defaults)} of {len(defaults)} (estimator, dataset) "
             "pairs; not monotone: " + (", ".join(f"{r['estimator']} on {r['dataset']}" for r in defaults
                                                 if not r["monotone"]) or "none") + ".")
    for lo, hi, target in ((10_000, 10**9, 1.0), (300, 1_500, 4.0)):
        sel = [r for r in defaults if lo <= r["n_train"] < hi]
        if sel:
            L.append(f"- n train in [{lo}, {hi}): gap at ε = 1 (target ≤ {target:g} points): "
                     + ", ".join(f"{r['estimator']} / {r['dataset']} {r['gap_eps1']:.1f}" for r in sel) + ".")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
