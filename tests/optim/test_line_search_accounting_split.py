"""Issue 39's split of ``privtune/optim/line_search/_accounting.py``: every name keeps its path, old pickles load.

``_accounting.py`` became an index of the accounting of DP-BLSGD: the batch scheme, the mechanism events and their
RDP curves moved to ``_costs``, the caps and filters to ``_filters``, the calibration to ``_calibration``, the
Gaussian NOISYBTLS (its curve and its noise) to ``_gaussian_search``. ``tests/optim/data/
line_search_accounting_before_issue39_split.pkl`` was written by the code before the split: a ``Scheme``, the
``AdaptivePlan`` of a Renyi and of a zCDP filter, a ``FixedPlan`` and a ``ZcdpFilter`` and a ``RenyiFilter`` that
each paid one gradient, every class recorded under ``privtune.optim.line_search._accounting``.
"""

from __future__ import annotations

import ast
import pathlib
import pickle
import subprocess
import sys

import pytest

from privtune.optim.line_search import _accounting, _calibration, _costs, _filters, _gaussian_search

DATA = pathlib.Path(__file__).parent / "data" / "line_search_accounting_before_issue39_split.pkl"

#: Every module-level name ``_accounting.py`` defined before the split, by the module now defining it.
NAMES_BEFORE = {
    "privtune.optim.line_search._costs": ["SAMPLINGS", "_TARGETS", "STATED_ORDERS", "MAX_WOR_ORDER", "Scheme",
                                          "noise_multiplier", "gradient_event", "search_event", "_inner",
                                          "_event_rdp_cached", "event_rdp"],
    "privtune.optim.line_search._filters": ["_conversion", "renyi_cap", "zcdp_cap", "ZcdpFilter", "RenyiFilter"],
    "privtune.optim.line_search._calibration": ["_search_budget", "_iteration_cost", "_planned_iterations_fit",
                                                "AdaptivePlan", "_E_LOW", "_E_HIGH", "_largest_e",
                                                "calibrate_adaptive", "FixedPlan", "calibrate_fixed"],
    "privtune.optim.line_search._gaussian_search": ["gaussian_search_curve", "GaussianSparseVector"],
}
MODULES = {"privtune.optim.line_search._costs": _costs, "privtune.optim.line_search._filters": _filters,
           "privtune.optim.line_search._calibration": _calibration,
           "privtune.optim.line_search._gaussian_search": _gaussian_search}


def _defined(module) -> set[str]:
    """The names a module's own source defines at top level (classes, functions, assignments)."""
    out = set()
    for node in ast.parse(pathlib.Path(module.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                out.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return out


@pytest.fixture(scope="module")
def stored():
    return pickle.loads(DATA.read_bytes())


@pytest.mark.parametrize("module, names", sorted(NAMES_BEFORE.items()))
def test_every_name_of_the_old_module_is_the_object_of_its_new_module(module, names):
    defining = MODULES[module]
    assert set(names) <= _defined(defining)
    for name in names:
        assert getattr(_accounting, name) is getattr(defining, name), name
        value = getattr(defining, name)
        if isinstance(value, type) or (callable(value) and hasattr(value, "__module__")):
            assert value.__module__ == module, name


def test_the_names_before_the_split_are_all_accounted_for():
    listed = {name for names in NAMES_BEFORE.values() for name in names}
    assert len(listed) == 28  # the module-level definitions and assignments of _accounting.py before the split
    assert set(_accounting.__all__) <= listed and _defined(_accounting) <= {"__all__"}
    for module in MODULES.values():
        assert _defined(module) <= listed


def test_objects_pickled_before_the_split_load_and_compute_the_same(stored):
    raw = DATA.read_bytes()
    assert b"privtune.optim.line_search._accounting" in raw
    assert not any(new.encode() in raw for new in MODULES)
    scheme = stored["scheme"]
    assert type(scheme) is _costs.Scheme and scheme == _accounting.Scheme.build("poisson", 1000, 0.05)
    adaptive = _accounting.calibrate_adaptive(scheme, "laplace", 11, 1.0, 1e-6, 50, "calibrated", "lbl")
    assert type(stored["adaptive"]) is _calibration.AdaptivePlan and stored["adaptive"] == adaptive
    full = _accounting.Scheme.build("full", 200, 1.0)
    assert stored["adaptive_zcdp"] == _accounting.calibrate_adaptive(full, "laplace", 11, 1.0, 1e-6, 50,
                                                                     "calibrated", "lbl")
    assert stored["adaptive_zcdp"].filter_kind == "zcdp" and adaptive.filter_kind == "renyi"
    fixed = _accounting.calibrate_fixed(full, "gaussian", 11, 1.0, 1e-6, 20, 0.3, "lbl")
    assert type(stored["fixed"]) is _calibration.FixedPlan and stored["fixed"] == fixed
    zf, rf = stored["zcdp_filter"], stored["renyi_filter"]
    assert type(zf) is _filters.ZcdpFilter and type(rf) is _filters.RenyiFilter
    assert (zf.spent, rf.spent) == stored["spent"]
    fresh = _accounting.RenyiFilter(8.0, 1.0)
    fresh.pay(_accounting.gradient_event(scheme, 0.01))
    assert fresh.spent == rf.spent
    again = pickle.loads(pickle.dumps(stored))
    assert again["fixed"] == fixed and again["scheme"] == scheme


def test_a_class_recorded_under_an_old_path_unpickles_to_the_class_now():
    for old in ("privtune.optim.line_search._accounting", "privtune.optim._line_search_accounting"):
        for name in ("Scheme", "ZcdpFilter", "RenyiFilter", "AdaptivePlan", "FixedPlan", "GaussianSparseVector"):
            # the GLOBAL opcode an earlier privtune wrote for the class: ``c<module>\n<name>\n``
            assert pickle.loads(f"c{old}\n{name}\n.".encode()) is getattr(_accounting, name)


def test_the_fixture_loads_in_a_fresh_interpreter():
    code = ("import pickle, sys; d = pickle.load(open(sys.argv[1], 'rb')); "
            "print(type(d['scheme']).__module__, type(d['fixed']).__module__, type(d['renyi_filter']).__module__)")
    out = subprocess.run([sys.executable, "-c", code, str(DATA)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["privtune.optim.line_search._costs", "privtune.optim.line_search._calibration",
                                  "privtune.optim.line_search._filters"]
