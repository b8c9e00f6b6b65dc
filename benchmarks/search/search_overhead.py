"""privtune's own overhead per search against scikit-learn's ``RandomizedSearchCV``, side by side, one process.

"Overhead" is a search's wall-clock time minus the time spent inside the
estimator's ``fit`` / ``predict`` / ``decision_function`` (measured by a thin
timing wrapper around the same estimator in both searches). Both searches use
the same single split (privtune: ``X_val``; scikit-learn: a ``PredefinedSplit``),
the same number of candidates ``n_iter`` and refit the winner. The estimator is
a ``LogisticRegression`` on breast cancer (fits of ~2 ms), so that the
overhead is not hidden behind long fits.

Part A (``--part small``): privtune with ``random`` and ``noisy-ucb``, at
``n_iter`` = 30 and 300 (``noisy-ucb`` charges per iteration: the accounting is
its hot spot). Median of 5 runs each, one thread.

Part B (``--part large``): large validation sets, where scoring dominates: m =
10 000 and 1 000 000 synthetic validation rows of 20 features (2 000 public
training rows), ``method="random"``, ``n_iter`` = 10, no refit (scikit-learn's
refit would train on the validation rows too), median of 5 timing runs; then
one run of each under ``tracemalloc`` for the **peak extra memory** (the most
memory either search holds at once beyond the data it was given, numpy
allocations included; ``tracemalloc`` slows Python, so those runs are not
timed). This is where row isolation's cost shows: privtune scores each
candidate in fixed blocks through one block-sized scratch buffer, where
``RandomizedSearchCV`` indexes out a copy of the validation set per candidate.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/search/search_overhead.py [--reps 5] [--part small|large|all]``.
Writes ``benchmarks/results/search_overhead.json`` and ``.md`` (part A) and
``search_overhead_large.json`` and ``.md`` (part B).
"""

from __future__ import annotations

import os
import sys

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
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
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, RESULTS, output_dir  # noqa: E402

OUT = RESULTS
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


def large_data(m, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=20)
    X = rng.normal(size=(2000 + m, 20))
    y = (X @ w + rng.logistic(size=len(X)) > 0).astype(int)
    return X[:2000], X[2000:], y[:2000], y[2000:]


def run_large(kind, Xtr, Xva, ytr, yva, seed, *, memory=False):
    """One search over the large validation set; (wall s, inside s, peak extra bytes or None)."""
    if kind == "privtune":
        search = PrivateSearchCV(Timed(), {"C": Real(1e-3, 1e3, log=True)}, method="random", epsilon=1.0,
                                 n_iter=10, n_candidates=10, refit=False, random_state=seed)
        fit = lambda: search.fit(Xtr, ytr, X_val=Xva, y_val=yva)  # noqa: E731
    else:
        X = np.vstack([Xtr, Xva])
        y = np.concatenate([ytr, yva])
        split = PredefinedSplit(np.r_[np.full(len(ytr), -1), np.zeros(len(yva), dtype=int)])
        search = RandomizedSearchCV(Timed(), {"C": scipy.stats.loguniform(1e-3, 1e3)}, n_iter=10, cv=split,
                                    random_state=seed, refit=False)
        fit = lambda: search.fit(X, y)  # noqa: E731
    INSIDE[0] = 0.0
    if memory:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        fit()
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        return None, None, peak
    t = time.perf_counter()
    fit()
    return time.perf_counter() - t, INSIDE[0], None


