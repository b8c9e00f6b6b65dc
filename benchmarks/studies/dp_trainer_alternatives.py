"""Privacy-neutral alternatives to the DP trainers' defaults that were measured and not adopted (issue 11).

Each alternative changes only what the trainers do *with* their noisy
gradients, or the public feature map, so none changes a fit's privacy cost:

A. **Curvature-matched steps (an oracle).** The default step is ``1 / L`` with
   ``L`` the smoothness bound from the declared row norm (``phi'' R_2**2``). On
   rows of unit norm the curvature along the data is smaller, so larger steps
   would converge in fewer noisy steps. The oracle multiplies the step by
   ``L / L_data``, with ``L_data = phi'' lambda_max(U^T U / n) + 1/(C n)`` read off the
   training rows ``U`` (intercept column included): an upper bound on what a
   private estimate of ``lambda_max`` (one scalar) could buy; no user can run it. Measured
   at the default horizon and at half of it. The step multiplier is applied by
   wrapping ``privtune.optim._accelerated_plan.step_schedule`` (``step_scale``
   is capped at 1 in the public API).
B. **Output averaging.** Every iterate is released in ``optimize_result_``; the
   output is post-processing. Last iterate, the mean of the last half (the
   default), of the last third, of all iterates, and weights ``t`` or ``t**2``,
   at the default horizon ``T`` and at ``1.5 T`` and ``2 T`` (``horizon="max_iter"``).
C. **Nyström features on public landmarks** for the RBF kernel, in place of
   ``DPSVC``'s random Fourier features: ``D`` landmarks drawn uniformly on the
   unit sphere (public, data-independent), ``psi(x) = K_zz^{-1/2} k_z(x)``
   scaled to unit norm row by row, then ``DPLinearSVC`` at its defaults, against
   ``DPSVC`` at its defaults (the Taylor map where it picks it). Their
   non-private accuracy (``LinearSVC`` on the same features) is compared with
   that of ``DPSVC``'s own map as fitted at epsilon = 1.
D. **Private feature selection** before ``DPLogisticRegression``: a share
   ``f`` of the fit's Gaussian precision goes to the vector of label-signed
   column means ``sum_i z_i x_i / n`` (L2 sensitivity ``2 R / n`` under
   replace-one), the ``k`` columns with the largest noisy magnitude are kept
   (rows rescaled to unit norm) and the rest of the precision trains on them
   (Gaussian mechanisms compose exactly: ``1 / nm**2`` adds, so the total cost
   is the default fit's). ``k`` in ``{d/4, d/2}``, ``f`` in ``{0.1, 0.25}``;
   sets with 10 or more features.

Data, splits and references as in ``dp_trainer_defaults.py`` (rows standardised
and scaled to unit L2 norm, 70/30 stratified split, delta = 1e-6), per-fit
epsilon in {0.3, 1, 3}, 7 noise seeds (median test accuracy).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/dp_trainer_alternatives.py [--seeds 7]``
(about 3 minutes on 2 cores). Writes ``benchmarks/results/dp_trainer_alternatives.json`` and ``.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.linalg import eigh  # noqa: E402
from scipy.optimize import brentq  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
import privtune.optim.accelerated._plan as plan_module  # noqa: E402
from benchmarks._common import QUICK_HELP, RESULTS, datasets, output_dir, prepare, quick_tasks  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.optim._losses import _FLOAT32_SHRINK  # noqa: E402
from privtune.optim.accelerated import gaussian_run_multiplier  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402
from privtune.svm._rbf import _auto_components  # noqa: E402

OUT = RESULTS
EPS = (0.3, 1.0, 3.0)
LINEAR = {"DPLogisticRegression": (DPLogisticRegression, 0.25), "DPLinearSVC": (DPLinearSVC, 1.0)}
OUTPUTS = ("last", "tail 1/2 (default)", "tail 1/3", "all", "weights t", "weights t^2")
HORIZON_FACTORS = (1.0, 1.5, 2.0)


@contextlib.contextmanager
def step_multiplier(m: float):
    """Multiply every step of the accelerated solvers by ``m`` (benchmark only; see the module docstring)."""
    original = plan_module.step_schedule

    def scaled(solver, horizon, step_scale, smoothness, mu, p=1):
        return original(solver, horizon, step_scale * m, smoothness, mu, p)

    plan_module.step_schedule = scaled
    try:
        yield
    finally:
        plan_module.step_schedule = original


def prepared(quick: bool = False):
    for name, X, y in quick_tasks(datasets(False), quick):
        yield name, *prepare(X, y)


def fits(make, Xtr, ytr, seeds):
    return [make(s).fit(Xtr, ytr) for s in range(seeds)]


def median_score(models, Xte, yte) -> float:
    return float(np.median([m.score(Xte, yte) for m in models]))


def default_horizon(cls, eps, Xtr, ytr) -> int:
    """The default's horizon (``n_iter_`` is public: it depends on n, d and epsilon only)."""
    return int(cls(epsilon=eps, classes=[0, 1], random_state=0).fit(Xtr, ytr).n_iter_)


