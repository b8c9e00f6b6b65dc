"""How PrivateSearchCV maps evaluations over joblib workers (``n_jobs``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

__all__ = ["make_mapper"]


def make_mapper(n_jobs: int | None, *, threads: bool = False, quiet: bool = False) -> Callable[..., list[Any]]:
    """A joblib map over ``n_jobs`` workers.

    Parameters
    ----------
    n_jobs : int or None
        joblib's ``n_jobs``.
    threads : bool, default=False
        Use threads: fits that charge a shared training accountant must run in
        this process (worker processes would charge copies).
    quiet : bool, default=False
        Silence warnings inside each call, in whichever worker runs it: a worker
        process does not inherit the caller's warning filters, and a warning
        there can depend on the sensitive rows or on a secret search path.

    Notes
    -----
    The calls' arguments and closures (the sensitive validation rows among
    them) are never memory-mapped to a file (``max_nbytes=None``): joblib's
    default writes arrays over 1 MB to ``JOBLIB_TEMP_FOLDER`` (``/dev/shm`` or
    the disk) for worker processes to read.
    """
    from joblib import Parallel, delayed

    backend = "threading" if threads else None

    def mapper(fn: Callable[[Any], float], items: Sequence[Any]) -> list[Any]:
        call = partial(_silenced, fn) if quiet else fn
        return list(Parallel(n_jobs=n_jobs, backend=backend, max_nbytes=None)(delayed(call)(it) for it in items))
    return mapper


def _silenced(fn: Callable[[Any], Any], item: Any) -> Any:
    """``fn(item)`` with every warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(item)
