"""The ``privtune`` command line.

Commands
--------
``privtune tune CONFIG.toml [--resume] [--quiet]``
    Run a private search configured by a TOML file (see ``docs/cli.md``), store it
    in a resumable SQLite study and write its report.
``privtune budget CONFIG.toml [--json]``
    What the configuration will spend per phase and in total, its guarantee label
    and the noise of each release in score units -- without reading data values.
``privtune report STUDY.sqlite [--study NAME] [--json F] [--markdown F] [--html F]``
    Re-render the report of a stored study (or list the studies in the file).
``privtune demo [--out DIR]``
    Tune an RBF SVM's ``C`` and ``gamma`` on scikit-learn's bundled breast-cancer
    data with the validation split as the sensitive data; store the study and
    write its report.

Exit status: 0 on success; 2 for an invalid command line, configuration, study
or budget (nothing is spent); 130 when interrupted (a stored study can be
resumed with ``--resume``, unless its training rows are sensitive and it holds a
charge).

The package (issue 39 split the former ``cli.py`` by concept; every name it held is still importable from
``privtune.cli``): ``_main`` holds the argument parser and :func:`main`; ``_tune_command``, ``_budget_command``,
``_report_command`` and ``_demo_command`` one command each; ``_planning`` the privacy plan and its refusals naming
the configuration key; ``_output`` the exit statuses, :class:`CLIError`, report writing and printed lines.
"""

from __future__ import annotations

from privtune.cli._budget_command import _budget, _classes_lines  # noqa: F401 - re-exported
from privtune.cli._demo_command import _demo, _demo_split  # noqa: F401 - re-exported
from privtune.cli._main import _parser, main  # noqa: F401 - _parser re-exported
from privtune.cli._output import (  # noqa: F401 - re-exported
    EXIT_BROKEN_PIPE,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CLIError,
    _budget_lines,
    _finished_line,
    _fmt_params,
    _report_from_study,
    _report_of_search,
    _tuning_report_class,
    _verdict_lines,
    _write_report,
)
from privtune.cli._planning import (  # noqa: F401 - re-exported
    _fit_epsilon,
    _floor4,
    _largest_fit_epsilon,
    _plan,
    _plan_error,
)
from privtune.cli._report_command import _report  # noqa: F401 - re-exported
from privtune.cli._tune_command import _ledger_length, _study_state, _tune  # noqa: F401 - re-exported

__all__ = ["main"]
