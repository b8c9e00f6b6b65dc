"""What the benchmark scripts share: where results go, and the smoke mode's output.

Every script keeps writing to ``benchmarks/results/`` wherever it sits in the tree; ``--quick`` (a smoke run on
tiny sizes) writes into a fresh temporary directory instead, so a smoke run never touches a stored result.

Each script puts the repository root on ``sys.path`` before importing this module, so that it runs both as a file
(``python benchmarks/<suite>/<script>.py``) and as a module (``python -m benchmarks.<suite>.<script>``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

#: ``benchmarks/results/``: every stored result, whatever the suite of the script that wrote it.
RESULTS = Path(__file__).resolve().parent / "results"


def output_dir(quick: bool) -> Path:
    """The directory a run writes into: ``RESULTS``, or a new temporary directory for a ``--quick`` smoke run."""
    if quick:
        return Path(tempfile.mkdtemp(prefix="privtune-bench-quick-"))
    return RESULTS
