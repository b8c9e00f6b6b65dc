"""Issue 39's split of ``privtune/optim/_losses.py``: every name keeps its path, objects pickled before still load.

``_losses.py`` kept the margin losses; the softmax loss (``_softmax_loss``), the sum over rows (``_row_sums``) and
the row storage (``_row_storage``) became modules of their own. ``tests/optim/data/losses_before_issue39_split.pkl``
was written by the code before the split (a ``MarginLoss``, a ``SoftmaxLoss`` and the ``ClippedRows`` of
``compact_rows``, each recorded under ``privtune.optim._losses``).
"""

from __future__ import annotations

import ast
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

import privtune.optim._losses as losses
from privtune.optim import _row_storage, _row_sums, _softmax_loss

DATA = pathlib.Path(__file__).parent / "data" / "losses_before_issue39_split.pkl"

#: Every module-level name ``_losses.py`` defined before the split, by the module now defining it.
NAMES_BEFORE = {
    "privtune.optim._losses": ["LOSSES", "MarginLoss", "get_loss"],
    "privtune.optim._softmax_loss": ["MULTINOMIAL", "MULTICLASS_HINGE", "MULTICLASS_LOSSES", "_RESIDUAL_SHRINK",
                                     "SoftmaxLoss"],
    "privtune.optim._row_sums": ["_BLOCK_BYTES", "_SUB_ROWS", "_GRADIENT_SHRINK", "_SUM_BUDGET", "_max_rows",
                                 "_check_rows", "_block_rows", "_chunk_partials", "_sub_block_sums",
                                 "_weighted_row_mean", "_weighted_row_sum"],
    "privtune.optim._row_storage": ["_CLIP_SHRINK", "_FLOAT32_SHRINK", "_FLOAT32_FLAG", "_HUGE_ROW", "_FLOAT32_NORMAL",
                                    "_F32_LOW", "_F32_HIGH", "_F32_GRADIENT_LOW", "_F32_KAPPA_LOW",
                                    "_F32_MAX_COLUMNS", "_F64_LOW", "_F64_HIGH", "_norm_count", "_fits",
                                    "storage_dtype", "check_storage", "ClippedRows", "_clip_factors", "valid_labels",
                                    "zero_non_finite", "map_into_domain", "clip_rows", "compact_rows",
                                    "l1_bound_of"],
}
MODULES = {"privtune.optim._losses": losses, "privtune.optim._softmax_loss": _softmax_loss,
           "privtune.optim._row_sums": _row_sums, "privtune.optim._row_storage": _row_storage}


@pytest.mark.parametrize("module, names", sorted(NAMES_BEFORE.items()))
def test_every_name_of_the_old_module_is_the_object_of_its_new_module(module, names):
    for name in names:
        assert getattr(losses, name) is getattr(MODULES[module], name), name
        defined = {node.name for node in ast.parse(pathlib.Path(MODULES[module].__file__).read_text()).body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        value = getattr(MODULES[module], name)
        if callable(value) and not isinstance(value, tuple):
            assert name in defined and value.__module__ == module, name


def test_the_names_before_the_split_are_all_accounted_for():
    listed = {name for names in NAMES_BEFORE.values() for name in names}
    assert set(losses.__all__) <= listed
    assert len(listed) == 43  # the module-level assignments and definitions of _losses.py before the split


def test_objects_pickled_before_the_split_load_and_compute_the_same():
    raw = DATA.read_bytes()
    assert b"privtune.optim._losses" in raw and b"_softmax_loss" not in raw and b"_row_storage" not in raw
    objs = pickle.loads(raw)
    assert type(objs["MarginLoss"]) is losses.MarginLoss
    assert type(objs["SoftmaxLoss"]) is _softmax_loss.SoftmaxLoss is losses.SoftmaxLoss
    assert type(objs["ClippedRows"]) is _row_storage.ClippedRows is losses.ClippedRows
    margin = objs["MarginLoss"]
    assert (margin.name, margin.smoothing, margin.max_slope) == ("smoothed_hinge", 0.5, 0.75)
    fresh = losses.MarginLoss("smoothed_hinge", 0.5, 0.75)
    m = np.linspace(-3.0, 3.0, 13)
    np.testing.assert_array_equal(margin.derivative(m), fresh.derivative(m))
    soft = objs["SoftmaxLoss"]
    assert (soft.n_classes, soft.max_slope, soft.clip) == (3, 0.5, losses.SoftmaxLoss(3, 0.5).clip)
    rows = objs["ClippedRows"]
    assert rows.dtype == np.float32 and rows.shape == (60, 4)
    rng = np.random.default_rng(0)  # the writer's rows: compact_rows(X, 2.0, 1.5, intercept=1.0)
    again, _ = losses.compact_rows(rng.normal(size=(60, 3)), 2.0, 1.5, mode="rows", owner="writer", intercept=1.0)
    np.testing.assert_array_equal(np.asarray(rows), np.asarray(again))


def test_the_pickle_loads_in_a_fresh_interpreter():
    code = ("import pickle, sys; objs = pickle.load(open(sys.argv[1], 'rb')); "
            "print(*(type(objs[k]).__module__ for k in ('MarginLoss', 'SoftmaxLoss', 'ClippedRows')))")
    out = subprocess.run([sys.executable, "-c", code, str(DATA)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["privtune.optim._losses", "privtune.optim._softmax_loss",
                                  "privtune.optim._row_storage"]
