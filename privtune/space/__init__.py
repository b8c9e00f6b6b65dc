"""Search spaces, their encoding onto the unit cube, and finite candidate sets Λ.

This subpackage needs numpy and scipy only (it never imports torch).

- :class:`Real`, :class:`Integer`, :class:`Categorical`: dimensions, each
  encoded to one coordinate of ``[0, 1]``.
- :class:`SearchSpace`: an ordered ``{name: dimension}`` mapping with
  ``encode`` / ``decode`` between dicts of hyperparameters and ``[0, 1]^d``.
- :func:`candidate_set` / :class:`CandidateSet`: the finite set Λ over which
  the private Bayesian optimisation runs (scrambled Sobol points plus an
  optional user grid, de-duplicated).
- :func:`as_search_space`: search spaces written for ``RandomizedSearchCV`` /
  ``GridSearchCV`` (scipy.stats distributions, lists, lists of dicts),
  translated exactly into the above.
"""

from __future__ import annotations

from privtune.space._candidates import CandidateSet, candidate_set
from privtune.space._dimensions import Categorical, Dimension, Integer, Real
from privtune.space._search_space import SearchSpace
from privtune.space._translate import as_search_space

__all__ = [
    "CandidateSet",
    "Categorical",
    "Dimension",
    "Integer",
    "Real",
    "SearchSpace",
    "as_search_space",
    "candidate_set",
]
