"""The ``privtune`` command line.

``privtune demo`` tunes an RBF SVM's ``C`` and ``gamma`` on scikit-learn's bundled breast-cancer data, with
the validation split as the sensitive data, and prints the released parameters, the released score, the
budget spent per phase and the guarantee label.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from privtune import PrivateSearchCV
    from privtune.space import Real

    t0 = time.perf_counter()
    X, y = load_breast_cancer(return_X_y=True)
    # Public/sensitive roles: the training split is treated as public, the validation split is sensitive,
    # and a test split (never touched by the search) measures the refit model.
    X_trval, X_test, y_trval, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    X_tr, X_val, y_tr, y_val = train_test_split(X_trval, y_trval, test_size=0.35, random_state=1,
                                                stratify=y_trval)
    estimator = make_pipeline(StandardScaler(), SVC())
    space = {"svc__C": Real(0.1, 1000.0, log=True), "svc__gamma": Real(1e-5, 1.0, log=True)}
    search = PrivateSearchCV(estimator, space, method=args.method, epsilon=args.epsilon, delta=args.delta,
                             n_iter=args.n_iter, n_candidates=args.n_candidates,
                             random_state=args.seed, verbose=0 if args.quiet else 1)
    search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    spent = search.privacy_spent_
    lines = [
        "privtune demo -- RBF SVM (C, gamma) on breast cancer; the validation split is the sensitive data",
        f"  data: {len(y_tr)} training rows (public), {len(y_val)} validation rows (sensitive), "
        f"{len(y_test)} test rows (untouched)",
        f"  method: {search.method} over {len(search.candidates_)} candidates, n_iter={args.n_iter}",
        f"  released parameters: C = {search.best_params_['svc__C']:.4g}, "
        f"gamma = {search.best_params_['svc__gamma']:.4g}",
        f"  released validation accuracy: {search.best_score_:.4f}"
        f" (noise std {search.release_.noise.get('score_noise_std', float('nan')):.3g})",
        "  budget spent per phase:",
    ]
    for phase, b in search.accountant_.spent_by_phase().items():
        lines.append(f"    {phase:<15s} epsilon = {b.epsilon:.4g}, delta = {b.delta:.3g}")
    phases = list(search.accountant_.spent_by_phase().values())
    if len(phases) > 1 and abs(sum(b.epsilon for b in phases) - spent["overall"].epsilon) > 1e-9:
        lines.append("    (phases compose sub-additively: the total below is bounded jointly, not summed)")
    lines += [
        f"  total: epsilon = {spent['overall'].epsilon:.4g}, delta = {spent['overall'].delta:.3g} "
        f"(budget epsilon = {args.epsilon}, delta = {args.delta})",
        f"  guarantee: {search.guarantee_} (replace-one, validation rows); noise: {search.release_.seed_policy}",
        f"  test accuracy of the refit model (not private; the test rows are not part of the release): "
        f"{search.score(X_test, y_test):.4f}",
        f"  finished in {time.perf_counter() - t0:.1f} s",
    ]
    print("\n".join(lines))
    return 0


def _parser() -> argparse.ArgumentParser:
    from privtune._version import __version__

    p = argparse.ArgumentParser(prog="privtune", description="Differentially private hyperparameter tuning.")
    p.add_argument("--version", action="version", version=f"privtune {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="tune an RBF SVM on bundled breast-cancer data with a sensitive validation set")
    d.add_argument("--method", default="random",
                   choices=["random", "noisy-ucb", "gp-ucb"],
                   help="release method (default: random)")
    d.add_argument("--epsilon", type=float, default=1.0, help="total epsilon (default: 1.0)")
    d.add_argument("--delta", type=float, default=1e-6, help="total delta (default: 1e-6)")
    d.add_argument("--n-iter", type=int, default=30, help="evaluations (default: 30)")
    d.add_argument("--n-candidates", type=int, default=256, help="candidate set size (default: 256)")
    d.add_argument("--seed", type=int, default=None,
                   help="seed the noise (reproducible, NOT for release); default: secure noise")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privtune`` console script."""
    from privtune.exceptions import PrivtuneError

    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PrivtuneError as exc:
        print(f"privtune: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
