"""Each DP estimator at its defaults beside its peers, on nine data sets and five budgets (issue 11).

The DP-trainer table the issue asks for: ``DPLogisticRegression``, ``DPLinearSVC`` and ``DPSVC`` at their
defaults against non-private scikit-learn and the peer libraries, measured side by side in one run.

Protocol.

* Data: the nine binary tasks of ``benchmarks/trainers/dp_trainer_defaults.py`` (breast cancer, digits 0-4 vs 5-9,
  wine class 0 vs rest, moons, circles, and four ``make_classification`` sets of 2 000 to 50 000 rows; nothing
  downloaded), standardised (public preprocessing, for the benchmark), every row divided by
  ``max(1, ||x||_2)`` (the declared bound 1), a 70/30 stratified split (``random_state=0``).
* privtune: ``DPLogisticRegression`` / ``DPLinearSVC`` / ``DPSVC`` with every default but
  ``epsilon`` and ``classes=[0, 1]``: (epsilon, 1e-6)-DP under replace-one (Gaussian noise).
* diffprivlib 0.6.6 ``LogisticRegression(epsilon=eps, data_norm=1.0)``: objective perturbation, pure
  epsilon-DP under replace-one (stronger than privtune's (epsilon, 1e-6)). It runs in a side virtualenv,
  because it does not import beside scikit-learn >= 1.9 (see ``benchmarks/trainers/dp_trainer_peers.py``)::

      python3 -m venv /tmp/peer-venv
      /tmp/peer-venv/bin/pip install "diffprivlib==0.6.6" "scikit-learn==1.7.2"

  diffprivlib has no SVM, so the SVM rows have no diffprivlib column.
* Opacus 1.6.0 (optional in the main venv: ``.venv/bin/pip install opacus==1.6.0``, which keeps the
  installed torch): DP-SGD on a linear layer with the estimator's loss family (BCE with logits for
  logistic regression, the hinge ``max(0, 1 - z f)`` for both SVMs; ``DPSVC``'s row uses ``DPSVC``'s own
  public feature map (Taylor or random Fourier, as its default picks), so the comparison is like for like),
  ``make_private_with_epsilon`` with the PRV accountant at **target epsilon eps / 2** and delta 1e-6,
  per-example gradient norm clipped at 1, Poisson batches of expected size n / 10, 5 epochs, SGD with learning
  rate 1.0, no weight decay (not tuned: the settings of ``benchmarks/trainers/dp_trainer_peers.py``). Opacus' guarantee
  is under add/remove; (eps / 2, delta) add/remove gives replace-one (eps, (1 + e**(eps/2)) delta), so the
  eps / 2 run is the like-for-like one at privtune's replace-one epsilon (with a somewhat larger delta).
* Non-private references on the same rows: scikit-learn ``LogisticRegression`` / ``LinearSVC`` with the same
  C, and ``SVC(kernel="rbf")`` with the same C and gamma.
* epsilon in {0.1, 0.3, 1, 3, 10}; the median test accuracy over noise seeds 0..S-1 (``--seeds``, default 5).
  Monotone: the median is non-decreasing in epsilon within max(1 point, 2 test rows), per method.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_trainer_peer_table.py [--seeds 5] [--quick]``
(about 15 minutes on 2 cores; Opacus is most of it). Writes ``benchmarks/results/dp_trainer_peer_table.json``
and ``.md``. A missing peer is reported as skipped, never silently dropped.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import privtune  # noqa: E402
from benchmarks._common import RESULTS, datasets, output_dir, prepare  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

OUT = RESULTS
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-6
DEFAULT_PEER = "/tmp/peer-venv/bin/python"
ESTIMATORS = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}

# Runs in the side venv: python WORKER job.json -> one JSON document on stdout (accuracies only).
WORKER = r'''
import json, os, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
import sklearn, diffprivlib
from diffprivlib.models import LogisticRegression

job = json.load(open(sys.argv[1]))
load = lambda name: np.load(os.path.join(job["dir"], name + ".npy"))
out = {"diffprivlib": diffprivlib.__version__, "sklearn": sklearn.__version__, "accuracy": {}}
for i in range(job["n_datasets"]):
    Xtr, ytr, Xte, yte = (load(f"{i}{s}") for s in ("_Xtr", "_ytr", "_Xte", "_yte"))
    out["accuracy"][str(i)] = {repr(eps): [float(LogisticRegression(epsilon=eps, data_norm=1.0, random_state=s)
                                                 .fit(Xtr, ytr).score(Xte, yte)) for s in job["seeds"]]
                               for eps in job["epsilons"]}
print(json.dumps(out))
'''


def reference(name, Xtr, ytr, Xte, yte, est) -> float:
    if name == "DPLogisticRegression":
        return float(LogisticRegression(C=est.C, max_iter=5000).fit(Xtr, ytr).score(Xte, yte))
    if name == "DPLinearSVC":
        return float(LinearSVC(C=est.C, max_iter=20000).fit(Xtr, ytr).score(Xte, yte))
    return float(SVC(C=est.C, gamma=est.gamma).fit(Xtr, ytr).score(Xte, yte))


def svc_features(Xtr, ytr, Xte):
    """DPSVC's own public feature map at its defaults (Taylor or random Fourier; the same for every fit)."""
    probe = DPSVC(epsilon=1.0, classes=[0, 1], random_state=0).fit(Xtr, ytr)
    return probe._features(Xtr, fitting=False), probe._features(Xte, fitting=False)


