"""Exact float helpers of :class:`privtune.space.Real`: order-preserving integer keys and shortest decimals.

Internal (split from :mod:`privtune.space._dimensions`). ``_float_to_key`` /
``_key_to_float`` map float64 values to int64 keys with the same order, so that
the run of floats sharing one encoding can be searched as an integer interval;
``_shortest_in`` returns, elementwise, the float with the shortest decimal
representation inside a closed interval of floats (what ``Real.decode`` returns).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _float_to_key(x: Any) -> Any:
    """Map floats to int64 keys with the same order (no NaN): -0.0 and 0.0 share key 0."""
    b = np.asarray(x, dtype=np.float64).view(np.int64)
    return np.where(b < 0, np.int64(-(2**63)) - b, b)


def _key_to_float(k: Any) -> Any:
    """Inverse of :func:`_float_to_key` (``-0.0`` comes back as ``0.0``)."""
    k = np.asarray(k, dtype=np.int64)
    b = np.where(k < 0, np.int64(-(2**63)) - k, k)
    return b.view(np.float64)


_EXACT_POW10 = 22  # 10**k is an exact float64 for 0 <= k <= 22
_LD = np.longdouble
_LD_OK = np.finfo(_LD).nmant >= 63  # x86 extended or quad precision: exact 16-digit mantissas
_EXACT_POW10_LD = 27  # 10**k is exact with a 64-bit mantissa for 0 <= k <= 27
_POW10_LD = np.array([_LD(10) ** i for i in range(_EXACT_POW10_LD + 1)], dtype=_LD)


def _round_sig(m: np.ndarray, e: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``round(m / 10**e) * 10**e`` as the nearest float, where whole arrays decide it exactly; and where they do.

    ``e`` is the decimal exponent of the last kept digit, ``k`` the number of
    significant digits kept (the mantissa ``q = round(m / 10**e)``, half to
    even as Python's formatting of the exact binary value, has about ``k``
    digits). With ``k <= 11`` float64 still resolves rounding ties and ``q <
    2**53``; up to ``k = 16`` the same is done in long double where it has a
    64-bit mantissa. Elements whose scaled value lies too close to a tie are
    left undecided. The value ``q * 10**e`` is then one correctly rounded
    operation (float64; Clinger's fast path), or a long-double operation
    rounded to float64, left undecided where that double rounding could differ
    from the exact one. The caller computes the undecided elements with
    Python's exact formatting.
    """
    c = np.full(m.shape, np.nan)
    with np.errstate(over="ignore"):
        room = np.power(10.0, np.clip(e, -300, 280))  # |q| = |m| / 10**e must stay below the mantissa's range
    if k <= 11 or (k <= 15 and not _LD_OK):
        ok = (np.abs(e) <= _EXACT_POW10) & (np.abs(m) < 2.0**52 * room)
        p = np.power(10.0, np.abs(e[ok]).astype(np.float64))
        neg = e[ok] < 0
        scaled = np.where(neg, m[ok] * p, m[ok] / p)
        q = np.rint(scaled)
        tie = np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) <= 8 * np.spacing(np.abs(scaled))
        c[ok] = np.where(neg, q / p, q * p)
    elif k <= 16 and _LD_OK:
        ok = (np.abs(e) <= _EXACT_POW10_LD) & (np.abs(m) < 2.0**62 * room)
        p = _POW10_LD[np.abs(e[ok])]
        neg = e[ok] < 0
        mm = m[ok].astype(_LD)
        scaled = np.empty_like(mm)
        scaled[neg] = mm[neg] * p[neg]
        scaled[~neg] = mm[~neg] / p[~neg]
        q = np.rint(scaled)
        tie = np.abs(np.abs(scaled - np.trunc(scaled)) - _LD(0.5)) <= 8 * np.spacing(np.abs(scaled))
        wide = np.empty_like(mm)
        wide[neg] = q[neg] / p[neg]
        wide[~neg] = q[~neg] * p[~neg]
        narrow = wide.astype(np.float64)
        # double rounding is exact unless the long-double value sits near a float64 half-way point
        half = np.spacing(np.abs(narrow)).astype(_LD) / 2
        near = np.abs(np.abs(wide - narrow.astype(_LD)) - half) <= 8 * np.spacing(np.abs(wide))
        tie |= near
        c[ok] = narrow
    else:
        return c, np.zeros(m.shape, dtype=bool)
    decided = ok.copy()
    decided[np.flatnonzero(ok)[tie]] = False
    c[~decided] = np.nan
    return c, decided


def _shortest_in(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each ``a <= b`` (same sign, not 0): ``float(f"{mid:.{k}g}")`` for the first ``k`` in 1..17 inside [a, b].

    ``mid = a + (b - a) / 2``, as the per-point loop it replaces, with the same
    result, in whole arrays (:func:`_round_sig`; the few elements it cannot
    decide exactly go through Python's formatting). ``k = 17`` always hits:
    seventeen significant digits give ``mid`` back.
    """
    mid = a + (b - a) / 2
    out = np.full(mid.shape, np.nan)
    single = a == b  # a run of one float: whatever k first hits, the value is that float
    out[single] = a[single]
    todo = np.flatnonzero(~single)
    mag = np.abs(mid)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        top = np.floor(np.log10(mag)).astype(np.int64)  # decimal exponent of the leading digit
        ratio = mag / np.power(10.0, top.astype(np.float64))
    shaky = ~np.isfinite(ratio) | (ratio < 1.0 + 1e-12) | (ratio > 10.0 - 1e-11)
    lo_mag, hi_mag = np.minimum(np.abs(a), np.abs(b)), np.maximum(np.abs(a), np.abs(b))
    for k in range(1, 17):
        if not todo.size:
            break
        # Skip the elements whose [a, b] certainly holds no k-digit decimal (then neither does the
        # rounding of mid): a cheap float64 test with a margin far above its rounding error.
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            step = np.power(10.0, (top[todo] - (k - 1)).astype(np.float64))
            first = np.ceil(lo_mag[todo] / step * (1 - 1e-14))
            last = np.floor(hi_mag[todo] / step * (1 + 1e-14))
        maybe = ~(last < first) | shaky[todo]
        cand = todo[maybe]
        if not cand.size:
            continue
        m = mid[cand]
        c, decided = _round_sig(m, top[cand] - (k - 1), k)
        decided &= ~shaky[cand]
        for j in np.flatnonzero(~decided):  # the rare elements the whole-array path cannot decide exactly
            c[j] = float(f"{m[j]:.{k}g}")
        hit = (a[cand] <= c) & (c <= b[cand])
        out[cand[hit]] = c[hit]
        todo = np.setdiff1d(todo, cand[hit], assume_unique=True)
    out[todo] = mid[todo]  # k = 17
    return out
