"""The one-line progress display of :class:`~privtune.model_selection.PrivateSearchCV` (``verbose``)."""

from __future__ import annotations

import sys
import time
from typing import Any


class _Progress:
    """A one-line progress display on stderr (public quantities only)."""

    def __init__(self, total: int, enabled: bool, show_time: bool = True) -> None:
        """``show_time=False`` where the time per iteration depends on raw scores (a secret search path)."""
        self.total, self.enabled, self.start, self.show_time = total, enabled, time.perf_counter(), show_time

    def _draw(self, done: int, text: str) -> None:
        if not self.enabled:
            return
        width = 24
        filled = int(width * min(done, self.total) / max(self.total, 1))
        elapsed = f" ({time.perf_counter() - self.start:.1f} s)" if self.show_time else ""
        sys.stderr.write(f"\r[privtune] [{'#' * filled}{'.' * (width - filled)}] {text}{elapsed}")
        sys.stderr.flush()

    def __call__(self, record: Any) -> None:
        """Show a released iteration (the GP methods)."""
        self._draw(record.iteration, f"{record.iteration}/{self.total} eps spent {record.epsilon_spent:.3g}")

    def evaluated(self, done: int) -> None:
        """Count an evaluation of a fixed-size, data-independent batch (``random``'s exponential selection)."""
        self._draw(done, f"evaluated {done}/{self.total}")

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
