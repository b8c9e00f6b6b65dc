"""Tables and headline facts of a report, shared by the Markdown and HTML renderers (internal).

Every function returns plain strings (cells) built from the report's public
content only; the renderers escape and lay them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from privtune.report._canonical import as_float, fmt
from privtune.report._data import CONDITIONAL_WARNING

if TYPE_CHECKING:  # pragma: no cover
    from privtune.report._data import ReportData

__all__ = ["Table", "headline", "budget_table", "ledger_table", "utility_table", "diagnostics_table",
           "history_table", "configuration_table", "space_table", "estimator_table", "environment_table",
           "timings_table", "params_text", "history_note", "selection_releasable", "selection_statement",
           "candidates_note", "diagnostics_note", "TRAJECTORY_NOT_RELEASABLE", "SELECTION_NOT_RELEASABLE",
           "EVIDENCE_SELECTION", "EM_METHODS", "CONDITIONAL_WARNING"]

Table = tuple[list[str], list[list[str]]]

#: Methods whose hyperparameters are chosen by an exponential mechanism over raw scores (``random`` with random
#: stopping excepted: see :func:`selection_statement`).
EM_METHODS = ("gp-ucb", "gp-ucb-exact", "lipschitz", "random", "prescreen")

TRAJECTORY_NOT_RELEASABLE = ("The trajectory is not releasable for this method: only its final releases are "
                             "private, so no per-iteration score is shown.")
SELECTION_NOT_RELEASABLE = ("The selection distribution is not releasable for this method: the exponential "
                            "mechanism's probabilities depend on the raw validation scores. Shown instead: its "
                            "data-independent best-case diagnostics (what the mechanism would do if the top decile "
                            "of candidates beat all others by the whole score range).")

#: How ``noisy-ucb`` (any method whose selection is post-processing of its released observations) chooses.
EVIDENCE_SELECTION = ("For this method the whole trajectory is released, and λ̃ = argmax of the GP posterior mean "
                      "over the released observations is post-processing: given the releases the selection is "
                      "deterministic. Shown: what it was chosen from.")

_MAX_CELL = 160
_EVENT_META = ("type", "relation", "guarantee", "label")
#: The order of the configuration table (keys a report does not know follow, sorted).
_CONFIG_ORDER = ("epsilon", "delta", "n_iter", "scoring", "score_bounds", "score_sensitivity", "sensitive",
                 "relation", "n_validation", "n_train")


def _ordered(d: Mapping[str, Any], first: tuple[str, ...] | list[str] = ()) -> list[tuple[str, Any]]:
    """``d``'s items: the keys of ``first`` in that order, then the others sorted (never the mapping's own order).

    A report read back from its JSON has its keys sorted; ordering every table
    here makes the Markdown and HTML of a re-rendered report byte-identical to
    the first run's.
    """
    keys = [k for k in first if k in d]
    return [(k, d[k]) for k in keys + sorted(k for k in d if k not in keys)]


def space_names(r: ReportData) -> list[str]:
    """The hyperparameters in the search space's order (``candidates["names"]``)."""
    return [str(n) for n in r.candidates.get("names", ())]


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


def params_text(params: Mapping[str, Any] | None, exact: bool = False, names: list[str] | tuple[str, ...] = ()) -> str:
    """``name = value`` pairs in the order of ``names`` (the search space's), then any other name sorted.

    4 significant digits for numbers (exact ``repr`` when ``exact``; the JSON keeps them).
    """
    if params is None:
        return "— (none released)"
    return ", ".join(f"{k} = {v!r}" if exact and not isinstance(v, str) else f"{k} = {_cell(v, 4)}"
                     for k, v in _ordered(params, tuple(names)))


def _budget_text(b: Mapping[str, Any] | None) -> str:
    if not b:
        return "—"
    return f"ε = {fmt(b.get('epsilon'), 6)}, δ = {fmt(b.get('delta'), 3)}"


def score_verdict(r: ReportData) -> str | None:
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


