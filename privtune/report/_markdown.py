"""Markdown rendering of a :class:`~privtune.report.TuningReport` (internal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from privtune.report import _tables as T

if TYPE_CHECKING:  # pragma: no cover
    from privtune.report._data import ReportData

__all__ = ["render_markdown", "SEEDED_WARNING"]

SEEDED_WARNING = ("**Seeded run — reproducible, not for release.** Anyone holding the seed can remove the noise; "
                  "rerun with random_state=None for a release.")


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(table: T.Table) -> list[str]:
    headers, rows = table
    out = ["| " + " | ".join(_esc(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return out + [""]


def render_markdown(r: ReportData) -> str:
    """The report as Markdown: headline, warnings, then budget, ledger, bounds and details tables.

    Parameters
    ----------
    r : TuningReport

    Returns
    -------
    str
    """
    label = str(r.guarantee.get("label"))
    lines = [f"# privtune tuning report — {r.estimator.get('name')}, method `{r.method}`", "",
             f"**Guarantee: {label}.** {r.guarantee.get('statement', '')}", ""]
    if r.is_conditional:
        lines += [f"> **Warning — conditional guarantee.** This result {T.CONDITIONAL_WARNING}.", ""]
    if r.is_seeded:
        lines += [f"> {SEEDED_WARNING}", ""]
    lines += ["## Headline", ""]
    head = T.headline(r)
    lines += _table((["item", "value"], [[k, f"**{v}**" if k == "Guarantee" else v] for k, v in head]))

    lines += ["## Privacy budget per phase", "",
              "Phases compose (by the accountant's rules, not necessarily additively) into the totals.", ""]
    lines += _table(T.budget_table(r))

    lines += ["## Privacy ledger", ""]
    lines += _table(T.ledger_table(r))

    lines += ["## Utility bounds (score units)", ""]
    table, statement = T.utility_table(r)
    if table is None:
        lines += [f"Method `{r.method}` has no utility theorem; none is reported.", ""]
    else:
        lines += _table(table)
        if statement:
            lines += [str(statement), ""]

    lines += ["## Selection: how λ̃ was chosen", "", T.selection_statement(r)[1], ""]

    lines += ["## Noise scales and diagnostics", "", T.diagnostics_note(r), ""]
    lines += _table(T.diagnostics_table(r))

    lines += ["## Iteration history (released fields only)", ""]
    note = T.history_note(r)
    if note:
        lines += [note, ""]
    if r.release.get("trajectory_releasable"):
        lines += _table(T.history_table(r))

    lines += ["## Configuration", ""]
    lines += _table(T.configuration_table(r))
    lines += ["### Search space", ""]
    lines += _table(T.space_table(r))
    lines += [f"### Estimator `{r.estimator.get('class')}`", ""]
    lines += _table(T.estimator_table(r))
    lines += ["## Seed policy", "", f"{r.seed_policy.get('label')}" + (
        f" (random_state = {r.seed_policy.get('random_state')})" if r.seed_policy.get("random_state") is not None
        else ""), ""]
    lines += ["## Environment", ""]
    lines += _table(T.environment_table(r))
    lines += ["## Timings", "", "Time-dependent values; the only part of the report that changes between "
              "identical seeded runs.", ""]
    lines += _table(T.timings_table(r))
    lines += [f"_Report schema {r.schema_version}._", ""]
    return "\n".join(lines)
