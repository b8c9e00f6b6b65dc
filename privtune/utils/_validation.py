"""Parameter validation with messages that name the parameter, its domain and the value.

Every check raises :class:`~privtune.exceptions.InvalidParameterError` with a
message in scikit-learn's template::

    The 'epsilon' parameter of Laplace must be a float in the range (0, inf). Got -1 instead.

The checks are pure: they never read sensitive data beyond the argument they are
given, and they run before any budget is spent.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = [
    "check_real",
    "check_integer",
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_finite_array",
    "keep_entry_types",
    "label_entries",
    "entrywise_float",
    "public_shape",
    "match_declared_labels",
]


def _owner_phrase(owner: str | None) -> str:
    return f" of {owner}" if owner else ""


def _interval(low: float | None, high: float | None, closed: str) -> str:
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: str = "neither",
    allow_inf: bool = False,
    owner: str | None = None,
) -> float:
    """Validate a real scalar and return it as a Python float.

    Parameters
    ----------
    value : object
        The value to check. Booleans, strings, NaN and (unless ``allow_inf``)
        infinities are refused.
    name : str
        Parameter name used in the error message.
    low, high : float or None, default=None
        Bounds of the domain; ``None`` means unbounded on that side.
    closed : {"neither", "left", "right", "both"}, default="neither"
        Which bounds belong to the domain.
    allow_inf : bool, default=False
        Whether ``+inf`` is accepted (when within the bounds).
    owner : str or None, default=None
        Name of the class or function owning the parameter.

    Returns
    -------
    float

    Raises
    ------
    InvalidParameterError
        If the value is not a real number in the domain.
    """
    domain = f"a float in the range {_interval(low, high, closed)}"
    where = f"The {name!r} parameter{_owner_phrase(owner)} must be {domain}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
            value = value.item()
        else:
            raise InvalidParameterError(f"{where}. Got {value!r} of type {type(value).__name__} instead.")
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise InvalidParameterError(f"{where}. Got {value!r} instead.")
    ok_low = low is None or (x >= low if closed in ("both", "left") else x > low)
    ok_high = high is None or (x <= high if closed in ("both", "right") else x < high)
    if not (ok_low and ok_high):
        raise InvalidParameterError(f"{where}. Got {value!r} instead.")
    return x


def check_integer(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    owner: str | None = None,
) -> int:
    """Validate an integer scalar in ``[low, high]`` and return it as a Python int.

    Raises
    ------
    InvalidParameterError
        If the value is not an integer in the closed interval.
    """
    lo = "-inf" if low is None else str(low)
    hi = "inf" if high is None else str(high)
    where = f"The {name!r} parameter{_owner_phrase(owner)} must be an int in the range [{lo}, {hi}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameterError(f"{where}. Got {value!r} of type {type(value).__name__} instead.")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise InvalidParameterError(f"{where}. Got {value!r} instead.")
    return v


def check_epsilon(
    value: Any, name: str = "epsilon", *, owner: str | None = None, allow_inf: bool = False
) -> float:
    """Validate a privacy parameter epsilon: a float in ``(0, inf)``."""
    return check_real(value, name, low=0.0, closed="neither", allow_inf=allow_inf, owner=owner)


def check_delta(
    value: Any, name: str = "delta", *, owner: str | None = None, allow_zero: bool = True
) -> float:
    """Validate a privacy parameter delta: a float in ``[0, 1)`` (or ``(0, 1)``)."""
    return check_real(value, name, low=0.0, high=1.0, closed="left" if allow_zero else "neither",
                      owner=owner)


def check_choice(value: Any, name: str, choices: tuple[str, ...], owner: str) -> str:
    """``value`` if it is one of the strings ``choices``, else an :class:`InvalidParameterError` naming them."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be one of {list(choices)}. Got {value!r} instead.")
    return value


