"""``privtune budget CONFIG.toml [--json]``: what a configuration will spend, without reading data values.

Prints (or emits as JSON) the planned spend per phase and in total, the guarantee label, the noise of each release
in score units and, for balanced accuracy, where the number of classes in its sensitivity comes from
(:func:`_classes_lines`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from privtune.cli._output import EXIT_OK, _budget_lines
from privtune.cli._planning import _fit_epsilon, _floor4, _largest_fit_epsilon, _plan


def _budget(args: argparse.Namespace) -> int:
    from privtune.config import load_config, public_sizes, public_train_rows

    cfg = load_config(args.config)
    m, k, source = public_sizes(cfg.data)
    search = cfg.make_search(storage=False)
    n_train = public_train_rows(cfg.data)  # row counts only: DP-SGD's and subsampled tuning's plans depend on it
    plan = _plan(search, m, k, split=cfg.data.validation is None, n_train=n_train)
    # training-sensitive plans only: their K rule ignores k
    largest = _largest_fit_epsilon(search, m, None, n_train=n_train)
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
