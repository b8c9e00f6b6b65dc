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
        rows = [space.validate(p) for p in params]
        codes = [np.asarray([d.code_of(r[n]) for r in rows]) for n, d in space.items()] if rows else None
        self._build(space, codes, len(rows))

    @classmethod
    def _from_codes(cls, space: SearchSpace, codes: Sequence[np.ndarray]) -> CandidateSet:
        """A candidate set from per-dimension arrays of codes (valid by construction; see ``Dimension``)."""
        self = cls.__new__(cls)
        self._build(space, list(codes), len(codes[0]) if len(codes) else 0)
        return self

    def _build(self, space: SearchSpace, codes: list[np.ndarray] | None, n_given: int) -> None:
        if not n_given or codes is None:
            raise InvalidParameterError(
                "The candidate set must hold at least one point. Got none instead."
            )
        codes = [np.asarray(c) for c in codes]
        # De-duplicate on the codes (reals by value, -0.0 == 0.0; integers by value; categoricals by
        # index), keeping each point at its first occurrence, in whole arrays.
        keys = np.column_stack([c.astype(np.float64) + 0.0 if c.dtype.kind == "f" else c.astype(np.float64)
                                for c in codes])
        _, first = np.unique(keys, axis=0, return_index=True)
        first.sort()
        self.space = space
        self._codes = [c[first] for c in codes]
        self._index: dict[tuple[Any, ...], int] | None = None  # built on the first lookup
        self.n_duplicates = n_given - len(first)
        X = np.column_stack([d.encode_codes(c) for d, c in zip(space.dimensions, self._codes, strict=True)])
        X.setflags(write=False)
        self.X = X

    def _row(self, i: int) -> dict[str, Any]:
        return {n: d.value_of(c[i]) for (n, d), c in zip(self.space.items(), self._codes, strict=True)}

    @property
    def params(self) -> list[dict[str, Any]]:
        """The points as dicts (fresh copies, in candidate order)."""
        columns = [[d.value_of(x) for x in c.tolist()] for d, c in zip(self.space.dimensions, self._codes,
                                                                        strict=True)]
        return [dict(zip(self.space.names, row, strict=True)) for row in zip(*columns, strict=True)]

    def __getitem__(self, i: int) -> dict[str, Any]:
        n = len(self)
        j = int(i)
        if not -n <= j < n:
            raise IndexError(f"candidate index {i} out of range for a set of {n}")
        return self._row(j % n)

    def __len__(self) -> int:
        return len(self._codes[0])

    @property
    def n_candidates(self) -> int:
        """|Λ|, the number of distinct candidates."""
        return len(self)

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
        if self._index is None:
            cols = [c.tolist() for c in self._codes]
            index: dict[tuple[Any, ...], int] = {}
            for i, k in enumerate(zip(*cols, strict=True)):
                index.setdefault(k, i)
            self._index = index
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
    Each coordinate is turned into a value of its dimension in whole arrays
    (:meth:`~privtune.space.Dimension.design_codes`: integers and categoricals
    take their bin, reals a short decimal within about 1e-10 of the range of
    the design point) and re-encoded, so integer and categorical coordinates
    snap to their bin centres and every point's encoding decodes back to it.
    65 536 points in 6 dimensions take about 0.06 s
    (``benchmarks/engine/bo_overhead.py --scale``).

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
    rows = [space.validate(p) for p in grid_points]
    codes = [[np.asarray([d.code_of(r[name]) for r in rows])] for name, d in space.items()]
    if n > 0:
        seed = check_random_state(random_state, owner="candidate_set").numpy_generator()
        engine = qmc.Sobol(space.n_dims, scramble=True, seed=seed)
        U = np.clip(engine.random_base2(max(0, math.ceil(math.log2(n))))[:n], 0.0, 1.0)
        for j, d in enumerate(space.dimensions):  # whole columns: no Python object per point
            codes[j].append(d.design_codes(U[:, j]))
    return CandidateSet._from_codes(space, [np.concatenate([c for c in col if c.size]) for col in codes])