def headline(r: ReportData) -> list[tuple[str, str]]:
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
    rows = [("Released hyperparameters", params_text(rel.get("params"), names=space_names(r))),
            (f"Released score ({conf.get('scoring')})", score_text)]
    verdict = score_verdict(r)
    if verdict is not None:
        rows.append(("Verdict", verdict))
    rows += [("Total budget", _budget_text(r.budget.get("total"))),
             ("Spent (overall)", _budget_text(r.budget.get("spent", {}).get("overall"))),
             ("Guarantee", str(r.guarantee.get("label"))),
             ("Seed policy", str(r.seed_policy.get("label")))]
    return rows


def budget_table(r: ReportData) -> Table:
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


def ledger_table(r: ReportData) -> Table:
    """Every charge: index, phase, role, mechanism, its parameters, guarantee, relation, label."""
    rows = []
    for e in r.ledger:
        ev = e.get("event", {})
        params = {k: v for k, v in ev.items() if k not in _EVENT_META}
        rows.append([str(e.get("index")), str(e.get("phase") or "—"), str(e.get("role") or "—"),
                     str(ev.get("type")), _cell(params), str(ev.get("guarantee")), str(ev.get("relation")),
                     str(ev.get("label") or "")])
    return ["#", "phase", "role", "mechanism", "parameters", "guarantee", "relation", "label"], rows


def utility_table(r: ReportData) -> tuple[Table | None, str | None]:
    """The utility bounds (score units) and their statement, or (None, None) when the method has none."""
    ub = r.release.get("utility_bounds", {})
    if not ub:
        return None, None
    rows = [[k, _cell(v, 6)] for k, v in sorted(_flatten(ub), key=lambda kv: kv[0]) if k != "statement"]
    return (["bound", "value"], rows), ub.get("statement")


def diagnostics_table(r: ReportData) -> Table:
    """Noise scales (score units) and diagnostics, flattened."""
    rows = [[f"noise.{k}", _cell(v, 6)] for k, v in sorted(_flatten(r.release.get("noise", {})), key=lambda kv: kv[0])]
    rows += [[k, _cell(v, 6)] for k, v in sorted(_flatten(r.release.get("diagnostics", {})), key=lambda kv: kv[0])]
    return ["quantity", "value"], rows


def history_table(r: ReportData) -> Table:
    """The iteration history (released fields only)."""
    names = space_names(r)
    rows = [[str(h.get("iteration")), params_text(h.get("params"), names=names) if h.get("params") else "—",
             fmt(h.get("released_score"), 6), fmt(h.get("noise_std"), 4), fmt(h.get("epsilon_spent"), 6)]
            for h in r.history]
    return ["iteration", "params", "released score", "noise sd", "ε spent (cumulative)"], rows


def configuration_table(r: ReportData) -> Table:
    """Declared configuration, with the candidate set summary."""
    rows = [[k, _cell(v, 6)] for k, v in _ordered(r.configuration, _CONFIG_ORDER) if k != "method_params"]
    rows.insert(0, ["method", r.method])
    for k, v in _ordered(r.configuration.get("method_params", {})):
        rows.append([f"method_params.{k}", _cell(v)])
    c = r.candidates
    rows.append(["candidate set size |Λ|", str(c.get("n_candidates"))])
    rows.append(["candidate duplicates dropped", str(c.get("n_duplicates"))])
    rows.append(["candidate seed", "— (secure: drawn from the OS entropy pool)" if c.get("seed") is None
                 else str(c.get("seed"))])
    return ["setting", "value"], rows


def space_table(r: ReportData) -> Table:
    """The search space."""
    return ["hyperparameter", "dimension"], [[n, str(s.get("repr"))]
                                             for n, s in _ordered(r.search_space, space_names(r))]


def estimator_table(r: ReportData) -> Table:
    """The estimator's (repr'd) parameters."""
    return ["parameter", "value"], [[k, _cell(v)] for k, v in _ordered(r.estimator.get("params", {}))]


