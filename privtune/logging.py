"""privtune's logger: one ``"privtune"`` logger that never receives a raw private value.

Modules log through :func:`get_logger`. Only public quantities and privatised
releases are ever logged (the leak tests inject sentinel scores and check every
log record). No handler is attached and no global logging setting is changed
at import; :func:`set_verbosity` is a convenience for scripts.
"""

from __future__ import annotations

import logging

__all__ = ["get_logger", "set_verbosity"]

_ROOT = "privtune"


def get_logger(name: str = _ROOT) -> logging.Logger:
    """The ``privtune`` logger or one of its children."""
    if name != _ROOT and not name.startswith(_ROOT + "."):
        name = f"{_ROOT}.{name}"
    return logging.getLogger(name)


def set_verbosity(level: int | str) -> None:
    """Set the level of the ``privtune`` logger and attach a stderr handler once."""
    logger = logging.getLogger(_ROOT)
    logger.setLevel(level)
    if not any(getattr(h, "_privtune", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[privtune] %(levelname)s %(message)s"))
        handler._privtune = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
