"""The training role of a private search: every DP fit is paid for up front, in one visible plan.

When training rows are sensitive (``sensitive="training"`` or ``"both"``), each
candidate is fitted by a privtune DP estimator. If every fit charged a shared
accountant as it ran, the ledger would count the fits, and the count can depend
on the data: on the raw-score trajectory (a method that reuses a candidate's
score), on a fit that raises for one row, or on the secret number of runs K of a
randomly stopped search (Papernot & Steinke's bound needs K secret). So:

* The whole training plan is charged to the (visible) training accountant
  **before the first fit**, from public quantities only: ``n_fits`` repetitions
  of the estimator's declared per-fit event (``_fit_privacy_event()``) and the
  refit; with random stopping, the search's one ``RepeatAndSelectEvent`` (which
  covers every run's fit) and the refit.
* Each fit then charges a private, throw-away :class:`PrepaidFitAccountant`
  whose budget is exactly one declared fit: a fit that charges more than its
  declaration is refused (``BudgetExceededError``, which aborts the search - it
  is never turned into a score), and a fit beyond the planned count is an
  internal error. Nothing of these per-fit accountants reaches any output.

The ledger, ``privacy_spent_["training"]``, the report and the logs are then
the same for every pair of neighbouring data sets.

The estimator's own ``accountant`` (``DPLogisticRegression(accountant=cap)``),
which the tickets replace in every fit, is charged the same whole plan, in one
entry, before the search's training accountant and before the first fit
(:func:`charge_training_plan`): it works as a cap shared across searches on the
same rows, and a plan it cannot pay for is refused before anything is read or
spent anywhere (:func:`estimator_accountant` refuses what cannot be charged).

A scikit-learn ``Pipeline`` is accepted when its last step is such a DP
estimator and every step before it is data-independent (stateless, or fitted
on public data and wrapped in ``sklearn.frozen.FrozenEstimator``) or DP itself
(:class:`privtune.preprocessing.DPStandardScaler`): one fit's event is the
composition of its DP steps' events, charged up front like any other, and a
step that reads the rows otherwise is refused by name (:func:`training_steps`).
Such a pipeline is fitted step by step (:func:`fit_training`) so that no row's
value can make its fit fail.

With public training rows (``sensitive="validation"``) no fit reads a
sensitive row, and the estimator's accountants (nested ones too) are charged
nothing: the search fits clones without them, serially or in workers alike,
and gives them back on ``best_estimator_`` (:func:`public_fit_accountants`).
"""

from __future__ import annotations

import math
import threading
import warnings
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.accounting import (
    Accountant,
    Budget,
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    RenyiEvent,
    SelfComposedEvent,
    compose_events,
)
from privtune.accounting.ledger import Ledger
from privtune.base import PrivacyTags, get_privacy_tags
from privtune.exceptions import BudgetExceededError, InvalidParameterError, LedgerError, PrivtuneError
from privtune.model_selection._inputs import frame_kind
from privtune.model_selection._plan import SearchSettings
from privtune.utils._validation import check_real

__all__ = ["PrepaidFitAccountant", "FitTickets", "charge_training_plan", "check_candidate_costs",
           "check_training_estimator", "estimator_accountant", "per_fit_event", "public_fit_accountants",
           "refuse_spent_training_study", "training_plan", "without_accountants"]


def refuse_spent_training_study(study: Any) -> None:
    """Refuse a stored study with sensitive training rows once it holds a charge (before anything is read or spent).

    Such a study is never resumed or reloaded: its DP fits would run again and draw new noise on the training rows,
    a release its ledger never paid for. One that holds no charge yet (a run refused before its first charge) is
    started again. Reads the two ledgers' lengths and the status: public quantities.

    Raises
    ------
    InvalidParameterError
        If either role's ledger holds a charge or the study is complete.
    """
    n = len(study.ledger.entries()) + len(study.training_ledger().entries())
    if n or study.status == "complete":
        raise InvalidParameterError(
            f"Study {study.name!r} in {study.path_for_messages!r} already holds {n} charge(s) of a search whose "
            f"training rows are sensitive (status: {study.status}). Such a study is not resumed or reloaded: its DP "
            "fits would run again and draw new noise on the training rows, a release its ledger never paid for. "
            "Nothing was read or spent now, and the file keeps what the study spent. To search again, name a new "
            "study and count both spendings.")


class PrepaidFitAccountant(Accountant):
    """The accountant one candidate fit charges when the training plan was paid up front (internal).

    Its budget is one declared fit (the estimator's ``_fit_privacy_event()`` at
    the estimator's delta), so a fit that charges more than it declared is
    refused before it reads any data.
    """


class FitTickets:
    """Hands out one :class:`PrepaidFitAccountant` per planned fit; thread-safe.

    Parameters
    ----------
    budget : Budget
        What one declared fit costs.
    max_fits : int or None
        The number of fits paid for up front (None: covered by a
        random-stopping event whose K is capped by construction).
    """

    def __init__(self, budget: Budget, max_fits: int | None) -> None:
        self.budget = budget
        self.max_fits = max_fits
        self._issued = 0
        self._lock = threading.Lock()

    def accountant(self) -> PrepaidFitAccountant:
        """A fresh per-fit accountant; an internal error past the planned count (never turned into a score)."""
        with self._lock:
            if self.max_fits is not None and self._issued >= self.max_fits:
                raise PrivtuneError(
                    f"Internal error: the search asked for more than the {self.max_fits} training fits it paid for "
                    "up front; nothing more was fitted.")
            self._issued += 1
        return PrepaidFitAccountant(self.budget)


class _RunKeeper:
    """Random stopping with sensitive training rows: the model of the best run so far (internal).

    The search's objective stores each run's fitted model in ``last`` (``None``
    when the fit raised); the method calls :meth:`keep_last_run` when the run
    just scored is the best so far. Only one model is held besides the one in
    progress, so nothing here grows with the secret number of runs K.
    """

    def __init__(self) -> None:
        self.last: Any = None
        self.kept: Any = None

    def keep_last_run(self) -> None:
        self.kept = self.last


