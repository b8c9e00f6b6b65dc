r"""Pure epsilon-DP minimisation of a max-affine function over a box with private offsets (seed 001).

Han, Topcu & Pappas (2014) [HTP14]_ minimise

.. math:: f(x) = \max_{i=1..m} (a_i^\top x + b_i) \quad \text{over} \quad P = \{lo \le x \le hi\},

where the slopes ``A`` and the box are public and only the offsets ``b`` are
private. Neighbouring offset vectors differ in at most ``n_changed`` entries,
each by at most ``offset_bound`` (``b_max``)::

    |b_i - b'_i| <= offset_bound for all i,   #{i : b_i != b'_i} <= n_changed.

``n_changed=None`` (all ``m``) is the paper's relation (eq. 4), where one
person can move every offset; label-private Chebyshev regression has
``n_changed=2`` (one target is two offsets). This is not replace-one of a data
row: the events are labelled with the relation ``"offsets_linf"``, and an
accountant composes them only with events of that same relation (it refuses to
mix them with replace-one or add/remove events). A caller that maps replace-one
of a data record into such a change of the offsets (``DPChebyshevRegressor``:
one replaced target moves two offsets, each within the declared target range)
passes ``relation="replace_one"``, which is then true of its records. The
mechanisms:

* :func:`pwa_perturb_objective` (M_P, §4.1): Laplace noise on ``b``, then the exact LP;
* :func:`pwa_perturb_solution` (M_S, §4.2): the exact LP, Laplace noise on the
  solution calibrated to the box's diameter, projected back onto the box;
* :func:`pwa_exponential` (M_E, §4.3): the exponential mechanism on the box,
  sampled by capped rejection, Gibbs or Metropolis (see
  :mod:`privtune.optim.piecewise._sampling` for what each guarantees);
* :func:`pwa_subgradient` (Alg. 1/2, §4.4): the DP subgradient method, with the
  sign of Alg. 1 corrected, projection onto the box and a private
  (weighted-average) output;
* :func:`pwa_box_centre`, :func:`pwa_uniform`: data-independent baselines (0-DP).

Deviations from the paper (the seed-001 spec's fixes) are listed in each
function's Notes. In short: Laplace noise is privtune's exact grid Laplace with
an **L1** sensitivity (the paper's l2 "vector Laplace" needs floating-point
samplers that DESIGN.md §7 rules out); Alg. 1 uses ``exp(+eps' u / (2 b_max))``;
iterates and M_S outputs are projected onto ``P``; Alg. 2 outputs the
step-weighted average, not the best iterate (which would leak); MCMC is reported
with a certified delta, or flagged heuristic.

References
----------
.. [HTP14] S. Han, U. Topcu and G. J. Pappas, "Differentially Private Convex
   Optimization with Piecewise Affine Objectives", IEEE CDC 2014,
   arXiv:1403.6135.
.. [MT07] F. McSherry and K. Talwar, "Mechanism Design via Differential
   Privacy", FOCS 2007.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.events import EpsilonDeltaEvent, ExponentialEvent, LaplaceEvent, SelfComposedEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Exponential, Laplace
from privtune.mechanisms._grid import MAX_GRID_INDEX
from privtune.optim.piecewise._core import (
    PiecewiseResult,
    _Problem,
    charge,
    check_box,
    check_n_changed,
    check_problem,
    check_relation,
    pwa_objective,
    pwa_reference_value,
    solve_pwa,
    totals,
)
from privtune.optim.piecewise._sampling import (
    gibbs_tv_bound,
    rejection_tv_bound,
    sample_gibbs,
    sample_metropolis,
    sample_rejection,
)
from privtune.utils import check_finite_array, check_integer, check_random_state, check_real

__all__ = [
    "PiecewiseResult",
    "pwa_objective",
    "solve_pwa",
    "pwa_perturb_objective",
    "pwa_perturb_solution",
    "pwa_exponential",
    "pwa_subgradient",
    "pwa_box_centre",
    "pwa_uniform",
]

_PHASE = "training"
_SAMPLERS = ("rejection", "gibbs", "metropolis")


def _result(x: np.ndarray, method: str, events: tuple, seeded: bool, history: dict[str, Any]) -> PiecewiseResult:
    eps, delta, guarantee = totals(events)
    return PiecewiseResult(x=np.asarray(x, dtype=np.float64), method=method, events=events, epsilon=eps,
                           delta=delta, guarantee=guarantee, seeded=seeded, history=history)


# ----------------------------------------------------------------------------- LP (never refuses after a charge)
def _minimiser_or_centre(prob: _Problem, b: np.ndarray) -> tuple[np.ndarray, float]:
    """``solve_pwa`` on ``b``, or the box's centre (data-free) if the solver fails: never raises after a charge.

    The mechanisms call it after their charge, on offsets whose values are the
    sensitive data (or noisy ones): a refusal there would depend on them.
    :func:`solve_pwa` rescales an LP that HiGHS rejects (offsets of 1e20 and
    more inside a declared range, say), so the centre is a last resort.
    """
    try:
        return solve_pwa(prob.A, b, prob.lo, prob.hi)
    except RuntimeError:
        x = prob.centre.copy()
        with np.errstate(over="ignore", invalid="ignore"):
            return x, float((prob.A @ x + b).max())


# ----------------------------------------------------------------------------- M_P
def _check_grid_range(mech: Laplace, magnitude: float, size: int, what: str, owner: str) -> None:
    """Refuse, before the charge, a release whose public magnitude bound is too large for the exact grid.

    The exact Laplace sampler clips a value with ``|value| / g >= 2**51``
    (``g`` its grid spacing) to that range, which keeps the guarantee but would
    release a saturated, meaningless value; a refusal checked on the value
    itself, after the charge, would depend on the private value (DESIGN rule 7).
    Checked here on a public bound of ``|value|``, it depends on declarations
    only, and nothing is spent.
    """
    g = mech.grid_spacing(size)
    if not magnitude / g < MAX_GRID_INDEX:
        raise InvalidParameterError(
            f"{owner}: the declared range of {what} is too far from 0 for the exact noise grid (|{what}| / grid "
            f"spacing must stay below 2**51; bound {magnitude:.6g}, spacing {g:.6g}). Shift the problem towards 0 "
            "(e.g. centre the targets on a public value). Nothing was spent.")


def pwa_perturb_objective(A: Any, b: Any, *, bounds: Any, epsilon: float, offset_bound: float,
                          n_changed: int | None = None, accountant: Any = None,
                          random_state: Any = None, relation: str = "offsets_linf",
                          max_abs_offset: float | None = None) -> PiecewiseResult:
    r"""M_P: perturb the offsets with Laplace noise, then solve the LP exactly.

    Releases ``argmin_{x in P} max_i (a_i . x + b_i + w_i)`` with ``w`` i.i.d.
    (discrete, grid-exact) Laplace of scale ``n_changed * offset_bound / epsilon``.

    Parameters
    ----------
    A : array_like of shape (m, d)
        Public slopes.
    b : array_like of shape (m,)
        Private offsets.
    bounds : pair (lo, hi) of floats or arrays of shape (d,)
        Public box ``P``; finite with ``lo < hi``.
    epsilon : float in (0, inf)
        Privacy budget of the release.
    offset_bound : float in (0, inf)
        Declared ``b_max``: neighbours' offsets differ by at most this much each.
    n_changed : int in [1, m] or None, default=None
        How many offsets may differ between neighbours; ``None`` means all ``m``
        (the paper's eq. 4).
    accountant : Accountant or None, default=None
        Charged (checked, then spent) before ``b`` is read.
    random_state : None, int, Generator or RandomSource, default=None
        ``None`` is cryptographically secure; an int is reproducible and **not for release**.
    max_abs_offset : float in (0, inf) or None, default=None
        A public bound on every ``|b_i|`` (e.g. from a declared target range).
        When given, a range too far from 0 for the exact noise grid is refused
        before the charge, from the bound alone, and the offsets are clipped
        to ``[-max_abs_offset, max_abs_offset]`` (a 1-Lipschitz map: the
        relation still holds), so that no offset can make the sampler refuse
        after the charge; without it the sampler checks the offsets themselves
        after the charge (a refusal that can depend on them).
        :class:`~privtune.linear_model.DPChebyshevRegressor` passes it.

    Returns
    -------
    PiecewiseResult
        ``history`` holds the noisy offsets ``b_noisy``, the noisy optimum
        ``noisy_value`` and the noise ``scale``.

    Raises
    ------
    InvalidParameterError
        On bad public input (``A``, the box, the constants, ``b``'s shape);
        nothing is spent. A non-finite offset is refused only after the charge
        (its value is the sensitive data).
    BudgetExceededError
        If the accountant refuses the charge; ``b`` is not read.

    Notes
    -----
    **Privacy.** ``(epsilon, 0)``-DP (one ``LaplaceEvent``) under the relation
    above: the L1 sensitivity of ``b`` is ``n_changed * offset_bound``, and the
    LP solve is post-processing (Thm. 14). Public: ``A``, the box, ``m``, ``d``,
    ``offset_bound``, ``n_changed``.

    *Deviation from the paper.* §4.1 adds "vector Laplace" noise with density
    proportional to ``exp(-epsilon ||w||_2 / (sqrt(m) b_max))`` (l2 sensitivity
    ``sqrt(m) b_max`` under eq. 4). privtune adds coordinate-wise Laplace
    calibrated to the L1 sensitivity ``m b_max`` (the alternative §3 mentions),
    sampled exactly on a grid (floating-point safe, DESIGN.md §7). Under eq. 4
    its ``||w||_inf`` is about ``m b_max log(m) / epsilon`` against
    ``m b_max sqrt(2 log m) / epsilon`` for the paper's noise; with
    ``n_changed`` small (P10) it is far less than either.

    Utility ([ours], spec §3): ``f(x) - f_opt <= 2 ||w||_inf``.
    """
    owner = "pwa_perturb_objective"
    prob = check_problem(A, b, bounds, epsilon, offset_bound, owner)
    k = check_n_changed(n_changed, prob.m, owner)
    sensitivity = k * prob.offset_bound
    mech = Laplace(epsilon=prob.epsilon, sensitivity=sensitivity, random_state=check_random_state(random_state))
    bound = None if max_abs_offset is None else check_real(max_abs_offset, "max_abs_offset", low=0.0, owner=owner)
    if bound is not None:
        _check_grid_range(mech, bound, prob.m, "b", owner)
    event = LaplaceEvent(epsilon=prob.epsilon, relation=check_relation(relation, owner),
                         label=f"{owner}: Laplace on b, L1 sensitivity "
                         f"{k} x offset_bound")
    charge(accountant, (event,), phase=_PHASE, owner=owner)
    b = prob.b if bound is None else np.clip(prob.b, -bound, bound)  # the declared bound, enforced
    b_noisy = np.asarray(mech.randomise(b), dtype=np.float64)
    x, value = _minimiser_or_centre(prob, b_noisy)  # post-processing of b_noisy; never refuses after the charge
    return _result(x, "perturb-objective", (event,), mech.seeded,
                   {"b_noisy": b_noisy, "noisy_value": value, "scale": mech.scale, "l1_sensitivity": sensitivity})


# ----------------------------------------------------------------------------- M_S
def pwa_perturb_solution(A: Any, b: Any, *, bounds: Any, epsilon: float,
                         solution_sensitivity: float | None = None, project: bool = True,
                         accountant: Any = None, random_state: Any = None,
                         relation: str = "offsets_linf") -> PiecewiseResult:
    r"""M_S: solve the LP exactly, add Laplace noise to the solution, project onto the box.

    Parameters
    ----------
    A, b, bounds, epsilon
        As in :func:`pwa_perturb_objective`.
    solution_sensitivity : float in (0, inf) or None, default=None
        Declared L1 bound on ``||x_opt(b) - x_opt(b')||_1``. ``None`` uses the
        box's L1 diameter ``sum_j (hi_j - lo_j)``, which holds for every pair of
        inputs. A smaller value must be a proven public bound, and it must cover
        the map this function implements: the LP solver's output, or the box's
        centre when HiGHS fails even on the rescaled LP (the diameter covers
        both; a stability bound for exact minimisers alone does not).
    project : bool, default=True
        Clip the noisy solution to the box (post-processing). ``False`` is the
        paper's literal M_S, whose output may leave ``P``.
    accountant, random_state
        As in :func:`pwa_perturb_objective`.

    Returns
    -------
    PiecewiseResult
        ``history`` holds the noise ``scale`` and the sensitivity used.

    Notes
    -----
    **Privacy.** ``(epsilon, 0)``-DP (one ``LaplaceEvent``) for *any* relation on
    ``b``: with the default sensitivity, any two solutions in ``P`` are within
    the box's L1 diameter. Projection is post-processing. The same covers any
    other map of ``b`` into ``P``: if the LP solver fails (HiGHS rejects
    offsets of ``1e20`` or more; :func:`solve_pwa` then rescales the LP, so
    this is a last resort), the noise is added to the box's centre instead of
    refusing after the charge (a refusal that would depend on ``b``).

    *Deviations from the paper.* §4.2 adds l2 vector-Laplace noise with the
    scale ``sqrt(d) Delta / epsilon`` (``Delta = diam_2(P) = ||hi - lo||_2``;
    the ``sqrt(d)`` is unnecessary, spec P1). privtune adds coordinate-wise
    grid-exact Laplace of scale ``||hi - lo||_1 / epsilon``: for a cube of side
    ``2c`` the expected noise norm is about ``2 sqrt(2) d**1.5 c / epsilon``,
    between Thm. 9's exact ``2 d**1.5 c / epsilon`` and the paper's
    ``2 d**2 c / epsilon``. The output is projected onto ``P`` (spec P3), which
    keeps Thm. 17's bound since projection is non-expansive.
    """
    owner = "pwa_perturb_solution"
    prob = check_problem(A, b, bounds, epsilon, 1.0, owner)  # no offset bound needed: any b' is covered
    if solution_sensitivity is None:
        sens = float(np.sum(prob.widths))
    else:
        sens = check_real(solution_sensitivity, "solution_sensitivity", low=0.0, owner=owner)
    if not isinstance(project, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'project' parameter of {owner} must be a bool. Got {project!r} instead.")
    mech = Laplace(epsilon=prob.epsilon, sensitivity=sens, random_state=check_random_state(random_state))
    # x_opt lies in the public box: its range is checked against the exact grid before the charge
    _check_grid_range(mech, float(np.max(np.maximum(np.abs(prob.lo), np.abs(prob.hi)))), int(prob.lo.size),
                      "the box", owner)
    event = LaplaceEvent(epsilon=prob.epsilon, relation=check_relation(relation, owner),
                         label=f"{owner}: Laplace on the LP solution")
    charge(accountant, (event,), phase=_PHASE, owner=owner)
    # Any map of b into P is covered by the box-diameter sensitivity: a solver failure gives the centre, no refusal
    x_opt, _ = _minimiser_or_centre(prob, prob.b)
    x = np.asarray(mech.randomise(x_opt), dtype=np.float64)
    if project:
        x = prob.project(x)
    return _result(x, "perturb-solution", (event,), mech.seeded,
                   {"scale": mech.scale, "l1_sensitivity": sens, "projected": bool(project)})


# ----------------------------------------------------------------------------- M_E
def pwa_exponential(A: Any, b: Any, *, bounds: Any, epsilon: float, offset_bound: float,
                    sampler: str = "rejection", n_steps: int | None = None, step_scale: float = 0.1,
                    certified_only: bool = True, accountant: Any = None,
                    random_state: Any = None, relation: str = "offsets_linf") -> PiecewiseResult:
    r"""M_E: the exponential mechanism on the box, density proportional to ``exp(-epsilon f(x) / (2 b_max))``.

    Parameters
    ----------
    A, b, bounds, epsilon, offset_bound
        As in :func:`pwa_perturb_objective`. The score ``-f(x)`` has
        sensitivity ``offset_bound`` whatever ``n_changed`` is (Lemma 18).
    sampler : {"rejection", "gibbs", "metropolis"}, default="rejection"
        How to sample (see :mod:`privtune.optim.piecewise._sampling`).
    n_steps : int in [1, inf) or None, default=None
        ``"rejection"``: the cap on proposals (``None``: 10**6); ``"gibbs"``:
        sweeps (``None``: 100); ``"metropolis"``: steps (``None``: 5000, the paper's).
    step_scale : float in (0, inf), default=0.1
        Metropolis only: the paper's ``eta``; the proposal covariance is
        ``eta * c * I`` with ``c`` the box's half-width (largest coordinate),
        so the per-coordinate standard deviation is ``sqrt(eta c)`` (spec P6).
    certified_only : bool, default=True
        Refuse (``InvalidParameterError``, before anything is spent) a sampler
        whose public total-variation certificate gives ``delta >= 1``, and the
        uncertified Metropolis chain. ``False`` accepts them with a
        **heuristic** guarantee, recorded as ``guarantee="conditional"``.
    accountant, random_state
        As in :func:`pwa_perturb_objective`.

    Returns
    -------
    PiecewiseResult
        ``history`` holds the sampler, ``n_steps``, ``kappa`` and the certified
        total-variation bound ``tv_bound`` (``None`` if uncertified).

    Raises
    ------
    InvalidParameterError
        On bad public input or, with ``certified_only``, an uncertifiable
        sampler; nothing is spent. A non-finite offset is refused only after the
        charge.
    BudgetExceededError
        If the accountant refuses; ``b`` is not read.

    Notes
    -----
    **Privacy.** Exact samples of ``pi_D`` are ``(epsilon, 0)``-DP (McSherry &
    Talwar; Thm. 19), with score sensitivity ``offset_bound`` (Lemma 18). A
    finite sampler is only approximately so: if its output law is within total
    variation ``tv`` of ``pi_D`` for every input, the release is
    ``(epsilon, (1 + e**epsilon) tv)``-DP, charged as one
    ``EpsilonDeltaEvent``. ``tv`` is certified from public quantities
    (``A``, the box, epsilon, ``b_max``, the step count): capped rejection
    ``(1 - exp(-kappa W))**N``; Gibbs by Doeblin ``(1 - exp(-kappa sum_j V_j))**T``.
    These certificates are vacuous when ``kappa * W`` is large (wide boxes,
    large epsilon / b_max): then, with ``certified_only=False``, the event is
    ``EpsilonDeltaEvent(epsilon, 0, guarantee="conditional")`` -- the epsilon
    holds only if the chain has mixed, which nothing here proves. The paper's
    Metropolis chain (5000 steps, §5.1) is always in that case, and it can
    fail: on the paper's own ell-infinity example (d = 10, box half-width
    0.05, epsilon = 1, ``offset_bound = 0.5``) its proposals (standard
    deviation ``sqrt(eta c) = 0.07``) rarely land in the box, whether the
    chain ever leaves the centre depends on the offsets, and a black-box
    audit measures epsilon >= 1.51 against the claimed 1
    (``tests/statistical/test_metropolis_audit.py``). All chains
    start at the centre of ``P`` (data-independent, spec P7). The running time
    of ``"rejection"`` depends on ``b`` (not part of the release). The
    rejection sampler's reference value is a certified lower bound of
    ``min_P f`` within ``W`` of ``max_P f``
    (:func:`~privtune.optim.piecewise._core.pwa_reference_value`: the LP's dual
    bound, or the closed form ``max_i min_P (a_i . x + b_i)``), never ``f`` at
    the LP's solution, which can sit above ``min_P f`` by the solver's
    tolerance and would then clip acceptance probabilities at 1; an LP failure
    leaves the closed form (never a refusal after the charge). Either keeps
    the sampler exact and its certificate.

    *Deviations from the paper.* The paper treats its MCMC output as exact.
    The rejection and Gibbs samplers (exact conditionals) are ours (spec §3, M3).
    """
    owner = "pwa_exponential"
    prob = check_problem(A, b, bounds, epsilon, offset_bound, owner)
    if sampler not in _SAMPLERS:
        raise InvalidParameterError(
            f"The 'sampler' parameter of {owner} must be one of {list(_SAMPLERS)}. Got {sampler!r} instead.")
    default = {"rejection": 10**6, "gibbs": 100, "metropolis": 5000}[sampler]
    steps = default if n_steps is None else check_integer(n_steps, "n_steps", low=1, owner=owner)
    eta = check_real(step_scale, "step_scale", low=0.0, owner=owner)
    if not isinstance(certified_only, (bool, np.bool_)):
        raise InvalidParameterError(
            f"The 'certified_only' parameter of {owner} must be a bool. Got {certified_only!r} instead.")
    rel = check_relation(relation, owner)
    kappa = prob.epsilon / (2.0 * prob.offset_bound)
    tv: float | None
    if sampler == "rejection":
        tv = rejection_tv_bound(prob.A, prob.widths, kappa, steps)
    elif sampler == "gibbs":
        tv = gibbs_tv_bound(prob.A, prob.widths, kappa, steps)
    else:
        tv = None
    delta = None if tv is None else (1.0 + math.exp(min(prob.epsilon, 700.0))) * tv
    if delta is not None and delta >= 1.0:
        tv, delta = None, None
    if delta is None:
        if certified_only:
            remedy = ("the Metropolis chain has no certificate at any n_steps; use sampler='gibbs' or 'rejection'"
                      if sampler == "metropolis" else "increase n_steps, or use the other exact-conditional sampler")
            raise InvalidParameterError(
                f"The {sampler!r} sampler of {owner} has no total-variation certificate giving delta < 1 "
                f"here (kappa={kappa:.3g}, n_steps={steps}): {remedy}, or pass certified_only=False to accept a "
                "heuristic guarantee.")
        event = EpsilonDeltaEvent(epsilon=prob.epsilon, delta=0.0, guarantee="conditional", relation=rel,
                                  label=f"{owner} ({sampler}, {steps} steps): heuristic, chain mixing not certified")
    else:
        event = EpsilonDeltaEvent(epsilon=prob.epsilon, delta=delta, relation=rel,
                                  label=f"{owner} ({sampler}, {steps} steps): exact-sampling epsilon, "
                                  "delta from a public TV certificate")
    source = check_random_state(random_state)
    charge(accountant, (event,), phase=_PHASE, owner=owner)
    if sampler == "rejection":
        # A certified lower bound of min f within W of max f (never a refusal after the charge): exact acceptance
        # probabilities and the certificate of rejection_tv_bound. f at the LP's solution could sit above min f.
        f_ref = pwa_reference_value(prob.A, prob.b, prob.lo, prob.hi)
        x, _ = sample_rejection(prob.A, prob.b, prob.lo, prob.hi, kappa, f_ref, steps, source)
    elif sampler == "gibbs":
        x = sample_gibbs(prob.A, prob.b, prob.lo, prob.hi, kappa, steps, source)
    else:
        c = 0.5 * float(np.max(prob.widths))
        x = sample_metropolis(prob.A, prob.b, prob.lo, prob.hi, kappa, steps, math.sqrt(eta * c), source)
    return _result(prob.project(x), "exponential", (event,), source.seeded,
                   {"sampler": sampler, "n_steps": steps, "kappa": kappa, "tv_bound": tv})


# ----------------------------------------------------------------------------- DP subgradient
_FLOAT_MAX = float(np.finfo(np.float64).max)


def _norms(v: np.ndarray, axis: int | None = None) -> Any:
    """``np.linalg.norm(v, axis=axis)``, on ``v`` scaled by a power of two when its squares would over/underflow.

    The scaling is exact (up to subnormals), so the result is the unscaled
    computation's whenever that one is finite; only a norm above the largest
    float is ``inf``.
    """
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if top == 0.0 or 2.0**-500 <= top <= 2.0**500:
        return np.linalg.norm(v, axis=axis)
    e = int(np.frexp(top)[1])
    with np.errstate(over="ignore"):
        return np.ldexp(np.linalg.norm(np.ldexp(v, -e), axis=axis), e)


def _step_sizes(prob: _Problem, n_iter: int, step_size: Any, owner: str) -> np.ndarray:
    if step_size is None:
        with np.errstate(over="ignore"):
            widths = prob.widths
            # hi - lo overflows for a box wider than the largest float: the half-widths do not
            if np.all(np.isfinite(widths)):
                R = float(_norms(widths))
            else:
                R = 2.0 * float(_norms(0.5 * prob.hi - 0.5 * prob.lo))
            G = float(np.max(_norms(prob.A, axis=1)))
            alpha = R / (max(G, 1e-300) * math.sqrt(n_iter))
        # Public arithmetic only. A step of inf would make inf * 0 = NaN in x - alpha a_j, and G = inf (rows
        # longer than the largest float) a step of 0: clamp to the positive floats (a step that large only means
        # "to the box's boundary", where the projection puts the iterate anyway).
        return np.full(n_iter, min(max(alpha, 5e-324), _FLOAT_MAX))
    if isinstance(step_size, str):
        if step_size not in ("sqrt", "constant"):
            raise InvalidParameterError(f"The 'step_size' parameter of {owner} must be None, 'constant', "
                                        f"'sqrt', a positive float or an array. Got {step_size!r} instead.")
        base = _step_sizes(prob, n_iter, None, owner)[0] * math.sqrt(n_iter)
        i = np.arange(1, n_iter + 1)
        with np.errstate(over="ignore"):
            out = base / np.sqrt(i) if step_size == "sqrt" else np.full(n_iter, base / math.sqrt(n_iter))
        return np.minimum(out, _FLOAT_MAX)
    arr = np.asarray(step_size, dtype=np.float64) if not np.isscalar(step_size) else None
    if arr is None:
        return np.full(n_iter, check_real(step_size, "step_size", low=0.0, owner=owner))
    if arr.shape != (n_iter,) or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise InvalidParameterError(
            f"The 'step_size' parameter of {owner} must be positive and finite, of shape ({n_iter},).")
    return arr


def _score_scale(prob: _Problem) -> int:
    """``k`` such that the scores ``(A / 2**k) x + b / 2**k`` are finite for every ``x`` of the box (public).

    ``|a_ij| < 2**ea`` and ``|x_j| < 2**ex`` bound ``|(A x)_i|`` by ``d 2**(ea + ex)``. When that is below
    ``2**1021``, ``k = 0`` (the scores as they are); otherwise ``k >= 3`` brings it below ``2**1021`` and
    ``|b / 2**k|`` below ``2**1021``, so their sum is finite.
    """
    ea = int(np.frexp(float(np.max(np.abs(prob.A))))[1])
    ex = int(np.frexp(float(max(np.max(np.abs(prob.lo)), np.max(np.abs(prob.hi)))))[1])
    k = ea + ex + math.ceil(math.log2(prob.d)) - 1021
    return 0 if k <= 0 else max(k, 3)


def _weighted_average(alphas: np.ndarray, iterates: np.ndarray) -> np.ndarray:
    """``sum_i alpha_i x_i / sum_i alpha_i``, with the weights and the iterates scaled by powers of two.

    The scaling is exact (up to subnormals), so the result is the direct formula's whenever that one is finite;
    it stays finite for steps near the largest float or iterates near it (where the direct sums overflow).
    """
    ka = int(np.frexp(float(np.max(alphas)))[1])
    kx = int(np.frexp(float(np.max(np.abs(iterates))))[1]) if iterates.size else 0
    kx = max(0, kx + math.ceil(math.log2(alphas.shape[0] + 1)) - 1020)  # 0 unless the sum could overflow
    w = np.ldexp(alphas, -ka)
    return np.ldexp((w[:, None] * np.ldexp(iterates, -kx)).sum(axis=0) / w.sum(), kx)


def pwa_subgradient(A: Any, b: Any, *, bounds: Any, epsilon: float, offset_bound: float, n_iter: int = 100,
                    step_size: Any = None, x0: Any = None, output: str = "average",
                    accountant: Any = None, random_state: Any = None,
                    relation: str = "offsets_linf") -> PiecewiseResult:
    r"""The DP projected subgradient method (Alg. 2 with the corrected Alg. 1).

    For ``i = 1..k``: select a piece ``j`` with probability proportional to
    ``exp(+(epsilon/k) (a_j . x_i + b_j) / (2 b_max))`` (exponential mechanism,
    Alg. 1), then ``x_{i+1} = Pi_P(x_i - alpha_i a_j)``.

    Parameters
    ----------
    A, b, bounds, epsilon, offset_bound
        As in :func:`pwa_perturb_objective`.
    n_iter : int in [1, inf), default=100
        ``k``, the number of iterations (the paper's value).
    step_size : None, "constant", "sqrt", float or array of shape (n_iter,), default=None
        ``None``/``"constant"``: ``alpha = R / (G sqrt(k))`` with ``R = ||hi - lo||_2``
        and ``G = max_i ||a_i||_2`` (public); ``"sqrt"``: ``R / (G sqrt(i))``. These
        computed steps are clamped to the positive floats (see Notes, *Numerics*).
    x0 : array_like of shape (d,) or None, default=None
        Data-independent start in ``P``; ``None`` is the centre.
    output : {"average", "last"}, default="average"
        ``"average"``: ``sum_i alpha_i x_i / sum_i alpha_i`` over ``x_1..x_k``;
        ``"last"``: ``x_{k+1}`` (the paper's Alg. 2 output).
    accountant, random_state
        As in :func:`pwa_perturb_objective`.

    Returns
    -------
    PiecewiseResult
        ``history`` holds the selected ``indices``, the ``iterates`` ``x_1..x_{k+1}``
        and the ``step_sizes`` (all DP releases or public).

    Notes
    -----
    **Privacy.** Each selection is ``(epsilon/k, 0)``-DP (score sensitivity
    ``offset_bound``: each ``a_j . x + b_j`` moves by at most ``b_max`` under
    either relation, Lemma 18); the iterate update is post-processing. ``k``
    adaptive selections compose to ``(epsilon, 0)`` (Thm. 15), charged as one
    ``SelfComposedEvent(ExponentialEvent(epsilon/k), k)`` before the first access.

    *Deviations from the paper (spec P2-P4).* Alg. 1 prints
    ``exp(-eps u / (2 b_max))``, which favours the *smallest* piece; the
    exponent's sign is ``+`` here. Alg. 2 does not project; the iterates are
    projected onto ``P`` (needed by Thm. 24's proof). Thm. 24 bounds the best
    iterate, whose selection would read ``f(., D)`` and leak; the default output
    is the step-weighted average, which satisfies the same bound (eq. 14) by
    Jensen and is post-processing.

    *Numerics* (public magnitudes only; the events and the selection
    probabilities are unchanged). The norms ``R`` and ``G`` and the weighted
    average are computed on values scaled by powers of two, which is exact (up
    to subnormals): bit-identical results for ordinary magnitudes, and finite
    ones where the direct sums of squares or products overflow (boxes, target
    ranges or features of 1e154 and more returned NaN before). A computed step
    is clamped to ``[5e-324, 1.8e308]`` (a step of ``inf`` gave ``inf * 0 = NaN``;
    one of 0, for rows longer than the largest float, gave ``0 / 0``). When
    ``d 2**(ea + ex)`` (``|a_ij| < 2**ea``, ``|x_j| < 2**ex`` on the box) reaches
    ``2**1021``, the scores are computed as ``(a_j / 2**s) . x + b_j / 2**s`` with
    sensitivity ``b_max / 2**s`` for a public ``s >= 3``: the same exponents
    ``eps' (u_j - max u) / (2 b_max)``, hence the same selection, without the
    overflow that made the mechanism refuse its scores after the charge.

    Utility (Thm. 24, with the average): ``E f(x_bar) - f_opt <=
    (R**2 + G**2 sum alpha_i**2) / (2 sum alpha_i) + 2 b_max k (1 + log m) / epsilon``.
    """
    owner = "pwa_subgradient"
    prob = check_problem(A, b, bounds, epsilon, offset_bound, owner)
    k = check_integer(n_iter, "n_iter", low=1, owner=owner)
    alphas = _step_sizes(prob, k, step_size, owner)
    if output not in ("average", "last"):
        raise InvalidParameterError(
            f"The 'output' parameter of {owner} must be one of ['average', 'last']. Got {output!r} instead.")
    if x0 is None:
        x = prob.centre.copy()
    else:
        x = check_finite_array(x0, "x0", owner=owner, ndim=1)
        if x.shape != (prob.d,) or np.any(x < prob.lo) or np.any(x > prob.hi):
            raise InvalidParameterError(f"The 'x0' parameter of {owner} must be a point of the box, shape ({prob.d},).")
        x = x.copy()
    eps_step = prob.epsilon / k
    source = check_random_state(random_state)
    ks = _score_scale(prob)  # 0 unless the scores could overflow (public)
    A_s = np.ldexp(prob.A, -ks) if ks else prob.A
    sens_s = math.ldexp(prob.offset_bound, -ks)
    if not sens_s > 0.0:
        raise InvalidParameterError(
            f"{owner}: the scores a_i . x + b_i can exceed the largest float over this box (|A| and the box's "
            f"magnitudes), and scaled down by 2**{ks} to stay finite, the score sensitivity offset_bound="
            f"{prob.offset_bound!r} underflows to 0. Hint: rescale the features or the box towards 1. "
            "Nothing was spent.")
    mech = Exponential(epsilon=eps_step, sensitivity=sens_s, random_state=source)
    rel = check_relation(relation, owner)
    step_event = ExponentialEvent(epsilon=eps_step, relation=rel, label=f"{owner}: one DP subgradient (Alg. 1)")
    event = SelfComposedEvent(event=step_event, count=k, relation=rel,
                              label=f"{owner}: {k} DP subgradients (Alg. 2)")
    charge(accountant, (event,), phase=_PHASE, owner=owner)
    iterates = np.empty((k + 1, prob.d))
    indices = np.empty(k, dtype=np.int64)
    b_s = np.ldexp(prob.b, -ks) if ks else prob.b
    for i in range(k):
        iterates[i] = x
        j = mech.select(A_s @ x + b_s)  # the scores / 2**ks with sensitivity b_max / 2**ks: the same selection
        indices[i] = j
        with np.errstate(over="ignore"):  # alpha a_j past the largest float: -+inf, projected onto the box
            x = prob.project(x - alphas[i] * prob.A[j])
    iterates[k] = x
    if output == "average":
        out = _weighted_average(alphas, iterates[:k])
    else:
        out = x
    return _result(prob.project(out), "subgradient", (event,), source.seeded,
                   {"indices": indices, "iterates": iterates, "step_sizes": alphas, "output": output})


# ----------------------------------------------------------------------------- baselines
def pwa_box_centre(bounds: Any, n_features: int) -> PiecewiseResult:
    """Data-independent baseline: the centre of the box (0-DP; spec §4 baseline (i)).

    Parameters
    ----------
    bounds : pair (lo, hi)
        The box.
    n_features : int in [1, inf)
        ``d``.

    Returns
    -------
    PiecewiseResult
        With no events.

    Notes
    -----
    **Privacy.** Reads nothing private: exactly 0-DP. Any private mechanism
    should beat it; the spec's prototype found it often does not at epsilon = 0.1.
    """
    d = check_integer(n_features, "n_features", low=1, owner="pwa_box_centre")
    lo, hi = check_box(bounds, d, "pwa_box_centre")
    return _result(0.5 * (lo + hi), "centre", (), False, {})


def pwa_uniform(bounds: Any, n_features: int, *, random_state: Any = None) -> PiecewiseResult:
    """Data-independent baseline: a uniform random point of the box (0-DP; spec §4 baseline (ii)).

    Parameters
    ----------
    bounds : pair (lo, hi)
    n_features : int in [1, inf)
    random_state : None, int, Generator or RandomSource, default=None

    Returns
    -------
    PiecewiseResult

    Notes
    -----
    **Privacy.** Reads nothing private: exactly 0-DP.
    """
    d = check_integer(n_features, "n_features", low=1, owner="pwa_uniform")
    lo, hi = check_box(bounds, d, "pwa_uniform")
    source = check_random_state(random_state)
    x = lo + source.uniform53(d) * (hi - lo)
    return _result(x, "uniform", (), source.seeded, {})

