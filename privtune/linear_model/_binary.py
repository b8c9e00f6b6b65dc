"""What privtune's binary linear DP classifiers share after training: labels in, labels and probabilities out.

:class:`_BinaryLinearClassifier` encodes the (declared or read) label pair as
+1 / -1 and predicts from ``decision_function``; :class:`_SigmoidProbaMixin`
turns the margin into probabilities. Both are post-processing of a released
model, except :meth:`_BinaryLinearClassifier._encode_labels`, which ``fit``
calls after charging its accountant.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import match_declared_labels

__all__: list[str] = []


class _BinaryLinearClassifier(ClassifierMixin, BaseEstimator):
    """Label encoding, ``predict`` and the sklearn tags of a binary classifier with a ``classes`` parameter.

    Subclasses implement ``fit`` and ``decision_function`` (the signed score of
    ``classes_[1]``).
    """

    def _encode_labels(self, y: np.ndarray, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """Labels as +1 / -1 and a mask of the rows whose label is usable (public messages only).

        With declared ``classes`` nothing is read to decide the label set, and a
        row whose label is outside it is marked unusable (it will contribute
        nothing) instead of refused. With ``classes=None`` the label set is read
        off ``y`` (outside a training-sensitive search, which requires ``classes``).
        """
        if self.classes is None:
            try:
                check_classification_targets(y)
                y_type = type_of_target(y, input_name="y")
                classes = np.unique(y) if y_type == "binary" else None
            except Exception:  # noqa: BLE001 - labels numpy cannot compare or sort: never the label's own text
                raise InvalidParameterError(
                    f"{owner}.fit needs class labels in y (a continuous target is not supported). Unknown label "
                    "type: continuous or multi-output targets are not supported.") from None
            if y_type != "binary":
                raise InvalidParameterError(
                    f"Only binary classification is supported. The type of the target is {y_type}.")
            if classes.shape[0] != 2:
                raise InvalidParameterError(
                    f"{owner} needs samples of exactly two classes (or declared 'classes'); got "
                    f"{classes.shape[0]} class.")
        else:
            classes = np.sort(np.asarray(self.classes))
        index, usable = match_declared_labels(y, classes)  # entry by entry: no label can raise or move another
        self.classes_ = classes
        return np.where(usable & (index == 1), 1.0, -1.0), usable

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
        return self.classes_[(scores > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = True  # non-finite entries are mapped to 0 row by row (never refused)
        return tags


class _SigmoidProbaMixin:
    """``predict_proba = [1 - p, p]`` with ``p = sigmoid(decision_function)``, and its logarithm."""

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``[1 - p, p]`` with ``p = sigmoid(decision_function)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        p = expit(self.decision_function(X))
        return np.column_stack((1.0 - p, p))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        d = self.decision_function(X)
        return np.column_stack((-np.logaddexp(0.0, d), -np.logaddexp(0.0, -d)))