def check_sensitivity(value: Any, name: str = "sensitivity", *, owner: str | None = None) -> float:
    """Validate a declared sensitivity: a finite float in ``(0, inf)``.

    A sensitivity is a *declared* public bound. privtune never reads it off the data.
    """
    return check_real(value, name, low=0.0, closed="neither", owner=owner)


def check_finite_array(
    value: Any,
    name: str,
    *,
    owner: str | None = None,
    ndim: int | tuple[int, ...] | None = None,
    allow_empty: bool = False,
) -> np.ndarray:
    """Convert to a float64 array and refuse NaN, infinities, empty or mis-shaped input.

    The message never contains the array's values (they may be private); it
    names the parameter and the kind of defect only.
    """
    where = f"The {name!r} parameter{_owner_phrase(owner)}"
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{where} must be an array of real numbers.") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise InvalidParameterError(
                f"{where} must have {' or '.join(map(str, allowed))} dimension(s); got {arr.ndim}."
            )
    if arr.size == 0 and not allow_empty:
        raise InvalidParameterError(f"{where} must not be empty.")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{where} contains NaN or infinite values.")
    return arr


# ----------------------------------------------------------------------------- per-entry reading of sensitive inputs
def public_shape(values: Any) -> tuple[int, ...]:
    """The shape of an array-like (its structure, public under replace-one); ``()`` if numpy cannot hold it.

    ``values.shape`` when it has one; else the shape of the object array of its
    entries (no entry is converted, so no value can make this raise).
    """
    shape = getattr(values, "shape", None)
    if shape is not None:
        return tuple(shape)
    try:
        return np.asarray(values, dtype=object).shape
    except Exception:  # noqa: BLE001 - a structure numpy cannot even hold
        return ()


