"""What the default method costs: fits and wall time of a whole search against ``RandomizedSearchCV`` (issue 38).

An expensive estimator, scikit-learn's ``HistGradientBoostingClassifier`` at its defaults (early stopping on
above 10 000 rows), tuned over learning rate, leaf count and L2 regularisation (the space of
``benchmarks/privacy_utility/privacy_utility.py``'s HGB task) on a synthetic set of 15 000 public training rows, 5
000 sensitive validation rows and 20 features. Side by side, one process each, one thread:

* ``RandomizedSearchCV(n_iter, cv=5)`` on the training rows (its 5 ``n_iter`` fits and the refit), and on the same
  split as privtune (a ``PredefinedSplit``: ``n_iter`` fits and the refit);
* privtune's default (``method="auto"``, which is ``prescreen`` here) at this commit (**after**) and at commit
  a50eace (**before** issue 38: 3 max(64, 4 ``n_iter``) screening fits), with ``refit=True``;
* privtune's ``method="random"`` (no screening).

Reported per search: the number of ``fit`` calls (counted by a thin subclass), the wall time, and the time inside
``fit``. ``n_iter`` = 10 (the issue's case) and 20 (PrivateSearchCV's default), ε = 1, the default candidate set
(256 Sobol points), one seed. The "before" runs use a ``git worktree`` of a50eace put first on ``PYTHONPATH``
(``--before PATH``); without it they are skipped.

Run: ``git worktree add /tmp/pt_before a50eace; OMP_NUM_THREADS=1 .venv/bin/python benchmarks/search/prescreen_cost.py
--before /tmp/pt_before [--after PATH]; git worktree remove /tmp/pt_before`` (``--after``: a checkout to measure
instead of this working tree). Writes ``benchmarks/results/prescreen_cost.json`` and ``.md``. About 7 minutes on
one core.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, RESULTS, output_dir  # noqa: E402

OUT = RESULTS
ROOT = Path(__file__).resolve().parents[2]
N_ITERS = (10, 20)

# One search, run in a child process (so that "before" can import the old privtune): prints one JSON line.
_CHILD = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
from scipy.stats import loguniform, randint
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import PredefinedSplit, RandomizedSearchCV, train_test_split

kind, n_iter, quick = sys.argv[1], int(sys.argv[2]), len(sys.argv) > 3  # quick: a smoke run on 1 000 rows
X, y = make_classification(n_samples=1_000 if quick else 20_000, n_features=20, n_informative=10, n_redundant=4,
                           flip_y=0.05, random_state=7)
X_tr, X_val, y_tr, y_val = train_test_split(X, y, test_size=250 if quick else 5_000, random_state=0, stratify=y)
BASE = {"random_state": 0, "max_iter": 5} if quick else {"random_state": 0}
FITS = {"n": 0, "seconds": 0.0}


class Counted(HistGradientBoostingClassifier):
    def fit(self, X, y, **kw):
        t = time.perf_counter()
        try:
            return super().fit(X, y, **kw)
        finally:
            FITS["n"] += 1
            FITS["seconds"] += time.perf_counter() - t


t0 = time.perf_counter()
if kind.startswith("RandomizedSearchCV"):
    dists = {"learning_rate": loguniform(1e-3, 1.0), "max_leaf_nodes": randint(2, 65),
             "l2_regularization": loguniform(1e-4, 10.0)}
    if kind.endswith("same split"):
        Xa, ya = np.vstack([X_tr, X_val]), np.concatenate([y_tr, y_val])
        cv = PredefinedSplit(np.r_[np.full(len(y_tr), -1), np.zeros(len(y_val))])
        s = RandomizedSearchCV(Counted(**BASE), dists, n_iter=n_iter, cv=cv, random_state=0)
        # its refit is on training and validation rows; privtune refits on the training rows
        s.fit(Xa, ya)
    else:
        s = RandomizedSearchCV(Counted(**BASE), dists, n_iter=n_iter, cv=5, random_state=0).fit(X_tr, y_tr)
    extra = {}
else:
    import privtune
    from privtune import PrivateSearchCV
    from privtune.space import Integer, Real

    space = {"learning_rate": Real(1e-3, 1.0, log=True), "max_leaf_nodes": Integer(2, 64),
             "l2_regularization": Real(1e-4, 10.0, log=True)}
    method = "random" if kind.endswith("random") else "auto"
    s = PrivateSearchCV(Counted(**BASE), space, method=method, epsilon=1.0, n_iter=n_iter,
                        random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    extra = {"method_": s.method_, "privtune": privtune.__version__,
             "search_time": s.search_time_, "screen": dict(s.release_.diagnostics.get("prescreen", {}))}
print(json.dumps({"fits": FITS["n"], "seconds": time.perf_counter() - t0, "fit_seconds": FITS["seconds"],
                  **extra}))
"""


