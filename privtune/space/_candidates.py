"""Finite candidate sets Λ: scrambled Sobol designs and user grids, de-duplicated.

Kusner et al.'s Algorithms 1 and 2 run over a finite set Λ, and |Λ| enters
their constants (β_t = 2 log(|Λ| t² π² / (3δ)) and c). Λ must be public: it is
built from the declared search space, a seed and an optional user grid, never
from sensitive data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import qmc

from privtune.exceptions import InvalidParameterError
from privtune.space._search_space import SearchSpace
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_integer

__all__ = ["CandidateSet", "candidate_set"]

_MAX_SOBOL_DIMS = 21201  # scipy's direction numbers cover this many dimensions


class CandidateSet:
    """A finite, de-duplicated set Λ of points of a search space.

    Parameters
    ----------
    space : SearchSpace
        The space the points belong to.
    params : sequence of dict
        Points of ``space`` (validated). Points equal after validation
        (categoricals compared by choice, integers by value, reals by float
        value) are kept once, at their first occurrence.

    Attributes
    ----------
    space : SearchSpace
        The search space.
    X : ndarray of shape (n_candidates, d)
        Canonical encodings ``space.encode(p)`` of the points, read-only.
    n_duplicates : int
        How many of the given points were dropped as duplicates.

    Notes
    -----
    ``len(candidates)`` is |Λ| *after* de-duplication, the number that enters
    Kusner et al.'s β_t and c.
    """

    def __init__(self, space: SearchSpace, params: Sequence[Mapping[str, Any]]) -> None:
        if not isinstance(space, SearchSpace):
            raise InvalidParameterError(
                "The 'space' parameter of CandidateSet must be a SearchSpace. "
                f"Got {space!r} of type {type(space).__name__} instead."
            )
        kept: list[dict[str, Any]] = []
        index: dict[tuple[Any, ...], int] = {}
        n_given = 0
        for p in params:
            n_given += 1
            valid = space.validate(p)
            key = tuple(d.key(valid[n]) for n, d in space.items())
            if key not in index:
                index[key] = len(kept)
                kept.append(valid)
        if not kept:
            raise InvalidParameterError(
                "The candidate set must hold at least one point. Got none instead."
            )
        self.space = space
        self._params = kept
        self._index = index
        self.n_duplicates = n_given - len(kept)
        X = space.encode_many(kept)
        X.setflags(write=False)
        self.X = X

    @property
    def params(self) -> list[dict[str, Any]]:
        """The points as dicts (fresh copies, in candidate order)."""
        return [dict(p) for p in self._params]

    def __getitem__(self, i: int) -> dict[str, Any]:
        return dict(self._params[i])

    def __len__(self) -> int:
        return len(self._params)

    @property
    def n_candidates(self) -> int:
        """|Λ|, the number of distinct candidates."""
        return len(self._params)

    @property
    def n_dims(self) -> int:
        """The dimension ``d`` of the encoded points."""
        return self.space.n_dims

    def index_of(self, params: Mapping[str, Any]) -> int:
        """Position of a point in the candidate set.

        Raises
        ------
        InvalidParameterError
            If the point is not in the space or not in the candidate set.
        """
        key = self.space.key(params)
        try:
            return self._index[key]
        except KeyError:
            raise InvalidParameterError(
                f"The point {dict(params)!r} is not in the candidate set."
            ) from None

    def __contains__(self, params: object) -> bool:
        try:
            self.index_of(params)  # type: ignore[arg-type]
        except InvalidParameterError:
            return False
        return True

    def __repr__(self) -> str:
        return f"CandidateSet(n_candidates={len(self)}, space={self.space!r})"


def candidate_set(
    space: SearchSpace,
    n_candidates: int,
    *,
    grid: Iterable[Mapping[str, Any]] | None = None,
    random_state: Any = None,
) -> CandidateSet:
    """Build a candidate set Λ from a scrambled Sobol design and an optional grid.

    Parameters
    ----------
    space : SearchSpace
        The declared search space.
    n_candidates : int
        Number of Sobol points to draw before de-duplication (``>= 0``; ``0``
        only with a grid). Powers of two keep the Sobol design balanced.
    grid : iterable of dict, optional
        User-given points, validated to be in ``space``; they come first in Λ.
    random_state : None, int, numpy Generator or RandomSource, default=None
        Seeds the Sobol scrambling (through
        :meth:`~privtune.utils.RandomSource.numpy_generator`). ``None`` scrambles
        from the OS entropy pool; an int makes Λ reproducible.

    Returns
    -------
    CandidateSet

    Notes
    -----
    The Sobol points are the first ``n_candidates`` points of a scrambled
    (Owen-scrambled, :class:`scipy.stats.qmc.Sobol`) sequence of length
    ``2**ceil(log2(n_candidates))`` drawn with ``random_base2``; truncation
    keeps reproducibility but loses the exact balance of a power-of-two design.
    Each point is decoded to hyperparameter values and re-encoded, so integer
    and categorical coordinates snap to their bin centres.

    Grid points come first, then Sobol points; points with equal decoded values
    (common with integer and categorical dimensions) are kept once, at their
    first occurrence. ``len(result)`` is |Λ| after this de-duplication, the
    number that enters Kusner et al.'s β_t; ``result.n_duplicates`` says how
    many were dropped.

    Examples
    --------
    >>> from privtune.space import Real, SearchSpace, candidate_set
    >>> space = SearchSpace({"C": Real(1e-2, 1e2, log=True), "gamma": Real(1e-3, 1.0, log=True)})
    >>> lam = candidate_set(space, 256, random_state=0)
    >>> len(lam), lam.X.shape
    (256, (256, 2))
    """
    if not isinstance(space, SearchSpace):
        raise InvalidParameterError(
            "The 'space' parameter of candidate_set must be a SearchSpace. "
            f"Got {space!r} of type {type(space).__name__} instead."
        )
    n = check_integer(n_candidates, "n_candidates", low=0, high=2**30, owner="candidate_set")
    grid_points: list[Mapping[str, Any]] = []
    if grid is not None:
        if isinstance(grid, Mapping):
            raise InvalidParameterError(
                "The 'grid' parameter of candidate_set must be a list of dicts, not one dict."
            )
        grid_points = list(grid)
    if n == 0 and not grid_points:
        raise InvalidParameterError(
            "The 'n_candidates' parameter of candidate_set must be an int in the range "
            "[1, 1073741824] when no grid is given. Got 0 instead."
        )
    if space.n_dims > _MAX_SOBOL_DIMS:
        raise InvalidParameterError(
            f"candidate_set supports at most {_MAX_SOBOL_DIMS} dimensions. "
            f"Got {space.n_dims} instead."
        )
    sobol_params: list[dict[str, Any]] = []
    if n > 0:
        seed = check_random_state(random_state, owner="candidate_set").numpy_generator()
        engine = qmc.Sobol(space.n_dims, scramble=True, seed=seed)
        U = engine.random_base2(max(0, math.ceil(math.log2(n))))[:n]
        sobol_params = space.decode_many(np.clip(U, 0.0, 1.0))
    return CandidateSet(space, [*grid_points, *sobol_params])