def check_training_estimator(estimator: Any, *, owner: str = "PrivateSearchCV") -> PrivacyTags:
    """Refuse an estimator whose declared guarantee does not cover sensitive training rows.

    A scikit-learn ``Pipeline`` is accepted when its last step passes these
    checks and every other step is data-independent or DP itself (see
    :func:`training_steps`); its tags are the last step's, with the label-set
    parameter named as the pipeline sets it (``"dplogisticregression__classes"``).

    Returns
    -------
    PrivacyTags

    Raises
    ------
    InvalidParameterError
        If the estimator declares no :class:`~privtune.base.PrivacyTags`, covers
        labels only, can refuse data because of a row's value, leaves its label
        set undeclared, or declares no per-fit privacy event.
    """
    if is_pipeline(estimator):
        return _check_training_pipeline(estimator, owner)
    name = type(estimator).__name__
    tags = get_privacy_tags(estimator)
    if tags is None:
        raise InvalidParameterError(
            f"{owner}: the training data is declared sensitive, but {name} declares no privacy guarantee of its own "
            "(no __privtune_tags__): fitting it would leak its training rows. Use a privtune DP estimator (e.g. "
            "privtune.linear_model.DPLogisticRegression), or sensitive='validation' if the training data is public.")
    if tags.covers != "rows":
        raise InvalidParameterError(
            f"{owner}: {name}'s guarantee covers the labels only (its features are public by assumption), so it "
            "cannot protect sensitive training rows: the features of every training row would leak. Use it with "
            "sensitive='validation' (public training data), or a DP estimator whose guarantee covers whole rows.")
    params = estimator.get_params(deep=False)
    if tags.raises_on_rows:
        raise InvalidParameterError(
            f"{owner}: {name}'s configuration makes fit refuse data because of a row's values (e.g. clip='raise'), "
            "so whether a fit fails would depend on one sensitive training row. Use clip='rows' (rows are clipped "
            "to the declared bound instead).")
    if tags.classes_param is not None and params.get(tags.classes_param) is None:
        raise InvalidParameterError(
            f"{owner}: with sensitive training data, declare {name}'s label set ({tags.classes_param}=[...]): "
            "otherwise each fit reads the set of labels off the sensitive rows.")
    if "accountant" not in params:
        raise InvalidParameterError(
            f"{owner}: {name} declares privacy tags but takes no 'accountant' parameter to charge its fits to.")
    if not callable(getattr(estimator, "_fit_privacy_event", None)):
        raise InvalidParameterError(
            f"{owner}: {name} declares no per-fit privacy event (_fit_privacy_event), so the search cannot charge "
            "its training fits up front.")
    return tags


# -- pipelines with sensitive training rows ----------------------------------------------------------------
#
# A scikit-learn Pipeline ends in a privtune DP estimator; every step before it must be, from public information:
#
# * "passthrough" (or None);
# * "dp": a DP transformer (privtune.preprocessing.DPStandardScaler): it declares PrivacyTags covering rows and a
#   per-fit event, takes an accountant, and never refuses a value; the pipeline's event composes the DP steps';
# * "stateless": a transformer scikit-learn tags requires_fit=False (Normalizer, Binarizer, FunctionTransformer):
#   its fit learns nothing from the rows, so the search fits it on a public probe row instead of on them;
# * "frozen": a transformer the user fitted on public data and wrapped in sklearn.frozen.FrozenEstimator (the
#   declaration that the search must not refit it): its fit does nothing.
#
# The transforms of the stateless and frozen steps run on the training rows with row isolation (fixed blocks; a
# row that makes its block's call raise gets NaN entries, which the DP steps after it map like any non-finite
# entry), so no row's value can make the fit raise. Each transformer's output row is assumed to depend on its own
# input row only (true of every scikit-learn transformer's transform; a FunctionTransformer's func must be such a
# map, e.g. numpy.log1p, never X / X.max()): the DP estimator then sees neighbouring rows for neighbouring data.

_STEP_KINDS = ("passthrough", "dp", "stateless", "frozen", "final")


def is_pipeline(estimator: Any) -> bool:
    """Whether ``estimator`` is a scikit-learn ``Pipeline`` (public)."""
    from sklearn.pipeline import Pipeline

    return isinstance(estimator, Pipeline)


def _is_frozen(step: Any) -> bool:
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        return False
    return isinstance(step, FrozenEstimator)


def _requires_fit(step: Any) -> bool:
    from sklearn.utils import get_tags

    try:
        return bool(get_tags(step).requires_fit)
    except Exception:  # noqa: BLE001 - an object without scikit-learn tags: assume its fit reads the rows
        return True


