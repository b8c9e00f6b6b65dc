"""Estimating the task correlation k1(V, V') on PUBLIC data (Kusner et al. 2015, §6).

Kusner et al.'s Algorithms 1 and 2 assume that the score functions of all
validation sets are jointly GP(0, k1 ⊗ k2) with *known* kernels (Assumption 1),
and their privacy constant ``c = 2 sqrt((1 - k1(V, V')) log(3|Λ|/δ))`` depends
on the correlation k1(V, V') between a validation set and a neighbour. privtune
asks users to declare it (``TaskKernel(task_correlation=...)``).
:func:`estimate_task_correlation` is the paper's §6 procedure (its Figure 1)
for choosing that declared value from public or proxy data.

**Run this on public or proxy data only.** Its output is a deterministic
function of the scores it is given; computed from the sensitive validation set,
the declared k1 would leak that set and would no longer be a "known" kernel, so
the privacy guarantee would not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from privtune.exceptions import InvalidParameterError
from privtune.gp._kernels import InputKernel
from privtune.gp._scaling import ScoreScale
from privtune.utils._validation import check_finite_array, check_real

__all__ = ["TaskCorrelationCurve", "estimate_task_correlation"]

_OWNER = "estimate_task_correlation"
_LOG_2PI = float(np.log(2.0 * np.pi))
# The paper's grid 0.05, 0.10, ..., 0.95 (np.arange(0.05, 0.951, 0.05) rounded to exact decimals).
_PAPER_GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)
_PAPER_GRID.setflags(write=False)


@dataclass(frozen=True, eq=False, repr=False)
class TaskCorrelationCurve:
    """The joint log marginal likelihood of k1(V, V') over a grid (Kusner et al.'s Figure 1).

    Attributes
    ----------
    grid : ndarray of shape (n_grid,)
        The k1 values tried, each in ``(0, 1)`` (read-only).
    log_likelihood : ndarray of shape (n_grid,)
        Joint log marginal likelihood (natural log, in nats) of all pairs
        ``([F_V]_i, [F_V']_i)`` at each grid value, summed over the i.i.d.
        pairs (read-only).
    best : float
        The grid value with the largest log likelihood (the first one on ties).
    n_pairs : int
        Number of i.i.d. pairs (V_i, V_i').
    n_models : int
        Number of models (hyperparameter settings) scored on every set.
    input_kernel : InputKernel
        The declared k2.
    noise_var : float
        Observation noise variance on the standardised scale.
    score_scale : ScoreScale
        The declared map from scores to the standardised scale.

    Notes
    -----
    The log likelihood is a *relative* quantity: only differences between grid
    values matter (a difference of ``a`` nats is a likelihood ratio ``e^a``).
    """

    grid: np.ndarray
    log_likelihood: np.ndarray
    best: float
    n_pairs: int
    n_models: int
    input_kernel: InputKernel
    noise_var: float
    score_scale: ScoreScale

    @property
    def best_index(self) -> int:
        """Position of :attr:`best` in :attr:`grid`."""
        return int(np.argmax(self.log_likelihood))

    @property
    def at_grid_edge(self) -> bool:
        """Whether the maximiser is the smallest or largest grid value.

        If so, the likelihood may keep rising outside the grid: the paper's
        grid stops at 0.95 and its maximiser was that edge.
        """
        i = self.best_index
        return i in (int(np.argmin(self.grid)), int(np.argmax(self.grid)))

    def __repr__(self) -> str:
        i = self.best_index
        rel = self.log_likelihood - self.log_likelihood[i]
        others = np.delete(rel, i)
        gap = f", next best {-float(others.max()):.3g} nats lower" if others.size else ""
        edge = " (at the grid edge)" if self.at_grid_edge else ""
        return (
            f"TaskCorrelationCurve(best={self.best:.4g}{edge}, "
            f"log_likelihood={float(self.log_likelihood[i]):.6g}{gap}; "
            f"grid=[{float(self.grid.min()):.4g} .. {float(self.grid.max()):.4g}] "
            f"({self.grid.size} values), n_pairs={self.n_pairs}, n_models={self.n_models}, "
            f"{self.input_kernel!r}, noise_var={self.noise_var!r}, {self.score_scale!r})"
        )


def _check_grid(grid: Any) -> np.ndarray:
    g = check_finite_array(grid, "grid", owner=_OWNER, ndim=1)
    if np.any(g <= 0.0) or np.any(g >= 1.0):
        raise InvalidParameterError(
            f"The 'grid' parameter of {_OWNER} must hold k1 values strictly inside (0, 1). "
            f"Got values in [{g.min()!r}, {g.max()!r}]."
        )
    g = np.array(g, dtype=np.float64)
    g.setflags(write=False)
    return g


def estimate_task_correlation(
    scores_V: Any,
    scores_V_prime: Any,
    X: Any,
    *,
    input_kernel: InputKernel,
    noise_var: float,
    score_bounds: ScoreScale | tuple[float, float],
    grid: Any = _PAPER_GRID,
) -> TaskCorrelationCurve:
    """Likelihood of the task correlation k1(V, V') on PUBLIC neighbouring validation sets.

    This is the procedure of Kusner et al. (2015), §6 (their Figure 1). Pick
    ``n_models`` hyperparameter settings (e.g. a scrambled Sobol set), train
    each model once, draw ``n_pairs`` i.i.d. validation sets ``V_i`` and, for
    each, a neighbour ``V_i'`` (one record added or removed, as in the paper's
    §6, or one record replaced, as in its Definition 1), and score every model
    on every set. For each k1 in ``grid``, the pair of score vectors
    ``([F_V]_i, [F_V']_i)`` has, under Assumption 1, the joint Gaussian
    distribution

        N(0, [[1, k1], [k1, 1]] ⊗ K2 + noise_var · I_{2n}),

    with ``K2[j, l] = k2(λ_j, λ_l)`` and the scores mapped to the GP's
    standardised scale by the declared :class:`~privtune.gp.ScoreScale`
    (``(v - mid) / half_range``; zero prior mean, unit prior variance). The
    pairs are i.i.d., so their log likelihoods add. The most likely k1 is
    the grid value with the largest sum.

    .. warning::

       **Run this on PUBLIC or proxy data only** (a public dataset of the same
       kind, a synthetic or historical proxy). Never pass scores computed on
       the sensitive validation set: the estimate is a deterministic, unnoised
       function of the scores, so declaring it would leak the private data,
       and Kusner et al.'s guarantee assumes k1 is *known* a priori, not fitted
       to the data it protects. The result is what users declare as
       ``TaskKernel(task_correlation=...)``.

    A k1 close to 1 means the scores of neighbouring validation sets move
    together, so Kusner et al.'s constant c = 2 sqrt((1 - k1) log(3|Λ|/δ))
    in Algorithm 1 (and its analogue in Algorithm 2) is small and less noise is
    needed. The paper found k1 = 0.95, the largest value it tried, the most
    likely for SVMs on the Forest (covertype) data.

    Parameters
    ----------
    scores_V : array-like of shape (n_pairs, n_models)
        ``[F_V]_{ij}``: score (e.g. accuracy) of model ``j`` on validation set
        ``V_i``, in score units. Public or proxy data only.
    scores_V_prime : array-like of shape (n_pairs, n_models)
        ``[F_V']_{ij}``: score of model ``j`` on the neighbour ``V_i'``.
    X : array-like of shape (n_models, d) or CandidateSet
        Encoded hyperparameters of the models in ``[0, 1]^d`` (e.g.
        ``candidate_set(...).X``), in the column order of the score matrices.
    input_kernel : InputKernel
        The declared k2 (kind and lengthscale) under which k1 is estimated;
        use the one the tuner will use.
    noise_var : float
        Observation noise variance σ² on the standardised scale (``>= 0``);
        use the one the tuner will use. Zero is accepted if the joint
        covariance is numerically positive definite.
    score_bounds : ScoreScale or (lower, upper)
        Declared score bounds, e.g. ``(0, 1)`` for accuracy. They must not be
        read off the scores.
    grid : array-like of shape (n_grid,), default=0.05, 0.10, ..., 0.95
        k1 values to try, each strictly inside ``(0, 1)``. The default is the
        paper's grid 0.05, 0.10, ..., 0.95.

    Returns
    -------
    TaskCorrelationCurve
        ``.grid``, ``.log_likelihood`` (one value per grid value, summed over
        pairs) and ``.best`` (the maximiser).

    Raises
    ------
    InvalidParameterError
        If the score matrices are not 2-D of equal shape, contain NaN or
        infinite values, or have a number of columns other than ``len(X)``;
        if ``X`` is not a finite ``(n_models, d)`` array in the unit cube; if
        ``input_kernel`` is not an :class:`~privtune.gp.InputKernel`; if
        ``noise_var`` is negative; if a grid value is outside ``(0, 1)``; or
        if the joint covariance is not numerically positive definite (e.g.
        ``noise_var=0`` with nearly duplicate points).

    Notes
    -----
    For each grid value the ``2n × 2n`` covariance ``B ⊗ K2 + σ² I`` is built
    with :func:`numpy.kron` and factorised once (Cholesky); all pairs are then
    solved together, so the cost is ``O(n_grid (n³ + n_pairs n²))``.

    Reading the curve. In the orthogonal variables ``u = (z + z')/√2`` and
    ``w = (z - z')/√2`` of the standardised scores the likelihood splits into
    independent factors ``u ~ N(0, (1 + k1) K2 + σ² I)`` and
    ``w ~ N(0, (1 - k1) K2 + σ² I)``. For real validation sets one record moves
    a score by at most about ``1/m``, usually far below the declared noise
    σ; then ``w ≈ 0`` and the "difference" factor is essentially
    ``-n_pairs/2 · log det((1 - k1) K2 + σ² I)``, which increases towards
    ``k1 = 1`` almost whatever the data and ``m``. Such curves rise to the top
    of any grid that stops short of 1 (:attr:`TaskCorrelationCurve.at_grid_edge`
    is then true): they say that neighbouring score vectors are closer than
    the noise, i.e. Assumption 1 is compatible with a ``k1`` at least that
    large, not that ``k1`` equals the grid's upper end.

    References
    ----------
    Kusner, Gardner, Garnett and Weinberger, "Differentially Private Bayesian
    Optimization", ICML 2015, §6 and Figure 1.
    Bonilla, Chai and Williams, "Multi-task Gaussian Process Prediction",
    NeurIPS 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.gp import InputKernel, estimate_task_correlation
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((10, 2))
    >>> base = 0.8 + 0.05 * rng.standard_normal((50, 10))   # public scores only
    >>> curve = estimate_task_correlation(
    ...     base, base + 0.001 * rng.standard_normal((50, 10)), X,
    ...     input_kernel=InputKernel(0.2), noise_var=1e-4, score_bounds=(0, 1))
    >>> float(curve.best)
    0.95
    """
    if not isinstance(input_kernel, InputKernel):
        raise InvalidParameterError(
            f"The 'input_kernel' parameter of {_OWNER} must be an InputKernel. "
            f"Got {input_kernel!r} of type {type(input_kernel).__name__} instead."
        )
    s2 = check_real(noise_var, "noise_var", low=0.0, closed="left", owner=_OWNER)
    scale = ScoreScale.coerce(score_bounds)
    g = _check_grid(grid)
    FV = check_finite_array(scores_V, "scores_V", owner=_OWNER, ndim=2)
    FVp = check_finite_array(scores_V_prime, "scores_V_prime", owner=_OWNER, ndim=2)
    if FV.shape != FVp.shape:
        raise InvalidParameterError(
            f"The 'scores_V' and 'scores_V_prime' parameters of {_OWNER} must have the same "
            f"shape (n_pairs, n_models). Got {FV.shape} and {FVp.shape}."
        )
    Xa = check_finite_array(getattr(X, "X", X), "X", owner=_OWNER, ndim=2)
    n_pairs, n_models = FV.shape
    if Xa.shape[0] != n_models or Xa.shape[1] == 0:
        raise InvalidParameterError(
            f"The 'X' parameter of {_OWNER} must have shape (n_models, d) = ({n_models}, d) "
            f"with d >= 1, one row per column of the score matrices. Got shape {Xa.shape}."
        )
    if not np.all((Xa >= 0.0) & (Xa <= 1.0)):
        raise InvalidParameterError(
            f"The 'X' parameter of {_OWNER} must lie in the unit cube [0, 1]^d "
            "(encoded hyperparameters)."
        )

    K2 = input_kernel(Xa, Xa)
    K2 = (K2 + K2.T) / 2.0
    # Columns: pairs i; rows: the 2n stacked scaled scores ([F_V]_i, [F_V']_i).
    Y = np.vstack([scale.to_scaled(FV).T, scale.to_scaled(FVp).T])
    eye = np.eye(2 * n_models)
    ll = np.empty(g.size)
    for k, k1 in enumerate(g):
        B = np.array([[1.0, k1], [k1, 1.0]])
        cov = np.kron(B, K2) + s2 * eye
        try:
            L = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise InvalidParameterError(
                f"The joint covariance [[1, k1], [k1, 1]] ⊗ K2 + noise_var·I is not numerically "
                f"positive definite at k1={float(k1)!r} (noise_var={s2!r}). Increase noise_var "
                "or remove (nearly) duplicate rows of X."
            ) from None
        alpha = solve_triangular(L, Y, lower=True, check_finite=False)  # (2n, n_pairs)
        quad = float(np.sum(alpha * alpha))
        logdet = 2.0 * float(np.sum(np.log(np.diag(L))))
        ll[k] = -0.5 * quad - 0.5 * n_pairs * (logdet + 2 * n_models * _LOG_2PI)
    ll.setflags(write=False)
    best = float(g[int(np.argmax(ll))])
    return TaskCorrelationCurve(
        grid=g, log_likelihood=ll, best=best, n_pairs=int(n_pairs), n_models=int(n_models),
        input_kernel=input_kernel, noise_var=s2, score_scale=scale,
    )
