"""Deterministic matplotlib figures of a report, as base64 PNG data (internal).

matplotlib is imported lazily (it is the ``report`` extra). Figures are drawn
on the Agg canvas directly (no pyplot, no global backend switch), with fixed
rc parameters and no ``Software`` metadata, so that equal reports give
byte-identical PNGs and the HTML page is reproducible.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from privtune.report._canonical import as_float

if TYPE_CHECKING:  # pragma: no cover
    from privtune.report._data import ReportData

__all__ = ["scores_plot", "budget_plot", "candidates_plot", "selection_plot"]

_BLUE, _RED, _GREY, _GREEN, _AMBER = "#2563eb", "#dc2626", "#9ca3af", "#16a34a", "#d97706"

_RC = {
    "svg.hashsalt": "privtune-report", "font.family": "DejaVu Sans", "font.size": 10,
    "axes.titlesize": 11, "axes.titleweight": "bold", "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linestyle": "-", "legend.frameon": False,
    "figure.dpi": 100, "savefig.dpi": 100, "path.simplify": False,
}


def _require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - matplotlib is in the venv
        raise ImportError("The HTML report needs matplotlib: pip install 'privtune[report]'.") from exc
    return matplotlib


@contextmanager
def _figure(width: float, height: float, ncols: int = 1) -> Iterator[tuple[Any, Any]]:
    matplotlib = _require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, ncols)
        yield fig, axes


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None}, facecolor="white")
    return base64.b64encode(buf.getvalue()).decode("ascii")


# -- (1) released scores over iterations --------------------------------------------------
def scores_plot(r: ReportData) -> str | None:
    """Released (noisy) scores per iteration with ±2 noise sd, and the final release; None if not releasable."""
    pts = [(h["iteration"], as_float(h.get("released_score")), as_float(h.get("noise_std")) or 0.0)
           for h in r.history if as_float(h.get("released_score")) is not None]
    if not pts:
        return None
    with _figure(7.5, 3.9) as (fig, ax):
        it, y, sd = zip(*pts, strict=True)
        ax.errorbar(it, y, yerr=[2 * s for s in sd], fmt="o", color=_BLUE, ecolor="#93c5fd", capsize=3,
                    label="released observation (±2 noise sd)")
        final = as_float(r.release.get("score"))
        if final is not None and math.isfinite(final):
            fsd = as_float(r.release.get("noise", {}).get("score_noise_std")) or 0.0
            ax.axhline(final, color=_RED, linestyle="--", linewidth=1.2, label="final released score")
            ax.axhspan(final - 2 * fsd, final + 2 * fsd, color=_RED, alpha=0.08, linewidth=0)
        lo, hi = (as_float(b) for b in r.configuration.get("score_bounds", (None, None)))
        shown = False
        for b in (lo, hi):
            if b is not None and math.isfinite(b):
                ax.axhline(b, color="#374151", linewidth=1.3, linestyle="-",
                           label=None if shown else "declared score bounds (the score lies between them)")
                shown = True
        if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            ax.axhspan(lo, hi, color="#10b981", alpha=0.06, linewidth=0)
        ax.set_xlabel("iteration")
        ax.set_ylabel(f"released {r.configuration.get('scoring')}")
        ax.set_title("Released scores over iterations (each a DP release)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        fig.legend(loc="outside lower center", ncol=2, fontsize=9)
        return _png(fig)


# -- (2) budget per phase ---------------------------------------------------------------
def budget_plot(r: ReportData) -> str | None:
    """Horizontal bars: epsilon per phase, overall spent, and the declared budget as a line."""
    bars: list[tuple[str, float, str]] = []
    for p in r.phases():
        eps = as_float(r.budget["by_phase"][p].get("epsilon"))
        if eps is not None and math.isfinite(eps):
            bars.append((p or "(unnamed)", eps, _BLUE))
    overall = as_float(r.budget.get("spent", {}).get("overall", {}).get("epsilon"))
    if overall is not None and math.isfinite(overall):
        bars.append(("overall spent", overall, _GREEN))
    if not bars:
        return None
    total = as_float(r.budget.get("total", {}).get("epsilon"))
    with _figure(7.5, 1.1 + 0.45 * len(bars)) as (fig, ax):
        labels = [b[0] for b in bars][::-1]
        vals = [b[1] for b in bars][::-1]
        ax.barh(labels, vals, color=[b[2] for b in bars][::-1], height=0.6)
        for yv, v in enumerate(vals):
            ax.text(v, yv, f" {v:.4g}", va="center", fontsize=9,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0, "alpha": 0.85})
        if total is not None and math.isfinite(total):
            ax.axvline(total, color=_RED, linestyle="--", linewidth=1.2, label=f"declared budget ε = {total:.4g}")
            fig.legend(loc="outside lower center", fontsize=9)
        ax.set_xlim(0, max([*vals, total or 0.0]) * 1.22)
        ax.set_xlabel("ε")
        ax.set_title("Privacy budget spent per phase")
        ax.grid(axis="y", visible=False)
        return _png(fig)


# -- (3) candidate set over the first two dimensions ------------------------------------------
def _axis_values(spec: Mapping[str, Any], values: list[Any]) -> tuple[list[float], bool, list[str] | None]:
    """Plot coordinates of one dimension's values: (coords, log axis?, categorical tick labels)."""
    if "choices" in spec:
        choices = list(spec["choices"])
        idx = [choices.index(v) if v in choices else math.nan for v in values]
        return [float(i) for i in idx], False, [str(c) for c in choices]
    return [as_float(v) if as_float(v) is not None else math.nan for v in values], bool(spec.get("log")), None