def opacus_acc(Xtr, ytr, Xte, yte, eps, seed, loss="logistic", epochs=5, lr=1.0) -> tuple[float, float]:
    """Opacus DP-SGD on a linear layer at (eps / 2, DELTA) add/remove; returns (accuracy, noise multiplier).

    ``loss``: ``"logistic"`` (BCE with logits), ``"hinge"`` (labels 0/1 as -1/+1), or ``"softmax"`` (the
    cross-entropy of one output per class, any number of classes; ``benchmarks/trainers/dp_multiclass.py``). Also
    ``benchmarks/trainers/dp_trainer_peers.py``'s peer.
    """
    import torch
    from opacus import PrivacyEngine
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    n, d = Xtr.shape
    classes = np.unique(ytr)
    if loss == "softmax":
        target = torch.as_tensor(np.searchsorted(classes, ytr), dtype=torch.long)
    else:
        target = torch.as_tensor(ytr, dtype=torch.float32)
    ds = torch.utils.data.TensorDataset(torch.as_tensor(Xtr, dtype=torch.float32), target)
    loader = torch.utils.data.DataLoader(ds, batch_size=max(1, n // 10), shuffle=True)
    lin = torch.nn.Linear(d, classes.shape[0] if loss == "softmax" else 1)
    opt = torch.optim.SGD(lin.parameters(), lr=lr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="prv")
        model, opt, loader = engine.make_private_with_epsilon(
            module=lin, optimizer=opt, data_loader=loader, target_epsilon=eps / 2.0, target_delta=DELTA,
            epochs=epochs, max_grad_norm=1.0)
        for _ in range(epochs):
            for xb, yb in loader:
                if xb.shape[0] == 0:
                    continue
                opt.zero_grad()
                if loss == "softmax":
                    value = torch.nn.functional.cross_entropy(model(xb), yb)
                elif loss == "logistic":
                    value = torch.nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
                else:  # hinge on labels in {-1, +1}
                    value = torch.clamp(1.0 - (2.0 * yb - 1.0) * model(xb).squeeze(1), min=0.0).mean()
                value.backward()
                opt.step()
    with torch.no_grad():
        p = lin(torch.as_tensor(Xte, dtype=torch.float32)).numpy()
    pred = classes[np.argmax(p, axis=1)] if loss == "softmax" else (p[:, 0] > 0).astype(int)
    return float(np.mean(pred == yte)), float(opt.noise_multiplier)


def run_diffprivlib(peer, splits, seeds):
    if not Path(peer).exists():
        print(f"*** diffprivlib column SKIPPED: {peer} not found (see the module docstring).", flush=True)
        return None, f"skipped: {peer} not found"
    with tempfile.TemporaryDirectory(prefix="dp_trainer_peer_table_") as tmp:
        for i, (Xtr, Xte, ytr, yte) in enumerate(splits):
            for suffix, a in (("_Xtr", Xtr), ("_Xte", Xte), ("_ytr", ytr), ("_yte", yte)):
                np.save(Path(tmp) / f"{i}{suffix}.npy", a)
        (Path(tmp) / "worker.py").write_text(WORKER)
        (Path(tmp) / "job.json").write_text(json.dumps({"dir": tmp, "n_datasets": len(splits),
                                                        "epsilons": list(EPS), "seeds": list(seeds)}))
        proc = subprocess.run([peer, str(Path(tmp) / "worker.py"), str(Path(tmp) / "job.json")],
                              capture_output=True, text=True, env=dict(os.environ))
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [str(proc.returncode)]
        print(f"*** diffprivlib column SKIPPED: the worker failed: {tail[0]}", flush=True)
        return None, f"skipped: worker failed ({tail[0]})"
    return json.loads(proc.stdout.strip().splitlines()[-1]), "ok"


def monotone(accs, n_test) -> bool:
    slack = max(0.01, 2.0 / n_test)
    return all(b >= a - slack for a, b in zip(accs, accs[1:], strict=False))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="two data sets, two seeds; writes into a temporary directory")
    ap.add_argument("--peer-python", default=os.environ.get("PRIVTUNE_PEER_PYTHON", DEFAULT_PEER))
    args = ap.parse_args()
    OUT = output_dir(args.quick)  # --quick: a temporary directory, never benchmarks/results/
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    seeds = range(2 if args.quick else args.seeds)
    data = [(name, *prepare(X, y)) for name, X, y in datasets(args.quick)]
    try:
        import opacus
        import torch
        versions = {"opacus": opacus.__version__, "torch": torch.__version__}
    except ImportError as exc:
        versions = {"opacus": None, "torch": None}
        print(f"*** Opacus columns SKIPPED ({exc}); install with .venv/bin/pip install opacus==1.6.0", flush=True)
    dpl, dpl_status = run_diffprivlib(args.peer_python, [d[1:] for d in data], seeds)
    rows = []
    for i, (name, Xtr, Xte, ytr, yte) in enumerate(data):
        feats = svc_features(Xtr, ytr, Xte)
        for est_name, cls in ESTIMATORS.items():
            est = cls(classes=[0, 1])
            row = {"dataset": name, "n_train": int(len(ytr)), "d": int(Xtr.shape[1]), "estimator": est_name,
                   "n_test": int(len(yte)), "reference": reference(est_name, Xtr, ytr, Xte, yte, est),
                   "majority": float(max(np.mean(yte), 1 - np.mean(yte))), "methods": {}}
            t = time.perf_counter()
            row["methods"]["privtune"] = [float(np.median([cls(epsilon=e, classes=[0, 1], random_state=s)
                                                           .fit(Xtr, ytr).score(Xte, yte) for s in seeds]))
                                          for e in EPS]
            row["privtune_seconds_per_fit"] = (time.perf_counter() - t) / (len(EPS) * len(seeds))
            if dpl is not None and est_name == "DPLogisticRegression":
                row["methods"]["diffprivlib"] = [float(np.median(dpl["accuracy"][str(i)][repr(e)])) for e in EPS]
            if versions["opacus"] is not None:
                A, B = feats if est_name == "DPSVC" else (Xtr, Xte)
                loss = "logistic" if est_name == "DPLogisticRegression" else "hinge"
                t = time.perf_counter()
                row["methods"]["opacus"] = [float(np.median([opacus_acc(A, ytr, B, yte, e, s, loss)[0]
                                                             for s in seeds])) for e in EPS]
                row["opacus_seconds_per_fit"] = (time.perf_counter() - t) / (len(EPS) * len(seeds))
            row["monotone"] = {k: monotone(v, len(yte)) for k, v in row["methods"].items()}
            rows.append(row)
            print(f"{name[:24]:24s} {est_name:22s} ref {row['reference']:.3f} | "
                  + " | ".join(f"{k} " + " ".join(f"{a:.3f}" for a in v) for k, v in row["methods"].items()),
                  flush=True)
    meta = {"run": time.strftime("%Y-%m-%d %H:%M"), "platform": platform.platform(), "privtune": privtune.__version__,
            "sklearn": sklearn.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "seeds": len(seeds), "seconds": round(time.perf_counter() - t0, 1), **versions,
            "diffprivlib": None if dpl is None else dpl["diffprivlib"],
            "diffprivlib_sklearn": None if dpl is None else dpl["sklearn"], "diffprivlib_status": dpl_status}
    suffix = "_quick" if args.quick else ""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"dp_trainer_peer_table{suffix}.json").write_text(json.dumps({"meta": meta, "epsilons": EPS,
                                                                         "rows": rows}, indent=1))
    (OUT / f"dp_trainer_peer_table{suffix}.md").write_text(render(meta, rows))
    print(f"wrote {OUT / f'dp_trainer_peer_table{suffix}.md'} in {meta['seconds']} s")


