"""Issue 11's two unmeasured ideas for a search that uses the space's structure, against ``random`` at equal ε.

Issue 11 listed three ideas for a method that beats ``random`` (the exponential selection over data-independent
candidates): (a) public pre-screening, built as ``method="prescreen"`` and measured in ``privacy_utility.py``;
(b) a GP over released noisy scores with a budget schedule that spends little on exploration and most on the final
selection among the GP's top k; (c) successive halving on validation subsamples with a private selection per rung.
This script measures (b) and (c) on part A of the privacy-utility study: the same six tasks, the same 64 candidates
per task, the same training / validation / test splits (``privacy_utility.tasks``), n_iter 10 and 30,
ε 0.1 to 10, and the same regret (points of test accuracy against non-private selection among the 64).

Only the *selection* is simulated, from each candidate's per-row correctness on the validation rows (computed once;
fits are public here, the training rows being public): every method gets the selection's share of the budget that
``random`` gives it (``selection_share=0.5``: ε/2; the released score's Laplace half is the same for all and left
out). Each seed draws one data-independent subset of n_iter candidates, shared by all methods (common random
numbers). The methods and their accounting (replace-one on the validation rows, accuracy sensitivity 1/m):

* ``random``: the exponential mechanism at ε/2 over the subset's validation accuracies (pure ε); the library's own
  ``random`` on the same cells is quoted from ``results/privacy_utility.json`` as a check of the simulation.
* ``explore f, GP top k`` (idea b): the n_iter accuracies released at once with Gaussian noise (L2 sensitivity
  √n_iter / m), then the exponential mechanism at (1 − f) ε/2 over the k candidates with the highest posterior mean
  of a GP (Matérn 5/2 on the encoded space, the known noise variance, hyperparameters fitted to the noisy scores:
  post-processing). The Gaussian's noise multiplier is the smallest whose composition with that exponential
  mechanism fits (ε/2, 1e-6) in privtune's accountant (best of basic, RDP and PLD); ``noisy top k`` ranks the noisy
  scores without the GP.
* ``halving`` (idea c): the validation rows are split at random (data-independent) into R disjoint parts, one per
  rung; rung r keeps the ceil(s/2) best of its s candidates by a one-shot Gumbel top-k on part r's accuracies at
  ε/(2k) per pick (pure ε/2 for the rung: k peeling exponential mechanisms), and the last rung picks one. Each row
  is in one part, so the rungs compose in parallel: pure ε/2 in all. ``halving, 2 rungs``: half the rows keep the
  3 best the same way, the other half picks one of them.

60 seeds per cell (part A has 20; on wine's 71 validation rows one or two picks of a bad candidate decide the 90th
percentile of 20 seeds).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/search_ideas.py [--seeds 60] [--quick]`` (about 4
minutes on 2 cores). Writes ``benchmarks/results/search_ideas.{json,md}`` (``--quick``, a smoke test, writes nothing).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from functools import cache  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, Matern  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import RESULTS  # noqa: E402
from benchmarks.privacy_utility.privacy_utility import EPS, N_ITERS, tasks  # noqa: E402
from privtune.accounting import Accountant, ComposedEvent, ExponentialEvent, GaussianEvent  # noqa: E402
from privtune.space import SearchSpace, candidate_set  # noqa: E402

OUT = RESULTS
DELTA = 1e-6
SHARE = 0.5  # random's selection share of epsilon
EXPLORE = ((0.2, 3), (0.2, 5), (0.4, 3), (0.4, 5))  # (share f of the selection budget spent exploring, k)
BISECTIONS = 60  # of the noise multiplier's search (6 in a smoke run: each check is a PLD composition)


@cache
def explore_multiplier(eps_sel: float, f: float) -> float:
    """Smallest Gaussian noise multiplier whose composition with EM((1 - f) eps_sel) fits (eps_sel, DELTA)."""
    em = ExponentialEvent(epsilon=(1.0 - f) * eps_sel)

    def fits(nm: float) -> bool:
        try:
            Accountant((eps_sel, DELTA)).check(ComposedEvent(events=(GaussianEvent(noise_multiplier=nm), em)))
            return True
        except privtune.BudgetExceededError:
            return False

    lo, hi = 1e-3, 1e6
    assert fits(hi), (eps_sel, f)
    for _ in range(BISECTIONS):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def gumbel_top(keys: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of the k largest ``keys + Gumbel``: k peeling exponential mechanisms (Durfee & Rogers 2019)."""
    noisy = keys + rng.gumbel(size=keys.shape)
    return np.argsort(-noisy, kind="stable")[:k]