# -- A. curvature-matched steps ------------------------------------------------------------------------
def part_a(seeds: int, quick: bool = False) -> list[dict]:
    rows = []
    for name, Xtr, Xte, ytr, yte in prepared(quick):
        n = len(ytr)
        U = np.hstack([Xtr, np.full((n, 1), 0.5)])  # the default intercept_scaling
        lam = float(np.linalg.eigvalsh(U.T @ U / n)[-1])
        for label, (cls, curv) in LINEAR.items():
            mu = 1.0 / n  # C = 1
            oracle = (curv * 1.25 + mu) / (curv * lam + mu)  # declared L2 bound of the augmented rows: sqrt(1.25)
            cells: dict[str, list[float]] = {}
            for eps in EPS:
                T = default_horizon(cls, eps, Xtr, ytr)
                for key, m, t in (("default", 1.0, None), ("oracle step", oracle, None),
                                  ("oracle step, T/2", oracle, max(1, round(T / 2))),
                                  ("oracle/2 step, T/2", oracle / 2, max(1, round(T / 2)))):
                    kw = {} if t is None else {"horizon": "max_iter", "max_iter": t}
                    with step_multiplier(m):
                        models = fits(lambda s, k=kw, e=eps, c=cls: c(epsilon=e, classes=[0, 1], random_state=s, **k),
                                      Xtr, ytr, seeds)
                    cells.setdefault(key, []).append(median_score(models, Xte, yte))
            row = {"dataset": name, "n_train": n, "estimator": label, "lambda_max": lam, "multiplier": oracle,
                   "accuracy": cells}
            rows.append(row)
            print(f"A {name[:24]:24s} {label[:12]:12s} x{oracle:.1f} "
                  + " | ".join(f"{k}: " + " ".join(f"{a:.3f}" for a in v) for k, v in cells.items()), flush=True)
    return rows


# -- B. output averaging -------------------------------------------------------------------------------
def averaged(iterates: np.ndarray) -> dict[str, np.ndarray]:
    T = len(iterates)

    def tail(share: float) -> np.ndarray:
        return iterates[T - max(1, int(np.ceil(T * share))):].mean(axis=0)

    t = np.arange(1, T + 1, dtype=float)
    return {"last": iterates[-1], "tail 1/2 (default)": tail(0.5), "tail 1/3": tail(1 / 3),
            "all": iterates.mean(axis=0), "weights t": t @ iterates / t.sum(),
            "weights t^2": (t * t) @ iterates / (t * t).sum()}


def accuracy_of(model, w: np.ndarray, Xte, yte) -> float:
    """Test accuracy of the linear model ``w`` (solver coordinates) with the fitted model's output scaling."""
    coef_scale = _FLOAT32_SHRINK  # fit stores coef_ = w[:-1] * shrink and intercept_ = w[-1] * (0.5 * shrink)
    intercept_scale = float(np.float32(0.5 * _FLOAT32_SHRINK))
    pred = Xte @ (w[:-1] * coef_scale) + w[-1] * intercept_scale > 0
    return float(np.mean(pred == (yte == model.classes_[1])))


