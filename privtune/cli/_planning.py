"""The privacy plan ``tune`` and ``budget`` compute before reading any data value, and its refusals.

:func:`_plan` asks :meth:`PrivateSearchCV.privacy_plan <privtune.model_selection.PrivateSearchCV.privacy_plan>`
for the spend per phase and turns a refusal into a :class:`~privtune.cli._output.CLIError` naming the
configuration key to change (:func:`_plan_error`), with the largest per-fit ``epsilon`` the plan affords when the
training rows are sensitive (:func:`_largest_fit_epsilon`, printed rounded down by :func:`_floor4`).
"""

from __future__ import annotations

from typing import Any

from privtune.cli._output import CLIError


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


def _plan(search: Any, n_validation: int, n_classes: int, *, split: bool, n_train: int | None = None
          ) -> dict[str, Any]:
    from privtune.exceptions import BudgetExceededError, PrivtuneError

    # The search counts classes on public training labels only when they come apart from the validation rows
    # (a validation file); with sensitive training rows, or a split of one table, it uses the estimator's
    # declared label set, else K = 2 -- the same figure here, so that `budget` matches `tune`.
    k = n_classes if search.sensitive == "validation" and not split else None
    try:
        return search.privacy_plan(n_validation, n_classes=k, n_train=_sized(search, n_train))
    except BudgetExceededError as exc:
        err = _plan_error(exc)
        largest = (_largest_fit_epsilon(search, n_validation, k, n_train=n_train) if "training role" in str(exc)
                   else None)
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


def _sized(search: Any, n_train: int | None) -> int | None:
    """The training rows of a one-split search with sensitive training rows (what its plan may depend on), or None."""
    return n_train if search.sensitive != "validation" and search.cv is None else None


def _largest_fit_epsilon(search: Any, n_validation: int, n_classes: int | None, *,
                         n_train: int | None = None) -> float | None:
    """``PrivateSearchCV.largest_fit_epsilon`` where it applies (sensitive training rows), else None."""
    from privtune.exceptions import PrivtuneError
    from privtune.model_selection._training import fit_epsilon_param

    if search.sensitive == "validation" or fit_epsilon_param(search.estimator) is None:
        return None
    try:
        return search.largest_fit_epsilon(n_validation, n_classes, n_train=_sized(search, n_train))
    except PrivtuneError:
        return None
