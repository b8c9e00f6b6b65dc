"""privtune's DP logistic regression beside diffprivlib and Opacus: fit time and accuracy, in one run.

Protocol.

* Data. Synthetic: numpy ``default_rng(0)``, 100 000 x 20, ``X ~ N(0, I)``, a fixed
  ``w ~ N(0, I)`` (drawn from the same generator), ``y = (X @ w + N(0, 1) > 0)``; every row divided by
  ``max(1, ||x||_2)``; 80/20 split (``train_test_split(random_state=0)``), so 80 000 x 20 training rows.
  Breast cancer (sklearn bundled, 569 x 30): 80/20 stratified split (``random_state=0``),
  ``StandardScaler`` fitted on the training split, then every row divided by its L2 norm.
* Fit time (synthetic, 80 000 x 20, epsilon = 1): privtune ``DPLogisticRegression(epsilon=1.0,
  classes=[0, 1])`` at its defaults (Gaussian noise, delta = 1e-6, ``random_state=None``) against
  diffprivlib ``LogisticRegression(epsilon=1.0, data_norm=1.0)`` (pure epsilon-DP, ``random_state=None``);
  one warm-up fit, then the median of 7 wall-clock fits each (``time.perf_counter`` around ``fit``
  only), in the same run on the same machine; the ratio privtune / diffprivlib is reported, with the
  median test accuracy of the timed fits.
* Accuracy (both data sets, epsilon in {0.1, 0.3, 1, 3, 10}, noise seeds 0..4, median test accuracy):
  privtune default ``DPLogisticRegression(epsilon=eps, classes=[0, 1], random_state=seed)``;
  diffprivlib ``LogisticRegression(epsilon=eps, data_norm=1.0, random_state=seed)``; Opacus DP-SGD on
  ``nn.Linear(d, 1)`` with ``PrivacyEngine(accountant="prv").make_private_with_epsilon(target_epsilon=eps/2,
  target_delta=1e-6, max_grad_norm=1.0)``, Poisson batches of expected size n/10, 5 epochs, SGD lr 1.0
  (not tuned), BCE loss, ``torch.set_num_threads(1)``; non-private ``sklearn LogisticRegression()`` as
  the ceiling. The PRV accountant is used because the RDP accountant (default orders) cannot reach
  epsilon = 0.05 at delta = 1e-6.
  Opacus' guarantee is for add/remove neighbours, privtune's and diffprivlib's for replace-one: an
  (eps/2, delta) add/remove guarantee gives replace-one (eps, (1 + e**(eps/2)) delta), so running Opacus
  at eps/2 is the like-for-like comparison (its replace-one delta is up to ~150x larger at eps = 10).
* Profile: cProfile of 5 privtune fits (after a warm-up) on the same 80 000 x 20 set at epsilon = 1.

diffprivlib 0.6.6 does not import beside scikit-learn >= 1.9 (``sklearn.tree._tree.DOUBLE``) and does
not fit with 1.8 (``multi_class``), so it runs in a side virtualenv, outside the repository::

    python3 -m venv /tmp/peer-venv
    /tmp/peer-venv/bin/pip install "diffprivlib==0.6.6" "scikit-learn==1.7.2"

The script calls it through ``subprocess`` (a worker embedded below), passing the data as ``.npy``
files in a temporary directory and reading accuracies and fit times as JSON from the worker's stdout.
The side interpreter is ``--peer-python``, else ``$PRIVTUNE_PEER_PYTHON``, else
``/tmp/peer-venv/bin/python``; if it is missing the diffprivlib column is skipped (the script never
creates the venv). Opacus is optional in the main venv (``.venv/bin/pip install opacus``; it keeps the
installed torch); without it the Opacus row is skipped.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_trainer_peers.py`` (about 2-3 minutes; Opacus
is most of it). Writes ``benchmarks/results/dp_trainer_peers.json`` and ``.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import privtune  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import QUICK_HELP, RESULTS, output_dir  # noqa: E402
from benchmarks.trainers.dp_trainer_peer_table import opacus_acc  # noqa: E402  (DP-SGD on a linear layer, BCE, at eps / 2)

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-6
TIMING_EPS = 1.0
DEFAULT_PEER = "/tmp/peer-venv/bin/python"
PEER_SETUP = ('python3 -m venv /tmp/peer-venv && '
              '/tmp/peer-venv/bin/pip install "diffprivlib==0.6.6" "scikit-learn==1.7.2"')
SYN, BC = "synthetic 100k x 20 (80 000 train rows)", "breast cancer (455 train rows, d=30)"

# Runs in the side venv: python WORKER job.json -> one JSON document on stdout.
WORKER = r'''
import json, os, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import sklearn, diffprivlib
from diffprivlib.models import LogisticRegression

job = json.load(open(sys.argv[1]))
d = job["dir"]
load = lambda name: np.load(os.path.join(d, name + ".npy"))
out = {"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__, "numpy": np.__version__,
       "python": sys.version.split()[0]}

t = job["timing"]
Xtr, ytr, Xte, yte = (load(t["data"] + s) for s in ("_Xtr", "_ytr", "_Xte", "_yte"))
LogisticRegression(epsilon=t["epsilon"], data_norm=1.0).fit(Xtr, ytr)  # warm-up
times, accs, iters = [], [], []
for _ in range(t["repeats"]):
    m = LogisticRegression(epsilon=t["epsilon"], data_norm=1.0)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    times.append(time.perf_counter() - t0)
    accs.append(float(m.score(Xte, yte)))
    iters.append(int(np.max(m.n_iter_)))
out["timing"] = {"times_s": times, "acc": accs, "n_iter": iters}

out["accuracy"] = {}
for name in job["datasets"]:
    Xtr, ytr, Xte, yte = (load(name + s) for s in ("_Xtr", "_ytr", "_Xte", "_yte"))
    out["accuracy"][name] = {}
    for eps in job["epsilons"]:
        out["accuracy"][name][repr(eps)] = [
            float(LogisticRegression(epsilon=eps, data_norm=1.0, random_state=s).fit(Xtr, ytr).score(Xte, yte))
            for s in job["seeds"]]
print(json.dumps(out))
'''


# -- data --------------------------------------------------------------------------------------------
def synthetic(n=100_000, d=20):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = (X @ w + rng.normal(size=n) > 0).astype(int)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return train_test_split(X, y, test_size=0.2, random_state=0)


def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    return (Xtr / np.linalg.norm(Xtr, axis=1, keepdims=True), Xte / np.linalg.norm(Xte, axis=1, keepdims=True),
            ytr, yte)


# -- methods in this venv ------------------------------------------------------------------------------
def privtune_acc(Xtr, ytr, Xte, yte, eps, seed):
    return DPLogisticRegression(epsilon=eps, classes=[0, 1], random_state=seed).fit(Xtr, ytr).score(Xte, yte)


def time_privtune(Xtr, ytr, Xte, yte, repeats):
    DPLogisticRegression(epsilon=TIMING_EPS, classes=[0, 1]).fit(Xtr, ytr)  # warm-up
    times, accs, iters = [], [], []
    for _ in range(repeats):
        m = DPLogisticRegression(epsilon=TIMING_EPS, classes=[0, 1])
        t0 = time.perf_counter()
        m.fit(Xtr, ytr)
        times.append(time.perf_counter() - t0)
        accs.append(float(m.score(Xte, yte)))
        iters.append(int(m.n_iter_))
    return {"times_s": times, "acc": accs, "n_iter": iters}


def run_diffprivlib(peer, data, repeats, seeds):
    """diffprivlib in the side venv; returns its JSON or None (with the reason printed)."""
    if not Path(peer).exists():
        print(f"\n*** diffprivlib column SKIPPED: side interpreter {peer} not found.\n"
              f"    Create it (outside the repository) with:\n        {PEER_SETUP}\n"
              "    or pass --peer-python / set PRIVTUNE_PEER_PYTHON.\n", flush=True)
        return None, f"skipped: {peer} not found"
    with tempfile.TemporaryDirectory(prefix="dp_trainer_peers_") as tmp:
        for name, arrays in data.items():
            for suffix, a in zip(("_Xtr", "_Xte", "_ytr", "_yte"), arrays, strict=True):
                np.save(Path(tmp) / f"{name}{suffix}.npy", a)
        (Path(tmp) / "worker.py").write_text(WORKER)
        (Path(tmp) / "job.json").write_text(json.dumps(
            {"dir": tmp, "timing": {"data": "syn", "epsilon": TIMING_EPS, "repeats": repeats},
             "datasets": list(data), "epsilons": list(EPS), "seeds": list(seeds)}))
        env = dict(os.environ)  # OMP_NUM_THREADS=1 is inherited
        proc = subprocess.run([peer, str(Path(tmp) / "worker.py"), str(Path(tmp) / "job.json")],
                              capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        print(f"\n*** diffprivlib column SKIPPED: the worker failed in {peer}:\n{tail}\n"
              f"    Expected setup: {PEER_SETUP}\n", flush=True)
        return None, f"skipped: worker failed ({tail.splitlines()[-1] if tail else proc.returncode})"
    return json.loads(proc.stdout.strip().splitlines()[-1]), "ok"


def profile_privtune(Xtr, ytr, n_fits=5, top=12):
    DPLogisticRegression(epsilon=TIMING_EPS, classes=[0, 1]).fit(Xtr, ytr)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n_fits):
        DPLogisticRegression(epsilon=TIMING_EPS, classes=[0, 1]).fit(Xtr, ytr)
    pr.disable()
    st = pstats.Stats(pr)
    total = st.total_tt
    root = str(Path(privtune.__file__).resolve().parent.parent)

    def short(func):
        file, line, name = func
        file = file.replace(root + os.sep, "")
        if "site-packages" in file:
            file = file.split("site-packages" + os.sep, 1)[1]
        return f"{file}:{line}({name})"

    entries = [{"function": short(f), "ncalls": nc, "tottime_s": tt, "cumtime_s": ct}
               for f, (cc, nc, tt, ct, _callers) in st.stats.items()]
    by_tot = sorted(entries, key=lambda e: -e["tottime_s"])[:top]
    by_cum = [e for e in sorted(entries, key=lambda e: -e["cumtime_s"]) if e["function"].startswith("privtune")][:top]
    return {"n_fits": n_fits, "total_s": total, "per_fit_s": total / n_fits, "by_tottime": by_tot,
            "by_cumtime_privtune": by_cum}


def med(xs):
    return float(np.median(xs)) if xs else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--peer-python", default=os.environ.get("PRIVTUNE_PEER_PYTHON", DEFAULT_PEER),
                    help="python of the side venv with diffprivlib (default $PRIVTUNE_PEER_PYTHON or "
                         f"{DEFAULT_PEER})")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (2 000 synthetic rows, one seed)")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.repeats = 1, 1
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    warnings.filterwarnings("ignore")
    t_start = time.perf_counter()
    seeds = list(range(args.seeds))
    data = {"syn": synthetic(n=2_500) if args.quick else synthetic(), "bc": breast_cancer()}
    names = {"syn": SYN, "bc": BC}
    load_before = os.getloadavg()

    # 1. fit time on 80 000 x 20 (privtune here first, then diffprivlib in the side venv)
    Xtr, Xte, ytr, yte = data["syn"]
    print(f"fit time: {Xtr.shape[0]} x {Xtr.shape[1]}, epsilon = {TIMING_EPS}, 1 warm-up + {args.repeats} fits",
          flush=True)
    pt_timing = time_privtune(Xtr, ytr, Xte, yte, args.repeats)
    print(f"  privtune    median {med(pt_timing['times_s']):.4f} s  (T = {pt_timing['n_iter'][0]} steps, "
          f"test acc {med(pt_timing['acc']):.4f})", flush=True)
    print("diffprivlib (side venv): timing and accuracy ...", flush=True)
    dl, dl_status = run_diffprivlib(args.peer_python, data, args.repeats, seeds)
    ratio = None
    if dl is not None:
        ratio = med(pt_timing["times_s"]) / med(dl["timing"]["times_s"])
        print(f"  diffprivlib median {med(dl['timing']['times_s']):.4f} s  (lbfgs iterations "
              f"{dl['timing']['n_iter'][0]}, test acc {med(dl['timing']['acc']):.4f}); diffprivlib "
              f"{dl['diffprivlib']} with scikit-learn {dl['sklearn']}", flush=True)
        print(f"  ratio privtune / diffprivlib = {ratio:.2f}", flush=True)

    # 2. accuracy table
    try:
        import opacus
        import torch
        opacus_version, torch_version = opacus.__version__, torch.__version__
    except ImportError as exc:
        opacus_version, torch_version = None, None
        print(f"\n*** Opacus row SKIPPED ({exc}); install with .venv/bin/pip install opacus\n", flush=True)
    table, opacus_nm, opacus_time = {}, {}, []
    for key, (Xtr, Xte, ytr, yte) in data.items():
        ceiling = float(LogisticRegression().fit(Xtr, ytr).score(Xte, yte))
        rows = {"privtune": [], "diffprivlib": [], "opacus": []}
        for eps in EPS:
            rows["privtune"].append(med([privtune_acc(Xtr, ytr, Xte, yte, eps, s) for s in seeds]))
            rows["diffprivlib"].append(med(dl["accuracy"][key][repr(eps)]) if dl is not None else None)
            if opacus_version is not None:
                t0 = time.perf_counter()
                res = [opacus_acc(Xtr, ytr, Xte, yte, eps, s) for s in seeds]
                opacus_time.append((time.perf_counter() - t0) / len(seeds))
                rows["opacus"].append(med([a for a, _ in res]))
                opacus_nm.setdefault(key, []).append(res[0][1])
            else:
                rows["opacus"].append(None)
        table[key] = {"rows": rows, "non_private": ceiling, "majority": float(max(yte.mean(), 1 - yte.mean()))}
        for m, accs in rows.items():
            cells = "  ".join("  -  " if a is None else f"{a:.4f}" for a in accs)
            print(f"{names[key][:24]:24s} {m:12s} {cells}   (non-private {ceiling:.4f})", flush=True)

    # 3. profile
    prof = profile_privtune(data["syn"][0], data["syn"][2], n_fits=1 if args.quick else 5)
    print(f"\nprofile: {prof['n_fits']} privtune fits, {prof['per_fit_s']:.3f} s per fit under cProfile")
    for e in prof["by_tottime"]:
        print(f"  {e['tottime_s']:7.3f} s self {e['cumtime_s']:7.3f} s cum  {e['ncalls']:6d} calls  {e['function']}")

    elapsed = time.perf_counter() - t_start
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
            "OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"], "python": platform.python_version(),
            "privtune": privtune.__version__, "numpy": np.__version__, "sklearn": sklearn.__version__,
            "torch": torch_version, "opacus": opacus_version, "peer_python": args.peer_python,
            "diffprivlib_status": dl_status,
            "peer": None if dl is None else {k: dl[k] for k in ("diffprivlib", "sklearn", "numpy", "python")},
            "seeds": args.seeds, "repeats": args.repeats, "seconds": round(elapsed, 1)}
    result = {"meta": meta, "epsilons": EPS, "delta": DELTA,
              "fit_time": {"data": f"{SYN}, epsilon = {TIMING_EPS}", "privtune": pt_timing,
                           "diffprivlib": None if dl is None else dl["timing"],
                           "privtune_median_s": med(pt_timing["times_s"]),
                           "diffprivlib_median_s": None if dl is None else med(dl["timing"]["times_s"]),
                           "ratio_privtune_over_diffprivlib": ratio},
              "accuracy": {names[k]: v for k, v in table.items()},
              "opacus_noise_multiplier_seed0": {names[k]: v for k, v in opacus_nm.items()},
              "opacus_seconds_per_fit_mean": float(np.mean(opacus_time)) if opacus_time else None,
              "privtune_profile": prof}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "dp_trainer_peers.json").write_text(json.dumps(result, indent=1))

    f = lambda x, p=4: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    peer = "skipped" if dl is None else f"diffprivlib {dl['diffprivlib']} with scikit-learn {dl['sklearn']}, " \
                                        f"numpy {dl['numpy']} (side venv {args.peer_python})"
    lines = [
        "# DP logistic regression: privtune vs diffprivlib vs Opacus (fit time and accuracy)", "",
        f"Run {meta['run']}, {meta['platform']}, {meta['cpus']} CPUs, OMP_NUM_THREADS={meta['OMP_NUM_THREADS']}, "
        f"load average {load_before[0]:.2f} before / {meta['loadavg_after'][0]:.2f} after; "
        f"{meta['seconds']:.0f} s. `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_trainer_peers.py`.", "",
        f"Versions: python {meta['python']}, privtune {meta['privtune']}, numpy {meta['numpy']}, "
        f"scikit-learn {meta['sklearn']}, torch {torch_version or '-'}, opacus {opacus_version or 'not installed'}; "
        f"{peer}.", "",
        f"## Fit time, {SYN}, epsilon = {TIMING_EPS} (1 warm-up + median of {args.repeats} wall-clock fits)", "",
        "| method | median fit time (s) | min / max (s) | steps | test accuracy (median) |", "|---|---|---|---|---|",
        f"| privtune `DPLogisticRegression(epsilon=1.0, classes=[0, 1])` (Gaussian, delta 1e-6) | "
        f"{f(med(pt_timing['times_s']))} | {f(min(pt_timing['times_s']))} / {f(max(pt_timing['times_s']))} | "
        f"{pt_timing['n_iter'][0]} | {f(med(pt_timing['acc']))} |"]
    if dl is not None:
        tt = dl["timing"]
        lines.append(f"| diffprivlib `LogisticRegression(epsilon=1.0, data_norm=1.0)` (pure eps-DP) | "
                     f"{f(med(tt['times_s']))} | {f(min(tt['times_s']))} / {f(max(tt['times_s']))} | "
                     f"{tt['n_iter'][0]} (lbfgs) | {f(med(tt['acc']))} |")
        lines += ["", f"**Ratio privtune / diffprivlib: {ratio:.2f}** (per step: privtune "
                  f"{1e3 * med(pt_timing['times_s']) / pt_timing['n_iter'][0]:.2f} ms per gradient step, diffprivlib "
                  f"{1e3 * med(tt['times_s']) / max(1, tt['n_iter'][0]):.2f} ms per L-BFGS iteration)"]
    else:
        lines += ["", f"diffprivlib {dl_status}. Setup: `{PEER_SETUP}`"]
    lines += [
        "", f"## Test accuracy (median of {args.seeds} noise seeds)", "",
        "privtune: default `DPLogisticRegression(epsilon=eps, classes=[0, 1])`, (eps, 1e-6)-DP replace-one. "
        "diffprivlib: `LogisticRegression(epsilon=eps, data_norm=1.0)`, pure eps-DP replace-one. "
        "Opacus: DP-SGD on `nn.Linear(d, 1)` at **target_epsilon = eps/2**, target_delta = 1e-6 (PRV accountant), "
        "clip 1, Poisson batches of n/10, 5 epochs, SGD lr 1.0 (not tuned). Opacus' guarantee is add/remove; "
        "(eps/2, delta) add/remove implies replace-one (eps, (1 + e^(eps/2)) delta), so this row is the "
        "like-for-like comparison at the same replace-one epsilon (with a somewhat larger delta).", "",
        "| dataset | method | " + " | ".join(f"ε = {e:g}" for e in EPS) + " |", "|---|---|" + "---|" * len(EPS)]
    labels = {"privtune": "privtune (default)", "diffprivlib": "diffprivlib", "opacus": "Opacus DP-SGD at eps/2"}
    for key, t in table.items():
        for m, accs in t["rows"].items():
            lines.append(f"| {names[key]} | {labels[m]} | " + " | ".join(f(a) for a in accs) + " |")
        lines.append(f"| {names[key]} | non-private sklearn (ceiling) | " + " | ".join([f(t['non_private'])] * len(EPS))
                     + " |")
    lines += ["", f"## Profile of privtune's fit ({SYN}, epsilon = {TIMING_EPS}, cProfile over {prof['n_fits']} fits, "
              f"{prof['per_fit_s']:.3f} s per fit under the profiler)", "",
              "| function | calls | self time (s) | cumulative (s) | self share |", "|---|---|---|---|---|"]
    for e in prof["by_tottime"][:8]:
        lines.append(f"| `{e['function']}` | {e['ncalls']} | {e['tottime_s']:.3f} | {e['cumtime_s']:.3f} | "
                     f"{100 * e['tottime_s'] / prof['total_s']:.0f} % |")
    grad = [e for e in prof["by_tottime"] if e["function"].endswith("(gradient)")]
    if grad:
        g = grad[0]
        lines += ["", f"The full-batch gradient (`U @ w`, the loss derivative, `U.T @ coef` on the 80 000 x 21 "
                  f"intercept-augmented rows) is called {g['ncalls'] // prof['n_fits']} times per fit (one per step, "
                  f"T = {pt_timing['n_iter'][0]}), {1e3 * g['cumtime_s'] / g['ncalls']:.2f} ms per call, "
                  f"{100 * g['cumtime_s'] / prof['total_s']:.0f} % of the fit; the rest is input clipping/copies "
                  "and the noise/accounting bookkeeping."]
    text = "\n".join(lines) + "\n"
    (OUT / "dp_trainer_peers.md").write_text(text)
    print(f"\nwrote {OUT / 'dp_trainer_peers.md'} and .json in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
