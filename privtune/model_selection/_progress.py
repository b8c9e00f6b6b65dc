"""The one-line progress display of :class:`~privtune.model_selection.PrivateSearchCV` (``verbose``)."""

from __future__ import annotations

import sys
import time
from typing import Any


class _Progress:
    """A one-line progress display on stderr (public quantities only)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.start = total, enabled, time.perf_counter()

    def _draw(self, done: int, text: str) -> None:
        if not self.enabled:
            return
        width = 24
        filled = int(width * min(done, self.total) / max(self.total, 1))
        sys.stderr.write(f"\r[privtune] [{'#' * filled}{'.' * (width - filled)}] {text} "
                         f"({time.perf_counter() - self.start:.1f} s)")
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
