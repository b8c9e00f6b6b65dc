"""DP logistic regression fit time, privtune beside diffprivlib, interleaved: 80 000 x 20 at epsilon = 1 (issue 41).

Protocol.

* Data (each repeat ``r`` draws its own set from seed ``r``; both tools fit the very same arrays, checked by a
  SHA-256 of the training and test arrays computed on each side):

  - ``logreg_peers`` (the headline; the design of ``dp_logreg_peers.py``): ``default_rng(r)``, 100 000 x 20,
    ``X ~ N(0, I)``, ``w ~ N(0, I) / 2``, ``y ~ Bernoulli(sigmoid(X @ w))``; rows scaled by ``1 / (2 sqrt(d))``
    and then clipped to L2 norm 1; 80/20 split (``train_test_split(random_state=r)``): 80 000 x 20 training rows.
  - ``trainer_peers`` (the design of ``dp_trainer_peers.py``, with the seed ``r``): ``X ~ N(0, I)``,
    ``w ~ N(0, I)``, ``y = (X @ w + N(0, 1) > 0)``, every row divided by ``max(1, ||x||_2)`` (all rows then have
    norm 1), same split.

* Estimators, epsilon = 1: privtune ``DPLogisticRegression(epsilon=1.0, data_norm=sqrt(d), data_norm_l2=1.0,
  random_state=r)`` (its default solver and Gaussian noise, delta = 1e-6; as in ``dp_logreg_peers.py``) and
  diffprivlib ``LogisticRegression(epsilon=1.0, data_norm=1.0, random_state=r)`` (pure epsilon-DP objective
  perturbation). Neither is told the labels (both read the two classes from ``y``).
* Timing: ``time.process_time()`` (CPU of the process) and ``time.perf_counter()`` (wall) around ``fit`` only.
  diffprivlib runs in a persistent worker process of its own virtualenv (it does not import beside the
  project's scikit-learn), which generates the same data from the same seed and times its own ``fit``; both
  processes have ``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1``. Each tool fits once untimed first (warm-up).
  Then each repeat ``r`` runs ``--fits`` pairs of fits on its data (default 5), each pair one fit of each tool,
  the order alternating from pair to pair, so that both see the same load (other jobs share the machine), and
  keeps each tool's median over its fits; the per-repeat ratio privtune / diffprivlib of those medians is what
  the results quote (median, min, max over the repeats), beside each tool's own times and test accuracy.

The side virtualenv (outside the repository, not committed)::

    python3 -m venv /work/venvs/diffprivlib
    /work/venvs/diffprivlib/bin/pip install diffprivlib "scikit-learn==1.6.1"

(diffprivlib 0.6.6 imports ``sklearn.tree._tree.DOUBLE``, removed in scikit-learn 1.7.) The interpreter is
``--peer-python``, else ``$PRIVTUNE_PEER_PYTHON``, else ``/work/venvs/diffprivlib/bin/python``.

A second table repeats the comparison at other sizes (``--sizes``, total rows before the split; default 2 000,
20 000 and 200 000 training rows; 5 repeats of 3 pairs).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_logreg_speed.py`` (about 30 s). Writes
``benchmarks/results/dp_logreg_speed.json`` and ``.md``. ``--quick``: 2 000 rows, 2 repeats, into a temporary
directory (skips diffprivlib when its interpreter is missing).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, output_dir  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402

EPSILON = 1.0
DEFAULT_PEER = "/work/venvs/diffprivlib/bin/python"
SIZE_FITS = 3  # fit pairs per repeat in the size table

#: The data generators, run as they are by this process and by the diffprivlib worker (same numpy and split).
DATA_CODE = r'''
import hashlib, math
import numpy as np
from sklearn.model_selection import train_test_split

def make_data(design, seed, n=100_000, d=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if design == "logreg_peers":
        w = rng.normal(size=d) / 2
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ w))).astype(int)
        X = X / (2 * math.sqrt(d))
    else:  # trainer_peers
        w = rng.normal(size=d)
        y = (X @ w + rng.normal(size=n) > 0).astype(int)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return train_test_split(X, y, test_size=0.2, random_state=seed)

def digest(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]
'''

WORKER = DATA_CODE + r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import diffprivlib, sklearn
from diffprivlib.models import LogisticRegression
print(json.dumps({"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__,
                  "numpy": np.__version__}), flush=True)
cache = {}
for line in sys.stdin:
    job = json.loads(line)
    key = (job["design"], job["seed"], job["n"])
    if key not in cache:
        cache.clear()
        cache[key] = make_data(*key[:2], n=key[2])
    Xtr, Xte, ytr, yte = cache[key]
    model = LogisticRegression(epsilon=job["epsilon"], data_norm=1.0, random_state=job["seed"])
    c0, w0 = time.process_time(), time.perf_counter()
    model.fit(Xtr, ytr)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(json.dumps({"cpu": cpu, "wall": wall, "accuracy": float(model.score(Xte, yte)),
                      "digest": digest((Xtr, Xte, ytr, yte)), "n_iter": int(np.max(model.n_iter_))}), flush=True)
'''

_data_namespace: dict = {}
exec(DATA_CODE, _data_namespace)  # noqa: S102 - our own code, shared verbatim with the worker
make_data, digest = _data_namespace["make_data"], _data_namespace["digest"]


_cache: dict = {}


def fit_privtune(design, seed, n):
    key = (design, seed, n)
    if key not in _cache:
        _cache.clear()
        _cache[key] = make_data(design, seed, n=n)
    Xtr, Xte, ytr, yte = _cache[key]
    d = Xtr.shape[1]
    model = DPLogisticRegression(epsilon=EPSILON, data_norm=math.sqrt(d), data_norm_l2=1.0, random_state=seed)
    c0, w0 = time.process_time(), time.perf_counter()
    model.fit(Xtr, ytr)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {"cpu": cpu, "wall": wall, "accuracy": float(model.score(Xte, yte)),
            "digest": digest((Xtr, Xte, ytr, yte)), "n_iter": int(model.n_iter_)}


class Peer:
    """The diffprivlib worker: one process for the whole run, one JSON line per fit."""

    def __init__(self, python):
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen([python, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd="/")
        self.versions = json.loads(self.proc.stdout.readline())

    def fit(self, design, seed, n):
        self.proc.stdin.write(json.dumps({"design": design, "seed": seed, "n": n, "epsilon": EPSILON}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def stats(values):
    v = np.asarray(values, dtype=float)
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}


def _median_fit(fits):
    """One tool's figure for a repeat: the median CPU and wall over its fits (the accuracy is the same seed's)."""
    return {"cpu": float(np.median([f["cpu"] for f in fits])), "wall": float(np.median([f["wall"] for f in fits])),
            "accuracy": fits[0]["accuracy"], "digest": fits[0]["digest"], "n_iter": fits[0]["n_iter"],
            "cpu_each": [f["cpu"] for f in fits], "wall_each": [f["wall"] for f in fits]}


def run_design(design, peer, repeats, n, fits):
    fit_privtune(design, 10_000, n)  # warm-ups, untimed
    if peer is not None:
        peer.fit(design, 10_000, n)
    rows = []
    for r in range(repeats):
        runs = {"privtune": [], "diffprivlib": []}
        for k in range(fits):  # pairs, alternating which tool goes first
            order = ("privtune", "diffprivlib") if (r + k) % 2 == 0 else ("diffprivlib", "privtune")
            for tool in order:
                if tool == "privtune":
                    runs["privtune"].append(fit_privtune(design, r, n))
                elif peer is not None:
                    runs["diffprivlib"].append(peer.fit(design, r, n))
        row = {"repeat": r, "seed": r, "first": "privtune" if r % 2 == 0 else "diffprivlib"}
        row.update({t: _median_fit(v) for t, v in runs.items() if v})
        if peer is not None:
            if row["privtune"]["digest"] != row["diffprivlib"]["digest"]:
                raise RuntimeError(f"{design}, seed {r}: the two processes generated different data.")
            row["ratio_cpu"] = row["privtune"]["cpu"] / row["diffprivlib"]["cpu"]
            row["ratio_wall"] = row["privtune"]["wall"] / row["diffprivlib"]["wall"]
        rows.append(row)
        print(design, r, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
                          if k.startswith("ratio")},
              {t: (round(row[t]["cpu"], 4), row[t]["accuracy"]) for t in ("privtune", "diffprivlib") if t in row},
              flush=True)
    tools = ["privtune"] + (["diffprivlib"] if peer is not None else [])
    summary = {t: {m: stats([row[t][m] for row in rows]) for m in ("cpu", "wall", "accuracy")} for t in tools}
    for t in tools:
        summary[t]["n_iter"] = sorted({row[t]["n_iter"] for row in rows})
    if peer is not None:
        summary["ratio_cpu"] = stats([row["ratio_cpu"] for row in rows])
        summary["ratio_wall"] = stats([row["ratio_wall"] for row in rows])
        summary["privtune_at_or_below_every_repeat_cpu"] = bool(all(row["ratio_cpu"] <= 1.0 for row in rows))
        summary["privtune_at_or_below_every_repeat_wall"] = bool(all(row["ratio_wall"] <= 1.0 for row in rows))
    return {"rows": rows, "summary": summary}


def _fmt(s, scale=1e3, digits=1):
    return f"{s['median'] * scale:.{digits}f} [{s['min'] * scale:.{digits}f}, {s['max'] * scale:.{digits}f}]"


def report(results, meta, sizes):
    lines = ["# DP logistic regression fit time: privtune beside diffprivlib, interleaved (80 000 x 20, epsilon = 1)",
             "",
             f"Run {meta['date']} on {meta['machine']}, {meta['cpus']} CPUs shared with other jobs, OMP_NUM_THREADS=1; "
             f"load average {meta['load_before']} before / {meta['load_after']} after; {meta['elapsed_s']:.0f} s. "
             f"Command: `{meta['command']}`.", "",
             f"Versions: python {meta['python']}, numpy {meta['numpy']}, scikit-learn {meta['sklearn']} (privtune, "
             f"commit {meta['commit']}); diffprivlib {meta['peer'].get('diffprivlib', '-')} with scikit-learn "
             f"{meta['peer'].get('sklearn', '-')}, numpy {meta['peer'].get('numpy', '-')} (side venv "
             f"`{meta['peer_python']}`).", "",
             "privtune `DPLogisticRegression(epsilon=1, data_norm=sqrt(20), data_norm_l2=1)` (Gaussian, delta 1e-6, "
             "its default solver); diffprivlib `LogisticRegression(epsilon=1, data_norm=1)` (pure epsilon-DP). "
             f"{meta['repeats']} repeats after one untimed warm-up fit each; repeat r fits both tools "
             f"{meta['fits']} times each on the data of seed r (the same arrays, checked by digest), in pairs that "
             "alternate which tool goes first, and keeps each tool's median; the table gives median [min, max] "
             "over the repeats of those, in ms, of `fit` only. Ratio: privtune / diffprivlib within each repeat.",
             "",
             "| data | tool | fit CPU (ms) | fit wall (ms) | test accuracy | steps |",
             "|---|---|---|---|---|---|"]
    for design, res in results.items():
        s = res["summary"]
        for t in ("privtune", "diffprivlib"):
            if t in s:
                acc = s[t]["accuracy"]
                lines.append(f"| {design} | {t} | {_fmt(s[t]['cpu'])} | {_fmt(s[t]['wall'])} | "
                             f"{acc['median']:.4f} [{acc['min']:.4f}, {acc['max']:.4f}] | "
                             f"{', '.join(map(str, s[t]['n_iter']))} |")
    lines += ["", "| data | CPU ratio: median [min, max] | wall ratio: median [min, max] | "
              "privtune at or below diffprivlib in every repeat (CPU / wall) |", "|---|---|---|---|"]
    for design, res in results.items():
        s = res["summary"]
        if "ratio_cpu" in s:
            lines.append(f"| {design} | {_fmt(s['ratio_cpu'], 1, 2)} | {_fmt(s['ratio_wall'], 1, 2)} | "
                         f"{'yes' if s['privtune_at_or_below_every_repeat_cpu'] else 'no'} / "
                         f"{'yes' if s['privtune_at_or_below_every_repeat_wall'] else 'no'} |")
    lines += ["", "Per repeat (median CPU ms, privtune / diffprivlib, ratio; which ran first in its first pair):",
              ""]
    for design, res in results.items():
        cells = []
        for row in res["rows"]:
            if "diffprivlib" in row:
                cells.append(f"{row['privtune']['cpu'] * 1e3:.1f} / {row['diffprivlib']['cpu'] * 1e3:.1f} "
                             f"({row['ratio_cpu']:.2f}, {row['first']} first)")
        lines.append(f"- {design}: " + "; ".join(cells))
    if sizes:
        lines += ["", "## Other sizes (logreg_peers data, epsilon = 1)", "",
                  f"{meta['size_repeats']} repeats of {SIZE_FITS} interleaved fit pairs each (medians kept), as above; "
                  "CPU ms.",
                  "", "| training rows | privtune CPU (ms) | diffprivlib CPU (ms) | CPU ratio: median [min, max] | "
                  "privtune steps | diffprivlib iterations |", "|---|---|---|---|---|---|"]
        for size, res in sizes.items():
            s = res["summary"]
            if "ratio_cpu" not in s:
                continue
            lines.append(f"| {int(size * 0.8):,} | {_fmt(s['privtune']['cpu'])} | {_fmt(s['diffprivlib']['cpu'])} | "
                         f"{_fmt(s['ratio_cpu'], 1, 2)} | {', '.join(map(str, s['privtune']['n_iter']))} | "
                         f"{', '.join(map(str, s['diffprivlib']['n_iter']))} |")
    return "\n".join(lines) + "\n"


def _load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--fits", type=int, default=5, help="alternating fit pairs per repeat (the median is kept)")
    ap.add_argument("--peer-python", default=os.environ.get("PRIVTUNE_PEER_PYTHON", DEFAULT_PEER))
    ap.add_argument("--designs", default="logreg_peers,trainer_peers")
    ap.add_argument("--sizes", default="2500,25000,250000",
                    help="other total row counts (80/20 split) for the size table, logreg_peers data; '' for none")
    ap.add_argument("--size-repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    args = ap.parse_args(argv)
    n = 100_000
    if args.quick:
        args.repeats, n, args.fits, args.size_repeats, args.sizes = 2, 2_500, 2, 1, "1000"
    out = output_dir(args.quick)
    peer = None
    if Path(args.peer_python).exists():
        peer = Peer(args.peer_python)
    elif not args.quick:
        ap.error(f"no diffprivlib interpreter at {args.peer_python} (see the docstring for the venv)")
    meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "load_before": _load(),
            "machine": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "sklearn": sklearn.__version__, "repeats": args.repeats, "fits": args.fits,
            "size_repeats": args.size_repeats,
            "peer_python": args.peer_python, "peer": peer.versions if peer else {},
            "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_logreg_speed.py"
                       + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))}
    try:
        meta["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=Path(__file__).resolve().parent).stdout.strip() or "-"
    except OSError:
        meta["commit"] = "-"
    t0 = time.time()
    results, sizes = {}, {}
    try:
        for design in args.designs.split(","):
            results[design] = run_design(design, peer, args.repeats, n, args.fits)
        for size in [int(v) for v in args.sizes.split(",") if v]:
            sizes[size] = run_design("logreg_peers", peer, args.size_repeats, size, SIZE_FITS)
    finally:
        if peer is not None:
            peer.close()
    meta["elapsed_s"] = time.time() - t0
    meta["load_after"] = _load()
    text = report(results, meta, sizes)
    print(text)
    out.mkdir(exist_ok=True)
    (out / "dp_logreg_speed.md").write_text(text)
    (out / "dp_logreg_speed.json").write_text(json.dumps({"meta": meta, "results": results, "sizes": sizes}, indent=1))
    print(f"wrote {out / 'dp_logreg_speed.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