def part_b(seeds: int, quick: bool = False) -> list[dict]:
    rows = []
    for name, Xtr, Xte, ytr, yte in prepared(quick):
        for label, (cls, _) in LINEAR.items():
            cells: dict[str, list[float]] = {}
            for factor in HORIZON_FACTORS:
                for eps in EPS:
                    T = max(1, round(default_horizon(cls, eps, Xtr, ytr) * factor))
                    models = fits(lambda s, e=eps, t=T, c=cls: c(epsilon=e, classes=[0, 1], random_state=s,
                                                           horizon="max_iter", max_iter=t), Xtr, ytr, seeds)
                    per_output: dict[str, list[float]] = {}
                    for mdl in models:
                        its = np.asarray(mdl.optimize_result_.iterates)[-mdl.n_iter_:]
                        for key, w in averaged(its).items():
                            per_output.setdefault(key, []).append(accuracy_of(mdl, w, Xte, yte))
                        if abs(per_output["tail 1/2 (default)"][-1] - mdl.score(Xte, yte)) > 1e-9:
                            raise AssertionError("the recomputed default output disagrees with the fitted model")
                    for key, accs in per_output.items():
                        cells.setdefault(f"{factor:g} T, {key}", []).append(float(np.median(accs)))
            rows.append({"dataset": name, "n_train": len(ytr), "estimator": label, "accuracy": cells})
            print(f"B {name[:24]:24s} {label[:12]:12s} default "
                  + " ".join(f"{a:.3f}" for a in cells["1 T, tail 1/2 (default)"]), flush=True)
    return rows


