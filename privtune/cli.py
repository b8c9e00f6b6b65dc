"""The ``privtune`` command line.

Commands
--------
``privtune tune CONFIG.toml [--resume] [--quiet]``
    Run a private search configured by a TOML file (see ``docs/cli.md``), store it
    in a resumable SQLite study and write its report.
``privtune budget CONFIG.toml [--json]``
    What the configuration will spend per phase and in total, its guarantee label
    and the noise of each release in score units -- without reading data values.
``privtune report STUDY.sqlite [--study NAME] [--json F] [--markdown F] [--html F]``
    Re-render the report of a stored study (or list the studies in the file).
``privtune demo [--out DIR]``
    Tune an RBF SVM's ``C`` and ``gamma`` on scikit-learn's bundled breast-cancer
    data with the validation split as the sensitive data; store the study and
    write its report.

Exit status: 0 on success; 2 for an invalid command line, configuration, study
or budget (nothing is spent); 130 when interrupted (a stored study can be
resumed with ``--resume``, unless its training rows are sensitive and it holds a
charge).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a command killed by a closed pipe reports


class CLIError(Exception):
    """A usage error of the command line (exit status 2, nothing spent)."""


# -- reports ------------------------------------------------------------------------------------------
def _tuning_report_class() -> Any:
    """:class:`privtune.report.TuningReport`, or None if that module is unavailable."""
    try:
        from privtune.report import TuningReport
    except ImportError:  # pragma: no cover - the report package ships with privtune
        return None
    return TuningReport


def _report_of_search(search: Any) -> Any:
    """The report of a fitted search (its :class:`~privtune.report.TuningReport`)."""
    return search.report_


def _write_report(report: Any, outputs: Mapping[str, Path]) -> dict[str, Path]:
    """Write ``report`` (a TuningReport or a plain dict) in each requested format.

    Parameters
    ----------
    report : TuningReport or dict
    outputs : mapping of {"json", "markdown", "html": Path}

    Returns
    -------
    dict of {str: Path}
        The files written.
    """
    written: dict[str, Path] = {}
    for fmt, path in outputs.items():
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(report, Mapping):  # no TuningReport available: JSON only
            if fmt != "json":
                raise CLIError(f"writing a {fmt} report needs privtune.report, which is not available")
            text = json.dumps(report, sort_keys=True, indent=2, default=repr) + "\n"
        elif fmt == "json":
            text = report.to_json()
        elif fmt == "markdown":
            text = report.to_markdown()
        else:
            text = report.to_html()
        path.write_text(text, encoding="utf-8")
        written[fmt] = path
    return written


def _report_from_study(stored: Mapping[str, Any], config: Mapping[str, Any] | None) -> Any:
    """The TuningReport a study stores (``TuningReport.to_dict()``, written when the search completed)."""
    from privtune.report import TuningReport

    return TuningReport.from_dict(dict(stored))


# -- formatting ---------------------------------------------------------------------------------------
def _fmt_params(params: Mapping[str, Any] | None) -> str:
    if params is None:
        return "(none released)"
    return ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v!r}" for k, v in params.items())


def _budget_lines(phases: Mapping[str, Any], total: Any, indent: str = "    ") -> list[str]:
    lines = [f"{indent}{ph:<15s} epsilon = {b.epsilon:.6g}, delta = {b.delta:.3g}" for ph, b in phases.items()]
    if len(phases) > 1 and abs(sum(b.epsilon for b in phases.values()) - total.epsilon) > 1e-9:
        lines.append(f"{indent}(phases compose sub-additively: the total is bounded jointly, not summed)")
    return lines


def _plan_error(exc: Exception) -> CLIError:
    """Name the configuration key behind an error raised by ``PrivateSearchCV.privacy_plan``."""
    import re

    from privtune.exceptions import BudgetExceededError

    msg = str(exc)
    if isinstance(exc, BudgetExceededError):
        if "training role" in msg:
            core = getattr(exc, "accountant_refusal", msg)  # the search's own text speaks Python
            return CLIError(f"estimator.params.epsilon (or search.n_iter, search.epsilon): the training budget "
                            f"cannot cover the training fits (every candidate fit at estimator.params.epsilon, "
                            f"paid up front): {core}")
        return CLIError(f"search.epsilon / search.delta: the budget cannot cover the planned phases: {msg}")
    m = re.search(r"'([a-z_]+)' parameter", msg)
    name = m.group(1) if m else ""
    if name == "n_validation":
        key = "data.n_validation (the validation set size)"
    elif name == "sensitive":
        key = "data.sensitive"
    elif name in ("epsilon", "delta", "n_iter", "n_candidates", "scoring", "score_bounds", "score_sensitivity",
                  "min_class_size", "method", "method_params", "candidate_grid", "n_jobs"):
        key = f"search.{name}"
    elif "method_params" in msg:
        key = "search.method_params"
    else:
        key = "search"
    return CLIError(f"{key}: {msg}")


def _plan(search: Any, n_validation: int, n_classes: int, *, split: bool) -> dict[str, Any]:
    from privtune.exceptions import BudgetExceededError, PrivtuneError

    # The search counts classes on public training labels only when they come apart from the validation rows
    # (a validation file); with sensitive training rows, or a split of one table, it uses the estimator's
    # declared label set, else K = 2 -- the same figure here, so that `budget` matches `tune`.
    k = n_classes if search.sensitive == "validation" and not split else None
    try:
        return search.privacy_plan(n_validation, n_classes=k)
    except BudgetExceededError as exc:
        err = _plan_error(exc)
        largest = _largest_fit_epsilon(search, n_validation, k) if "training role" in str(exc) else None
        if largest is not None:
            set_eps = _fit_epsilon(search)
            err = CLIError(f"{err} The largest estimator.params.epsilon this plan affords is {_floor4(largest)} "
                           f"(estimator.params.epsilon = {set_eps!r} now); or lower search.n_iter, or raise "
                           "search.epsilon. Nothing was read or spent.")
        elif "training role" in str(exc) and hasattr(search.estimator, "steps"):
            err = CLIError(f"{err} The DP scaler's fits count in every fit too: lower "
                           "estimator.scaler_params.epsilon, or search.n_iter. Nothing was read or spent.")
        raise err from None
    except PrivtuneError as exc:
        raise _plan_error(exc) from None


def _floor4(x: float) -> str:
    """``x`` rounded *down* to 4 significant digits: a printed budget a user copies must not round up."""
    import math

    step = 10.0 ** (math.floor(math.log10(x)) - 3)
    return f"{math.floor(x / step) * step:.4g}"


def _fit_epsilon(search: Any) -> Any:
    """The estimator's per-fit ``epsilon`` (``estimator.params.epsilon``; a scaler pipeline's last step's)."""
    from privtune.model_selection._training import fit_epsilon_param

    key = fit_epsilon_param(search.estimator)
    return None if key is None else search.estimator.get_params(deep=True)[key]


