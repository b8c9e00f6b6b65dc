"""Public proxy data: the candidates ranked on rows that are not sensitive, for free, before the private search.

A user often holds public data related to the sensitive table -- an older
public release, a related public survey, a synthetic stand-in. ``fit(...,
X_proxy=..., y_proxy=...)`` ranks the candidates on it by ordinary k-fold
cross-validation, exactly as ``method="prescreen"`` ranks them on public
training rows (:func:`~privtune.model_selection._prescreen.screen_on_public_rows`,
the same schedule: at most ``max(128, 12 n_iter)`` fits on the proxy rows,
2 or 3 folds), and keeps the ``n_iter`` best. The search then runs its method
over the kept candidates only, on the sensitive rows, as it would over the
whole candidate set.

Privacy: the kept set is a function of the proxy rows, the declared space and
the stored seeds -- public -- so it costs nothing and the guarantee is the
method's own. The screening fits clone the estimator without any accountant
(they read no sensitive row), and never see a training or validation row.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from privtune.exceptions import InvalidParameterError
from privtune.model_selection._fit_accountants import public_fit_accountants, without_accountants
from privtune.model_selection._inputs import (
    FitParams,
    _as_labels,
    _as_table,
    _same_length,
    check_same_structure,
    n_rows,
)
from privtune.model_selection._plan import SearchData, SearchPlan
from privtune.model_selection._prescreen import screen_on_public_rows

__all__ = ["check_proxy", "screen_on_proxy"]


def check_proxy(X_proxy: Any, y_proxy: Any, X: Any) -> tuple[Any, Any] | None:
    """The proxy rows as tables, checked against ``X``'s structure; ``None`` when none were given (public).

    Raises
    ------
    InvalidParameterError
        When only one of the two is given, their lengths differ, or the proxy
        table's structure is not ``X``'s (kind of container, column names and
        order, number of features) -- before anything is read or spent.
    """
    if X_proxy is None and y_proxy is None:
        return None
    if (X_proxy is None) != (y_proxy is None):
        raise InvalidParameterError("Pass both X_proxy and y_proxy (public proxy rows and their targets), or neither.")
    X_proxy, y_proxy = _as_table(X_proxy, "X_proxy"), _as_labels(y_proxy, "y_proxy")
    _same_length(X_proxy, y_proxy, "X_proxy", "y_proxy")
    try:
        check_same_structure(X, X_proxy)
    except InvalidParameterError as exc:
        raise InvalidParameterError(str(exc).replace("X_val", "X_proxy").replace("validation", "proxy")) from None
    return X_proxy, y_proxy


def screen_on_proxy(plan: SearchPlan, data: SearchData, *, n_jobs: int | None, label: str,
                    on_failures: Any) -> tuple[Any, dict[str, Any]]:
    """The ``n_iter`` candidates that rank best on the public proxy rows, and a public summary of the screening.

    Parameters
    ----------
    plan : SearchPlan
        The search's plan (its candidate set and seeds drawn).
    data : SearchData
        Its ``proxy`` (``(X_proxy, y_proxy)``, public rows: :func:`check_proxy`) and the fit parameters that are
        not per-sample (``sample_weight`` belongs to the training rows and is not passed to the proxy fits).
    n_jobs : int or None
        joblib workers for the screening fits.
    label : str
        How messages name the method.
    on_failures : callable
        As for :func:`~privtune.model_selection._prescreen.screen_on_public_rows` (failures on public rows are
        public).

    Returns
    -------
    (CandidateSet, dict)
        The kept candidates (in candidate order) and the screening's summary (sizes, folds, fits; no score).

    Notes
    -----
    **Privacy.** Free: reads only the proxy rows, the declared space and the stored seeds. The estimator is
    cloned without its accountants for these fits.
    """
    from privtune.bo.prescreen import PrescreenedRandomSearch

    settings = plan.settings
    # the screening schedule of method='prescreen' (public sizes only); its privacy parameters are not used
    schedule = PrescreenedRandomSearch(epsilon=1.0, n_iter=settings.n_iter, score_sensitivity=1.0,
                                       score_bounds=plan.scorer.bounds)
    estimator = without_accountants(plan.fit_estimator,
                                    public_fit_accountants(plan.fit_estimator, settings.space.names))
    X_p, y_p = data.proxy
    static = dict(data.fit_params.static) if isinstance(data.fit_params, FitParams) else {}
    screening_plan = replace(plan, method=schedule, fit_estimator=estimator)
    kept = screen_on_public_rows(screening_plan, SearchData(X_p, y_p, None, None, FitParams(static, {})),
                                 n_jobs=n_jobs, label=f"{label} (public proxy rows)", on_failures=on_failures)
    info = {**schedule.screen_info, "on": "the public proxy rows (X_proxy, y_proxy; no privacy cost)",
            "n_proxy_rows": int(n_rows(X_p))}
    return kept, info