def _set_axis(ax: Any, which: str, name: str, spec: Mapping[str, Any], log: bool, ticks: list[str] | None) -> None:
    getattr(ax, f"set_{which}label")(name + (" (log scale)" if log else ""))
    if log:
        getattr(ax, f"set_{which}scale")("log")
    if ticks is not None:
        getattr(ax, f"set_{which}ticks")(range(len(ticks)), ticks)
        getattr(ax, f"set_{which}lim")(-0.5, len(ticks) - 0.5)
    else:
        lo, hi = as_float(spec.get("low")), as_float(spec.get("high"))
        if lo is not None and hi is not None:
            pad = (hi / lo) ** 0.03 if log and lo > 0 else None
            getattr(ax, f"set_{which}lim")(*((lo / pad, hi * pad) if pad else (lo - 0.03 * (hi - lo),
                                                                                 hi + 0.03 * (hi - lo))))


def candidates_plot(r: ReportData) -> str | None:
    """Λ (grey), the evaluated points where released, and the chosen point (red star), over two dimensions."""
    c = r.candidates
    names = list(c.get("names", ()))
    if not names or not c.get("points"):
        return None
    dims = names[:2]
    specs = [r.search_space[n] for n in dims]
    cols = [[p[i] for p in c["points"]] for i in range(len(dims))]
    evaluated = [h for h in r.history if h.get("params") is not None]
    with _figure(7.5, 5.2 if len(dims) == 2 else 2.4) as (fig, ax):
        coords = [_axis_values(s, col) for s, col in zip(specs, cols, strict=True)]
        x = coords[0][0]
        y = coords[1][0] if len(dims) == 2 else [0.0] * len(x)
        what = "kept by the screening" if r.method == "prescreen" else "candidate set Λ"
        ax.scatter(x, y, s=14, color=_GREY, alpha=0.7, label=f"{what} ({c.get('n_candidates')} points)",
                   linewidths=0)
        if evaluated:
            ex = _axis_values(specs[0], [h["params"][dims[0]] for h in evaluated])[0]
            ey = (_axis_values(specs[1], [h["params"][dims[1]] for h in evaluated])[0] if len(dims) == 2
                  else [0.0] * len(ex))
            scores = [as_float(h.get("released_score")) for h in evaluated]
            if all(s is not None for s in scores):
                sc = ax.scatter(ex, ey, s=46, c=scores, cmap="viridis", edgecolors="black", linewidths=0.5,
                                label="evaluated (colour: released score)", zorder=3)
                fig.colorbar(sc, ax=ax, label="released score", shrink=0.85, pad=0.02)
            else:
                ax.scatter(ex, ey, s=40, facecolors="none", edgecolors=_BLUE, linewidths=1.2,
                           label="evaluated (data-independent order)", zorder=3)
        params = r.release.get("params")
        if params is not None:
            sx = _axis_values(specs[0], [params[dims[0]]])[0]
            sy = _axis_values(specs[1], [params[dims[1]]])[0] if len(dims) == 2 else [0.0]
            ax.scatter(sx, sy, s=260, marker="*", color=_RED, edgecolors="black", linewidths=0.8,
                       label="released choice λ̃", zorder=4)
        _set_axis(ax, "x", dims[0], specs[0], coords[0][1], coords[0][2])
        if len(dims) == 2:
            _set_axis(ax, "y", dims[1], specs[1], coords[1][1], coords[1][2])
        else:
            ax.set_yticks([])
        extra = f" (first two of {len(names)} dimensions)" if len(names) > 2 else ""
        ax.set_title(f"Candidate set and the released choice{extra}")
        fig.legend(loc="outside lower center", ncol=3, fontsize=9)
        return _png(fig)


