"""The data of a :class:`~privtune.report.TuningReport`: its fields, schema, construction and JSON form (internal).

The renderers (``_tables``, ``_markdown``, ``_html``, ``_plots``) read a :class:`ReportData`; this module imports
none of them. :class:`~privtune.report.TuningReport` (``_report``) adds the rendering methods on top.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from privtune.exceptions import InvalidParameterError
from privtune.report._canonical import canon, environment, plain, safe_repr

__all__ = ["ReportData", "SCHEMA_VERSION", "MAX_STORED_CANDIDATES", "GUARANTEE_STATEMENTS", "CONDITIONAL_WARNING"]

#: Version of the report's JSON schema. Bump the major part on incompatible changes.
SCHEMA_VERSION = "1.0"

#: At most this many candidate points are stored (the first ones: grid points, then the Sobol prefix).
MAX_STORED_CANDIDATES = 4096

#: The conditional guarantee's caveat (Kusner et al. Alg. 1/2), as reports must state it.
CONDITIONAL_WARNING = ("holds only under the declared GP prior (Kusner et al. Assumption 1), with probability at "
                       "least 1 − δ")

#: What each guarantee label means, as the report states it.
GUARANTEE_STATEMENTS = {
    "conditional": (f"The guarantee {CONDITIONAL_WARNING} over that prior. It is Kusner et al.'s theorem for "
                    "the function the search observed: f(λ), the score of the first fit at λ clipped to the "
                    "declared score bounds (a candidate visited again keeps that score). The theorem assumes an "
                    "unbounded draw of the prior observed with Gaussian noise of the declared σ (gp-ucb, which "
                    "adds that noise to every observation itself) or with none (gp-ucb-exact); the scores are "
                    "clipped, so the guarantee is not proven for a run where a draw leaves the bounds "
                    "(docs/methods.md, \"What the GP methods assume\")."),
    "unconditional": "The guarantee holds for every validation set, with no modelling assumption.",
}

#: The rows an unconditional guarantee covers, by ``sensitive``.
_COVERED_ROWS = {"validation": "every validation set", "training": "every training set",
                 "both": "every training set and every validation set"}


#: The ledger phase of the planned observations a callback's stop left unrun (``privtune.bo.noisy_ucb.NOT_RUN``).
_NOT_RUN = "observations_not_run"

#: Added to the statement of a run a callback stopped early (``noisy-ucb``): what the spent figures are.
STOPPED_STATEMENT = ("The search was stopped early by a callback after {ran} of {planned} observations. The "
                     "observations not run are charged as planned (phase \"observations_not_run\"), so the spent "
                     "figures are the whole plan's: a stop decided on released values is bounded by the whole plan, "
                     "not by the part that ran.")


def _guarantee_statement(label: str, sensitive: Any, ledger: Any = ()) -> str:
    """:data:`GUARANTEE_STATEMENTS`' text, naming the rows it covers when training rows are sensitive too.

    When the ledger holds observations a callback's stop left unrun, :data:`STOPPED_STATEMENT` follows.
    """
    text = GUARANTEE_STATEMENTS.get(label, "")
    if label == "unconditional" and sensitive in _COVERED_ROWS:
        text = text.replace("every validation set", _COVERED_ROWS[sensitive])
    phases = [e.get("phase") for e in ledger if isinstance(e, Mapping)]
    unrun = phases.count(_NOT_RUN)
    if unrun:
        ran = phases.count("observations")
        text += " " + STOPPED_STATEMENT.format(ran=ran, planned=ran + unrun)
    return text


_TOP_LEVEL = ("schema_version", "environment", "estimator", "method", "configuration", "search_space",
              "candidates", "guarantee", "budget", "ledger", "release", "history", "seed_policy", "timings")


def _dimension_spec(dim: Any) -> dict[str, Any]:
    kind = type(dim).__name__
    spec: dict[str, Any] = {"type": kind, "repr": safe_repr(dim)}
    if hasattr(dim, "choices"):
        spec["choices"] = [_json_scalar(c) for c in dim.choices]
    else:
        for name in ("low", "high", "log"):
            if hasattr(dim, name):
                spec[name] = getattr(dim, name)
    return spec


def _json_scalar(v: Any) -> Any:
    """A hyperparameter value as a JSON scalar (non-JSON choices such as classes become their repr)."""
    c = canon(v)
    return c if (c is None or isinstance(c, (bool, int, float, str))) else safe_repr(v)


def _display_name(est: Any) -> str:
    """The estimator's name for headings: a pipeline is named by its final step, its steps in brackets."""
    steps = getattr(est, "steps", None)
    if isinstance(steps, list) and steps and all(isinstance(s, tuple) and len(s) == 2 for s in steps):
        kinds = [type(s[1]).__name__ for s in steps if s[1] not in (None, "passthrough")]
        if kinds:
            return f"{kinds[-1]} (Pipeline: {' → '.join(kinds)})"
    return type(est).__name__


