"""The privacy-utility study (issue 11): every release method against baselines, at equal budgets.

Part A -- validation rows sensitive, training rows public. Tasks (nothing downloaded): an RBF ``SVC``
(C, gamma on log scales; inputs standardised inside the model) on breast cancer, digits (10 classes),
wine and synthetic sets with m = 200, 2 000 and 20 000 validation rows; a
``HistGradientBoostingClassifier`` (learning rate, leaf count, L2 regularisation) on a synthetic set
with m = 1 500. One fixed candidate set of 64 Sobol points per
task (given as ``candidate_grid`` with ``n_candidates=0``, so that Λ is exactly these 64; runs before 2026-11-27 12:36
added one seed-dependent Sobol point) so that the seeds vary the privacy noise only; fits and predictions
are memoised (they are the same in every cell). Methods: ``auto`` (the default; it resolves to
``prescreen`` here, the training rows being public), ``random``, ``prescreen``,
``noisy-ucb``, ``gp-ucb`` (Kusner et al. Alg. 1; conditional guarantee), ``gp-ucb-exact`` (Alg. 2; conditional
on the GP prior and on de Freitas et al.'s constants, declared here as A = 0.1, tau = 1: a small A is the
declaration most favourable to the method, since its score noise grows with A). Baselines: the *ceiling*
(non-private selection among the 64 by validation accuracy), *non-private random search* (the best by
validation accuracy of ``n_iter`` random candidates, median over seeds) and the *floor* (a uniformly
random candidate). ε ∈ {0.1, 0.3, 1, 3, 10}, δ = 1e-6, n_iter ∈ {10, 30}, 20 seeds per cell. Reported:
test accuracy of the released choice (median, 10th percentile), regret against the ceiling in points
(median, 90th percentile), and |released score - true validation score| (median).

Part B -- training and validation rows sensitive (``sensitive="both"``), total ε ∈ {0.1, 0.3, 1, 3, 10} for
each role: ``DPLogisticRegression``, ``DPLinearSVC`` and ``DPSVC`` at their defaults (Gaussian fits) tuned over C
with the default method (``auto``, which is ``random`` here): the default exponential selection with
n_iter = 5 and 10, and random stopping (Papernot & Steinke; ``selection="random-stopping"``, geometric K of
mean 5 and 10); for the logistic model also n_iter = 20 with each; and, as a baseline, no search at all (the
estimator at its defaults, one fit with the training role's whole budget). The per-fit ε is
``PrivateSearchCV.largest_fit_epsilon``: the largest whose up-front training plan fits the budget
(``best_estimator_`` is the selected candidate's, or run's, own fit, so no refit is paid for); breast cancer,
digits as 0-4 against 5-9 and with its 10 classes (since 2026-11-27; the estimators then fit one weight vector
per class in one run; summarised apart) and a 5 000-row synthetic set (rows scaled to unit norm, a
public bound); 20 seeds; test accuracy of the
released model, the share of seeds that return the majority-class model, and the non-private
``LogisticRegression`` ceiling.

Part C -- ``lipschitz`` (Kusner et al. Alg. 3) in the setting it is made for, beside every other method on the
same task: L2-regularised logistic regression with Kusner's ``lambda`` as the one hyperparameter (scikit-learn's
``LogisticRegression`` with ``C = 1 / (lambda n)`` and no unregularised intercept, on rows standardised with the
public training rows' statistics, given a bias column and scaled to norm <= 1 *inside the model*, so the logistic
loss is 1-Lipschitz in w on every row), scored by the normalised sigmoid loss ``g = 1 / (1 + exp(y w.x))``
(bounded by g* = 1, L = 1/4-Lipschitz in w on rows of norm <= 1; score ``-mean g`` in [-1, 0]). Two lambda
ranges: a wide one, [1e-4, 1], over which test accuracy moves, and a narrow one, [1, 10], over which the path term
``(lambda_max - lambda_min) L / (lambda_max lambda_min)`` of ``lipschitz``'s score release is small (0.225). One
candidate set of 32 points per range; binary tasks: breast cancer, digits (0-4 against 5-9) and the 3 500-row
synthetic set (half the non-test rows for validation); ε and n_iter as in part A, 20 seeds. Regret: test accuracy
against non-private selection by the same score among the same 32; score error as in part A (score units).

Peer libraries (diffprivlib, Opacus) are compared per fit in ``benchmarks/trainers/dp_trainer_peers.py``.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/privacy_utility/privacy_utility.py [--seeds 20] [--quick]
[--part A|B|C] [--only TASK] [--methods M,...]`` (``--only`` with ``--part A``, ``B`` or ``C``: rerun the tasks whose
name contains
TASK, keep the rest; ``--methods`` with ``--part A`` or ``C``: rerun those methods only, keep the other rows).
Writes ``benchmarks/results/privacy_utility.{json,md,png}``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import privtune  # noqa: E402
from privtune import PrivateSearchCV  # noqa: E402
from privtune.linear_model import DPLogisticRegression  # noqa: E402
from privtune.space import Integer, Real, SearchSpace, candidate_set  # noqa: E402
from privtune.svm import DPSVC, DPLinearSVC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
from benchmarks._common import RESULTS, scale_rows  # noqa: E402

OUT = RESULTS
SPACE = {"C": Real(1e-2, 1e3, log=True), "gamma": Real(1e-5, 1e1, log=True)}
#: Part B's baseline without a search: the estimator's defaults, one fit with the training role's whole budget.
NO_SEARCH = "none (defaults, one fit)"
#: Part B's task with more than two classes (summarised apart from the binary ones).
MULTICLASS_B = ("digits (10 classes)",)
#: Part B's budgets per role (each role, training and validation, has this epsilon).
EPS_B = (0.1, 0.3, 1.0, 3.0, 10.0)
HGB_SPACE = {"learning_rate": Real(1e-3, 1.0, log=True), "max_leaf_nodes": Integer(2, 64),
             "l2_regularization": Real(1e-4, 10.0, log=True)}
EPS = (0.1, 0.3, 1.0, 3.0, 10.0)
N_ITERS = (10, 30)
METHODS = ("auto", "random", "prescreen", "noisy-ucb", "gp-ucb", "gp-ucb-exact")
#: Declarations the methods need beyond the common arguments (gp-ucb-exact: de Freitas et al.'s A and tau).
METHOD_PARAMS = {"gp-ucb-exact": {"A": 0.1, "tau": 1.0}}
#: Part C's methods: ``lipschitz`` and every other method, on its task.
METHODS_C = ("lipschitz", "auto", "random", "prescreen", "noisy-ucb", "gp-ucb", "gp-ucb-exact")
#: Part C's lambda ranges (Kusner's L2 strength): (label, lambda_min, lambda_max).
LAMBDA_RANGES = (("wide", 1e-4, 1.0), ("narrow", 1.0, 10.0))
#: Part C's validation loss: the normalised sigmoid of the negative margin, g* = 1 and L = 1/4 on rows of norm <= 1.
SIGMOID_LIPSCHITZ = 0.25
_FITS: dict = {}
_PREDS: dict = {}


def _key(X) -> str:
    return hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest()


class _Memo(ClassifierMixin, BaseEstimator):
    """A classifier whose fits and predictions are memoised by (hyperparameters, data) (benchmark speed only)."""

    def _build(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, X, y):
        self.key_ = (type(self).__name__, *sorted(self.get_params().items()), _key(X))
        if self.key_ not in _FITS:
            _FITS[self.key_] = self._build().fit(X, y)
        self.classes_ = _FITS[self.key_].classes_
        return self

    def predict(self, X):
        k = (self.key_, _key(X))
        if k not in _PREDS:
            _PREDS[k] = _FITS[self.key_].predict(X)
        return _PREDS[k]

    def decision_function(self, X):
        k = (self.key_, _key(X), "decision")
        if k not in _PREDS:
            _PREDS[k] = _FITS[self.key_].decision_function(X)
        return _PREDS[k]


class MemoSVC(_Memo):
    """``make_pipeline(StandardScaler(), SVC(C, gamma))`` with memoised fits and predictions."""

    def __init__(self, C: float = 1.0, gamma: float = 1.0) -> None:
        self.C = C
        self.gamma = gamma

    def _build(self):
        return make_pipeline(StandardScaler(), SVC(C=self.C, gamma=self.gamma))


class MemoHGB(_Memo):
    """``HistGradientBoostingClassifier`` with memoised fits and predictions (fixed model seed)."""

    def __init__(self, learning_rate: float = 0.1, max_leaf_nodes: int = 31, l2_regularization: float = 0.0) -> None:
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.l2_regularization = l2_regularization

    def _build(self):
        return HistGradientBoostingClassifier(learning_rate=self.learning_rate,
                                              max_leaf_nodes=int(self.max_leaf_nodes),
                                              l2_regularization=self.l2_regularization, max_iter=100,
                                              early_stopping=False, random_state=0)


class _LambdaLogistic(ClassifierMixin, BaseEstimator):
    """Kusner's objective ``(lam / 2) ||w||^2 + (1 / n) sum log(1 + exp(-y w.u))``, solved to high accuracy.

    ``u`` is the row standardised with the training rows' statistics, given a bias column of 1 and scaled to
    norm <= 1 (divided by ``max(1, ||.||)``): inside the model, so every row ``predict`` or ``decision_function``
    sees, validation rows included, has norm <= 1. Equivalent to scikit-learn's ``LogisticRegression`` with
    ``C = 1 / (lam n)`` and no separate (unregularised) intercept.
    """

    def __init__(self, lam: float = 1e-2) -> None:
        self.lam = lam

    def _rows(self, X):
        Z = np.hstack([self.scaler_.transform(X), np.ones((X.shape[0], 1))])
        return Z / np.maximum(1.0, np.linalg.norm(Z, axis=1, keepdims=True))

    def fit(self, X, y):
        self.scaler_ = StandardScaler().fit(X)
        self.model_ = LogisticRegression(C=1.0 / (self.lam * X.shape[0]), fit_intercept=False, tol=1e-10,
                                         max_iter=10_000).fit(self._rows(X), y)
        self.classes_ = self.model_.classes_
        return self

    def decision_function(self, X):
        return self.model_.decision_function(self._rows(X))

    def predict(self, X):
        return self.model_.predict(self._rows(X))


class MemoLambdaLogistic(_Memo):
    """:class:`_LambdaLogistic` with memoised fits, predictions and decision values."""

    def __init__(self, lam: float = 1e-2) -> None:
        self.lam = lam

    def _build(self):
        return _LambdaLogistic(self.lam)


def neg_sigmoid_loss(est, X, y) -> float:
    """``-mean 1 / (1 + exp(y_pm w.u))``: a mean of per-row terms in [0, 1] (bounds (-1, 0), sensitivity 1/m)."""
    margin = np.asarray(est.decision_function(X), dtype=float) * np.where(np.asarray(y) == 1, 1.0, -1.0)
    return -float(np.mean(0.5 * (1.0 - np.tanh(0.5 * margin))))  # 1 / (1 + e^m), without overflow


def tasks(quick: bool):
    """(name, (X, y), validation share of the non-test rows, model, space)."""
    yield "breast cancer", load_breast_cancer(return_X_y=True), 0.5, MemoSVC, SPACE
    if quick:
        return
    yield "digits (10 classes)", load_digits(return_X_y=True), 0.5, MemoSVC, SPACE
    yield "wine (3 classes)", load_wine(return_X_y=True), 0.5, MemoSVC, SPACE
    X, y = make_classification(n_samples=1250, n_features=20, n_informative=6, flip_y=0.05, random_state=3)
    yield "synthetic (m = 200)", (X, y), 200 / 1000, MemoSVC, SPACE  # 800 training rows, as below
    X, y = make_classification(n_samples=3500, n_features=20, n_informative=6, flip_y=0.05, random_state=0)
    yield "synthetic (m = 2 000)", (X, y), 2000 / 2800, MemoSVC, SPACE
    X, y = make_classification(n_samples=26000, n_features=20, n_informative=6, flip_y=0.05, random_state=5)
    yield "synthetic (m = 20 000)", (X, y), 20000 / 20800, MemoSVC, SPACE  # 800 training rows, as above
    X, y = make_classification(n_samples=4000, n_features=20, n_informative=10, n_redundant=4, flip_y=0.05,
                               random_state=7)
    yield "HGB, synthetic (m = 1 500)", (X, y), 1500 / 3200, MemoHGB, HGB_SPACE


def part_a(seeds: int, quick: bool, only: str | None = None, methods: tuple[str, ...] = METHODS) -> list[dict]:
    rows = []
    for name, (X, y), val_share, Model, space in tasks(quick):
        if only is not None and only not in name:
            continue
        grid = candidate_set(SearchSpace(space), 64, random_state=0).params
        Xa, Xte, ya, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xva, ytr, yva = train_test_split(Xa, ya, test_size=val_share, random_state=0, stratify=ya)
        val = np.array([Model(**p).fit(Xtr, ytr).score(Xva, yva) for p in grid])
        test = {tuple(sorted(p.items())): Model(**p).fit(Xtr, ytr).score(Xte, yte) for p in grid}
        tests = np.array([test[tuple(sorted(p.items()))] for p in grid])
        ceiling = float(tests[int(np.argmax(val))])
        floor = float(np.median(tests))
        rng = np.random.default_rng(0)
        for n_iter in N_ITERS:
            picks = [rng.permutation(len(grid))[:n_iter] for _ in range(200)]
            nonpriv_random = float(np.median([tests[p[int(np.argmax(val[p]))]] for p in picks]))
            for eps in EPS:
                for method in methods:
                    accs, errs, secs = [], [], []
                    for s in range(seeds):
                        t_cell = time.perf_counter()
                        search = PrivateSearchCV(Model(), space, method=method, epsilon=eps, delta=1e-6,
                                                 n_iter=n_iter, n_candidates=0, candidate_grid=grid, refit=False,
                                                 method_params=METHOD_PARAMS.get(method),
                                                 random_state=50_000 + s)
                        search.fit(Xtr, ytr, X_val=Xva, y_val=yva)
                        secs.append(time.perf_counter() - t_cell)
                        p = search.best_params_
                        k = tuple(sorted(p.items()))
                        accs.append(test[k])  # n_candidates=0: the choice is one of the grid's points
                        true_val = Model(**p).fit(Xtr, ytr).score(Xva, yva)
                        errs.append(abs(search.release_.score - true_val))
                    regret = 100 * (ceiling - np.asarray(accs))
                    row = {"task": name, "m": int(len(yva)), "n_iter": n_iter, "epsilon": eps, "method": method,
                           "test_median": float(np.median(accs)), "test_p10": float(np.percentile(accs, 10)),
                           "regret_median": float(np.median(regret)), "regret_p90": float(np.percentile(regret, 90)),
                           "score_error_median": float(np.median(errs)), "ceiling": ceiling, "floor": floor,
                           "nonprivate_random": nonpriv_random,
                           "seconds_median": float(np.median(secs))}
                    rows.append(row)
                    print(f"A {name[:16]:16s} m={row['m']:5d} T={n_iter:2d} eps={eps:<4g} {method:9s} "
                          f"regret {row['regret_median']:5.1f} (p90 {row['regret_p90']:5.1f}) "
                          f"score err {row['score_error_median']:.3g}", flush=True)
    return rows


def _binary_bundled(quick: bool) -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    """The bundled binary tasks with n >= 500: breast cancer, and digits as 0-4 against 5-9 (not with ``quick``)."""
    data = [("breast cancer", load_breast_cancer(return_X_y=True))]
    if not quick:
        Xd, yd = load_digits(return_X_y=True)
        data.append(("digits 0-4 vs 5-9", (Xd, (yd >= 5).astype(int))))
    return data


def b_tasks(quick: bool) -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    """Part B's tasks: the bundled sets with n >= 500 (digits also with its 10 classes) and a synthetic one."""
    data = _binary_bundled(quick)
    if not quick:
        data.append(("digits (10 classes)", load_digits(return_X_y=True)))
        data.append(("synthetic 5 000", make_classification(n_samples=5000, n_features=20, n_informative=8,
                                                            random_state=0)))
    return data