def _step_kind(name: str, step: Any, owner: str) -> str:
    """What one non-final step is, or a refusal that names it and what to use instead (public)."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return "passthrough"
    label = f"pipeline step {name!r} ({type(step).__name__})"
    if get_privacy_tags(step) is not None:
        if not callable(getattr(step, "transform", None)):
            raise InvalidParameterError(
                f"{owner}: {label} is a DP estimator but not a transformer: only the last step of a pipeline may "
                "be an estimator. Nothing was read or spent.")
        tags = check_training_estimator(step, owner=f"{owner} ({label})")
        if tags.relation != "replace_one":
            raise InvalidParameterError(f"{owner}: {label} declares the relation {tags.relation!r}; the pipeline's "
                                        "steps are composed under replace-one. Nothing was read or spent.")
        return "dp"
    if _is_frozen(step):
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(step.estimator)
        except Exception:  # noqa: BLE001 - NotFittedError and kin: public
            raise InvalidParameterError(
                f"{owner}: {label} wraps an unfitted {type(step.estimator).__name__}: fit it on public data before "
                "freezing it. Nothing was read or spent.") from None
        if not callable(getattr(step.estimator, "transform", None)):
            raise InvalidParameterError(f"{owner}: {label} wraps no transformer. Nothing was read or spent.")
        return "frozen"
    if not callable(getattr(step, "transform", None)):
        raise InvalidParameterError(f"{owner}: {label} is not a transformer. Nothing was read or spent.")
    if not _requires_fit(step):
        return "stateless"
    raise InvalidParameterError(
        f"{owner}: the training data is declared sensitive, and {label} reads the training rows when it is fitted "
        "(scikit-learn tags it requires_fit: it learns from them), without privacy: its fitted state would leak "
        "them. Use a DP transformer with declared bounds (privtune.preprocessing.DPStandardScaler for a "
        "StandardScaler), a transformer fitted on public data and wrapped in sklearn.frozen.FrozenEstimator (the "
        "search then never refits it), a stateless transformer (e.g. Normalizer), or sensitive='validation' if the "
        "training rows are public. Nothing was read or spent.")


def training_steps(estimator: Any, *, owner: str = "PrivateSearchCV") -> list[tuple[str, str, Any]]:
    """Each step of a pipeline a training-sensitive search accepts, as ``(name, kind, step)`` (public).

    ``kind`` is one of ``"passthrough"``, ``"dp"`` (a DP transformer),
    ``"stateless"``, ``"frozen"`` (a transformer fitted on public data, in a
    ``FrozenEstimator``) and ``"final"`` (the DP estimator, last). A plain
    estimator is one ``"final"`` step named ``""``.

    Raises
    ------
    InvalidParameterError
        Naming the first step that reads the training rows without privacy, or
        a last step that is not a privtune DP estimator.
    """
    if not is_pipeline(estimator):
        return [("", "final", estimator)]
    steps = list(estimator.steps)
    *head, (last_name, last) = steps
    out = [(name, _step_kind(name, step, owner), step) for name, step in head]
    if last is None or (isinstance(last, str) and last == "passthrough"):
        raise InvalidParameterError(f"{owner}: the pipeline's last step is 'passthrough'; with sensitive training "
                                    "rows it must be a privtune DP estimator. Nothing was read or spent.")
    out.append((last_name, "final", last))
    return out


def _check_training_pipeline(estimator: Any, owner: str) -> PrivacyTags:
    """:func:`check_training_estimator` for a pipeline: each step, then the last step's tags as the pipeline's."""
    steps = training_steps(estimator, owner=owner)
    last_name, _, last = steps[-1]
    try:
        tags = check_training_estimator(last, owner=owner)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{exc} (It is the pipeline's last step, {last_name!r}.)") from None
    classes = None if tags.classes_param is None else f"{last_name}__{tags.classes_param}"
    return PrivacyTags(covers="rows", classes_param=classes, relation=tags.relation,
                       raises_on_rows=tags.raises_on_rows)


def set_fit_accountant(estimator: Any, accountant: Any) -> Any:
    """Set the accountant a fit charges: the estimator's, or every DP step's of a pipeline (the same object)."""
    if not is_pipeline(estimator):
        return estimator.set_params(accountant=accountant)
    names = [name for name, kind, _ in training_steps(estimator) if kind in ("dp", "final")]
    return estimator.set_params(**{f"{name}__accountant": accountant for name in names})


def public_probe(X: Any) -> Any:
    """One row of the training table's container and columns, made from its structure only (no value read).

    numpy: a row of zeros of its shape (float64 for a non-numeric dtype); pandas
    and polars: a row of the same columns, 0 in the numeric ones (their dtype
    kept) and missing elsewhere; anything else: a numpy row of zeros of its
    width. A probe row gives itself back.
    """
    if hasattr(X, "iloc") and hasattr(X, "columns"):  # pandas
        probe = X.iloc[:0].reindex(range(1))
        for j, dtype in enumerate(X.dtypes):
            if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
                probe.isetitem(j, np.zeros(1, dtype=dtype))
        return probe
    if frame_kind(X) == "polars":
        import polars as pl

        return pl.DataFrame([pl.Series(name, [0] if dtype.is_numeric() else [None], dtype=dtype)
                             for name, dtype in X.schema.items()])
    shape = getattr(X, "shape", None) or np.asarray(X, dtype=object).shape
    dtype = getattr(X, "dtype", None)
    kind = getattr(dtype, "kind", "O")
    return np.zeros((1,) + tuple(shape[1:]), dtype=dtype if kind in "biuf" else np.float64)


def _dense_rows(out: Any, width: int) -> np.ndarray:
    """A transform's output as a float array of ``width`` columns (raises otherwise: that block's failure)."""
    if hasattr(out, "toarray"):
        out = out.toarray()
    elif hasattr(out, "to_numpy"):
        out = out.to_numpy()
    arr = np.asarray(out, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError("transform output shape")
    return arr


def _probe_step(name: str, kind: str, step: Any, probe: Any, owner: str, *, fitted: bool) -> tuple[Any, int]:
    """A step's output on the public probe row, and its width; fits a stateless step on the probe (public).

    A DP step that is not fitted yet (the checks before any charge) keeps the
    width (a DP transformer maps each feature: e.g. ``DPStandardScaler``).
    """
    if kind == "dp" and not fitted:
        width = int(getattr(probe, "shape", (1, 1))[1])
        return np.zeros((1, width)), width
    label = f"pipeline step {name!r} ({type(step).__name__})"
    try:
        if kind == "stateless":
            step.fit(probe)
        out = step.transform(probe)
        width = int(getattr(out, "shape", ())[1])
        _dense_rows(out, width)
    except Exception as exc:  # noqa: BLE001 - a public row of zeros: the failure is public
        raise InvalidParameterError(
            f"{owner}: {label} fails on a public probe row (the training table's columns, zeros in the numeric "
            f"ones; {type(exc).__name__}), so the search cannot tell from public information what it makes of the "
            "training rows (its output width). Make it accept such a row (e.g. handle_unknown='ignore' for an "
            "encoder), or transform the rows yourself before the search. Nothing was read or spent.") from None
    return out, width


def check_training_pipeline(estimator: Any, like: Any, fit_params: Any = None, *,
                            owner: str = "PrivateSearchCV") -> list[int]:
    """Refuse, before any charge, a pipeline whose fit on the training rows could fail for public reasons.

    Runs every step on a public probe row built from the training table's
    structure (:func:`public_probe`): a step that fails there is refused, and
    every step's output width is known. Fit parameters may go to the DP steps
    only (``<step>__<param>``, a parameter their ``fit`` takes).

    Returns
    -------
    list of int
        The width of the rows each step receives, the last step's included.
    """
    import inspect

    steps = training_steps(estimator, owner=owner)
    keys = _fit_param_keys(fit_params)
    by_name = {name: (kind, step) for name, kind, step in steps}
    for key in sorted(keys):
        name, sep, param = key.partition("__")
        kind, step = by_name.get(name, (None, None)) if sep else (None, None)
        if kind not in ("dp", "final"):
            raise InvalidParameterError(
                f"{owner}: the fit parameter {key!r} is not for a DP step of the pipeline: with sensitive training "
                "rows fit parameters go to its DP steps only, as '<step>__<parameter>' (the others are fitted on "
                "public information, or not at all). Nothing was read or spent.")
        accepted = inspect.signature(step.fit).parameters
        if param not in accepted and not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
            raise InvalidParameterError(
                f"{owner}: {type(step).__name__}.fit (pipeline step {name!r}) takes no parameter {param!r}. Nothing "
                "was read or spent.")
    probe = public_probe(like)
    widths = []
    for name, kind, step in steps:
        widths.append(int(getattr(probe, "shape", (1, 1))[1]))
        if kind in ("passthrough", "final"):
            continue
        probe, _ = _probe_step(name, kind, clone(step), probe, owner, fitted=False)
    return widths


def _fit_param_keys(fit_params: Any) -> set[str]:
    if fit_params is None:
        return set()
    static = getattr(fit_params, "static", None)
    if static is not None:  # the search's FitParams
        return set(static) | set(getattr(fit_params, "per_sample", {}))
    return set(dict(fit_params))


def isolated_transform(step: Any, X: Any, width: int, like: Any = None) -> Any:
    """``step.transform(X)`` with row isolation: a row that fails on its own gets NaN entries (see the module).

    Rows are transformed in the fixed blocks of
    :mod:`~privtune.model_selection._isolation` (one call per block when
    nothing fails); a block whose call raises is bisected to find its failing
    rows and evaluated again whole with them replaced, so every other row
    keeps the value it has when nothing fails. A row whose output is not
    finite gets NaN entries too (the DP steps map a non-finite row either way).
    ``like``: the step's output on the public probe; a pandas frame makes the
    result a frame with its columns (and ``X``'s index).
    """
    from privtune.model_selection._isolation import RowBlocks, _isolate_block, fixed_blocks

    rows = RowBlocks(X)
    out = np.full((rows.n_rows, width), np.nan)

    def call(idx: Any) -> np.ndarray:
        return _dense_rows(step.transform(rows.take(idx)), width)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # whether a row warns depends on it
        for block in fixed_blocks(rows.n_rows, rows.block_rows):
            values, failing, pieces = _isolate_block(call, block)
            if values is None:
                values = np.full((len(block), width), np.nan)
                for pos, part in pieces:  # only outside the per-row assumption (see _isolation)
                    values[pos] = part
            out[block.start:block.stop] = values
            if failing is not None:  # a row that fails on its own (or whose output is not finite): NaN
                out[block.start:block.stop][failing] = np.nan
    if hasattr(like, "iloc") and hasattr(like, "columns"):
        import pandas as pd

        return pd.DataFrame(out, columns=like.columns, index=getattr(X, "index", None))
    return out


def fit_training(estimator: Any, X: Any, y: Any, _rows_sensitive: bool = True, _probe: Any = None,
                 **fit_params: Any) -> Any:
    """Fit a candidate on the sensitive training rows: ``estimator.fit`` itself, or a pipeline step by step.

    ``_rows_sensitive=False`` (public training rows): ``estimator.fit`` whatever it is.

    A pipeline (already checked by :func:`check_training_pipeline`) is fitted
    as ``Pipeline.fit`` would, with two differences that keep one row from
    making the fit fail: a stateless step is fitted on the public probe row,
    not on the rows (it learns nothing from them either way), and the
    stateless and frozen steps transform the rows with row isolation
    (:func:`isolated_transform`). The DP steps charge their accountant (the
    fit's ticket, :func:`set_fit_accountant`) in order, as declared
    (:func:`per_fit_event`). The fitted pipeline is the estimator itself.
    ``_probe``: the public probe row, built once by the search from the
    training table as passed (:func:`public_probe`); by default built from
    ``X``. It must not be built from a part of a split, whose column types are
    read off its own (sensitive) rows.
    """
    if not (_rows_sensitive and is_pipeline(estimator)):
        return estimator.fit(X, y, **fit_params)
    routed: dict[str, dict[str, Any]] = {}
    for key, value in fit_params.items():
        name, _, param = key.partition("__")
        routed.setdefault(name, {})[param] = value
    steps = training_steps(estimator)
    probe, Xt = public_probe(X if _probe is None else _probe), X
    for name, kind, step in steps[:-1]:
        if kind == "passthrough":
            continue
        if kind == "dp":
            step.fit(Xt, y, **routed.get(name, {}))
        out, width = _probe_step(name, kind, step, probe, "PrivateSearchCV", fitted=True)
        Xt = isolated_transform(step, Xt, width, out)
        probe = out
    last_name, _, last = steps[-1]
    last.fit(Xt, y, **routed.get(last_name, {}))
    return estimator


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


def charge_training_plan(acc: Accountant, plan: list[tuple[PrivacyEvent, str]], own: Accountant | None = None,
                         *, validation_plan: list[tuple[PrivacyEvent, str]] | None = None) -> None:
    """Charge the training plan to the estimator's own accountant, then to the search's; before the first fit.

    Both were checked by :meth:`_TrainingRoleMixin._training_role`; each charge
    checks again (another search sharing ``own`` may have charged it since).

    * ``own`` first, in **one** ledger entry (the plan composed): either all of
      it is recorded or nothing, and if it cannot pay, nothing is recorded
      anywhere. It is the accountant other searches may share, so the likelier
      to refuse.
    * Then ``acc``, event by event, as before. If that fails (its ledger cannot
      record, e.g. a stored study's file), no row has been read and ``own``
      keeps a charge for fits that never ran: it records more than was spent,
      never less. The error says so.

    Parameters
    ----------
    acc : Accountant
        The search's training accountant (``training_accountant_``).
    plan : list of (PrivacyEvent, phase)
        :func:`training_plan`'s charges.
    own : Accountant or None
        The estimator's own accountant (:func:`estimator_accountant`).
    validation_plan : list of (PrivacyEvent, phase) or None
        The validation role's plan when ``own`` is also the search's
        validation accountant: the two plans are then checked together on it
        (sequential composition, a valid and conservative bound), so that one
        it cannot pay for is refused before either is charged.

    Raises
    ------
    BudgetExceededError
        If ``own`` cannot pay (nothing spent anywhere), or ``acc`` cannot (then
        ``own`` keeps its charge; nothing was read).
    LedgerError
        If a ledger cannot record a charge (likewise).
    """
    if not plan:
        return
    events = tuple(ev for ev, _ in plan)
    if own is not None:
        if validation_plan:
            both = events + tuple(ev for ev, _ in validation_plan)
            try:
                own.check(ComposedEvent(events=both, relation=own.relation))
            except BudgetExceededError as exc:
                raise BudgetExceededError(
                    "The estimator's own accountant is also the search's accountant: it cannot pay for both the "
                    f"training plan and the validation releases. {exc} Give the estimator and the search separate "
                    "accountants (the roles' rows are disjoint, so their guarantees are not added), or raise its "
                    "budget.", requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling) from None
        label = f"the training plan of a PrivateSearchCV ({', '.join(phase for _, phase in plan)})"
        try:
            own.spend(ComposedEvent(events=events, relation=own.relation, label=label),
                      phase="PrivateSearchCV training plan", role="training")
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"The estimator's own accountant cannot pay for the search's training plan: {exc} Nothing was read, "
                "and nothing was charged to the search's training accountant either.", requested=exc.requested,
                spent=exc.spent, ceiling=exc.ceiling) from None
    try:
        reservation = acc.reserve(events)
        for ev, phase in plan:
            acc.spend(ev, phase=phase, role="training", reservation=reservation)
    except (BudgetExceededError, LedgerError) as exc:
        if own is None:
            raise
        note = (f"{exc} The estimator's own accountant was charged the whole training plan just before: it keeps "
                "that charge although no fit ran and no row was read (it records more than was spent, never less).")
        if isinstance(exc, BudgetExceededError):
            raise BudgetExceededError(note, requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling) from exc
        raise LedgerError(note) from exc


def per_fit_event(estimator: Any) -> tuple[PrivacyEvent, Budget]:
    """The declared event of one fit and its (epsilon, delta) at the estimator's delta (public).

    For a pipeline (:func:`training_steps`): its DP steps' events in order, composed
    (one step: that step's own), at the sum of the steps' deltas.
    """
    if is_pipeline(estimator):
        parts = [per_fit_event(step) for _, kind, step in training_steps(estimator) if kind in ("dp", "final")]
        if len(parts) == 1:
            return parts[0]
        names = [name for name, kind, _ in training_steps(estimator) if kind in ("dp", "final")]
        event = ComposedEvent(events=tuple(ev for ev, _ in parts), relation=parts[-1][0].relation,
                              label=f"one fit of the pipeline's DP steps ({', '.join(names)})")
        delta = math.fsum(b.delta for _, b in parts)
        return event, compose_events([event], delta=delta)
    event = estimator._fit_privacy_event()
    if not isinstance(event, PrivacyEvent):
        raise InvalidParameterError(
            f"{type(estimator).__name__}._fit_privacy_event() must return a privtune PrivacyEvent.")
    fixed = event.epsilon_delta()
    delta = float(estimator.get_params(deep=False).get("delta") or 0.0) if fixed is None else fixed[1]
    budget = compose_events([event], delta=delta) if fixed is None else Budget(*fixed)
    return event, budget


def _bounded_by(event: PrivacyEvent, one_fit: PrivacyEvent, ticket: PrepaidFitAccountant) -> bool:
    """Whether ``one_fit`` bounds ``event`` in every composition, not only at one (epsilon, delta) (public).

    The plan composes ``n_fits`` copies of ``one_fit``, so a candidate's fit is
    covered only if ``one_fit`` *dominates* it: every privacy profile (or every
    Rényi order, for curves composed in RDP) of the candidate is at most
    ``one_fit``'s, and adaptive composition of dominated mechanisms is then
    bounded by composing the dominating one (Zhu, Dong & Wang 2022, Thm. 10;
    Mironov 2017, Prop. 1 for RDP). Costing at most one fit at the
    estimator's delta is not enough: a pure-epsilon Laplace fit at the
    epsilon of one Gaussian fit composes far worse than Gaussian fits do
    (eight of them: 7.9 against 3.1). The rules, each exact:

    * the same event;
    * a Gaussian (same relation and kind) with at least ``one_fit``'s noise
      multiplier;
    * any event when ``one_fit`` is a fixed (epsilon, delta) or Laplace
      guarantee and the candidate satisfies it: the (epsilon, delta) pair's
      profile is the largest of every mechanism with that guarantee;
    * a Rényi curve at most ``one_fit``'s at each of its orders;
    * for a pipeline's composed event, the same number of steps, each the same
      event or a Gaussian with at least the noise multiplier of ``one_fit``'s
      (the candidate's composition is then a post-processing of ``one_fit``'s,
      step by step).

    Anything else is refused by the caller (it may be cheaper, but privtune
    cannot show it).
    """
    if event == one_fit:
        return True
    if event.relation != one_fit.relation or event.is_conditional() and not one_fit.is_conditional():
        return False
    if isinstance(one_fit, ComposedEvent):  # a pipeline's DP steps: step by step, by the exact rules only
        return (isinstance(event, ComposedEvent) and len(event.events) == len(one_fit.events)
                and all(e == o or (isinstance(o, GaussianEvent) and isinstance(e, GaussianEvent)
                                   and e.vector == o.vector and e.relation == o.relation
                                   and e.noise_multiplier >= o.noise_multiplier)
                        for e, o in zip(event.events, one_fit.events, strict=True)))
    if isinstance(one_fit, GaussianEvent):
        return (isinstance(event, GaussianEvent) and event.vector == one_fit.vector
                and event.noise_multiplier >= one_fit.noise_multiplier)
    if isinstance(one_fit, (EpsilonDeltaEvent, LaplaceEvent)):
        if isinstance(one_fit, LaplaceEvent) and not isinstance(event, LaplaceEvent):
            return False  # a Laplace fit is composed on its own curve, tighter than (epsilon, 0)'s
        try:
            ticket.check(event)
        except BudgetExceededError:
            return False
        return True
    if isinstance(one_fit, RenyiEvent) and isinstance(event, RenyiEvent):
        bound = np.asarray(event.rdp_at(np.asarray(one_fit.orders)), dtype=float)
        return bool(np.all(bound <= np.asarray(one_fit.epsilons, dtype=float)))
    return False


def check_candidate_costs(estimator: Any, candidates: Any, one_fit: PrivacyEvent, one_budget: Budget,
                          *, owner: str = "PrivateSearchCV") -> None:
    """Refuse a search space holding a candidate the training plan does not cover (public, nothing spent).

    The training plan pays for every fit at the estimator's own declaration,
    and each fit charges a :class:`PrepaidFitAccountant` of exactly that
    budget. A space over a hyperparameter that prices the fit (the
    estimator's ``epsilon``, ``delta``, ``noise``, ``solver``, ...) could hold
    a candidate whose fit costs more: more than one ticket (the ticket would
    refuse it and abort the search, and with a raw-score method whether that
    candidate is ever fitted depends on the sensitive validation rows), or no
    more than one ticket but more than the plan once composed (see
    :func:`_bounded_by`). A space over what the guarantee itself rests on
    (``clip``, the declared label set) could hold a candidate whose fit reads
    or refuses rows by value. So every candidate is checked now, from the
    hyperparameters alone, as the estimator itself was
    (:func:`check_training_estimator`).

    Raises
    ------
    InvalidParameterError
        If some candidate's configuration does not protect training rows, or
        its declared fit is not covered by the estimator's own declaration.
    """
    name = type(estimator).__name__
    ticket = PrepaidFitAccountant(one_budget)
    cleared: set[Any] = set()
    for params in candidates.params:
        candidate = clone(estimator).set_params(**params)
        try:
            check_training_estimator(candidate, owner=owner)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{exc} (The search space's candidate {params} sets it.)") from None
        event = per_fit_event(candidate)[0]
        try:
            if event == one_fit or event in cleared:
                continue
        except TypeError:  # an unhashable event: checked every time
            pass
        if not _bounded_by(event, one_fit, ticket):
            declared = per_fit_event(candidate)[1]
            raise InvalidParameterError(
                f"With sensitive training rows, every candidate fit is paid for at {name}'s own declaration "
                f"(epsilon={one_budget.epsilon:.4g}, delta={one_budget.delta:.3g} for one fit, composed over the "
                f"search's fits), but the candidate {params} declares a fit of epsilon={declared.epsilon:.4g}, "
                f"delta={declared.delta:.3g} that this declaration does not bound once composed (a different kind "
                "of noise, or more of it). Search over hyperparameters that do not price the fit, or set the "
                "estimator's own privacy parameters to the largest the space allows, with the same noise and "
                "solver.") from None
        try:
            cleared.add(event)
        except TypeError:
            pass


def check_candidate_plans(estimator: Any, candidates: Any, train_sizes: Any, n_features: int, *,
                          like: Any = None, fit_params: Any = None) -> None:
    """Build every candidate's training plan from public sizes before the search charges anything.

    A DP estimator that offers ``_check_fit_plan(n_samples, n_features)`` (privtune's
    margin classifiers and ``DPMLPClassifier``) refuses there a configuration that no exact noise grid or
    float can hold; called by its own ``fit`` that refusal spends nothing, but inside
    a search every fit is prepaid, so it would come after the training role's
    charge (public parameters only, so no leak; the plan's budget would be lost).
    ``train_sizes``: every training-part size a fit can see (folds, the refit).
    A pipeline is checked step by step (:func:`check_training_pipeline`, on a
    public probe row like ``like``, the training table, or zeros of
    ``n_features``; its fit parameters), each DP step at the width it receives.

    Raises
    ------
    InvalidParameterError
        The first candidate's refusal, naming the candidate.
    """
    pipeline = is_pipeline(estimator)
    if not pipeline and not callable(getattr(estimator, "_check_fit_plan", None)):
        return
    like = np.zeros((1, int(n_features))) if like is None else like
    seen: set[Any] = set()
    for params in candidates.params:
        candidate = clone(estimator).set_params(**params)
        key = repr(sorted(candidate.get_params(deep=pipeline).items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        try:
            if pipeline:
                widths = check_training_pipeline(candidate, like, fit_params)
                planned = [(step, w) for (_, kind, step), w in zip(training_steps(candidate), widths, strict=True)
                           if kind in ("dp", "final")]
            else:
                planned = [(candidate, int(n_features))]
            for step, width in planned:
                if callable(getattr(step, "_check_fit_plan", None)):
                    for n in sorted(set(train_sizes)):
                        step._check_fit_plan(int(n), int(width))
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{exc} (The search space's candidate {params} sets it.)") from None


def training_plan(one_fit: PrivacyEvent, *, n_fits: int, refit: bool,
                  stopping_event: PrivacyEvent | None = None) -> list[tuple[PrivacyEvent, str]]:
    """The training role's charges, in order, from public quantities only.

    Parameters
    ----------
    one_fit : PrivacyEvent
        One fit's declared event.
    n_fits : int
        Candidate fits of the search (ignored with ``stopping_event``).
    refit : bool
        Whether ``best_estimator_`` is refitted on the training rows.
    stopping_event : PrivacyEvent or None
        Random stopping: the search's ``RepeatAndSelectEvent``, which covers
        every run's fit whatever K is.

    Returns
    -------
    list of (PrivacyEvent, phase)
    """
    plan: list[tuple[PrivacyEvent, str]] = []
    if stopping_event is not None:
        plan.append((stopping_event, "selection (random stopping)"))
    elif n_fits > 0:
        plan.append((SelfComposedEvent(event=one_fit, count=n_fits, relation=one_fit.relation,
                                       label=f"{n_fits} candidate fits"), "fits"))
    if refit:
        plan.append((one_fit, "refit"))
    return plan


def floor_digits(x: float, digits: int = 4) -> float:
    """``x`` rounded *down* to ``digits`` significant digits (a printed budget a user copies must not round up)."""
    if not (math.isfinite(x) and x > 0):
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - (digits - 1))
    return float(f"{math.floor(x / step) * step:.{digits}g}")


def _final_step(estimator: Any) -> tuple[str, Any]:
    """``("", estimator)``, or a pipeline's last step ``(name, step)``."""
    if is_pipeline(estimator) and estimator.steps:
        return estimator.steps[-1][0], estimator.steps[-1][1]
    return "", estimator


def fit_epsilon_param(estimator: Any) -> str | None:
    """The name (for ``set_params``) of the parameter that prices one fit: ``"epsilon"`` (a pipeline's last
    step's: ``"dplogisticregression__epsilon"``); None if there is none."""
    name, final = _final_step(estimator)
    if not hasattr(final, "get_params") or "epsilon" not in final.get_params(deep=False):
        return None
    return f"{name}__epsilon" if name else "epsilon"


def _fit_label(estimator: Any, epsilon: Any = None) -> str:
    """``DPLogisticRegression(epsilon=1.0)``: the estimator (a pipeline's last step) as the user writes it."""
    _, final = _final_step(estimator)
    if fit_epsilon_param(estimator) is None:
        label = type(final).__name__
    else:
        value = final.get_params(deep=False)["epsilon"] if epsilon is None else epsilon
        label = f"{type(final).__name__}(epsilon={value!r})"
    if is_pipeline(estimator):
        before = [_fit_label(step) for _, kind, step in training_steps(estimator) if kind == "dp"]
        if before:
            label += f" (after {', '.join(before)} in the pipeline)"
    return label


def unaffordable_message(exc: Exception, *, n_fits: int | None, one_fit_budget: Budget, budget: Budget,
                         refit: bool = True, estimator: Any = None, largest: float | None = None,
                         why_no_figure: str | None = None) -> str:
    """A refusal in Python's vocabulary: what the plan is, the per-fit epsilon set, the largest that fits (public).

    Parameters
    ----------
    largest : float or None
        The largest per-fit ``epsilon`` whose plan fits (already rounded down
        and checked), or None with ``why_no_figure`` saying why there is none.
    """
    label = _fit_label(estimator) if estimator is not None else "the estimator"
    what = (f"{n_fits} candidate fits" if n_fits is not None else "the randomly stopped runs (a fit each)")
    plan = (f"{what}{' and the refit' if refit else ''} of {label} (each an (epsilon={one_fit_budget.epsilon:.4g}, "
            f"delta={one_fit_budget.delta:.3g})-DP fit)")
    msg = (f"The training role cannot pay for its plan within the training budget epsilon={budget.epsilon:.4g}, "
           f"delta={budget.delta:.3g}: {plan}. {str(exc).replace(' Nothing was spent.', '')}")
    key = fit_epsilon_param(estimator) if estimator is not None else None
    others = "lower n_iter" + (", set refit=False" if refit else "") + ", or raise PrivateSearchCV's epsilon"
    if largest is not None and key is not None:
        msg += (f" The largest per-fit epsilon this plan affords is {largest:.4g}: use "
                f"{_fit_label(estimator, largest)} (search.set_params(estimator__{key}={largest:.4g})), or {others}.")
    else:
        msg += f" Lower {label}'s per-fit epsilon{f' ({why_no_figure})' if why_no_figure else ''}, or {others}."
    return msg + " Nothing was read or spent."


def _plan_refusal(plan: list[tuple[PrivacyEvent, str]], acc: Accountant,
                  own: Accountant | None) -> tuple[BudgetExceededError, bool] | None:
    """Why the training plan cannot be paid: (the refusal, whether the estimator's own accountant refused), or None.

    Checks only (nothing is charged): the training budget first, then the
    estimator's own accountant, as :func:`charge_training_plan` will charge them.
    """
    events = tuple(ev for ev, _ in plan)
    try:
        acc.check(ComposedEvent(events=events))
    except BudgetExceededError as exc:
        return exc, False
    if own is not None:
        try:
            own.check(ComposedEvent(events=events, relation=own.relation))
        except BudgetExceededError as exc:
            return exc, True
    return None


def is_finite_budget(budget: Budget) -> bool:
    return math.isfinite(budget.epsilon)


class _TrainingRoleMixin:
    """PrivateSearchCV's training role: which fits it pays for, and the plan charged before any row is read."""

    def _reuses_selected_fit(self, settings: SearchSettings, method: Any, n_folds: int) -> bool:
        """Whether ``best_estimator_`` is the selected candidate's own DP fit instead of a new fit (public rule).

        With sensitive training rows, one split (no ``cv``) and a method whose
        release is always one of the candidates it fitted (``random``), the
        selected candidate's model was already fitted on exactly the training
        rows a refit would use, with the same estimator: releasing it is
        post-processing of outputs already paid for (every fit's DP release and
        the private selection), so the training role pays for no refit and each
        fit can have a larger share of the budget. With random stopping it is the
        selected *run's* own fit (the same candidate can run more than once):
        Papernot & Steinke's bound covers the best run's whole output, its model
        included.
        """
        return self.refit and self.sensitive != "validation" and n_folds == 1 and method.name == "random"

    def largest_fit_epsilon(self, n_validation: int, n_classes: int | None = None, *, rtol: float = 1e-4) -> float:
        """The largest per-fit ``epsilon`` of the estimator whose training plan fits the budget -- without any data.

        With sensitive training rows every candidate fit is paid for up front at
        the estimator's own declaration, so the estimator's ``epsilon`` decides
        whether the plan fits the training budget (k Gaussian fits compose to
        about sqrt(k) times one; Laplace fits add up; random stopping costs a
        small multiple of one fit whatever the mean number of runs). This
        searches that ``epsilon`` by bisection on :meth:`privacy_plan`, so it
        is exactly the figure ``fit`` would accept (within the training budget,
        and within what the estimator's own ``accountant`` has left, if it
        holds one): set it with ``search.set_params(estimator__epsilon=...)``.

        Parameters
        ----------
        n_validation : int
            As for :meth:`privacy_plan` (public).
        n_classes : int or None, default=None
            As for :meth:`privacy_plan`.
        rtol : float in (0, 0.1], default=1e-4
            The returned value is within this relative distance below the
            largest affordable one (geometric bisection).

        Returns
        -------
        float
            An ``epsilon`` whose whole plan :meth:`privacy_plan` accepts.

        Raises
        ------
        InvalidParameterError
            If the training rows are public (``sensitive="validation"``), the
            estimator has no ``epsilon`` parameter, the search space sets it,
            or the configuration is invalid for another reason.
        BudgetExceededError
            If not even a per-fit epsilon a millionth of the training budget
            fits (e.g. too many fits for the budget): lower ``n_iter``.

        Notes
        -----
        **Privacy.** Nothing is read and nothing is spent: every figure comes
        from the configuration and the public validation size.
        """
        owner = "PrivateSearchCV.largest_fit_epsilon"
        tol = check_real(rtol, "rtol", low=0.0, high=0.1, closed="right", owner=owner)
        if self.sensitive == "validation":
            raise InvalidParameterError(
                f"{owner}: the training rows are public (sensitive='validation'), so fits spend nothing and any "
                "per-fit epsilon fits.")
        key = fit_epsilon_param(self.estimator)
        if key is None:
            raise InvalidParameterError(
                f"{owner}: {type(_final_step(self.estimator)[1]).__name__} has no 'epsilon' parameter to choose.")
        settings = self._validate_params()
        if key in settings.space.names:
            raise InvalidParameterError(f"{owner}: the search space sets the estimator's {key!r} itself.")
        top = self._role_budgets(settings)[1].epsilon

        def fits(eps: float) -> bool:
            trial = clone(self).set_params(**{f"estimator__{key}": eps})
            try:
                trial.privacy_plan(n_validation, n_classes)
            except PrivtuneError:
                return False
            return True

        lo = top * 1e-6
        trial = clone(self).set_params(**{f"estimator__{key}": lo})
        try:
            trial.privacy_plan(n_validation, n_classes)
        except BudgetExceededError as exc:
            raise BudgetExceededError(
                f"{owner}: not even a per-fit epsilon of {lo:.3g} (a millionth of the training budget) fits this "
                f"plan: lower n_iter, or raise epsilon. ({exc})", requested=exc.requested, spent=exc.spent,
                ceiling=exc.ceiling) from None
        # any other error at the smallest epsilon is a configuration error: raised above, as privacy_plan's
        if fits(top):
            return float(top)
        hi = top
        while hi > lo * (1.0 + tol):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return float(lo)

    def _largest_affordable(self, settings: SearchSettings, method: Any, candidates: Any, budget: Budget,
                            n_fits: int | None, refit_fit: bool, n_folds: int) -> tuple[float | None, str | None]:
        """The largest per-fit epsilon whose training plan both accountants accept, rounded down (public).

        The same plan as :meth:`_training_role` builds (the same fits, refit and
        random-stopping event), at a trial ``epsilon`` of the estimator, checked
        against the training budget and the estimator's own accountant: so the
        figure is what ``fit`` accepts (the validation role does not depend on
        the estimator's epsilon, except with ``cv`` and random stopping, where a
        run's event is the validation release's too: there no figure is given,
        :meth:`largest_fit_epsilon` answers from the validation size). Bisection
        to a relative 1e-4, as :meth:`largest_fit_epsilon`, then rounded down to
        four significant digits (and checked again).

        Returns
        -------
        (float or None, str or None)
            The figure, or None and why there is none (for the message).
        """
        key = fit_epsilon_param(self.estimator)
        if key is None:
            return None, None
        if any(str(n) == key or str(n).endswith("__" + key) for n in settings.space.names):
            return None, "the search space sets it: narrow its range"
        if settings.stopping and n_folds > 1:
            return None, "search.largest_fit_epsilon(n_validation) gives the largest this plan affords"
        own = settings.own_accountant

        def fits(eps: float) -> bool:
            try:
                trial = clone(self.estimator).set_params(**{key: eps})
                one_fit = per_fit_event(trial)[0]
                event = (method.selection_event(one_fit, label="best of a secret number of DP fits")
                         if settings.stopping else None)
                plan = training_plan(one_fit, n_fits=n_fits or 0, refit=refit_fit, stopping_event=event)
                return _plan_refusal(plan, Accountant(budget), own) is None
            except (PrivtuneError, ArithmeticError, ValueError, TypeError):
                return False

        top = budget.epsilon if math.isfinite(budget.epsilon) else 1e6
        lo = top * 1e-6
        if not fits(lo):
            others = any(kind == "dp" for _, kind, _ in training_steps(self.estimator))
            return None, (f"not even a per-fit epsilon of {lo:.3g} fits this plan: lower n_iter"
                          + (" or the epsilon of the pipeline's other DP steps" if others else "") + " first")
        if fits(top):
            return floor_digits(top), None
        hi = top
        while hi > lo * (1.0 + 1e-4):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        shown = floor_digits(lo)
        return (shown if shown > 0 and fits(shown) else lo), None

    def _training_role(self, settings: SearchSettings, method: Any, candidates: Any, budget: Budget,
                       n_folds: int = 1, ledger: Ledger | None = None
                       ) -> tuple[Accountant | None, list[Any], FitTickets | None]:
        """The training accountant, its whole plan (checked now, before any row is read) and the fits' tickets.

        ``ledger``: where the training accountant records its charges (a stored study's training ledger, empty:
        :func:`refuse_spent_training_study`); ``None``: in memory.

        Raises
        ------
        BudgetExceededError
            If the training budget cannot pay for the plan (nothing spent); the
            message names what to change.
        """
        if self.sensitive == "validation":
            return None, [], None
        one_fit, one_budget = settings.one_fit, settings.one_fit_budget
        check_candidate_costs(self.estimator, candidates, one_fit, one_budget)
        n_evals = method.max_evaluations(candidates)
        stopping = settings.stopping
        n_fits = None if stopping else n_evals * n_folds
        stopping_event = None
        if stopping and n_folds == 1:
            # Disjoint roles: against a training row each run is exactly as private as its fit (its noisy score
            # is a post-processing of the fitted model, the validation rows being fixed), so the training role's
            # bound is Papernot & Steinke's over runs of the fit alone, with the same secret K.
            stopping_event = method.selection_event(one_fit, label="best of a secret number of DP fits "
                                                                   "(Papernot & Steinke 2022)")
        elif stopping:  # cv: the roles overlap; the method's event covers a whole run (its fits and its score)
            stopping_event = method.plan(candidates)[0][0]
        refit_fit = self.refit and not self._reuses_selected_fit(settings, method, n_folds)
        plan = training_plan(one_fit, n_fits=n_fits or 0, refit=refit_fit, stopping_event=stopping_event)
        acc = Accountant(budget, ledger=ledger)
        own = settings.own_accountant
        if plan:
            refusal = _plan_refusal(plan, acc, own)
            if refusal is not None:
                exc, by_own = refusal
                largest, why = self._largest_affordable(settings, method, candidates, budget, n_fits, refit_fit,
                                                        n_folds)
                if by_own:  # the estimator's own accountant pays the same plan (charge_training_plan)
                    figure = (f" The largest per-fit epsilon it affords is {largest:.4g}: use "
                              f"{_fit_label(self.estimator, largest)}." if largest is not None else "")
                    text = ("The estimator's own accountant (its 'accountant' parameter), which a search on "
                            "sensitive training rows charges its whole training plan as well, cannot pay for it: "
                            f"{exc} Nothing was read or spent.{figure} Raise that accountant's budget, lower "
                            f"{_fit_label(self.estimator)}'s per-fit epsilon or n_iter, or give the estimator a "
                            "fresh accountant.")
                else:
                    text = unaffordable_message(exc, n_fits=n_fits, one_fit_budget=one_budget, budget=budget,
                                                refit=refit_fit, estimator=self.estimator, largest=largest,
                                                why_no_figure=why)
                err = BudgetExceededError(text, requested=exc.requested, spent=exc.spent, ceiling=exc.ceiling)
                # for the command line, which says the same in its configuration's keys
                err.largest_fit_epsilon = largest  # type: ignore[attr-defined]
                err.accountant_refusal = str(exc)  # type: ignore[attr-defined]
                raise err from None
        return acc, plan, FitTickets(one_budget, n_fits)
