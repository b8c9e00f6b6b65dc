"""Do the DP estimators learn at their defaults? ``solver="nag"`` (default) against the paper's ``"nag-opt"``.

Issue 11: the paper's horizon rule (Kuru et al., T* with μ = 1/(C n)) ran one
or a few steps at per-fit ε ≤ 1 on a few hundred rows -- the zero model. This
script fits ``DPLogisticRegression``, ``DPLinearSVC`` and ``DPSVC`` at their
defaults (every parameter but ``epsilon``, ``classes`` and the solver) on
three datasets with rows standardised (public preprocessing, for the benchmark)
and scaled to unit L2 norm (the declared bound), ε ∈ {0.1, 0.3, 1, 3, 10},
median test accuracy over 5 noise seeds, with the solver's steps ``n_iter_``;
non-private ``LogisticRegression`` and the majority rate for reference.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/dp_trainer_defaults.py`` (about a minute).
Writes ``benchmarks/results/dp_trainer_defaults.json`` and ``.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import privtune  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
SEEDS = 5
ESTIMATORS = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}


def datasets():
    yield "breast cancer (398 train rows, d=30)", load_breast_cancer(return_X_y=True)
    yield "synthetic 5k (3 500 train rows, d=20)", make_classification(n_samples=5000, n_features=20,
                                                                        n_informative=8, random_state=0)
    yield "synthetic 20k (14 000 train rows, d=20)", make_classification(n_samples=20000, n_features=20,
                                                                          n_informative=8, random_state=1)


def main() -> None:
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    rows = []
    for name, (X, y) in datasets():
        X = StandardScaler().fit_transform(X)
        X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
        ceiling = LogisticRegression().fit(Xtr, ytr).score(Xte, yte)
        majority = max(np.mean(yte), 1 - np.mean(yte))
        for est_name, cls in ESTIMATORS.items():
            for solver in ("nag", "nag-opt"):
                accs, steps = [], []
                for eps in EPS:
                    fits = [cls(epsilon=eps, solver=solver, classes=[0, 1], random_state=s).fit(Xtr, ytr)
                            for s in range(SEEDS)]
                    accs.append(float(np.median([f.score(Xte, yte) for f in fits])))
                    steps.append(int(fits[0].n_iter_))
                rows.append({"dataset": name, "estimator": est_name, "solver": solver, "accuracy": accs,
                             "steps": steps, "non_private": ceiling, "majority": majority})
                print(f"{name[:22]:22s} {est_name:20s} {solver:7s} "
                      + "  ".join(f"{a:.3f}(T={t})" for a, t in zip(accs, steps, strict=True)), flush=True)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seconds": round(time.perf_counter() - t0, 1), "seeds": SEEDS}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "dp_trainer_defaults.json").write_text(json.dumps({"meta": meta, "epsilons": EPS, "rows": rows},
                                                             indent=1))
    lines = ["# DP estimators at their defaults: solver `nag` (default) vs the paper's `nag-opt`\n",
             f"Run {meta['run']}, {meta['platform']}, {SEEDS} noise seeds (median test accuracy; T = steps run), "
             "rows standardised and scaled to unit L2 norm. `python benchmarks/dp_trainer_defaults.py`.\n",
             "| dataset | estimator | solver | " + " | ".join(f"ε = {e:g}" for e in EPS)
             + " | non-private | majority |", "|---|---|---|" + "---|" * (len(EPS) + 2)]
    for r in rows:
        cells = " | ".join(f"{a:.3f} (T={t})" for a, t in zip(r["accuracy"], r["steps"], strict=True))
        lines.append(f"| {r['dataset']} | {r['estimator']} | {r['solver']} | {cells} | {r['non_private']:.3f} "
                     f"| {r['majority']:.3f} |")
    (OUT / "dp_trainer_defaults.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'dp_trainer_defaults.md'} in {meta['seconds']} s")


if __name__ == "__main__":
    main()