def part_large(reps: int, sizes: tuple[int, ...] = (10_000, 1_000_000)) -> None:
    rows = []
    for m in sizes:
        Xtr, Xva, ytr, yva = large_data(m)
        run_large("privtune", Xtr, Xva[:1000], ytr, yva[:1000], 0)  # warm-up
        run_large("sklearn", Xtr, Xva[:1000], ytr, yva[:1000], 0)
        res = {"privtune": [], "sklearn": []}
        for s in range(reps):  # interleaved, so that load drifts hit both alike
            for kind in res:
                res[kind].append(run_large(kind, Xtr, Xva, ytr, yva, s))
        mem = {kind: run_large(kind, Xtr, Xva, ytr, yva, 0, memory=True)[2] for kind in res}
        over = {k: statistics.median(t - i for t, i, _ in v) for k, v in res.items()}
        inside = {k: statistics.median(i for _, i, _ in v) for k, v in res.items()}
        row = {"m": m, "d": 20, "n_iter": 10, "data_mib": Xva.nbytes / 2**20,
               "privtune_overhead_s": over["privtune"], "sklearn_overhead_s": over["sklearn"],
               "privtune_inside_s": inside["privtune"], "sklearn_inside_s": inside["sklearn"],
               "ratio": over["privtune"] / over["sklearn"],
               "privtune_peak_extra_mib": mem["privtune"] / 2**20, "sklearn_peak_extra_mib": mem["sklearn"] / 2**20}
        rows.append(row)
        print(f"m={m:>9,d}: overhead privtune {over['privtune'] * 1e3:8.1f} ms, RandomizedSearchCV "
              f"{over['sklearn'] * 1e3:8.1f} ms, ratio {row['ratio']:.2f}; peak extra memory privtune "
              f"{row['privtune_peak_extra_mib']:.1f} MiB, RandomizedSearchCV {row['sklearn_peak_extra_mib']:.1f} MiB "
              f"(validation set {row['data_mib']:.1f} MiB)", flush=True)
    meta = _meta(reps)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "search_overhead_large.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Search overhead on large validation sets: privtune (`random`) vs RandomizedSearchCV\n",
             f"Run {meta['started']}, {meta['platform']}, scikit-learn {meta['sklearn']}, median of {reps} interleaved "
             f"runs; load average {meta['loadavg']}. 2 000 training rows, m validation rows, 20 features, n_iter = 10, "
             "no refit. Overhead = wall clock minus time inside the estimator; peak extra memory = tracemalloc's peak "
             "during the search beyond what was allocated before it (one separate run each). "
             "`python benchmarks/search/search_overhead.py --part large`.\n",
             "| m | privtune overhead (ms) | RandomizedSearchCV overhead (ms) | ratio | privtune peak extra (MiB) | "
             "RandomizedSearchCV peak extra (MiB) | validation set (MiB) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['m']:,} | {r['privtune_overhead_s'] * 1e3:.1f} | {r['sklearn_overhead_s'] * 1e3:.1f} | "
              f"{r['ratio']:.2f} | {r['privtune_peak_extra_mib']:.1f} | {r['sklearn_peak_extra_mib']:.1f} | "
              f"{r['data_mib']:.1f} |" for r in rows]
    (OUT / "search_overhead_large.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'search_overhead_large.md'}")


def _meta(reps: int) -> dict:
    return {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "platform": platform.platform(),
            "python": platform.python_version(), "privtune": privtune.__version__, "sklearn": sklearn.__version__,
            "reps": reps, "loadavg": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--part", choices=("small", "large", "all"), default="all")
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (one repetition, 10⁴ rows, n_iter 30)")
    args = ap.parse_args()
    global OUT
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    if args.quick:
        args.reps = 1
    if args.part in ("large", "all"):
        part_large(args.reps, (10_000,) if args.quick else (10_000, 1_000_000))
    if args.part == "large":
        return
    Xtr, Xva, ytr, yva = data()
    warnings.filterwarnings("ignore")
    run_privtune("random", 5, Xtr, Xva, ytr, yva, 0)  # warm-up (imports, caches)
    run_privtune("noisy-ucb", 5, Xtr, Xva, ytr, yva, 0)
    run_sklearn(5, Xtr, Xva, ytr, yva, 0)
    rows = []
    for n_iter in (30,) if args.quick else (30, 300):
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
    meta = _meta(args.reps)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "search_overhead.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Search overhead: privtune vs RandomizedSearchCV (same single split, same n_iter, refit)\n",
             f"Run {meta['started']}, {meta['platform']}, scikit-learn {meta['sklearn']}, median of {args.reps}; "
             f"load average {meta['loadavg']}. Overhead = wall clock minus time inside the estimator. "
             "`python benchmarks/search/search_overhead.py`.\n",
             "| n_iter | privtune method | privtune overhead (ms) | RandomizedSearchCV overhead (ms) | ratio |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['n_iter']} | {r['method']} | {r['privtune_overhead_s'] * 1e3:.1f} | "
              f"{r['sklearn_overhead_s'] * 1e3:.1f} | {r['ratio']:.2f} |" for r in rows]
    (OUT / "search_overhead.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'search_overhead.md'}")


if __name__ == "__main__":
    main()
