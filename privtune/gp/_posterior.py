"""Closed-form GP posterior over a finite candidate set Λ with incremental updates.

Model (Kusner et al. 2015, Assumption 1 and eq. 2): the scaled score functions
of all tasks are jointly GP(0, k1 ⊗ k2); an observation of task ``t`` at
``λ`` is ``y = f_t(λ) + α`` with ``α ~ N(0, σ²)`` and σ² declared. Over Λ for
the private task 0,

    μ_n(λ)  = k(λ, obs) (K_obs + Σ)⁻¹ y,
    σ_n²(λ) = 1 - k(λ, obs) (K_obs + Σ)⁻¹ k(obs, λ),

with ``Σ`` the diagonal of noise variances and ``k((0, λ), (t, λ')) =
k1(0, t) k2(λ, λ')``. The prior mean is 0 on the standardised scale (the middle
of the declared score bounds) and the prior variance is 1 (``k2(λ, λ) = 1``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.gp._incremental import IncrementalCholesky
from privtune.gp._kernels import InputKernel, MultiTaskKernel, TaskKernel
from privtune.gp._scaling import ScoreScale
from privtune.utils._validation import check_integer, check_real

__all__ = ["GPPosterior"]


def _candidate_matrix(candidates: Any, owner: str) -> np.ndarray:
    X = getattr(candidates, "X", candidates)  # a CandidateSet or an array
    try:
        X = np.array(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"The 'candidates' parameter of {owner} must be a CandidateSet or an array of "
            "shape (n_candidates, d) in [0, 1]^d."
        ) from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise InvalidParameterError(
            f"The 'candidates' parameter of {owner} must have shape (n_candidates, d) with "
            f"n_candidates >= 1 and d >= 1. Got shape {X.shape} instead."
        )
    if not np.all((X >= 0.0) & (X <= 1.0)):
        raise InvalidParameterError(
            f"The 'candidates' parameter of {owner} must lie in the unit cube [0, 1]^d "
            "(finite, no NaN)."
        )
    X.setflags(write=False)
    return X


def _split_kernel(kernel: Any, owner: str) -> tuple[InputKernel, TaskKernel | None]:
    if isinstance(kernel, MultiTaskKernel):
        return kernel.input_kernel, kernel.task_kernel
    if isinstance(kernel, InputKernel):
        return kernel, None
    raise InvalidParameterError(
        f"The 'kernel' parameter of {owner} must be a MultiTaskKernel or an InputKernel. "
        f"Got {kernel!r} of type {type(kernel).__name__} instead."
    )


class GPPosterior:
    """GP posterior of the private task over Λ, updated one observation at a time.

    Parameters
    ----------
    candidates : CandidateSet or array-like of shape (n_candidates, d)
        The finite set Λ, encoded in ``[0, 1]^d``.
    kernel : MultiTaskKernel or InputKernel
        The declared kernel k1 ⊗ k2; an InputKernel means the private task
        only (task 0). Its hyperparameters are fixed; nothing is fitted here.
    noise_var : float
        Declared observation noise variance σ² >= 0 on the standardised scale
        (prior variance 1). Convert from score units with
        :meth:`ScoreScale.variance_to_scaled`.
    score_bounds : ScoreScale or (lower, upper)
        Declared bounds of the score. Observed values ``v`` enter as
        ``(v - mid) / half_range`` (see :class:`ScoreScale`); no statistic of
        the observed values is ever used for scaling.
    min_pivot : float, default=1e-10
        Jitter threshold of the incremental Cholesky factor (see Notes).
    capacity : int, default=32
        Observations the factor has room for before it grows. Pass the
        planned number (public observations plus ``n_iter``): the factor then
        never reallocates during the loop (growing by doubling copies the
        whole ``n × |Λ|`` matrix, a spike of one iteration at large |Λ|).

    Attributes
    ----------
    X : ndarray of shape (n_candidates, d)
        The encoded candidates (read-only).
    kernel : MultiTaskKernel or InputKernel
        The kernel as given. Release methods read Kusner et al.'s k1(V, V')
        from ``kernel.task_correlation`` (a MultiTaskKernel); an InputKernel
        carries none, deliberately.
    scale : ScoreScale
        The score scaling.
    noise_var : float
        The declared σ² (standardised scale).

    Notes
    -----
    Each :meth:`add_observation` evaluates one kernel column k2(Λ, λ_new)
    (numpy, the closed form GPyTorch's kernel evaluates), one triangular
    solve with the current Cholesky factor (O(n²)) and one product with the
    n × |Λ| matrix ``L⁻¹ K_cand`` (O(n |Λ|)); the posterior mean and variance
    over Λ are then updated in O(|Λ|), in place, in buffers allocated once.
    No |Λ| × |Λ| matrix is formed. The product with ``L⁻¹ K_cand`` reads the
    whole matrix at every observation (8 n |Λ| bytes): at large |Λ| it is
    bound by memory bandwidth and is most of an iteration's cost.

    If a squared Cholesky pivot would fall below ``min_pivot`` (zero or tiny
    noise with a repeated or nearly repeated point), that observation's noise
    variance is raised just enough to reach it; see :attr:`noise_variances`.
    With ``noise_var >= min_pivot`` this never happens.

    The posterior holds the private scores it was given; it never logs or
    prints them.
    """

    def __init__(
        self,
        candidates: Any,
        kernel: MultiTaskKernel | InputKernel,
        *,
        noise_var: float,
        score_bounds: ScoreScale | tuple[float, float],
        min_pivot: float = 1e-10,
        capacity: int = 32,
    ) -> None:
        self.X = _candidate_matrix(candidates, "GPPosterior")
        self._k2, self._k1 = _split_kernel(kernel, "GPPosterior")
        self.kernel = kernel
        self._B = np.ones((1, 1)) if self._k1 is None else self._k1.correlations
        n_dims = self._k2.n_dims
        if n_dims is not None and n_dims != self.X.shape[1]:
            raise InvalidParameterError(
                f"The kernel has {n_dims} lengthscales but the candidates have "
                f"{self.X.shape[1]} coordinates."
            )
        self.scale = ScoreScale.coerce(score_bounds)
        self.noise_var = check_real(noise_var, "noise_var", low=0.0, closed="left",
                                    owner="GPPosterior")
        self.min_pivot = check_real(min_pivot, "min_pivot", low=0.0, owner="GPPosterior")
        m = self.X.shape[0]
        cap = check_integer(capacity, "capacity", low=1, owner="GPPosterior")
        self._factor = IncrementalCholesky(m, self.min_pivot, capacity=cap)
        self._mean = np.zeros(m)
        self._init_buffers()
        self._a: list[float] = []  # L⁻¹ y
        self._tasks: list[int] = []
        self._index: list[int] = []  # candidate index, -1 for points off Λ
        self._points: list[np.ndarray] = []
        self._noise: list[float] = []

    def _init_buffers(self) -> None:
        """Candidates prepared for kernel columns (``Xᵀ``, one row per coordinate) and scratch rows over Λ.

        Each iteration then evaluates its kernel column, updates the mean and
        computes the UCB in place, with no |Λ|-sized temporary (at |Λ| = 65 536
        each temporary was a fresh 512 KiB array, page faults included).
        """
        m = self.X.shape[0]
        self._XT = self._k2._prepare(self.X)
        self._col = np.empty(m)
        self._scratch = np.empty((2, m))

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickles from before the buffers existed (they held a torch copy of X instead)
        state = dict(state)
        state.pop("_X_t", None)
        self.__dict__.update(state)
        if "_XT" not in state:
            self._init_buffers()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_XT", "_col", "_scratch"):  # rebuilt on loading
            state.pop(name, None)
        return state

    # -- sizes --------------------------------------------------------------
    @property
    def n_candidates(self) -> int:
        """|Λ|."""
        return int(self.X.shape[0])

    @property
    def n_observations(self) -> int:
        """Number of observations so far."""
        return self._factor.n

    @property
    def observation_tasks(self) -> np.ndarray:
        """Task index of each observation."""
        return np.asarray(self._tasks, dtype=np.int64)

    @property
    def observation_candidates(self) -> np.ndarray:
        """Candidate index of each observation (``-1`` for points off Λ)."""
        return np.asarray(self._index, dtype=np.int64)

    @property
    def observation_points(self) -> np.ndarray:
        """Encoded location of each observation, shape ``(n, d)``."""
        if not self._points:
            return np.zeros((0, self.X.shape[1]))
        return np.vstack(self._points)

    @property
    def noise_variances(self) -> np.ndarray:
        """Effective noise variance of each observation (declared + any jitter)."""
        return np.asarray(self._noise, dtype=np.float64) + np.asarray(self._factor.jitter)

    # -- updates ------------------------------------------------------------
    def add_observation(
        self, candidate: int, value: float, *, task: int = 0, noise_var: float | None = None
    ) -> None:
        """Condition on the score ``value`` of task ``task`` at candidate ``candidate``.

        Parameters
        ----------
        candidate : int
            Index into Λ.
        value : float
            Observed score in score units (finite; it may leave the bounds).
        task : int, default=0
            0 for the private task, 1..P for public tasks.
        noise_var : float or None, default=None
            This observation's noise variance on the standardised scale;
            ``None`` uses the declared ``noise_var``.
        """
        j = check_integer(candidate, "candidate", low=0, high=self.n_candidates - 1,
                          owner="GPPosterior.add_observation")
        x = self.X[j]
        col = self._k2._column_prepared(self._XT, self.X[j], out=self._col, work=self._scratch)
        self._add(j, x, col, value, task, noise_var)

    def add_observation_at(
        self, x: Any, value: float, *, task: int = 0, noise_var: float | None = None
    ) -> None:
        """Condition on an observation at an encoded point ``x`` not necessarily in Λ.

        Useful for public tasks observed elsewhere (e.g. an earlier study). Same
        parameters as :meth:`add_observation`, with ``x`` of shape ``(d,)`` in
        ``[0, 1]^d`` instead of a candidate index.
        """
        try:
            xx = np.array(x, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                "The 'x' parameter of GPPosterior.add_observation_at must be an encoded point."
            ) from None
        if xx.shape != (self.X.shape[1],) or not np.all((xx >= 0.0) & (xx <= 1.0)):
            raise InvalidParameterError(
                "The 'x' parameter of GPPosterior.add_observation_at must be an encoded point "
                f"of shape ({self.X.shape[1]},) in [0, 1]^d. Got shape {xx.shape}."
            )
        col = self._k2._column_prepared(self._XT, xx, out=self._col, work=self._scratch)
        self._add(-1, xx, col, value, task, noise_var)

    def _check_task(self, task: Any) -> int:
        if self._k1 is not None:
            return int(self._k1.check_tasks([task])[0])  # refuses bools and floats
        if isinstance(task, (int, np.integer)) and not isinstance(task, bool) and task == 0:
            return 0
        raise InvalidParameterError(
            "Task indices must be ints in [0, 0] (the kernel is an InputKernel: private task "
            f"only). Got {task!r} instead."
        )

    def _add(self, j: int, x: np.ndarray, col: np.ndarray, value: Any, task: Any,
             noise_var: float | None) -> None:
        t = self._check_task(task)
        noise = self.noise_var if noise_var is None else check_real(
            noise_var, "noise_var", low=0.0, closed="left", owner="GPPosterior.add_observation")
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not math.isfinite(float(value))):
            # the message never shows the value: it may be private
            raise InvalidParameterError(
                "The 'value' parameter of GPPosterior.add_observation must be a finite real "
                "number."
            )
        y = float(self.scale.to_scaled(float(value)))
        B = self._B
        n = self._factor.n
        k_prev = np.empty(n)
        if n:
            idx = np.asarray(self._index, dtype=np.int64)
            on = idx >= 0
            k_prev[on] = col[idx[on]]
            if not on.all():
                off = np.flatnonzero(~on)
                pts = np.vstack([self._points[i] for i in off])
                k_prev[off] = self._k2(pts, x[None, :])[:, 0]
            k_prev *= B[np.asarray(self._tasks, dtype=np.int64), t]
        # k1(t, t) k2(x, x) = 1 by declaration (unit diagonals); k1(0, 0) = 1 scales nothing
        b0t = float(B[0, t])
        if b0t != 1.0:
            np.multiply(col, b0t, out=col)
        l, pivot, v = self._factor.extend(k_prev, 1.0 + noise, col)
        a_new = (y - float(l @ np.asarray(self._a))) / pivot if n else y / pivot
        self._a.append(a_new)
        tmp = self._scratch[0]
        np.multiply(v, a_new, out=tmp)
        np.add(self._mean, tmp, out=self._mean)
        self._tasks.append(t)
        self._index.append(j)
        self._points.append(np.array(x, dtype=np.float64))
        self._noise.append(noise)

    # -- posterior over Λ (private task) -------------------------------------
    @property
    def mean(self) -> np.ndarray:
        """Posterior mean μ_n over Λ on the standardised scale, shape ``(|Λ|,)``."""
        return self._mean.copy()

    @property
    def variance(self) -> np.ndarray:
        """Posterior variance σ_n² over Λ on the standardised scale (clipped at 0)."""
        return np.maximum(1.0 - self._factor.colsq, 0.0)

    @property
    def std(self) -> np.ndarray:
        """Posterior standard deviation σ_n over Λ on the standardised scale."""
        return np.sqrt(self.variance)

    @property
    def mean_scores(self) -> np.ndarray:
        """Posterior mean over Λ in score units (``mid + half_range * μ_n``)."""
        return self.scale.to_scores(self._mean)

    @property
    def std_scores(self) -> np.ndarray:
        """Posterior standard deviation over Λ in score units (``half_range * σ_n``)."""
        return self.scale.half_range * self.std

    def ucb(self, beta: float) -> np.ndarray:
        """GP-UCB over Λ on the standardised scale: ``μ_n + sqrt(beta) σ_n`` (Kusner eq. 3)."""
        b = check_real(beta, "beta", low=0.0, closed="left", owner="GPPosterior.ucb")
        return self._ucb_into(b, np.empty(self.n_candidates))

    def _ucb_into(self, beta: float, out: np.ndarray) -> np.ndarray:
        """:meth:`ucb` written into ``out``, the same operations in the same order (bit-identical)."""
        np.subtract(1.0, self._factor.colsq, out=out)
        np.maximum(out, 0.0, out=out)
        np.sqrt(out, out=out)
        np.multiply(math.sqrt(beta), out, out=out)
        return np.add(self._mean, out, out=out)

    def ucb_argmax(self, beta: float) -> int:
        """``argmax ucb(beta)`` (lowest index among ties), computed in a scratch row: no allocation."""
        b = check_real(beta, "beta", low=0.0, closed="left", owner="GPPosterior.ucb_argmax")
        return int(np.argmax(self._ucb_into(b, self._scratch[1])))

    def __repr__(self) -> str:
        return (f"GPPosterior(n_candidates={self.n_candidates}, "
                f"n_observations={self.n_observations}, kernel={self.kernel!r}, "
                f"noise_var={self.noise_var!r}, score_bounds={self.scale!r})")