def em_pick(scores: np.ndarray, eps: float, m: int, rng) -> int:
    return int(gumbel_top(eps * m * scores / 2.0, 1, rng)[0])  # weight exp(eps u / (2 Delta)), Delta = 1 / m


def gp_mean(Z: np.ndarray, y: np.ndarray, noise_var: float) -> np.ndarray:
    centre = float(np.mean(y))
    scale = max(float(np.var(y)) - noise_var, 1e-6)
    kernel = ConstantKernel(scale, (1e-8, 10.0)) * Matern(length_scale=0.3, length_scale_bounds=(0.03, 3.0), nu=2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp = GaussianProcessRegressor(kernel, alpha=noise_var, normalize_y=False, n_restarts_optimizer=0,
                                      random_state=0).fit(Z, y - centre)
    return gp.predict(Z) + centre


def halving(correct: np.ndarray, subset: np.ndarray, eps_sel: float, rng, two_rungs: bool) -> int:
    m = correct.shape[1]
    sizes = [len(subset)]
    if two_rungs:
        keeps = [min(3, len(subset)), 1]
    else:
        keeps = []
        while sizes[-1] > 1:
            keeps.append(1 if sizes[-1] <= 2 else math.ceil(sizes[-1] / 2))
            sizes.append(keeps[-1])
    parts = np.array_split(rng.permutation(m), len(keeps))
    alive = np.asarray(subset)
    for part, k in zip(parts, keeps, strict=True):
        scores = correct[np.ix_(alive, part)].mean(axis=1)
        alive = alive[gumbel_top((eps_sel / k) * len(part) * scores / 2.0, k, rng)]
    return int(alive[0])


def task_tables(quick: bool):
    """(name, m, correctness matrix 64 x m, test accuracies, encoded candidates) per task of part A."""
    for name, (X, y), val_share, Model, space in tasks(quick):
        grid = candidate_set(SearchSpace(space), 64, random_state=0).params
        Xa, Xte, ya, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xva, ytr, yva = train_test_split(Xa, ya, test_size=val_share, random_state=0, stratify=ya)
        models = [Model(**p).fit(Xtr, ytr) for p in grid]
        correct = np.array([mdl.predict(Xva) == yva for mdl in models], dtype=np.float64)
        tests = np.array([mdl.score(Xte, yte) for mdl in models])
        yield name, int(len(yva)), correct, tests, SearchSpace(space).encode_many(grid)


def run(seeds: int, quick: bool) -> list[dict]:
    rows = []
    for name, m, correct, tests, Z in task_tables(quick):
        val = correct.mean(axis=1)
        ceiling = float(tests[int(np.argmax(val))])
        for n_iter in N_ITERS:
            for eps in EPS:
                eps_sel = SHARE * eps
                picks: dict[str, list[int]] = {}
                for s in range(seeds):
                    subset = np.random.default_rng([7, n_iter, s]).permutation(len(val))[:n_iter]
                    rng = np.random.default_rng([11, n_iter, int(eps * 1000), s])
                    v = val[subset]
                    picks.setdefault("random (simulated)", []).append(int(subset[em_pick(v, eps_sel, m, rng)]))
                    for f, k in EXPLORE:
                        nm = explore_multiplier(eps_sel, f)
                        sigma = nm * math.sqrt(n_iter) / m
                        noisy = v + rng.normal(0.0, sigma, size=n_iter)
                        for label, ranking in ((f"explore {f:g}, GP top {k}", gp_mean(Z[subset], noisy, sigma ** 2)),
                                               (f"explore {f:g}, noisy top {k}", noisy)):
                            top = np.argsort(-ranking, kind="stable")[:k]
                            chosen = top[em_pick(v[top], (1.0 - f) * eps_sel, m, rng)]
                            picks.setdefault(label, []).append(int(subset[chosen]))
                    picks.setdefault("halving", []).append(halving(correct, subset, eps_sel, rng, False))
                    picks.setdefault("halving, 2 rungs", []).append(halving(correct, subset, eps_sel, rng, True))
                for method, chosen in picks.items():
                    regret = 100.0 * (ceiling - tests[np.asarray(chosen)])
                    rows.append({"task": name, "m": m, "n_iter": n_iter, "epsilon": eps, "method": method,
                                 "regret_median": float(np.median(regret)),
                                 "regret_p90": float(np.percentile(regret, 90))})
                print(f"{name[:16]:16s} m={m:5d} T={n_iter:2d} eps={eps:<4g} " + "  ".join(
                    f"{r['method'].split(',')[0][:8]} {r['regret_median']:.1f}/{r['regret_p90']:.1f}"
                    for r in rows[-len(picks):]), flush=True)
    return rows


def library_rows() -> list[dict]:
    """Part A's measured ``random`` and ``prescreen`` rows (the library itself), for the check and the context."""
    path = OUT / "privacy_utility.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    return [dict(r, method=f"{r['method']} (library, part A)") for r in data.get("A", [])
            if r["method"] in ("random", "prescreen")]