# -- (4) selection ---------------------------------------------------------------------
def _evidence_plot(r: ReportData) -> str | None:
    """noisy-ucb: released observations per evaluated candidate; lambda~ = argmax mu_T is post-processing."""
    per: dict[tuple[Any, ...], list[float]] = {}
    sds: dict[tuple[Any, ...], float] = {}
    for h in r.history:
        s = as_float(h.get("released_score"))
        if h.get("params") is None or s is None:
            continue
        key = tuple(h["params"].values())
        per.setdefault(key, []).append(s)
        sds[key] = as_float(h.get("noise_std")) or 0.0
    if not per:
        return None
    chosen = tuple(r.release["params"].values()) if r.release.get("params") is not None else None
    keys = list(per)
    with _figure(7.5, 3.6) as (fig, ax):
        for i, k in enumerate(keys):
            m = sum(per[k]) / len(per[k])
            err = 2 * sds[k] / math.sqrt(len(per[k]))
            colour = _RED if k == chosen else _BLUE
            ax.errorbar([i], [m], yerr=[err], fmt="o", color=colour, capsize=3)
            ax.text(i, m + err, f" n={len(per[k])}", fontsize=8, ha="center", va="bottom")
        diag = r.release.get("diagnostics", {})
        pm, ps = as_float(diag.get("posterior_mean_at_selection")), as_float(diag.get("posterior_std_at_selection"))
        if chosen is not None and pm is not None:
            xi = keys.index(chosen) if chosen in keys else len(keys)
            ax.errorbar([xi + 0.25], [pm], yerr=[2 * (ps or 0.0)], fmt="s", color=_AMBER, capsize=3,
                        label="posterior mean at λ̃ (±2 sd)")
            ax.legend(loc="lower right", fontsize=9)
        ax.set_xticks(range(len(keys)), [("λ̃" if k == chosen else f"#{i + 1}") for i, k in enumerate(keys)])
        ax.set_xlabel("distinct evaluated candidates, in order of first evaluation (red: the released choice)")
        ax.set_ylabel("mean released score (±2 sd)")
        ax.set_title("Selection evidence: released observations behind λ̃")
        return _png(fig)


def _best_case_plot(r: ReportData) -> str | None:
    """EM methods: data-independent best-case selectivity against the uniform baseline."""
    d = r.release.get("diagnostics", {})
    best, uni = as_float(d.get("top_decile_mass_best_case")), as_float(d.get("top_decile_mass_uniform"))
    ent = as_float(d.get("entropy_ratio_best_case"))
    if best is None or uni is None:
        return None
    with _figure(7.5, 3.0, ncols=2) as (fig, axes):
        a, b = axes
        a.bar(["uniform", "EM, best case"], [uni, best], color=[_GREY, _BLUE], width=0.55)
        for i, v in enumerate((uni, best)):
            a.text(i, v, f"{v:.3g}", ha="center", va="bottom", fontsize=9)
        a.set_ylim(0, 1.12)
        a.set_ylabel("probability mass")
        a.set_title("Mass on the top decile of candidates")
        if ent is not None:
            ent = ent if ent > 0 else 0.0  # no "-0" label
            b.bar(["uniform", "EM, best case"], [1.0, ent], color=[_GREY, _BLUE], width=0.55)
            for i, v in enumerate((1.0, ent)):
                b.text(i, v, f"{v:.3g}", ha="center", va="bottom", fontsize=9)
            b.set_ylim(0, 1.12)
            b.set_ylabel("entropy / log(#candidates)")
            b.set_title("Selection entropy (relative)")
        else:
            b.set_axis_off()
        return _png(fig)


def selection_plot(r: ReportData) -> tuple[str | None, str]:
    """The selection figure and its kind (:func:`~privtune.report._tables.selection_statement`).

    ``"evidence"`` (noisy-ucb: the released observations behind λ̃),
    ``"best-case"`` (an exponential mechanism: its data-independent
    best-case selectivity) or ``"none"`` (random stopping: nothing about the
    selection is releasable; no figure).
    """
    from privtune.report._tables import selection_statement

    kind = selection_statement(r)[0]
    if kind == "evidence":
        return _evidence_plot(r), kind
    if kind == "best-case":
        return _best_case_plot(r), kind
    return None, kind
