"""``method="prescreen"`` against ``"random"`` (the default) at equal epsilon, side by side, one run.

Tasks (bundled or synthetic data, nothing downloaded): an RBF ``SVC`` (C, gamma on log scales, inputs
standardised inside the model) on breast cancer, digits (10 classes), wine, and a 4 000-row synthetic set.
Each data set is split once into public training rows, sensitive validation rows (m) and test rows.

Design: one candidate set of 128 scrambled Sobol points (seed 0) is given to every search as
``candidate_grid`` (plus the one Sobol point of ``n_candidates=1``), so that the noise seeds vary the
privacy noise only; ``n_iter = 20``; ε ∈ {0.1, 0.3, 1, 3}; 20 noise seeds per cell. A memoising wrapper
caches each candidate's fitted model (the fits are the same in every cell), so the whole study takes a few
minutes. Reported: test accuracy of the released choice (median, 10th percentile) and its regret in points
against the *ceiling* (non-private selection: the candidate with the best validation accuracy among the
128), median and 90th percentile; and the floor (a uniformly random candidate, median test accuracy).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/privacy_utility/prescreen_utility.py [--seeds 20]``.
Writes ``benchmarks/results/prescreen_utility.json`` and ``.md``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import privtune  # noqa: E402
from privtune import PrivateSearchCV  # noqa: E402
from privtune.space import Real, SearchSpace, candidate_set  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, RESULTS, output_dir  # noqa: E402

OUT = RESULTS
SPACE = {"C": Real(1e-2, 1e3, log=True), "gamma": Real(1e-5, 1e1, log=True)}
EPS = (0.1, 0.3, 1.0, 3.0)
N_ITER = 20
_CACHE: dict = {}


class MemoSVC(ClassifierMixin, BaseEstimator):
    """``make_pipeline(StandardScaler(), SVC(C, gamma))``, fitted once per (parameters, training rows)."""

    def __init__(self, C: float = 1.0, gamma: float = 1.0) -> None:
        self.C = C
        self.gamma = gamma

    def fit(self, X, y):
        key = (self.C, self.gamma, X.shape, hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest())
        if key not in _CACHE:
            _CACHE[key] = make_pipeline(StandardScaler(), SVC(C=self.C, gamma=self.gamma)).fit(X, y)
        self.model_ = _CACHE[key]
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def tasks():
    yield "breast cancer", load_breast_cancer(return_X_y=True)
    yield "digits (10 classes)", load_digits(return_X_y=True)
    yield "wine (3 classes)", load_wine(return_X_y=True)
    yield "synthetic 4 000", make_classification(n_samples=4000, n_features=20, n_informative=6, flip_y=0.05,
                                                 random_state=0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (breast cancer, one seed, ε = 1)")
    args = ap.parse_args()
    if args.quick:
        args.seeds = 1
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    grid = candidate_set(SearchSpace(SPACE), 128, random_state=0).params
    rows = []
    for name, (X, y) in itertools.islice(tasks(), 1 if args.quick else None):
        Xa, Xte, ya, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xva, ytr, yva = train_test_split(Xa, ya, test_size=0.5, random_state=0, stratify=ya)
        val = [MemoSVC(**p).fit(Xtr, ytr).score(Xva, yva) for p in grid]
        test = {tuple(sorted(p.items())): MemoSVC(**p).fit(Xtr, ytr).score(Xte, yte) for p in grid}
        ceiling = test[tuple(sorted(grid[int(np.argmax(val))].items()))]
        floor = float(np.median(list(test.values())))
        for eps in (1.0,) if args.quick else EPS:
            for method in ("random", "prescreen"):
                accs = []
                for s in range(args.seeds):
                    search = PrivateSearchCV(MemoSVC(), SPACE, method=method, epsilon=eps, n_iter=N_ITER,
                                             n_candidates=1, candidate_grid=grid, refit=False,
                                             random_state=10_000 + s).fit(Xtr, ytr, X_val=Xva, y_val=yva)
                    key = tuple(sorted(search.best_params_.items()))
                    accs.append(test[key] if key in test else MemoSVC(**search.best_params_).fit(Xtr, ytr)
                                .score(Xte, yte))
                regret = 100 * (ceiling - np.asarray(accs))
                row = {"task": name, "m": len(yva), "epsilon": eps, "method": method,
                       "test_median": float(np.median(accs)), "test_p10": float(np.percentile(accs, 10)),
                       "regret_median": float(np.median(regret)), "regret_p90": float(np.percentile(regret, 90)),
                       "ceiling": ceiling, "floor": floor}
                rows.append(row)
                print(f"{name:20s} m={len(yva):4d} eps={eps:<4g} {method:9s} test {row['test_median']:.3f} "
                      f"(p10 {row['test_p10']:.3f}) regret {row['regret_median']:.1f} (p90 {row['regret_p90']:.1f}) "
                      f"| ceiling {ceiling:.3f} floor {floor:.3f}", flush=True)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seeds": args.seeds, "n_iter": N_ITER, "seconds": round(time.perf_counter() - t0, 1)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "prescreen_utility.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# `prescreen` vs `random` at equal epsilon (RBF SVC, n_iter = 20)\n",
             f"Run {meta['run']}, {meta['platform']}, {args.seeds} noise seeds per cell, one fixed candidate set of "
             "128 Sobol points; regret in points of test accuracy against non-private selection among the 128. "
             "`python benchmarks/privacy_utility/prescreen_utility.py`.\n",
             "| task | m | ε | method | test acc. median | p10 | regret median | regret p90 | ceiling | floor |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['m']} | {r['epsilon']:g} | {r['method']} | {r['test_median']:.3f} | "
                     f"{r['test_p10']:.3f} | {r['regret_median']:.1f} | {r['regret_p90']:.1f} | {r['ceiling']:.3f} | "
                     f"{r['floor']:.3f} |")
    (OUT / "prescreen_utility.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'prescreen_utility.md'} in {meta['seconds']} s")


if __name__ == "__main__":
    main()
