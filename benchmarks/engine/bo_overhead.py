"""Engine overhead per BO iteration: privtune's GP-UCB vs BoTorch and Optuna, one thread, one run.

"Overhead" is everything a BO loop spends per iteration except the objective:
proposing the next point and conditioning on its score. The objective is a
cheap sum of sines and is, in addition, *excluded* from every timed segment
(privtune loop, BoTorch, Optuna) or *subtracted* (``GPUCB.run``, whose
objective calls are timed inside the wrapper).

Tools, all in this one process, one thread (OMP/MKL/OpenBLAS = 1,
``torch.set_num_threads(1)``):

* **privtune loop** -- ``UCBEngine.ask()`` + ``UCBEngine.tell()`` over a finite
  candidate set Λ (``GPPosterior`` with the default ``GPUCB`` kernel:
  Matérn-5/2, lengthscale 0.2, task correlation 0.95; σ = 0.1). Mean and max
  per iteration; the posterior construction is reported separately (setup).
* **privtune GPUCB.run** -- Kusner et al.'s Alg. 1 in full: γ_T (greedy
  information gain over Λ), the privacy plan and accountant, the T-iteration
  loop, the exponential mechanism on μ_T and the Laplace release of the best
  score; total minus objective time, divided by T ("amortised"). privtune
  caches γ_T per candidate set, so the cache is cleared before every timed run.
* **candidate_set** -- the one-off construction of Λ (scrambled Sobol +
  encode/decode + de-duplication), reported separately, not in either of the above.
* **BoTorch** -- the standard loop: ``SingleTaskGP`` (default priors and
  outcome standardisation) + ``fit_gpytorch_mll`` + ``UpperConfidenceBound``
  (β = 2) + ``optimize_acqf`` (q = 1, num_restarts = 10, raw_samples = 256),
  float64, refitted from scratch every iteration; 2 initial Sobol points count
  towards T (their overhead is the Sobol draw).
* **Optuna** ``GPSampler`` and ``TPESampler`` with their defaults (including
  ``n_startup_trials = 10`` random trials), ask/tell interface, in-memory storage.

BoTorch and Optuna optimise over the continuous cube [0, 1]^d, so their cost
does not depend on |Λ|; they are run once per d at T = 100, and their cost
per iteration "at T" is the mean over the first T iterations of that run (a
run of length T is exactly that prefix: none of them looks ahead at T).
Timings are wall clock (``perf_counter``); CPU time of the process
(``process_time``) is recorded alongside because the machine may be shared
with other processes (the load average is recorded at start and end).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/engine/bo_overhead.py [--quick]``.
Writes ``benchmarks/results/bo_overhead.json`` and ``.md``. ``--scale`` runs only
the large-candidate-set section (``candidate_set`` at 65 536 points in d = 2 and
6; the engine's slowest iteration at |Λ| = 65 536 with and without a pre-sized
Cholesky factor) and writes ``bo_overhead_scale.json`` and ``.md``.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass

from privtune.bo import _gp_method  # noqa: E402
from privtune.bo.engine import UCBEngine  # noqa: E402
from privtune.bo.gp_ucb import GPUCB  # noqa: E402
from privtune.gp import GPPosterior, InputKernel, MultiTaskKernel, TaskKernel, gamma_T  # noqa: E402
from privtune.space import Real, SearchSpace, candidate_set  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import RESULTS, output_dir  # noqa: E402

OUT = RESULTS
pc = time.perf_counter
cpu = time.process_time

TS = (10, 50, 100)
SIZES = (1024, 4096, 16384)
DIMS = (2, 6)
NOISE_STD = 0.1
EPSILON, DELTA = 1.0, 1e-3
BOTORCH = {"num_restarts": 10, "raw_samples": 256, "beta": 2.0, "n_init": 2, "dtype": "float64"}
PEER_REPS = {"botorch": 1, "gp": 2, "tpe": 2}  # seeds 0..reps-1; median of the per-T means
TARGET = {"T": 100, "n_candidates": 4096, "d": 2, "max_ms_per_iter": 2.0,
          "min_ratio_botorch": 50.0, "min_ratio_gpsampler": 20.0}


def loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# ---------------------------------------------------------------- objective
def sines(x) -> float:
    """Cheap synthetic score in [-1, 1]: mean_i sin(5 x_i + i)."""
    return sum(math.sin(5.0 * float(v) + i) for i, v in enumerate(x)) / len(x)


class TimedObjective:
    """``params dict -> score`` for GPUCB.run, accumulating its own time (to subtract)."""

    def __init__(self):
        self.wall = 0.0
        self.cpu = 0.0
        self.calls = 0

    def __call__(self, params):
        w, c = pc(), cpu()
        y = sines(params.values())
        self.cpu += cpu() - c
        self.wall += pc() - w
        self.calls += 1
        return y


def default_kernel():
    return MultiTaskKernel(InputKernel(0.2), TaskKernel(0.95))


def make_space(d):
    return SearchSpace({f"x{i}": Real(0.0, 1.0) for i in range(d)})


# ---------------------------------------------------------------- privtune
def privtune_loop(cands, T, capacity=None):
    """ask + tell only; the objective is called between the timed segments."""
    X = cands.X
    w0, c0 = pc(), cpu()
    post = GPPosterior(cands, default_kernel(), noise_var=NOISE_STD**2, score_bounds=(-1.0, 1.0),
                       capacity=capacity if capacity is not None else T + 1)  # as the release methods pre-size
    eng = UCBEngine(post, delta=DELTA / 2)  # GPUCB's loop uses the smaller of the two deltas
    setup_w, setup_c = pc() - w0, cpu() - c0
    per_w, per_c = [], []
    for _ in range(T):
        w, c = pc(), cpu()
        i = eng.ask()
        w1, c1 = pc(), cpu()
        v = sines(X[i])
        w2, c2 = pc(), cpu()
        eng.tell(i, v)
        w3, c3 = pc(), cpu()
        per_w.append((w1 - w) + (w3 - w2))
        per_c.append((c1 - c) + (c3 - c2))
    return {"setup_w": setup_w, "setup_c": setup_c, "per_w": per_w, "per_c": per_c}


def privtune_run(cands, T, seed=0):
    """The whole GPUCB.run (γ_T, plan, loop, both releases), objective time subtracted."""
    _gp_method._GAMMA_CACHE.clear()  # otherwise repeated runs on one Λ would skip γ_T
    obj = TimedObjective()
    method = GPUCB(epsilon=EPSILON, delta=DELTA, n_iter=T, score_bounds=(-1.0, 1.0), noise_std=NOISE_STD)
    w, c = pc(), cpu()
    rel = method.run(obj, cands, random_state=seed)
    tw, tc = pc() - w, cpu() - c
    assert obj.calls == T and rel.n_iter == T
    return {"wall": tw - obj.wall, "cpu": tc - obj.cpu, "objective_wall": obj.wall}


def time_gamma(cands, T):
    w = pc()
    gamma_T(cands.X, T, NOISE_STD**2, kernel=default_kernel())
    return pc() - w


# ---------------------------------------------------------------- BoTorch
def botorch_run(d, T, seed=0):
    from botorch.acquisition import UpperConfidenceBound
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from torch.quasirandom import SobolEngine

    torch.manual_seed(seed)
    dt = torch.float64
    bounds = torch.stack([torch.zeros(d, dtype=dt), torch.ones(d, dtype=dt)])
    sobol = SobolEngine(d, scramble=True, seed=seed)
    Xs = torch.zeros((0, d), dtype=dt)
    Ys = torch.zeros((0, 1), dtype=dt)
    per_w, per_c, fit_w = [], [], []
    for t in range(T):
        w, c = pc(), cpu()
        if t < BOTORCH["n_init"]:
            x = sobol.draw(1).to(dt)
            fw = 0.0
        else:
            model = SingleTaskGP(Xs, Ys)
            mll = ExactMarginalLogLikelihood(model.likelihood, model)
            f0 = pc()
            fit_gpytorch_mll(mll)
            fw = pc() - f0
            acq = UpperConfidenceBound(model, beta=BOTORCH["beta"])
            x, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=BOTORCH["num_restarts"],
                                 raw_samples=BOTORCH["raw_samples"])
        w1, c1 = pc(), cpu()
        y = sines(x[0].tolist())
        w2, c2 = pc(), cpu()
        Xs = torch.cat([Xs, x.reshape(1, d)])
        Ys = torch.cat([Ys, torch.tensor([[y]], dtype=dt)])
        w3, c3 = pc(), cpu()
        per_w.append((w1 - w) + (w3 - w2))
        per_c.append((c1 - c) + (c3 - c2))
        fit_w.append(fw)
    return {"per_w": per_w, "per_c": per_c, "fit_w": fit_w}


# ---------------------------------------------------------------- Optuna
def optuna_run(kind, d, T, seed=0):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.GPSampler(seed=seed) if kind == "gp" else optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    per_w, per_c = [], []
    for _ in range(T):
        w, c = pc(), cpu()
        trial = study.ask()
        x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(d)]
        w1, c1 = pc(), cpu()
        y = sines(x)
        w2, c2 = pc(), cpu()
        study.tell(trial, y)
        w3, c3 = pc(), cpu()
        per_w.append((w1 - w) + (w3 - w2))
        per_c.append((c1 - c) + (c3 - c2))
    return {"per_w": per_w, "per_c": per_c}


def optuna_version():
    try:
        import optuna
        return optuna.__version__
    except ImportError:
        return None


# ---------------------------------------------------------------- helpers
def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def ms(x):
    return 1e3 * x


def med(xs):
    return statistics.median(xs)


def loglog_slope(xs, ys):
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def fmt(x, nd=3):
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.{nd}f}"


def scale(out: Path | None) -> dict:
    """Large candidate sets: ``candidate_set`` at 65 536 points and the engine's worst iteration there.

    ``candidate_set`` (d = 2 and 6, |Λ| = 4 096 and 65 536, median of 3) and
    the ask + tell loop at |Λ| = 65 536, d = 2, T = 300: its slowest
    iteration and the iteration that adds the 257th observation, with the
    factor pre-sized (what the release methods do) and grown from the default
    32 rows (``capacity=32``: since issue 41 in blocks, nothing copied; before,
    a doubled copy of V cost 241 ms at iteration 257 against a 7 ms median,
    run 2026-11-24), side by side.
    """
    res: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg_start": loadavg(),
                 "platform": platform.platform(), "numpy": np.__version__, "candidate_set_ms": {}}
    for d in (2, 6):
        space = make_space(d)
        for n in (4096, 65536):
            ts = []
            for r in range(3):
                w = pc()
                candidate_set(space, n, random_state=r)
                ts.append(pc() - w)
            res["candidate_set_ms"][f"d={d},n={n}"] = ms(med(ts))
            print(f"candidate_set d={d} |Λ|={n}: {ms(med(ts)):.1f} ms", flush=True)
    cands = candidate_set(make_space(2), 65536, random_state=0)
    privtune_loop(cands, 5)  # warm-up
    for label, cap in (("pre-sized", None), ("grown from 32", 32)):
        r = privtune_loop(cands, 300, capacity=cap)
        per = [ms(x) for x in r["per_w"]]
        res[f"loop_{label}"] = {"mean_ms": statistics.fmean(per), "max_ms": max(per),
                               "iteration_257_ms": per[256], "median_ms": statistics.median(per)}
        print(f"loop |Λ|=65536 d=2 T=300 ({label}): mean {statistics.fmean(per):.2f} ms, max {max(per):.1f} ms, "
              f"iteration 257 {per[256]:.1f} ms", flush=True)
    res["loadavg_end"] = loadavg()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bo_overhead_scale.json").write_text(json.dumps(res, indent=1, default=_jsonable))
        L = ["# Large candidate sets: `candidate_set` and the engine's worst iteration\n",
             f"Run {res['started']}, {res['platform']}, numpy {res['numpy']}; load average start "
             f"{res['loadavg_start']}, end {res['loadavg_end']}. `python benchmarks/engine/bo_overhead.py --scale`.\n",
             "| d | \\|Λ\\| | `candidate_set` ms (median of 3) |", "|---|---|---|"]
        for k, v in res["candidate_set_ms"].items():
            d, n = k.split(",")
            L.append(f"| {d[2:]} | {n[2:]} | {v:.1f} |")
        L += ["", "ask + tell at |Λ| = 65 536, d = 2, T = 300 (ms):", "",
              "| factor | mean | median | max | iteration 257 |", "|---|---|---|---|---|"]
        L_note = ("\nBefore issue 41 the factor grown from 32 rows copied V at each doubling: max and iteration 257 "
                  "241.4 ms against a 6.95 ms median (run 2026-11-24 16:05). Now V grows in blocks (nothing copied).")
        for label in ("pre-sized", "grown from 32"):
            v = res[f"loop_{label}"]
            L.append(f"| {label} | {v['mean_ms']:.2f} | {v['median_ms']:.2f} | {v['max_ms']:.1f} "
                     f"| {v['iteration_257_ms']:.1f} |")
        (out / "bo_overhead_scale.md").write_text("\n".join(L) + "\n" + L_note + "\n")
        print(f"wrote {out / 'bo_overhead_scale.json'} and .md")
    return res


LARGE = {"sizes": (4096, 16384, 65536), "Ts": (50, 100, 300), "dims": (2, 6), "reps": 3}


def noisy_run(cands, T, seed=0):
    """The whole NoisyUCB.run (plan, T Gaussian releases, loop, final release), objective CPU time subtracted."""
    from privtune.bo.noisy_ucb import NoisyUCB

    obj = TimedObjective()
    method = NoisyUCB(epsilon=EPSILON, delta=DELTA, n_iter=T, score_sensitivity=0.01, score_bounds=(-1.0, 1.0))
    c = cpu()
    rel = method.run(obj, cands, random_state=seed)
    tc = cpu() - c
    assert rel.n_iter == T
    return {"cpu": tc - obj.cpu}


def large(out: Path, reps: int, quick: bool = False) -> dict:
    """privtune's whole ``GPUCB.run`` and ``NoisyUCB.run`` against Optuna's TPE, interleaved, in CPU time.

    For each d, |Λ| and T and each repetition r: one TPE run of T trials
    (``TPESampler(seed=r)``, defaults), then ``GPUCB.run`` (γ_T cache cleared:
    γ_T is computed as on the first search over a Λ) and ``NoisyUCB.run``
    (score sensitivity 0.01) with ``random_state=r``. Cost per iteration =
    process CPU time of the run minus the objective's, divided by T. The
    ratio privtune / TPE is taken within each repetition (the two ran seconds
    apart, under the same load); the table gives its median and range over the
    repetitions. Growth with T: log-log slope of the per-iteration cost from
    the smallest to the largest T. γ_T alone is timed once per (d, |Λ|, T):
    the share of ``GPUCB.run`` a second search over the same Λ does not pay
    (privtune caches γ_T per candidate set).
    """
    import optuna  # the peer: required here

    sizes, Ts, dims = ((1024,), (10, 20), (2,)) if quick else (LARGE["sizes"], LARGE["Ts"], LARGE["dims"])
    res: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg_start": loadavg(),
                 "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/engine/bo_overhead.py --large"
                 + ("" if reps == LARGE["reps"] else f" --reps {reps}"),
                 "platform": platform.platform(), "python": sys.version.split()[0], "numpy": np.__version__,
                 "optuna": optuna.__version__, "cpu_count": os.cpu_count(), "reps": reps,
                 "commit": _git_head(), "rows": [], "growth": {}}
    print(f"load average at start: {res['loadavg_start']}", flush=True)
    t0 = pc()
    optuna_run("tpe", 2, 12)  # warm-ups
    privtune_run(candidate_set(make_space(2), 256, random_state=0), 5)
    noisy_run(candidate_set(make_space(2), 256, random_state=0), 5)
    for d in dims:
        for n in sizes:
            cands = candidate_set(make_space(d), n, random_state=0)
            for T in Ts:
                tpe, gp, nu = [], [], []
                for r in range(reps):
                    tpe.append(float(np.sum(optuna_run("tpe", d, T, seed=r)["per_c"])) / T)
                    gp.append(privtune_run(cands, T, seed=r)["cpu"] / T)
                    nu.append(noisy_run(cands, T, seed=r)["cpu"] / T)
                c = cpu()
                gamma_T(cands.X, T, NOISE_STD**2, kernel=default_kernel())
                g = cpu() - c
                row = {"d": d, "n_candidates": n, "T": T,
                       "tpe_ms": [ms(x) for x in tpe], "gpucb_ms": [ms(x) for x in gp],
                       "noisyucb_ms": [ms(x) for x in nu], "gamma_T_ms_per_iter": ms(g / T),
                       "ratio_gpucb": [a / b for a, b in zip(gp, tpe, strict=True)],
                       "ratio_noisyucb": [a / b for a, b in zip(nu, tpe, strict=True)]}
                res["rows"].append(row)
                print(f"d={d} |Λ|={n:5d} T={T:3d}: TPE {ms(med(tpe)):.2f}, GPUCB {ms(med(gp)):.2f} "
                      f"(γ_T {ms(g / T):.2f}), NoisyUCB {ms(med(nu)):.2f} ms/it; ratios "
                      f"{med(row['ratio_gpucb']):.2f}, {med(row['ratio_noisyucb']):.2f}", flush=True)
    for d in dims:
        for n in sizes:
            rs = [r for r in res["rows"] if r["d"] == d and r["n_candidates"] == n]
            Tv = [r["T"] for r in rs]
            res["growth"][f"d={d},n={n}"] = {
                k: loglog_slope(Tv, [med(r[f"{k}_ms"]) for r in rs]) for k in ("tpe", "gpucb", "noisyucb")}
    res["loadavg_end"] = loadavg()
    res["total_runtime_s"] = pc() - t0
    out.mkdir(parents=True, exist_ok=True)
    (out / "bo_overhead_large.json").write_text(json.dumps(res, indent=1, default=_jsonable))
    (out / "bo_overhead_large.md").write_text(render_large(res))
    print(render_large(res))
    print(f"wrote {out / 'bo_overhead_large.json'} and .md")
    return res


def _git_head():
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def render_large(res: dict) -> str:
    def spread(xs):
        return f"{med(xs):.2f} [{min(xs):.2f}–{max(xs):.2f}]"

    L = ["# privtune's engine against Optuna TPE at large candidate sets (CPU time, interleaved)\n",
         f"Run {res['started']} (commit {res['commit']}), {res['platform']}, Python {res['python']}, numpy "
         f"{res['numpy']}, Optuna {res['optuna']}; {res['cpu_count']} CPUs, one thread. Load average (1/5/15 min) "
         f"start {res['loadavg_start']}, end {res['loadavg_end']}; {res['total_runtime_s']:.0f} s. "
         f"Command: `{res['command']}`.\n",
         "Per-iteration **process CPU time** of the whole `GPUCB.run` (γ_T computed, not cached; plan, loop, both "
         "releases) and `NoisyUCB.run` (T + 1 Gaussian releases, loop), objective time subtracted, against "
         "Optuna's `TPESampler` (defaults, ask/tell, in memory). Each repetition runs TPE, then GPUCB, then "
         f"NoisyUCB ({res['reps']} repetitions, seeds 0..{res['reps'] - 1}); ratios are taken within a "
         "repetition: median [min–max]. A ratio at or below 1 meets issue 41's target. γ_T alone: the part of "
         "GPUCB's cost that a second search over the same Λ does not pay (cached).\n",
         "| d | \\|Λ\\| | T | TPE ms/it | GPUCB ms/it | of which γ_T | NoisyUCB ms/it | GPUCB / TPE | NoisyUCB / TPE |",
         "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        L.append(f"| {r['d']} | {r['n_candidates']} | {r['T']} | {med(r['tpe_ms']):.2f} | {med(r['gpucb_ms']):.2f} "
                 f"| {r['gamma_T_ms_per_iter']:.2f} | {med(r['noisyucb_ms']):.2f} | {spread(r['ratio_gpucb'])} "
                 f"| {spread(r['ratio_noisyucb'])} |")
    L += ["", "Growth with T (log-log slope of the per-iteration cost from the smallest to the largest T; 1 = the "
          "per-iteration cost doubles when T doubles):", "", "| d | \\|Λ\\| | TPE | GPUCB | NoisyUCB |",
          "|---|---|---|---|---|"]
    for k, v in res["growth"].items():
        d, n = (p.split("=")[1] for p in k.split(","))
        L.append(f"| {d} | {n} | {v['tpe']:.2f} | {v['gpucb']:.2f} | {v['noisyucb']:.2f} |")
    met = [r for r in res["rows"] if med(r["ratio_gpucb"]) <= 1 and med(r["ratio_noisyucb"]) <= 1]
    L += ["", f"Target (both ratios ≤ 1): met in {len(met)} of {len(res['rows'])} configurations."]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", action="store_true",
                    help="only the large-|Λ| section: candidate_set at 65 536 points and the engine's worst iteration")
    ap.add_argument("--large", action="store_true",
                    help="only GPUCB.run and NoisyUCB.run against Optuna TPE at |Λ| up to 65 536, T up to 300 "
                         "(CPU time, interleaved): bo_overhead_large.{json,md}")
    ap.add_argument("--quick", action="store_true", help="smoke test: tiny T, one size, no peers at T=100")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each privtune measurement")
    args = ap.parse_args()
    if args.large:
        large(output_dir(args.quick), reps=args.reps if args.reps != 5 else LARGE["reps"], quick=args.quick)
        return
    if args.scale:
        scale(OUT)
        return
    Ts, sizes, dims, reps = (TS, SIZES, DIMS, args.reps) if not args.quick else ((5, 10), (1024,), (2,), 2)
    T_peer = max(Ts)

    t_start = pc()
    meta = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "loadavg_start": loadavg(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "optuna": optuna_version(),
        "privtune_reps": reps,
        "peer_reps": PEER_REPS,
        "botorch_settings": BOTORCH,
        "T_values": list(Ts), "sizes": list(sizes), "dims": list(dims),
        "note": ("Other processes may be loading the machine; the load average is recorded at start and end. "
                 "Wall-clock is primary; process CPU time is recorded alongside."),
    }
    try:
        import botorch
        meta["botorch"] = botorch.__version__
    except ImportError:
        meta["botorch"] = None
    try:  # Optuna's GPSampler batches its L-BFGS-B restarts only when greenlet is importable
        import greenlet
        meta["greenlet"] = greenlet.__version__
    except ImportError:
        meta["greenlet"] = None
    print(f"load average at start: {meta['loadavg_start']} on {meta['cpu_count']} CPUs", flush=True)

    # ---- candidate sets (one-off) ----
    cand_time, cands = {}, {}
    for d in dims:
        space = make_space(d)
        for n in sizes:
            ts = []
            for r in range(3):
                w = pc()
                c = candidate_set(space, n, random_state=r)
                ts.append(pc() - w)
            cands[(d, n)] = candidate_set(space, n, random_state=0)
            assert len(cands[(d, n)]) == n
            cand_time[f"d={d},n={n}"] = ms(med(ts))
            print(f"candidate_set d={d} |Λ|={n}: {ms(med(ts)):.1f} ms", flush=True)

    # ---- privtune ----
    privtune_loop(cands[(dims[0], sizes[0])], 5)  # warm-up (torch/gpytorch first calls)
    privtune_run(cands[(dims[0], sizes[0])], 5)
    rows = {}
    for d in dims:
        for n in sizes:
            for T in Ts:
                c = cands[(d, n)]
                loops = [privtune_loop(c, T) for _ in range(reps)]
                runs = [privtune_run(c, T) for _ in range(reps)]
                gam = med([time_gamma(c, T) for _ in range(max(1, reps // 2))])
                row = {
                    "d": d, "n_candidates": n, "T": T,
                    "privtune_loop_mean_ms": ms(med([np.mean(lp["per_w"]) for lp in loops])),
                    "privtune_loop_max_ms": ms(med([np.max(lp["per_w"]) for lp in loops])),
                    "privtune_loop_max_all_reps_ms": ms(max(np.max(lp["per_w"]) for lp in loops)),
                    "privtune_loop_mean_cpu_ms": ms(med([np.mean(lp["per_c"]) for lp in loops])),
                    "privtune_loop_max_cpu_ms": ms(med([np.max(lp["per_c"]) for lp in loops])),
                    "privtune_setup_ms": ms(med([lp["setup_w"] for lp in loops])),
                    "privtune_run_per_iter_ms": ms(med([r["wall"] for r in runs]) / T),
                    "privtune_run_per_iter_cpu_ms": ms(med([r["cpu"] for r in runs]) / T),
                    "privtune_run_total_ms": ms(med([r["wall"] for r in runs])),
                    "privtune_run_objective_total_ms": ms(med([r["objective_wall"] for r in runs])),
                    "gamma_T_ms": ms(gam),
                    "privtune_loop_mean_ms_all_reps": [ms(np.mean(lp["per_w"])) for lp in loops],
                    "privtune_run_per_iter_ms_all_reps": [ms(r["wall"] / T) for r in runs],
                }
                rows[(d, n, T)] = row
                print(f"privtune d={d} |Λ|={n:5d} T={T:3d}: loop {row['privtune_loop_mean_ms']:.3f} ms/it "
                      f"(max {row['privtune_loop_max_ms']:.3f}), run {row['privtune_run_per_iter_ms']:.3f} ms/it, "
                      f"γ_T {row['gamma_T_ms']:.1f} ms", flush=True)
    meta["loadavg_after_privtune"] = loadavg()

    # ---- peers: one run at T_peer per d; prefix means for smaller T ----
    peers = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        botorch_run(dims[0], 4)  # warm-up
        for d in dims:
            w = pc()
            peers[("botorch", d)] = [botorch_run(d, T_peer, seed=s) for s in range(PEER_REPS["botorch"])]
            print(f"BoTorch d={d} T={T_peer}: {pc() - w:.1f} s", flush=True)
        meta["loadavg_after_botorch"] = loadavg()
        if meta["optuna"] is not None:
            for kind in ("gp", "tpe"):
                optuna_run(kind, dims[0], 12)  # warm-up (past the startup trials)
                for d in dims:
                    w = pc()
                    peers[(kind, d)] = [optuna_run(kind, d, T_peer, seed=s) for s in range(PEER_REPS[kind])]
                    print(f"Optuna {kind} d={d} T={T_peer}: {pc() - w:.1f} s", flush=True)
    meta["loadavg_end"] = loadavg()

    peer_rows = {}
    for (tool, d), runs in peers.items():
        for T in Ts:
            pr = {
                "mean_ms": ms(med([np.mean(r["per_w"][:T]) for r in runs])),
                "max_ms": ms(med([np.max(r["per_w"][:T]) for r in runs])),
                "mean_cpu_ms": ms(med([np.mean(r["per_c"][:T]) for r in runs])),
                "reps": len(runs),
            }
            if tool == "botorch":
                pr["fit_share"] = float(med([np.sum(r["fit_w"][:T]) / np.sum(r["per_w"][:T]) for r in runs]))
            peer_rows[f"{tool},d={d},T={T}"] = pr
        r = runs[0]
        # model-based iterations only (after the random start-up of each tool)
        start = BOTORCH["n_init"] if tool == "botorch" else 10
        after = r["per_w"][start:]
        peer_rows[f"{tool},d={d},model_phase_last"] = {
            "mean_ms_iters_after_startup": ms(np.mean(after)) if after else None,
            "last_iter_ms": ms(r["per_w"][-1])}

    for key, row in rows.items():
        d, n, T = key
        for tool in ("botorch", "gp", "tpe"):
            pr = peer_rows.get(f"{tool},d={d},T={T}")
            row[f"{tool}_ms"] = None if pr is None else pr["mean_ms"]
            row[f"{tool}_cpu_ms"] = None if pr is None else pr["mean_cpu_ms"]
        for tool in ("botorch", "gp"):
            p = row[f"{tool}_ms"]
            row[f"ratio_{tool}_vs_run"] = None if p is None else p / row["privtune_run_per_iter_ms"]
            row[f"ratio_{tool}_vs_loop"] = None if p is None else p / row["privtune_loop_mean_ms"]
            pc_ = row[f"{tool}_cpu_ms"]
            row[f"ratio_{tool}_vs_run_cpu"] = None if pc_ is None else pc_ / row["privtune_run_per_iter_cpu_ms"]

    # ---- growth of privtune's cost ----
    growth = {"vs_n": {}, "vs_T": {}}
    for d in dims:
        for T in Ts:
            if len(sizes) > 1:
                ys_l = [rows[(d, n, T)]["privtune_loop_mean_ms"] for n in sizes]
                ys_r = [rows[(d, n, T)]["privtune_run_per_iter_ms"] for n in sizes]
                growth["vs_n"][f"d={d},T={T}"] = {
                    "loop_loglog_slope": loglog_slope(sizes, ys_l),
                    "run_loglog_slope": loglog_slope(sizes, ys_r),
                    "loop_ratio_largest_vs_smallest": ys_l[-1] / ys_l[0],
                    "run_ratio_largest_vs_smallest": ys_r[-1] / ys_r[0],
                    "size_ratio": sizes[-1] / sizes[0],
                }
        for n in sizes:
            if len(Ts) > 1:
                ys_l = [rows[(d, n, T)]["privtune_loop_mean_ms"] for T in Ts]
                ys_r = [rows[(d, n, T)]["privtune_run_per_iter_ms"] for T in Ts]
                growth["vs_T"][f"d={d},n={n}"] = {
                    "loop_loglog_slope": loglog_slope(Ts, ys_l),
                    "run_loglog_slope": loglog_slope(Ts, ys_r),
                    "loop_ratio_largest_vs_smallest": ys_l[-1] / ys_l[0],
                    "run_ratio_largest_vs_smallest": ys_r[-1] / ys_r[0],
                    "T_ratio": Ts[-1] / Ts[0],
                }
    # least squares: loop ms/iter ~ a + b |Λ| + c (T/2)|Λ|  (the n-th tell costs O(n |Λ|))
    A, y = [], []
    for (_d, n, T), row in rows.items():
        A.append([1.0, n / 1e3, (T / 2) * n / 1e5])
        y.append(row["privtune_loop_mean_ms"])
    if len(A) >= 3:
        coef, *_ = np.linalg.lstsq(np.array(A), np.array(y), rcond=None)
        pred = np.array(A) @ coef
        growth["loop_model"] = {
            "formula": "ms/iter = a + b*(|Λ|/1e3) + c*((T/2)*|Λ|/1e5)",
            "a_ms": float(coef[0]), "b_ms_per_1k_candidates": float(coef[1]),
            "c_ms_per_1e5_obs_x_candidates": float(coef[2]),
            "max_rel_error": float(np.max(np.abs(pred - y) / np.array(y))),
        }

    # ---- profile of the target configuration ----
    profile_txt = None
    tkey = (TARGET["d"], TARGET["n_candidates"], TARGET["T"])
    if tkey in rows:
        c = cands[(TARGET["d"], TARGET["n_candidates"])]
        prof = cProfile.Profile()
        _gp_method._GAMMA_CACHE.clear()
        prof.enable()
        GPUCB(epsilon=EPSILON, delta=DELTA, n_iter=TARGET["T"], score_bounds=(-1.0, 1.0),
              noise_std=NOISE_STD).run(TimedObjective(), c, random_state=0)
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(18)
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(r"privtune|gpytorch|scipy", 25)
        profile_txt = s.getvalue()

    # ---- targets ----
    targets = None
    if tkey in rows:
        r = rows[tkey]
        targets = {
            **TARGET,
            "breakdown_ms": {
                "run_total": r["privtune_run_total_ms"],
                "gamma_T_alone": r["gamma_T_ms"],
                "loop_T_x_mean": r["privtune_loop_mean_ms"] * TARGET["T"],
                "posterior_setup": r["privtune_setup_ms"],
                "rest (plan, accountant, releases, objective wrapper)": r["privtune_run_total_ms"] - r["gamma_T_ms"]
                - r["privtune_loop_mean_ms"] * TARGET["T"] - r["privtune_setup_ms"],
            },
            "privtune_run_per_iter_cpu_ms": r["privtune_run_per_iter_cpu_ms"],
            "met_ms_cpu": bool(r["privtune_run_per_iter_cpu_ms"] <= TARGET["max_ms_per_iter"]),
            "privtune_run_per_iter_ms": r["privtune_run_per_iter_ms"],
            "privtune_loop_mean_ms": r["privtune_loop_mean_ms"],
            "ratio_botorch": r["ratio_botorch_vs_run"],
            "ratio_gpsampler": r["ratio_gp_vs_run"],
            "met_ms": bool(r["privtune_run_per_iter_ms"] <= TARGET["max_ms_per_iter"]),
            "met_botorch": None if r["ratio_botorch_vs_run"] is None
            else bool(r["ratio_botorch_vs_run"] >= TARGET["min_ratio_botorch"]),
            "met_gpsampler": None if r["ratio_gp_vs_run"] is None
            else bool(r["ratio_gp_vs_run"] >= TARGET["min_ratio_gpsampler"]),
        }
    meta["total_runtime_s"] = pc() - t_start

    result = {
        "meta": meta,
        "candidate_set_ms": cand_time,
        "rows": [rows[k] for k in sorted(rows)],
        "peers": peer_rows,
        "peer_per_iteration_ms_first_rep": {f"{k[0]},d={k[1]}": [ms(x) for x in v[0]["per_w"]]
                                            for k, v in peers.items()},
        "growth": growth,
        "targets": targets,
        "profile_target_config": profile_txt,
    }
    md = render_md(result, rows, Ts, sizes, dims)
    print(md)
    if not args.quick:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "bo_overhead.json").write_text(json.dumps(result, indent=1, default=_jsonable))
        (OUT / "bo_overhead.md").write_text(md)
        print(f"wrote {OUT / 'bo_overhead.json'} and .md")


def render_md(result, rows, Ts, sizes, dims):
    m = result["meta"]
    L = []
    L.append("# BO engine overhead per iteration (privtune vs BoTorch vs Optuna)\n")
    L.append(f"Run {m['started']}, {m['platform']}, Python {m['python']}, torch {m['torch']} "
             f"({m['torch_threads']} thread), numpy {m['numpy']}, BoTorch {m['botorch']}, Optuna {m['optuna']} "
             f"(greenlet {m.get('greenlet')}); "
             f"{m['cpu_count']} CPUs. Total runtime {m['total_runtime_s']:.0f} s.\n")
    L.append(f"**Load average** (1/5/15 min): start {m['loadavg_start']}, after privtune "
             f"{m.get('loadavg_after_privtune')}, after BoTorch {m.get('loadavg_after_botorch')}, end "
             f"{m['loadavg_end']}. Other processes were/may have been loading the machine; wall-clock "
             "times are inflated accordingly (CPU-time ratios are given as a cross-check).\n")
    L.append("Overhead = everything but the objective (a sum of sines, excluded from the timed segments or "
             "subtracted). privtune: median of "
             f"{m['privtune_reps']} repetitions; *loop* = ask + tell (mean, and max of one iteration); *run* = "
             "whole `GPUCB.run` (γ_T, plan, loop, exponential mechanism, Laplace release) per iteration. "
             f"BoTorch (SingleTaskGP + fit_gpytorch_mll + UCB β=2 + optimize_acqf, num_restarts="
             f"{BOTORCH['num_restarts']}, raw_samples={BOTORCH['raw_samples']}, float64, 2 initial Sobol points) "
             "and Optuna (GPSampler / TPESampler defaults, 10 random start-up trials) optimise over the "
             "continuous cube, so they do not depend on |Λ|: **runs per d at T = "
             f"{max(Ts)} only** (repetitions: {m['peer_reps']}, median), their value at T is the mean over "
             "the first T iterations (repeated across the |Λ| rows). Ratios use privtune's *run* (γ_T and "
             "releases included).\n")
    L.append("## ms per iteration\n")
    L.append("| d | T | \\|Λ\\| | privtune loop mean | loop max | privtune run | BoTorch | GPSampler | TPE "
             "| BoTorch / privtune | GPSampler / privtune |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in dims:
        for T in Ts:
            for n in sizes:
                r = rows[(d, n, T)]
                rb, rg = r["ratio_botorch_vs_run"], r["ratio_gp_vs_run"]
                L.append(f"| {d} | {T} | {n} | {fmt(r['privtune_loop_mean_ms'])} | {fmt(r['privtune_loop_max_ms'])} "
                         f"| {fmt(r['privtune_run_per_iter_ms'])} | {fmt(r['botorch_ms'])} | {fmt(r['gp_ms'])} "
                         f"| {fmt(r['tpe_ms'])} | {fmt(rb, 1) + '×' if rb else '—'} "
                         f"| {fmt(rg, 1) + '×' if rg else '—'} |")
    L.append("")
    L.append("## privtune details\n")
    L.append("| d | T | \\|Λ\\| | setup (posterior) ms | γ_T alone ms | run total ms | loop CPU ms/it | run CPU ms/it "
             "| BoTorch/privtune (CPU) | GPSampler/privtune (CPU) |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for d in dims:
        for T in Ts:
            for n in sizes:
                r = rows[(d, n, T)]
                rb, rg = r["ratio_botorch_vs_run_cpu"], r["ratio_gp_vs_run_cpu"]
                L.append(f"| {d} | {T} | {n} | {fmt(r['privtune_setup_ms'])} | {fmt(r['gamma_T_ms'])} "
                         f"| {fmt(r['privtune_run_total_ms'])} | {fmt(r['privtune_loop_mean_cpu_ms'])} "
                         f"| {fmt(r['privtune_run_per_iter_cpu_ms'])} | {fmt(rb, 1) + '×' if rb else '—'} "
                         f"| {fmt(rg, 1) + '×' if rg else '—'} |")
    L.append("")
    L.append("One-off `candidate_set` construction (median of 3), ms: " +
             ", ".join(f"{k}: {fmt(v, 1)}" for k, v in result["candidate_set_ms"].items()) + "\n")
    L.append("## Peers: model phase only\n")
    for k, v in result["peers"].items():
        if k.endswith("model_phase_last"):
            L.append(f"- {k.replace(',model_phase_last', '')}: mean {fmt(v['mean_ms_iters_after_startup'])} ms/it "
                     f"after the random start-up, last iteration {fmt(v['last_iter_ms'])} ms")
    fs = {k: v["fit_share"] for k, v in result["peers"].items() if "fit_share" in v}
    if fs:
        L.append("- BoTorch share of time in fit_gpytorch_mll: " +
                 ", ".join(f"{k.replace('botorch,', '')}: {100 * v:.0f}%" for k, v in fs.items()))
    L.append("")
    g = result["growth"]
    L.append("## Growth of privtune's cost\n")
    if g["vs_n"]:
        L.append("Against |Λ| (log-log slope over the sizes; 1 = linear; ratio largest/smallest size, "
                 f"size ratio {sizes[-1] // sizes[0]}):\n")
        for k, v in g["vs_n"].items():
            L.append(f"- {k}: loop slope {v['loop_loglog_slope']:.2f} (×{v['loop_ratio_largest_vs_smallest']:.1f}), "
                     f"run slope {v['run_loglog_slope']:.2f} (×{v['run_ratio_largest_vs_smallest']:.1f})")
    if g["vs_T"]:
        L.append(f"\nAgainst T (per-iteration cost, T ratio {Ts[-1] // Ts[0]}):\n")
        for k, v in g["vs_T"].items():
            L.append(f"- {k}: loop slope {v['loop_loglog_slope']:.2f} (×{v['loop_ratio_largest_vs_smallest']:.1f}), "
                     f"run slope {v['run_loglog_slope']:.2f} (×{v['run_ratio_largest_vs_smallest']:.1f})")
    if "loop_model" in g:
        lm = g["loop_model"]
        L.append(f"\nLeast-squares fit of the loop: {lm['formula']} with a = {lm['a_ms']:.3f} ms, "
                 f"b = {lm['b_ms_per_1k_candidates']:.4f} ms, c = {lm['c_ms_per_1e5_obs_x_candidates']:.4f} ms "
                 f"(max relative error {100 * lm['max_rel_error']:.0f}%).\n")
    t = result["targets"]
    if t:

        def yn(x):
            return "n/a" if x is None else ("**met**" if x else "**NOT met**")
        L.append("GPSampler and TPE sample at random for their first 10 trials, so at T = 10 their cost is that "
                 "of random sampling and the GPSampler ratio at T = 10 is not an engine comparison.\n")
        L.append(f"## Targets (T = {t['T']}, |Λ| = {t['n_candidates']}, d = {t['d']}, γ_T and releases "
                 "included)\n")
        L.append(f"- ≤ {t['max_ms_per_iter']} ms/iteration: privtune run {t['privtune_run_per_iter_ms']:.3f} ms "
                 f"(loop alone {t['privtune_loop_mean_ms']:.3f} ms) — {yn(t['met_ms'])} in wall-clock time; "
                 f"in process CPU time {t['privtune_run_per_iter_cpu_ms']:.3f} ms — {yn(t['met_ms_cpu'])}")
        L.append("- breakdown of the run (ms, wall; components measured separately, so 'rest' absorbs noise): "
                 + ", ".join(f"{k} {v:.1f}" for k, v in t["breakdown_ms"].items()))
        if t["ratio_botorch"] is not None:
            L.append(f"- ≥ {t['min_ratio_botorch']:.0f}× less than BoTorch: {t['ratio_botorch']:.0f}× — "
                     f"{yn(t['met_botorch'])}")
        if t["ratio_gpsampler"] is not None:
            L.append(f"- ≥ {t['min_ratio_gpsampler']:.0f}× less than GPSampler: {t['ratio_gpsampler']:.0f}× — "
                     f"{yn(t['met_gpsampler'])}")
        L.append("")
    if result["profile_target_config"]:
        L.append("## cProfile of one GPUCB.run at the target configuration (by tottime, then cumulative)\n")
        L.append("```")
        L.append("\n".join(ln.rstrip() for ln in result["profile_target_config"].strip().splitlines()))
        L.append("```")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
