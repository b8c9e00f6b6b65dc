"""Reproduce Figure 1 of Kusner et al. (2015): the likelihood of k1(V, V') for SVM tuning.

The paper trains 100 RBF-kernel SVMs (hyperparameters C and gamma from a Sobol
sequence) on the Forest (covertype) data, draws 100 i.i.d. validation sets V_i
of size m and, for each, a neighbour V_i' with one input added or removed,
scores every SVM on every set (accuracy), and plots the joint log marginal
likelihood of the pairs ([F_V]_i, [F_V']_i) under the two-task GP
k1 ⊗ k2 for k1 in {0.05, ..., 0.95}, one curve per m. It finds k1 = 0.95, the
largest value tried, the most likely.

Covertype is not bundled with scikit-learn (its fetcher downloads it), so this
script uses two datasets that ship with scikit-learn:

* ``digits``: ``load_digits`` (1,797 real 8x8 images) as the binary task
  "digit < 5"; 600 training inputs, validation sets drawn from the other 1,197,
  so m in {100, 200, 400, 800}. Real data, but small.
* ``synthetic``: ``make_classification`` (22,000 inputs, 20 features, 5% label
  noise); 2,000 training inputs, validation sets drawn from the other 20,000,
  so the paper's validation sizes m in {1000, 2000, 5000, 15000} are reachable.

Each SVM is trained once, on a training split disjoint from every validation
set, and scored once on every pool input; a validation score is then a mean of
stored 0/1 correctness values, so the 100 sets per m cost nothing extra.

Everything here is PUBLIC data: :func:`privtune.gp.estimate_task_correlation`
must never be run on the sensitive validation set whose privacy it is meant to
protect.

Declared (public) choices: k2 = Matérn-5/2 with lengthscale 0.2 on the encoded
unit square (privtune's default InputKernel), observation noise variance
0.01 on the standardised scale (σ = 0.1, i.e. 0.05 accuracy, as in the spec's
§7 magnitudes), score bounds (0, 1). A sensitivity table over other noise
variances and lengthscales, and a finer grid up to 0.999, are written too.

Run from the repository root::

    .venv/bin/python examples/task_correlation_figure1.py [--out DIR] [--quick]

Outputs ``figure1_task_correlation.{png,json,md}`` in ``DIR`` (default: a new
temporary directory, printed at the end; the shipped figures in
``examples/results/`` were made with ``--out examples/results``). The full run
takes about 12 minutes on one core; ``--quick`` (16 SVMs, 10 pairs, digits only)
is a smoke run of under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import sklearn  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_digits, make_classification  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import privtune  # noqa: E402
from privtune.gp import (  # noqa: E402
    InputKernel,
    ScoreScale,
    estimate_task_correlation,  # noqa: E402
)
from privtune.space import Real, SearchSpace, candidate_set  # noqa: E402
from privtune.utils import check_random_state  # noqa: E402

torch.set_num_threads(1)

SEED = 0
N_MODELS = 100
N_PAIRS = 100
SPACE = SearchSpace({"C": Real(1e-2, 1e3, log=True), "gamma": Real(1e-4, 1e1, log=True)})
LENGTHSCALE = 0.2
KIND = "matern52"
NOISE_VAR = 1e-2
SCORE_BOUNDS = (0.0, 1.0)
PAPER_GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)
FINE_GRID = np.round(np.concatenate([PAPER_GRID, [0.96, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999]]), 4)
SENS_NOISE = (1e-4, 1e-3, 1e-2, 1e-1)
SENS_LENGTHSCALE = (0.1, 0.2, 0.4)
PAPER_FINDING = 0.95


def load_dataset(name: str) -> dict[str, Any]:
    """Features, labels, the training split and the validation pool of one dataset."""
    if name == "digits":
        data = load_digits()
        X = data.data / 16.0  # fixed, public pixel scale (no statistics of any split)
        y = (data.target < 5).astype(int)
        order = np.random.default_rng(SEED).permutation(len(y))
        n_train, sizes = 600, (100, 200, 400, 800)
        desc = "load_digits as 'digit < 5' (1,797 real images, 64 pixels scaled by 1/16)"
    elif name == "synthetic":
        X, y = make_classification(n_samples=22_000, n_features=20, n_informative=8, n_redundant=4,
                                   flip_y=0.05, class_sep=1.0, random_state=SEED)
        order = np.arange(len(y))  # make_classification already shuffles
        n_train, sizes = 2_000, (1_000, 2_000, 5_000, 15_000)
        desc = ("make_classification(n_samples=22000, n_features=20, n_informative=8, "
                "n_redundant=4, flip_y=0.05, random_state=0)")
    else:  # pragma: no cover - the two names are fixed below
        raise ValueError(name)
    train, pool = order[:n_train], order[n_train:]
    if name == "synthetic":  # standardise with training-split statistics only
        mu, sd = X[train].mean(axis=0), X[train].std(axis=0)
        X = (X - mu) / sd
    return {"name": name, "description": desc, "X": X, "y": y, "train": train, "pool": pool,
            "sizes": sizes}


def correctness_matrix(ds: dict[str, Any], params: list[dict[str, float]]) -> np.ndarray:
    """Train one SVM per setting on the training split; 0/1 correctness on every pool input."""
    Xtr, ytr = ds["X"][ds["train"]], ds["y"][ds["train"]]
    Xpool, ypool = ds["X"][ds["pool"]], ds["y"][ds["pool"]]
    correct = np.empty((len(params), len(ypool)), dtype=bool)
    for j, p in enumerate(params):
        model = SVC(C=p["C"], gamma=p["gamma"], kernel="rbf").fit(Xtr, ytr)
        correct[j] = model.predict(Xpool) == ypool
    return correct


def neighbouring_scores(correct: np.ndarray, m: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """F_V and F_V' (n_pairs, n_models): i.i.d. sets of size m and add/remove-one neighbours."""
    n_models, n_pool = correct.shape
    FV = np.empty((N_PAIRS, n_models))
    FVp = np.empty((N_PAIRS, n_models))
    n_added = 0
    for i in range(N_PAIRS):
        idx = rng.choice(n_pool, size=m, replace=False)
        hits = correct[:, idx].sum(axis=1)
        FV[i] = hits / m
        if rng.random() < 0.5:  # remove one input of V_i
            gone = idx[rng.integers(m)]
            FVp[i] = (hits - correct[:, gone]) / (m - 1)
        else:  # add one pool input not in V_i
            outside = np.setdiff1d(np.arange(n_pool), idx, assume_unique=True)
            new = outside[rng.integers(outside.size)]
            FVp[i] = (hits + correct[:, new]) / (m + 1)
            n_added += 1
    return FV, FVp, n_added


