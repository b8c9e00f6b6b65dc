"""Scorers with a declared, enforced sensitivity.

A private search releases (noisy) scores, so every scorer must say how much
one record can move its value. Under replace-one on a validation set of public
size m:

==========================  ==================  ====================================================
scoring                     bounds              sensitivity
==========================  ==================  ====================================================
``"accuracy"``              [0, 1]              1 / m
``"neg_zero_one_loss"``     [-1, 0]             1 / m   (``"zero_one_loss"`` is accepted as an alias)
``"balanced_accuracy"``     [0, 1]              2 / (K * min_class_size)   (declared ``min_class_size``)
``"neg_log_loss"``          [-C, 0]             C / m   (per-row losses clipped to [0, C] = -score_bounds[0])
``"r2"``                    declared            declared ``score_sensitivity`` (required)
``"roc_auc"``               [0, 1] or declared  declared ``score_sensitivity`` (required)
callable                    declared            (upper - lower) / m, or a declared ``score_sensitivity``
==========================  ==================  ====================================================

Bounds are enforced, never read off the data: every score is clipped to its
bounds; the per-row log loss is clipped before averaging; balanced accuracy
divides each class's true positives by ``max(n_c, min_class_size)`` over the
declared (public) set of K classes, so that a small class cannot blow up the
sensitivity (this differs from scikit-learn's balanced accuracy when a class is
smaller than ``min_class_size`` or absent). Why 2 / (K M): with denominators
``max(n_c, M)``, moving one record out of (or into) a class changes that class's
recall ``TP_c / max(n_c, M)`` by at most ``1 / M`` (if ``n_c - 1 >= M`` the change is
``|t n_c - TP_c| / (n_c (n_c - 1)) <= 1 / (n_c - 1) <= 1 / M``; otherwise the
denominator stays M and TP_c moves by at most 1), a replacement touches at most
two classes, and the K recalls are averaged. A callable scorer's bounds and
sensitivity are the user's declaration: ``(upper - lower) / m`` is valid when the
score is a mean of per-row terms within the bounds; otherwise pass
``score_sensitivity``. Two built-in scores are not means of bounded per-row
terms, and have their own proven rules, computed like a callable with a
declared sensitivity (below) by privtune's own total versions of the
statistics: ``r2`` (:func:`_r2_declared`) divides by the variance of the
validation targets, so one row can move it over its whole range; it needs
declared ``score_bounds`` and its sensitivity is their width (a declared
``score_sensitivity`` may only be larger). ``roc_auc``
(:func:`_roc_auc_shrunk`) needs a declared ``min_class_size`` M and counts at
least M rows per class (the usual ROC AUC when each class has M validation
rows or more, shrunk towards 1/2 below, as balanced accuracy's denominators
are), which bounds its sensitivity by 3 / (2 M) whatever the private class
counts (the proof is in the function's docstring).

Failure paths (row isolation). A sensitivity bounds how much *one row's term*
can move, so one row must never be able to move the whole score, nor change how
another row is computed. Every built-in scorer is computed from per-row terms
with :func:`~privtune.model_selection._isolation.isolated_row_values`: the rows
are scored in fixed blocks of public size, one ``predict`` / ``predict_proba``
per block when nothing fails; a row whose output is non-finite, or that makes
the block's call raise, gets the scorer's **worst per-row value** (wrong for
accuracy and balanced accuracy, the capped loss ``C`` for log loss), and every
other row keeps the value it has in a call over its whole block (after a
raising call, the block is evaluated again with the failing rows replaced by a
working row: see :mod:`~privtune.model_selection._isolation` for the rule and
why). The per-row log loss is clipped to ``[0, C]`` (a probability above 1
cannot earn a negative loss). A callable scorer with the default rule (a mean
of per-row terms in the declared bounds) receives the
:class:`~privtune.model_selection._isolation.IsolatedEstimator` view below (so
a row on which the *estimator* fails changes that row's prediction only) and is
evaluated as a mean over fixed blocks: if the call itself raises or returns a
non-finite value, the block's rows are split in halves down to single rows
(served the predictions computed once on the whole block, so that only the
callable's own arithmetic is re-blocked), and a row on which it still fails
gets the lower bound for its own term. The declaration "a mean of per-row
terms" therefore includes that the callable can score any non-empty subset of
the rows, single rows included (scikit-learn's ``log_loss`` cannot without its
``labels`` argument: a block of one class raises, and such a callable is not a
mean of per-row terms). A callable with a declared ``score_sensitivity`` (not
necessarily a mean) is called once, on an
:class:`~privtune.model_selection._isolation.IsolatedEstimator` view whose
prediction methods give a failing row a fixed fallback output, and on labels
where each label outside the estimator's ``classes_`` is replaced by a class
the view did not predict for that row (a row-by-row map, so neighbouring sets
stay neighbours, and the row still counts as an error); the declared
sensitivity must cover an arbitrary change of one row's prediction and label,
and the callable itself must return a finite value for every validation set
whose labels are within ``classes_`` (if it raises or returns a non-finite
value, the candidate's score is the lower bound, which the declared sensitivity
then does not cover).

Predictions of one row are assumed to depend on that row only, as for every
scikit-learn predictor (a predictor that looks across the rows of its input
is outside every scorer's sensitivity).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.model_selection._isolation import (
    IsolatedEstimator,
    RowBlocks,
    block_rows_for,
    isolated_block_means,
    isolated_row_values,
    row_width,
    take_entries,
    take_rows,
)
from privtune.utils._validation import check_integer, check_real, entrywise_float, match_declared_labels

__all__ = ["BoundedScorer", "make_bounded_scorer", "BUILTIN_SCORERS"]

BUILTIN_SCORERS = ("accuracy", "balanced_accuracy", "neg_zero_one_loss", "zero_one_loss", "neg_log_loss", "r2",
                   "roc_auc")
#: Built-in scores that are not means of bounded per-row terms (their own rules below).
_NOT_MEANS = ("r2", "roc_auc")


@dataclass(frozen=True)
class BoundedScorer:
    """A scorer with public bounds, a declared sensitivity rule and row-isolated evaluation (picklable).

    Attributes
    ----------
    name : str
    bounds : (float, float)
        Public score range; scores are clipped to it.
    score_func : callable or None
        A user callable ``score_func(estimator, X, y) -> float`` (raw, before
        clipping); None for the built-in scorers, which use ``row_term``.
    rule : {"mean", "fixed", "balanced", "width", "auc"}
        ``"mean"``: ``width / m`` (a mean of per-row terms in a range of that width);
        ``"fixed"``: the declared ``value``; ``"balanced"``: ``2 / (K * min_class_size)``;
        ``"width"``: ``width`` (``r2``: one row can move it over its whole range);
        ``"auc"``: ``min(width, 3 / (2 min_class_size))`` (``roc_auc``, see :func:`_roc_auc_shrunk`).
    width, value, min_class_size : float, float or None, int or None
        Parameters of the rule.
    row_term : callable or None
        Built-ins: ``row_term(estimator, X, y) -> ndarray`` of per-row terms.
    row_worst : float
        The worst per-row term, given to a row whose evaluation fails.
    aggregate : {"mean", "balanced"}
        How per-row terms make the score.
    proven : BoundedScorer or None
        For a built-in scorer with a declared ``score_sensitivity``: the same
        scorer with its own rule, a floor for the declared value.
    n_classes : int or None
        ``"balanced"``: the public K that the sensitivity ``2 / (K * M)`` was
        computed with (set by the search with :meth:`with_n_classes`). The
        recalls are averaged over ``max(K, len(classes_))`` classes, a class
        the model lacks counting 0, so that a model with fewer classes than K
        (e.g. a semi-supervised model dropping the unlabelled marker ``-1``)
        cannot move the score by more than the declared sensitivity.
    """

    name: str
    bounds: tuple[float, float]
    score_func: Callable[[Any, Any, Any], float] | None
    rule: str = "mean"
    width: float = 1.0
    value: float | None = None
    min_class_size: int | None = None
    row_term: Callable[[Any, Any, Any], np.ndarray] | None = None
    row_worst: float = 0.0
    aggregate: str = "mean"
    proven: BoundedScorer | None = None
    n_classes: int | None = None

    def with_n_classes(self, n_classes: int) -> BoundedScorer:
        """This scorer, averaging balanced accuracy over at least the ``n_classes`` its sensitivity assumes."""
        return dataclasses.replace(self, n_classes=int(n_classes))

    def __call__(self, estimator: Any, X: Any, y: Any) -> float:
        """The clipped, row-isolated score; never raises or warns because of a row of ``X`` or ``y``.

        Notes
        -----
        **Privacy.** A raw score of the sensitive rows: never log, report or
        return it except through a charged release. Whether the estimator's
        prediction on a row warns (an overflow in a product, a convergence or
        conversion warning) depends on that row, so warnings and floating-point
        error reports are silenced while the sensitive rows are scored.
        """
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return self._isolated_score(estimator, X, y)

    def _isolated_score(self, estimator: Any, X: Any, y: Any) -> float:
        y = np.asarray(y)
        m = int(y.shape[0])
        if self.row_term is not None:
            rows = RowBlocks(X)
            terms = isolated_row_values(
                lambda idx: self.row_term(estimator, rows.take(idx), take_entries(y, idx)), m, self.row_worst,
                block_rows=rows.block_rows)
            v = self._aggregate(estimator, y, terms)
        elif self.rule == "mean":  # a user callable declared to be a mean of per-row terms
            v = float(np.mean(self._callable_block_means(estimator, X, y, m)))
        else:  # a declared sensitivity: one call on a row-isolating view of the estimator
            v = self._declared_callable_score(estimator, X, y)
        if not math.isfinite(v):
            return self.bounds[0]
        return min(self.bounds[1], max(self.bounds[0], v))

    def _callable_block_means(self, estimator: Any, X: Any, y: np.ndarray, m: int) -> np.ndarray:
        """A mean-rule callable over fixed blocks; a failing block is split, its predictions kept (frozen)."""
        func = self.score_func
        bounds = self.bounds

        def open_block(idx: np.ndarray) -> Callable[[np.ndarray], float]:
            X_b, y_b = take_rows(X, idx), y[idx]
            outputs = IsolatedEstimator(estimator).freeze(X_b)  # the estimator sees the whole block, once

            def score(pos: np.ndarray) -> float:
                if pos.shape[0] == idx.shape[0]:
                    return _clipped(func(IsolatedEstimator(estimator, frozen=(X_b, outputs, None)), X_b, y_b),
                                    bounds)
                X_s = take_rows(X_b, pos)
                view = IsolatedEstimator(estimator, frozen=(X_s, outputs, pos))
                return _clipped(func(view, X_s, y_b[pos]), bounds)

            return score

        return isolated_block_means(open_block, m, bounds[0], block_rows=block_rows_for(m, row_width(X)))

    def _declared_callable_score(self, estimator: Any, X: Any, y: np.ndarray) -> float:
        """A callable with a declared sensitivity: one call on a row-isolating view, labels mapped into classes_.

        A label outside the estimator's (public, fitted) ``classes_`` -- a class
        it never saw -- is replaced by a class the view did not predict for that
        row (by its first such class), so that the row still counts as an error
        and the callable only ever meets the estimator's own classes (binary
        ``f1_score`` raises on a third label: one row would have moved the score
        to its bound). The map reads each row's own label and prediction only,
        so neighbouring sets stay neighbours. Non-finite numeric labels of a
        model without ``classes_`` become 0.
        """
        view = IsolatedEstimator(estimator)
        outputs = view.freeze(X)
        view = IsolatedEstimator(estimator, frozen=(X, outputs, None))
        try:
            y = _labels_within_classes(view, X, y)
            return float(self.score_func(view, X, y))
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - the detail may quote data; never kept (SystemExit too)
            return math.nan

    def _aggregate(self, estimator: Any, y: np.ndarray, terms: np.ndarray) -> float:
        if self.aggregate == "balanced":
            return _balanced_mean(estimator, y, terms, self.min_class_size, self.n_classes)
        return float(np.mean(terms))

    def score_public(self, estimator: Any, X: Any, y: Any) -> float:
        """The same score without row isolation, for data that is not a private release (e.g. a test set).

        Errors of the estimator propagate (as scikit-learn's scorers do), so a
        wrong input is reported instead of scored. Used by
        ``PrivateSearchCV.score``; never call it on sensitive rows whose score
        will be released.
        """
        y = np.asarray(y)
        if self.row_term is not None:
            terms = np.asarray(self.row_term(estimator, X, y), dtype=float)
            terms = np.where(np.isfinite(terms), terms, self.row_worst)
            v = self._aggregate(estimator, y, terms)
        else:
            v = float(self.score_func(estimator, X, y))
        if not math.isfinite(v):
            return self.bounds[0]
        return min(self.bounds[1], max(self.bounds[0], v))

    def sensitivity(self, n_validation: int, n_classes: int = 2) -> float:
        """Sensitivity of one score on a validation set of public size ``n_validation`` (replace-one).

        Raises
        ------
        InvalidParameterError
            If a declared ``score_sensitivity`` is below what a built-in
            scorer's own rule proves (that would be too little noise).
        """
        if self.rule == "fixed":
            if self.proven is not None:
                floor = self.proven.sensitivity(n_validation, n_classes)
                if float(self.value) < floor:  # type: ignore[arg-type]
                    raise InvalidParameterError(
                        f"The declared score_sensitivity={self.value!r} is below the sensitivity of scoring="
                        f"{self.name!r} on {n_validation} validation rows ({floor:.6g}, its proven rule): it would "
                        "add too little noise. Leave score_sensitivity=None, or declare at least that value.")
            return float(self.value)  # type: ignore[arg-type]
        if self.rule == "balanced":
            return 2.0 / (n_classes * self.min_class_size)  # type: ignore[operator]
        if self.rule == "width":
            return float(self.width)
        if self.rule == "auc":
            return min(float(self.width), 1.5 / self.min_class_size)  # type: ignore[operator]
        return self.width / n_validation


def _clipped(value: Any, bounds: tuple[float, float]) -> float:
    v = float(value)
    return min(bounds[1], max(bounds[0], v)) if math.isfinite(v) else math.nan


def _labels_within_classes(view: IsolatedEstimator, X: Any, y: np.ndarray) -> np.ndarray:
    """``y`` as ``classes_`` entries, every label outside them replaced by a class not predicted for its row.

    The result is always ``classes_[index]`` (the classes' own dtype), whatever
    the labels hold: if the type of the labels the callable sees depended on
    whether some label were outside the classes, one row could switch every
    other row's type (object-dtype integer labels, which scikit-learn's metrics
    refuse, became integers).
    """
    classes = getattr(view, "classes_", None)
    if classes is None:
        if y.dtype.kind in "fc":
            return np.where(np.isfinite(y), y, 0)
        return y
    classes = np.asarray(classes)
    if len(classes) == 0:
        return y
    index, inside = match_declared_labels(y, classes)
    if not inside.all():
        pred = np.asarray(view.predict(X))
        for i in np.flatnonzero(~inside):
            other = [j for j, c in enumerate(classes.tolist()) if not _same_label(c, pred[i])]
            index[i] = other[0] if other else 0
    return classes[index]


def _same_label(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable labels are different
        return False


def _correct(est: Any, X: Any, y: np.ndarray) -> np.ndarray:
    """1.0 where the prediction equals the label (per row)."""
    pred = np.asarray(est.predict(X))
    if pred.shape != y.shape:
        raise ValueError("prediction shape mismatch")
    return (pred == y).astype(float)


def _correct_minus_one(est: Any, X: Any, y: np.ndarray) -> np.ndarray:
    return _correct(est, X, y) - 1.0


def _neg_log_loss_terms(est: Any, X: Any, y: np.ndarray, *, cap: float) -> np.ndarray:
    """``-min(max(-log p_true, 0), cap)`` per row; non-finite where the probability is not finite."""
    proba = np.asarray(est.predict_proba(X), dtype=float)
    classes = list(est.classes_)
    if proba.ndim != 2 or proba.shape != (y.shape[0], len(classes)):
        raise ValueError("predict_proba shape mismatch")
    idx = np.array([classes.index(v) if v in classes else -1 for v in y], dtype=int)
    p = np.where(idx >= 0, proba[np.arange(len(idx)), np.maximum(idx, 0)], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.clip(-np.log(np.maximum(p, 0.0)), 0.0, cap)  # NaN stays NaN: that row is isolated
    return -loss


def _balanced_mean(est: Any, y: np.ndarray, correct: np.ndarray, min_class_size: int | None,
                   n_classes: int | None = None) -> float:
    """Mean of TP_c / max(n_c, M) over the estimator's (public) classes, over at least ``n_classes`` of them.

    Replacing one row changes at most two classes' terms, each by at most
    ``1 / M``, so the mean over ``k`` classes moves by at most ``2 / (k M)``.
    The sensitivity was declared with the public K (``n_classes``), so the sum
    is divided by ``max(K, len(classes_))``: a model with fewer classes than K
    scores as if its missing classes had recall 0 (it never predicts them).
    """
    classes = getattr(est, "classes_", None)
    if classes is None or len(classes) == 0:
        return math.nan  # not a classifier with a public class set: the lower bound, whatever the rows
    index, inside = match_declared_labels(y, np.asarray(classes))  # entry by entry: no label can raise here
    total = 0.0
    for j in range(len(classes)):
        mask = inside & (index == j)
        total += float(np.sum(correct[mask])) / max(int(mask.sum()), int(min_class_size or 1))
    return total / max(len(classes), int(n_classes or 0))


def make_bounded_scorer(
    scoring: Any,
    *,
    score_bounds: tuple[float, float] | None = None,
    score_sensitivity: float | None = None,
    min_class_size: int | None = None,
) -> BoundedScorer:
    """Build the :class:`BoundedScorer` for a ``scoring`` argument.

    Raises
    ------
    InvalidParameterError
        For an unknown or unbounded scorer, missing declarations, or bad bounds.
    """
    owner = "PrivateSearchCV"
    fixed: dict[str, Any] = {}
    if score_sensitivity is not None:
        fixed = {"rule": "fixed",
                 "value": check_real(score_sensitivity, "score_sensitivity", low=0.0, owner=owner)}
    bounds = None
    if score_bounds is not None:
        if not (isinstance(score_bounds, (tuple, list)) and len(score_bounds) == 2):
            raise InvalidParameterError(
                f"The 'score_bounds' parameter of {owner} must be a (lower, upper) pair. Got {score_bounds!r}.")
        lo = check_real(score_bounds[0], "score_bounds[0]", owner=owner)
        hi = check_real(score_bounds[1], "score_bounds[1]", low=lo, owner=owner)
        bounds = (lo, hi)

    if callable(scoring):
        if bounds is None:
            raise InvalidParameterError(
                f"A callable 'scoring' needs declared 'score_bounds' (lower, upper) in {owner}: privtune never "
                "reads a score's range off the data.")
        return BoundedScorer(getattr(scoring, "__name__", "custom"), bounds, scoring, width=bounds[1] - bounds[0],
                             **fixed)
    if fixed and isinstance(scoring, str) and scoring in BUILTIN_SCORERS:  # a built-in with a proven rule: a floor
        proven = make_bounded_scorer(scoring, score_bounds=score_bounds, min_class_size=min_class_size)
        return dataclasses.replace(proven, rule="fixed", value=fixed["value"], proven=proven)
    if scoring == "accuracy":
        return BoundedScorer("accuracy", (0.0, 1.0), None, row_term=_correct, row_worst=0.0, **fixed)
    if scoring in ("neg_zero_one_loss", "zero_one_loss"):
        return BoundedScorer("neg_zero_one_loss", (-1.0, 0.0), None, row_term=_correct_minus_one, row_worst=-1.0,
                             **fixed)
    if scoring == "balanced_accuracy":
        if min_class_size is None:
            raise InvalidParameterError(
                "scoring='balanced_accuracy' needs a declared 'min_class_size' (a public lower bound on the number "
                "of validation records per class): the sensitivity is 2 / (K * min_class_size).")
        mcs = check_integer(min_class_size, "min_class_size", low=1, owner=owner)
        return BoundedScorer("balanced_accuracy", (0.0, 1.0), None, row_term=_correct, row_worst=0.0,
                             aggregate="balanced", **({"rule": "balanced", "min_class_size": mcs} | fixed))
    if scoring in _NOT_MEANS:
        return _not_a_mean_scorer(scoring, bounds, min_class_size)
    if scoring == "neg_log_loss":
        if bounds is None or bounds[1] != 0.0:
            raise InvalidParameterError(
                "scoring='neg_log_loss' needs declared 'score_bounds' (-C, 0): per-row log losses are clipped to "
                "[0, C] before averaging, so that the score's sensitivity is C / m.")
        cap = -bounds[0]
        return BoundedScorer("neg_log_loss", bounds, None, width=cap, row_term=partial(_neg_log_loss_terms, cap=cap),
                             row_worst=-cap, **fixed)
    raise InvalidParameterError(
        f"The 'scoring' parameter of {owner} must be one of {list(BUILTIN_SCORERS)} or a callable "
        f"(estimator, X, y) -> float with declared 'score_bounds'. Got {scoring!r} instead.")


def _not_a_mean_scorer(scoring: str, bounds: tuple[float, float] | None, min_class_size: Any) -> BoundedScorer:
    """``"r2"`` / ``"roc_auc"``: scores that are not means of bounded per-row terms, with their own proven rules.

    ``r2`` divides by the variance of the validation targets, so one row can
    move it over its whole (declared, clipped) range: its sensitivity is the
    width of ``score_bounds``, which it needs declared. ``roc_auc`` is a
    ranking statistic whose sensitivity depends on the class counts, which are
    private: with a declared ``min_class_size`` M it is computed as
    :func:`_roc_auc_shrunk` (the usual ROC AUC when both classes have at least
    M validation rows, shrunk towards 0.5 below), whose sensitivity is at most
    3 / (2 M) whatever the counts.
    """
    owner = "PrivateSearchCV"
    if scoring == "r2":
        if bounds is None:
            raise InvalidParameterError(
                "scoring='r2' needs declared 'score_bounds' (lower, upper): r2 is unbounded below, and privtune "
                "clips every score to declared bounds, e.g. score_bounds=(-1.0, 1.0). Its sensitivity is their "
                "width (r2 divides by the variance of the validation targets, so one row can move it over the whole "
                "range): the selection is close to a random pick unless epsilon is large. For a useful private "
                "selection, score with a mean of bounded per-row terms (a callable with score_bounds, e.g. a "
                "clipped negative squared error; see docs/methods.md).")
        return BoundedScorer("r2", bounds, _r2_declared, rule="width", width=bounds[1] - bounds[0])
    if min_class_size is None:
        raise InvalidParameterError(
            "scoring='roc_auc' needs a declared 'min_class_size' M (a public number of validation rows of each "
            "class that you expect, e.g. min_class_size=20): privtune computes ROC AUC with at least M rows "
            "counted per class (the usual ROC AUC when each class has M rows or more, shrunk towards 0.5 below), "
            "whose sensitivity is 3 / (2 M) whatever the private class counts.")
    mcs = check_integer(min_class_size, "min_class_size", low=1, owner=owner)
    bounds = (0.0, 1.0) if bounds is None else bounds
    return BoundedScorer("roc_auc", bounds, partial(_roc_auc_shrunk, min_class_size=mcs), rule="auc",
                         width=bounds[1] - bounds[0], min_class_size=mcs)


def _finite_floats(values: Any) -> np.ndarray:
    """``values`` as float64 entry by entry, each entry that is not a finite number 0.0 (a row-by-row map)."""
    out = entrywise_float(values)
    return np.where(np.isfinite(out), out, 0.0)


def _r2_declared(estimator: Any, X: Any, y: Any) -> float:
    """R² (scikit-learn's ``r2_score``, outputs averaged uniformly) that is finite whatever the rows hold.

    Labels and predictions are read entry by entry, a non-number or non-finite
    entry being 0.0 (row by row, so neighbouring sets stay neighbours); both are
    divided by the largest magnitude among them before squaring (R² does not
    change, and no square overflows); constant targets give 1.0 for a perfect
    prediction, else 0.0 (scikit-learn's ``force_finite``).
    """
    t = _finite_floats(y)
    p = _finite_floats(estimator.predict(X))
    if t.shape[0] != p.shape[0] or t.size != p.size:
        raise ValueError("prediction shape mismatch")
    t, p = t.reshape(t.shape[0], -1), p.reshape(t.shape[0], -1)
    scale = float(max(np.max(np.abs(t), initial=0.0), np.max(np.abs(p), initial=0.0)))
    if scale > 0.0:
        t, p = t / scale, p / scale
    res = np.sum((t - p) ** 2, axis=0)
    tot = np.sum((t - np.mean(t, axis=0)) ** 2, axis=0)
    with np.errstate(all="ignore"):
        r2 = np.where(tot > 0.0, 1.0 - res / np.where(tot > 0.0, tot, 1.0), np.where(res == 0.0, 1.0, 0.0))
    return float(np.mean(r2))


def _roc_auc_shrunk(estimator: Any, X: Any, y: Any, *, min_class_size: int) -> float:
    r"""Binary ROC AUC with at least ``min_class_size`` rows counted per class; sensitivity 3 / (2 M).

    With P positive and N negative validation rows and G the sum over the P N
    (positive, negative) pairs of +1/2 (the positive scored higher), 0 (a tie)
    or -1/2, the ROC AUC is 1/2 + G / (P N). This computes

        1/2 + G / (max(P, M) max(N, M)),

    which is the ROC AUC when both classes have at least M rows, and shrinks it
    towards 1/2 below (1/2 when a class is absent: no jump). Replacing one row
    (its score, its label or both) moves it by at most 3 / (2 M): if the label
    stays, G moves by at most the row's pairs, N (or P), so the value by at
    most 1 / max(P, M) <= 1 / M; if a positive becomes a negative, with
    D = max(P, M) max(N, M) before and D' = max(P - 1, M) max(N + 1, M) after,
    |G| <= D / 2 and |D' - D| <= max(max(P, M), max(N, M)), so the value moves by
    at most (|D' - D| + N + P - 1) / (2 D') <= 3 / (2 M) (both cases of the
    maximum reduce to 1 / p' + 1 / (2 n') or 1 / n' + 1 / (2 p') with
    p', n' >= M). 2G is an integer computed exactly (from average ranks), so the
    only rounding is the final division's.

    The positive class is ``classes_[1]``, as in scikit-learn's ``"roc_auc"``
    scorer; a label equal to neither class counts as negative (the search maps
    such labels into ``classes_`` first). Scores are ``decision_function``'s
    (else ``predict_proba``'s second column), a non-finite one read as 0.0.
    An estimator without exactly two ``classes_`` raises (its score is then
    the lower bound: public, from the fitted model's classes).
    """
    from scipy.stats import rankdata

    classes = getattr(estimator, "classes_", None)
    if classes is None or len(classes) != 2:
        raise ValueError("scoring='roc_auc' is for binary classifiers (two classes_)")
    if hasattr(estimator, "decision_function"):
        scores = np.asarray(estimator.decision_function(X), dtype=float)
    else:
        scores = np.asarray(estimator.predict_proba(X), dtype=float)[:, 1]
    index, inside = match_declared_labels(np.asarray(y), np.asarray(classes))  # entry by entry: never raises
    positive = inside & (index == 1)
    if scores.shape != positive.shape:
        raise ValueError("decision_function / predict_proba shape mismatch")
    n_pos = int(np.sum(positive))
    n_neg = int(positive.shape[0]) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    ranks2 = np.rint(2.0 * rankdata(np.where(np.isfinite(scores), scores, 0.0))).astype(np.int64)  # 2 x average rank
    twice_u = int(np.sum(ranks2[positive])) - n_pos * (n_pos + 1)  # 2 U (Mann-Whitney: ties count 1/2)
    twice_g = twice_u - n_pos * n_neg
    m = int(min_class_size)
    return 0.5 + twice_g / (2.0 * max(n_pos, m) * max(n_neg, m))
