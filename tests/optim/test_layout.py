"""The layout of :mod:`privtune.optim` (issue 39): one subpackage per paper, old module paths still resolve.

Before issue 39 ``privtune/optim/`` was one flat directory. Every public name keeps its import path, and every
old module path is an alias of the module that now holds its code, so that objects pickled by an earlier
privtune (a class is recorded by its module path) still load and old imports keep working.
"""

from __future__ import annotations

import importlib
import pathlib
import pickle

import numpy as np
import pytest

import privtune.optim as optim

#: Each module path of the flat layout -> the module holding its code now.
OLD_TO_NEW = {
    "privtune.optim._accelerated_plan": "privtune.optim.accelerated._plan",
    "privtune.optim._schedules": "privtune.optim.accelerated._schedules",
    "privtune.optim._line_search_accounting": "privtune.optim.line_search._accounting",
    "privtune.optim._line_search_loop": "privtune.optim.line_search._loop",
    "privtune.optim._line_search_objective": "privtune.optim.line_search._objective",
    "privtune.optim._line_search_step": "privtune.optim.line_search._step",
    "privtune.optim._second_order_plan": "privtune.optim.second_order._plan",
    "privtune.optim._second_order_steps": "privtune.optim.second_order._steps",
    "privtune.optim._nonconvex": "privtune.optim.second_order._nonconvex",
    "privtune.optim.piecewise_core": "privtune.optim.piecewise._core",
    "privtune.optim.piecewise_sampling": "privtune.optim.piecewise._sampling",
}

#: The classes defined in each old module before the move (``grep "^class "`` at commit b29cc9e), by old path.
CLASSES_BEFORE = {
    "privtune.optim._accelerated_plan": ["_Plan"],
    "privtune.optim._schedules": ["Schedule"],
    "privtune.optim.line_search": ["LineSearchResult"],
    "privtune.optim._line_search_accounting": ["Scheme", "ZcdpFilter", "RenyiFilter", "AdaptivePlan", "FixedPlan",
                                               "GaussianSparseVector"],
    "privtune.optim._line_search_loop": ["_Plan", "_Runner"],
    "privtune.optim._line_search_objective": ["PerExampleObjective", "MarginObjective"],
    "privtune.optim._line_search_step": ["LineSearchOutcome", "_Search"],
    "privtune.optim.piecewise_core": ["PiecewiseResult", "_Problem"],
    "privtune.optim.second_order": ["SecondOrderResult"],
    "privtune.optim._second_order_plan": ["_Rules", "_Plan"],
    "privtune.optim._second_order_steps": ["SecondOrderHistory", "_DataOracle", "_Releases", "_Trace"],
    "privtune.optim._nonconvex": ["LossConstants", "NonconvexLoss"],
}

#: The public names of each paper's module before the move; each keeps its path.
PUBLIC_BEFORE = {
    "privtune.optim.accelerated": ["dp_accelerated", "dp_gradient_descent", "dp_heavy_ball", "dp_masg", "dp_masg_opt",
                                   "dp_nesterov", "dp_nesterov_opt", "gaussian_run_multiplier"],
    "privtune.optim.line_search": ["LineSearchResult", "blsgd_privacy_event", "dp_blsgd", "MarginObjective",
                                   "PerExampleObjective", "LineSearchOutcome", "noisy_backtracking_line_search",
                                   "ETA0_FACTOR"],
    "privtune.optim.piecewise": ["pwa_box_centre", "pwa_exponential", "pwa_perturb_objective", "pwa_perturb_solution",
                                 "pwa_subgradient", "pwa_uniform", "PiecewiseResult", "solve_pwa", "pwa_objective"],
    "privtune.optim.second_order": ["SecondOrderResult", "dp_second_order", "second_order_privacy_event", "VARIANTS",
                                    "CALIBRATION_SLACK", "SecondOrderHistory", "LossConstants", "curvature_direction"],
}

DATA = pathlib.Path(__file__).parent / "data" / "optim_objects_before_issue39.pkl"


@pytest.mark.parametrize("old, new", sorted(OLD_TO_NEW.items()))
def test_an_old_module_path_is_the_module_now_holding_its_code(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)
    assert optim._MOVED_MODULES[old.rpartition(".")[2]] == new.removeprefix("privtune.optim.")


def test_every_alias_is_tested_and_no_old_file_is_left():
    assert {f"privtune.optim.{old}" for old in optim._MOVED_MODULES} == set(OLD_TO_NEW)
    here = pathlib.Path(optim.__file__).parent
    flat = sorted(p.name for p in here.glob("*.py"))
    assert flat == ["__init__.py", "_losses.py", "_result.py", "_row_storage.py", "_row_sums.py",
                    "_softmax_loss.py", "_sums.py"]


