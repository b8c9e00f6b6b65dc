"""Reading TOML and the typed table accessor that collects every problem with its dotted key."""

from __future__ import annotations

import difflib
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from privtune.config._schema import ConfigError


def _toml_module() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # pragma: no cover - Python 3.10 only
        import tomli

        return tomli
    except ImportError:  # pragma: no cover - Python 3.10 only
        raise ConfigError([("<config>", "reading TOML on Python 3.10 needs the 'tomli' package "
                                        "(pip install tomli), or use Python >= 3.11")]) from None


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a TOML file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        If the file is missing, unreadable or not valid TOML.
    """
    toml = _toml_module()
    p = Path(path)
    if not p.is_file():
        raise ConfigError([(str(p), "configuration file not found")])
    try:
        with open(p, "rb") as fh:
            return toml.load(fh)
    except toml.TOMLDecodeError as exc:
        raise ConfigError([(str(p), f"invalid TOML: {exc}")]) from None
    except OSError as exc:
        raise ConfigError([(str(p), f"cannot read the file: {exc.strerror}")]) from None


# -- value checking -----------------------------------------------------------------------------------
def _show(value: Any) -> str:
    """A value as TOML would spell it (for error messages)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return "an array"
    return repr(value)


_MISSING = object()


class _Table:
    """A TOML table being validated: typed getters that record problems under dotted keys."""

    def __init__(self, data: Mapping[str, Any], prefix: str, problems: list[tuple[str, str]]) -> None:
        self.data, self.prefix, self.problems = data, prefix, problems
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> None:
        self.problems.append((self.key(name), message))

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: Any = _MISSING, *, required: bool = False) -> Any:
        self.used.add(name)
        if name not in self.data:
            if required:
                self.error(name, "required key is missing")
            return default
        return self.data[name]

    def _typed(self, name: str, default: Any, required: bool, what: str, ok: Callable[[Any], bool]) -> Any:
        v = self.raw(name, _MISSING, required=required)
        if v is _MISSING:
            return default
        if not ok(v):
            self.error(name, f"expected {what}, got {_show(v)}")
            return _MISSING
        return v

    def float(self, name: str, default: Any = None, *, required: bool = False, low: float | None = None,
              high: float | None = None, low_closed: bool = False, high_closed: bool = False) -> Any:
        parts = []
        if low is not None:
            parts.append(f"{'>=' if low_closed else '>'} {low:g}")
        if high is not None:
            parts.append(f"{'<=' if high_closed else '<'} {high:g}")
        what = "a float" + (" " + " and ".join(parts) if parts else "")

        def ok(v: Any) -> bool:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return False
            if low is not None and (v < low or (v == low and not low_closed)):
                return False
            return not (high is not None and (v > high or (v == high and not high_closed)))

        v = self._typed(name, default, required, what, ok)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    def int(self, name: str, default: Any = None, *, required: bool = False, low: int | None = None,
            high: int | None = None) -> Any:
        parts = []
        if low is not None:
            parts.append(f">= {low}")
        if high is not None:
            parts.append(f"<= {high}")
        what = "an integer" + (" " + " and ".join(parts) if parts else "")

        def ok(v: Any) -> bool:
            return (isinstance(v, int) and not isinstance(v, bool) and (low is None or v >= low)
                    and (high is None or v <= high))

        return self._typed(name, default, required, what, ok)

    def bool(self, name: str, default: Any = None, *, required: bool = False) -> Any:
        return self._typed(name, default, required, "true or false", lambda v: isinstance(v, bool))

    def str(self, name: str, default: Any = None, *, required: bool = False,
            choices: tuple[str, ...] | list[str] | None = None) -> Any:
        if choices is None:
            return self._typed(name, default, required, "a non-empty string", lambda v: isinstance(v, str) and v != "")
        what = "one of " + ", ".join(json.dumps(c) for c in choices)
        return self._typed(name, default, required, what, lambda v: isinstance(v, str) and v in choices)

    def table(self, name: str, *, required: bool = False) -> Any:
        return self._typed(name, None, required, "a table", lambda v: isinstance(v, Mapping))

    def str_list(self, name: str) -> Any:
        return self._typed(name, None, False, "a non-empty array of distinct non-empty strings",
                           lambda v: isinstance(v, list) and len(v) > 0
                           and all(isinstance(s, str) and s for s in v) and len(set(v)) == len(v))

    def path(self, name: str, base: Path, *, required: bool = False, must_exist: bool = False) -> Any:
        v = self.str(name, required=required)
        if not isinstance(v, str):
            return v if v is _MISSING else None
        p = Path(os.path.expanduser(v))
        if not p.is_absolute():
            p = base / p
        if must_exist and not p.is_file():
            self.error(name, f"file not found: {str(p)!r}")
            return _MISSING
        return p

    def finish(self) -> None:
        """Record every key that no getter asked for as unknown."""
        for k in self.data:
            if k not in self.used:
                close = difflib.get_close_matches(k, sorted(self.used), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                expected = ", ".join(sorted(self.used))
                self.error(k, f"unknown key{hint}; expected one of: {expected}")


def _ok(*values: Any) -> bool:
    return all(v is not _MISSING for v in values)
