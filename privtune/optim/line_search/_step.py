r"""NOISYBTLS of Chen & Lee (seed 003, Alg. 1): one private backtracking (Armijo) line search (internal).

This module holds the line search that :func:`privtune.optim.line_search.dp_blsgd`
runs at every iteration, and its public form:

* :func:`_armijo_slacks`, the lazy Armijo slacks of the candidates in mean
  form (both loss evaluations on the same batch, regulariser outside the loss
  clipping);
* :class:`_Search`, one NOISYBTLS configuration: the candidates
  ``eta0, beta eta0, ...`` and the AboveThreshold mechanism
  (:class:`privtune.mechanisms.SparseVector` for the Laplace search,
  :class:`privtune.optim.line_search._accounting.GaussianSparseVector` for the
  Gaussian one);
* :func:`noisy_backtracking_line_search` and its result
  :class:`LineSearchOutcome` (both re-exported by
  :mod:`privtune.optim.line_search`).

The privacy argument (sensitivity of the slack, pure ``eps_BT``-DP of the
Laplace search, the ``log K`` term of the Gaussian one) is stated in
:func:`noisy_backtracking_line_search` and in the module docstring of
:mod:`privtune.optim.line_search`. The other pieces:
:mod:`privtune.optim.line_search._objective` (objectives, clipped batch means),
:mod:`privtune.optim.line_search._loop` (the plan and the DP-BLSGD loop) and
:mod:`privtune.optim.line_search._accounting` (events, filters, calibration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant
from privtune.accounting.events import PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms.sparse_vector import SparseVector
from privtune.optim._sums import blocked_sum, check_sum_terms, rounding_factor
from privtune.optim.line_search import _accounting as acc
from privtune.optim.line_search._objective import (
    PerExampleObjective,
    _clipped_losses,
    _objective_shape,
    _vector,
)
from privtune.utils._random import RandomSource, check_random_state
from privtune.utils._validation import check_choice as _choice
from privtune.utils._validation import check_integer, check_real

_NOISES = ("laplace", "gaussian")
_FAILURES = ("zero", "smallest")
#: Queries are clipped to ``+- 2**24`` grid steps of the sparse vector (1-Lipschitz: the sensitivity is kept). The
#: last rounding of a query (adding its public part) then errs by at most ``2**-52 * 2**24`` steps, which the
#: sensitivity's rounding factor pays for; beyond ``2**24`` steps (``2**14`` noise scales) the answer was never in
#: doubt. (It was ``2**48`` steps.)
QUERY_LIMIT_STEPS = 24


# ----------------------------------------------------------------------------- result
@dataclass(frozen=True)
class LineSearchOutcome:
    """Result of one :func:`noisy_backtracking_line_search` call.

    Attributes
    ----------
    eta : float
        The released step size: the first candidate that passed the noisy
        Armijo test, 0 for a failed search (``on_failure="zero"``), or
        ``backtrack**max_backtracks * eta0`` (``on_failure="smallest"``).
    accepted : bool
        Whether a candidate passed (implied by ``eta``).
    event : PrivacyEvent
        The privacy event of the call on its rows (not amplified).
    """

    eta: float
    accepted: bool
    event: PrivacyEvent


# ----------------------------------------------------------------------------- the Armijo query and one search
def _armijo_slacks(objective: Any, w: np.ndarray, g: np.ndarray, idx: np.ndarray, etas: Any, *, clip_obj: float,
                   divisor: float, l2: float, armijo: float, limit: float) -> Any:
    """Lazily yield the Armijo slack of each candidate (mean form, regulariser outside the clipping).

    ``F_B(w) - armijo eta ||g||**2 - F_B(w - eta g)``, clipped to ``[-limit, limit]``
    (1-Lipschitz: the sensitivity is unchanged). Both evaluations use ``idx``.
    Computed as a private part, the mean over the rows of the differences
    ``min(l_i(w), C) - min(l_i(w - eta g), C)`` (each in ``[-C, C]``, summed by
    :func:`privtune.optim._sums.blocked_sum`), plus a public part (the
    regulariser's change and ``armijo eta ||g||**2``, from released values
    only), added last: the public part never enters a rounding of the private
    one, and the last addition errs by at most ``2**-53`` times twice the
    limit (beyond it the clip gives both neighbours the same value), which
    the search's sensitivity pays for (:class:`_Search`).
    """
    gg = float(g @ g)
    m = int(idx.size)
    base = _clipped_losses(objective, w, idx, clip_obj) if m else np.zeros(0)
    reg0 = 0.5 * l2 * float(w @ w)
    for eta in etas:
        v = w - eta * g
        if m:
            diff = base - _clipped_losses(objective, v, idx, clip_obj)  # each in [-C, C], rounded once
            private = float(blocked_sum(m, lambda a, b, diff=diff: float(diff[a:b].sum()))) / divisor
        else:
            private = 0.0
        public = (reg0 - 0.5 * l2 * float(v @ v)) - armijo * eta * gg
        q = private + public
        yield float(np.clip(q, -limit, limit)) if math.isfinite(q) else -limit


def search_rounding(*, terms: int, clip_obj: float, divisor: float, factor: float) -> float:
    """``psi`` of a search: the slacks' private means are means of at most ``terms`` differences in ``[-C, C]``.

    Each difference is rounded once (``depth=1``) before the blocked sum
    (:func:`privtune.optim._sums.rounding_factor`).
    """
    return rounding_factor(terms=terms, bound=clip_obj, divisor=divisor, factor=factor, depth=1)


class _Search:
    """One NOISYBTLS configuration (internal): the candidates and the noise of a call.

    ``sensitivity`` is the exact sensitivity of a slack (``f C / D``);
    ``rounding`` is ``psi`` (:func:`search_rounding`): the mechanism is built
    with the sensitivity ``sensitivity * psi * (1 + 2**-30)``, where ``psi``
    pays for the rounding of the slacks' private means and the relative
    ``2**-30`` for the last addition of their public part, at most
    ``2 * 2**-53`` times the query limit ``2**24 g`` per neighbour, i.e.
    ``2**-28 g``; the sparse vector's grid ``g`` is at most ``2**-11`` times its
    sensitivity (checked here).
    """

    def __init__(self, *, noise: str, budget: float, sensitivity: float, eta0: float, backtrack: float,
                 max_backtracks: int, on_failure: str, source: RandomSource, rounding: float = 1.0) -> None:
        base = sensitivity * rounding
        mech_sens = base * (1.0 + 2.0**-30)
        if noise == "laplace":
            self.mech: Any = SparseVector(epsilon=budget, sensitivity=mech_sens, threshold=0.0,
                                          random_state=source)
            self.limit = math.ldexp(self.mech.grid_spacing, QUERY_LIMIT_STEPS)
        else:
            self.mech = acc.GaussianSparseVector(budget, mech_sens, source)
            self.limit = self.mech.query_limit()
        if not 4.0 * 2.0**-53 * self.limit <= base * 2.0**-31:  # pragma: no cover - the grid is <= 2**-11 Delta
            raise InvalidParameterError("Internal error: the line search's grid leaves no room for the rounding of "
                                        "its queries; please report this bug.")
        self.etas = [eta0 * backtrack**i for i in range(max_backtracks)]
        self.fallback = eta0 * backtrack**max_backtracks if on_failure == "smallest" else 0.0

    def run(self, objective: Any, w: np.ndarray, g: np.ndarray, idx: np.ndarray, *, clip_obj: float,
            divisor: float, l2: float, armijo: float) -> tuple[float, bool]:
        slacks = _armijo_slacks(objective, w, g, idx, self.etas, clip_obj=clip_obj, divisor=divisor, l2=l2,
                                armijo=armijo, limit=self.limit)
        index = self.mech.run(slacks)
        if index is None:
            return self.fallback, False
        return self.etas[index], True


# ----------------------------------------------------------------------------- NOISYBTLS (public)
def noisy_backtracking_line_search(
    objective: PerExampleObjective, w: Any, direction: Any, *, budget: float, noise: str = "laplace",
    rows: Any = None, divisor: float | None = None, relation: str = "replace_one", clip_obj: float = 1.0,
    l2: float = 0.0, armijo: float = 0.5, backtrack: float = 0.8, max_backtracks: int = 10, eta0: float = 1.0,
    on_failure: str = "zero", accountant: Accountant | None = None, random_state: Any = None,
    phase: str = "training",
) -> LineSearchOutcome:
    r"""NOISYBTLS (Chen & Lee, Alg. 1): a private backtracking line search along a released direction.

    Tests the candidates ``eta0 backtrack**i`` (``i = 0 .. max_backtracks - 1``)
    with AboveThreshold on the Armijo slack
    ``F_B(w) - armijo eta ||d||**2 - F_B(w - eta d)`` against the public threshold
    0, where ``F_B(v) = (1/divisor) sum_rows min(l_i(v), clip_obj) + (l2/2)||v||**2``,
    and releases the first candidate that passes.

    Parameters
    ----------
    objective : PerExampleObjective
    w : array-like of shape (n_params,)
        The current point (public or released).
    direction : array-like of shape (n_params,)
        The search direction ``d``; must be public or already released (a noisy
        gradient): ``||d||**2`` enters the query unprotected.
    budget : float in (0, inf)
        ``eps_BT`` (Laplace) or ``rho_BT`` (Gaussian).
    noise : {"laplace", "gaussian"}, default="laplace"
    rows : array-like of int or None, default=None
        The rows of the batch (public, distinct indices); None is every row.
    divisor : float in (0, inf) or None, default=None
        The public divisor of the batch mean; None is ``len(rows)``. Never pass a
        realised Poisson batch size: pass ``q n``.
    relation : {"replace_one", "add_remove"}, default="replace_one"
        Sensitivity ``2 clip_obj / divisor`` (replace-one) or ``clip_obj / divisor``.
    clip_obj, l2, armijo, backtrack, max_backtracks, eta0
        Loss clipping ``C_obj``, regulariser, ``alpha`` in (0, 1), ``beta`` in
        (0, 1), number of candidates (1 to 100), first candidate.
    on_failure : {"zero", "smallest"}, default="zero"
        Release 0 (Alg. 1) or ``backtrack**max_backtracks * eta0`` (the paper's
        NN mode) when no candidate passes.
    accountant : Accountant or None, default=None
        If given, the call's event is checked and charged before any data access.
    random_state : None, int, Generator or RandomSource, default=None
        ``None``: secure noise. An int: reproducible, not for release.
    phase : str, default="training"

    Returns
    -------
    LineSearchOutcome

    Raises
    ------
    InvalidParameterError
        For a bad parameter (nothing spent).
    BudgetExceededError
        If the accountant cannot pay (nothing read, nothing spent).

    Notes
    -----
    **Privacy.** Under ``relation`` the Armijo slack moves by at most
    ``Delta_q = f clip_obj / divisor`` (``f = 2`` replace-one, 1 add/remove)
    when one row of the batch changes: each row's term
    ``min(l_i(w), C) - min(l_i(w - eta d), C)`` lies in ``[-C, C]`` (spec App. A;
    losses outside ``[0, C]`` or NaN are clipped) and the regulariser and
    ``armijo eta ||d||**2`` are public. Laplace: threshold noise
    ``Lap(2 Delta_q / eps)`` drawn once per call, fresh ``Lap(4 Delta_q / eps)`` per
    candidate (:class:`privtune.mechanisms.SparseVector`): the call is pure
    ``eps``-DP whatever ``max_backtracks`` (Thm 1); event
    ``SparseVectorEvent(eps)``. Gaussian: ``a rho + log(max_backtracks + 1)/(a - 1)``
    RDP (Zhu & Wang 2020; the paper's Thm 3 drops the log term), stated as a
    ``RenyiEvent``. Only ``eta`` is released. The event is that of the mechanism
    on the given rows (no amplification is claimed for a random choice of rows).

    **Floating point.** The slack is computed as the mean of the rows'
    differences (summed in fixed blocks of 4 096 rows, added with
    ``math.fsum``) plus its public part, and the mechanism is built with
    ``Delta_q`` times a factor ``psi (1 + 2**-30)`` that provably covers the
    rounding of both (:mod:`privtune.optim._sums`; ``psi - 1`` is about
    ``m 2**-40`` at most), so the guarantee holds for the computed slacks, for any
    number of rows up to about ``8.6e9`` per batch (more is refused before
    any charge). It assumes the objective computes each row's loss from that
    row and ``w`` only (:class:`PerExampleObjective`).
    """
    owner = "noisy_backtracking_line_search"
    kind = _choice(noise, "noise", _NOISES, owner)
    budget = check_real(budget, "budget", low=0.0, owner=owner)
    rel = _choice(relation, "relation", ("replace_one", "add_remove"), owner)
    fail = _choice(on_failure, "on_failure", _FAILURES, owner)
    c_obj = check_real(clip_obj, "clip_obj", low=0.0, owner=owner)
    lam = check_real(l2, "l2", low=0.0, closed="left", owner=owner)
    alpha = check_real(armijo, "armijo", low=0.0, high=1.0, owner=owner)
    beta = check_real(backtrack, "backtrack", low=0.0, high=1.0, owner=owner)
    k = check_integer(max_backtracks, "max_backtracks", low=1, high=100, owner=owner)
    e0 = check_real(eta0, "eta0", low=0.0, owner=owner)
    n, d = _objective_shape(objective, owner)
    wv = _vector(w, d, "w", owner)
    dv = _vector(direction, d, "direction", owner)
    if rows is None:
        idx = np.arange(n)
    else:
        idx = np.asarray(rows)
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 \
                or idx.max() >= n:
            raise InvalidParameterError(f"The 'rows' parameter of {owner} must be a non-empty 1-D array of row "
                                        f"indices in [0, {n}).")
        if np.unique(idx).size != idx.size:  # a repeated row would enter the query k times: k x the sensitivity
            raise InvalidParameterError(f"The 'rows' parameter of {owner} must not repeat a row index (the "
                                        "sensitivity counts each row once).")
    div = float(idx.size) if divisor is None else check_real(divisor, "divisor", low=0.0, owner=owner)
    if accountant is not None and not isinstance(accountant, Accountant):
        raise InvalidParameterError(f"The 'accountant' parameter of {owner} must be a privtune Accountant or None.")
    source = check_random_state(random_state, owner=owner)
    scheme = acc.Scheme("full", n, n, 1.0, div, rel)
    sens = scheme.sensitivity(c_obj)
    check_sum_terms(int(idx.size), owner)
    psi = search_rounding(terms=int(idx.size), clip_obj=c_obj, divisor=div, factor=2.0 if rel == "replace_one" else 1.0)
    search = _Search(noise=kind, budget=budget, sensitivity=sens, eta0=e0, backtrack=beta, max_backtracks=k,
                     on_failure=fail, source=source, rounding=psi)
    event = acc.search_event(scheme, kind, budget, k + 1)
    if accountant is not None:
        accountant.check(event)
        accountant.spend(event, phase=phase, role="training")  # write-ahead, before any value is read
    validate = getattr(objective, "validate", None)
    if callable(validate):
        validate()
    eta, accepted = search.run(objective, wv, dv, idx, clip_obj=c_obj, divisor=div, l2=lam, armijo=alpha)
    return LineSearchOutcome(eta=float(eta), accepted=accepted, event=event)
