"""The scikit-learn front door: :class:`PrivateSearchCV` and scorers with declared sensitivity."""

from privtune.model_selection._scoring import BUILTIN_SCORERS, BoundedScorer, make_bounded_scorer
from privtune.model_selection._search import DEFAULT_METHOD, PrivateSearchCV

__all__ = ["BUILTIN_SCORERS", "BoundedScorer", "DEFAULT_METHOD", "PrivateSearchCV", "make_bounded_scorer"]
