"""What privtune's linear DP classifiers share after training: labels in, labels and probabilities out.

:class:`_LinearClassifier` encodes the (declared or read) label set for
``fit`` and predicts from ``decision_function``: binary classifiers get +1 / -1
labels and a signed score of ``classes_[1]``; the classifiers whose
``_multiclass()`` is true also take ``K > 2`` classes (one weight vector per
class) and score each class. :class:`_LogisticProbaMixin` turns a
logistic model's scores into probabilities. All of it is post-processing of a
released model, except :meth:`_LinearClassifier._label_index`, which ``fit``
calls after charging its accountant.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import match_declared_labels

__all__: list[str] = []


class _ScorePredictMixin:
    """``predict`` from ``decision_function``: the sign of a 1-D score (``classes_[1]`` when positive), else the
    class of the largest score. Shared by the linear classifiers and privtune.neural_network's ``DPMLPClassifier``
    and ``DPSGDClassifier``.
    """

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)  # checks that the model is fitted
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]


class _LinearClassifier(_ScorePredictMixin, ClassifierMixin, BaseEstimator):
    """Label encoding, ``predict`` and the sklearn tags of a classifier with a ``classes`` parameter.

    Subclasses implement ``fit`` and ``decision_function``: the signed score of
    ``classes_[1]`` (shape ``(n,)``) for two classes, one score per class
    (shape ``(n, K)``) for more; and :meth:`_multiclass`, whether ``K > 2`` is
    supported with the current parameters.
    """

    def _multiclass(self) -> bool:
        """Whether more than two classes are supported with the current parameters (public)."""
        return False

    def _check_classes_param(self, owner: str) -> None:
        """Refuse a declared ``classes`` that is not a set of distinct labels of the supported size (public)."""
        if self.classes is None:
            return
        try:
            cl = np.asarray(self.classes)
            distinct = np.unique(cl).shape[0] if cl.ndim == 1 else -1
        except (TypeError, ValueError):  # labels numpy cannot hold or sort
            cl, distinct = np.empty((0, 0)), -1
        enough = cl.ndim == 1 and distinct == cl.shape[0] and (
            cl.shape[0] >= 2 if self._multiclass() else cl.shape[0] == 2)
        if not enough:
            what = "at least two distinct labels" if self._multiclass() else "two distinct labels"
            raise InvalidParameterError(
                f"The 'classes' parameter of {owner} must be None or {what}. Got {self.classes!r} instead.")

    def _label_index(self, y: np.ndarray, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """Each row's class index in ``classes_`` and whether its label is usable; sets ``classes_``.

        With declared ``classes`` nothing is read to decide the label set, and a
        row whose label is outside it is marked unusable (it will contribute
        nothing) instead of refused. With ``classes=None`` the label set is read
        off ``y`` (outside a training-sensitive search, which requires
        ``classes``); the messages quote the target's type and the number of
        classes only.
        """
        if self.classes is None:
            accepted = ("binary", "multiclass") if self._multiclass() else ("binary",)
            try:
                if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "biu" and y.shape[0] > 0:
                    # integer labels: type_of_target's answer from one np.unique (it would sort them twice more)
                    classes = np.unique(y)
                    y_type = "binary" if classes.shape[0] <= 2 else "multiclass"
                else:
                    y_type = type_of_target(y, input_name="y")
                    classes = None
                if y_type != "binary":  # its checks and warning (a binary target passes them)
                    check_classification_targets(y)
                if y_type in accepted and classes is None:
                    classes = np.unique(y)
            except Exception:  # noqa: BLE001 - labels numpy cannot compare or sort: never the label's own text
                raise InvalidParameterError(
                    f"{owner}.fit needs class labels in y (a continuous target is not supported). Unknown label "
                    "type: continuous or multi-output targets are not supported.") from None
            if y_type not in accepted:
                if self._multiclass():
                    raise InvalidParameterError(
                        f"{owner} supports binary and multiclass targets; the type of the target is {y_type}.")
                raise InvalidParameterError(
                    f"Only binary classification is supported. The type of the target is {y_type}.")
            if classes.shape[0] < 2:
                what = "at least two classes" if self._multiclass() else "exactly two classes"
                raise InvalidParameterError(
                    f"{owner} needs samples of {what} (or declared 'classes'); got {classes.shape[0]} class.")
        else:
            classes = np.sort(np.asarray(self.classes))
        index, usable = match_declared_labels(y, classes)  # entry by entry: no label can raise or move another
        self.classes_ = classes
        return index, usable

    def _encode_labels(self, y: np.ndarray, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """Binary labels as +1 (``classes_[1]``) / -1 and a mask of the usable rows (see :meth:`_label_index`)."""
        index, usable = self._label_index(y, owner)
        return np.where(usable & (index == 1), 1.0, -1.0), usable

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._multiclass()
        tags.input_tags.allow_nan = True  # non-finite entries are mapped to 0 row by row (never refused)
        return tags


class _LogisticProbaMixin:
    """Probabilities of a logistic model: ``[1 - p, p]`` with ``p = sigmoid(score)`` for two classes, the softmax
    of the scores (a multinomial model) for more. Also ``DPMLPClassifier``'s and ``DPSGDClassifier``'s, whose
    ``decision_function`` returns its output logits in the same shapes."""

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities.

        Two classes: ``[1 - p, p]`` with ``p = sigmoid(decision_function)``.
        More (a multinomial model): the softmax of ``decision_function``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            p = expit(d)
            return np.column_stack((1.0 - p, p))
        return softmax(d, axis=1)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            return np.column_stack((-np.logaddexp(0.0, d), -np.logaddexp(0.0, -d)))
        return log_softmax(d, axis=1)
