"""Tune an RBF SVC's C and gamma with a sensitive validation set, next to non-private GridSearchCV.

The training rows are treated as public, the validation rows as sensitive (one patient = one row), and a
test split that the search never touches measures the refit models. privtune releases the chosen (C, gamma),
their validation accuracy, and the budget spent per phase; GridSearchCV on the same candidates and the same
validation split shows what the privacy costs.

Run:  .venv/bin/python examples/svm_sensitive_validation.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.model_selection import GridSearchCV, PredefinedSplit, train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from privtune import PrivateSearchCV  # noqa: E402
from privtune.space import Real  # noqa: E402

SPACE = {"svc__C": Real(0.1, 1000.0, log=True), "svc__gamma": Real(1e-5, 1.0, log=True)}


def main() -> None:
    X, y = load_breast_cancer(return_X_y=True)
    X_trval, X_test, y_trval, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    X_tr, X_val, y_tr, y_val = train_test_split(X_trval, y_trval, test_size=0.35, random_state=1, stratify=y_trval)
    est = make_pipeline(StandardScaler(), SVC())

    for method, eps in [("random", 1.0), ("noisy-ucb", 1.0), ("gp-ucb", 1.0), ("random", 0.25)]:
        s = PrivateSearchCV(est, SPACE, method=method, epsilon=eps, delta=1e-6, n_iter=30, n_candidates=256)
        s.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)  # random_state=None: secure noise, fit for release
        print(f"\nprivtune {method} (epsilon={eps}): C={s.best_params_['svc__C']:.4g} "
              f"gamma={s.best_params_['svc__gamma']:.4g}")
        print(f"  released validation accuracy {s.best_score_:.3f} "
              f"(noise std {s.release_.noise.get('score_noise_std', float('nan')):.3g}); guarantee {s.guarantee_}")
        for phase, b in s.accountant_.spent_by_phase().items():
            print(f"  budget: {phase:<14s} epsilon={b.epsilon:.3g} delta={b.delta:.2g}")
        print(f"  total: {s.privacy_spent_['overall']}")
        print(f"  test accuracy of the refit model: {s.score(X_test, y_test):.3f}")
        candidates = s.candidates_.params

    # Non-private baseline on the same candidates and the same validation split.
    X_all = np.vstack([X_tr, X_val])
    y_all = np.concatenate([y_tr, y_val])
    fold = np.r_[np.full(len(y_tr), -1), np.zeros(len(y_val), dtype=int)]
    gs = GridSearchCV(est, [{k: [p[k]] for k in SPACE} for p in candidates], cv=PredefinedSplit(fold), refit=False)
    gs.fit(X_all, y_all)
    best = gs.best_params_
    refit = make_pipeline(StandardScaler(), SVC()).set_params(**best).fit(X_tr, y_tr)
    print(f"\nnon-private GridSearchCV on the same {len(candidates)} candidates: C={best['svc__C']:.4g} "
          f"gamma={best['svc__gamma']:.4g}, validation accuracy {gs.best_score_:.3f} (raw: leaks the validation "
          f"set), test accuracy {refit.score(X_test, y_test):.3f}")


if __name__ == "__main__":
    main()
