"""``privtune demo [--out DIR]``: tune an RBF SVM on scikit-learn's bundled breast-cancer data.

The validation split is the sensitive data, the training split is public and a test split, never touched by the
search, measures the refit model (:func:`_demo_split`, seeded and not stratified: it never looks at the labels).
"""

from __future__ import annotations

import argparse
import datetime
import os
import time
import uuid
from pathlib import Path
from typing import Any

from privtune.cli._output import (
    EXIT_OK,
    _budget_lines,
    _finished_line,
    _report_of_search,
    _verdict_lines,
    _write_report,
)


def _demo(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from sklearn.datasets import load_breast_cancer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from privtune import PrivateSearchCV
    from privtune.space import Real

    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    storage_path = out / "demo.sqlite"
    # A fresh study per run: every run is kept in the same file (list them with `privtune report`).
    study_name = f"demo-{datetime.datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    X, y = load_breast_cancer(return_X_y=True)
    # Public/sensitive roles: the training split is treated as public, the validation split is sensitive,
    # and a test split (never touched by the search) measures the refit model.
    X_tr, X_val, X_test, y_tr, y_val, y_test = _demo_split(X, y)
    estimator = make_pipeline(StandardScaler(), SVC(random_state=0))  # never numpy's global RNG
    space = {"svc__C": Real(0.1, 1000.0, log=True), "svc__gamma": Real(1e-5, 1.0, log=True)}
    search = PrivateSearchCV(estimator, space, method=args.method, epsilon=args.epsilon, delta=args.delta,
                             n_iter=args.n_iter, n_candidates=args.n_candidates,
                             storage=str(storage_path), study_name=study_name,
                             random_state=args.seed, verbose=0 if args.quiet else 1)
    search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    written = _write_report(_report_of_search(search), {"json": out / "report.json", "html": out / "report.html"})
    spent = search.privacy_spent_
    lines = [
        "privtune demo -- RBF SVM (C, gamma) on breast cancer; the validation split is the sensitive data",
        f"  data: {len(y_tr)} training rows (public), {len(y_val)} validation rows (sensitive), "
        f"{len(y_test)} test rows (untouched)",
        f"  method: {search.method_} over {len(search.candidates_)} candidates, n_iter={args.n_iter}",
        f"  released parameters: C = {search.best_params_['svc__C']:.4g}, "
        f"gamma = {search.best_params_['svc__gamma']:.4g}",
        f"  released validation accuracy: {search.best_score_:.4f}"
        f" (noise std {search.release_.noise.get('score_noise_std', float('nan')):.3g})",
        *_verdict_lines(search),
        "  budget spent per phase:",
        *_budget_lines(search.accountant_.spent_by_phase(), spent["overall"]),
        f"  total: epsilon = {spent['overall'].epsilon:.4g}, delta = {spent['overall'].delta:.3g} "
        f"(budget epsilon = {args.epsilon}, delta = {args.delta})",
        f"  guarantee: {search.guarantee_} (replace-one, validation rows); noise: {search.release_.seed_policy}",
        f"  test accuracy of the refit model (not private; the test rows are not part of the release): "
        f"{search.score(X_test, y_test):.4f}",
        f"  study: {study_name!r} in {storage_path}",
        *[f"  report ({fmt}): {p}" for fmt, p in written.items()],
        _finished_line(search, t0),
    ]
    print("\n".join(lines))
    return EXIT_OK


def _demo_split(X: Any, y: Any) -> tuple[Any, Any, Any, Any, Any, Any]:
    """The demo's public training, sensitive validation and untouched test rows: seeded, never looking at values.

    Not stratified: a stratified split reads the labels, so which rows became the public training rows depended
    on the labels of the sensitive validation rows (one flipped validation label moved 135 of 276 training rows).
    """
    from sklearn.model_selection import train_test_split

    X_trval, X_test, y_trval, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    X_tr, X_val, y_tr, y_val = train_test_split(X_trval, y_trval, test_size=0.35, random_state=1)
    return X_tr, X_val, X_test, y_tr, y_val, y_test