def run(kind: str, n_iter: int, pythonpath: str | None, quick: bool = False) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, str(n_iter), *(["quick"] if quick else [])],
                          capture_output=True, text=True,
                          env=env, cwd=pythonpath or str(ROOT), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _commit(path: Path) -> str:
    out = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() or "?"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=None, metavar="PATH",
                    help="a checkout of the code before issue 38 (git worktree add PATH a50eace)")
    ap.add_argument("--after", default=None, metavar="PATH",
                    help="a checkout of the code to measure (default: this repository's working tree)")
    ap.add_argument("--n-iter", type=int, nargs="*", default=list(N_ITERS))
    ap.add_argument("--quick", action="store_true",
                    help=QUICK_HELP + " (1 000 rows, 5 boosting iterations, n_iter 2, two searches)")
    args = ap.parse_args()
    if args.quick:
        args.n_iter = [2]
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    kinds = ["RandomizedSearchCV(cv=5)", "RandomizedSearchCV, same split", "privtune random", "privtune default"]
    if args.quick:  # the reference and the default: each search is a child process
        kinds = kinds[::3]
    rows = []
    load = os.getloadavg()[0]
    for n_iter in args.n_iter:
        for kind in kinds + (["privtune default, before"] if args.before else []):
            before = kind.endswith("before")
            r = run(kind.replace(", before", ""), n_iter, args.before if before else args.after, args.quick)
            r.update(kind=kind, n_iter=n_iter)
            rows.append(r)
            print(f"n_iter={n_iter:3d} {kind:32s} fits {r['fits']:4d}  {r['seconds']:7.1f} s "
                  f"(in fit {r['fit_seconds']:7.1f} s)", flush=True)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(),
            "python": platform.python_version(),
            "commit": _commit(Path(args.after) if args.after else ROOT),
            "before_commit": _commit(Path(args.before)) if args.before else None,
            "load_average_at_start": round(load, 2), "load_average_at_end": round(os.getloadavg()[0], 2)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "prescreen_cost.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# What the default method costs: fits and wall time against `RandomizedSearchCV`\n",
             f"Run {meta['run']} ({meta['platform']}, one thread, load average {meta['load_average_at_start']} at "
             f"the start and {meta['load_average_at_end']} at the end), commit {meta['commit']}"
             + (f"; before = commit {meta['before_commit']}" if args.before else "")
             + ". `HistGradientBoostingClassifier` (defaults; learning rate, leaf count and L2 tuned) on 15 000 "
             "public training rows and 5 000 sensitive validation rows of a synthetic set with 20 features, "
             "epsilon = 1, the default 256 candidates, refit. `python benchmarks/search/prescreen_cost.py "
             "--before PATH`.\n",
             "| n_iter | search | fits | wall time (s) | time in fit (s) | × RandomizedSearchCV(cv=5) time | "
             "screening |",
             "|---|---|---|---|---|---|---|"]
    for n_iter in args.n_iter:
        ref = next(r for r in rows if r["n_iter"] == n_iter and r["kind"] == "RandomizedSearchCV(cv=5)")
        for r in (r for r in rows if r["n_iter"] == n_iter):
            sc = r.get("screen") or {}
            screen = (f"{sc['screened']} candidates × {sc['cv_folds']} folds = {sc['fits']} fits"
                      if sc.get("fits") is not None else
                      (f"{sc['screened']} candidates × {sc['cv_folds']} folds" if sc else "—"))
            lines.append(f"| {n_iter} | {r['kind']} | {r['fits']} | {r['seconds']:.1f} | {r['fit_seconds']:.1f} | "
                         f"{r['seconds'] / ref['seconds']:.2f} | {screen} |")
    (OUT / "prescreen_cost.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'prescreen_cost.md'}")


if __name__ == "__main__":
    main()