def part_b(seeds: int, quick: bool, only: str | None = None) -> list[dict]:
    rows = []
    data = [t for t in b_tasks(quick) if only is None or only in t[0]]
    estimators = {"DPLogisticRegression": DPLogisticRegression, "DPLinearSVC": DPLinearSVC, "DPSVC": DPSVC}
    # (selection, n_iter): the default exponential selection, and random stopping (Papernot & Steinke) with its
    # default shape (geometric K) at the same mean number of runs; n_iter = 20 for the logistic model only.
    plans = [("exponential", 5), ("random-stopping", 5), ("exponential", 10), ("random-stopping", 10)]
    plans, extra, totals = (plans[:2], [], (1.0,)) if quick else (plans, [("exponential", 20), ("random-stopping", 20)],
                                                                     EPS_B)
    space = {"C": Real(1e-2, 1e2, log=True)}
    for name, (X, y) in data:
        X = scale_rows(X)  # public preprocessing for the benchmark
        Xa, Xte, ya, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xva, ytr, yva = train_test_split(Xa, ya, test_size=0.3, random_state=0, stratify=ya)
        ceiling = LogisticRegression().fit(Xtr, ytr).score(Xte, yte)
        classes = np.unique(y)  # declared: the label set is public
        majority = float(np.max(np.unique(yte, return_counts=True)[1]) / len(yte))
        for est_name, cls in estimators.items():
            for selection, n_iter in plans + (extra if est_name == "DPLogisticRegression" else []):
                for total in totals:
                    mp = {"selection": selection} if selection == "random-stopping" else None

                    def make(s, eps=1.0, cls=cls, total=total, n_iter=n_iter, mp=mp, classes=classes):
                        return PrivateSearchCV(cls(epsilon=eps, classes=classes), space, sensitive="both",
                                               epsilon=total, delta=1e-6, n_iter=n_iter, n_candidates=64,
                                               method_params=mp, random_state=70_000 + s)
                    # the largest per-fit epsilon the whole up-front training plan affords (the library's own rule)
                    per_fit = make(0).largest_fit_epsilon(len(yva))
                    accs = []
                    t_cell = time.perf_counter()
                    for s in range(seeds):
                        search = make(s, per_fit)
                        search.fit(Xtr, ytr, X_val=Xva, y_val=yva)
                        accs.append(search.best_estimator_.score(Xte, yte))
                    accs = np.asarray(accs)
                    row = {"task": name, "estimator": est_name, "epsilon_total": total, "per_fit_epsilon": per_fit,
                           "method": search.method_, "selection": selection, "n_iter": n_iter,
                           "n_train": int(len(ytr)), "m": int(len(yva)),
                           "test_median": float(np.median(accs)), "test_p10": float(np.percentile(accs, 10)),
                           "regret_median": float(100 * (ceiling - np.median(accs))),
                           "majority_share": float(np.mean(np.abs(accs - majority) < 1e-9)),
                           "ceiling": ceiling, "majority": majority,
                           "seconds_per_search": (time.perf_counter() - t_cell) / seeds}
                    rows.append(row)
                    print(f"B {name[:16]:16s} {est_name[:20]:20s} {selection:15s} n_iter={n_iter:2d} eps={total:<4g} "
                          f"per-fit {per_fit:.3f} test {row['test_median']:.3f} (p10 {row['test_p10']:.3f}) "
                          f"majority share {row['majority_share']:.2f} | ceiling {ceiling:.3f}", flush=True)
            # Baseline: no search. The estimator at its defaults (C = 1), one fit with the training role's whole
            # budget (epsilon = total at the same delta); the validation rows are not used.
            for total in totals:
                t_cell = time.perf_counter()
                accs = np.asarray([cls(epsilon=total, delta=1e-6, classes=classes, random_state=70_000 + s)
                                   .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)])
                rows.append({"task": name, "estimator": est_name, "epsilon_total": total, "per_fit_epsilon": total,
                             "method": "none", "selection": NO_SEARCH, "n_iter": 1, "n_train": int(len(ytr)),
                             "m": int(len(yva)), "test_median": float(np.median(accs)),
                             "test_p10": float(np.percentile(accs, 10)),
                             "regret_median": float(100 * (ceiling - np.median(accs))),
                             "majority_share": float(np.mean(np.abs(accs - majority) < 1e-9)),
                             "ceiling": ceiling, "majority": majority,
                             "seconds_per_search": (time.perf_counter() - t_cell) / seeds})
                print(f"B {name[:16]:16s} {est_name[:20]:20s} no search, defaults eps={total:<4g} "
                      f"test {np.median(accs):.3f} (p10 {np.percentile(accs, 10):.3f})", flush=True)
    return rows


