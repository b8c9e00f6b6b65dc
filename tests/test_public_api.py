"""The public surface: names other code relies on, a light import, the exception hierarchy."""

import subprocess
import sys

import pytest

import privtune
from privtune import exceptions


def test_import_privtune_does_not_import_torch():
    code = "import sys, privtune, privtune.accounting, privtune.mechanisms, privtune.testing; " \
           "bad = [m for m in ('torch', 'gpytorch', 'botorch') if m in sys.modules]; print(bad); " \
           "sys.exit(1 if bad else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_exception_hierarchy():
    assert issubclass(exceptions.InvalidParameterError, ValueError)
    assert issubclass(exceptions.InvalidParameterError, TypeError)
    assert issubclass(exceptions.BudgetExceededError, exceptions.PrivtuneError)
    assert issubclass(exceptions.PrivacyLeakWarning, exceptions.PrivtuneWarning)
    assert privtune.BudgetExceededError is exceptions.BudgetExceededError


def test_budget_error_pickles_with_its_fields():
    import pickle

    from privtune.accounting import Budget

    err = exceptions.BudgetExceededError("over", requested=Budget(2.0), spent=Budget(1.0), ceiling=Budget(1.5))
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == "over" and back.ceiling == Budget(1.5)


@pytest.mark.parametrize(
    "module,names",
    [
        ("privtune.accounting", ["Budget", "Accountant"]),
        ("privtune.mechanisms", ["Laplace", "Gaussian", "Exponential", "SparseVector"]),
        ("privtune.exceptions", ["InvalidParameterError", "BudgetExceededError", "PrivacyLeakWarning"]),
        ("privtune.testing", ["audit_mechanism"]),
    ],
)
def test_public_names(module, names):
    import importlib

    mod = importlib.import_module(module)
    for name in names:
        assert hasattr(mod, name), f"{module}.{name} is missing"


def test_exceptions_module_imports_nothing_from_privtune():
    """Issue 12: privtune.exceptions imported Budget from the accounting package (a circular import)."""
    import ast
    from pathlib import Path

    import privtune.exceptions as exc_module

    tree = ast.parse(Path(exc_module.__file__).read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.split(".")[0] == "privtune"], imported
