"""Which release method should be PrivateSearchCV's default? Utility of each, side by side.

Task: tune an RBF SVC's C and gamma on breast cancer (standardised), with a sensitive validation split
(30 % of the training rows, m = 120) and a held-out test set; 64 Sobol candidates, n_iter = 20.
For each method and epsilon, over 10 seeds: the test accuracy of the refit model, the released score's
absolute error against the true validation accuracy of the released parameters, and the run time.
Non-private GridSearch on the same candidates (selected on the same validation split) is the ceiling.

Run:  .venv/bin/python benchmarks/privacy_utility/method_utility.py   (about 10 seconds on one core; 2026-11-29)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from privtune import PrivateSearchCV  # noqa: E402
from privtune.space import Real, SearchSpace, candidate_set  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, output_dir  # noqa: E402

torch.set_num_threads(1)
SPACE = {"C": Real(0.1, 1000.0, log=True), "gamma": Real(1e-5, 1.0, log=True)}
METHODS = ["random", "noisy-ucb", "gp-ucb"]
EPSILONS = [0.5, 1.0, 5.0]
SEEDS = range(10)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (one seed, ε = 1)")
    args = ap.parse_args(argv)
    seeds, epsilons = (range(1), [1.0]) if args.quick else (SEEDS, EPSILONS)
    started, load_start, t_start = time.strftime("%Y-%m-%d %H:%M"), [round(v, 2) for v in os.getloadavg()], time.time()
    X, y = load_breast_cancer(return_X_y=True)
    X_trval, X_test, y_trval, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_trval)
    X_trval, X_test = scaler.transform(X_trval), scaler.transform(X_test)
    X_tr, X_val, y_tr, y_val = train_test_split(X_trval, y_trval, test_size=0.3, random_state=1)
    m = len(y_val)
    cands = candidate_set(SearchSpace(SPACE), 64, random_state=0)
    # non-private ceiling: best validation accuracy over the same candidates
    val_acc = [SVC(**p).fit(X_tr, y_tr).score(X_val, y_val) for p in cands.params]
    best = int(np.argmax(val_acc))
    ceiling = SVC(**cands.params[best]).fit(X_tr, y_tr).score(X_test, y_test)
    rows = []
    for method in METHODS:
        for eps in epsilons:
            accs, errs, times = [], [], []
            for seed in seeds:
                t0 = time.perf_counter()
                s = PrivateSearchCV(SVC(), SPACE, method=method, epsilon=eps, delta=1e-6, n_iter=20, n_candidates=64,
                                    random_state=seed).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
                times.append(time.perf_counter() - t0)
                accs.append(s.score(X_test, y_test))
                true_val = SVC(**s.best_params_).fit(X_tr, y_tr).score(X_val, y_val)
                errs.append(abs(s.best_score_ - true_val))
            rows.append({"method": method, "epsilon": eps, "test_accuracy_median": statistics.median(accs),
                         "test_accuracy_mean": statistics.fmean(accs), "test_accuracy_min": min(accs),
                         "released_score_abs_error_median": statistics.median(errs),
                         "seconds_per_fit_median": statistics.median(times)})
            print(f"{method:10s} eps={eps:<4} test acc median {rows[-1]['test_accuracy_median']:.3f} "
                  f"(min {rows[-1]['test_accuracy_min']:.3f})  |released - true val| median "
                  f"{rows[-1]['released_score_abs_error_median']:.3f}  {rows[-1]['seconds_per_fit_median']:.2f} s",
                  flush=True)
    out = {"n_validation": m, "n_candidates": len(cands), "n_iter": 20, "seeds": len(seeds),
           "non_private_test_accuracy": ceiling, "non_private_best_val_accuracy": max(val_acc),
           "median_candidate_test_accuracy": float(np.median([SVC(**p).fit(X_tr, y_tr).score(X_test, y_test)
                                                              for p in cands.params])),
           "rows": rows, "started": started, "platform": platform.platform(), "seconds": time.time() - t_start,
           "loadavg_start": load_start, "loadavg": [round(v, 2) for v in os.getloadavg()]}
    print(f"non-private GridSearch on the same candidates: test accuracy {ceiling:.3f}; median candidate "
          f"{out['median_candidate_test_accuracy']:.3f}")
    res = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    res.mkdir(exist_ok=True)
    (res / "method_utility.json").write_text(json.dumps(out, indent=2))
    lines = [f"# Release-method utility (SVC C, gamma on breast cancer; m = {m} validation rows)", "",
             "| method | epsilon | test acc (median) | test acc (min) | abs error of released score (median) | s/fit |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['method']} | {r['epsilon']} | {r['test_accuracy_median']:.3f} | {r['test_accuracy_min']:.3f} | "
              f"{r['released_score_abs_error_median']:.3f} | {r['seconds_per_fit_median']:.2f} |" for r in rows]
    lines += ["", f"Non-private selection on the same candidates: test accuracy {ceiling:.3f}; the median candidate: "
              f"{out['median_candidate_test_accuracy']:.3f}.", "",
              f"Run {started} on {out['platform']}, one thread, {out['seconds']:.0f} s; load average {load_start} "
              f"at start, {out['loadavg']} at end."]
    (res / "method_utility.md").write_text("\n".join(lines) + "\n")
    return out


if __name__ == "__main__":
    main()
