"""Canonical, JSON-safe and immutable value trees for :class:`~privtune.report.TuningReport` (internal).

A report holds only trees of ``None``, ``bool``, ``int``, finite ``float``,
``str``, read-only dicts with string keys (in sorted order, as its JSON writes
them, so that a report read back from its JSON renders byte for byte as the
original) and tuples. Non-finite floats are held
as the strings ``"nan"``, ``"inf"`` and ``"-inf"`` (so that equality is exact
and the JSON has no ``NaN`` literal), numpy scalars become Python scalars, and
any other object becomes its ``repr`` with memory addresses removed (so that a
rerun in another process gives the same text).
"""

from __future__ import annotations

import functools
import importlib.metadata
import math
import numbers
import platform
import re
from collections.abc import Mapping
from typing import Any

from privtune.bo.release import FrozenDict

__all__ = ["canon", "plain", "safe_repr", "environment", "as_float", "fmt", "DISTRIBUTIONS"]

#: Distributions whose versions a report records (looked up with importlib.metadata: nothing is imported).
DISTRIBUTIONS = ("privtune", "numpy", "scipy", "scikit-learn", "joblib", "torch", "gpytorch", "botorch",
                 "dp-accounting", "matplotlib")

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def safe_repr(obj: Any) -> str:
    """``repr(obj)`` without memory addresses (``<function f at 0x7f..>`` -> ``<function f>``)."""
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not break a report
        text = f"<{type(obj).__name__}>"
    return _ADDRESS.sub("", text)


def canon(value: Any) -> Any:
    """The canonical immutable form of ``value`` (see the module docstring).

    Parameters
    ----------
    value : object
        A tree of mappings, sequences, numbers, strings and other objects.

    Returns
    -------
    object
        ``None``, ``bool``, ``int``, finite ``float``, ``str``, a read-only dict
        with ``str`` keys in sorted order, or a tuple, recursively.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():  # numpy scalar or 0-d array
        value = value.item()
        if value is None or isinstance(value, (bool, str)):
            return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        return x if math.isfinite(x) else repr(x)
    if isinstance(value, Mapping):  # keys sorted: a report read back from its (sorted) JSON is the same, in order
        return FrozenDict(sorted(((str(k), canon(v)) for k, v in value.items()), key=lambda kv: kv[0]))
    if isinstance(value, (list, tuple)) or (hasattr(value, "tolist") and hasattr(value, "shape")):
        items = value.tolist() if hasattr(value, "tolist") else value
        return tuple(canon(v) for v in items)
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return canon(value.to_dict())
    return safe_repr(value)


def plain(value: Any) -> Any:
    """Inverse view of :func:`canon`: plain ``dict`` and ``list`` (what ``json.dumps`` writes)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def as_float(value: Any) -> float | None:
    """A number held in a report as a float (``"nan"``/``"inf"`` strings decoded), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def fmt(value: Any, digits: int = 4) -> str:
    """Human-readable text of a report value (numbers to ``digits`` significant digits)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    x = as_float(value)
    if x is not None:
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "∞" if x > 0 else "−∞"
        return f"{x + 0.0:.{digits}g}"  # + 0.0: no "-0" for a negative zero
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={fmt(v, digits)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v, digits) for v in value) + "]"
    return str(value)


@functools.cache
def _version(dist: str) -> str | None:  # installed versions do not change within a process
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Versions of privtune and its dependencies, Python and the platform (nothing is imported).

    Returns
    -------
    dict
        ``{"packages": {distribution: version or None}, "python": str,
        "python_implementation": str, "platform": str}``.
    """
    return {"packages": {d: _version(d) for d in DISTRIBUTIONS},
            "python": platform.python_version(), "python_implementation": platform.python_implementation(),
            "platform": platform.platform()}
