r"""The DP projected subgradient method of seed 001 (Han, Topcu & Pappas 2014, Alg. 2 with the corrected Alg. 1).

:func:`pwa_subgradient` and its public numerics: the step sizes
(:func:`_step_sizes`), norms and weighted average computed on values scaled by
powers of two (:func:`_norms`, :func:`_weighted_average`) and the public score
scale that keeps the exponential mechanism's scores finite
(:func:`_score_scale`). The package's privacy model (the ``offsets_linf``
relation) and the other mechanisms are described in
:mod:`privtune.optim.piecewise._mechanisms`, which re-exports every name
defined here (split out of it by issue 39).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.events import ExponentialEvent, SelfComposedEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Exponential
from privtune.optim.piecewise._core import PiecewiseResult, _Problem, charge, check_problem, check_relation
from privtune.optim.piecewise._result import _PHASE, _result
from privtune.utils import check_finite_array, check_integer, check_random_state, check_real

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

