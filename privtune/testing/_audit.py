"""Black-box audit of a differential privacy claim from samples of a mechanism (statistics: ``_audit_evaluation``).

The approach follows Google's ``StochasticTester`` / ``verifyApproximateDp``
(differential-privacy library) and the "DP-inequality audit" of privtune's test
plan: run the mechanism many times on two neighbouring inputs ``D`` and ``D'``,
and look for a set of outputs ``S`` whose empirical probabilities contradict
``P_D(S) <= e**eps * P_D'(S) + delta`` beyond sampling error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.testing._audit_evaluation import AuditResult, _evaluate, _result
from privtune.testing._families import (
    _base_family,
    _describe_interval_set,
    _describe_outcome_set,
    _discrete_codes,
    _finish_family,
    _fmt,
    _ratio_family,
    _split_none,
)
from privtune.utils._random import RandomStateLike, check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = ["AuditResult", "audit_mechanism", "audit_histograms"]

_OUTPUT_TYPES = ("auto", "continuous", "discrete")
_N_TAIL_LEVELS = 10  # geometric tail quantiles added on each side of the continuous grid
_MIN_TAIL_COUNT = 20.0  # the most extreme tail quantile leaves about this many selection samples


# --------------------------------------------------------------------------- inputs


def _draw(sampler: Any, n: int, name: str) -> np.ndarray:
    if not callable(sampler):
        raise InvalidParameterError(
            f"The {name!r} parameter of audit_mechanism must be a callable sampler(n) -> outputs. "
            f"Got {type(sampler).__name__} instead."
        )
    out = sampler(n)
    try:
        arr = np.asarray(out)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name}(n) must return a 1-D array of outputs.") from None
    if arr.ndim == 0 or arr.ndim > 1 or arr.shape[0] != n:
        raise InvalidParameterError(
            f"{name}(n) must return a 1-D array of n = {n} outputs (one scalar or selection per "
            f"run); got shape {arr.shape}. Reduce vector outputs to a scalar statistic first."
        )
    if arr.dtype.kind not in "biufO":
        raise InvalidParameterError(
            f"{name}(n) must return numbers, or integer indices and None; got dtype {arr.dtype}."
        )
    return arr


def _validate_common(epsilon: Any, delta: Any, confidence: Any, owner: str) -> tuple[float, float, float]:
    eps = check_epsilon(epsilon, owner=owner)
    dlt = check_delta(delta, owner=owner)
    conf = check_real(confidence, "confidence", low=0.0, high=1.0, closed="neither", owner=owner)
    return eps, dlt, conf


def audit_mechanism(
    sample_d: Callable[[int], Any],
    sample_d_prime: Callable[[int], Any],
    *,
    epsilon: float,
    delta: float = 0.0,
    n_samples: int,
    events: Mapping[str, Callable[[np.ndarray], Any]] | Sequence[Callable[[np.ndarray], Any]]
    | None = None,
    output_type: str = "auto",
    outcomes: Sequence[Any] | None = None,
    confidence: float = 0.999,
    n_bins: int = 100,
    max_selected: int = 8,
    selection_fraction: float = 0.5,
    random_state: RandomStateLike = None,
) -> AuditResult:
    """Audit an (epsilon, delta)-DP claim on one pair of neighbouring inputs.

    Runs the mechanism ``n_samples`` times on ``D`` and on ``D'`` and searches
    for a set of outputs ``S`` that refutes
    ``P_D(S) <= e**epsilon * P_D'(S) + delta`` (or the same with ``D`` and
    ``D'`` swapped) beyond sampling error. For each evaluated set it forms the
    one-sided Clopper–Pearson bounds ``p_lo <= P_D(S)`` and ``p_hi >= P_D'(S)``
    and the empirical bound ``log((p_lo - delta) / p_hi)``; the maximum over
    sets is a lower confidence bound on the true epsilon (at the claimed delta)
    of the mechanism on this pair.

    **Passing an audit is not a proof of differential privacy**: it only shows
    that this pair of inputs and this family of output sets did not expose a
    violation at this sample size. **Failing it is strong evidence of a bug**:
    with probability at least ``confidence`` a correct mechanism is never
    flagged, whatever its output distribution.

    Parameters
    ----------
    sample_d, sample_d_prime : callable
        ``sample_d(n)`` returns the outputs of ``n`` independent runs of the
        mechanism on ``D`` (and ``sample_d_prime`` on the neighbour ``D'``), as a
        1-D array of length ``n``: real numbers, or integer indices (``None``
        allowed) for selections. Reduce vector outputs to a scalar statistic
        first (post-processing cannot increase the privacy loss).
    epsilon : float in (0, inf)
        The claimed epsilon.
    delta : float in [0, 1), default=0.0
        The claimed delta.
    n_samples : int, at least 4
        Runs per input.
    events : mapping of str to callable, sequence of callable, or None, default=None
        A fixed family of output sets, each a function mapping the array of
        outputs to a boolean array (membership). All of them are evaluated on
        all the samples, in both directions, with a Bonferroni correction over
        ``2 * len(events)`` tests. They must be chosen without looking at the
        samples. ``None`` builds the family from the outputs (below).
    output_type : {"auto", "continuous", "discrete"}, default="auto"
        How to build the family when ``events`` is None. ``"auto"`` means
        ``"continuous"`` for float outputs and ``"discrete"`` otherwise.

        * continuous: the pooled selection split gives ``n_bins - 1`` equally
          spaced quantiles plus 10 geometrically spaced tail quantiles on each
          side (down to a tail of about 20 selection samples); the sets are the
          one-sided threshold sets ``{x < t}``, ``{x >= t}``, every bin and its
          complement, and the unions of bins in decreasing order of their
          empirical likelihood ratio on the selection split.
        * discrete: every outcome (``None`` included) and its complement, the
          tail sets ``{x <= k}``, ``{x > k}`` (and their complements, which
          contain ``None``), and, when the outcomes are learnt from the
          selection split, the unions of outcomes by decreasing likelihood ratio.
    outcomes : sequence of numbers or None, optional
        The finite set of possible outputs of a discrete mechanism, known in
        advance (``None`` may be one of them). The family is then fixed: no
        selection split, all the samples are used for evaluation, and the
        Bonferroni correction runs over the whole family. Implies
        ``output_type="discrete"``.
    confidence : float in (0, 1), default=0.999
        ``1 - alpha``: a correct mechanism is flagged with probability at most
        ``alpha``.
    n_bins : int, at least 2, default=100
        Number of quantile bins for continuous outputs.
    max_selected : int, at least 1, default=8
        How many (set, direction) pairs the selection split may pass on to the
        evaluation split. The Bonferroni divisor is twice this number.
    selection_fraction : float in (0, 1), default=0.5
        Share of each sample used to choose the sets.
    random_state : None, int, Generator or SeedSequence, default=None
        Randomness of the split between the selection and evaluation samples
        (not of the mechanism: seed the samplers yourself for a reproducible
        audit).

    Returns
    -------
    AuditResult

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain, a sampler that is not callable, or
        a sampler returning outputs of the wrong shape or type, NaN or inf.

    Notes
    -----
    *Avoiding selection bias.* Taking the maximum of many bounds computed on
    the same data would overstate epsilon. When the family of sets depends on
    the outputs (quantile thresholds, learnt outcomes, likelihood-ratio
    unions), each sample is shuffled and split: the first
    ``selection_fraction`` chooses the thresholds and ranks every (set,
    direction) pair by its bound, the best ``max_selected`` pairs are passed
    on, and they are evaluated on the **fresh** remaining samples only. Each
    evaluated pair uses two one-sided Clopper–Pearson bounds, each at level
    ``alpha / (2 m)`` where ``m`` is the number of evaluated pairs, so by the
    union bound every reported bound holds simultaneously with probability at
    least ``1 - alpha``, and so does their maximum. For a fixed family
    (``events`` or ``outcomes``) there is no selection and ``m`` is twice the
    family's size.

    *Power.* A sample of size ``n`` can only see sets of probability well above
    ``1 / n``: tails that carry the violation of an (epsilon, delta)
    mechanism at a tiny delta are out of reach, so a Gaussian mechanism's
    lower bound will sit well below its claimed epsilon. A mechanism that is off
    by a constant factor in its noise scale or sensitivity is typically flagged
    with ``10**5``-``10**6`` samples per input. The audit is vectorised: with
    ``n_samples = 10**6`` its own cost is a fraction of a second, so the
    samplers dominate.

    The auditor follows Google's differential-privacy ``StochasticTester`` and
    ``verifyApproximateDp`` (which estimate, then compare with a tolerance); here
    the comparison is an exact confidence bound instead.

    Examples
    --------
    Audit a textbook Laplace mechanism at epsilon = 1 (sensitivity 1, inputs 0
    and 1), then a broken twin whose noise is half as large:

    >>> import numpy as np
    >>> from privtune.testing import audit_mechanism
    >>> def laplace(value, scale, seed):
    ...     rng = np.random.default_rng(seed)
    ...     return lambda n: value + rng.laplace(scale=scale, size=n)
    >>> ok = audit_mechanism(laplace(0.0, 1.0, 1), laplace(1.0, 1.0, 2), epsilon=1.0,
    ...                      n_samples=200_000, random_state=0)
    >>> ok.violation, ok.epsilon_lower_bound < 1.0
    (False, True)
    >>> bad = audit_mechanism(laplace(0.0, 0.5, 1), laplace(1.0, 0.5, 2), epsilon=1.0,
    ...                       n_samples=200_000, random_state=0)
    >>> bad.violation, bad.epsilon_lower_bound > 1.5
    (True, True)
    """
    owner = "audit_mechanism"
    eps, dlt, conf = _validate_common(epsilon, delta, confidence, owner)
    n = check_integer(n_samples, "n_samples", low=4, owner=owner)
    n_bins = check_integer(n_bins, "n_bins", low=2, owner=owner)
    max_selected = check_integer(max_selected, "max_selected", low=1, owner=owner)
    frac = check_real(selection_fraction, "selection_fraction", low=0.0, high=1.0, owner=owner)
    if output_type not in _OUTPUT_TYPES:
        raise InvalidParameterError(
            f"The 'output_type' parameter of {owner} must be one of {list(_OUTPUT_TYPES)}. "
            f"Got {output_type!r} instead."
        )
    if events is not None and outcomes is not None:
        raise InvalidParameterError(f"Pass at most one of 'events' and 'outcomes' to {owner}.")
    fixed_events = _check_events(events, owner) if events is not None else None
    vocab_fixed, none_fixed = _check_outcomes(outcomes, owner) if outcomes is not None else (None, None)
    if outcomes is not None and output_type == "continuous":
        raise InvalidParameterError(f"'outcomes' describes discrete outputs; {owner} got "
                                    "output_type='continuous'.")
    rng = check_random_state(random_state, owner=owner).numpy_generator()
    alpha = 1.0 - conf

    x = _draw(sample_d, n, "sample_d")
    y = _draw(sample_d_prime, n, "sample_d_prime")
    common = dict(epsilon=eps, delta=dlt, confidence=conf, n=n)

    if fixed_events is not None:
        names = list(fixed_events)
        fam_d = np.stack([_membership(fixed_events[k], x, k) for k in names], axis=1)
        fam_p = np.stack([_membership(fixed_events[k], y, k) for k in names], axis=1)
        # Each sample is its own code: the family matrix is the membership, transposed.
        ev = _evaluate(np.eye(len(names), dtype=bool), fam_d.sum(axis=0), fam_p.sum(axis=0), n, n,
                       delta=dlt, alpha=alpha, epsilon=eps, selection=None, max_selected=max_selected)
        return _result(ev, lambda i: names[i], n_sel=0, n_ev=n, output_type="events", **common)

    if outcomes is not None:
        kind = "discrete"
    elif output_type == "auto":
        kind = "continuous" if x.dtype.kind == "f" and y.dtype.kind == "f" else "discrete"
    else:
        kind = output_type
    xv, xn = _split_none(x, "sample_d")
    yv, yn = _split_none(y, "sample_d_prime")
    if kind == "continuous" and (xn.any() or yn.any()):
        raise InvalidParameterError("Continuous outputs cannot be None; use output_type='discrete'.")

    if vocab_fixed is not None:
        k = vocab_fixed.shape[0]
        cx = _discrete_codes(xv, xn, vocab_fixed)
        cy = _discrete_codes(yv, yn, vocab_fixed)
        n_codes = k + 2
        hd = np.bincount(cx, minlength=n_codes)
        hp = np.bincount(cy, minlength=n_codes)
        # An output outside the declared set would make the family depend on the samples (which are also the
        # evaluation samples): refused. The codes that cannot occur by declaration are dropped.
        if hd[k + 1] + hp[k + 1] > 0 or (not none_fixed and hd[k] + hp[k] > 0):
            raise InvalidParameterError(
                f"{owner}: a sampler returned an output that is not among the declared 'outcomes'; declare every "
                "possible output (None included), or leave 'outcomes' unset to learn them.")
        keep = np.ones(n_codes, dtype=bool)
        keep[k] = none_fixed
        keep[k + 1] = False
        fam = _finish_family([r[:, keep] for r in _base_family(n_codes, k)])
        full = np.zeros((fam.shape[0], n_codes), dtype=bool)
        full[:, keep] = fam
        labels = [_fmt(v) for v in vocab_fixed] + ["None", "other"]
        ev = _evaluate(full, hd, hp, n, n, delta=dlt, alpha=alpha, epsilon=eps, selection=None,
                       max_selected=max_selected)
        return _result(ev, lambda i: _describe_outcome_set(full[i], labels), n_sel=0, n_ev=n,
                       output_type="discrete", **common)

    n_sel = int(round(frac * n))
    n_sel = min(max(n_sel, 1), n - 1)
    px = rng.permutation(n)
    py = rng.permutation(n)
    sx, ex = px[:n_sel], px[n_sel:]
    sy, ey = py[:n_sel], py[n_sel:]
    n_ev = n - n_sel

    if kind == "continuous":
        pooled = np.concatenate((xv[sx], yv[sy]))
        levels = np.arange(1, n_bins) / n_bins
        tail_lo = min(_MIN_TAIL_COUNT / pooled.shape[0], levels[0])
        tails = np.geomspace(tail_lo, levels[0], _N_TAIL_LEVELS + 1)[:-1]
        levels = np.concatenate((tails, levels, 1.0 - tails[::-1]))
        edges = np.unique(np.quantile(pooled, levels))
        cx = np.searchsorted(edges, xv, side="right")
        cy = np.searchsorted(edges, yv, side="right")
        n_codes = edges.shape[0] + 1
        ordered = n_codes

        def describe(i: int) -> str:
            return _describe_interval_set(fam[i], edges)
    else:
        vocab = np.unique(np.concatenate((xv[sx][~xn[sx]], yv[sy][~yn[sy]])))
        cx = _discrete_codes(xv, xn, vocab)
        cy = _discrete_codes(yv, yn, vocab)
        n_codes = vocab.shape[0] + 2
        ordered = vocab.shape[0]
        labels = [_fmt(v) for v in vocab] + ["None", "other"]

        def describe(i: int) -> str:
            return _describe_outcome_set(fam[i], labels)

    sel_d = np.bincount(cx[sx], minlength=n_codes)
    sel_p = np.bincount(cy[sy], minlength=n_codes)
    ev_d = np.bincount(cx[ex], minlength=n_codes)
    ev_p = np.bincount(cy[ey], minlength=n_codes)
    fam = _finish_family(_base_family(n_codes, ordered) + _ratio_family(sel_d, sel_p))
    ev = _evaluate(fam, ev_d, ev_p, n_ev, n_ev, delta=dlt, alpha=alpha, epsilon=eps,
                   selection=(sel_d, sel_p, n_sel, n_sel), max_selected=max_selected)
    return _result(ev, describe, n_sel=n_sel, n_ev=n_ev, output_type=kind, **common)


def _check_events(events: Any, owner: str) -> dict[str, Callable[[np.ndarray], Any]]:
    if isinstance(events, Mapping):
        items = {str(k): v for k, v in events.items()}
    elif isinstance(events, Sequence) and not isinstance(events, str):
        items = {f"events[{i}]": v for i, v in enumerate(events)}
    else:
        raise InvalidParameterError(
            f"The 'events' parameter of {owner} must be a mapping or a sequence of callables. "
            f"Got {type(events).__name__} instead."
        )
    if not items or not all(callable(v) for v in items.values()):
        raise InvalidParameterError(
            f"The 'events' parameter of {owner} must hold at least one callable, and only callables."
        )
    return items


def _membership(fn: Callable[[np.ndarray], Any], outputs: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(fn(outputs))
    if m.shape != outputs.shape[:1] or m.dtype != bool:
        raise InvalidParameterError(
            f"Event {name!r} must return a boolean array of shape {outputs.shape[:1]}; "
            f"got dtype {m.dtype} and shape {m.shape}."
        )
    return m


def _check_outcomes(outcomes: Any, owner: str) -> tuple[np.ndarray, bool]:
    if isinstance(outcomes, (str, bytes)) or not isinstance(outcomes, (Sequence, np.ndarray, range)):
        raise InvalidParameterError(
            f"The 'outcomes' parameter of {owner} must be a sequence of numbers (and None). "
            f"Got {type(outcomes).__name__} instead."
        )
    items = list(outcomes)
    has_none = any(v is None for v in items)
    nums = [v for v in items if v is not None]
    try:
        vocab = np.asarray(nums, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"The 'outcomes' parameter of {owner} must hold numbers (and None)."
        ) from None
    if not items or not np.all(np.isfinite(vocab)) or np.unique(vocab).size != vocab.size:
        raise InvalidParameterError(
            f"The 'outcomes' parameter of {owner} must be non-empty, finite and without repeats."
        )
    return np.sort(vocab), has_none


def audit_histograms(
    counts_d: Any,
    counts_d_prime: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    confidence: float = 0.999,
    ordered: bool = True,
) -> AuditResult:
    """Audit an (epsilon, delta)-DP claim from outcome counts over a known finite output set.

    For mechanisms whose outputs take finitely many values known in advance
    (selections, randomised response, histograms of a discretised output on a
    grid chosen **before** sampling). The family of output sets is fixed: every
    outcome, its complement and, if ``ordered``, the tail sets ``{x <= k}`` and
    ``{x > k}``; all are tested in both directions with a Bonferroni correction.
    See :func:`audit_mechanism` for the bound and its caveats (passing is not a
    proof of DP).

    Parameters
    ----------
    counts_d, counts_d_prime : array-like of int
        Number of runs on ``D`` (and ``D'``) that produced each outcome, in the
        same outcome order. Their totals are the two sample sizes.
    epsilon : float in (0, inf)
    delta : float in [0, 1), default=0.0
    confidence : float in (0, 1), default=0.999
    ordered : bool, default=True
        Whether the outcomes are ordered, so that tail sets are meaningful.

    Returns
    -------
    AuditResult
        ``n_samples`` is the size of the ``D`` sample; the ``D'`` sample may differ.

    Raises
    ------
    InvalidParameterError
        If the counts are not non-negative integers of the same length with
        positive totals, or a parameter is outside its domain.

    Examples
    --------
    Binary randomised response at epsilon = 1, 100 000 runs per input:

    >>> from privtune.testing import audit_histograms
    >>> res = audit_histograms([73_100, 26_900], [26_900, 73_100], epsilon=1.0)
    >>> res.violation, round(res.epsilon_lower_bound, 2)
    (False, 0.97)
    """
    owner = "audit_histograms"
    eps, dlt, conf = _validate_common(epsilon, delta, confidence, owner)
    hd = np.asarray(counts_d)
    hp = np.asarray(counts_d_prime)
    if (hd.ndim != 1 or hp.shape != hd.shape or hd.size < 2 or hd.dtype.kind not in "iu"
            or hp.dtype.kind not in "iu" or np.any(hd < 0) or np.any(hp < 0)
            or hd.sum() < 1 or hp.sum() < 1):
        raise InvalidParameterError(
            f"The 'counts_d' and 'counts_d_prime' parameters of {owner} must be 1-D arrays of "
            "non-negative integers of the same length (at least 2) with positive totals."
        )
    if not isinstance(ordered, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'ordered' parameter of {owner} must be a bool.")
    hd = hd.astype(np.int64)
    hp = hp.astype(np.int64)
    n_codes = hd.shape[0]
    fam = _finish_family(_base_family(n_codes, n_codes if ordered else 0))
    nd, np_ = int(hd.sum()), int(hp.sum())
    ev = _evaluate(fam, hd, hp, nd, np_, delta=dlt, alpha=1.0 - conf, epsilon=eps, selection=None,
                   max_selected=1)
    labels = [str(i) for i in range(n_codes)]
    return _result(ev, lambda i: _describe_outcome_set(fam[i], labels), epsilon=eps, delta=dlt,
                   confidence=conf, n=nd, n_sel=0, n_ev=nd, output_type="histogram")
