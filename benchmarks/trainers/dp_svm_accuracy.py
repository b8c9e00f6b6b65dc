"""Accuracy of privtune's DP SVMs (DPSVC, DPLinearSVC) against non-private scikit-learn, and an end-to-end tuning run.

There is no DP SVM among the peers named in issue 6 (diffprivlib has none; Opacus trains networks), so the
reference is non-private scikit-learn on the same splits. Measured here:

1. ``DPSVC(n_components=100)`` (its default ``features="auto"`` takes the Taylor map there: 44 columns of degree
   up to 8 on 14 000 training rows, with the default column balance) on ``make_circles`` (20 000 rows, noise 0.1,
   factor 0.5; 70/30 split), over a grid C in {0.01, 1, 100} x gamma in {0.3, 1, 3}, at epsilon in {0.1, 1, 10},
   with the default Gaussian noise (delta = 1e-6) and with ``noise="laplace"`` (pure epsilon-DP); median test
   accuracy of 3 seeds per cell, against ``sklearn.svm.SVC`` with the same C and gamma.
2. ``DPLinearSVC`` and ``DPSVC`` on breast cancer (standardised with the training split's statistics, a non-private
   step, then rows normalised to L2 norm 1; 80/20 stratified split), C = 1, at the same epsilons, median of 5 seeds,
   against ``sklearn.svm.LinearSVC`` / ``SVC``.
3. End to end: ``PrivateSearchCV(DPSVC(epsilon=0.15), {"C", "gamma"}, sensitive="both", epsilon=1, delta=1e-6,
   n_iter=5)`` on ``make_circles`` (training and validation rows both sensitive; 5 seeds), the refit model's test
   accuracy and the privacy spent.

Usage: python benchmarks/trainers/dp_svm_accuracy.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, make_circles  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

from privtune import PrivateSearchCV  # noqa: E402
from privtune.space import Real  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, output_dir  # noqa: E402

EPSILONS = [0.1, 1.0, 10.0]
NOISES = ["gaussian", "laplace"]


def circles(n_samples=20_000):
    X, y = make_circles(n_samples=n_samples, noise=0.1, factor=0.5, random_state=0)
    return train_test_split(X, y, test_size=0.3, random_state=0)


def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    Xtr /= np.linalg.norm(Xtr, axis=1, keepdims=True)
    Xte /= np.linalg.norm(Xte, axis=1, keepdims=True)
    return Xtr, Xte, ytr, yte


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args(argv)
    # --quick: 600 circles rows, one (C, gamma) cell, one seed per cell, one end-to-end search
    n_circles, grid, seeds = (600, (1.0,), 1) if args.quick else (20_000, (0.01, 1.0, 100.0), None)
    out_dir = output_dir(args.quick)
    t_start = time.time()
    lines = ["# DP SVMs: test accuracy against non-private scikit-learn", "",
             "privtune's default noise is Gaussian ((eps, 1e-6)-DP, privtune's extension); `laplace` is pure eps-DP. "
             "Median test accuracy over seeds; the non-private reference has no epsilon.", ""]
    out: dict = {"circles_grid": [], "breast_cancer": [], "end_to_end": []}

    # 1. DPSVC grid on circles
    Xtr, Xte, ytr, yte = circles(n_circles)
    lines += ["## DPSVC(n_components=100) on make_circles (20 000 rows; the Taylor map, 44 columns), "
              "3 seeds per cell", "",
              "| C | gamma | sklearn SVC | " + " | ".join(f"{nz} eps={e}" for nz in NOISES for e in EPSILONS) + " |",
              "|---|---|---|" + "---|" * (len(NOISES) * len(EPSILONS))]
    for C in grid:
        for gamma in (1.0,) if args.quick else (0.3, 1.0, 3.0):
            ref = SVC(C=C, gamma=gamma).fit(Xtr, ytr).score(Xte, yte)
            cells = []
            for nz in NOISES:
                for eps in EPSILONS:
                    accs = [DPSVC(C=C, gamma=gamma, n_components=100, epsilon=eps, noise=nz, classes=[0, 1],
                                  random_state=s).fit(Xtr, ytr).score(Xte, yte) for s in range(seeds or 3)]
                    cells.append(float(np.median(accs)))
                    out["circles_grid"].append(dict(C=C, gamma=gamma, noise=nz, epsilon=eps, acc=cells[-1],
                                                    sklearn=ref))
            lines.append(f"| {C} | {gamma} | {ref:.4f} | " + " | ".join(f"{a:.4f}" for a in cells) + " |")
            print(lines[-1], flush=True)

    # 2. breast cancer
    Xtr, Xte, ytr, yte = breast_cancer()
    d = Xtr.shape[1]
    lines += ["", "## Breast cancer (C = 1), 5 seeds", "",
              "| model | sklearn | " + " | ".join(f"{nz} eps={e}" for nz in NOISES for e in EPSILONS) + " |",
              "|---|---|" + "---|" * (len(NOISES) * len(EPSILONS))]
    models = {
        "linear SVM": (lambda: LinearSVC(C=1.0),
                       lambda eps, nz, s: DPLinearSVC(epsilon=eps, C=1.0, data_norm=float(np.sqrt(d)),
                                                      data_norm_l2=1.0, noise=nz, random_state=s)),
        "RBF SVM (gamma 1/d, 200 features)": (
            lambda: SVC(C=1.0, gamma=1.0 / d),
            lambda eps, nz, s: DPSVC(C=1.0, gamma=1.0 / d, n_components=200, epsilon=eps, noise=nz,
                                     random_state=s)),
    }
    for name, (ref_f, dp_f) in models.items():
        ref = ref_f().fit(Xtr, ytr).score(Xte, yte)
        cells = []
        for nz in NOISES:
            for eps in EPSILONS:
                accs = [dp_f(eps, nz, s).fit(Xtr, ytr).score(Xte, yte) for s in range(seeds or 5)]
                cells.append(float(np.median(accs)))
                out["breast_cancer"].append(dict(model=name, noise=nz, epsilon=eps, acc=cells[-1], sklearn=ref))
        lines.append(f"| {name} | {ref:.4f} | " + " | ".join(f"{a:.4f}" for a in cells) + " |")
        print(lines[-1], flush=True)

    # 3. end-to-end tuning with both roles sensitive
    X, y = make_circles(n_samples=n_circles, noise=0.1, factor=0.5, random_state=0)
    X_rest, X_te, y_rest, y_te = train_test_split(X, y, test_size=0.2, random_state=1)
    X_tr, X_val, y_tr, y_val = train_test_split(X_rest, y_rest, test_size=0.3, random_state=0)
    lines += ["", "## End to end: PrivateSearchCV over C and gamma, training and validation rows sensitive", "",
              "`DPSVC(epsilon=0.15, n_components=50)`, C in [1e-4, 10], gamma in [0.1, 30] (log), n_iter = 5, "
              "64 candidates, budget (1, 1e-6) per role; test accuracy of the refit model on 4 000 held-out rows.",
              "", "| seed | best C | best gamma | test accuracy | training spent | overall spent |",
              "|---|---|---|---|---|---|"]
    for seed in range(seeds or 5):
        s = PrivateSearchCV(DPSVC(epsilon=0.15, n_components=50, classes=[0, 1]),
                            {"C": Real(1e-4, 10.0, log=True), "gamma": Real(0.1, 30.0, log=True)},
                            sensitive="both", epsilon=1.0, delta=1e-6, n_iter=5, n_candidates=64,
                            random_state=seed).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
        acc = s.best_estimator_.score(X_te, y_te)
        tr, ov = s.privacy_spent_["training"], s.privacy_spent_["overall"]
        out["end_to_end"].append(dict(seed=seed, params=s.best_params_, acc=acc, training=[tr.epsilon, tr.delta],
                                      overall=[ov.epsilon, ov.delta]))
        lines.append(f"| {seed} | {s.best_params_['C']:.3g} | {s.best_params_['gamma']:.3g} | {acc:.4f} | "
                     f"({tr.epsilon:.3f}, {tr.delta:.0e}) | ({ov.epsilon:.3f}, {ov.delta:.0e}) |")
        print(lines[-1], flush=True)
    ref = SVC(C=1.0, gamma=1.0).fit(X_tr, y_tr).score(X_te, y_te)
    lines += ["", f"Non-private SVC(C=1, gamma=1) on the same split: {ref:.4f}. These seeds make the runs "
              "reproducible and are **not for release**."]
    elapsed = time.time() - t_start
    lines += ["", f"Wall time {elapsed:.0f} s (one core)."]
    text = "\n".join(lines)
    print(text)
    out_dir.mkdir(exist_ok=True)
    (out_dir / "dp_svm_accuracy.md").write_text(text + "\n")
    out["wall_time_s"] = elapsed
    (out_dir / "dp_svm_accuracy.json").write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