def c_tasks(quick: bool) -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    """Part C's binary tasks (its sigmoid validation loss is a margin loss): part B's bundled ones, a synthetic one."""
    data = _binary_bundled(quick)
    if not quick:
        data.append(("synthetic 3 500", make_classification(n_samples=3500, n_features=20, n_informative=6,
                                                            flip_y=0.05, random_state=0)))
    return data


def part_c(seeds: int, quick: bool, only: str | None = None, methods: tuple[str, ...] = METHODS_C) -> list[dict]:
    rows = []
    for name, (X, y) in c_tasks(quick):
        if only is not None and only not in name:
            continue
        Xa, Xte, ya, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xva, ytr, yva = train_test_split(Xa, ya, test_size=0.5, random_state=0, stratify=ya)
        for label, lo, hi in LAMBDA_RANGES:
            space = {"lam": Real(lo, hi, log=True)}
            grid = candidate_set(SearchSpace(space), 32, random_state=0).params
            fits = [MemoLambdaLogistic(**p).fit(Xtr, ytr) for p in grid]
            val = np.array([neg_sigmoid_loss(f, Xva, yva) for f in fits])
            tests = np.array([f.score(Xte, yte) for f in fits])
            by_key = {tuple(sorted(p.items())): i for i, p in enumerate(grid)}
            ceiling = float(tests[int(np.argmax(val))])
            path = (hi - lo) * SIGMOID_LIPSCHITZ / (hi * lo)
            mp_lip = {"regularization": "lam", "lambda_bounds": (lo, hi), "lipschitz": SIGMOID_LIPSCHITZ,
                      "loss_bound": 1.0}
            for n_iter in N_ITERS:
                for eps in EPS:
                    for method in methods:
                        accs, errs, secs = [], [], []
                        for s in range(seeds):
                            t_cell = time.perf_counter()
                            search = PrivateSearchCV(
                                MemoLambdaLogistic(), space, method=method, scoring=neg_sigmoid_loss,
                                score_bounds=(-1.0, 0.0), epsilon=eps, delta=1e-6, n_iter=n_iter, n_candidates=0,
                                candidate_grid=grid, refit=False,
                                method_params=mp_lip if method == "lipschitz" else METHOD_PARAMS.get(method),
                                random_state=90_000 + s)
                            search.fit(Xtr, ytr, X_val=Xva, y_val=yva)
                            secs.append(time.perf_counter() - t_cell)
                            i = by_key[tuple(sorted(search.best_params_.items()))]
                            accs.append(tests[i])
                            errs.append(abs(search.release_.score - val[i]))
                        regret = 100 * (ceiling - np.asarray(accs))
                        row = {"task": name, "lambda_range": label, "lambda_bounds": [lo, hi], "path_term": path,
                               "m": int(len(yva)), "n_iter": n_iter, "epsilon": eps, "method": method,
                               "guarantee": search.guarantee_,
                               "test_median": float(np.median(accs)), "test_p10": float(np.percentile(accs, 10)),
                               "regret_median": float(np.median(regret)),
                               "regret_p90": float(np.percentile(regret, 90)),
                               "score_error_median": float(np.median(errs)), "ceiling": ceiling,
                               "floor": float(np.median(tests)), "seconds_median": float(np.median(secs))}
                        rows.append(row)
                        print(f"C {name[:16]:16s} {label:6s} m={row['m']:4d} T={n_iter:2d} eps={eps:<4g} "
                              f"{method:12s} regret {row['regret_median']:5.1f} (p90 {row['regret_p90']:5.1f}) "
                              f"score err {row['score_error_median']:.3g}", flush=True)
    return rows