# -- C. Nyström features on landmarks uniform on the sphere ------------------------------------------------
def nystroem_sphere(D: int, d: int, gamma: float, seed: int = 0):
    """The public map ``x -> K_zz^{-1/2} k_z(x)`` (then unit norm) on ``D`` landmarks uniform on the sphere."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(D, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    K = np.exp(-gamma * np.maximum(0.0, 2.0 - 2.0 * Z @ Z.T))
    vals, vecs = eigh(K)
    keep = vals > 1e-8 * vals[-1]
    M = vecs[:, keep] / np.sqrt(vals[keep])

    def transform(X: np.ndarray) -> np.ndarray:
        sq = np.sum(X * X, axis=1)[:, None] + 1.0 - 2.0 * X @ Z.T
        F = np.exp(-gamma * np.maximum(0.0, sq)) @ M
        return F / np.maximum(np.linalg.norm(F, axis=1, keepdims=True), 1e-12)

    return transform


def part_c(seeds: int, quick: bool = False) -> list[dict]:
    rows = []
    for name, Xtr, Xte, ytr, yte in prepared(quick):
        n, d = Xtr.shape
        D = _auto_components(n)
        phi = nystroem_sphere(D, d, 1.0)
        Ftr, Fte = phi(Xtr), phi(Xte)
        # DPSVC's own map as its default fits it at ε = 1 (public: n, d and the parameters), without privacy
        own = DPSVC(epsilon=1.0, classes=[0, 1], random_state=0).fit(Xtr, ytr)
        Gtr, Gte = own._features(Xtr, fitting=False), own._features(Xte, fitting=False)
        refs = {"SVC": SVC(C=1.0, gamma=1.0).fit(Xtr, ytr).score(Xte, yte),
                "DPSVC map, non-private": LinearSVC(C=1.0, max_iter=20000).fit(Gtr, ytr).score(Gte, yte),
                "Nyström sphere, non-private": LinearSVC(C=1.0, max_iter=20000).fit(Ftr, ytr).score(Fte, yte)}
        dpsvc_map = f"{own.features_} {own.n_components_}" + (
            f" + {d} linear" if own.features_ == "fourier" and own.linear_share_ else "")
        cells: dict[str, list[float]] = {"DPSVC (default)": [], "Nyström sphere + DPLinearSVC": []}
        for eps in EPS:
            cells["DPSVC (default)"].append(median_score(
                fits(lambda s, e=eps: DPSVC(epsilon=e, classes=[0, 1], random_state=s), Xtr, ytr, seeds), Xte, yte))
            cells["Nyström sphere + DPLinearSVC"].append(median_score(
                fits(lambda s, e=eps: DPLinearSVC(epsilon=e, classes=[0, 1], random_state=s), Ftr, ytr, seeds),
                Fte, yte))
        rows.append({"dataset": name, "n_train": n, "d": d, "components": D, "dpsvc_map": dpsvc_map,
                     "references": refs, "accuracy": cells})
        print(f"C {name[:24]:24s} D={D} " + " ".join(f"{k}={v:.3f}" for k, v in refs.items()) + " | "
              + " | ".join(f"{k}: " + " ".join(f"{a:.3f}" for a in v) for k, v in cells.items()), flush=True)
    return rows


# -- D. private feature selection -------------------------------------------------------------------------
SELECTION = ((0.1, 4), (0.1, 2), (0.25, 4), (0.25, 2))  # (precision share f, d // k)


def epsilon_of_multiplier(nm: float, delta: float = 1e-6) -> float:
    """The per-fit epsilon whose Gaussian run has noise multiplier ``nm`` (inverse of gaussian_run_multiplier)."""
    return float(brentq(lambda e: gaussian_run_multiplier(e, delta) - nm, 1e-4, 1e4, xtol=1e-10))


def unit_rows(A: np.ndarray) -> np.ndarray:
    return A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-12)


def part_d(seeds: int, quick: bool = False) -> list[dict]:
    rows = []
    for name, Xtr, Xte, ytr, yte in prepared(quick):
        n, d = Xtr.shape
        if d < 10:
            continue
        signed_means = (2 * ytr - 1) @ Xtr / n
        cells: dict[str, list[float]] = {"default": []}
        for eps in EPS:
            cells["default"].append(median_score(
                fits(lambda s, e=eps: DPLogisticRegression(epsilon=e, classes=[0, 1], random_state=s),
                     Xtr, ytr, seeds), Xte, yte))
            nm = gaussian_run_multiplier(eps, 1e-6)
            for share, div in SELECTION:
                k = max(4, d // div)
                nm_select, eps_fit = nm / np.sqrt(share), epsilon_of_multiplier(nm / np.sqrt(1.0 - share))
                accs = []
                for s in range(seeds):
                    noisy = signed_means + np.random.default_rng(10_000 + s).normal(0.0, 2.0 * nm_select / n, d)
                    keep = np.argsort(-np.abs(noisy))[:k]
                    model = DPLogisticRegression(epsilon=eps_fit, classes=[0, 1], random_state=s)
                    model.fit(unit_rows(Xtr[:, keep]), ytr)
                    accs.append(model.score(unit_rows(Xte[:, keep]), yte))
                cells.setdefault(f"f = {share:g}, k = d/{div}", []).append(float(np.median(accs)))
        rows.append({"dataset": name, "n_train": n, "d": d, "accuracy": cells})
        print(f"D {name[:24]:24s} " + " | ".join(f"{k}: " + " ".join(f"{a:.3f}" for a in v)
                                                 for k, v in cells.items()), flush=True)
    return rows


# -- report --------------------------------------------------------------------------------------------
def mean_difference(rows: list[dict], key: str, base: str) -> tuple[float, int, int, float]:
    diffs = [100 * (a - b) for r in rows for a, b in zip(r["accuracy"][key], r["accuracy"][base], strict=True)]
    return float(np.mean(diffs)), sum(x > 1 for x in diffs), sum(x < -1 for x in diffs), float(min(diffs))


def render(meta: dict, a: list[dict], b: list[dict], c: list[dict], dd: list[dict]) -> str:
    eps_head = " | ".join(f"ε = {e:g}" for e in EPS)
    L = ["# Privacy-neutral alternatives to the DP trainers' defaults (issue 11)\n",
         f"Run {meta['run']}, {meta['platform']}, privtune {meta['privtune']}, {meta['seconds']:.0f} s; "
         f"{meta['seeds']} noise seeds per cell (median test accuracy), per-fit ε ∈ {{0.3, 1, 3}}, δ = 1e-6, data "
         "as in `dp_trainer_defaults.py`. `OMP_NUM_THREADS=1 .venv/bin/python "
         "benchmarks/studies/dp_trainer_alternatives.py`. "
         "None of these changes a fit's privacy cost; none was adopted (summary lines below each part).\n",
         "## A. Curvature-matched steps (oracle: step × L / L_data, L_data from the training rows)\n",
         f"| dataset | n train | estimator | λ_max | step × | setting | {eps_head} |",
         "|---|---|---|---|---|---|" + "---|" * len(EPS)]
    for r in a:
        for key, accs in r["accuracy"].items():
            L.append(f"| {r['dataset']} | {r['n_train']} | {r['estimator']} | {r['lambda_max']:.3f} "
                     f"| {r['multiplier']:.1f} | {key} | " + " | ".join(f"{x:.3f}" for x in accs) + " |")
    L += ["", "| setting | cells | better by > 1 point | worse by > 1 point | mean difference (points) | worst |",
          "|---|---|---|---|---|---|"]
    for key in ("oracle step", "oracle step, T/2", "oracle/2 step, T/2"):
        m, up, down, worst = mean_difference(a, key, "default")
        L.append(f"| {key} | {len(a) * len(EPS)} | {up} | {down} | {m:+.2f} | {worst:+.1f} |")
    L += ["", "## B. Output averaging and longer horizons (horizon = factor × the default's T)\n",
          "Mean test accuracy over the (task, estimator, ε) cells, and the difference to the default "
          "(1 T, mean of the last half):\n", "| horizon | output | mean accuracy | mean difference (points) "
          "| better by > 1 point | worse by > 1 point | worst |", "|---|---|---|---|---|---|---|"]
    base = "1 T, tail 1/2 (default)"
    for factor in HORIZON_FACTORS:
        for out in OUTPUTS:
            key = f"{factor:g} T, {out}"
            mean_acc = float(np.mean([x for r in b for x in r["accuracy"][key]]))
            m, up, down, worst = mean_difference(b, key, base)
            L.append(f"| {factor:g} T | {out} | {mean_acc:.4f} | {m:+.2f} | {up} | {down} | {worst:+.1f} |")
    L += ["", "## C. Nyström features on public landmarks (uniform on the sphere) against DPSVC's default map\n",
          "D: the landmark count (the random-feature count DPSVC would use). DPSVC's map: the one its default fits "
          "at ε = 1 (Taylor columns, or random Fourier features plus the linear share), scored without privacy by "
          "a LinearSVC.\n",
          f"| dataset | n train | d | D | SVC | DPSVC's map | its accuracy, non-private | Nyström, non-private "
          f"| method | {eps_head} |", "|---|---|---|---|---|---|---|---|---|" + "---|" * len(EPS)]
    for r in c:
        ref = r["references"]
        for key, accs in r["accuracy"].items():
            L.append(f"| {r['dataset']} | {r['n_train']} | {r['d']} | {r['components']} | {ref['SVC']:.3f} "
                     f"| {r['dpsvc_map']} | {ref['DPSVC map, non-private']:.3f} "
                     f"| {ref['Nyström sphere, non-private']:.3f} "
                     f"| {key} | " + " | ".join(f"{x:.3f}" for x in accs) + " |")
    m, up, down, worst = mean_difference(c, "Nyström sphere + DPLinearSVC", "DPSVC (default)")
    L += ["", f"Nyström against DPSVC over {len(c) * len(EPS)} cells: mean {m:+.2f} points, better by > 1 point in "
          f"{up}, worse by > 1 point in {down}, worst {worst:+.1f}."]
    L += ["", "## D. Private feature selection (share f of the precision, k columns kept), then DPLogisticRegression"
          "\n",
          f"| dataset | n train | d | setting | {eps_head} |", "|---|---|---|---|" + "---|" * len(EPS)]
    for r in dd:
        for key, accs in r["accuracy"].items():
            L.append(f"| {r['dataset']} | {r['n_train']} | {r['d']} | {key} | "
                     + " | ".join(f"{x:.3f}" for x in accs) + " |")
    L += ["", "| setting | cells | better by > 1 point | worse by > 1 point | mean difference (points) | worst |",
          "|---|---|---|---|---|---|"]
    for share, div in SELECTION:
        m, up, down, worst = mean_difference(dd, f"f = {share:g}, k = d/{div}", "default")
        L.append(f"| f = {share:g}, k = d/{div} | {len(dd) * len(EPS)} | {up} | {down} | {m:+.2f} | {worst:+.1f} |")
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP + " (breast cancer cut to 600 rows, one seed)")
    args = ap.parse_args()
    if args.quick:
        args.seeds = 1
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    a, b, c, dd = (part(args.seeds, args.quick) for part in (part_a, part_b, part_c, part_d))
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "seconds": round(time.perf_counter() - t0, 1), "seeds": args.seeds}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "dp_trainer_alternatives.json").write_text(
        json.dumps({"meta": meta, "epsilons": EPS, "A": a, "B": b, "C": c, "D": dd}, indent=1))
    (OUT / "dp_trainer_alternatives.md").write_text(render(meta, a, b, c, dd))
    print(f"wrote {OUT / 'dp_trainer_alternatives.md'} in {meta['seconds']} s")


if __name__ == "__main__":
    main()