def environment_table(r: ReportData) -> Table:
    """Versions, Python and platform."""
    from privtune.report._canonical import DISTRIBUTIONS

    env = r.environment
    rows = [[k, str(v) if v is not None else "not installed"]
            for k, v in _ordered(env.get("packages", {}), DISTRIBUTIONS)]
    rows += [["python", f"{env.get('python')} ({env.get('python_implementation')})"],
             ["platform", str(env.get("platform"))]]
    return ["component", "version"], rows


def timings_table(r: ReportData) -> Table:
    """The time-dependent section."""
    return ["timing", "value"], [[k, _cell(v, 6)] for k, v in _ordered(r.timings, ("created_utc",))]


def _screening(r: ReportData) -> Mapping[str, Any]:
    """``prescreen``'s public summary of its screening (empty for other methods)."""
    d = r.release.get("diagnostics", {}).get("prescreen")
    return d if isinstance(d, Mapping) else {}


def history_note(r: ReportData) -> str | None:
    """Why the iteration history (or its scores) is not shown, or None when it is fully shown."""
    rel = r.release
    if rel.get("trajectory_releasable"):
        if not any(h.get("released_score") is not None for h in r.history):
            if r.method == "prescreen":
                return ("The evaluated candidates are shown: the ones the screening kept, chosen by "
                        "cross-validation on the public training rows (never on a validation row); their "
                        "validation scores are not released (they are used only by the exponential mechanism).")
            return ("The evaluated candidates are data-independent and shown; their scores are not released "
                    "(they are used only by the exponential mechanism).")
        return None
    if rel.get("n_iter") is None:
        return ("The number of runs is secret (random stopping) and is not reported; no per-iteration record "
                "is released.")
    return TRAJECTORY_NOT_RELEASABLE


def selection_releasable(r: ReportData) -> bool:
    """True when the selection rests on released values only (post-processing: ``noisy-ucb``)."""
    return r.method not in EM_METHODS and r.release.get("trajectory_releasable", False)


def _selection_stopping(r: ReportData) -> bool:
    return r.method == "random" and r.release.get("diagnostics", {}).get("selection") == "random-stopping"


def _fits_text(r: ReportData) -> str:
    """How the candidates' models were fitted (with sensitive training rows: DP fits)."""
    if r.configuration.get("sensitive") in ("training", "both"):
        return " (each a differentially private fit on the sensitive training rows)"
    return ""