class _UnreadableEntry:
    """A label or target entry that is a sequence of several values: it is no label and no number."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unreadable entry>"


UNREADABLE_ENTRY = _UnreadableEntry()


def _one_entry(e: Any) -> Any:
    if not isinstance(e, (list, tuple, np.ndarray)):
        return e
    try:
        flat = np.asarray(e, dtype=object).reshape(-1)
    except Exception:  # noqa: BLE001 - a ragged entry
        return UNREADABLE_ENTRY
    if flat.size == 1 and not isinstance(flat[0], (list, tuple, np.ndarray)):
        return flat[0]
    return UNREADABLE_ENTRY


def label_entries(y: Any) -> Any:
    """A list or tuple of labels (or targets), read entry by entry so that one entry cannot change the others.

    An entry that is a one-element sequence (a row of a column vector
    ``[[0], [1], ...]``) is that element; an entry that is a sequence of any
    other size is :data:`UNREADABLE_ENTRY` (it matches no class and is not a
    number). Before, the list's shape came from every entry: ``[[0], [1], ...]``
    was a column vector, ravelled with a warning, but one entry replaced by a
    scalar made the list ragged, and every other label became a list that
    matched no class -- one row decided how all the others were read. Arrays
    and other containers (their own shape is public structure) are returned
    unchanged.
    """
    if not isinstance(y, (list, tuple)):
        return y
    return [_one_entry(e) for e in y]


def keep_entry_types(values: Any) -> np.ndarray:
    """``values`` as an array in which one entry never changes how another is read.

    numpy turns a whole list into strings when one entry is a string
    (``np.asarray([0, 1, "x"])`` is ``['0', '1', 'x']``), so one row would change
    every other row's label; one complex entry likewise makes every entry
    complex, and one nested entry makes the conversion fail. For a list-like
    whose conversion promoted its other entries (to strings or complex numbers)
    or failed on a nested entry, an object array is returned instead (each
    entry keeps its own value and type); everything else is ``np.asarray(values)``.
    The decision changes only the array's type, never an entry's meaning: the
    comparisons the scorers and estimators make are the same entry by entry.
    """
    if getattr(values, "dtype", None) is not None:
        return np.asarray(values)  # the caller's own dtype: public structure, kept
    try:
        arr = np.asarray(values)
    except ValueError:  # a ragged cell (one entry a sequence): keep every entry as it is
        return np.asarray(values, dtype=object)
    if arr.dtype.kind in "USc":  # promoted to strings (one string) or to complex (one complex entry)
        obj = np.asarray(values, dtype=object)
        same_kind = str if arr.dtype.kind == "U" else bytes if arr.dtype.kind == "S" else complex
        if obj.shape == arr.shape and not all(isinstance(v, same_kind) for v in obj.flat):
            return obj
    return arr


def entrywise_float(values: Any) -> np.ndarray:
    """``values`` as float64, each entry converted on its own; an entry that is not a real number becomes NaN.

    Used where the values are sensitive and must not be refused for what they
    are (DESIGN's rule 7): the fast path is ``np.asarray(values, float64)``; if
    any entry cannot be converted, every entry is converted separately, so one
    entry's failure affects that entry only (the caller then maps NaN into its
    domain). No entry can make this raise, whatever its ``__float__`` raises;
    only input whose *structure* cannot be an array (ragged) is refused, by the caller, from its shape.
    """
    kind = getattr(getattr(values, "dtype", None), "kind", None)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # no warning may depend on an entry (an overflow of
        warnings.simplefilter("ignore")  # a long double cast, a complex entry): such an entry is inf or NaN
        if kind is not None and kind in "biuf":
            return np.asarray(values, dtype=np.float64)
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        try:
            return np.asarray(values, dtype=np.float64)
        except Exception:  # noqa: BLE001 - any entry's failure (its __float__ may raise anything): entry by entry
            pass
        obj = np.asarray(values, dtype=object)  # ragged rows keep a shorter shape: the caller refuses it by shape
        out = np.full(obj.shape, np.nan)
        for idx, v in np.ndenumerate(obj):
            try:
                out[idx] = float(v)
            except Exception:  # noqa: BLE001 - whatever the entry's __float__ raises, it stays NaN
                pass
    return out


def match_declared_labels(y: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each label's position in the declared ``classes`` and whether it is one of them, entry by entry.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Sensitive labels (as :func:`keep_entry_types` returns them).
    classes : ndarray of shape (k,)
        The declared (public) label set.

    Returns
    -------
    index : ndarray of int64, shape (n,)
        ``j`` where ``y[i] == classes[j]`` (0 for a label outside the set).
    inside : ndarray of bool, shape (n,)
        Whether ``y[i]`` equals one of the declared classes.

    Notes
    -----
    No label can make this raise, warn, or change how another label is
    matched (DESIGN's rule 7): numeric labels against numeric classes and
    strings against strings are compared vectorised; anything else is compared
    one entry at a time, and an entry whose comparison raises or does not give a
    plain bool (``pandas.NA``, a nested array, an object with an odd ``__eq__``)
    is outside the set. The first declared class an entry equals wins.
    """
    y = np.asarray(y)
    classes = np.asarray(classes)
    n = y.shape[0]
    index = np.zeros(n, dtype=np.int64)
    inside = np.zeros(n, dtype=bool)
    kinds = (y.dtype.kind, classes.dtype.kind)
    if all(k in "biuf" for k in kinds) or all(k == "U" for k in kinds) or all(k == "S" for k in kinds):
        for j in range(classes.shape[0] - 1, -1, -1):  # last to first: the first equal class wins
            eq = y == classes[j]
            index[eq] = j
            inside |= eq
        return index, inside
    with warnings.catch_warnings():  # a comparison that warns must not print anything that depends on a label
        warnings.simplefilter("ignore")
        for i in range(n):
            v = y[i]
            for j in range(classes.shape[0]):
                try:
                    eq = v == classes[j]
                    hit = isinstance(eq, (bool, np.bool_)) and bool(eq)
                except Exception:  # noqa: BLE001 - an entry whose comparison fails is outside the set
                    hit = False
                if hit:
                    index[i], inside[i] = j, True
                    break
    return index, inside

