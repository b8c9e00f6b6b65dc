"""The estimator's own accountants in a search: left uncharged on public training rows, or charged the plan.

With public training rows the search fits clones without the estimator's
accountants (nested ones too) and gives them back on ``best_estimator_``
(:func:`public_fit_accountants`, :func:`without_accountants`); with sensitive
ones, the estimator's own accountant is charged the whole training plan
(:func:`estimator_accountant` refuses one that cannot be). See
:mod:`privtune.model_selection._training`.
"""

from __future__ import annotations

from typing import Any

from sklearn.base import clone

from privtune.accounting import (
    Accountant,
)
from privtune.exceptions import InvalidParameterError
from privtune.model_selection._training_pipelines import is_pipeline, training_steps


def _sets_accountant(name: str) -> bool:
    return name == "accountant" or name.endswith("__accountant")


def public_fit_accountants(estimator: Any, space_names: Any, *, owner: str = "PrivateSearchCV") -> dict[str, Any]:
    """The accountants on an estimator whose training rows are public, which the search leaves uncharged (public).

    With ``sensitive="validation"`` the training rows are public: a fit reads
    no sensitive row, so there is nothing to charge for it. The search fits
    clones without these accountants (:func:`without_accountants`; each DP fit
    then charges a throw-away accountant of its own) and gives them back on
    ``best_estimator_``. Charging them fit by fit made serial and parallel
    runs differ (a worker process holds a read-only copy of an in-memory
    accountant and raised ``LedgerError``) and made the ledger count the fits,
    which with random stopping is the secret number of runs.

    Parameters
    ----------
    estimator : estimator
        The search's estimator.
    space_names : iterable of str
        The hyperparameters of the search space.

    Returns
    -------
    dict of {str: object}
        Every ``accountant`` parameter (``accountant`` or ``<step>__accountant``,
        from ``get_params(deep=True)``) that is not None, by name.

    Raises
    ------
    InvalidParameterError
        If the search space sets an ``accountant``: each candidate's fit would
        charge the accountant it names, which the search cannot account for.
    """
    setters = sorted(n for n in space_names if _sets_accountant(str(n)))
    if setters:
        raise InvalidParameterError(
            f"{owner}: the search space sets {', '.join(setters)}. The fits of a search read no sensitive row when "
            "the training rows are public (sensitive='validation'), so no accountant of theirs is charged; with "
            "sensitive training rows every fit is paid for up front. Remove it from the search space (and give "
            "the estimator one accountant with sensitive='both' if the training rows are sensitive). Nothing was "
            "read or spent.")
    try:
        params = estimator.get_params(deep=True)
    except Exception:  # noqa: BLE001 - an estimator without deep params: look at its own only
        params = estimator.get_params(deep=False)
    return {name: value for name, value in params.items() if _sets_accountant(str(name)) and value is not None}


def without_accountants(estimator: Any, accountants: dict[str, Any]) -> Any:
    """A clone of ``estimator`` with each of ``accountants`` set to None (``estimator`` itself when there are none)."""
    if not accountants:
        return estimator
    return clone(estimator).set_params(**{name: None for name in accountants})


def estimator_accountant(estimator: Any, space_names: Any, *, owner: str = "PrivateSearchCV") -> Accountant | None:
    """The accountant the user gave a training-sensitive search's estimator, which the search charges too (public).

    With sensitive training rows every fit charges a throw-away prepaid
    accountant in place of the estimator's ``accountant`` (see the module), so
    the search charges that accountant the whole training plan itself, up
    front (:func:`charge_training_plan`). It is the object on the user's
    estimator: :func:`sklearn.base.clone` hands every clone that same
    :class:`~privtune.accounting.Accountant` (its ``__deepcopy__`` returns
    itself), so the clones cannot be charged in its place.

    Parameters
    ----------
    estimator : estimator
        The search's estimator (``PrivateSearchCV.estimator``), already checked
        by :func:`check_training_estimator`. For a pipeline, the accountant its
        DP steps share (they must hold the same one, or none).
    space_names : iterable of str
        The hyperparameters of the search space.

    Returns
    -------
    Accountant or None
        ``None`` when the estimator holds no accountant.

    Raises
    ------
    InvalidParameterError
        If the search space sets an ``accountant`` (each candidate would name
        its own, and none of them is what its fit charges), or the estimator's
        ``accountant`` is not a privtune :class:`~privtune.accounting.Accountant`
        (the search could not charge it the plan).
    """
    setters = sorted(n for n in space_names if _sets_accountant(str(n)))
    if setters:
        raise InvalidParameterError(
            f"{owner}: the search space sets {', '.join(setters)}. With sensitive training rows every fit is paid "
            "for up front, charged to the search's training accountant and to the estimator's own accountant, so a "
            "candidate's accountant would never be the one its fit charges. Give the estimator one accountant "
            "(estimator.set_params(accountant=...)) and remove it from the search space. Nothing was read or spent.")
    if is_pipeline(estimator):
        owners = [step.get_params(deep=False).get("accountant") for _, kind, step in training_steps(estimator)
                  if kind in ("dp", "final")]
        distinct = [acc for i, acc in enumerate(owners) if acc is not None and all(acc is not o for o in owners[:i])]
        if len(distinct) > 1:
            raise InvalidParameterError(
                f"{owner}: the pipeline's DP steps hold {len(distinct)} different accountants. A search on sensitive "
                "training rows charges the whole training plan (every step's fits) to the estimator's own "
                "accountant: give the DP steps the same Accountant object, or none. Nothing was read or spent.")
        own = distinct[0] if distinct else None
    else:
        own = estimator.get_params(deep=False).get("accountant")
    if own is None:
        return None
    if not isinstance(own, Accountant):
        raise InvalidParameterError(
            f"{owner}: {type(estimator).__name__}'s 'accountant' is a {type(own).__name__}, not a privtune "
            "Accountant, so the search cannot charge it the training plan (every fit of a search on sensitive "
            "training rows is paid for up front). Pass a privtune.accounting.Accountant, or accountant=None.")
    return own
