"""A self-contained HTML page for a :class:`~privtune.report.TuningReport` (internal).

One file: inline CSS, figures as base64 PNG data URIs, no script, no font or
image fetched from anywhere.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from privtune.report import _plots as P
from privtune.report import _tables as T
from privtune.report._canonical import fmt

if TYPE_CHECKING:  # pragma: no cover
    from privtune.report._data import ReportData

__all__ = ["render_html"]

_CSS = """
:root { --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --bg:#f8fafc; --card:#ffffff;
        --ok:#15803d; --ok-bg:#dcfce7; --warn:#b45309; --warn-bg:#fef3c7; --bad:#b91c1c; --bad-bg:#fee2e2; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink); line-height:1.5;
       font:15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 0 24px 48px; }
header.top { background:#0f172a; color:#f8fafc; padding:22px 0; margin-bottom:20px; }
header.top .inner { max-width:1040px; margin:0 auto; padding:0 24px; display:flex; align-items:center;
                    justify-content:space-between; gap:16px; flex-wrap:wrap; }
header.top h1 { margin:0; font-size:24px; font-weight:650; letter-spacing:.2px; }
header.top .sub { margin:2px 0 0; color:#cbd5e1; font-size:14px; }
.badge { display:inline-block; padding:6px 14px; border-radius:999px; font-weight:700; font-size:14px;
         text-transform:uppercase; letter-spacing:.6px; }
.badge.unconditional { background:var(--ok-bg); color:var(--ok); border:2px solid var(--ok); }
.badge.conditional { background:var(--warn-bg); color:var(--warn); border:2px solid var(--warn); }
.banner { border-radius:8px; padding:12px 16px; margin:0 0 14px; font-size:14.5px; }
.banner.seeded { background:var(--bad-bg); color:var(--bad); border:1px solid #fca5a5; }
.banner.conditional { background:var(--warn-bg); color:#78350f; border:1px solid #fcd34d; }
.banner strong { font-weight:700; }
.cards { display:grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap:12px; margin:6px 0 8px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
.card .k { color:var(--muted); font-size:12.5px; text-transform:uppercase; letter-spacing:.5px; }
.card .v { font-size:16px; font-weight:600; word-break:break-word; }
.card .v.big { font-size:22px; }
.card .n { color:var(--muted); font-size:13px; }
section { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:16px 20px;
          margin:16px 0; }
section h2 { margin:0 0 10px; font-size:18px; }
section h3 { margin:14px 0 6px; font-size:15px; }
p.note { color:var(--muted); margin:6px 0 10px; font-size:14px; }
p.notreleasable { background:#f1f5f9; border-left:4px solid #94a3b8; padding:10px 14px; margin:8px 0;
                  color:#334155; font-size:14px; }
img.plot { display:block; max-width:100%; height:auto; margin:8px auto; }
table { border-collapse:collapse; width:100%; font-size:13.5px; margin:6px 0 4px; }
th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#f1f5f9; font-weight:600; }
table.kv th:first-child, table.kv td:first-child { width: 38%; }
td { font-variant-numeric: tabular-nums; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size:13px; }
details summary { cursor:pointer; color:#1d4ed8; margin:4px 0; }
footer { color:var(--muted); font-size:12.5px; text-align:center; margin-top:24px; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table(table: T.Table) -> str:
    headers, rows = table
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    cls = ' class="kv"' if len(headers) == 2 else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(data: str, alt: str) -> str:
    return f'<img class="plot" alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _section(title: str, *parts: str) -> str:
    return f"<section><h2>{_e(title)}</h2>{''.join(parts)}</section>"


def _cards(r: ReportData) -> str:
    rel, conf = r.release, r.configuration
    noise = rel.get("noise", {})
    params = rel.get("params")
    ptxt = "<br>".join(f"<code>{_e(k)}</code> = {_e(fmt(v, 4) if not isinstance(v, str) else v)}"
                       for k, v in T._ordered(params, T.space_names(r))) if params else "— (none released)"
    score = rel.get("score")
    sd = noise.get("score_noise_std")
    best = rel.get("best_score")
    shown = best if best is not None else score  # the release clipped to the declared bounds
    stxt = "—" if score is None else fmt(shown, 4) + (f" ± {fmt(sd, 2)}" if sd is not None else "")
    snote = ("± one noise sd (score units); clipped to the declared bounds" if sd is not None and score is not None
             else "this run releases no score")
    if best is not None and score is not None and best != score:
        snote += f" from the raw release {fmt(score, 5)}"
    tot, spent = r.budget.get("total", {}), r.budget.get("spent", {}).get("overall", {})
    cards = [("Released hyperparameters", ptxt, False, f"λ̃, chosen by {r.method}"),
             (f"Released score · {conf.get('scoring')}", _e(stxt), True, _e(snote)),
             ("Total budget", _e(f"ε = {fmt(tot.get('epsilon'), 4)}, δ = {fmt(tot.get('delta'), 3)}"), False,
              _e(f"spent ε = {fmt(spent.get('epsilon'), 4)}, δ = {fmt(spent.get('delta'), 3)}")),
             ("Seed policy", _e(r.seed_policy.get("label")), False,
              "noise from the OS CSPRNG" if not r.is_seeded else
              _e(f"random_state = {r.seed_policy.get('random_state')}"))]
    out = "".join(f'<div class="card"><div class="k">{_e(k)}</div><div class="v{" big" if big else ""}">{v}</div>'
                  f'<div class="n">{n}</div></div>' for k, v, big, n in cards)
    verdict = T.score_verdict(r)
    warn = f'<div class="banner conditional"><strong>Score release.</strong> {_e(verdict)}</div>' if verdict else ""
    return f'<div class="cards">{out}</div>{warn}'


def _banners(r: ReportData) -> str:
    out = []
    if r.is_seeded:
        out.append('<div class="banner seeded"><strong>Seeded — not for release.</strong> This run used '
                   "random_state = " + _e(r.seed_policy.get("random_state")) + ": it is exactly reproducible, "
                   "and anyone holding the seed can remove the noise. Rerun with random_state=None to publish."
                   "</div>")
    if r.is_conditional:
        out.append(f'<div class="banner conditional"><strong>Conditional guarantee.</strong> This result '
                   f"{_e(T.CONDITIONAL_WARNING)}.</div>")
    return "".join(out)


def _history(r: ReportData) -> str:
    note = T.history_note(r)
    out = f'<p class="notreleasable">{_e(note)}</p>' if note else ""
    if r.release.get("trajectory_releasable"):
        out += (f"<details><summary>{len(r.history)} iterations (released fields only)</summary>"
                f"{_table(T.history_table(r))}</details>")
    return out


def render_html(r: ReportData) -> str:
    """The report as one self-contained HTML page with four kinds of figure.

    Parameters
    ----------
    r : TuningReport

    Returns
    -------
    str

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    label = str(r.guarantee.get("label"))
    title = f"privtune tuning report — {r.estimator.get('name')} ({r.method})"

    scores = P.scores_plot(r)
    if scores is not None:
        scores_part = (_img(scores, "released scores over iterations")
                       + '<p class="note">Each point is a differentially private release; error bars are ±2 '
                       "noise standard deviations. The dashed line is the final released score.</p>")
    else:
        scores_part = f'<p class="notreleasable">{_e(T.history_note(r) or T.TRAJECTORY_NOT_RELEASABLE)}</p>'

    budget = P.budget_plot(r)
    budget_part = (_img(budget, "budget spent per phase") if budget else "") + (
        '<p class="note">Phases compose (by the accountant’s rules, not necessarily additively) into the '
        "overall total.</p>") + _table(T.budget_table(r))

    cand = P.candidates_plot(r)
    cand_part = (_img(cand, "candidate set and the released choice") if cand else "") + \
        f'<p class="note">{_e(T.candidates_note(r))}</p>' + _table(T.space_table(r))

    sel, kind = P.selection_plot(r)
    statement = T.selection_statement(r)[1]
    sel_text = f'<p class="{"note" if kind == "evidence" else "notreleasable"}">{_e(statement)}</p>'
    sel_part = (_img(sel, "selection") if sel else "") + sel_text

    util, statement = T.utility_table(r)
    util_part = (f'<p class="note">Method {_e(r.method)} has no utility theorem; none is reported.</p>'
                 if util is None else _table(util) + (f'<p class="note">{_e(statement)}</p>' if statement else ""))

    body = [
        f'<header class="top"><div class="inner"><div><h1>privtune tuning report</h1>'
        f'<p class="sub">{_e(r.estimator.get("name"))} · method <b>{_e(r.method)}</b> · scoring '
        f'{_e(r.configuration.get("scoring"))}</p></div>'
        f'<span class="badge {_e(label)}">{_e(label)} guarantee</span></div></header>',
        "<main>", _banners(r),
        "" if r.is_conditional else
        f'<p class="note"><strong>Guarantee: {_e(label)}.</strong> {_e(r.guarantee.get("statement", ""))}</p>',
        _cards(r),
        *([_section("Released scores over iterations", scores_part)] if scores is not None else
          [_section("What this method releases",
                    f'<p class="note">{_e(T.history_note(r) or T.TRAJECTORY_NOT_RELEASABLE)} Released: the '
                    "chosen point of the public candidate set below (and its score).</p>", cand_part)]),
        _section("Privacy budget", budget_part),
        *([_section("Candidate set and the released choice", cand_part)] if scores is not None else []),
        _section("Selection", sel_part),
        _section("Utility bounds (score units)", util_part),
        _section("Privacy ledger", _table(T.ledger_table(r))),
        _section("Iteration history", _history(r)),
        _section("Noise scales and diagnostics", f'<p class="note">{_e(T.diagnostics_note(r))}</p>',
                 _table(T.diagnostics_table(r))),
        _section("Configuration", _table(T.configuration_table(r)),
                 f"<h3>Estimator <code>{_e(r.estimator.get('class'))}</code></h3>", _table(T.estimator_table(r))),
        _section("Environment", _table(T.environment_table(r))),
        _section("Timings", '<p class="note">Time-dependent values: the only part of the report that changes '
                 "between identical seeded runs.</p>", _table(T.timings_table(r))),
        f"<footer>privtune TuningReport · schema {_e(r.schema_version)}</footer>",
        "</main>",
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
