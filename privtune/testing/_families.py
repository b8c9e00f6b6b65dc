"""Families of output sets for the DP audit, and the encoding of outputs into codes.

Outputs are mapped to integer codes (quantile bins for continuous outputs,
outcomes for discrete ones); a set of outputs is a boolean row over the codes,
so that counting every set of a family is one matrix-vector product.
"""

from __future__ import annotations

import numpy as np

from privtune.exceptions import InvalidParameterError


def _split_none(arr: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return (float values, None mask); refuse anything that is not a finite number or None."""
    if arr.dtype == object:
        none = np.fromiter((v is None for v in arr), dtype=bool, count=arr.shape[0])
        vals = np.zeros(arr.shape[0], dtype=np.float64)
        try:
            vals[~none] = arr[~none].astype(np.float64)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"{name}(n) must return numbers, or integer indices and None."
            ) from None
    else:
        none = np.zeros(arr.shape[0], dtype=bool)
        vals = arr.astype(np.float64)
    if not np.all(np.isfinite(vals)):
        raise InvalidParameterError(f"{name}(n) returned NaN or infinite outputs.")
    return vals, none


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else f"{v:.6g}"


def _runs(row: np.ndarray) -> list[tuple[int, int]]:
    idx = np.flatnonzero(row)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]]))
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def _describe_interval_set(row: np.ndarray, edges: np.ndarray) -> str:
    last = row.shape[0] - 1

    def interval(a: int, b: int) -> str:
        if a == 0:
            return f"x < {_fmt(edges[b])}"
        if b == last:
            return f"x >= {_fmt(edges[a - 1])}"
        return f"{_fmt(edges[a - 1])} <= x < {_fmt(edges[b])}"

    runs = _runs(row)
    if len(runs) <= 2:
        return " or ".join(interval(a, b) for a, b in runs)
    lo = "-inf" if runs[0][0] == 0 else _fmt(edges[runs[0][0] - 1])
    hi = "inf" if runs[-1][1] == last else _fmt(edges[runs[-1][1]])
    return f"union of {len(runs)} intervals spanning [{lo}, {hi})"


def _describe_outcome_set(row: np.ndarray, labels: list[str]) -> str:
    members = [labels[i] for i in np.flatnonzero(row)]
    if len(members) <= 8:
        return "{" + ", ".join(members) + "}"
    others = [labels[i] for i in np.flatnonzero(~row)]
    if len(others) <= 8:
        return "not {" + ", ".join(others) + "}"
    return f"{{{len(members)} outcomes}}"


def _base_family(n_codes: int, ordered: int) -> list[np.ndarray]:
    """Singletons, prefixes of the first ``ordered`` codes, and the complements of both."""
    eye = np.eye(n_codes, dtype=bool)
    rows = [eye, ~eye]
    if ordered >= 2:
        pref = np.zeros((ordered - 1, n_codes), dtype=bool)
        for j in range(1, ordered):
            pref[j - 1, :j] = True
        rows += [pref, ~pref]
    return rows


def _ratio_family(hist_d: np.ndarray, hist_p: np.ndarray) -> list[np.ndarray]:
    """Prefixes of the codes sorted by the empirical likelihood ratio (selection split only)."""
    n_codes = hist_d.shape[0]
    ratio = (hist_d + 0.5) / (hist_p + 0.5)
    order = np.argsort(-ratio, kind="stable")
    pref = np.zeros((n_codes - 1, n_codes), dtype=bool)
    for j in range(1, n_codes):
        pref[j - 1, order[:j]] = True
    return [pref, ~pref]


def _finish_family(rows: list[np.ndarray]) -> np.ndarray:
    fam = np.unique(np.concatenate(rows, axis=0), axis=0)
    keep = fam.any(axis=1) & ~fam.all(axis=1)
    return fam[keep]


def _discrete_codes(vals: np.ndarray, none: np.ndarray, vocab: np.ndarray) -> np.ndarray:
    """Codes 0..K-1 for the known numeric outcomes, K for None, K+1 for anything else."""
    k = vocab.shape[0]
    if k == 0:
        return np.where(none, 0, 1)
    idx = np.minimum(np.searchsorted(vocab, vals), k - 1)
    known = vocab[idx] == vals
    return np.where(none, k, np.where(known, idx, k + 1))