def run_dataset(name: str, X_enc: np.ndarray, params: list[dict[str, float]]) -> dict[str, Any]:
    t0 = time.perf_counter()
    ds = load_dataset(name)
    correct = correctness_matrix(ds, params)
    t_train = time.perf_counter() - t0
    rng = check_random_state(SEED + 1).numpy_generator()
    kernel = InputKernel(LENGTHSCALE, kind=KIND)
    out: dict[str, Any] = {
        "dataset": name, "description": ds["description"], "n_train": int(ds["train"].size),
        "n_pool": int(ds["pool"].size), "pool_accuracy_range": [
            float(correct.mean(axis=1).min()), float(correct.mean(axis=1).max())],
        "train_and_score_seconds": round(t_train, 2), "per_m": [],
    }
    for m in ds["sizes"]:
        FV, FVp, n_added = neighbouring_scores(correct, m, rng)
        curve = estimate_task_correlation(FV, FVp, X_enc, input_kernel=kernel, noise_var=NOISE_VAR,
                                          score_bounds=SCORE_BOUNDS, grid=PAPER_GRID)
        fine = estimate_task_correlation(FV, FVp, X_enc, input_kernel=kernel, noise_var=NOISE_VAR,
                                         score_bounds=SCORE_BOUNDS, grid=FINE_GRID)
        sens = {}
        for nv in SENS_NOISE:
            for ls in SENS_LENGTHSCALE:
                c = estimate_task_correlation(FV, FVp, X_enc, input_kernel=InputKernel(ls, kind=KIND),
                                              noise_var=nv, score_bounds=SCORE_BOUNDS, grid=PAPER_GRID)
                sens[f"noise_var={nv:g}, lengthscale={ls:g}"] = c.best
        same = estimate_task_correlation(FV, FV, X_enc, input_kernel=kernel, noise_var=NOISE_VAR,
                                         score_bounds=SCORE_BOUNDS, grid=PAPER_GRID)
        split = sum_difference_split(FV, FVp, X_enc, kernel)
        diff = np.abs(FV - FVp)
        entry = {
            "m": int(m), "n_pairs": N_PAIRS, "n_added": int(n_added), "n_removed": N_PAIRS - int(n_added),
            "grid": curve.grid.tolist(), "log_likelihood": curve.log_likelihood.tolist(),
            "best": curve.best, "at_grid_edge": curve.at_grid_edge,
            "log_likelihood_gap_best_vs_0.90": float(
                curve.log_likelihood[curve.best_index] - curve.log_likelihood[PAPER_GRID.tolist().index(0.9)]),
            "fine_grid_best": fine.best, "fine_grid": fine.grid.tolist(),
            "fine_log_likelihood": fine.log_likelihood.tolist(),
            "sensitivity_best": sens, **split,
            "identical_neighbours_log_likelihood": same.log_likelihood.tolist(),
            "max_abs_gap_to_identical_neighbours": float(
                np.max(np.abs(curve.log_likelihood - same.log_likelihood))),
            "mean_abs_score_change": float(diff.mean()), "max_abs_score_change": float(diff.max()),
            "mean_score": float(FV.mean()),
        }
        out["per_m"].append(entry)
        print(f"  {name:9s} m={m:6d}: best k1 = {curve.best:.2f} (paper: {PAPER_FINDING}); "
              f"finer grid to 0.999: {fine.best}; mean |F_V - F_V'| = {diff.mean():.2e}")
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def sum_difference_split(FV: np.ndarray, FVp: np.ndarray, X_enc: np.ndarray,
                         kernel: InputKernel) -> dict[str, Any]:
    """Maximisers of the two independent factors of the likelihood.

    With u = (z + z')/√2 and w = (z - z')/√2 (an orthogonal change of variables),
    B(k1) ⊗ K2 + σ²I splits into u ~ N(0, (1 + k1)K2 + σ²I) and
    w ~ N(0, (1 - k1)K2 + σ²I). The "difference" factor measures how alike the
    neighbours' scores are; the "sum" factor only measures how well the
    zero-mean, unit-variance prior fits the scores themselves.
    """
    scale = ScoreScale(*SCORE_BOUNDS)
    z, zp = scale.to_scaled(FV), scale.to_scaled(FVp)
    u, w = (z + zp) / np.sqrt(2.0), (z - zp) / np.sqrt(2.0)
    K = kernel(X_enc, X_enc)
    n = K.shape[0]

    def ll(Y: np.ndarray, a: float) -> float:
        L = np.linalg.cholesky(a * K + NOISE_VAR * np.eye(n))
        A = np.linalg.solve(L, Y.T)
        return float(-0.5 * np.sum(A * A) - Y.shape[0] * (np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2 * np.pi)))

    ll_sum = [ll(u, 1.0 + k) for k in PAPER_GRID]
    ll_diff = [ll(w, 1.0 - k) for k in PAPER_GRID]
    return {"sum_factor_best": float(PAPER_GRID[int(np.argmax(ll_sum))]),
            "difference_factor_best": float(PAPER_GRID[int(np.argmax(ll_diff))]),
            "sum_plus_difference_log_likelihood": (np.array(ll_sum) + np.array(ll_diff)).tolist()}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    fig, axes = plt.subplots(1, len(results), figsize=(6.2 * len(results), 4.8), constrained_layout=True)
    for ax, res in zip(np.atleast_1d(axes), results, strict=True):
        cmap = plt.get_cmap("viridis")
        for c, e in enumerate(res["per_m"]):
            g, ll = np.array(e["grid"]), np.array(e["log_likelihood"])
            colour = cmap(c / max(1, len(res["per_m"]) - 1) * 0.9)
            ax.plot(g, ll, "o-", ms=3.5, lw=1.5, color=colour, label=f"m = {e['m']:,}")
            ax.plot([e["best"]], [ll.max()], marker="*", ms=13, color=colour, mec="k", mew=0.6)
        last = res["per_m"][-1]
        ax.plot(last["grid"], last["identical_neighbours_log_likelihood"], ls=(0, (4, 3)), lw=1.2, color="k",
                label=f"F_V' := F_V (m = {last['m']:,})")
        ax.axvline(PAPER_FINDING, color="grey", ls="--", lw=1)
        ax.text(PAPER_FINDING - 0.01, 0.5, "paper's maximiser (0.95)", transform=ax.get_xaxis_transform(),
                ha="right", va="center", rotation=90, fontsize=8, color="grey")
        ax.set_xlabel(r"$k_1(\mathcal{V}, \mathcal{V}')$")
        ax.set_ylabel(f"joint log likelihood of the {N_PAIRS} pairs (nats)")
        ax.set_title(f"{res['dataset']}: {N_MODELS} RBF-SVMs, {N_PAIRS} pairs per m", fontsize=10)
        ax.set_xticks(np.round(np.arange(0.1, 0.951, 0.1), 1))
        ax.grid(alpha=0.3)
        ax.legend(title="validation size", fontsize=8, title_fontsize=8, loc="upper left")
    fig.suptitle("Kusner et al. (2015) Figure 1 reproduced: log likelihood of the task correlation "
                 f"(k2 {KIND}, ℓ = {LENGTHSCALE}, σ² = {NOISE_VAR:g}; stars: maximiser per m)", fontsize=10)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Figure 1 of Kusner et al. (2015), reproduced with privtune",
        "",
        "Generated by `examples/task_correlation_figure1.py`; numbers also in `figure1_task_correlation.json`,"
        " plot in `figure1_task_correlation.png`.",
        "",
        "Procedure (the paper's §6): 100 RBF-SVMs (sklearn `SVC`), hyperparameters C ∈ [1e-2, 1e3] and "
        "γ ∈ [1e-4, 1e1] on log scales from a scrambled Sobol set (`privtune.space.candidate_set`, seed 0), "
        "each trained once on a training split disjoint from all validation sets; for each validation size m, "
        "100 i.i.d. validation sets V_i (drawn without replacement from the held-out pool) and neighbours V_i' "
        "with one pool input added or removed (fair coin); accuracy as the score, score bounds (0, 1); joint log "
        "marginal likelihood of ([F_V]_i, [F_V']_i) under GP(0, k1 ⊗ k2) summed over the pairs, for k1 ∈ "
        "{0.05, …, 0.95}.",
        "",
        f"Declared (public) choices: k2 = {KIND}, lengthscale {LENGTHSCALE} (encoded unit square), noise variance "
        f"{NOISE_VAR:g} on the standardised scale (σ = {NOISE_VAR ** 0.5:g}, i.e. {0.5 * NOISE_VAR ** 0.5:g} "
        "accuracy), zero prior mean at accuracy 0.5, prior standard deviation 0.5 accuracy.",
        "",
        "Covertype (the paper's data) is not bundled with scikit-learn, so two bundled datasets are used: "
        "`load_digits` (real, but only 1,797 inputs, so m ≤ 800) and `make_classification` (synthetic, large "
        "enough for the paper's m up to 15,000).",
        "",
        f"**Paper's finding: k1 = {PAPER_FINDING} (the largest value tried) is the most likely, for every m.**",
        "",
        "| dataset | m | best k1 (paper's grid) | paper | best on grid to 0.999 | Δ log-lik best − 0.90 (nats) "
        "| best of difference factor | best of sum factor | mean \\|F_V − F_V'\\| "
        "| max \\|log-lik − log-lik with F_V' := F_V\\| (nats) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in report["datasets"]:
        for e in res["per_m"]:
            lines.append(
                f"| {res['dataset']} | {e['m']:,} | **{e['best']:.2f}** | {PAPER_FINDING} | {e['fine_grid_best']:g} | "
                f"{e['log_likelihood_gap_best_vs_0.90']:.1f} | {e['difference_factor_best']:.2f} | "
                f"{e['sum_factor_best']:.2f} | {e['mean_abs_score_change']:.2e} | "
                f"{e['max_abs_gap_to_identical_neighbours']:.2f} |")
    lines += [
        "",
        "## Robustness of the maximiser to the declared noise variance and lengthscale",
        "",
        "Maximiser over the paper's grid for each (noise variance σ², Matérn-5/2 lengthscale ℓ):",
        "",
    ]
    keys = list(report["datasets"][0]["per_m"][0]["sensitivity_best"])
    lines.append("| dataset | m | " + " | ".join(k.replace("noise_var=", "σ²=").replace(", lengthscale=", ", ℓ=")
                                               for k in keys) + " |")
    lines.append("|---|---|" + "---|" * len(keys))
    for res in report["datasets"]:
        for e in res["per_m"]:
            lines.append(f"| {res['dataset']} | {e['m']:,} | "
                         + " | ".join(f"{e['sensitivity_best'][k]:.2f}" for k in keys) + " |")
    lines += [
        "",
        "## Log likelihood per grid value (nats, summed over the 100 pairs)",
        "",
    ]
    for res in report["datasets"]:
        lines.append(f"### {res['dataset']}: {res['description']}")
        lines.append("")
        lines.append(f"Training inputs {res['n_train']:,}; validation pool {res['n_pool']:,}; pool accuracies of "
                     f"the 100 SVMs from {res['pool_accuracy_range'][0]:.3f} to {res['pool_accuracy_range'][1]:.3f}.")
        lines.append("")
        lines.append("| k1 | " + " | ".join(f"m = {e['m']:,}" for e in res["per_m"]) + " |")
        lines.append("|---|" + "---|" * len(res["per_m"]))
        for gi, k in enumerate(res["per_m"][0]["grid"]):
            lines.append(f"| {k:.2f} | " + " | ".join(f"{e['log_likelihood'][gi]:.1f}" for e in res["per_m"]) + " |")
        lines.append("")
    lines += [
        "## Reading",
        "",
        "- The likelihood rises monotonically to the top of the paper's grid for every m on both datasets, as in "
        "the paper: k1 = 0.95 is the most likely value tried, for every declared noise variance and lengthscale "
        "in the robustness table. On a finer grid it keeps rising to 0.999, the largest value tried there.",
        "- The curves hardly depend on m or on the data. Write u = (z + z')/√2 and w = (z − z')/√2 for the "
        "standardised scores; then u ~ N(0, (1 + k1)K2 + σ²I) and w ~ N(0, (1 − k1)K2 + σ²I) independently. "
        "One record moves an accuracy by at most about 1/m (here mean |F_V − F_V'| ≤ 2.6e-3, i.e. ≤ 5e-3 on "
        "the standardised scale), far below the declared noise σ, so w ≈ 0 and the \"difference\" factor is "
        "essentially −½·n_pairs·log det((1 − k1)K2 + σ²I), which grows towards k1 = 1 whatever the data. "
        "Replacing every V_i' by V_i itself (the dashed curve; last column of the table) changes the curve by "
        "only a few nats out of thousands. The \"sum\" factor alone prefers the smallest k1 (the scores vary "
        "less than the unit prior variance allows); the difference factor dominates.",
        "- So the procedure confirms that neighbouring validation sets give nearly identical score vectors, "
        "i.e. Assumption 1 is compatible with k1 ≥ 0.95, but at the paper's grid resolution it cannot "
        "discriminate between m, datasets or values above 0.95: the answer is fixed by the grid's upper end.",
        "- The estimate is conditional on the declared k2, σ² and score bounds; the robustness table shows "
        "whether the maximiser moves with them.",
        "- This is run on public data only. Never run `estimate_task_correlation` on the sensitive validation "
        "set: the estimate would leak it, and Kusner et al.'s guarantee assumes k1 is known a priori.",
        "",
        f"Runtime {report['seconds']:.0f} s ({report['machine']}).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    global N_MODELS, N_PAIRS  # --quick shrinks the study; everything else reads these
    ap = argparse.ArgumentParser(description="Reproduce Figure 1 of Kusner et al. (2015) on bundled data.")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default: a new temporary directory; the figures shipped with "
                         "privtune are in examples/results/ and are not overwritten unless you pass it here)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 16 SVMs, 10 pairs per m, the digits data set only (under a minute)")
    args = ap.parse_args(argv)
    results_dir = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="privtune-figure1-"))
    names = ("digits", "synthetic")
    if args.quick:
        N_MODELS, N_PAIRS, names = 16, 10, ("digits",)
    t0 = time.perf_counter()
    results_dir.mkdir(parents=True, exist_ok=True)
    lam = candidate_set(SPACE, N_MODELS, random_state=SEED)
    params, X_enc = lam.params, np.asarray(lam.X)
    print(f"{len(lam)} SVM settings from a scrambled Sobol set over {SPACE!r}")
    print(f"declared: InputKernel({LENGTHSCALE}, kind={KIND!r}), noise_var={NOISE_VAR:g}, "
          f"score_bounds={SCORE_BOUNDS}")
    datasets = [run_dataset(name, X_enc, params) for name in names]
    report = {
        "paper": "Kusner, Gardner, Garnett, Weinberger, Differentially Private Bayesian Optimization, ICML 2015, "
                 "§6 / Figure 1",
        "paper_finding_best_k1": PAPER_FINDING,
        "declared": {"input_kernel": KIND, "lengthscale": LENGTHSCALE, "noise_var": NOISE_VAR,
                     "score_bounds": list(SCORE_BOUNDS), "space": repr(SPACE), "n_models": N_MODELS,
                     "n_pairs": N_PAIRS, "seed": SEED, "neighbour": "add or remove one input (fair coin)"},
        "hyperparameters": params,
        "datasets": datasets,
        "versions": {"privtune": privtune.__version__, "numpy": np.__version__, "sklearn": sklearn.__version__,
                     "python": platform.python_version()},
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, OMP_NUM_THREADS=1",
    }
    report["quick"] = bool(args.quick)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    (results_dir / "figure1_task_correlation.json").write_text(json.dumps(report, indent=1))
    plot(datasets, results_dir / "figure1_task_correlation.png")
    (results_dir / "figure1_task_correlation.md").write_text(markdown(report))
    print(f"\npaper (covertype, m in 1000..15000): most likely k1 = {PAPER_FINDING} (largest value tried)")
    for res in datasets:
        bests = ", ".join(f"m={e['m']}: {e['best']:.2f}" for e in res["per_m"])
        print(f"ours ({res['dataset']}): {bests}")
    print(f"wrote {results_dir}/figure1_task_correlation.{{png,json,md}} in {report['seconds']:.0f} s")


if __name__ == "__main__":
    main()
