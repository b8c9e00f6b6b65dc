"""Differentially private preprocessing with scikit-learn's interface.

- :class:`DPStandardScaler`: standardization with a DP mean and variance from
  declared per-feature bounds (the private counterpart of
  :class:`sklearn.preprocessing.StandardScaler`). Put it before a privtune DP
  estimator in a ``Pipeline``; :class:`~privtune.model_selection.PrivateSearchCV`
  then fits and charges the two together, with sensitive training rows too.

Which other pipeline steps a search with sensitive training rows accepts
(stateless transformers, transformers fitted on public data and frozen) is
described in ``docs/trainers.md`` ("Scaling the features, and pipelines with
sensitive training rows").
"""

from privtune.preprocessing._scaler import DPStandardScaler

__all__ = ["DPStandardScaler"]
