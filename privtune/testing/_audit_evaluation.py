"""The statistics behind privtune's DP audits: the result type and the selection/evaluation of output sets.

:func:`privtune.testing.audit_mechanism` and
:func:`privtune.testing.audit_histograms` (``_audit.py``) reduce their samples
to histograms over a family of output sets; :func:`_evaluate` picks the
(set, direction) pairs on the selection split and bounds epsilon on the
evaluation split (Clopper-Pearson, Bonferroni over the pairs evaluated).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privtune.testing._bounds import _eps_bounds

__all__ = ["AuditResult"]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of a DP audit (:func:`audit_mechanism`, :func:`audit_histograms`).

    Attributes
    ----------
    epsilon_lower_bound : float
        Lower confidence bound, at level ``confidence``, on the smallest epsilon
        for which the mechanism is ``(epsilon, claimed_delta)``-DP on this pair
        of inputs. Clipped below at 0. It is the maximum over the evaluated
        output sets of ``log((p_lo - delta) / p_hi)``.
    delta_lower_bound : float
        Lower confidence bound (same event, same confidence) on the smallest
        delta for which the mechanism is ``(claimed_epsilon, delta)``-DP on this
        pair: ``max(p_lo - e**eps * p_hi)`` over the evaluated sets, clipped at 0.
    claimed_epsilon, claimed_delta : float
        The privacy claim under audit.
    violation : bool
        ``epsilon_lower_bound > claimed_epsilon`` (equivalently
        ``delta_lower_bound > claimed_delta``): the claim is refuted at level
        ``confidence``.
    confidence : float
        ``1 - alpha``: probability, over the samples, that the bounds above are
        valid (simultaneously for all the evaluated sets).
    worst_set : str
        Description of the set of outputs that gave ``epsilon_lower_bound``.
    worst_direction : {"D", "D'"}
        The input under which ``worst_set`` is more likely: ``"D"`` means the
        inequality ``P_D(S) <= e**eps P_D'(S) + delta`` was the one tested.
    count_d, count_d_prime : int
        How many of the evaluation samples of ``D`` and of ``D'`` fell in
        ``worst_set``.
    n_samples : int
        Samples drawn per input.
    n_selection, n_evaluation : int
        How the samples of each input were split between choosing the candidate
        sets and evaluating them (``n_selection = 0`` for a fixed family).
    n_tests : int
        Number of (set, direction) pairs evaluated; each uses two one-sided
        bounds, so the Bonferroni divisor of alpha is ``2 * n_tests``.
    output_type : {"continuous", "discrete", "events", "histogram"}
        Which family of output sets was used.
    """

    epsilon_lower_bound: float
    delta_lower_bound: float
    claimed_epsilon: float
    claimed_delta: float
    violation: bool
    confidence: float
    worst_set: str
    worst_direction: str
    count_d: int
    count_d_prime: int
    n_samples: int
    n_selection: int
    n_evaluation: int
    n_tests: int
    output_type: str

    def __str__(self) -> str:
        verdict = "VIOLATION" if self.violation else "no violation found"
        return (
            f"DP audit ({self.output_type}): {verdict}; epsilon >= {self.epsilon_lower_bound:.4f} "
            f"vs claimed ({self.claimed_epsilon:g}, {self.claimed_delta:g}) at confidence "
            f"{self.confidence:g}; worst set {self.worst_set} (more likely under "
            f"{self.worst_direction}; counts {self.count_d} / {self.count_d_prime} of "
            f"{self.n_evaluation}); {self.n_tests} tests, n = {self.n_samples} per input."
        )


# --------------------------------------------------------------------------- core


@dataclass(frozen=True)
class _Evaluation:
    eps: float
    delta_lb: float
    set_index: int
    direction: int  # 0: D in the numerator, 1: D'
    count_d: int
    count_p: int
    n_tests: int


