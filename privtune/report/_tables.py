"""Tables and headline facts of a report, shared by the Markdown and HTML renderers (internal).

Every function returns plain strings (cells) built from the report's public
content only; the renderers escape and lay them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from privtune.report._canonical import as_float, fmt

if TYPE_CHECKING:  # pragma: no cover
    from privtune.report._report import TuningReport

__all__ = ["Table", "headline", "budget_table", "ledger_table", "utility_table", "diagnostics_table",
           "history_table", "configuration_table", "space_table", "estimator_table", "environment_table",
           "timings_table", "params_text", "history_note", "selection_releasable", "TRAJECTORY_NOT_RELEASABLE",
           "SELECTION_NOT_RELEASABLE", "EM_METHODS", "CONDITIONAL_WARNING"]

Table = tuple[list[str], list[list[str]]]

#: The conditional guarantee's caveat (Kusner et al. Alg. 1/2), as reports must state it.
CONDITIONAL_WARNING = ("holds only under the declared GP prior (Kusner et al. Assumption 1), with probability at "
                       "least 1 − δ")

#: Methods whose hyperparameters are chosen by an exponential mechanism over raw scores.
EM_METHODS = ("gp-ucb", "gp-ucb-exact", "lipschitz", "random")

TRAJECTORY_NOT_RELEASABLE = ("The trajectory is not releasable for this method: only its final releases are "
                             "private, so no per-iteration score is shown.")
SELECTION_NOT_RELEASABLE = ("The selection distribution is not releasable for this method: the exponential "
                            "mechanism's probabilities depend on the raw validation scores. Shown instead: its "
                            "data-independent best-case diagnostics (what the mechanism would do if the top decile "
                            "of candidates beat all others by the whole score range).")

_MAX_CELL = 160
_EVENT_META = ("type", "relation", "guarantee", "label")


def _cell(value: Any, digits: int = 4) -> str:
    text = fmt(value, digits)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def _flatten(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.extend(_flatten(v, key + "."))
        else:
            out.append((key, v))
    return out


def params_text(params: Mapping[str, Any] | None, exact: bool = False) -> str:
    """``name = value`` pairs: 4 significant digits for numbers (exact ``repr`` when ``exact``; the JSON keeps them)."""
    if params is None:
        return "— (none released)"
    return ", ".join(f"{k} = {v!r}" if exact and not isinstance(v, str) else f"{k} = {_cell(v, 4)}"
                     for k, v in params.items())


def _budget_text(b: Mapping[str, Any] | None) -> str:
    if not b:
        return "—"
    return f"ε = {fmt(b.get('epsilon'), 6)}, δ = {fmt(b.get('delta'), 3)}"


def score_verdict(r: TuningReport) -> str | None:
    """A plain-words warning when the released score's noise dwarfs the declared score range (else None).

    Public quantities only: the noise scale and the declared bounds (the same
    rule and text as the privacy plan's warning, ``score_noise_verdict``).
    """
    from privtune.model_selection._utility import score_noise_verdict

    if r.release.get("score") is None:
        return None
    sd = as_float(r.release.get("noise", {}).get("score_noise_std"))
    lo, hi = (as_float(b) for b in r.configuration.get("score_bounds", (None, None)))
    if lo is None or hi is None:
        return None
    verdict = score_noise_verdict(sd, (lo, hi))
    return None if verdict is None else verdict[0].upper() + verdict[1:]


def headline(r: TuningReport) -> list[tuple[str, str]]:
    """The headline facts: (label, text) pairs."""
    rel, conf = r.release, r.configuration
    noise = rel.get("noise", {})
    sd = noise.get("score_noise_std")
    score = rel.get("score")
    best = rel.get("best_score")
    shown = best if best is not None else score  # the release clipped to the declared bounds (post-processing)
    if score is None:
        score_text = "— (this run releases no score)"
    else:
        score_text = fmt(shown, 4) + (f" ± {fmt(sd, 3)} (noise sd, score units)" if sd is not None else "")
        if best is not None and as_float(best) != as_float(score):
            score_text += f"; clipped to the declared bounds from the raw release {fmt(score, 6)}"
    rows = [("Released hyperparameters", params_text(rel.get("params"))),
            (f"Released score ({conf.get('scoring')})", score_text)]
    verdict = score_verdict(r)
    if verdict is not None:
        rows.append(("Verdict", verdict))
    rows += [("Total budget", _budget_text(r.budget.get("total"))),
             ("Spent (overall)", _budget_text(r.budget.get("spent", {}).get("overall"))),
             ("Guarantee", str(r.guarantee.get("label"))),
             ("Seed policy", str(r.seed_policy.get("label")))]
    return rows


def budget_table(r: TuningReport) -> Table:
    """Budget per phase, then the per-role and overall totals."""
    rows = [[p, fmt(b.get("epsilon"), 6), fmt(b.get("delta"), 3)]
            for p, b in ((p, r.budget["by_phase"][p]) for p in r.phases())]
    for role in ("validation", "training", "overall"):
        b = r.budget.get("spent", {}).get(role)
        if b is not None:
            rows.append([f"total: {role}", fmt(b.get("epsilon"), 6), fmt(b.get("delta"), 3)])
    total = r.budget.get("total", {})
    rows.append(["declared budget", fmt(total.get("epsilon"), 6), fmt(total.get("delta"), 3)])
    return ["phase", "ε", "δ"], rows


def ledger_table(r: TuningReport) -> Table:
    """Every charge: index, phase, role, mechanism, its parameters, guarantee, relation, label."""
    rows = []
    for e in r.ledger:
        ev = e.get("event", {})
        params = {k: v for k, v in ev.items() if k not in _EVENT_META}
        rows.append([str(e.get("index")), str(e.get("phase") or "—"), str(e.get("role") or "—"),
                     str(ev.get("type")), _cell(params), str(ev.get("guarantee")), str(ev.get("relation")),
                     str(ev.get("label") or "")])
    return ["#", "phase", "role", "mechanism", "parameters", "guarantee", "relation", "label"], rows


def utility_table(r: TuningReport) -> tuple[Table | None, str | None]:
    """The utility bounds (score units) and their statement, or (None, None) when the method has none."""
    ub = r.release.get("utility_bounds", {})
    if not ub:
        return None, None
    rows = [[k, _cell(v, 6)] for k, v in _flatten(ub) if k != "statement"]
    return (["bound", "value"], rows), ub.get("statement")


def diagnostics_table(r: TuningReport) -> Table:
    """Noise scales (score units) and diagnostics, flattened."""
    rows = [[f"noise.{k}", _cell(v, 6)] for k, v in _flatten(r.release.get("noise", {}))]
    rows += [[k, _cell(v, 6)] for k, v in _flatten(r.release.get("diagnostics", {}))]
    return ["quantity", "value"], rows


def history_table(r: TuningReport) -> Table:
    """The iteration history (released fields only)."""
    rows = [[str(h.get("iteration")), params_text(h.get("params"), exact=False) if h.get("params") else "—",
             fmt(h.get("released_score"), 6), fmt(h.get("noise_std"), 4), fmt(h.get("epsilon_spent"), 6)]
            for h in r.history]
    return ["iteration", "params", "released score", "noise sd", "ε spent (cumulative)"], rows


def configuration_table(r: TuningReport) -> Table:
    """Declared configuration, with the candidate set summary."""
    rows = [[k, _cell(v, 6)] for k, v in r.configuration.items() if k != "method_params"]
    rows.insert(0, ["method", r.method])
    for k, v in r.configuration.get("method_params", {}).items():
        rows.append([f"method_params.{k}", _cell(v)])
    c = r.candidates
    rows.append(["candidate set size |Λ|", str(c.get("n_candidates"))])
    rows.append(["candidate duplicates dropped", str(c.get("n_duplicates"))])
    rows.append(["candidate seed", "— (secure: drawn from the OS entropy pool)" if c.get("seed") is None
                 else str(c.get("seed"))])
    return ["setting", "value"], rows


def space_table(r: TuningReport) -> Table:
    """The search space."""
    return ["hyperparameter", "dimension"], [[n, str(s.get("repr"))] for n, s in r.search_space.items()]


def estimator_table(r: TuningReport) -> Table:
    """The estimator's (repr'd) parameters."""
    return ["parameter", "value"], [[k, _cell(v)] for k, v in r.estimator.get("params", {}).items()]


def environment_table(r: TuningReport) -> Table:
    """Versions, Python and platform."""
    env = r.environment
    rows = [[k, str(v) if v is not None else "not installed"] for k, v in env.get("packages", {}).items()]
    rows += [["python", f"{env.get('python')} ({env.get('python_implementation')})"],
             ["platform", str(env.get("platform"))]]
    return ["component", "version"], rows


def timings_table(r: TuningReport) -> Table:
    """The time-dependent section."""
    return ["timing", "value"], [[k, _cell(v, 6)] for k, v in r.timings.items()]


def history_note(r: TuningReport) -> str | None:
    """Why the iteration history (or its scores) is not shown, or None when it is fully shown."""
    rel = r.release
    if rel.get("trajectory_releasable"):
        if not any(h.get("released_score") is not None for h in r.history):
            return ("The evaluated candidates are data-independent and shown; their scores are not released "
                    "(they are used only by the exponential mechanism).")
        return None
    if rel.get("n_iter") is None:
        return ("The number of runs is secret (random stopping) and is not reported; no per-iteration record "
                "is released.")
    return TRAJECTORY_NOT_RELEASABLE


def selection_releasable(r: TuningReport) -> bool:
    """True when the selection rests on released values only (post-processing: ``noisy-ucb``)."""
    return r.method not in EM_METHODS and r.release.get("trajectory_releasable", False)
