"""Estimators and pipelines fitted on sensitive training rows: their checks, the public probe row, the fit itself.

:func:`check_training_estimator` refuses an estimator whose guarantee does not
cover sensitive training rows; a scikit-learn ``Pipeline`` is accepted step by
step (:func:`training_steps`), run on one public probe row before any charge
(:func:`public_probe`, :func:`check_training_pipeline`) and fitted step by step
(:func:`fit_training`, :func:`isolated_transform`) so that no row's value can
make its fit fail. See :mod:`privtune.model_selection._training`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import clone

from privtune.base import PrivacyTags, get_privacy_tags
from privtune.exceptions import InvalidParameterError
from privtune.model_selection._inputs import frame_kind


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
