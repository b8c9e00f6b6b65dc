"""The progress display of :class:`~privtune.model_selection.PrivateSearchCV` (``verbose``).

On a terminal it is one line redrawn in place (``\\r``). When stderr is not a
terminal (a log file, a pipe, a notebook's captured stream) redrawing would pile
every update onto one ever-growing line, so plain lines are written instead, at
most one per quarter of the work (4 lines per bar). Only public quantities are
shown: counts of a fixed, public amount of work, the epsilon spent, and (where
the time of the work does not depend on raw scores) the elapsed time.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

#: A non-terminal stream gets a plain line each time the work crosses one of this many equal parts.
PLAIN_LINES = 4


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class _Progress:
    """A progress display on stderr (public quantities only).

    Parameters
    ----------
    total : int
        The amount of work (public: a planned number of evaluations or fits).
    enabled : bool
        Whether anything is written.
    show_time : bool, default=True
        ``False`` where the time per step depends on raw scores (a secret search path).
    label : str, default=""
        Written before the bar (e.g. ``"screening"``).
    stream : text stream or None, default=None
        Where to write; ``None``: ``sys.stderr`` as it is when the display is created.
    """

    def __init__(self, total: int, enabled: bool, show_time: bool = True, label: str = "",
                 stream: TextIO | None = None) -> None:
        self.total, self.enabled, self.start, self.show_time = int(total), bool(enabled), time.perf_counter(), show_time
        self.label = f"{label} " if label else ""
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = _is_terminal(self.stream)
        self._drawn = False  # a terminal line is open (close ends it)
        self._part = 0  # the last part of the work a plain line was written for

    def elapsed(self) -> float:
        """Seconds since the display was created."""
        return time.perf_counter() - self.start

    def _draw(self, done: int, text: str) -> None:
        if not self.enabled:
            return
        width = 24
        share = min(done, self.total) / max(self.total, 1)
        filled = int(width * share)
        elapsed = f" ({self.elapsed():.1f} s)" if self.show_time else ""
        line = f"[privtune] {self.label}[{'#' * filled}{'.' * (width - filled)}] {text}{elapsed}"
        if self.terminal:
            self.stream.write("\r" + line)
            self._drawn = True
        else:
            part = int(PLAIN_LINES * share)
            if part <= self._part:
                return
            self._part = part
            self.stream.write(line + "\n")
        self.stream.flush()

    def __call__(self, record: Any) -> None:
        """Show a released iteration (the GP methods)."""
        self._draw(record.iteration, f"{record.iteration}/{self.total} eps spent {record.epsilon_spent:.3g}")

    def evaluated(self, done: int) -> None:
        """Count an evaluation of a fixed-size, data-independent batch (``random``'s exponential selection)."""
        self._draw(done, f"evaluated {done}/{self.total}")

    def advance(self, done: int, text: str) -> None:
        """Show ``done`` of ``total`` with a free text (public quantities only)."""
        self._draw(done, text)

    def close(self) -> None:
        """End a terminal line (plain lines are already ended)."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
        self._drawn = False
