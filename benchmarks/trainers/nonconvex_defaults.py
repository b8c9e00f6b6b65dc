"""Does ``DPNonConvexClassifier`` learn at its defaults, on several data sets and budgets? (issues 11 and 13)

``DPNonConvexClassifier`` (seed 004, solver ``"2opt-ls"``) is fitted at its
defaults (every parameter but ``epsilon``, ``loss`` and ``classes``) and, alongside,
at the previous defaults (``tolerance=0.07, max_iter=2000``: the paper's horizon
rule) and at two other horizon caps (``max_iter`` 10 and 20), on six binary
tasks that ship with scikit-learn or are generated (nothing is downloaded):
breast cancer (569 rows, 30 features), digits 0-4 against 5-9 (1 797 x 64) and
``make_classification`` sets of 1 500 x 30, 3 000 x 10, 6 000 x 5 and
20 000 x 20. Rows are standardised and scaled to L2 norm at most 1 (public
preprocessing for the benchmark; the estimator clips to its declared
``data_norm=1``), 70/30 stratified split. Per-fit epsilon in {0.1, 0.3, 1, 3, 10},
delta = 1e-6, both losses, median test accuracy over noise seeds 0..6, and the
share of runs that certified a second-order point. References: non-private
scikit-learn ``LogisticRegression`` and the noiseless ceiling of the same model
(epsilon = 1000, ``max_iter=200``, 3 seeds).

Checks printed at the end: (a) median accuracy non-decreasing in epsilon within
0.03 (seed-to-seed spread on a few hundred test rows) for every set and loss at
the defaults; (b) breast cancer at epsilon = 1 with the default solver and loss:
median >= 0.85 (issue 13's target).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/nonconvex_defaults.py [--seeds 7]``
(about 8 minutes on one core). Writes ``benchmarks/results/nonconvex_defaults.json`` and ``.md``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from privtune.linear_model import DPNonConvexClassifier  # noqa: E402

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
SETTINGS = {  # label -> keyword arguments on top of the defaults
    "default (tolerance 0.01, max_iter 5)": {},
    "max_iter 10": {"max_iter": 10},
    "max_iter 20": {"max_iter": 20},
    "previous default (tolerance 0.07, max_iter 2000)": {"tolerance": 0.07, "max_iter": 2000},
}
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, output_dir, prepare  # noqa: E402


def datasets():
    Xd, yd = load_digits(return_X_y=True)
    yield "breast cancer", prepare(*load_breast_cancer(return_X_y=True))
    yield "digits 0-4 vs 5-9", prepare(Xd, (yd < 5).astype(int))
    yield "synthetic 1500x30", prepare(*make_classification(n_samples=1500, n_features=30, n_informative=8,
                                                          random_state=2))
    yield "synthetic 3000x10", prepare(*make_classification(n_samples=3000, n_features=10, n_informative=5,
                                                          random_state=0))
    yield "synthetic 6000x5", prepare(*make_classification(n_samples=6000, n_features=5, n_informative=3,
                                                         random_state=1))
    yield "synthetic 20000x20", prepare(*make_classification(n_samples=20000, n_features=20, n_informative=6,
                                                           random_state=3))


def _cell(data, eps, seeds, **kw):
    Xtr, Xte, ytr, yte = data
    accs, cert = [], []
    for s in range(seeds):
        clf = DPNonConvexClassifier(epsilon=eps, classes=[0, 1], random_state=s, **kw).fit(Xtr, ytr)
        accs.append(clf.score(Xte, yte))
        cert.append(clf.certified_)
    return float(np.median(accs)), float(np.mean(cert))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (breast cancer only, one seed)")
    args = ap.parse_args()
    if args.quick:
        args.seeds = 1
    RESULTS = output_dir(args.quick)
    t0 = time.time()
    rows = []
    for name, data in datasets():
        if args.quick and name != "breast cancer":
            break
        Xtr, Xte, ytr, yte = data
        sk = LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte)
        for loss in ("sigmoid", "nonconvex_logistic"):
            ceiling = float(np.median([DPNonConvexClassifier(epsilon=1000.0, loss=loss, max_iter=200,
                                                             classes=[0, 1], random_state=s)
                                       .fit(Xtr, ytr).score(Xte, yte) for s in range(3)]))
            for label, kw in SETTINGS.items():
                cells = [_cell(data, eps, args.seeds, loss=loss, **kw) for eps in EPSILONS]
                rows.append({"dataset": name, "n_train": int(len(ytr)), "n_features": int(Xtr.shape[1]),
                             "loss": loss, "setting": label, "sklearn_lr": sk, "noiseless": ceiling,
                             "accuracy": [c[0] for c in cells], "certified": [c[1] for c in cells]})
                print(name, loss, label, " ".join(f"{c[0]:.3f}" for c in cells), flush=True)
    checks = []
    for r in rows:
        if r["setting"].startswith("default"):
            a = r["accuracy"]
            ok = all(a[i + 1] >= a[i] - 0.03 for i in range(len(a) - 1))
            checks.append((f"monotone within 0.03: {r['dataset']}, {r['loss']}", ok, " / ".join(f"{x:.3f}" for x in a)))
            if r["dataset"] == "breast cancer" and r["loss"] == "sigmoid":
                checks.append(("breast cancer, eps = 1, defaults: median >= 0.85", a[2] >= 0.85, f"{a[2]:.3f}"))
    elapsed = time.time() - t0
    RESULTS.mkdir(exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "seeds": args.seeds,
            "seconds": round(elapsed), "epsilons": EPSILONS, "delta": 1e-6}
    (RESULTS / "nonconvex_defaults.json").write_text(json.dumps({"meta": meta, "rows": rows, "checks": checks},
                                                                indent=1))
    eps_head = " | ".join(f"ε = {e:g}" for e in EPSILONS)
    lines = [f"# DPNonConvexClassifier at its defaults (median test accuracy over {args.seeds} noise seeds)", "",
             f"Run {meta['date']}, {meta['platform']}, {elapsed:.0f} s. "
             "`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/nonconvex_defaults.py`. Solver `2opt-ls`, "
             "delta = 1e-6, "
             "rows standardised and clipped to L2 norm 1. In brackets: the share of runs that certified a "
             "second-order point. `noiseless`: the same model at epsilon = 1000 with max_iter 200 (3 seeds); "
             "`sklearn LR`: non-private logistic regression.", ""]
    for loss in ("sigmoid", "nonconvex_logistic"):
        lines += [f"## loss = {loss}", "",
                  f"| data set (n train × d) | setting | {eps_head} | noiseless | sklearn LR |",
                  "|---|---|" + "---|" * len(EPSILONS) + "---|---|"]
        for r in rows:
            if r["loss"] != loss:
                continue
            cells = " | ".join(f"{a:.3f} ({c:.0%})" for a, c in zip(r["accuracy"], r["certified"], strict=True))
            lines.append(f"| {r['dataset']} ({r['n_train']} × {r['n_features']}) | {r['setting']} | {cells} | "
                         f"{r['noiseless']:.3f} | {r['sklearn_lr']:.3f} |")
        lines.append("")
    lines += ["## Checks", "", "| check | result | figures |", "|---|---|---|"]
    lines += [f"| {c} | {'met' if ok else 'NOT met'} | {fig} |" for c, ok, fig in checks]
    (RESULTS / "nonconvex_defaults.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(checks) - 1:]))
    print(f"wrote {RESULTS / 'nonconvex_defaults.md'} and .json in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