def _largest_fit_epsilon(search: Any, n_validation: int, n_classes: int | None) -> float | None:
    """``PrivateSearchCV.largest_fit_epsilon`` where it applies (sensitive training rows), else None."""
    from privtune.exceptions import PrivtuneError
    from privtune.model_selection._training import fit_epsilon_param

    if search.sensitive == "validation" or fit_epsilon_param(search.estimator) is None:
        return None
    try:
        return search.largest_fit_epsilon(n_validation, n_classes)
    except PrivtuneError:
        return None


# -- tune ---------------------------------------------------------------------------------------------
def _study_state(path: Path, name: str) -> str | None:
    """Status of study ``name`` in ``path`` (None if absent), without creating the file."""
    if not path.exists():
        return None
    from privtune.storage import StudyStorage

    st = StudyStorage(str(path))
    try:
        return st.status(name) if name in st.study_names() else None
    finally:
        st.close()


def _ledger_length(path: Path, name: str) -> int:
    if not path.exists():
        return 0
    from privtune.accounting import SQLiteLedger

    led = SQLiteLedger(str(path), study=name)
    try:
        return len(list(led.entries()))
    finally:
        led.close()


def _tune(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from privtune.config import load_config, load_data
    from privtune.storage._sqlite import TRAINING_LEDGER_SUFFIX

    t0 = time.perf_counter()
    cfg = load_config(args.config)  # strict validation of the whole file; nothing written
    outputs = cfg.report.outputs()
    if _tuning_report_class() is None and set(outputs) - {"json"}:  # pragma: no cover
        raise CLIError("report.html / report.markdown: privtune.report is not available; write report.json only")
    X, y, X_val, y_val = load_data(cfg.data)
    n = len(y)
    # the validation size is public: PrivateSearchCV splits floor(validation_size * n) rows off without looking
    m = len(y_val) if y_val is not None else int(math.floor((cfg.data.validation_size or 0.3) * n))
    if cfg.data.n_validation is not None and cfg.data.n_validation != m:
        raise CLIError(f"data.n_validation: declared {cfg.data.n_validation}, but the configured data give a "
                       f"validation set of {m} rows")
    search = cfg.make_search(verbose=0 if args.quiet else 1)
    if args.resume and cfg.storage.enabled:  # --resume: the search continues the study it finds (resume=True)
        search.set_params(resume=True)
    # refuses an unaffordable plan before any storage exists
    plan = _plan(search, m, cfg.data.n_classes or 2, split=cfg.data.validation is None)

    st = cfg.storage
    before = 0
    if st.enabled:
        assert st.path is not None
        state = _study_state(st.path, st.study_name)
        if args.resume and state is None:
            raise CLIError(f"storage.study_name: --resume: there is no study {st.study_name!r} in "
                           f"{str(st.path)!r} to resume; run without --resume to start it")
        spent_training_study = cfg.data.sensitive != "validation" and state is not None and (
            _ledger_length(st.path, st.study_name)
            + _ledger_length(st.path, st.study_name + TRAINING_LEDGER_SUFFIX)) > 0
        if not args.resume and spent_training_study:
            raise CLIError(f"storage.study_name: study {st.study_name!r} already exists in {str(st.path)!r} "
                           f"(status: {state}); its training rows are sensitive, so once it holds a charge it is "
                           "not resumed (its DP fits would draw new noise on them): set storage.study_name to a new "
                           "name, and count what both studies spent")
        if not args.resume and state is not None:
            raise CLIError(f"storage.study_name: study {st.study_name!r} already exists in {str(st.path)!r} "
                           f"(status: {state}); continue it with --resume, or set storage.study_name to a new name")
        before = _ledger_length(st.path, st.study_name)
    elif args.resume:
        raise CLIError("storage.enabled: --resume needs a stored study, but storage is disabled in this config")

    try:
        search.fit(X, y, X_val=X_val, y_val=y_val)
    except KeyboardInterrupt:
        if st.enabled and cfg.data.sensitive != "validation":
            print(f"\nprivtune: interrupted; the study {st.study_name!r} in {str(st.path)!r} keeps what it spent; "
                  "its training rows are sensitive, so it is not resumed once it holds a charge: start a new "
                  "storage.study_name", file=sys.stderr)
            return EXIT_INTERRUPTED
        if st.enabled:
            print(f"\nprivtune: interrupted; the study {st.study_name!r} is saved in {str(st.path)!r}: continue "
                  f"it with  privtune tune {args.config} --resume", file=sys.stderr)
            return EXIT_INTERRUPTED  # one message, not a second one from main()
        raise
    after = len(search.ledger_)
    report = _report_of_search(search)
    written = _write_report(report, outputs)

    spent = search.privacy_spent_
    new_charges = after - before if st.enabled else after
    lines = [
        f"privtune tune -- {cfg.estimator.class_path} on "
        f"{cfg.data.bundled or cfg.data.train.name}; method {search.method_}"  # type: ignore[union-attr]
        + (" (resumed)" if args.resume else ""),
        f"  released parameters: {_fmt_params(search.best_params_)}",
        f"  released {search.scorer_.name}: "
        + ("(none)" if search.best_score_ is None else f"{search.best_score_:.4f}")
        + f" (noise std {search.release_.noise.get('score_noise_std', float('nan')):.3g})",
        *_verdict_lines(search),
        "  budget spent per phase:",
        *_budget_lines(search.accountant_.spent_by_phase(), spent["validation"]),
        *([f"    {'training fits':<15s} epsilon = {spent['training'].epsilon:.6g}, delta = "
           f"{spent['training'].delta:.3g} (training role; disjoint rows: composes in parallel)"]
          if search.training_accountant_ is not None else []),
        f"  total: epsilon = {spent['overall'].epsilon:.6g}, delta = {spent['overall'].delta:.3g} "
        f"(budget epsilon = {cfg.search.epsilon:g}, delta = {cfg.search.delta:g}; planned epsilon = "
        f"{plan['total'].epsilon:.6g})",
        f"  charges made by this run: {new_charges}" + (" (the study's earlier charges cover this run: nothing "
                                                          "new spent)" if args.resume and new_charges == 0 else ""),
        f"  guarantee: {search.guarantee_} (replace-one, {cfg.data.sensitive} rows); noise: "
        f"{search.release_.seed_policy}",
    ]
    if st.enabled:
        lines.append(f"  study: {st.study_name!r} in {st.path}")
    for fmt, path in written.items():
        lines.append(f"  report ({fmt}): {path}")
    lines.append(_finished_line(search, t0))
    print("\n".join(lines))
    return EXIT_OK


def _demo_split(X: Any, y: Any) -> tuple[Any, Any, Any, Any, Any, Any]:
    """The demo's public training, sensitive validation and untouched test rows: seeded, never looking at values.

    Not stratified: a stratified split reads the labels, so which rows became the public training rows depended
    on the labels of the sensitive validation rows (one flipped validation label moved 135 of 276 training rows).
    """
    from sklearn.model_selection import train_test_split

    X_trval, X_test, y_trval, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    X_tr, X_val, y_tr, y_val = train_test_split(X_trval, y_trval, test_size=0.35, random_state=1)
    return X_tr, X_val, X_test, y_tr, y_val, y_test


def _finished_line(search: Any, t0: float) -> str:
    """The run's wall-clock time, only where the search's own time is shown (``search_time_`` is not None).

    For ``gp-ucb``, ``gp-ucb-exact``, ``lipschitz`` and random stopping the amount of work depends on the
    data through the algorithm (a raw-score path, the secret number of runs), so no time is printed.
    """
    if search.search_time_ is None:
        return "  finished (no wall-clock time: this method's amount of work depends on the sensitive rows)"
    return f"  finished in {time.perf_counter() - t0:.1f} s"


def _verdict_lines(search: Any) -> list[str]:
    """The report's plain-words verdict when the released score's noise dwarfs the score range (public)."""
    from privtune.report._tables import score_verdict

    verdict = score_verdict(search.report_)
    return [f"  warning: {verdict}"] if verdict else []


# -- budget -------------------------------------------------------------------------------------------
def _budget(args: argparse.Namespace) -> int:
    from privtune.config import load_config, public_sizes

    cfg = load_config(args.config)
    m, k, source = public_sizes(cfg.data)
    search = cfg.make_search(storage=False)
    plan = _plan(search, m, k, split=cfg.data.validation is None)
    largest = _largest_fit_epsilon(search, m, None)  # training-sensitive plans only: their K rule ignores k
    if args.json:
        out = {"method": plan["method"], "guarantee": plan["guarantee"],
               "phases": {p: b.to_dict() for p, b in plan["phases"].items()}, "total": plan["total"].to_dict(),
               "budget": {"epsilon": cfg.search.epsilon, "delta": cfg.search.delta},
               "n_validation": m, "n_classes": plan["n_classes"], "score_sensitivity": plan["score_sensitivity"],
               "noise": dict(plan["noise"]), "n_candidates": plan["n_candidates"],
               "n_candidates_exact": plan["n_candidates_exact"], "warnings": list(plan["warnings"]),
               "training_phases": {p: b.to_dict() for p, b in plan["training_phases"].items()},
               "training_total": None if plan["training_total"] is None else plan["training_total"].to_dict(),
               "overall": plan["overall"].to_dict(), "largest_fit_epsilon": largest,
               "seed_policy": "secure" if cfg.search.random_state is None else "seeded"}
        print(json.dumps(out, indent=2, sort_keys=True))
        return EXIT_OK
    lines = [
        f"privtune budget -- {cfg.path.name}: method {plan['method']}, {cfg.search.n_iter} evaluations over "
        f"{plan['n_candidates']} candidates"
        + ("" if plan["n_candidates_exact"] else " (after de-duplication in one draw; an unseeded run's count varies)"),
        f"  validation size m = {m} ({source}); no data values were read",
        *_classes_lines(cfg, search, plan["n_classes"]),
        f"  score: {cfg.search.scoring}, sensitivity {plan['score_sensitivity']:.6g} per replaced row",
        "  planned spend per phase:",
        *_budget_lines(plan["phases"], plan["total"]),
        f"  total: epsilon = {plan['total'].epsilon:.6g}, delta = {plan['total'].delta:.3g} "
        f"(budget epsilon = {cfg.search.epsilon:g}, delta = {cfg.search.delta:g})",
        *(["  training role (the DP estimator's fits, charged up front):",
           *_budget_lines(plan["training_phases"], plan["training_total"]),
           f"  training total: epsilon = {plan['training_total'].epsilon:.6g}, "
           f"delta = {plan['training_total'].delta:.3g}",
           f"  overall: epsilon = {plan['overall'].epsilon:.6g}, delta = {plan['overall'].delta:.3g}",
           *([f"  per-fit epsilon: {_fit_epsilon(search):g} (estimator.params.epsilon); "
              f"the largest this plan affords is {_floor4(largest)}"] if largest is not None else [])]
          if plan["training_total"] is not None else []),
        f"  guarantee: {plan['guarantee']} (replace-one, {cfg.data.sensitive} rows); noise: "
        + ("secure" if cfg.search.random_state is None else "seeded (reproducible, not for release)"),
        "  noise of each release (score units):",
        *[f"    {name:<36s} {value:.6g}" for name, value in plan["noise"].items()],
    ]
    lines += [f"  warning: {text}" for text in plan["warnings"]]
    print("\n".join(lines))
    return EXIT_OK


def _classes_lines(cfg: Any, search: Any, k: int) -> list[str]:
    """Where the K of balanced accuracy's sensitivity comes from (the only score that uses one); public.

    The plan's ``n_classes`` is that K, not the number of classes in the data: a split of one table, or sensitive
    training rows, use the estimator's declared label set, else 2 (the most conservative), whatever the data hold.
    """
    if cfg.search.scoring != "balanced_accuracy" or cfg.search.score_sensitivity is not None:
        return []
    from privtune.base import get_privacy_tags
    from privtune.config import BUNDLED_DATASETS

    data = cfg.data
    known = data.n_classes if data.n_classes is not None else (
        BUNDLED_DATASETS[data.bundled][2] if data.bundled is not None else None)
    tags = get_privacy_tags(search.estimator)
    if data.sensitive != "validation" and tags is not None and tags.classes_param is not None:
        why = "the estimator's declared label set, estimator.params.classes"
    elif data.sensitive == "validation" and data.validation is not None:
        why = ("data.n_classes" if data.n_classes is not None else f"bundled {data.bundled}" if known else
               "data.n_classes is not declared: 2, the most conservative")
        why += "; tune counts the classes of the public training file, which can only lower the noise"
    else:
        where = "sensitive training rows" if data.sensitive != "validation" else "a split of one table"
        why = (f"{where}: the labels are not read to count classes, so 2, the most conservative"
               + (f"; the data's {known} classes are not used" if known is not None and known != k else ""))
    return [f"  classes in balanced accuracy's sensitivity: K = {k} ({why})"]


# -- report -------------------------------------------------------------------------------------------
def _report(args: argparse.Namespace) -> int:
    from privtune.storage import StudyStorage

    path = Path(args.study_file)
    if not path.is_file():
        raise CLIError(f"{str(path)!r}: study file not found (privtune tune writes a study to the configuration's "
                       "storage.path, resolved against the configuration file's directory; it prints the path)")
    outputs = {fmt: Path(p) for fmt, p in (("json", args.json), ("markdown", args.markdown), ("html", args.html))
               if p is not None}
    storage = StudyStorage(str(path))
    try:
        names = storage.study_names()
        if not names:
            raise CLIError(f"{str(path)!r} holds no study")
        if args.study is None and len(names) > 1:
            print(f"{path} holds {len(names)} studies (name one with --study NAME):")
            for n in names:
                print(f"  {n}  [{storage.status(n)}]")
            if outputs:
                raise CLIError("--study: several studies in the file; name the one to render")
            return EXIT_OK
        name = args.study if args.study is not None else names[0]
        if name not in names:
            raise CLIError(f"--study: no study {name!r} in {str(path)!r}; it holds: {', '.join(names)}")
        stored = storage.load_report(name)
        config = storage.load_config(name)
        status = storage.status(name)
    finally:
        storage.close()
    if stored is None:
        raise CLIError(f"study {name!r} has no report yet (status: {status}); finish it with "
                       "privtune tune CONFIG.toml --resume")
    report = _report_from_study(stored, config)
    if not outputs:
        print(report.to_markdown() if not isinstance(report, Mapping) else json.dumps(report, indent=2))
        return EXIT_OK
    for fmt, p in _write_report(report, outputs).items():
        print(f"report ({fmt}): {p}")
    return EXIT_OK


# -- demo ---------------------------------------------------------------------------------------------
def _demo(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from sklearn.datasets import load_breast_cancer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from privtune import PrivateSearchCV
    from privtune.space import Real

    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    storage_path = out / "demo.sqlite"
    # A fresh study per run: every run is kept in the same file (list them with `privtune report`).
    study_name = f"demo-{datetime.datetime.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    X, y = load_breast_cancer(return_X_y=True)
    # Public/sensitive roles: the training split is treated as public, the validation split is sensitive,
    # and a test split (never touched by the search) measures the refit model.
    X_tr, X_val, X_test, y_tr, y_val, y_test = _demo_split(X, y)
    estimator = make_pipeline(StandardScaler(), SVC(random_state=0))  # never numpy's global RNG
    space = {"svc__C": Real(0.1, 1000.0, log=True), "svc__gamma": Real(1e-5, 1.0, log=True)}
    search = PrivateSearchCV(estimator, space, method=args.method, epsilon=args.epsilon, delta=args.delta,
                             n_iter=args.n_iter, n_candidates=args.n_candidates,
                             storage=str(storage_path), study_name=study_name,
                             random_state=args.seed, verbose=0 if args.quiet else 1)
    search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
    written = _write_report(_report_of_search(search), {"json": out / "report.json", "html": out / "report.html"})
    spent = search.privacy_spent_
    lines = [
        "privtune demo -- RBF SVM (C, gamma) on breast cancer; the validation split is the sensitive data",
        f"  data: {len(y_tr)} training rows (public), {len(y_val)} validation rows (sensitive), "
        f"{len(y_test)} test rows (untouched)",
        f"  method: {search.method_} over {len(search.candidates_)} candidates, n_iter={args.n_iter}",
        f"  released parameters: C = {search.best_params_['svc__C']:.4g}, "
        f"gamma = {search.best_params_['svc__gamma']:.4g}",
        f"  released validation accuracy: {search.best_score_:.4f}"
        f" (noise std {search.release_.noise.get('score_noise_std', float('nan')):.3g})",
        *_verdict_lines(search),
        "  budget spent per phase:",
        *_budget_lines(search.accountant_.spent_by_phase(), spent["overall"]),
        f"  total: epsilon = {spent['overall'].epsilon:.4g}, delta = {spent['overall'].delta:.3g} "
        f"(budget epsilon = {args.epsilon}, delta = {args.delta})",
        f"  guarantee: {search.guarantee_} (replace-one, validation rows); noise: {search.release_.seed_policy}",
        f"  test accuracy of the refit model (not private; the test rows are not part of the release): "
        f"{search.score(X_test, y_test):.4f}",
        f"  study: {study_name!r} in {storage_path}",
        *[f"  report ({fmt}): {p}" for fmt, p in written.items()],
        _finished_line(search, t0),
    ]
    print("\n".join(lines))
    return EXIT_OK


# -- parser -------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    from privtune._version import __version__

    p = argparse.ArgumentParser(prog="privtune", description="Differentially private hyperparameter tuning.")
    p.add_argument("--version", action="version", version=f"privtune {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tune", help="run a private search configured by a TOML file",
                       description="Run a private search configured by a TOML file (see docs/cli.md).")
    t.add_argument("config", help="the configuration file (TOML)")
    t.add_argument("--resume", action="store_true",
                   help="continue an existing study (a completed one is loaded without spending anything)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_tune)

    b = sub.add_parser("budget", help="what a configuration will spend, without reading data values",
                       description="Print the planned spend per phase and in total, the guarantee label and the "
                                   "noise of each release in score units -- without reading data values.")
    b.add_argument("config", help="the configuration file (TOML)")
    b.add_argument("--json", action="store_true", help="print the plan as JSON")
    b.set_defaults(func=_budget)

    r = sub.add_parser("report", help="re-render the report of a stored study",
                       description="Re-render the report of a study stored in a SQLite file. Without output "
                                   "options, print it as Markdown (or list the studies when there are several).")
    r.add_argument("study_file", metavar="STUDY.sqlite", help="the study storage file")
    r.add_argument("--study", default=None, metavar="NAME", help="the study to render (needed if there are several)")
    r.add_argument("--json", default=None, metavar="FILE", help="write the report as JSON")
    r.add_argument("--markdown", default=None, metavar="FILE", help="write the report as Markdown")
    r.add_argument("--html", default=None, metavar="FILE", help="write the report as a self-contained HTML page")
    r.set_defaults(func=_report)

    d = sub.add_parser("demo", help="tune an RBF SVM on bundled breast-cancer data with a sensitive validation set")
    d.add_argument("--method", default="auto",
                   choices=["auto", "random", "prescreen", "noisy-ucb", "gp-ucb"],
                   help="release method (default: auto, i.e. prescreen here: the training rows are public)")
    d.add_argument("--epsilon", type=float, default=1.0, help="total epsilon (default: 1.0)")
    d.add_argument("--delta", type=float, default=1e-6, help="total delta (default: 1e-6)")
    d.add_argument("--n-iter", type=int, default=30, help="evaluations (default: 30)")
    d.add_argument("--n-candidates", type=int, default=256, help="candidate set size (default: 256)")
    d.add_argument("--seed", type=int, default=None,
                   help="seed the noise (reproducible, NOT for release); default: secure noise")
    d.add_argument("--out", default="privtune-demo", metavar="DIR",
                   help="directory for demo.sqlite (one new study per run) and report.json/report.html "
                        "(overwritten by each run); default: ./privtune-demo")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privtune`` console script.

    Parameters
    ----------
    argv : sequence of str or None, default=None
        The arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        The exit status: 0 success, 2 invalid input (nothing spent), 130 interrupted.
    """
    from privtune.config import ConfigError
    from privtune.exceptions import PrivtuneError, PrivtuneWarning

    args = _parser().parse_args(argv)
    shown = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if issubclass(category, PrivtuneWarning):  # one plain line, not Python's file:line format
            print(f"privtune: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler, not at interpreter exit
        return status
    except (PrivtuneError, CLIError) as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        if len(lines) == 1:
            print(f"privtune: error: {lines[0]}", file=sys.stderr)
        else:
            print("privtune: error: " + ("invalid configuration:" if isinstance(exc, ConfigError) else ""),
                  *(f"  {ln}" for ln in lines), sep="\n", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("\nprivtune: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``privtune budget | head``): stop quietly, as a command killed by SIGPIPE
        # would, and keep the interpreter's final flush from printing a second error.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
