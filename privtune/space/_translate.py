"""Search spaces as scikit-learn users write them, translated exactly into privtune's dimensions.

``RandomizedSearchCV`` takes ``param_distributions`` (a dict, or a list of
dicts, whose values are lists or scipy.stats distributions) and ``GridSearchCV``
takes a ``param_grid`` (a dict, or a list of dicts, of lists). privtune accepts
the same objects and translates them, reading no data (every bound below is part
of the object the user wrote, hence public):

==========================================  ============================================
what you pass                               what privtune searches
==========================================  ============================================
``scipy.stats.uniform(loc, scale)``         ``Real(loc, loc + scale)``
``scipy.stats.loguniform(a, b)``            ``Real(a, b, log=True)`` (also ``reciprocal``)
``scipy.stats.randint(low, high)``          ``Integer(low, high - 1)`` (``high`` excluded)
a list, tuple or 1-D array of values        ``Categorical(values)``
a list of dicts of lists (a grid)           exactly the grid's points
``Real`` / ``Integer`` / ``Categorical``    itself
==========================================  ============================================

Each translation is exact: privtune's candidates are spread uniformly over each
dimension's encoding (uniform, log-uniform, uniform over the integers, uniform
over the choices), the distributions ``RandomizedSearchCV`` draws from. Other
distributions (``norm``, ``expon``, a shifted ``loguniform``) have no bounded
uniform equivalent and are refused, with the message naming the key. A list of
dicts is read as ``GridSearchCV``'s ``param_grid``: the union of the grids of
its dicts, each a Cartesian product (one dict of lists is read as
``RandomizedSearchCV`` reads it: its candidates are drawn from the product, up
to ``n_candidates`` of them; to search every point, as ``GridSearchCV`` does,
pass ``[param_grid]``); a key a dict leaves out keeps the
estimator's own value (as in scikit-learn, where the estimator's parameter is
then not set), so that value joins that key's choices.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.space._dimensions import Categorical, Dimension, Integer, Real
from privtune.space._search_space import SearchSpace

__all__ = ["as_search_space", "SPACE_FORMS"]

#: The accepted forms, for messages.
SPACE_FORMS = (
    "a dict {name: value} whose values are privtune dimensions (Real, Integer, Categorical), lists of choices, "
    "or scipy.stats uniform / loguniform / randint distributions (uniform(loc, scale) -> Real(loc, loc + scale), "
    "loguniform(a, b) -> Real(a, b, log=True), randint(low, high) -> Integer(low, high - 1), a list -> "
    "Categorical); a list of such dicts of lists (a grid, as GridSearchCV's param_grid); or a SearchSpace")
_MISSING = object()


def as_search_space(
    search_space: Any, *, owner: str = "PrivateSearchCV", defaults: Mapping[str, Any] | None = None,
) -> tuple[SearchSpace, list[dict[str, Any]] | None]:
    """Translate a search space written for scikit-learn into a :class:`SearchSpace` (and a grid).

    Parameters
    ----------
    search_space : SearchSpace, dict or list of dict
        See the module docstring for the accepted forms.
    owner : str, default="PrivateSearchCV"
        Named in error messages.
    defaults : dict, optional
        The estimator's own parameter values (``estimator.get_params()``): a
        key that one dict of a grid leaves out takes this value there.

    Returns
    -------
    space : SearchSpace
    grid : list of dict or None
        For a list of dicts, every point of the grid (each dict's Cartesian
        product, in order, duplicates removed): the search's candidate set is
        exactly these points. None otherwise.

    Raises
    ------
    InvalidParameterError
        For anything else, naming the key, the value's type and the accepted forms.

    Examples
    --------
    >>> import scipy.stats as st
    >>> space, grid = as_search_space({"C": st.loguniform(1e-2, 1e2), "degree": st.randint(2, 5),
    ...                                "kernel": ["rbf", "poly"]})
    >>> space
    SearchSpace({'C': Real(0.01, 100.0, log=True), 'degree': Integer(2, 4), 'kernel': Categorical(['rbf', 'poly'])})
    >>> grid is None
    True
    """
    if isinstance(search_space, SearchSpace):
        return search_space, None
    if isinstance(search_space, Mapping):
        return SearchSpace({_name(k, owner): _dimension(k, v, owner) for k, v in search_space.items()}), None
    if isinstance(search_space, (list, tuple)) and search_space and all(
            isinstance(d, Mapping) for d in search_space):
        return _grid(search_space, owner, defaults or {})
    raise InvalidParameterError(
        f"The 'search_space' parameter of {owner} must be {SPACE_FORMS}. Got {_kind(search_space)}.")


def _kind(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        if not value:
            return f"an empty {type(value).__name__}"
        inner = sorted({type(v).__name__ for v in value})
        return f"a {type(value).__name__} of {', '.join(inner)}"
    return f"a value of type {type(value).__module__}.{type(value).__qualname__}"


def _name(key: Any, owner: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidParameterError(
            f"Hyperparameter names in the 'search_space' of {owner} must be non-empty str (estimator parameter "
            f"names such as 'C' or 'svc__C'). Got {key!r} of type {type(key).__name__}.")
    return key


def _is_frozen_distribution(value: Any) -> bool:
    return hasattr(value, "rvs") and hasattr(value, "dist") and hasattr(value, "support")


def _dimension(key: Any, value: Any, owner: str) -> Dimension:
    """One dimension from one value of a dict."""
    if isinstance(value, Dimension):
        return value
    if _is_frozen_distribution(value):
        return _from_distribution(key, value, owner)
    if isinstance(value, np.ndarray) and value.ndim == 1 or isinstance(value, (list, tuple, range)):
        choices = list(value.tolist() if isinstance(value, np.ndarray) else value)
        if not choices:
            raise InvalidParameterError(
                f"The search space of {owner} gives {key!r} an empty list of choices: give at least one value.")
        try:
            return Categorical(choices)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"The choices of {key!r} in the search space of {owner}: {exc}") from None
    hint = ""
    if isinstance(value, (str, bytes, int, float, bool, np.generic)) or value is None:
        hint = (f" To search a single value write [{value!r}]; to fix it without searching, set it on the "
                "estimator instead.")
    elif hasattr(value, "rvs"):
        hint = " An object with an rvs method cannot be translated without drawing from it; use a privtune dimension."
    raise InvalidParameterError(
        f"The search space of {owner} gives {key!r} {_kind(value)}, which privtune cannot translate.{hint} "
        f"Accepted: {SPACE_FORMS}.")


def _from_distribution(key: Any, dist: Any, owner: str) -> Dimension:
    """A privtune dimension with exactly the distribution of a frozen scipy.stats uniform / loguniform / randint."""
    name = getattr(dist.dist, "name", type(dist.dist).__name__)
    try:
        _, loc, scale = dist.dist._parse_args(*dist.args, **dist.kwds)
        lo, hi = (float(v) for v in dist.support())
    except Exception:  # noqa: BLE001 - an unusual frozen object: refused below with its name
        name, loc, scale, lo, hi = f"{name} (unreadable)", 0.0, 1.0, float("nan"), float("nan")
    try:
        if name == "uniform" and np.isfinite([lo, hi]).all() and lo < hi:
            return Real(lo, hi)
        if name in ("loguniform", "reciprocal") and loc == 0 and scale == 1 and 0 < lo < hi < np.inf:
            return Real(lo, hi, log=True)
        if name == "randint" and np.isfinite([lo, hi]).all():
            low, high = int(lo), int(hi)
            return Integer(low, high) if low < high else Categorical([low])
    except InvalidParameterError as exc:  # e.g. integers beyond 2**52: say which key
        raise InvalidParameterError(
            f"The search space of {owner} gives {key!r} scipy.stats.{name} on [{lo!r}, {hi!r}]: {exc}") from None
    why = "it is unbounded or not uniform on its bounds"
    if name in ("loguniform", "reciprocal"):
        why = f"it is shifted or scaled (loc={loc!r}, scale={scale!r}), so it is not log-uniform on its bounds"
    raise InvalidParameterError(
        f"The search space of {owner} gives {key!r} scipy.stats.{name}, which has no exact translation: {why}. "
        "privtune searches uniform, log-uniform and integer-uniform dimensions on public bounds: use "
        "scipy.stats.uniform, loguniform or randint, or privtune.space.Real / Integer / Categorical.")


def _grid(dicts: Sequence[Mapping[str, Any]], owner: str,
          defaults: Mapping[str, Any]) -> tuple[SearchSpace, list[dict[str, Any]]]:
    """GridSearchCV's ``param_grid``: the union of each dict's Cartesian product."""
    keys: list[str] = []
    for d in dicts:
        for k in d:
            if _name(k, owner) not in keys:
                keys.append(k)
    points: list[dict[str, Any]] = []
    for i, d in enumerate(dicts):
        lists = []
        for k in keys:
            if k not in d:
                if k not in defaults:
                    raise InvalidParameterError(
                        f"Dict {i} of the grid given as the search space of {owner} leaves out {k!r}, and the "
                        "estimator has no such parameter to keep: give it in every dict.")
                lists.append([defaults[k]])
                continue
            dim = _dimension(k, d[k], owner)
            if not isinstance(dim, Categorical):
                raise InvalidParameterError(
                    f"Dict {i} of the grid given as the search space of {owner} gives {k!r} {dim!r}: in a list of "
                    "dicts (GridSearchCV's param_grid) every value must be a list of choices. For distributions, "
                    "pass one dict (RandomizedSearchCV's param_distributions).")
            lists.append(list(dim.choices))
        for combo in itertools.product(*lists):
            point = dict(zip(keys, combo, strict=True))
            if not any(_same_point(point, p) for p in points):
                points.append(point)
    choices: dict[str, list[Any]] = {k: [] for k in keys}
    for p in points:
        for k in keys:
            if Categorical._find(choices[k], p[k]) is None:
                choices[k].append(p[k])
    return SearchSpace({k: Categorical(v) for k, v in choices.items()}), points


def _same_point(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(Categorical._find((b[k],), v) == 0 for k, v in a.items())