@pytest.mark.parametrize("old, names", sorted(CLASSES_BEFORE.items()))
def test_a_class_recorded_under_its_old_module_path_unpickles_to_the_class_now(old, names):
    for name in names:
        # the GLOBAL opcode an earlier privtune wrote for the class: ``c<module>\n<name>\n``
        cls = pickle.loads(f"c{old}\n{name}\n.".encode())
        assert cls is getattr(importlib.import_module(OLD_TO_NEW.get(old, old)), name)


def test_objects_pickled_before_the_move_load_and_round_trip():
    from privtune.optim.accelerated._schedules import Schedule
    from privtune.optim.line_search import LineSearchResult, MarginObjective
    from privtune.optim.line_search._accounting import Scheme
    from privtune.optim.piecewise import PiecewiseResult
    from privtune.optim.second_order import LossConstants, SecondOrderHistory, SecondOrderResult

    with DATA.open("rb") as fh:
        raw = fh.read()
    for old in ("privtune.optim.line_search", "privtune.optim.second_order", "privtune.optim.piecewise_core",
                "privtune.optim._schedules", "privtune.optim._line_search_objective",
                "privtune.optim._line_search_accounting", "privtune.optim._nonconvex",
                "privtune.optim._second_order_steps"):
        assert old.encode() in raw  # the fixture names the old paths
    objs = pickle.loads(raw)
    kinds = {"LineSearchResult": LineSearchResult, "SecondOrderResult": SecondOrderResult,
             "PiecewiseResult": PiecewiseResult, "Schedule": Schedule, "MarginObjective": MarginObjective,
             "Scheme": Scheme}
    for key, cls in kinds.items():
        assert type(objs[key]) is cls
    assert type(objs["SecondOrderResult"].history) is SecondOrderHistory
    assert type(objs["SecondOrderResult"].constants) is LossConstants
    assert objs["LineSearchResult"].x.shape == (3,) and objs["SecondOrderResult"].x.shape == (3,)
    assert objs["Scheme"] == Scheme("full", 5, 5, 1.0, 1.0, "replace_one")
    np.testing.assert_array_equal(objs["Schedule"].alphas, np.full(5, 0.5))
    again = pickle.loads(pickle.dumps(objs))
    assert again["Scheme"] == objs["Scheme"]
    np.testing.assert_array_equal(again["LineSearchResult"].iterates, objs["LineSearchResult"].iterates)


def test_an_instance_pickled_under_an_old_path_loads_in_a_fresh_interpreter(tmp_path):
    """Nothing of privtune imported beforehand: the old path alone must lead to the class."""
    import subprocess
    import sys

    code = ("import pickle, sys; objs = pickle.load(open(sys.argv[1], 'rb')); "
            "print(type(objs['PiecewiseResult']).__module__, type(objs['Scheme']).__module__)")
    out = subprocess.run([sys.executable, "-c", code, str(DATA)], capture_output=True, text=True, check=True)
    # Scheme is defined in line_search._costs since issue 39 split line_search._accounting (which re-exports it)
    assert out.stdout.split() == ["privtune.optim.piecewise._core", "privtune.optim.line_search._costs"]
    code = "import privtune.optim._line_search_step as m; print(m.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "privtune.optim.line_search._step"


def test_a_protocol_0_pickle_naming_the_old_module_loads():
    from privtune.optim.second_order._nonconvex import LossConstants

    obj = LossConstants(loss="sigmoid", data_norm=1.0, l2=0.1, B=1.0, B_g=0.25, B_H=0.1, G=1.0, M=1.0, f_low=0.0)
    text = pickle.dumps(obj, protocol=0)
    assert b"privtune.optim.second_order._nonconvex" in text
    old = text.replace(b"privtune.optim.second_order._nonconvex", b"privtune.optim._nonconvex")
    assert pickle.loads(old) == obj


@pytest.mark.parametrize("module, names", sorted(PUBLIC_BEFORE.items()))
def test_public_names_keep_their_import_paths(module, names):
    mod = importlib.import_module(module)
    for name in names:
        assert hasattr(mod, name), f"{module}.{name} is gone"
    assert set(mod.__all__) <= set(dir(mod))
    for name in optim.__all__:
        assert getattr(optim, name) is not None


@pytest.mark.parametrize("package, first_words", [
    ("privtune.optim.piecewise", "Seed 001: Han, Topcu & Pappas"),
    ("privtune.optim.accelerated", "Seed 002: Kuru, Birbil, Gürbüzbalaban & Yıldırım"),
    ("privtune.optim.line_search", "Seed 003: Chen & Lee"),
    ("privtune.optim.second_order", "Seed 004: Gao & Wright"),
])
def test_each_paper_package_says_in_two_lines_what_it_is_and_exports(package, first_words):
    doc = importlib.import_module(package).__doc__
    lines = doc.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(first_words)
    assert lines[1].startswith("Exports ")
