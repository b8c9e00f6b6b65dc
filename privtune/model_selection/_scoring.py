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
``score_sensitivity``. Scores that are not means of bounded per-row terms
(``r2``, ``roc_auc``) are refused unless their sensitivity is declared.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_integer, check_real

__all__ = ["BoundedScorer", "make_bounded_scorer", "BUILTIN_SCORERS"]

BUILTIN_SCORERS = ("accuracy", "balanced_accuracy", "neg_zero_one_loss", "zero_one_loss", "neg_log_loss")
_REFUSED = {
    "r2": "r2 divides by the variance of the validation targets, so one record can move it without bound",
    "roc_auc": "roc_auc is a ranking statistic whose sensitivity depends on the private class sizes",
}


@dataclass(frozen=True)
class BoundedScorer:
    """A scorer with public bounds and a declared sensitivity rule (picklable).

    Attributes
    ----------
    name : str
    bounds : (float, float)
        Public score range; scores are clipped to it.
    score_func : callable
        ``score_func(estimator, X, y) -> float`` (raw, before clipping).
    rule : {"mean", "fixed", "balanced"}
        ``"mean"``: ``width / m`` (a mean of per-row terms in a range of that width);
        ``"fixed"``: the declared ``value``; ``"balanced"``: ``2 / (K * min_class_size)``.
    width, value, min_class_size : float, float or None, int or None
        Parameters of the rule.
    """

    name: str
    bounds: tuple[float, float]
    score_func: Callable[[Any, Any, Any], float]
    rule: str = "mean"
    width: float = 1.0
    value: float | None = None
    min_class_size: int | None = None

    def __call__(self, estimator: Any, X: Any, y: Any) -> float:
        """The clipped score (a non-finite raw score counts as the lower bound)."""
        v = float(self.score_func(estimator, X, y))
        if not math.isfinite(v):
            return self.bounds[0]
        return min(self.bounds[1], max(self.bounds[0], v))

    def sensitivity(self, n_validation: int, n_classes: int = 2) -> float:
        """Sensitivity of one score on a validation set of public size ``n_validation`` (replace-one)."""
        if self.rule == "fixed":
            return float(self.value)  # type: ignore[arg-type]
        if self.rule == "balanced":
            return 2.0 / (n_classes * self.min_class_size)  # type: ignore[operator]
        return self.width / n_validation


def _accuracy(est: Any, X: Any, y: Any) -> float:
    return float(np.mean(np.asarray(est.predict(X)) == np.asarray(y)))


def _neg_zero_one(est: Any, X: Any, y: Any) -> float:
    return _accuracy(est, X, y) - 1.0


def _balanced_accuracy(est: Any, X: Any, y: Any, *, min_class_size: int) -> float:
    y = np.asarray(y)
    pred = np.asarray(est.predict(X))
    classes = np.asarray(getattr(est, "classes_", np.unique(y)))
    recalls = []
    for c in classes:
        mask = y == c
        tp = float(np.sum(pred[mask] == c))
        recalls.append(tp / max(int(mask.sum()), min_class_size))
    return float(np.mean(recalls))


def _neg_log_loss(est: Any, X: Any, y: Any, *, cap: float) -> float:
    proba = np.asarray(est.predict_proba(X), dtype=float)
    classes = list(est.classes_)
    idx = np.array([classes.index(v) if v in classes else -1 for v in np.asarray(y)])
    p = np.where(idx >= 0, proba[np.arange(len(idx)), np.maximum(idx, 0)], 0.0)
    with np.errstate(divide="ignore"):
        loss = np.minimum(-np.log(np.maximum(p, 0.0)), cap)
    return -float(np.mean(loss))


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
    if isinstance(scoring, str) and scoring in _REFUSED and not fixed:
        raise InvalidParameterError(
            f"scoring={scoring!r} is not supported without a declared 'score_sensitivity': {_REFUSED[scoring]}.")
    if scoring == "accuracy":
        return BoundedScorer("accuracy", (0.0, 1.0), _accuracy, **fixed)
    if scoring in ("neg_zero_one_loss", "zero_one_loss"):
        return BoundedScorer("neg_zero_one_loss", (-1.0, 0.0), _neg_zero_one, **fixed)
    if scoring == "balanced_accuracy":
        if min_class_size is None:
            raise InvalidParameterError(
                "scoring='balanced_accuracy' needs a declared 'min_class_size' (a public lower bound on the number "
                "of validation records per class): the sensitivity is 2 / (K * min_class_size).")
        mcs = check_integer(min_class_size, "min_class_size", low=1, owner=owner)
        return BoundedScorer("balanced_accuracy", (0.0, 1.0), partial(_balanced_accuracy, min_class_size=mcs),
                             **({"rule": "balanced", "min_class_size": mcs} | fixed))
    if scoring == "neg_log_loss":
        if bounds is None or bounds[1] != 0.0:
            raise InvalidParameterError(
                "scoring='neg_log_loss' needs declared 'score_bounds' (-C, 0): per-row log losses are clipped to "
                "[0, C] before averaging, so that the score's sensitivity is C / m.")
        cap = -bounds[0]
        return BoundedScorer("neg_log_loss", bounds, partial(_neg_log_loss, cap=cap), width=cap, **fixed)
    raise InvalidParameterError(
        f"The 'scoring' parameter of {owner} must be one of {list(BUILTIN_SCORERS)} or a callable "
        f"(estimator, X, y) -> float with declared 'score_bounds'. Got {scoring!r} instead.")