def render(meta: dict, rows: list[dict], lib: list[dict]) -> str:
    methods = list(dict.fromkeys(r["method"] for r in rows)) + list(dict.fromkeys(r["method"] for r in lib))
    cells = {(r["task"], r["n_iter"], r["epsilon"]) for r in rows}
    allrows = rows + [r for r in lib if (r["task"], r["n_iter"], r["epsilon"]) in cells]
    lines = ["# Issue 11's ideas (b) and (c) against `random`, simulated at equal ε", "",
             f"Run {meta['date']}, {meta['platform']}, {meta['seconds']:.0f} s, privtune {meta['privtune']}, "
             f"{meta['seeds']} seeds per cell. `{meta['command']}`. Methods and accounting: the script's docstring. "
             "Regret: points of test accuracy against non-private selection among the 64 candidates; each entry is "
             "the mean over the task × n_iter cells of the median / 90th-percentile regret over seeds.", "",
             "| method | " + " | ".join(f"ε = {e:g}" for e in EPS) + " |",
             "|---|" + "---|" * len(EPS)]
    for method in methods:
        cols = []
        for e in EPS:
            sel = [r for r in allrows if r["method"] == method and r["epsilon"] == e]
            cols.append(f"{np.mean([r['regret_median'] for r in sel]):.1f} / "
                        f"{np.mean([r['regret_p90'] for r in sel]):.1f}" if sel else "")
        lines.append(f"| {method} | " + " | ".join(cols) + " |")
    lines += ["", "Per cell (median / 90th percentile):", "",
              "| task | m | n_iter | ε | " + " | ".join(methods) + " |",
              "|---|---|---|---|" + "---|" * len(methods)]
    for task, n_iter, e in sorted(cells, key=lambda c: ([r["task"] for r in rows].index(c[0]), c[1], c[2])):
        by = {r["method"]: r for r in allrows if (r["task"], r["n_iter"], r["epsilon"]) == (task, n_iter, e)}
        m = next(r["m"] for r in rows if r["task"] == task)
        lines.append(f"| {task} | {m} | {n_iter} | {e:g} | " + " | ".join(
            f"{by[k]['regret_median']:.1f} / {by[k]['regret_p90']:.1f}" if k in by else "" for k in methods) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--quick", action="store_true",
                    help="breast cancer only, two seeds, a coarse noise search; writes nothing")
    args = ap.parse_args()
    if args.quick:
        global BISECTIONS
        args.seeds, BISECTIONS = 2, 6
    t0 = time.perf_counter()
    rows = run(args.seeds, args.quick)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "seeds": args.seeds,
            "seconds": time.perf_counter() - t0, "privtune": privtune.__version__,
            "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/search_ideas.py"
                       + (f" --seeds {args.seeds}" if args.seeds != 60 else "") + (" --quick" if args.quick else "")}
    lib = library_rows()
    if not args.quick:  # a smoke test writes nothing
        OUT.mkdir(exist_ok=True)
        (OUT / "search_ideas.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        (OUT / "search_ideas.md").write_text(render(meta, rows, lib))
    print(render(meta, rows, lib))


if __name__ == "__main__":
    main()