def summary_c(c_rows) -> list[str]:
    """Part C, per lambda range, method and epsilon, over its tasks and n_iter."""
    L = ["", "### Summary of part C (tasks × n_iter, per λ range)\n",
         "| λ range | ε | method | guarantee | mean of median regret | mean of p90 regret | worst p90 regret | "
         "median score error |", "|---|---|---|---|---|---|---|---|"]
    for label, _, _ in LAMBDA_RANGES:
        for eps in EPS:
            for method in METHODS_C:
                sel = [r for r in c_rows if r["lambda_range"] == label and r["epsilon"] == eps
                       and r["method"] == method]
                if sel:
                    L.append(f"| {label} | {eps:g} | {method} | {sel[0]['guarantee']} | "
                             f"{np.mean([r['regret_median'] for r in sel]):.1f} | "
                             f"{np.mean([r['regret_p90'] for r in sel]):.1f} | "
                             f"{max(r['regret_p90'] for r in sel):.1f} | "
                             f"{np.median([r['score_error_median'] for r in sel]):.3g} |")
    return L


def summary_b(b_rows, what: str = "") -> list[str]:
    """Part B, per n_iter, selection and epsilon, over every (task, estimator) cell of ``b_rows``, beside no search."""
    n_cells = len({(r["task"], r["estimator"]) for r in b_rows})
    L = ["", f"### Summary over the {n_cells} {what}(task, estimator) cells\n",
         "| ε per role | n_iter | selection | mean of median regret | mean of p90 regret | cells where it is best |",
         "|---|---|---|---|---|---|"]
    selections = ("exponential", "random-stopping", NO_SEARCH)

    def cells(sel, eps, n_iter):
        return {(r["task"], r["estimator"]): r for r in b_rows if r.get("selection", "exponential") == sel
                and r["epsilon_total"] == eps and r.get("n_iter", 5) == (1 if sel == NO_SEARCH else n_iter)}

    for eps in sorted({r["epsilon_total"] for r in b_rows}):
        for n_iter in (5, 10):
            by = {sel: cells(sel, eps, n_iter) for sel in selections}
            keys = set.intersection(*(set(v) for v in by.values()))
            if not keys:
                continue
            for sel in selections:
                med = [by[sel][k]["regret_median"] for k in keys]
                p90 = [100 * (by[sel][k]["ceiling"] - by[sel][k]["test_p10"]) for k in keys]
                wins = sum(by[sel][k]["regret_median"] <= min(by[o][k]["regret_median"] for o in selections)
                           for k in keys)
                L.append(f"| {eps:g} | {'-' if sel == NO_SEARCH else n_iter} | {sel} | {np.mean(med):.1f} "
                         f"| {np.mean(p90):.1f} | {wins} of {len(keys)} |")
    return L


