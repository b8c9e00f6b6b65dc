"""Incremental (bordered) Cholesky factor shared by the posterior and γ_T.

For observations 1..n with noisy covariance ``C = K_obs + diag(noise)`` and
cross-covariance ``K_cand`` (n × |Λ|) to the candidates, the class keeps

* ``L``, the lower Cholesky factor of ``C`` (``L Lᵀ = C``), grown by one row per
  observation (rank-one extension): with ``k`` the covariances of the new
  observation with the previous ones and ``s`` its noisy prior variance,
  ``l = L⁻¹ k`` (one triangular solve, O(n²)) and pivot ``p = sqrt(s - lᵀl)``;
* ``V = L⁻¹ K_cand`` (n × |Λ|), grown by the row ``(c - lᵀ V) / p`` where ``c``
  is the new observation's cross-covariance to Λ (O(n |Λ|));
* ``colsq = Σ_i V[i]²``, so that the posterior variance over Λ is
  ``prior - colsq``.

Each extension costs O(n² + n |Λ|); no |Λ| × |Λ| matrix is ever formed.

Jitter: if ``s - lᵀl`` falls below ``min_pivot`` (possible only with zero or
tiny noise and a repeated or near-repeated point), the observation's noise
variance is raised by the deficit so that the squared pivot equals
``min_pivot``; the amount is recorded per observation in ``jitter``. It depends
only on the observed locations, never on the observed values. A negative
squared pivot can come only from rounding (privtune's kernels are positive
semi-definite by construction) and is floored the same way, never refused: in
the GP methods the locations follow the raw scores, after the charge, so a
refusal would depend on the data.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["IncrementalCholesky"]


class IncrementalCholesky:
    """Bordered Cholesky of ``K_obs + diag(noise)`` and the rows ``L⁻¹ K_cand``.

    Parameters
    ----------
    n_candidates : int
        |Λ|, the number of columns of ``V``.
    min_pivot : float
        Smallest squared pivot accepted before jitter is added.
    capacity : int, default=32
        Initial number of rows allocated (doubled as needed).
    """

    def __init__(self, n_candidates: int, min_pivot: float, capacity: int = 32) -> None:
        self.n_candidates = int(n_candidates)
        self.min_pivot = float(min_pivot)
        cap = max(1, int(capacity))
        self._L = np.zeros((cap, cap))
        self._V = np.zeros((cap, self.n_candidates))
        self.colsq = np.zeros(self.n_candidates)
        self.jitter: list[float] = []
        self.n = 0

    @property
    def L(self) -> np.ndarray:
        """The current Cholesky factor, shape ``(n, n)`` (a view; do not modify)."""
        return self._L[: self.n, : self.n]

    @property
    def V(self) -> np.ndarray:
        """``L⁻¹ K_cand``, shape ``(n, |Λ|)`` (a view; do not modify)."""
        return self._V[: self.n]

    def _grow(self) -> None:
        cap = 2 * self._L.shape[0]
        L = np.zeros((cap, cap))
        L[: self.n, : self.n] = self._L[: self.n, : self.n]
        V = np.zeros((cap, self.n_candidates))
        V[: self.n] = self._V[: self.n]
        self._L, self._V = L, V

    def solve_lower(self, b: np.ndarray) -> np.ndarray:
        """``L⁻¹ b`` for a vector ``b`` of length ``n``."""
        if self.n == 0:
            return np.zeros(0)
        return solve_triangular(self._L[: self.n, : self.n], b, lower=True, check_finite=False)

    def extend(
        self, k_prev: np.ndarray, s: float, k_cand: np.ndarray
    ) -> tuple[np.ndarray, float, np.ndarray]:
        """Append one observation.

        Parameters
        ----------
        k_prev : ndarray of shape (n,)
            Prior covariances of the new observation with the previous ones.
        s : float
            Its prior variance plus its noise variance.
        k_cand : ndarray of shape (|Λ|,)
            Its prior covariances with the candidates.

        Returns
        -------
        l : ndarray of shape (n,)
            ``L⁻¹ k_prev`` (the new row of ``L`` without its diagonal).
        pivot : float
            The new diagonal entry of ``L``.
        v : ndarray of shape (|Λ|,)
            The new row of ``V``.
        """
        n = self.n
        l = self.solve_lower(np.asarray(k_prev, dtype=np.float64))
        p2 = s - float(l @ l)
        jitter = 0.0
        if p2 < self.min_pivot:  # never refused: after the charge, a refusal would depend on the raw-score path
            jitter = self.min_pivot - p2
            p2 = self.min_pivot
        pivot = math.sqrt(p2)
        if n == self._L.shape[0]:
            self._grow()
        if n:
            v = (k_cand - l @ self._V[:n]) / pivot
        else:
            v = np.asarray(k_cand, dtype=np.float64) / pivot
        self._L[n, :n] = l
        self._L[n, n] = pivot
        self._V[n] = v
        self.colsq += v * v
        self.jitter.append(jitter)
        self.n = n + 1
        return l, pivot, v