LABELS = {"privtune": "privtune (default)", "diffprivlib": "diffprivlib (pure ε)", "opacus": "Opacus DP-SGD at ε/2"}


def render(meta, rows) -> str:
    L = ["# DP estimators at their defaults beside diffprivlib and Opacus (issue 11)\n",
         f"Run {meta['run']}, {meta['platform']}, {meta['seconds']} s; python {meta['python']}, privtune "
         f"{meta['privtune']}, scikit-learn {meta['sklearn']}, numpy {meta['numpy']}, torch {meta['torch'] or '-'}, "
         f"opacus {meta['opacus'] or 'not installed'}; diffprivlib {meta['diffprivlib'] or '-'} (scikit-learn "
         f"{meta['diffprivlib_sklearn'] or '-'}, side venv; {meta['diffprivlib_status']}). "
         "`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trainers/dp_trainer_peer_table.py`.\n",
         f"Median test accuracy over {meta['seeds']} noise seeds; rows standardised and scaled to unit L2 norm; 70/30 "
         "stratified split. privtune: each estimator at its defaults, (ε, 1e-6)-DP replace-one. diffprivlib: "
         "`LogisticRegression(epsilon, data_norm=1)`, pure ε-DP replace-one (it has no SVM). Opacus: DP-SGD on a "
         "linear layer with the same loss family (BCE; hinge for the SVMs, on DPSVC's own feature map for the "
         "DPSVC rows), at target ε/2 add/remove, i.e. replace-one (ε, (1 + e^(ε/2)) 1e-6); clip 1, Poisson batches "
         "of n/10, 5 epochs, SGD lr 1, not tuned. Reference: non-private scikit-learn (LogisticRegression / "
         "LinearSVC / SVC rbf, same C and γ). Monotone: non-decreasing in ε within max(1 point, 2 test rows).\n",
         "| dataset | n train | estimator | method | " + " | ".join(f"ε = {e:g}" for e in EPS)
         + " | gap to reference at ε = 1 | monotone |",
         "|---|---|---|---|" + "---|" * (len(EPS) + 2)]
    for r in rows:
        L.append(f"| {r['dataset']} | {r['n_train']} | {r['estimator']} | non-private reference | "
                 + " | ".join(f"{r['reference']:.3f}" for _ in EPS) + " | | |")
        for k, accs in r["methods"].items():
            L.append(f"| {r['dataset']} | {r['n_train']} | {r['estimator']} | {LABELS[k]} | "
                     + " | ".join(f"{a:.3f}" for a in accs)
                     + f" | {100 * (r['reference'] - accs[2]):.1f} | {'yes' if r['monotone'][k] else 'NO'} |")
    L += ["", "## Summary", ""]
    for est in ESTIMATORS:
        sel = [r for r in rows if r["estimator"] == est]
        for k in LABELS:
            have = [r for r in sel if k in r["methods"]]
            if not have:
                continue
            wins = {e: sum(r["methods"]["privtune"][j] >= r["methods"][k][j] for r in have)
                    for j, e in enumerate(EPS)} if k != "privtune" else None
            mono = sum(r["monotone"][k] for r in have)
            gap = np.mean([100 * (r["reference"] - r["methods"][k][2]) for r in have])
            L.append(f"- {est}, {LABELS[k]}: mean gap to the reference at ε = 1 {gap:.1f} points over {len(have)} "
                     f"data sets; monotone on {mono} of {len(have)}"
                     + ("" if wins is None else "; privtune at least as accurate on "
                        + ", ".join(f"{w}/{len(have)} at ε = {e:g}" for e, w in wins.items())) + ".")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
