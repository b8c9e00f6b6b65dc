"""The ``privtune`` argument parser and :func:`main`, the console script's entry point.

:func:`main` dispatches to the command modules (``_tune_command``, ``_budget_command``, ``_report_command``,
``_demo_command``) and turns their errors into one ``privtune: error:`` message and an exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from privtune.cli._budget_command import _budget
from privtune.cli._demo_command import _demo
from privtune.cli._output import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, CLIError
from privtune.cli._report_command import _report
from privtune.cli._tune_command import _tune


def _parser() -> argparse.ArgumentParser:
    from privtune._version import __version__

    p = argparse.ArgumentParser(prog="privtune", description="Differentially private hyperparameter tuning.")
    p.add_argument("--version", action="version", version=f"privtune {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tune", help="run a private search configured by a TOML file",
                       description="Run a private search configured by a TOML file (see docs/cli.md).")
    t.add_argument("config", help="the configuration file (TOML)")
    t.add_argument("--resume", action="store_true",
                   help="continue an existing study (a completed one is loaded without spending anything)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_tune)

    b = sub.add_parser("budget", help="what a configuration will spend, without reading data values",
                       description="Print the planned spend per phase and in total, the guarantee label and the "
                                   "noise of each release in score units -- without reading data values.")
    b.add_argument("config", help="the configuration file (TOML)")
    b.add_argument("--json", action="store_true", help="print the plan as JSON")
    b.set_defaults(func=_budget)

    r = sub.add_parser("report", help="re-render the report of a stored study",
                       description="Re-render the report of a study stored in a SQLite file. Without output "
                                   "options, print it as Markdown (or list the studies when there are several).")
    r.add_argument("study_file", metavar="STUDY.sqlite", help="the study storage file")
    r.add_argument("--study", default=None, metavar="NAME", help="the study to render (needed if there are several)")
    r.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    r.add_argument("--markdown", default=None, metavar="FILE", help="write the report as Markdown")
    r.add_argument("--html", default=None, metavar="FILE", help="write the report as a self-contained HTML page")
    r.set_defaults(func=_report)

    d = sub.add_parser("demo", help="tune an RBF SVM on bundled breast-cancer data with a sensitive validation set")
    d.add_argument("--method", default="auto",
                   choices=["auto", "random", "prescreen", "noisy-ucb", "gp-ucb"],
                   help="release method (default: auto, i.e. prescreen here: the training rows are public)")
    d.add_argument("--epsilon", type=float, default=1.0, help="total epsilon (default: 1.0)")
    d.add_argument("--delta", type=float, default=1e-6, help="total delta (default: 1e-6)")
    d.add_argument("--n-iter", type=int, default=30, help="evaluations (default: 30)")
    d.add_argument("--n-candidates", type=int, default=256, help="candidate set size (default: 256)")
    d.add_argument("--seed", type=int, default=None,
                   help="seed the noise (reproducible, NOT for release); default: secure noise")
    d.add_argument("--out", default="privtune-demo", metavar="DIR",
                   help="directory for demo.sqlite (one new study per run) and report.json/report.html "
                        "(overwritten by each run); default: ./privtune-demo")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=_demo)
    return p


def _is_config_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a :class:`privtune.config.ConfigError`, without importing ``privtune.config``.

    That package (and the accounting it imports) costs ``demo`` and ``report`` a third of a second; a ConfigError
    can only have been raised once its module is loaded.
    """
    schema = sys.modules.get("privtune.config._schema")
    return schema is not None and isinstance(exc, schema.ConfigError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privtune`` console script.

    Parameters
    ----------
    argv : sequence of str or None, default=None
        The arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        The exit status: 0 success, 2 invalid input (nothing spent), 130 interrupted.
    """
    from privtune.exceptions import PrivtuneError, PrivtuneWarning

    args = _parser().parse_args(argv)
    shown = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if issubclass(category, PrivtuneWarning):  # one plain line, not Python's file:line format
            print(f"privtune: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler, not at interpreter exit
        return status
    except (PrivtuneError, CLIError) as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        if len(lines) == 1:
            print(f"privtune: error: {lines[0]}", file=sys.stderr)
        else:
            print("privtune: error: " + ("invalid configuration:" if _is_config_error(exc) else ""),
                  *(f"  {ln}" for ln in lines), sep="\n", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("\nprivtune: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``privtune budget | head``): stop quietly, as a command killed by SIGPIPE
        # would, and keep the interpreter's final flush from printing a second error.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    finally:
        warnings.showwarning = shown