def summary(a_rows) -> list[str]:
    """Per method and epsilon, over every part-A cell: mean of the median and of the 90th-percentile regret."""
    L = ["", "### Summary over every part-A cell (tasks × n_iter)\n",
         "| ε | method | mean of median regret | mean of p90 regret | worst p90 regret | median score error |",
         "|---|---|---|---|---|---|"]
    for eps in EPS:
        for method in METHODS:
            sel = [r for r in a_rows if r["epsilon"] == eps and r["method"] == method]
            if sel:
                L.append(f"| {eps:g} | {method} | {np.mean([r['regret_median'] for r in sel]):.1f} | "
                         f"{np.mean([r['regret_p90'] for r in sel]):.1f} | {max(r['regret_p90'] for r in sel):.1f} | "
                         f"{np.median([r['score_error_median'] for r in sel]):.3g} |")
    return L


def render(meta, a_rows, b_rows, c_rows) -> str:
    runs = meta.get("part_runs") or {}

    def when_part(name: str) -> str:
        return (f"part {name} run {runs.get(name)}"
                + "".join(f" (task {t!r} rerun {d})" for t, d in (runs.get(f"{name}_tasks") or {}).items())
                + "".join(f" (method {m!r} rerun {d})" for m, d in (runs.get(f"{name}_methods") or {}).items()))

    when = ", ".join(when_part(n) for n in PARTS if runs.get(n)) if runs else f"run {meta['run']}"
    when = when[:1].upper() + when[1:]
    L = ["# Privacy-utility study (issue 11)\n",
         when + f", {meta['platform']}, privtune {meta['privtune']}, {meta['seeds']} seeds per cell. "
         "`python benchmarks/privacy_utility/privacy_utility.py`. Regret: points of test accuracy "
         "against non-private selection among the same 64 candidates (negative: the released choice tested "
         "better). Score error: |released - true validation score|.\n",
         "## A. Validation rows sensitive (RBF SVC; HGB on one task)\n",
         "| task | m | n_iter | ε | method | regret median | regret p90 | test median | test p10 | score error | "
         "non-private random search | ceiling | floor | s per search |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in a_rows:
        L.append(f"| {r['task']} | {r['m']} | {r['n_iter']} | {r['epsilon']:g} | {r['method']} | "
                 f"{r['regret_median']:.1f} | {r['regret_p90']:.1f} | {r['test_median']:.3f} | {r['test_p10']:.3f} | "
                 f"{r['score_error_median']:.3g} | {r['nonprivate_random']:.3f} | {r['ceiling']:.3f} | "
                 f"{r['floor']:.3f} | {r.get('seconds_median', float('nan')):.2f} |")
    L += summary(a_rows)
    L += ["", "Seconds per search: median wall time with memoised fits and predictions (the first seed of a task "
          "pays the fits), i.e. mostly privtune's own overhead.", "",
          "## B. Training and validation rows sensitive (`sensitive=\"both\"`)\n",
          "Per-fit ε: `PrivateSearchCV.largest_fit_epsilon`, the largest whose up-front training plan fits the "
          "training budget (exponential selection: n_iter fits composed through RDP; random stopping: Papernot & "
          "Steinke's bound over the fits with the same secret K). Both release the selected candidate's (run's) own "
          f"fit: no refit is paid for. Baseline \"{NO_SEARCH}\": the estimator at its defaults (C = 1), fitted "
          "once with the training role's whole budget (per-fit ε = ε per role); the validation rows are unused.\n",
          "| task | estimator | selection | n_iter (mean) | ε per role | per-fit ε | test median | test p10 | "
          "regret median | majority-model share | non-private LR | s per search |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in b_rows:
        L.append(f"| {r['task']} | {r['estimator']} | {r.get('selection', 'exponential')} | {r.get('n_iter', 5)} | "
                 f"{r['epsilon_total']:g} | {r['per_fit_epsilon']:.3f} | "
                 f"{r['test_median']:.3f} | {r['test_p10']:.3f} | {r['regret_median']:.1f} | "
                 f"{r['majority_share']:.2f} | {r['ceiling']:.3f} | {r.get('seconds_per_search', float('nan')):.2f} |")
    multi = [r for r in b_rows if r["task"] in MULTICLASS_B]
    L += summary_b([r for r in b_rows if r["task"] not in MULTICLASS_B], "binary ")
    if multi:
        L += summary_b(multi, "10-class ")
    if c_rows:
        L += ["", "## C. `lipschitz` in its own setting (Kusner et al. Alg. 3), beside every method\n",
              "L2-regularised logistic regression with Kusner's λ (`LogisticRegression(C = 1 / (λ n))`, no "
              "unregularised intercept; rows standardised with the training rows' statistics, a bias column added "
              "and scaled to norm ≤ 1 inside the model), scored by the normalised sigmoid loss "
              "(score −mean 1/(1 + e^{y w·u}) in [−1, 0]; g* = 1, L = 1/4); training rows public, validation rows "
              "sensitive. `lipschitz` declares exactly these constants and the λ range; its score release pays the "
              "path term (λ_max − λ_min) L / (λ_max λ_min) besides g*/m. `gp-ucb-exact` declares A = 0.1, τ = 1. "
              "Regret: points of test accuracy against non-private selection by the same score among the same 32 "
              "candidates. Score error: |released − true validation score| in score units (the score range is 1).\n",
              "| task | λ range | path term | m | n_iter | ε | method | regret median | regret p90 | test median | "
              "score error | ceiling | floor | s per search |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in c_rows:
            lo, hi = r["lambda_bounds"]
            L.append(f"| {r['task']} | {r['lambda_range']} [{lo:g}, {hi:g}] | {r['path_term']:.3g} | {r['m']} | "
                     f"{r['n_iter']} | {r['epsilon']:g} | {r['method']} | {r['regret_median']:.1f} | "
                     f"{r['regret_p90']:.1f} | {r['test_median']:.3f} | {r['score_error_median']:.3g} | "
                     f"{r['ceiling']:.3f} | {r['floor']:.3f} | {r['seconds_median']:.2f} |")
        L += summary_c(c_rows)
    return "\n".join(L) + "\n"


def plot(a_rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks_ = list(dict.fromkeys(r["task"] for r in a_rows))
    fig, axes = plt.subplots(1, len(tasks_), figsize=(4.2 * len(tasks_), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks_, strict=True):
        for method in METHODS:
            pts = [(r["epsilon"], r["regret_p90"]) for r in a_rows
                   if r["task"] == task and r["method"] == method and r["n_iter"] == 30]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=method)
        ax.set_xscale("log")
        ax.set_title(f"{task}, n_iter = 30", fontsize=9)
        ax.set_xlabel("ε")
        ax.set_ylabel("90th-percentile regret (points)")
        ax.axhline(0, color="#999", linewidth=0.8)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


PARTS = ("A", "B", "C")


def _part_runs(old_meta: dict, part: str, only: str | None, methods: tuple[str, ...] | None,
               rows: list[dict], now: str) -> dict:
    """When each part (and each task or method rerun with ``--only`` / ``--methods``) was run.

    Carried over from the stored results. ``rows``: the rows of the part that ran (the last part with
    ``part="all"``, where ``only`` and ``methods`` are None).
    """
    runs = dict(old_meta.get("part_runs") or {})
    if not runs and old_meta:  # a results file written before "part_runs" existed
        stored = old_meta.get("part", "all")
        runs = {"A": old_meta["run"] if stored in ("all", "A") else old_meta.get("other_part_from"),
                "B": old_meta["run"] if stored in ("all", "B") else old_meta.get("other_part_from")}
    for name in PARTS:
        if part in ("all", name) and only is None and methods is None:
            runs[name], runs[f"{name}_tasks"], runs[f"{name}_methods"] = now, {}, {}
        elif part == name and only is not None:
            runs[f"{name}_tasks"] = {**runs.get(f"{name}_tasks", {}),
                                     **{r["task"]: now for r in rows if only in r["task"]}}
        elif part == name:
            runs[f"{name}_methods"] = {**runs.get(f"{name}_methods", {}), **{m: now for m in methods}}
    return runs


def _merged(stored: list[dict], fresh_rows: list[dict], order: list[str]) -> list[dict]:
    """The stored rows of the tasks not rerun, and the fresh rows, in the tasks' order."""
    fresh = {r["task"] for r in fresh_rows}
    return sorted([r for r in stored if r["task"] not in fresh] + fresh_rows,
                  key=lambda r: order.index(r["task"]) if r["task"] in order else len(order))


def _merged_methods(stored: list[dict], fresh_rows: list[dict], tasks_order: list[str],
                    methods_order: tuple[str, ...]) -> list[dict]:
    """Stored rows with the rerun methods' rows replaced, ordered by task, range, n_iter, ε and method."""
    rerun = {(r["task"], r["method"]) for r in fresh_rows}
    rows = [r for r in stored if (r["task"], r["method"]) not in rerun] + fresh_rows

    def key(r):
        return (tasks_order.index(r["task"]) if r["task"] in tasks_order else len(tasks_order),
                r.get("lambda_range", ""), r["n_iter"], r["epsilon"],
                methods_order.index(r["method"]) if r["method"] in methods_order else len(methods_order))
    return sorted(rows, key=key)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="breast cancer only, one seed, a smoke run; writes nothing")
    ap.add_argument("--part", choices=["all", *PARTS], default="all",
                    help="run one part and keep the others from the existing results file")
    ap.add_argument("--only", default=None,
                    help="with --part A, B or C: run that part's tasks whose name contains this text only, and "
                         "keep the other tasks' rows from the existing results file")
    ap.add_argument("--methods", default=None,
                    help="with --part A or C: comma-separated methods to rerun; keep the other methods' rows")
    args = ap.parse_args()
    if args.only is not None and args.part == "all":
        ap.error("--only needs --part A, B or C")
    if args.quick:
        args.seeds = 1
    methods = None if args.methods is None else tuple(m.strip() for m in args.methods.split(",") if m.strip())
    if methods is not None:
        if args.part not in ("A", "C") or args.only is not None:
            ap.error("--methods needs --part A or --part C (and no --only)")
        known = METHODS if args.part == "A" else METHODS_C
        if not methods or set(methods) - set(known):
            ap.error(f"--methods with --part {args.part}: methods among {list(known)}")
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    fresh: dict[str, list[dict]] = {}
    if args.part in ("all", "A"):
        fresh["A"] = part_a(args.seeds, args.quick, args.only, methods or METHODS)
    if args.part in ("all", "B"):
        fresh["B"] = part_b(args.seeds, args.quick, args.only)
    if args.part in ("all", "C"):
        fresh["C"] = part_c(args.seeds, args.quick, args.only, methods or METHODS_C)
    # Read the stored results only now, after the run: two runs of different parts can then share the file.
    old = json.loads((OUT / "privacy_utility.json").read_text()) if args.part != "all" else {}
    orders = {"A": [t[0] for t in tasks(False)], "B": [t[0] for t in b_tasks(False)],
              "C": [t[0] for t in c_tasks(False)]}
    rows = {}
    for name in PARTS:
        if name not in fresh:
            rows[name] = old.get(name, [])
        elif args.only is not None:  # rerun tasks' rows replace the stored ones
            rows[name] = _merged(old.get(name, []), fresh[name], orders[name])
        elif methods is not None:  # rerun methods' rows replace the stored ones
            rows[name] = _merged_methods(old.get(name, []), fresh[name], orders[name],
                                         METHODS if name == "A" else METHODS_C)
        else:
            rows[name] = fresh[name]
    now = time.strftime("%Y-%m-%d %H:%M")
    ran = fresh[args.part] if args.part != "all" else []
    meta = {"run": now, "platform": platform.platform(), "privtune": privtune.__version__,
            "seeds": args.seeds, "seconds": time.perf_counter() - t0, "part": args.part,
            "part_runs": _part_runs(old.get("meta", {}), args.part, args.only, methods, ran, now)}
    md = render(meta, rows["A"], rows["B"], rows["C"])
    if args.quick:
        print(md)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "privacy_utility.json").write_text(json.dumps({"meta": meta, **rows}, indent=1))
    (OUT / "privacy_utility.md").write_text(md)
    plot(rows["A"], OUT / "privacy_utility.png")
    print(f"wrote {OUT / 'privacy_utility.md'} in {meta['seconds']:.0f} s")


if __name__ == "__main__":
    main()
