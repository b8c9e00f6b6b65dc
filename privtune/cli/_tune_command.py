"""``privtune tune CONFIG.toml [--resume] [--quiet]``: run a configured private search and write its report.

Besides the run itself: the checks on the stored study before anything is spent (:func:`_study_state`,
:func:`_ledger_length`): a study is continued only with ``--resume``, and one whose training rows are sensitive is
not resumed once it holds a charge.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from privtune.cli._output import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    CLIError,
    _budget_lines,
    _finished_line,
    _fmt_params,
    _report_of_search,
    _tuning_report_class,
    _verdict_lines,
    _write_report,
)
from privtune.cli._planning import _plan


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
    n_train = n - m if y_val is None else n  # public: the rows every fit of a one-split search reads
    plan = _plan(search, m, cfg.data.n_classes or 2, split=cfg.data.validation is None, n_train=n_train)

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