def _int_seed(random_state: Any) -> int | None:
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return None


_R = TypeVar("_R", bound="ReportData")


@dataclass(frozen=True)
class ReportData:
    """The fields of a tuning report and what is computed from them alone (see :class:`TuningReport`)."""

    schema_version: str
    environment: Any
    estimator: Any
    method: str
    configuration: Any
    search_space: Any
    candidates: Any
    guarantee: Any
    budget: Any
    ledger: Any
    release: Any
    history: Any
    seed_policy: Any
    timings: Any = field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, canon(getattr(self, f.name)))
        if not isinstance(self.schema_version, str) or not self.schema_version.startswith("1."):
            raise InvalidParameterError(
                f"TuningReport supports schema versions 1.x. Got {self.schema_version!r} instead.")

    def __hash__(self) -> int:
        return hash(self.to_json())

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_search(cls: type[_R], search: Any) -> _R:
        """Build the report of a fitted :class:`~privtune.model_selection.PrivateSearchCV`.

        Parameters
        ----------
        search : PrivateSearchCV
            A fitted search (``summary_``, ``release_`` and ``candidates_`` set).

        Returns
        -------
        TuningReport

        Raises
        ------
        InvalidParameterError
            If ``search`` is not fitted.

        Notes
        -----
        **Privacy.** Reads only the search's public configuration, its candidate
        set and its releases (``summary_``, ``release_``); never a raw score, never
        the data. Spends nothing.
        """
        missing = [a for a in ("summary_", "release_", "candidates_") if not hasattr(search, a)]
        if missing:
            raise InvalidParameterError(
                f"TuningReport.from_search needs a fitted PrivateSearchCV; {type(search).__name__} lacks "
                f"{missing}. Call fit first.")
        rep, rel, cands = search.summary_, search.release_, search.candidates_
        conf = dict(rep["configuration"])
        est = search.estimator
        names = list(cands.space.names)
        points = [[_json_scalar(p[n]) for n in names]
                  for p in (cands[i] for i in range(min(len(cands), MAX_STORED_CANDIDATES)))]
        seed = _int_seed(getattr(search, "random_state", None)) if rel.seeded else None
        rel_dict = rel.to_dict()
        timings: dict[str, Any] = {
            "created_utc": getattr(search, "_started_utc", None)
            or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        # Only timings of work on public data: the refit on public training rows (refit_time_ is None when the
        # training rows are sensitive). The search's own time is never released: scoring sensitive rows (their
        # row-isolation fallback), a raw-score trajectory or a secret number of runs can make it depend on a row.
        if getattr(search, "refit_time_", None) is not None:
            timings["refit_seconds"] = float(search.refit_time_)
        return cls(
            schema_version=SCHEMA_VERSION,
            environment=environment(),
            estimator={"class": f"{type(est).__module__}.{type(est).__qualname__}", "name": _display_name(est),
                       "params": {k: safe_repr(v) for k, v in est.get_params(deep=False).items()}},
            method=rel.method,
            configuration={
                "epsilon": conf["epsilon"], "delta": conf["delta"], "n_iter": conf["n_iter"],
                "scoring": conf["scoring"], "score_bounds": conf["score_bounds"],
                "score_sensitivity": conf["score_sensitivity"], "sensitive": conf["sensitive"],
                "relation": conf["relation"], "n_validation": conf["n_validation"], "n_train": conf["n_train"],
                "method_params": {k: safe_repr(v) for k, v in sorted(dict(search.method_params or {}).items())},
            },
            search_space={n: _dimension_spec(d) for n, d in cands.space.items()},
            candidates={"n_candidates": len(cands), "n_duplicates": int(getattr(cands, "n_duplicates", 0)),
                        "seed": seed, "names": names, "points": points,
                        "points_truncated": len(cands) > MAX_STORED_CANDIDATES, "selected_index": rel.index,
                        "source": ("scrambled Sobol design (seeded by the search's random_state, its second "
                                   "numpy stream) after any user grid; data-independent"
                                   + ("; then the best of a random subset of it, ranked by cross-validation on the "
                                      "public training rows (independent of the sensitive validation rows)"
                                      if rel.method == "prescreen" else "")
                                   + ("; then the best of it ranked by cross-validation on public proxy rows "
                                      "(X_proxy, y_proxy; no privacy cost)"
                                      if getattr(search, "proxy_screening_", None) else "")),
                        **({"proxy_screening": dict(search.proxy_screening_)}
                           if getattr(search, "proxy_screening_", None) else {})},
            guarantee={"label": rel.guarantee,
                       "statement": _guarantee_statement(rel.guarantee, conf["sensitive"], rep["ledger"])},
            budget={"total": {"epsilon": conf["epsilon"], "delta": conf["delta"]},
                    "spent": rep["privacy_spent"], "by_phase": rep["spent_by_phase"]},
            ledger=rep["ledger"],
            release={"params": rel_dict["params"], "index": rel.index, "score": rel_dict["score"],
                     "best_score": getattr(search, "best_score_", None), "noise": rel_dict["noise"],
                     "utility_bounds": rel_dict["utility_bounds"], "diagnostics": rel_dict["diagnostics"],
                     "n_iter": rel.n_iter, "spent": rel_dict["spent"],
                     "trajectory_releasable": any(h.params is not None for h in rel.history)},
            history=rel_dict["history"],
            seed_policy={"label": rel.seed_policy, "seeded": bool(rel.seeded), "random_state": seed},
            timings=timings,
        )

    @classmethod
    def from_dict(cls: type[_R], d: Mapping[str, Any]) -> _R:
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        InvalidParameterError
            If a top-level section is missing or unknown, or the schema version is not 1.x.
        """
        if not isinstance(d, Mapping):
            raise InvalidParameterError(f"TuningReport.from_dict needs a mapping. Got {type(d).__name__}.")
        missing = [k for k in _TOP_LEVEL if k not in d and k != "timings"]
        unknown = sorted(set(d) - set(_TOP_LEVEL))
        if missing or unknown:
            raise InvalidParameterError(
                f"Not a TuningReport dict: missing sections {missing}, unknown sections {unknown}.")
        return cls(**{k: d[k] for k in _TOP_LEVEL if k in d})

    @classmethod
    def from_json(cls: type[_R], text: str | bytes) -> _R:
        """Inverse of :meth:`to_json` (``TuningReport.from_json(r.to_json()) == r``)."""
        return cls.from_dict(json.loads(text))

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-safe dict of every section (``timings`` included)."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report as JSON: sorted keys, floats by ``repr``, no ``NaN``/``Infinity`` literals.

        Parameters
        ----------
        indent : int or None, default=2

        Returns
        -------
        str
            Deterministic text: equal reports give byte-identical JSON.
        """
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, allow_nan=False, ensure_ascii=True) + "\n"

    def without_timings(self: _R) -> _R:
        """A copy with an empty :attr:`timings` section (the part covered by the reproducibility contract)."""
        return dataclasses.replace(self, timings={})

    # -- convenience views used by the renderers ---------------------------------------------
    @property
    def is_conditional(self) -> bool:
        """True when the guarantee is conditional (Kusner et al. Alg. 1/2)."""
        return self.guarantee.get("label") == "conditional"

    @property
    def is_seeded(self) -> bool:
        """True when the run was seeded: reproducible, **not for release**."""
        return bool(self.seed_policy.get("seeded"))

    def phases(self) -> list[str]:
        """Phases of ``budget["by_phase"]`` in ledger order (then any others, sorted)."""
        by_phase = self.budget.get("by_phase", {})
        order = list(dict.fromkeys(e.get("phase", "") for e in self.ledger))
        first = [p for p in order if p in by_phase]
        return first + sorted(p for p in by_phase if p not in first)
