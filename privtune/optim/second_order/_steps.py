"""The loop of :func:`~privtune.optim.second_order.dp_second_order` (Gao & Wright 2023): steps, eigensolvers, trace.

``_run_phase`` runs one phase: a noisy gradient each iteration, a gradient
step (short, or a private line search ``_line_search``, DP-LINESEARCH run as
AboveThreshold) while its norm is above ``eps_g``, else a noisy Hessian, its
smallest eigenpair (``_smallest_eigenpair``: dense ``eigh`` or Lanczos) and a
negative-curvature step (``curvature_direction`` picks the sign from the noisy
gradient) or a certified stop. The data is read through ``_DataOracle``, the
noise added by ``_Releases``; ``_Trace`` records the released quantities into
a ``SecondOrderHistory``.

The step and stopping constants come from the plan (``_Rules``, built in
:mod:`privtune.optim.second_order._plan`); only the Lanczos failure
probability and the line-search query range are set here. The public
functions, the result and the references (Lanczos: [CDHS18]; AboveThreshold:
[DR14]) are in :mod:`privtune.optim.second_order`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privtune.mechanisms.gaussian import Gaussian
from privtune.mechanisms.sparse_vector import SparseVector
from privtune.optim._result import _readonly
from privtune.optim._sums import blocked_sum, rounding_factor
from privtune.optim.second_order._nonconvex import (
    NonconvexLoss,
    lanczos_iterations,
    lanczos_smallest,
    pack_upper,
    unpack_symmetric,
)
from privtune.optim.second_order._plan import _Rules

#: Failure probability ``delta_L`` of one Lanczos call (Carmon et al. 2018, Lemma C.1): a utility, not a privacy, knob.
LANCZOS_FAILURE = 1e-3
#: Line-search queries are clipped to ``+- 2**24`` grid steps of the sparse vector (clipping keeps the sensitivity;
#: it bounds the rounding of the query's last addition, see ``_line_search``). It was ``2**48``: beyond ``2**24``
#: steps (``2**14`` noise scales) the answer was never in doubt.
_QUERY_LIMIT_STEPS = 2.0**24


# ============================================================================= history (released quantities only)
@dataclass(frozen=True)
class SecondOrderHistory:
    """Per-iteration record of **released** quantities only (all arrays of length ``n_iter``).

    Attributes
    ----------
    phase : ndarray of int
        1 or 2 (two-phase variants), else 1.
    kind : ndarray of str
        ``"gradient"`` (gradient step), ``"curvature"`` (negative-curvature step) or
        ``"stop"`` (certified: the loop ended here).
    gradient_norm : ndarray of float
        ``||g~_k||``, the norm of the released noisy gradient (regulariser included).
    lambda_min : ndarray of float
        The smallest eigenvalue (Ritz value with Lanczos) of the released noisy
        Hessian; NaN when no Hessian was released at that iteration.
    step_size : ndarray of float
        The step size taken (NaN at ``"stop"``): ``1/G`` or ``2|lam~|/M`` for short
        steps, the sparse vector's choice (or the fallback) for line searches.
    line_search_trial : ndarray of int
        Index of the accepted trial of the line search, ``-1`` when every trial
        was refused and the fallback step was taken, ``-2`` without line search.
    """

    phase: np.ndarray
    kind: np.ndarray
    gradient_norm: np.ndarray
    lambda_min: np.ndarray
    step_size: np.ndarray
    line_search_trial: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "phase", _readonly(self.phase, np.int64))
        object.__setattr__(self, "kind", _readonly(self.kind, "<U9"))
        for name in ("gradient_norm", "lambda_min", "step_size"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "line_search_trial", _readonly(self.line_search_trial, np.int64))


# ============================================================================= the loop
class _DataOracle:
    """Data access of the loop (internal): values, gradients, Hessians of the data term on clipped rows.

    The full-batch margins ``y_i x_i^T w`` of the last point are kept, so that a line search at the point
    where the gradient was just computed does not recompute them. Every sum over rows is a
    :func:`privtune.optim._sums.blocked_sum` (blocks of 4 096 rows by position, added with ``math.fsum``;
    up to 4 096 rows, the one BLAS product or ``np.sum`` as before), whose rounding the mechanisms'
    sensitivities pay for (:func:`privtune.optim.second_order._plan._rounding_factors`). No
    floating-point warning is emitted (one could depend on a row).
    """

    def __init__(self, loss: NonconvexLoss, U: np.ndarray, z: np.ndarray) -> None:
        self.loss, self.U, self.z = loss, np.ascontiguousarray(U), z
        self._w: np.ndarray | None = None
        self._m: np.ndarray | None = None

    def _margins(self, w: np.ndarray) -> np.ndarray:
        if self._w is None or not np.array_equal(self._w, w):
            self._w, self._m = w.copy(), self.z * (self.U @ w)
        assert self._m is not None
        return self._m

    def gradient(self, w: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """Mean over the rows (all, or the batch ``rows``) of ``l'(m_i) y_i x_i``."""
        with np.errstate(all="ignore"):
            if rows is None:
                U, coef = self.U, self.loss.margin_first(self._margins(w)) * self.z
            else:
                U, z = self.U[rows], self.z[rows]
                coef = self.loss.margin_first(z * (U @ w)) * z
            total = blocked_sum(U.shape[0], lambda a, b: U[a:b].T @ coef[a:b])
            return total / U.shape[0]

    def hessian(self, w: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """Mean over the rows of ``l''(m_i) x_i x_i^T``, symmetrised (as ``NonconvexLoss.data_hessian``)."""
        with np.errstate(all="ignore"):
            U, z = (self.U, self.z) if rows is None else (self.U[rows], self.z[rows])
            c = self.loss.margin_second(z * (U @ w))
            H = blocked_sum(U.shape[0], lambda a, b: (U[a:b] * c[a:b, None]).T @ U[a:b]) / U.shape[0]
            return 0.5 * (H + H.T)

    def value(self, w: np.ndarray) -> float:
        """Mean loss over all rows (each value in ``[0, B]``)."""
        with np.errstate(all="ignore"):
            v = self.loss.margin_value(self._margins(w))
            return float(blocked_sum(v.shape[0], lambda a, b: float(np.sum(v[a:b])))) / v.shape[0]

    def ray(self, w: np.ndarray, direction: np.ndarray, limit: float) -> Callable[[float], float]:
        """``gamma -> (1/n) sum_i clip(l_i(w) - l_i(w + gamma direction), -limit, limit)``.

        The private part of a line-search query: the mean over all rows of
        each row's loss decrease along the ray (the margins along it are
        affine in ``gamma``), each clipped to ``[-limit, limit]`` (exactly:
        the clip is a map of one row), so that two neighbouring data sets'
        exact means differ by at most ``2 limit / n`` whatever the float
        rounding of the losses; the caller adds the public part.
        """
        with np.errstate(all="ignore"):
            m0 = self._margins(w)
            m1 = self.z * (self.U @ direction)
            l0 = self.loss.margin_value(m0)
        n = m0.shape[0]

        def mean_decrease(gamma: float) -> float:
            with np.errstate(all="ignore"):
                diff = np.clip(l0 - self.loss.margin_value(m0 + gamma * m1), -limit, limit)
                diff = np.where(np.isnan(diff), 0.0, diff)  # a NaN difference (inf - inf) counts as none
                return float(blocked_sum(n, lambda a, b: float(np.sum(diff[a:b])))) / n

        return mean_decrease


class _Releases:
    """The noisy releases of one phase (internal): exact discrete Gaussian noise, SVT line searches."""

    def __init__(self, grad_mech: Gaussian, hess_mech: Gaussian, svt_lambda: float | None, source: Any) -> None:
        self.grad_mech, self.hess_mech, self.svt_lambda, self.source = grad_mech, hess_mech, svt_lambda, source

    def gradient(self, g: np.ndarray) -> np.ndarray:
        return np.asarray(self.grad_mech.randomise(g), dtype=float)

    def hessian(self, H: np.ndarray) -> np.ndarray:
        """``H + E``: ``E`` symmetric, i.i.d. entries on and above the diagonal (same variance on it)."""
        d = H.shape[0]
        return unpack_symmetric(np.asarray(self.hess_mech.randomise(pack_upper(H)), dtype=float), d)

    def line_search(self, query: Callable[[float], float], *, sensitivity: float, gamma_init: float,
                    gamma_bar: float, beta: float, trials: int, rounding: float = 1.0) -> tuple[float, int]:
        assert self.svt_lambda is not None
        return _line_search(query, sensitivity=sensitivity, gamma_init=gamma_init, gamma_bar=gamma_bar, beta=beta,
                            trials=trials, epsilon=1.0 / self.svt_lambda, source=self.source, rounding=rounding)


def query_rounding(n: int, sensitivity: float) -> float:
    """``psi`` of a line search's queries: means of ``n`` clipped decreases in ``[-L, L]``, ``L = n Delta / 2``."""
    return rounding_factor(terms=n, bound=0.5 * n * sensitivity, divisor=float(n), factor=2.0)


def _line_search(query: Callable[[float], float], *, sensitivity: float, gamma_init: float, gamma_bar: float,
                 beta: float, trials: int, epsilon: float, source: Any, rounding: float = 1.0) -> tuple[float, int]:
    """DP-LINESEARCH (Alg. 2): AboveThreshold at threshold 0 over the trial steps ``gamma_init beta^j``.

    One threshold draw ``Lap(2 Delta / epsilon)`` per call and fresh
    ``Lap(4 Delta / epsilon)`` per trial (:class:`~privtune.mechanisms.SparseVector`);
    returns ``(step, j)`` for the first trial answered "above", or
    ``(gamma_bar, -1)`` when every one of the ``trials`` is refused (the fallback,
    spec section 5 item 4). Queries are clipped to a public range of the grid,
    which cannot increase their sensitivity. The whole call is
    ``epsilon``-DP whatever its outcome.

    Floating point: the sparse vector is built with the sensitivity ``Delta
    psi (1 + 2**-30)``: ``psi`` (``rounding``, :func:`query_rounding`) pays
    for the rounding of the queries' private means, the relative ``2**-30``
    for their last addition of the public part (at most ``2 * 2**-53`` times
    the query limit ``2**24 g``, per neighbour; the grid ``g`` is at most
    ``2**-11`` times the sensitivity, checked here).
    """
    base = sensitivity * rounding
    svt = SparseVector(epsilon=epsilon, sensitivity=base * (1.0 + 2.0**-30), threshold=0.0, random_state=source)
    limit = _QUERY_LIMIT_STEPS * svt.grid_spacing
    if not 4.0 * 2.0**-53 * limit <= base * 2.0**-31:  # pragma: no cover - the grid is at most 2**-11 Delta
        raise RuntimeError("Internal error: the line search's grid leaves no room for the rounding of its queries.")
    session = svt.start()
    for j in range(trials):
        gamma = gamma_init * beta**j
        value = float(query(gamma))
        value = min(max(value, -limit), limit) if math.isfinite(value) else -limit
        if session.test(value):
            return gamma, j
    return gamma_bar, -1


def curvature_direction(p: np.ndarray, noisy_gradient: np.ndarray) -> np.ndarray:
    """The eigenvector ``p`` with its sign chosen so that ``p^T g~ <= 0`` (eq. 5), from the **noisy** gradient.

    Using the exact gradient would leak it (spec section 5 item 2).
    """
    return -p if float(p @ noisy_gradient) > 0.0 else p


def _smallest_eigenpair(H: np.ndarray, rules: _Rules, rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """Smallest eigenpair of the released ``H~``: dense ``eigh`` or Lanczos (post-processing either way)."""
    if not rules.lanczos:
        vals, vecs = np.linalg.eigh(H)
        return float(vals[0]), vecs[:, 0]
    d = H.shape[0]
    k = lanczos_iterations(d, float(np.linalg.norm(H)), rules.eps_H, LANCZOS_FAILURE)
    start = rng.standard_normal(d)
    return lanczos_smallest(H, k, start)


class _Trace:
    def __init__(self) -> None:
        self.rows: list[tuple[int, str, float, float, float, int]] = []

    def add(self, phase: int, kind: str, gnorm: float, lam: float, step: float, trial: int) -> None:
        self.rows.append((phase, kind, gnorm, lam, step, trial))

    def history(self) -> SecondOrderHistory:
        cols = list(zip(*self.rows, strict=True)) if self.rows else [[]] * 6
        return SecondOrderHistory(phase=np.array(cols[0], dtype=np.int64), kind=np.array(cols[1], dtype="<U9"),
                                  gradient_norm=np.array(cols[2], dtype=float),
                                  lambda_min=np.array(cols[3], dtype=float), step_size=np.array(cols[4], dtype=float),
                                  line_search_trial=np.array(cols[5], dtype=np.int64))


def _run_phase(w: np.ndarray, *, phase: int, horizon: int, oracle: Any, regulariser: Any, releases: Any,
               rules: _Rules, n: int, batch: int | None, rng: np.random.Generator,
               trace: _Trace) -> tuple[np.ndarray, bool]:
    """Run at most ``horizon`` iterations from ``w``; return ``(w, certified)``.

    Every decision uses released quantities only (``g~``, ``lam~``, the SVT's
    answers); the data is read through ``oracle`` inside the releases and the
    line-search queries.
    """
    for _ in range(horizon):
        rows = None if batch is None else rng.choice(n, size=batch, replace=False)  # never released
        g_t = releases.gradient(oracle.gradient(w, rows)) + regulariser.reg_gradient(w)
        gnorm = float(np.linalg.norm(g_t))
        if gnorm > rules.eps_g:
            trial = -2
            if rules.line_search:
                gamma_bar = rules.gamma_bar_g
                gamma_init = rules.b_g * gamma_bar
                sens = min(2.0 * rules.B_g * gamma_init * gnorm, 2.0 * rules.B) / n
                # each row's decrease is clipped to +-n sens / 2 (what its Lipschitz or range bound allows)
                along = oracle.ray(w, -g_t, 0.5 * n * sens)  # private means along the step, inside the SVT only
                r_w = regulariser.reg_value(w)

                def q_g(gamma: float, w=w, g_t=g_t, r_w=r_w, gnorm=gnorm, along=along) -> float:
                    public = r_w - regulariser.reg_value(w - gamma * g_t) - rules.c_g * gamma * gnorm**2
                    return along(gamma) + public

                gamma, trial = releases.line_search(q_g, sensitivity=sens, gamma_init=gamma_init,
                                                    gamma_bar=gamma_bar, beta=rules.beta_g, trials=rules.i_max_g,
                                                    rounding=query_rounding(n, sens))
            else:
                gamma = 1.0 / rules.G
            w = w - gamma * g_t
            trace.add(phase, "gradient", gnorm, math.nan, gamma, trial)
            continue
        H_t = releases.hessian(oracle.hessian(w, rows)) + regulariser.reg_hessian(w)
        lam, p = _smallest_eigenpair(H_t, rules, rng)
        p = curvature_direction(p, g_t)
        negative = lam <= -0.5 * rules.eps_H if rules.lanczos else lam < -rules.eps_H
        if not negative:
            trace.add(phase, "stop", gnorm, lam, math.nan, -2)
            return w, True
        trial = -2
        if rules.line_search:
            gamma_bar = rules.t2 * abs(lam) / rules.M
            gamma_init = rules.b_H * gamma_bar
            sens = min(2.0 * rules.B_g * gamma_init, 2.0 * rules.B) / n  # ||p|| = 1
            along = oracle.ray(w, p, 0.5 * n * sens)
            r_w = regulariser.reg_value(w)

            def q_H(gamma: float, w=w, p=p, r_w=r_w, lam=lam, along=along) -> float:
                public = r_w - regulariser.reg_value(w + gamma * p) - 0.5 * rules.c_H * gamma**2 * abs(lam)
                return along(gamma) + public

            gamma, trial = releases.line_search(q_H, sensitivity=sens, gamma_init=gamma_init, gamma_bar=gamma_bar,
                                                beta=rules.beta_H, trials=rules.i_max_H,
                                                rounding=query_rounding(n, sens))
        else:
            gamma = 2.0 * abs(lam) / rules.M
        w = w + gamma * p
        trace.add(phase, "curvature", gnorm, lam, gamma, trial)
    return w, False
