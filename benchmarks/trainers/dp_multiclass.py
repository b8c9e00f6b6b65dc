"""More than two classes: the DP estimators at their defaults, beside scikit-learn and peers.

Each estimator fits one weight vector per class in one run with the fit's whole budget: ``DPLogisticRegression`` a
multinomial (softmax) model, ``DPLinearSVC`` and ``DPSVC`` Crammer & Singer's hinge smoothed by a softmax. A
K-class fit costs exactly what a binary fit costs (docs/trainers.md, "Parameters and defaults"). Data (nothing
downloaded): iris (3 classes), wine (3), digits (10), a 4-class synthetic set of 5 000 rows and a 5-class one of
20 000 rows (``make_classification``, 20 features); rows standardised and scaled to unit L2 norm; 70/30 stratified
split.
Budgets ε ∈ {0.1, 0.3, 1, 3, 10} per fit, δ = 1e-6; median test accuracy over the noise seeds.

Peers, measured in the same run:

* non-private scikit-learn with the same C (and γ): ``LogisticRegression`` (multinomial), ``LinearSVC``
  (one-vs-rest) and ``SVC`` (RBF, one-vs-one);
* diffprivlib 0.6.6 ``LogisticRegression(epsilon, data_norm=1)``: one-vs-rest with ε / K per class,
  objective perturbation, pure ε-DP. It runs in a side venv with the scikit-learn it supports (see
  ``benchmarks/trainers/dp_trainer_peer_table.py``'s docstring: ``python3 -m venv /tmp/peer-venv`` and
  ``/tmp/peer-venv/bin/pip install "diffprivlib==0.6.6" "scikit-learn==1.7.2"``); skipped if absent;
* Opacus 1.6.0 DP-SGD on a linear layer with the softmax cross-entropy (a multinomial model, one clipped
  gradient for all K outputs) at target ε/2 add/remove, i.e. replace-one (ε, (1 + e^(ε/2)) 1e-6); clip 1,
  Poisson batches of n/10, 5 epochs, SGD lr 1, not tuned; skipped if Opacus is not installed.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_multiclass.py [--seeds 5] [--quick]``. Writes
``benchmarks/results/dp_multiclass.{json,md}`` (``--quick``: a smoke run, into a temporary directory).
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
import sklearn  # noqa: E402
from sklearn.datasets import load_digits, load_iris, load_wine, make_classification  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import privtune  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import RESULTS, output_dir  # noqa: E402

# the side venv's diffprivlib worker (the same LogisticRegression(epsilon, data_norm=1) call), Opacus' DP-SGD (its
# softmax loss), the non-private references and the monotonicity rule
from benchmarks.trainers.dp_trainer_peer_table import DEFAULT_PEER, monotone, opacus_acc, reference, run_diffprivlib  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-6
ESTIMATORS = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}


def datasets(quick: bool):
    out = [("iris", *load_iris(return_X_y=True)), ("wine", *load_wine(return_X_y=True))]
    if quick:
        return out
    out.append(("digits", *load_digits(return_X_y=True)))
    X, y = make_classification(n_samples=5000, n_features=20, n_informative=8, n_classes=4, n_clusters_per_class=1,
                               random_state=0)
    out.append(("synthetic 5k, 4 classes", X, y))
    X, y = make_classification(n_samples=20000, n_features=20, n_informative=8, n_classes=5,
                               n_clusters_per_class=1, random_state=1)
    out.append(("synthetic 20k, 5 classes", X, y))
    return out


def prepare(X, y):
    X = StandardScaler().fit_transform(X)
    X = X / np.maximum(1e-12, np.linalg.norm(X, axis=1, keepdims=True))
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="iris and wine, two seeds; writes into a temporary directory")
    ap.add_argument("--peer-python", default=os.environ.get("PRIVTUNE_PEER_PYTHON", DEFAULT_PEER))
    args = ap.parse_args()
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    seeds = range(2 if args.quick else args.seeds)
    data = [(name, *prepare(X, y)) for name, X, y in datasets(args.quick)]
    try:
        import opacus
        opacus_version = opacus.__version__
    except ImportError as exc:
        opacus_version = None
        print(f"*** Opacus column SKIPPED ({exc}); install with .venv/bin/pip install opacus==1.6.0", flush=True)
    dpl, dpl_status = run_diffprivlib(args.peer_python, [d[1:] for d in data], seeds)
    rows = []
    for i, (name, Xtr, Xte, ytr, yte) in enumerate(data):
        classes = np.unique(ytr)
        for est_name, cls in ESTIMATORS.items():
            est = cls(classes=classes)
            ref = reference(est_name, Xtr, ytr, Xte, yte, est)
            accs = [float(np.median([cls(epsilon=e, classes=classes, random_state=s).fit(Xtr, ytr).score(Xte, yte)
                                     for s in seeds])) for e in EPS]
            row = {"dataset": name, "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]),
                   "n_classes": int(classes.shape[0]), "estimator": est_name, "reference": ref,
                   "methods": {"privtune": accs}}
            if est_name == "DPLogisticRegression":
                if dpl is not None:
                    row["methods"]["diffprivlib"] = [float(np.median(dpl["accuracy"][str(i)][repr(e)])) for e in EPS]
                if opacus_version is not None:
                    row["methods"]["opacus"] = [float(np.median([opacus_acc(Xtr, ytr, Xte, yte, e, s, "softmax")[0]
                                                                 for s in seeds])) for e in EPS]
            row["monotone"] = {m: monotone(a, Xte.shape[0]) for m, a in row["methods"].items()}
            rows.append(row)
            print(f"{name:26s} {est_name:22s} ref {ref:.3f} privtune " + " ".join(f"{a:.3f}" for a in accs),
                  flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(),
            "python": platform.python_version(), "privtune": privtune.__version__, "sklearn": sklearn.__version__,
            "numpy": np.__version__, "opacus": opacus_version, "seeds": len(seeds), "epsilons": list(EPS),
            "delta": DELTA, "seconds": round(time.perf_counter() - t0, 1),
            "diffprivlib": None if dpl is None else dpl["diffprivlib"],
            "diffprivlib_sklearn": None if dpl is None else dpl["sklearn"], "diffprivlib_status": dpl_status}
    suffix = "_quick" if args.quick else ""
    OUT.mkdir(exist_ok=True)
    (OUT / f"dp_multiclass{suffix}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (OUT / f"dp_multiclass{suffix}.md").write_text(markdown(meta, rows))
    print(f"wrote {OUT / f'dp_multiclass{suffix}.md'} in {meta['seconds']} s")


LABELS = {"privtune": "privtune (default)", "diffprivlib": "diffprivlib (pure ε, ε/K per class)",
          "opacus": "Opacus DP-SGD softmax at ε/2"}


def markdown(meta, rows) -> str:
    L = ["# More than two classes: the DP estimators at their defaults\n",
         f"Run {meta['date']}, {meta['platform']}, {meta['seconds']} s; python {meta['python']}, privtune "
         f"{meta['privtune']}, scikit-learn {meta['sklearn']}, numpy {meta['numpy']}, opacus "
         f"{meta['opacus'] or 'not installed'}; diffprivlib {meta['diffprivlib'] or '-'} (scikit-learn "
         f"{meta['diffprivlib_sklearn'] or '-'}, side venv; {meta['diffprivlib_status']}). "
         "`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_multiclass.py`.\n",
         f"Median test accuracy over {meta['seeds']} noise seeds; rows standardised and scaled to unit L2 norm; "
         "70/30 stratified split. privtune: each estimator at its defaults with the classes declared, "
         "(ε, 1e-6)-DP replace-one, one run on one weight vector per class (multinomial for DPLogisticRegression, "
         "a smoothed multiclass hinge for the SVMs). Reference: non-private "
         "scikit-learn (LogisticRegression, multinomial / LinearSVC / SVC rbf; same C and γ). Monotone: "
         "non-decreasing in ε within max(1 point, 2 test rows).\n",
         "| dataset | n train | K | estimator | method | " + " | ".join(f"ε = {e:g}" for e in EPS)
         + " | gap to reference at ε = 1 | monotone |",
         "|---|---|---|---|---|" + "---|" * len(EPS) + "---|---|"]
    for r in rows:
        head = f"| {r['dataset']} | {r['n_train']} | {r['n_classes']} | {r['estimator']} "
        L.append(head + "| non-private reference | " + " | ".join(f"{r['reference']:.3f}" for _ in EPS)
                 + " | | |")
        for m, accs in r["methods"].items():
            gap = 100 * (r["reference"] - accs[EPS.index(1.0)])
            L.append(head + f"| {LABELS[m]} | " + " | ".join(f"{a:.3f}" for a in accs)
                     + f" | {gap:.1f} | {'yes' if r['monotone'][m] else 'NO'} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
