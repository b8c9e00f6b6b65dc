"""What the benchmark scripts share: where results go, the smoke mode's output, and the data protocol.

Every script keeps writing to ``benchmarks/results/`` wherever it sits in the tree; ``--quick`` (a smoke run on
tiny sizes) writes into a fresh temporary directory instead, so a smoke run never touches a stored result.

Each script puts the repository root on ``sys.path`` before importing this module, so that it runs both as a file
(``python benchmarks/<suite>/<script>.py``) and as a module (``python -m benchmarks.<suite>.<script>``).
"""

from __future__ import annotations

import importlib.util
import itertools
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_wine,
    make_circles,
    make_classification,
    make_moons,
)
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

#: ``benchmarks/results/``: every stored result, whatever the suite of the script that wrote it.
RESULTS = Path(__file__).resolve().parent / "results"


def output_dir(quick: bool) -> Path:
    """The directory a run writes into: ``RESULTS``, or a new temporary directory for a ``--quick`` smoke run."""
    if quick:
        return Path(tempfile.mkdtemp(prefix="privtune-bench-quick-"))
    return RESULTS


# The data protocol of the trainer benchmarks and the studies (nothing downloaded).


def datasets(quick: bool):
    """The nine binary tasks of ``trainers/dp_trainer_defaults.py``, as ``(name, X, y)`` (the first two if quick)."""
    yield "breast cancer", *load_breast_cancer(return_X_y=True)
    Xd, yd = load_digits(return_X_y=True)
    yield "digits 0-4 vs 5-9", Xd, (yd >= 5).astype(int)
    if quick:
        return
    Xw, yw = load_wine(return_X_y=True)
    yield "wine class 0 vs rest", Xw, (yw == 0).astype(int)
    yield "moons 2k (noise 0.25)", *make_moons(2000, noise=0.25, random_state=0)
    yield "circles 3k", *make_circles(3000, noise=0.1, factor=0.5, random_state=0)
    yield "synthetic 5k d=20", *make_classification(5000, 20, n_informative=8, random_state=0)
    yield "synthetic 2k d=50 imbalanced", *make_classification(2000, 50, n_informative=10, flip_y=0.05,
                                                               weights=[0.7], random_state=2)
    yield "synthetic 20k d=20", *make_classification(20000, 20, n_informative=8, random_state=1)
    yield "synthetic 50k d=10 noisy", *make_classification(50000, 10, n_informative=5, flip_y=0.1,
                                                           random_state=3)


def scale_rows(X):
    """Public preprocessing for the benchmarks: columns standardised, then rows scaled to L2 norm at most 1."""
    X = StandardScaler().fit_transform(X)
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def prepare(X, y):
    """The benchmarks' protocol: rows standardised, scaled to L2 norm at most 1, a 70/30 stratified split (seed 0)."""
    return train_test_split(scale_rows(X), y, test_size=0.3, random_state=0, stratify=y)


#: The help text of every script's ``--quick``.
QUICK_HELP = "smoke run: the whole code path on tiny sizes, in seconds; writes into a temporary directory"


def have(module: str) -> bool:
    """Whether an optional peer (``optuna``, ``diffprivlib``, ``opacus``...) is importable here."""
    return importlib.util.find_spec(module) is not None


def quick_tasks(tasks, quick: bool, n: int = 1, rows: int = 600, skip: int = 0):
    """``tasks`` (``(name, X, y)`` triples) unchanged; in a smoke run, ``n`` of them after ``skip``, each cut to its
    first ``rows`` rows (the bundled and generated sets used here come shuffled)."""
    if not quick:
        yield from tasks
        return
    for name, X, y in itertools.islice(tasks, skip, skip + n):
        yield name, X[:rows], y[:rows]
