"""A named, ordered collection of dimensions encoded onto the unit cube ``[0, 1]^d``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.space._dimensions import Dimension

__all__ = ["SearchSpace"]


class SearchSpace:
    """An ordered mapping ``{name: dimension}`` with an encoding onto ``[0, 1]^d``.

    Coordinate ``j`` of an encoded point belongs to the ``j``-th dimension in
    the order given; see :mod:`privtune.space._dimensions` for the encoding of
    each kind. The search space is public by declaration: it must not be chosen
    by looking at sensitive data.

    Parameters
    ----------
    dimensions : mapping or iterable of (name, Dimension) pairs
        At least one dimension. Names are non-empty strings, all distinct.

    Raises
    ------
    InvalidParameterError
        For an empty space, a non-string or empty name, a duplicate name, or a
        value that is not a :class:`~privtune.space.Dimension`.

    Examples
    --------
    >>> from privtune.space import Categorical, Integer, Real, SearchSpace
    >>> space = SearchSpace({"C": Real(1e-2, 1e2, log=True),
    ...                      "kernel": Categorical(["rbf", "linear"])})
    >>> x = space.encode({"C": 1.0, "kernel": "linear"})
    >>> x.round(6).tolist()
    [0.5, 0.75]
    >>> space.decode(x)
    {'C': 1.0, 'kernel': 'linear'}
    """

    def __init__(
        self, dimensions: Mapping[str, Dimension] | Iterable[tuple[str, Dimension]]
    ) -> None:
        if isinstance(dimensions, Mapping):
            items = list(dimensions.items())
        else:
            try:
                items = [tuple(item) for item in dimensions]
            except TypeError:
                raise InvalidParameterError(
                    "The 'dimensions' parameter of SearchSpace must be a dict {name: dimension} "
                    f"or an iterable of (name, dimension) pairs. Got {dimensions!r} instead."
                ) from None
        if not items:
            raise InvalidParameterError(
                "The 'dimensions' parameter of SearchSpace must hold at least one dimension. "
                "Got an empty space instead."
            )
        names: list[str] = []
        dims: list[Dimension] = []
        for item in items:
            if len(item) != 2:
                raise InvalidParameterError(
                    "The 'dimensions' parameter of SearchSpace must hold (name, dimension) "
                    f"pairs. Got {item!r} instead."
                )
            name, dim = item
            if not isinstance(name, str) or not name:
                raise InvalidParameterError(
                    "Hyperparameter names in SearchSpace must be non-empty str. "
                    f"Got {name!r} of type {type(name).__name__} instead."
                )
            if name in names:
                raise InvalidParameterError(
                    f"Hyperparameter names in SearchSpace must be distinct. Got {name!r} twice."
                )
            if not isinstance(dim, Dimension):
                raise InvalidParameterError(
                    f"The dimension of hyperparameter {name!r} must be a Real, Integer or "
                    f"Categorical. Got {dim!r} of type {type(dim).__name__} instead."
                )
            names.append(name)
            dims.append(dim)
        self._names = tuple(names)
        self._dims = tuple(dims)

    # -- mapping-like access -------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Hyperparameter names in coordinate order."""
        return self._names

    @property
    def dimensions(self) -> tuple[Dimension, ...]:
        """Dimensions in coordinate order."""
        return self._dims

    @property
    def n_dims(self) -> int:
        """Number of encoded coordinates ``d`` (one per hyperparameter)."""
        return len(self._dims)

    def __len__(self) -> int:
        return len(self._dims)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __getitem__(self, name: str) -> Dimension:
        try:
            return self._dims[self._names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def items(self) -> list[tuple[str, Dimension]]:
        """``(name, dimension)`` pairs in coordinate order."""
        return list(zip(self._names, self._dims, strict=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SearchSpace) and self.items() == other.items()

    def __hash__(self) -> int:
        return hash(tuple(self.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n!r}: {d!r}" for n, d in self.items())
        return f"SearchSpace({{{inner}}})"

    # -- validation ---------------------------------------------------------
    def validate(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Check a point and return it with values of the dimensions' Python types.

        Parameters
        ----------
        params : mapping
            One value for every hyperparameter, no other keys.

        Returns
        -------
        dict
            In coordinate order; floats for reals, ints for integers and the
            choice objects for categoricals.

        Raises
        ------
        InvalidParameterError
            For a missing or unknown name, or a value outside its dimension.
        """
        if not isinstance(params, Mapping):
            raise InvalidParameterError(
                "A point of the search space must be a dict {name: value}. "
                f"Got {params!r} of type {type(params).__name__} instead."
            )
        missing = [n for n in self._names if n not in params]
        extra = [k for k in params if k not in self._names]
        if missing or extra:
            raise InvalidParameterError(
                f"A point of the search space must have exactly the keys {list(self._names)!r}. "
                f"Missing {missing!r}, unknown {extra!r}."
            )
        return {n: d.validate(params[n], n) for n, d in zip(self._names, self._dims, strict=True)}

    def __contains__(self, params: object) -> bool:
        try:
            self.validate(params)  # type: ignore[arg-type]
        except InvalidParameterError:
            return False
        return True

    def key(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        """A hashable key of a point (categoricals by choice index); validates it."""
        p = self.validate(params)
        return tuple(d.key(p[n]) for n, d in zip(self._names, self._dims, strict=True))

    # -- encoding -----------------------------------------------------------
    def encode(self, params: Mapping[str, Any]) -> np.ndarray:
        """Encode one point to an array of shape ``(d,)`` in ``[0, 1]^d``."""
        return self.encode_many([params])[0]

    def encode_many(self, params_list: Iterable[Mapping[str, Any]]) -> np.ndarray:
        """Encode points to an array of shape ``(n, d)`` in ``[0, 1]^d``."""
        points = [self.validate(p) for p in params_list]
        out = np.empty((len(points), self.n_dims), dtype=np.float64)
        for j, (n, d) in enumerate(self.items()):
            out[:, j] = d.encode_array([p[n] for p in points]) if points else 0.0
        return out

    def _check_unit(self, X: Any, ndim: int) -> np.ndarray:
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                "An encoded point must be an array of floats in [0, 1]."
            ) from None
        if arr.ndim != ndim or arr.shape[-1] != self.n_dims:
            want = f"({self.n_dims},)" if ndim == 1 else f"(n, {self.n_dims})"
            raise InvalidParameterError(
                f"An encoded point of this space must have shape {want}. Got shape "
                f"{arr.shape} instead."
            )
        if not np.all((arr >= 0.0) & (arr <= 1.0)):  # refuses NaN too
            raise InvalidParameterError(
                "Encoded points must lie in the unit cube [0, 1]^d (finite, no NaN)."
            )
        return arr

    def decode(self, x: Any) -> dict[str, Any]:
        """Decode one point of ``[0, 1]^d`` to a dict of hyperparameter values."""
        return self.decode_many(self._check_unit(x, 1)[None, :])[0]

    def decode_many(self, X: Any) -> list[dict[str, Any]]:
        """Decode an ``(n, d)`` array of points of ``[0, 1]^d`` to a list of dicts."""
        arr = self._check_unit(X, 2)
        columns = [d.decode_array(arr[:, j]) for j, d in enumerate(self._dims)]
        return [dict(zip(self._names, row, strict=True)) for row in zip(*columns, strict=True)]

    def snap(self, X: Any) -> np.ndarray:
        """``encode(decode(x))`` row-wise: the canonical encoding of each point.

        Accepts shape ``(d,)`` or ``(n, d)`` and returns the same shape.
        """
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim == 1:
            return self.encode(self.decode(arr))
        return self.encode_many(self.decode_many(arr))
