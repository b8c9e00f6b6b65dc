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

Where the code is (issue 39 split this module; every name it defined is still
importable from here): the three mechanisms M_P, M_S and M_E are defined here;
:func:`pwa_subgradient` in :mod:`privtune.optim.piecewise._subgradient`, the
baselines in :mod:`privtune.optim.piecewise._baselines`, and the result every
one of them returns in :mod:`privtune.optim.piecewise._result`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.events import EpsilonDeltaEvent, LaplaceEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Exponential, Laplace  # noqa: F401 - Exponential: pwa_subgradient's, still importable here
from privtune.mechanisms._grid import MAX_GRID_INDEX

# _baselines, _result and _subgradient were split out of this module (issue 39): every name it defined keeps its path.
from privtune.optim.piecewise._baselines import pwa_box_centre, pwa_uniform
from privtune.optim.piecewise._core import (
    PiecewiseResult,
    _Problem,
    charge,
    check_n_changed,
    check_problem,
    check_relation,
    pwa_objective,
    pwa_reference_value,
    solve_pwa,
)
from privtune.optim.piecewise._result import _PHASE, _result
from privtune.optim.piecewise._sampling import (
    gibbs_tv_bound,
    rejection_tv_bound,
    sample_gibbs,
    sample_metropolis,
    sample_rejection,
)
from privtune.optim.piecewise._subgradient import (  # noqa: F401
    _FLOAT_MAX,
    _norms,
    _score_scale,
    _step_sizes,
    _weighted_average,
    pwa_subgradient,
)
from privtune.utils import check_integer, check_random_state, check_real

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

_SAMPLERS = ("rejection", "gibbs", "metropolis")


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
