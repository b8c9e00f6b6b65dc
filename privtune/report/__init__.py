"""Reproducible tuning reports: JSON (versioned schema), Markdown and a self-contained HTML page.

:class:`TuningReport` is the public record of a fitted
:class:`~privtune.model_selection.PrivateSearchCV`: the configuration, the
candidate set, the privacy ledger and budget per phase, the released values
and the guarantee label -- never a raw score. A seeded rerun gives a
byte-identical :meth:`TuningReport.to_json` apart from its ``timings`` section.

Importing this module does not import torch or matplotlib (plots load
matplotlib lazily: ``pip install 'privtune[report]'``).

Examples
--------
>>> from privtune.report import TuningReport
>>> report = TuningReport.from_search(search)         # doctest: +SKIP
>>> paths = report.write("results/svc_study")           # doctest: +SKIP
"""

from privtune.report._report import GUARANTEE_STATEMENTS, MAX_STORED_CANDIDATES, SCHEMA_VERSION, TuningReport

__all__ = ["TuningReport", "SCHEMA_VERSION", "MAX_STORED_CANDIDATES", "GUARANTEE_STATEMENTS"]