def selection_statement(r: ReportData) -> tuple[str, str]:
    """How λ̃ was chosen and what was released to choose it, from what the report's method releases.

    Returns
    -------
    (str, str)
        The kind of selection figure (``"evidence"``: the released
        observations behind a post-processing choice; ``"best-case"``: an
        exponential mechanism's data-independent best-case selectivity;
        ``"none"``: nothing about the selection is releasable) and the
        statement. Public content of the report only.
    """
    d = r.release.get("diagnostics", {})
    n_eval = r.release.get("n_iter")
    chosen = r.release.get("params") is not None
    if r.method == "noisy-ucb" or (selection_releasable(r) and r.method not in EM_METHODS):
        return "evidence", (EVIDENCE_SELECTION + " λ̃'s score was then released once more, with fresh Gaussian "
                            "noise.")
    if _selection_stopping(r):
        return "none", ("λ̃ is the run with the best noisy score among a secret number of runs, each a candidate "
                        "drawn uniformly from Λ" + _fits_text(r) + " and scored with Laplace noise (random "
                        "stopping, Papernot & Steinke 2022); that best noisy score is the released score. The "
                        "number of runs and the other runs' candidates and noisy scores stay secret (their secrecy "
                        "is part of the guarantee), so nothing more about the selection can be shown.")
    if r.method == "prescreen":
        sc = _screening(r)
        kept, screened, total = sc.get("kept"), sc.get("screened"), sc.get("candidate_set_size")
        source = (f"the best {kept} of {screened} candidates" if kept is not None and screened is not None
                  else "the best candidates")
        source += (f" (a data-independent random subset of a candidate set of {total})" if total is not None
                   else " (a data-independent random subset of the candidate set)")
        return "best-case", (
            f"λ̃ was drawn by the exponential mechanism over the validation scores of the {n_eval} candidates the "
            f"screening kept: {source}, ranked by cross-validation on the public training rows, so the kept "
            "candidates depend on the public training rows and never on a validation row. Then λ̃'s score alone "
            "was released, with Laplace noise. The screening released nothing and spent nothing; no validation "
            "score other than λ̃'s noisy one was released. " + SELECTION_NOT_RELEASABLE)
    if r.method == "random":
        return "best-case", (
            f"λ̃ was drawn by the exponential mechanism over the validation scores of the {n_eval} evaluated "
            f"candidates{_fits_text(r)}, a data-independent random subset of the candidate set Λ. Then λ̃'s score "
            "alone was released, with Laplace noise; no other score was released. " + SELECTION_NOT_RELEASABLE)
    if r.method in ("gp-ucb", "gp-ucb-exact"):
        loop = ("with Gaussian observation noise added to each score (Kusner et al. Alg. 1)" if r.method == "gp-ucb"
                else "observed without noise (Kusner et al. Alg. 2)")
        best = ("the largest noisy observation" if r.method == "gp-ucb"
                else "the largest observed score from the second iteration on")
        return "best-case", (
            "λ̃ was drawn by the exponential mechanism over the GP posterior mean μ_T on Λ, which the GP-UCB loop "
            f"computed from the raw validation scores{_fits_text(r)} of the candidates it visited, {loop}. The "
            f"released score is {best} plus Laplace noise. Neither the trajectory nor μ_T is released. "
            + SELECTION_NOT_RELEASABLE)
    if r.method == "lipschitz":
        if not chosen:
            return "none", ("Only a score was released (f_BO, the best score of the GP-UCB iterations, plus Laplace "
                            "noise: Kusner et al. Alg. 3); no hyperparameters were selected (select=False).")
        return "best-case", (
            "λ̃ was drawn by the exponential mechanism over the validation scores of every candidate in Λ (each "
            "candidate's first fit). The released score is f_BO, the best score of the GP-UCB iterations, plus "
            "Laplace noise (Kusner et al. Alg. 3). Neither the trajectory nor the scores are released. "
            + SELECTION_NOT_RELEASABLE)
    # a method this report version does not know: what its release says about itself
    if selection_releasable(r):
        return "evidence", EVIDENCE_SELECTION
    has_best_case = d.get("top_decile_mass_best_case") is not None
    return ("best-case" if has_best_case else "none"), SELECTION_NOT_RELEASABLE


def candidates_note(r: ReportData) -> str:
    """The caption of the candidate set: what it is and what it depends on (public content only)."""
    c = r.candidates
    seed = "seed " + str(c.get("seed")) if c.get("seed") is not None else "secure seed (not recorded)"
    stored = f"; the first {len(c.get('points', ()))} are stored" if c.get("points_truncated") else ""
    if r.method == "prescreen":
        sc = _screening(r)
        total = sc.get("candidate_set_size")
        what = (f"{c.get('n_candidates')} candidates kept by the screening on the public training rows (the best "
                f"{sc.get('kept', c.get('n_candidates'))} of {sc.get('screened', '?')} screened from a "
                + (f"data-independent candidate set of {total}" if total is not None
                   else "data-independent candidate set")
                + "); they depend on the public training rows, never on a validation row")
    else:
        what = f"|Λ| = {c.get('n_candidates')} data-independent candidates"
    return f"{what}; {seed}{stored}. Log dimensions are drawn on log axes."


def diagnostics_note(r: ReportData) -> str:
    """What the noise scales and diagnostics are (public content only)."""
    text = "Noise scales are in score units; diagnostics are data-independent or post-processing of releases"
    if r.method == "prescreen":
        text += ("; prescreen.* summarise the screening, a function of the public training rows only (it "
                 "released nothing and spent nothing)")
    return text + "."
