"""What the ``privtune`` commands share: exit statuses, the usage error, report files and printed lines.

:class:`CLIError` is a usage error of the command line (exit status 2, nothing spent). The report helpers write a
search's or a stored study's :class:`~privtune.report.TuningReport` in each requested format; the formatting
helpers build the lines ``tune``, ``budget`` and ``demo`` print (released parameters, spend per phase, the
wall-clock time where it is public, the report's verdict on the noise).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a command killed by a closed pipe reports


class CLIError(Exception):
    """A usage error of the command line (exit status 2, nothing spent)."""


# -- reports ------------------------------------------------------------------------------------------
def _tuning_report_class() -> Any:
    """:class:`privtune.report.TuningReport`, or None if that module is unavailable."""
    try:
        from privtune.report import TuningReport
    except ImportError:  # pragma: no cover - the report package ships with privtune
        return None
    return TuningReport


def _report_of_search(search: Any) -> Any:
    """The report of a fitted search (its :class:`~privtune.report.TuningReport`)."""
    return search.report_


def _write_report(report: Any, outputs: Mapping[str, Path]) -> dict[str, Path]:
    """Write ``report`` (a TuningReport or a plain dict) in each requested format.

    Parameters
    ----------
    report : TuningReport or dict
    outputs : mapping of {"json", "markdown", "html": Path}

    Returns
    -------
    dict of {str: Path}
        The files written.
    """
    written: dict[str, Path] = {}
    for fmt, path in outputs.items():
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(report, Mapping):  # no TuningReport available: JSON only
            if fmt != "json":
                raise CLIError(f"writing a {fmt} report needs privtune.report, which is not available")
            text = json.dumps(report, sort_keys=True, indent=2, default=repr) + "\n"
        elif fmt == "json":
            text = report.to_json()
        elif fmt == "markdown":
            text = report.to_markdown()
        else:
            text = report.to_html()
        path.write_text(text, encoding="utf-8")
        written[fmt] = path
    return written


def _report_from_study(stored: Mapping[str, Any], config: Mapping[str, Any] | None) -> Any:
    """The TuningReport a study stores (``TuningReport.to_dict()``, written when the search completed)."""
    from privtune.report import TuningReport

    return TuningReport.from_dict(dict(stored))


# -- formatting ---------------------------------------------------------------------------------------
def _fmt_params(params: Mapping[str, Any] | None) -> str:
    if params is None:
        return "(none released)"
    return ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v!r}" for k, v in params.items())


def _budget_lines(phases: Mapping[str, Any], total: Any, indent: str = "    ") -> list[str]:
    lines = [f"{indent}{ph:<15s} epsilon = {b.epsilon:.6g}, delta = {b.delta:.3g}" for ph, b in phases.items()]
    if len(phases) > 1 and abs(sum(b.epsilon for b in phases.values()) - total.epsilon) > 1e-9:
        lines.append(f"{indent}(phases compose sub-additively: the total is bounded jointly, not summed)")
    return lines


def _finished_line(search: Any, t0: float) -> str:
    """The run's wall-clock time, only where the search's own time is shown (``search_time_`` is not None).

    For ``gp-ucb``, ``gp-ucb-exact``, ``lipschitz`` and random stopping the amount of work depends on the
    data through the algorithm (a raw-score path, the secret number of runs), so no time is printed.
    """
    if search.search_time_ is None:
        return "  finished (no wall-clock time: this method's amount of work depends on the sensitive rows)"
    return f"  finished in {time.perf_counter() - t0:.1f} s"


def _verdict_lines(search: Any) -> list[str]:
    """The report's plain-words verdict when the released score's noise dwarfs the score range (public)."""
    from privtune.report._tables import score_verdict

    verdict = score_verdict(search.report_)
    return [f"  warning: {verdict}"] if verdict else []
