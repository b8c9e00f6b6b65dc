r"""Shared pieces of the seed-001 trainers: problem checks, the exact LP, results, charging.

The problem (Han, Topcu & Pappas 2014, eq. 3) is

.. math:: \min_{x \in P} f(x), \qquad f(x) = \max_{i=1..m} (a_i^\top x + b_i),

over a box ``P = {x : lo <= x <= hi}``. The slopes ``A`` (rows ``a_i``) and the
box are public; only the offsets ``b`` are private. This module holds what the
four mechanisms of :mod:`privtune.optim.piecewise` share: input validation (run
before any budget is spent), the exact epigraph LP solved by
:func:`scipy.optimize.linprog` (HiGHS), the frozen :class:`PiecewiseResult`, and
the check-then-spend protocol with a :class:`~privtune.accounting.Accountant`.

References
----------
.. [HTP14] S. Han, U. Topcu and G. J. Pappas, "Differentially Private Convex
   Optimization with Piecewise Affine Objectives", IEEE CDC 2014,
   arXiv:1403.6135.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linprog

from privtune.accounting.budget import Budget
from privtune.accounting.events import ComposedEvent, PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.utils import check_epsilon, check_finite_array, check_integer, check_sensitivity
from privtune.utils._validation import public_shape

__all__ = ["PiecewiseResult", "pwa_objective", "solve_pwa", "check_box", "check_problem"]


@dataclass(frozen=True, eq=False)
class PiecewiseResult:
    """Output of a seed-001 mechanism (frozen).

    Attributes
    ----------
    x : ndarray of shape (n_features,)
        The released point; always inside the box ``P``.
    method : str
        Which mechanism produced it (``"perturb-objective"``, ``"perturb-solution"``,
        ``"exponential"``, ``"subgradient"``, ``"centre"``, ``"uniform"``).
    events : tuple of PrivacyEvent
        The privacy events spent (empty for the data-independent baselines).
    epsilon, delta : float
        Total privacy of the release by basic composition of ``events``.
    guarantee : {"unconditional", "conditional"}
        ``"conditional"`` only for MCMC chains without a mixing certificate
        (:func:`~privtune.optim.piecewise.pwa_exponential` with
        ``certified_only=False``): their epsilon holds only if the chain has mixed.
    seeded : bool
        True when the noise came from a seeded generator (reproducible, **not for release**).
    history : dict
        Public or privatised quantities only (noise scales, noisy offsets, the
        DP-selected indices and iterates, the certified delta); never a raw
        function of ``b``.
    """

    x: np.ndarray
    method: str
    events: tuple[PrivacyEvent, ...]
    epsilon: float
    delta: float
    guarantee: str
    seeded: bool
    history: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        x = np.array(self.x, dtype=np.float64, copy=True)
        x.setflags(write=False)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "events", tuple(self.events))

    @property
    def privacy_spent(self) -> Budget:
        """``Budget(epsilon, delta)`` of this release (basic composition)."""
        return Budget(self.epsilon, self.delta)


def pwa_objective(A: Any, b: Any, x: Any) -> np.ndarray | float:
    """Evaluate ``f(x) = max_i (a_i . x + b_i)`` for one point or a batch of points.

    Parameters
    ----------
    A : array_like of shape (m, d)
    b : array_like of shape (m,)
    x : array_like of shape (d,) or (n, d)

    Returns
    -------
    float or ndarray of shape (n,)

    Notes
    -----
    **Privacy.** Not a private release: it reads ``b``. Use it on released points
    for evaluation (the spec's P11: always score outputs with the true ``b``).
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    X = np.asarray(x, dtype=np.float64)
    vals = X @ A.T + b
    return float(vals.max()) if X.ndim == 1 else vals.max(axis=1)


def solve_pwa(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, float]:
    """Solve ``min_{lo <= x <= hi} max_i (a_i . x + b_i)`` exactly as an LP (epigraph form).

    Variables ``z = [x; t]``; minimise ``t`` subject to ``a_i . x - t <= -b_i``
    and the box, with :func:`scipy.optimize.linprog` (HiGHS). The result is
    clipped to the box to remove the solver's feasibility tolerance.

    Parameters
    ----------
    A : ndarray of shape (m, d)
    b : ndarray of shape (m,)
    lo, hi : ndarray of shape (d,)
        Finite box bounds with ``lo < hi``.

    Returns
    -------
    x : ndarray of shape (d,)
    value : float
        ``f(x)`` recomputed at the clipped solution.

    Raises
    ------
    RuntimeError
        If HiGHS does not report an optimal solution, even on the rescaled LP
        (it cannot happen for a bounded box and finite data, short of a solver
        failure).

    Notes
    -----
    **Privacy.** Not private: this is the non-private optimum. The mechanisms
    call it on noisy offsets (post-processing) or pay for its output; those
    that call it on the raw offsets never let its failure escape (see
    :func:`~privtune.optim.piecewise.pwa_perturb_solution`).

    HiGHS refuses a model with a coefficient of magnitude ``>= 1e15`` or a
    right-hand side or bound ``>= 1e20`` (finite, but "infinite" to it), so an
    LP with large offsets, slopes or box failed. When the LP as given fails, it
    is solved again rescaled by powers of two (exactly: ``x = 2**kc y`` with the
    box inside ``[-1, 1]``, every row divided by ``2**ks`` so that the slopes
    and offsets lie in ``[-1, 1]``), which has the same minimisers.
    """
    x = _solve_epigraph(A, b, lo, hi)
    if x is None:
        x = _solve_rescaled(A, b, lo, hi)
    if x is None:
        raise RuntimeError("linprog (HiGHS) failed on the piecewise-affine LP, as given and rescaled.")
    x = np.clip(x, lo, hi)
    with np.errstate(over="ignore", invalid="ignore"):
        return x, float((A @ x + b).max())


def _solve_epigraph(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """HiGHS on the epigraph LP; the minimiser ``x`` (not clipped), or None when HiGHS reports no optimum."""
    out = _solve_epigraph_with_weights(A, b, lo, hi)
    return None if out is None else out[0]


def _solve_epigraph_with_weights(A: np.ndarray, b: np.ndarray, lo: np.ndarray,
                                 hi: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The minimiser and the LP's dual weights on the pieces (normalised to sum 1; None if HiGHS gives none)."""
    m, d = A.shape
    cost = np.zeros(d + 1)
    cost[-1] = 1.0
    A_ub = np.hstack([A, -np.ones((m, 1))])
    bounds = [(float(lo[j]), float(hi[j])) for j in range(d)] + [(None, None)]
    res = linprog(cost, A_ub=A_ub, b_ub=-b, bounds=bounds, method="highs")
    if res.status != 0 or res.x is None:
        return None
    weights = None
    marginals = getattr(getattr(res, "ineqlin", None), "marginals", None)
    if marginals is not None:
        y = np.maximum(-np.asarray(marginals, dtype=np.float64), 0.0)  # <= constraints of a minimisation: <= 0
        total = float(y.sum())
        if y.shape == (m,) and np.all(np.isfinite(y)) and total > 0.0:
            weights = y / total
    return np.asarray(res.x[:d], dtype=np.float64), weights


def weighted_lower_bound(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, y: np.ndarray) -> float:
    """A certified lower bound of ``min_{lo <= x <= hi} max_i (a_i . x + b_i)`` from convex weights ``y``.

    Any weights on the simplex give ``max_i u_i >= sum_i y_i u_i``, and the
    minimum of that affine function over the box is in closed form:
    ``sum_i y_i b_i + sum_j min(c_j lo_j, c_j hi_j)`` with ``c = A^T y`` (weak
    duality; the LP's optimal duals make it tight). The float evaluation is
    lowered by a bound on its rounding error, ``2 (m + d + 2) 2**-52`` times
    the sum of the absolute terms, so the result never exceeds the true
    minimum. ``-inf`` when that sum is not finite.
    """
    m, d = A.shape
    with np.errstate(over="ignore", invalid="ignore"):
        c = A.T @ y
        value = float(y @ b + np.minimum(c * lo, c * hi).sum())
        scale = float(y @ np.abs(b) + (np.abs(A).T @ y) @ np.maximum(np.abs(lo), np.abs(hi)))
    if not (math.isfinite(value) and math.isfinite(scale)):
        return -math.inf
    return value - 2.0 * (m + d + 2) * 2.0**-52 * scale


def pwa_reference_value(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """A value ``L`` with ``max_P f - W <= L <= min_P f``, ``f(x) = max_i (a_i . x + b_i)``, never from a refusal.

    The rejection sampler needs ``f - L >= 0`` on the box (exactness: its
    acceptance probability ``exp(-kappa (f - L))`` must never be clipped at 1)
    and ``f - L <= W = max_i sum_j |a_ij| (hi_j - lo_j)`` (its certificate).
    ``f`` at the LP's solution is at least ``min f`` -- above it by the solver's
    tolerance when HiGHS stops short -- so it is not used. ``L`` is the larger
    of two certified lower bounds: the closed form ``max_i min_P (a_i . x + b_i)``
    (within ``W`` of ``max f``: the piece attaining ``max f`` varies by at most
    its own range over ``P``) and :func:`weighted_lower_bound` at the LP's
    dual weights (tight up to rounding). A failing LP leaves the first.
    """
    d = A.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        rows = np.minimum(A * lo, A * hi).sum(axis=1) + b
        rounding = 2.0 * (d + 2) * 2.0**-52 * (np.abs(A) @ np.maximum(np.abs(lo), np.abs(hi)) + np.abs(b))
        closed = float(np.max(rows - rounding))  # lowered by a bound on its rounding error, like the dual one
    best = closed if not math.isnan(closed) else -math.inf
    try:
        out = _solve_epigraph_with_weights(A, b, lo, hi)
    except (ValueError, ArithmeticError):  # HiGHS refusing the model's magnitudes: the closed form alone
        out = None
    if out is not None and out[1] is not None:
        dual = weighted_lower_bound(A, b, lo, hi, out[1])
        if dual > best:
            best = dual
    return best


def _binade(values: np.ndarray) -> int | None:
    """The exponent ``k`` with ``max |values| < 2**k`` (``frexp``), or None when every value is 0."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    return int(np.frexp(top)[1]) if top > 0.0 else None


def _solve_rescaled(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """The epigraph LP with ``x = 2**kc y`` (box in ``[-1, 1]``) and rows divided by ``2**ks`` (all within 1).

    ``min_y max_i (a_i 2**kc . y + b_i) / 2**ks`` has the minimisers of the
    original problem divided by ``2**kc``; scaling by powers of two is exact up
    to underflow (entries far below the largest, whose effect is then below
    HiGHS's tolerances anyway).
    """
    kc = _binade(np.concatenate((lo, hi))) or 0
    ka, kb = _binade(A), _binade(b)
    ks = max([k for k in (None if ka is None else ka + kc, kb) if k is not None], default=0)
    y = _solve_epigraph(np.ldexp(A, kc - ks), np.ldexp(b, -ks), np.ldexp(lo, -kc), np.ldexp(hi, -kc))
    return None if y is None else np.ldexp(y, kc)


def check_box(bounds: Any, n_features: int, owner: str, name: str = "bounds") -> tuple[np.ndarray, np.ndarray]:
    """Validate a box ``(lo, hi)``: scalars or arrays of shape (n_features,), finite, ``lo < hi``.

    Raises
    ------
    InvalidParameterError
        If the box is malformed, infinite or empty.
    """
    where = f"The {name!r} parameter of {owner}"
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise InvalidParameterError(f"{where} must be a pair (lo, hi) of floats or arrays. Got {bounds!r} instead.")
    lo = check_finite_array(bounds[0], f"{name}[0]", owner=owner, ndim=(0, 1))
    hi = check_finite_array(bounds[1], f"{name}[1]", owner=owner, ndim=(0, 1))
    try:
        lo, hi = (np.broadcast_to(v, (n_features,)).astype(np.float64) for v in (lo, hi))
    except ValueError:
        raise InvalidParameterError(
            f"{where} must hold scalars or arrays of shape ({n_features},).") from None
    if not np.all(lo < hi):
        raise InvalidParameterError(f"{where} must satisfy lo < hi in every coordinate. Got {bounds!r} instead.")
    return lo, hi


@dataclass(frozen=True)
class _Problem:
    A: np.ndarray
    b_raw: Any
    lo: np.ndarray
    hi: np.ndarray
    epsilon: float
    offset_bound: float
    owner: str = "pwa"

    @property
    def b(self) -> np.ndarray:
        """The offsets, read and checked on first use -- after the charge (the offsets are the sensitive data)."""
        cached = self.__dict__.get("_b")
        if cached is None:
            cached = check_finite_array(self.b_raw, "b", owner=self.owner, ndim=1)
            object.__setattr__(self, "_b", cached)
        return cached

    @property
    def m(self) -> int:
        return int(self.A.shape[0])

    @property
    def d(self) -> int:
        return int(self.A.shape[1])

    @property
    def widths(self) -> np.ndarray:
        return self.hi - self.lo

    @property
    def centre(self) -> np.ndarray:
        return 0.5 * (self.lo + self.hi)

    def project(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the box (clipping)."""
        return np.clip(x, self.lo, self.hi)


def check_problem(A: Any, b: Any, bounds: Any, epsilon: Any, offset_bound: Any, owner: str) -> _Problem:
    """Validate the common inputs of the seed-001 mechanisms (before any spending).

    ``A``, the box and the constants are public and checked here; of the
    sensitive offsets ``b`` only the shape is read. Their values are read (and a
    non-finite one refused) on first use of ``_Problem.b``, which every
    mechanism makes after its charge.
    """
    A = check_finite_array(A, "A", owner=owner, ndim=2)
    b_shape = public_shape(b)  # the structure only: an odd entry cannot make this raise
    if len(b_shape) != 1 or b_shape[0] != A.shape[0]:
        raise InvalidParameterError(
            f"The 'b' parameter of {owner} must be 1-D with one offset per row (piece) of A ({A.shape[0]}); "
            f"got shape {b_shape}.")
    lo, hi = check_box(bounds, A.shape[1], owner)
    eps = check_epsilon(epsilon, owner=owner)
    bmax = check_sensitivity(offset_bound, "offset_bound", owner=owner)
    return _Problem(A=A, b_raw=b, lo=lo, hi=hi, epsilon=eps, offset_bound=bmax, owner=owner)


_RELATIONS = ("offsets_linf", "replace_one")


def check_relation(relation: Any, owner: str) -> str:
    """The relation to label seed-001 events with.

    ``"offsets_linf"`` (default): neighbouring offset vectors differ in at most
    ``n_changed`` entries, each by at most ``offset_bound`` (the paper's eq. 4
    when ``n_changed`` is all of them). ``"replace_one"``: only for a caller whose
    replace-one neighbours of *records* map into such offset changes (e.g. one
    replaced regression target moving two offsets within the declared range).
    """
    if relation not in _RELATIONS:
        raise InvalidParameterError(
            f"The 'relation' parameter of {owner} must be one of {list(_RELATIONS)}. Got {relation!r} instead.")
    return relation


def check_n_changed(n_changed: Any, m: int, owner: str) -> int:
    """``None`` means every offset may change (the paper's eq. 4); otherwise an int in [1, m]."""
    if n_changed is None:
        return m
    return check_integer(n_changed, "n_changed", low=1, high=m, owner=owner)


def charge(accountant: Any, events: tuple[PrivacyEvent, ...], *, phase: str, owner: str) -> None:
    """Check the whole plan, then spend it, before the caller touches ``b``.

    Raises
    ------
    InvalidParameterError
        If ``accountant`` is not an Accountant (or None).
    BudgetExceededError
        If the events do not fit; nothing is spent.
    """
    if accountant is None or not events:
        return
    from privtune.accounting.accountant import Accountant

    if not isinstance(accountant, Accountant):
        raise InvalidParameterError(
            f"The 'accountant' parameter of {owner} must be a privtune Accountant or None. "
            f"Got {type(accountant).__name__} instead.")
    total = events[0] if len(events) == 1 else ComposedEvent(events=events, label=f"{owner} (total)")
    accountant.check(total)
    accountant.spend(total, phase=phase, role="training")


def totals(events: tuple[PrivacyEvent, ...]) -> tuple[float, float, str]:
    """Basic-composition (epsilon, delta) and the guarantee label of a tuple of events."""
    if not events:
        return 0.0, 0.0, "unconditional"
    ev = ComposedEvent(events=events)
    eps, delta = ev.epsilon_delta()  # type: ignore[misc]
    return eps, delta, "conditional" if ev.is_conditional() else "unconditional"
