"""Issue 39's split of ``privtune/cli.py`` into the ``privtune.cli`` package: every old name still imports.

The former module's names (its functions, constants and :class:`CLIError`) are re-exported by the package, the
console script ``privtune.cli:main`` and ``python -m privtune.cli`` keep working, and a :class:`CLIError` pickled
under its old module name still loads.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

import privtune.cli
from privtune._version import __version__
from privtune.cli import (
    _budget_command,
    _demo_command,
    _main,
    _output,
    _planning,
    _report_command,
    _tune_command,
)

# every name privtune/cli.py defined before the split, and the module now holding it
MOVED = {
    _output: ("EXIT_OK", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_BROKEN_PIPE", "CLIError", "_tuning_report_class",
              "_report_of_search", "_write_report", "_report_from_study", "_fmt_params", "_budget_lines",
              "_finished_line", "_verdict_lines"),
    _planning: ("_plan_error", "_plan", "_floor4", "_fit_epsilon", "_largest_fit_epsilon"),
    _tune_command: ("_study_state", "_ledger_length", "_tune"),
    _budget_command: ("_budget", "_classes_lines"),
    _report_command: ("_report",),
    _demo_command: ("_demo", "_demo_split"),
    _main: ("_parser", "main"),
}


@pytest.mark.parametrize("module, name", [(m, n) for m, names in MOVED.items() for n in names],
                         ids=lambda x: getattr(x, "__name__", x))
def test_every_name_of_the_old_module_is_the_moved_object(module, name):
    assert getattr(privtune.cli, name) is getattr(module, name)


def test_the_package_keeps_its_public_surface():
    assert privtune.cli.__all__ == ["main"]
    assert privtune.cli.EXIT_OK == 0 and privtune.cli.EXIT_ERROR == 2
    assert privtune.cli.EXIT_INTERRUPTED == 130 and privtune.cli.EXIT_BROKEN_PIPE == 141


def test_a_cli_error_pickled_under_the_old_module_name_loads():
    # the GLOBAL opcode the former privtune/cli.py wrote for the class
    assert pickle.loads(b"cprivtune.cli\nCLIError\n.") is _output.CLIError
    err = pickle.loads(pickle.dumps(privtune.cli.CLIError("search.epsilon: too small")))
    assert type(err) is privtune.cli.CLIError and str(err) == "search.epsilon: too small"


def test_the_console_entry_point_and_python_m_still_run():
    from importlib.metadata import entry_points

    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "privtune"]
    assert script.value == "privtune.cli:main" and script.load() is _main.main
    out = subprocess.run([sys.executable, "-m", "privtune.cli", "--version"], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == f"privtune {__version__}"
