"""privtune's own overhead per search against scikit-learn's ``RandomizedSearchCV``, side by side, one process.

"Overhead" is a search's wall-clock time minus the time spent inside the
estimator's ``fit`` / ``predict`` / ``decision_function`` (measured by a thin
timing wrapper around the same estimator in both searches). Both searches use
the same single split (privtune: ``X_val``; scikit-learn: a ``PredefinedSplit``),
the same number of candidates ``n_iter`` and refit the winner. The estimator is
a ``LogisticRegression`` on breast cancer (fits of ~2 ms), so that the
overhead is not hidden behind long fits.

privtune is run with its default method (``random``) and ``noisy-ucb``, at
``n_iter`` = 30 and 300 (``noisy-ucb`` charges per iteration: the accounting is
its hot spot). Median of 5 runs each, one thread.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/search_overhead.py [--reps 5]``.
Writes ``benchmarks/results/search_overhead.json`` and ``.md``.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
import sklearn  # noqa: E402
import torch  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import PredefinedSplit, RandomizedSearchCV, train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import privtune  # noqa: E402
from privtune import PrivateSearchCV  # noqa: E402
from privtune.space import Real  # noqa: E402

torch.set_num_threads(1)
OUT = Path(__file__).resolve().parent / "results"
INSIDE = [0.0]  # seconds spent inside the estimator, summed over every call


class Timed(ClassifierMixin, BaseEstimator):
    """The wrapped estimator, timing its own work (the same in both searches)."""

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def fit(self, X, y):
        t = time.perf_counter()
        self.model_ = LogisticRegression(C=self.C, max_iter=200).fit(X, y)
        self.classes_ = self.model_.classes_
        INSIDE[0] += time.perf_counter() - t
        return self

    def predict(self, X):
        t = time.perf_counter()
        out = self.model_.predict(X)
        INSIDE[0] += time.perf_counter() - t
        return out


def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)  # public preprocessing for the benchmark only
    return train_test_split(X, y, test_size=0.4, random_state=0)


def run_privtune(method, n_iter, Xtr, Xva, ytr, yva, seed):
    search = PrivateSearchCV(Timed(), {"C": Real(1e-3, 1e3, log=True)}, method=method, epsilon=1.0, delta=1e-6,
                             n_iter=n_iter, n_candidates=max(256, 2 * n_iter), random_state=seed)
    INSIDE[0] = 0.0
    t = time.perf_counter()
    search.fit(Xtr, ytr, X_val=Xva, y_val=yva)
    return time.perf_counter() - t, INSIDE[0]


def run_sklearn(n_iter, Xtr, Xva, ytr, yva, seed):
    X = np.vstack([Xtr, Xva])
    y = np.concatenate([ytr, yva])
    split = PredefinedSplit(np.r_[np.full(len(ytr), -1), np.zeros(len(yva), dtype=int)])
    search = RandomizedSearchCV(Timed(), {"C": scipy.stats.loguniform(1e-3, 1e3)}, n_iter=n_iter, cv=split,
                                random_state=seed, n_jobs=None)
    INSIDE[0] = 0.0
    t = time.perf_counter()
    search.fit(X, y)
    return time.perf_counter() - t, INSIDE[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    Xtr, Xva, ytr, yva = data()
    warnings.filterwarnings("ignore")
    run_privtune("random", 5, Xtr, Xva, ytr, yva, 0)  # warm-up (imports, caches)
    run_privtune("noisy-ucb", 5, Xtr, Xva, ytr, yva, 0)
    run_sklearn(5, Xtr, Xva, ytr, yva, 0)
    rows = []
    for n_iter in (30, 300):
        sk = [run_sklearn(n_iter, Xtr, Xva, ytr, yva, s) for s in range(args.reps)]
        sk_over = statistics.median(t - i for t, i in sk)
        for method in ("random", "noisy-ucb"):
            pt = [run_privtune(method, n_iter, Xtr, Xva, ytr, yva, s) for s in range(args.reps)]
            over = statistics.median(t - i for t, i in pt)
            rows.append({"n_iter": n_iter, "method": method, "privtune_overhead_s": over,
                         "privtune_total_s": statistics.median(t for t, _ in pt),
                         "sklearn_overhead_s": sk_over, "sklearn_total_s": statistics.median(t for t, _ in sk),
                         "ratio": over / sk_over})
            print(f"n_iter={n_iter:4d} {method:10s} privtune overhead {over * 1e3:8.1f} ms | RandomizedSearchCV "
                  f"{sk_over * 1e3:8.1f} ms | ratio {over / sk_over:.2f}", flush=True)
    meta = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "platform": platform.platform(),
            "python": platform.python_version(), "privtune": privtune.__version__, "sklearn": sklearn.__version__,
            "reps": args.reps, "loadavg": os.getloadavg()}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "search_overhead.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Search overhead: privtune vs RandomizedSearchCV (same single split, same n_iter, refit)\n",
             f"Run {meta['started']}, {meta['platform']}, scikit-learn {meta['sklearn']}, median of {args.reps}; "
             f"load average {meta['loadavg']}. Overhead = wall clock minus time inside the estimator. "
             "`python benchmarks/search_overhead.py`.\n",
             "| n_iter | privtune method | privtune overhead (ms) | RandomizedSearchCV overhead (ms) | ratio |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['n_iter']} | {r['method']} | {r['privtune_overhead_s'] * 1e3:.1f} | "
              f"{r['sklearn_overhead_s'] * 1e3:.1f} | {r['ratio']:.2f} |" for r in rows]
    (OUT / "search_overhead.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'search_overhead.md'}")


if __name__ == "__main__":
    main()
