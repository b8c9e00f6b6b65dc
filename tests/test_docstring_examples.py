"""Every ``>>>`` example in privtune's docstrings runs and prints what it shows (doctest, one test per module).

The suite's autouse guard (conftest.py) also fails an example that moves numpy's or torch's global RNG.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import privtune

_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(privtune.__path__, "privtune."):
        module = importlib.import_module(info.name)
        if any(t.examples for t in doctest.DocTestFinder().find(module)):
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_the_examples_are_found():
    # the estimators, mechanisms and search all carry examples; an empty list would make the test below vacuous
    assert len(MODULES) >= 20
    assert {"privtune.model_selection._search", "privtune.svm._rbf", "privtune.mechanisms.gaussian"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    for test in doctest.DocTestFinder().find(module):
        if test.examples:
            runner.run(test, out=lambda text: None)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed in {name}"