def _pair_bounds(cd: np.ndarray, cp: np.ndarray, n_d: int, n_p: int, delta: float, a: float,
                 epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """eps and delta lower bounds for every (set, direction) pair, directions stacked."""
    e1, lo1, hi1 = _eps_bounds(cd, n_d, cp, n_p, delta, a)
    e2, lo2, hi2 = _eps_bounds(cp, n_p, cd, n_d, delta, a)
    eps = np.concatenate((e1, e2))
    dl = np.concatenate((lo1 - math.exp(epsilon) * hi1, lo2 - math.exp(epsilon) * hi2))
    return eps, dl


def _evaluate(fam: np.ndarray, ev_d: np.ndarray, ev_p: np.ndarray, n_ev_d: int, n_ev_p: int,
              *, delta: float, alpha: float, epsilon: float, selection: tuple | None,
              max_selected: int) -> _Evaluation:
    """Choose (set, direction) pairs on the selection histograms, bound them on the evaluation ones.

    ``selection`` is ``(hist_d, hist_p, n_d, n_p)`` of the selection split, or
    ``None`` for a fixed family (every pair is evaluated).
    """
    m_all = 2 * fam.shape[0]
    fam_i = fam.astype(np.int64)
    if selection is None:
        chosen = np.arange(m_all)
    else:
        m = min(max_selected, m_all)
        a_sel = alpha / (2.0 * m)
        sd, sp, nsd, nsp = selection
        eps_sel, _ = _pair_bounds(fam_i @ sd, fam_i @ sp, nsd, nsp, delta, a_sel, epsilon)
        # Rank by the bound the selection split gives (it favours sets with enough
        # mass to survive the evaluation), then by the raw count as a tie-break.
        count_sel = np.concatenate((fam_i @ sd, fam_i @ sp))
        chosen = np.lexsort((-count_sel, -eps_sel))[:m]
    m = chosen.shape[0]
    a = alpha / (2.0 * m)  # Bonferroni: 2 one-sided bounds per evaluated pair
    n_sets = fam.shape[0]
    rows = chosen % n_sets
    cd = fam_i[rows] @ ev_d
    cp = fam_i[rows] @ ev_p
    direction = chosen // n_sets
    num = np.where(direction == 0, cd, cp)
    den = np.where(direction == 0, cp, cd)
    n_num = np.where(direction == 0, n_ev_d, n_ev_p)
    n_den = np.where(direction == 0, n_ev_p, n_ev_d)
    # _eps_bounds takes scalar sizes; group by direction (sizes differ only by direction).
    eps = np.empty(m)
    dl = np.empty(m)
    for dirn in (0, 1):
        sel = direction == dirn
        if not np.any(sel):
            continue
        e, lo, hi = _eps_bounds(num[sel], int(n_num[sel][0]), den[sel], int(n_den[sel][0]), delta, a)
        eps[sel] = e
        dl[sel] = lo - math.exp(epsilon) * hi
    best = int(np.lexsort((-dl, -eps))[0])
    return _Evaluation(
        eps=float(max(eps[best], 0.0)),
        delta_lb=float(max(dl.max(), 0.0)),
        set_index=int(rows[best]),
        direction=int(direction[best]),
        count_d=int(cd[best]),
        count_p=int(cp[best]),
        n_tests=int(m),
    )


def _result(ev: _Evaluation, describe: Callable[[int], str], *, epsilon: float, delta: float,
            confidence: float, n: int, n_sel: int, n_ev: int, output_type: str) -> AuditResult:
    return AuditResult(
        epsilon_lower_bound=ev.eps,
        delta_lower_bound=ev.delta_lb,
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        violation=bool(ev.eps > epsilon),
        confidence=confidence,
        worst_set=describe(ev.set_index),
        worst_direction="D" if ev.direction == 0 else "D'",
        count_d=ev.count_d,
        count_d_prime=ev.count_p,
        n_samples=n,
        n_selection=n_sel,
        n_evaluation=n_ev,
        n_tests=ev.n_tests,
        output_type=output_type,
    )
