"""Maximum information gain γ_T over a finite candidate set, by greedy selection.

Srinivas et al. (2010) define

    γ_T = max_{A ⊂ Λ, |A| = T} ½ log det(I + σ⁻² K_A),

the largest mutual information between f and T noisy observations. GP-UCB may
observe a candidate more than once, so A ranges over *multisets* of Λ (T
observations with independent noise); this maximum is at least the maximum
over sets, so it is the safe one to use in Kusner et al.'s Laplace scale.

The information gain is monotone submodular, so the greedy multiset A_g (each
step adds the candidate with the largest posterior variance σ², gaining
½ log(1 + σ⁻² σ²)) satisfies F(A_g) >= (1 - 1/e) γ_T (Nemhauser, Wolsey and
Fisher 1978). Hence ``greedy / (1 - 1/e)`` is an **upper bound** on γ_T, and
that is the value privtune uses (a larger Laplace scale is always safe). The
analytic SE / Matérn bounds hold only up to unspecified constants and are not
usable as numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.gp._incremental import IncrementalCholesky
from privtune.gp._kernels import InputKernel, MultiTaskKernel
from privtune.gp._posterior import _candidate_matrix
from privtune.utils._validation import check_integer, check_real

__all__ = ["InformationGain", "gamma_T"]

_GREEDY_FACTOR = 1.0 - 1.0 / math.e
_NOT_PSD_TOL = 1e-8


@dataclass(frozen=True)
class InformationGain:
    """Result of :func:`gamma_T`.

    Attributes
    ----------
    greedy : float
        ½ log det(I + σ⁻² K_A) for the greedy multiset A (a lower bound on γ_T).
    bound : float
        ``greedy / (1 - 1/e)``, an upper bound on γ_T: the value to use.
    T : int
        Number of observations.
    noise_var : float
        σ² on the standardised scale.
    selected : tuple of int
        Candidate indices chosen greedily, in order (repeats possible).
    """

    greedy: float
    bound: float
    T: int
    noise_var: float
    selected: tuple[int, ...]


def _check_matrix(K: Any) -> np.ndarray:
    try:
        K = np.asarray(K, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            "The 'candidates' parameter of gamma_T must be a covariance matrix when no kernel "
            "is given."
        ) from None
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise InvalidParameterError(
            "The covariance matrix given to gamma_T must be square and non-empty. "
            f"Got shape {K.shape} instead."
        )
    if not np.all(np.isfinite(K)):
        raise InvalidParameterError("The covariance matrix given to gamma_T contains NaN or inf.")
    if not np.allclose(K, K.T, rtol=0.0, atol=1e-12 * max(1.0, float(np.abs(K).max()))):
        raise InvalidParameterError("The covariance matrix given to gamma_T must be symmetric.")
    if np.any(np.diag(K) < 0):
        raise InvalidParameterError(
            "The covariance matrix given to gamma_T must have a non-negative diagonal."
        )
    return K


def gamma_T(
    candidates: Any,
    T: int,
    noise_var: float,
    *,
    kernel: InputKernel | MultiTaskKernel | None = None,
) -> InformationGain:
    """Greedy maximum information gain over Λ, with the (1 - 1/e) upper bound.

    Parameters
    ----------
    candidates : CandidateSet, array-like of shape (|Λ|, d), or (|Λ|, |Λ|) matrix
        With ``kernel``: the candidates (encoded). Without: the prior covariance
        matrix of f over Λ (symmetric positive semi-definite).
    T : int
        Number of observations, ``T >= 1``.
    noise_var : float
        Observation noise variance σ² > 0 on the standardised scale.
    kernel : InputKernel or MultiTaskKernel, optional
        The declared kernel. For a MultiTaskKernel only k2 is used: γ_T concerns
        the private task alone, whose prior covariance is k1(V, V) k2 = k2.

    Returns
    -------
    InformationGain
        ``greedy`` and ``bound = greedy / (1 - 1/e)``; use ``bound``.

    Notes
    -----
    Each greedy step picks the candidate of largest posterior variance (the
    lowest index among ties) and updates the variances over Λ with an
    incremental Cholesky factor: one kernel column of length |Λ| per step,
    O(T² + T |Λ|) memory and O(T² |Λ|) time in total; no |Λ| × |Λ| matrix is
    formed when a kernel is given. The greedy value equals
    ½ Σ_t log(1 + σ⁻² σ²_{t-1}(λ_t)) = ½ log det(I + σ⁻² K_A) exactly.
    """
    T = check_integer(T, "T", low=1, owner="gamma_T")
    s2 = check_real(noise_var, "noise_var", low=0.0, owner="gamma_T")
    if kernel is None:
        K = _check_matrix(candidates)
        m = K.shape[0]
        prior = np.diag(K).copy()

        def column(j: int) -> np.ndarray:
            return K[:, j]
    else:
        if isinstance(kernel, MultiTaskKernel):
            k2 = kernel.input_kernel
        elif isinstance(kernel, InputKernel):
            k2 = kernel
        else:
            raise InvalidParameterError(
                "The 'kernel' parameter of gamma_T must be an InputKernel, a MultiTaskKernel "
                f"or None. Got {kernel!r} of type {type(kernel).__name__} instead."
            )
        X = _candidate_matrix(candidates, "gamma_T")
        if k2.n_dims is not None and k2.n_dims != X.shape[1]:
            raise InvalidParameterError(
                f"The kernel has {k2.n_dims} lengthscales but the candidates have "
                f"{X.shape[1]} coordinates."
            )
        XT = k2._prepare(X)  # Xᵀ, made once: each column is then a few in-place passes (numpy)
        m = X.shape[0]
        prior = np.ones(m)
        col_buf, work = np.empty(m), np.empty((2, m))

        def column(j: int) -> np.ndarray:
            return k2._column_prepared(XT, X[j], out=col_buf, work=work)

    factor = IncrementalCholesky(m, min_pivot=0.0, capacity=min(T, 1024))
    selected: list[int] = []
    total = 0.0
    floor = -_NOT_PSD_TOL * max(1.0, float(prior.max()))
    var = np.empty(m)  # one row over Λ, reused: no temporaries per step
    for _ in range(T):
        np.subtract(prior, factor.colsq, out=var)
        if var.min() < floor:
            # K_jj - k_jA (K_AA + σ²I)⁻¹ k_Aj < 0 is impossible for a PSD K
            raise InvalidParameterError(
                "The covariance given to gamma_T is not positive semi-definite "
                f"(a posterior variance of {var.min():.3g})."
            )
        np.maximum(var, 0.0, out=var)
        j = int(np.argmax(var))
        total += 0.5 * math.log1p(var[j] / s2)
        col = column(j)
        k_prev = col[np.asarray(selected, dtype=np.int64)]
        factor.extend(k_prev, float(prior[j]) + s2, col)
        selected.append(j)
    return InformationGain(
        greedy=total, bound=total / _GREEDY_FACTOR, T=T, noise_var=s2, selected=tuple(selected)
    )
