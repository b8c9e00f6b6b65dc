"""TuningReport: the reproducible, public record of one private search.

The report's data (its fields, schema, construction and JSON form) is :class:`~privtune.report._data.ReportData`,
which the renderers read (``_tables``, ``_markdown``, ``_html``, ``_plots``) and which imports none of them.
:class:`TuningReport` sits above both: the data plus its Markdown, HTML and file forms.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from privtune.exceptions import InvalidParameterError
from privtune.report._data import (
    CONDITIONAL_WARNING,
    GUARANTEE_STATEMENTS,
    MAX_STORED_CANDIDATES,
    SCHEMA_VERSION,
    STOPPED_STATEMENT,
    ReportData,
)
from privtune.report._html import render_html
from privtune.report._markdown import render_markdown

__all__ = ["TuningReport", "SCHEMA_VERSION", "MAX_STORED_CANDIDATES", "GUARANTEE_STATEMENTS", "STOPPED_STATEMENT",
           "CONDITIONAL_WARNING"]


@dataclass(frozen=True, eq=False)  # the fields, equality and hash of ReportData; frozen like it
class TuningReport(ReportData):
    """The public record of one private hyperparameter search (versioned schema).

    A report holds only public quantities (declared configuration, the
    candidate set, versions) and differentially private releases or their
    post-processing (released parameters and scores, noise scales, utility
    bounds, data-independent diagnostics, the released fields of the iteration
    history). No raw score computed on sensitive data ever enters it. Every
    time-dependent quantity lives in :attr:`timings` only, so that a seeded
    search rerun with the same data and versions gives a byte-identical
    :meth:`to_json` once ``timings`` is removed.

    All fields are canonical, immutable JSON-like trees (read-only dicts with
    string keys, tuples, ``None``, ``bool``, ``int``, finite ``float``,
    ``str``; non-finite floats are held as ``"nan"``, ``"inf"``, ``"-inf"``).

    Parameters
    ----------
    schema_version : str
        Version of the schema (:data:`SCHEMA_VERSION`).
    environment : mapping
        ``packages`` (distribution -> version or None), ``python``,
        ``python_implementation``, ``platform``.
    estimator : mapping
        ``class`` (qualified name), ``name`` and ``params`` (``repr`` of each
        of ``get_params(deep=False)``).
    method : str
        The release method.
    configuration : mapping
        Declared, public settings: ``epsilon``, ``delta``, ``n_iter``,
        ``scoring``, ``score_bounds``, ``score_sensitivity``, ``sensitive``,
        ``relation``, ``n_validation``, ``n_train`` (sizes are public under
        replace-one), ``method_params``.
    search_space : mapping
        Per hyperparameter (in order): ``type``, ``repr`` and ``low``/``high``/``log``
        or ``choices``.
    candidates : mapping
        The data-independent candidate set: ``n_candidates``, ``n_duplicates``,
        ``seed`` (the integer ``random_state`` when seeded, else None),
        ``names``, ``points`` (decoded values, at most
        :data:`MAX_STORED_CANDIDATES`), ``points_truncated``, ``selected_index``.
    guarantee : mapping
        ``label`` (``"unconditional"`` or ``"conditional"``) and ``statement``.
    budget : mapping
        ``total`` (the declared budget), ``spent`` (``validation``,
        ``training``, ``overall``) and ``by_phase``.
    ledger : tuple of mapping
        Every charge in order: ``index``, ``event`` (its ``to_dict``), ``phase``, ``role``.
    release : mapping
        ``params``, ``index``, ``score`` (the release, unclipped), ``best_score``
        (clipped to the score bounds: post-processing), ``noise`` (score units),
        ``utility_bounds``, ``diagnostics``, ``n_iter``, ``spent``,
        ``trajectory_releasable``.
    history : tuple of mapping
        Iteration records, released fields only (``params`` None when the
        trajectory is not releasable).
    seed_policy : mapping
        ``label`` (``"secure"`` or ``"seeded (reproducible, not for release)"``),
        ``seeded`` and ``random_state`` (the integer seed, or None).
    timings : mapping
        Time-dependent quantities only (``created_utc``: when ``fit`` started,
        before any row was read; ``refit_seconds``).

    Examples
    --------
    >>> from privtune.report import TuningReport
    >>> report = TuningReport.from_search(search)          # doctest: +SKIP
    >>> TuningReport.from_json(report.to_json()) == report  # doctest: +SKIP
    True
    """

    def to_markdown(self) -> str:
        """A human-readable Markdown summary (see :mod:`privtune.report._markdown`)."""
        return render_markdown(self)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """One self-contained HTML page with plots (inline CSS, PNG data URIs, no external request).

        Parameters
        ----------
        path : str, os.PathLike or None, default=None
            If given, the page is also written there (UTF-8).

        Returns
        -------
        str
            The page.

        Raises
        ------
        ImportError
            If matplotlib is not installed (``pip install privtune[report]``).
        """
        page = render_html(self)
        if path is not None:
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(page)
        return page

    def write(self, destination: str | os.PathLike[str], *,
              formats: tuple[str, ...] = ("json", "md", "html")) -> dict[str, str]:
        """Write the report as ``.json``, ``.md`` and ``.html`` files.

        Parameters
        ----------
        destination : str or os.PathLike
            An existing directory (files ``tuning_report.<ext>`` inside it) or a
            path prefix (files ``<prefix>.<ext>``; a trailing ``.json`` is dropped).
        formats : tuple of {"json", "md", "html"}, default=("json", "md", "html")

        Returns
        -------
        dict of {str: str}
            Format -> path written.
        """
        bad = [f for f in formats if f not in ("json", "md", "html")]
        if bad or not formats:
            raise InvalidParameterError(
                f"The 'formats' parameter of TuningReport.write must be a non-empty subset of "
                f"('json', 'md', 'html'). Got {formats!r}.")
        dest = os.fspath(destination)
        if os.path.isdir(dest) or dest.endswith(os.sep):
            os.makedirs(dest, exist_ok=True)
            prefix = os.path.join(dest, "tuning_report")
        else:
            prefix = dest[:-5] if dest.endswith(".json") else dest
            parent = os.path.dirname(prefix)
            if parent:
                os.makedirs(parent, exist_ok=True)
        written: dict[str, str] = {}
        for f in formats:
            path = f"{prefix}.{f}"
            if f == "html":
                self.to_html(path)
            else:
                text = self.to_json() if f == "json" else self.to_markdown()
                with open(path, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(text)
            written[f] = path
        return written
