"""Issue 39's split of ``privtune/optim/piecewise/_mechanisms.py``: every name it defined keeps its path.

``_mechanisms.py`` kept the three mechanisms of Han, Topcu & Pappas §4.1-4.3 (M_P, M_S, M_E) and the package's
privacy model; the DP subgradient method (Alg. 1/2) moved to ``_subgradient``, the data-independent baselines to
``_baselines``, and the result every one of them builds (``_result``, ``_PHASE``) to ``_result``. No class moved
(``PiecewiseResult`` is ``_core``'s), so pickles are unchanged. Tests that monkeypatch the solver or the samplers
through ``_mechanisms`` still reach M_P, M_S and M_E, which stayed.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

from privtune.optim import piecewise
from privtune.optim.piecewise import _baselines, _mechanisms, _result, _subgradient

#: Every module-level name ``_mechanisms.py`` defined before the split, by the module now defining it.
NAMES_BEFORE = {
    "privtune.optim.piecewise._mechanisms": ["_SAMPLERS", "_minimiser_or_centre", "_check_grid_range",
                                             "pwa_perturb_objective", "pwa_perturb_solution", "pwa_exponential"],
    "privtune.optim.piecewise._result": ["_PHASE", "_result"],
    "privtune.optim.piecewise._subgradient": ["_FLOAT_MAX", "_norms", "_step_sizes", "_score_scale",
                                              "_weighted_average", "pwa_subgradient"],
    "privtune.optim.piecewise._baselines": ["pwa_box_centre", "pwa_uniform"],
}
MODULES = {"privtune.optim.piecewise._mechanisms": _mechanisms, "privtune.optim.piecewise._result": _result,
           "privtune.optim.piecewise._subgradient": _subgradient, "privtune.optim.piecewise._baselines": _baselines}


def _defined(module) -> set[str]:
    out = set()
    for node in ast.parse(pathlib.Path(module.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


@pytest.mark.parametrize("module, names", sorted(NAMES_BEFORE.items()))
def test_every_name_of_the_old_module_is_the_object_of_its_new_module(module, names):
    defining = MODULES[module]
    assert set(names) <= _defined(defining)
    for name in names:
        assert getattr(_mechanisms, name) is getattr(defining, name), name
        if callable(getattr(defining, name)):
            assert getattr(defining, name).__module__ == module, name


def test_the_names_before_the_split_are_all_accounted_for():
    listed = {name for names in NAMES_BEFORE.values() for name in names}
    assert len(listed) == 16  # the module-level definitions and assignments of _mechanisms.py before the split
    for module in MODULES.values():
        assert _defined(module) - {"__all__"} <= listed
    # the old __all__ (three of its names were _core's) and the package's exports are the same objects
    for name in _mechanisms.__all__:
        assert getattr(_mechanisms, name) is getattr(piecewise, name), name


def test_the_names_tests_patch_through_the_old_module_are_the_ones_the_mechanisms_call():
    # tests/optim/test_piecewise.py patches these on ``_mechanisms``: M_P, M_S and M_E read them from there
    for name in ("solve_pwa", "sample_gibbs", "sample_rejection", "sample_metropolis", "Laplace", "Exponential",
                 "np"):
        assert name in _mechanisms.pwa_exponential.__globals__ and hasattr(_mechanisms, name), name
    assert _subgradient.pwa_subgradient.__globals__["Exponential"] is _mechanisms.Exponential


def test_the_split_functions_release_what_they_did():
    A = np.array([[1.0, 0.5], [-1.0, 0.25], [0.5, -1.0]])
    b = np.array([0.0, 0.1, -0.25])
    centre = _mechanisms.pwa_box_centre((-1.0, 1.0), 2)
    assert centre.method == "centre" and centre.events == () and np.array_equal(centre.x, [0.0, 0.0])
    one = _mechanisms.pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, n_iter=20,
                                      random_state=4)
    two = piecewise.pwa_subgradient(A, b, bounds=(-1.0, 1.0), epsilon=1.0, offset_bound=1.0, n_iter=20,
                                    random_state=4)
    np.testing.assert_array_equal(one.x, two.x)
    assert one.epsilon == pytest.approx(1.0) and one.delta == 0.0 and one.method == "subgradient"
    assert np.all(np.abs(_mechanisms.pwa_uniform((-1.0, 1.0), 2, random_state=5).x) <= 1.0)
