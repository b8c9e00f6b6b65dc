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
        Initial number of rows allocated. Beyond it ``L`` is doubled and ``V``
        gets a new block as large as all before it (nothing of ``V`` is copied,
        so no observation costs many times another).
    """

    def __init__(self, n_candidates: int, min_pivot: float, capacity: int = 32) -> None:
        self.n_candidates = int(n_candidates)
        self.min_pivot = float(min_pivot)
        cap = max(1, int(capacity))
        self._L = np.zeros((cap, cap))
        # V's rows live in blocks: the first of ``capacity`` rows, each later one as large as all before it
        # (geometric growth without copying V: growing a contiguous V copied n x |Lambda| floats, 200-400 ms at
        # n = 256 and |Lambda| = 65 536, one iteration many times the others)
        self._blocks: list[np.ndarray] = [np.zeros((cap, self.n_candidates))]
        self._rows = cap  # rows allocated over all blocks
        self.colsq = np.zeros(self.n_candidates)
        self._work = np.empty(self.n_candidates)  # scratch of one row (no temporaries in extend)
        self.jitter: list[float] = []
        self.n = 0

    @property
    def L(self) -> np.ndarray:
        """The current Cholesky factor, shape ``(n, n)`` (a view; do not modify)."""
        return self._L[: self.n, : self.n]

    @property
    def V(self) -> np.ndarray:
        """``L⁻¹ K_cand``, shape ``(n, |Λ|)`` (a view while it fits the first block, else a copy; do not modify)."""
        parts, left = [], self.n
        for block in self._blocks:
            if left <= 0:
                break
            parts.append(block[:left])
            left -= block.shape[0]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else self._blocks[0][:0]

    def _grow(self) -> None:
        """Room for one more observation: ``L`` doubled (n x n, small); a new block of V rows, nothing copied."""
        if self.n == self._L.shape[0]:
            cap = 2 * self._L.shape[0]
            L = np.zeros((cap, cap))
            L[: self.n, : self.n] = self._L[: self.n, : self.n]
            self._L = L
        if self.n == self._rows:
            self._blocks.append(np.zeros((self._rows, self.n_candidates)))  # zeroed lazily by the allocator
            self._rows *= 2

    def _lt_v(self, l: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``lᵀ V`` over the ``n`` rows of V held so far, block by block, written into ``out``.

        The same ``matmul`` calls and additions as forming each block's product
        and summing them, so the result is bit-identical; only the temporaries
        are gone (at |Λ| = 65 536 each was a fresh 512 KiB array, page faults
        included).
        """
        start, first = 0, True
        for block in self._blocks:
            stop = min(self.n, start + block.shape[0])
            if stop <= start:
                break
            if first:
                np.matmul(l[start:stop], block[: stop - start], out=out)
                first = False
            else:
                np.matmul(l[start:stop], block[: stop - start], out=self._work)
                np.add(out, self._work, out=out)
            start = stop
        return out

    def _row(self, i: int) -> np.ndarray:
        """Row ``i`` of V (writable), in its block."""
        for block in self._blocks:
            if i < block.shape[0]:
                return block[i]
            i -= block.shape[0]
        raise IndexError(i)

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
            The new row of ``V`` (a view of the factor's storage; do not modify).
        """
        n = self.n
        l = self.solve_lower(np.asarray(k_prev, dtype=np.float64))
        p2 = s - float(l @ l)
        jitter = 0.0
        if p2 < self.min_pivot:  # never refused: after the charge, a refusal would depend on the raw-score path
            jitter = self.min_pivot - p2
            p2 = self.min_pivot
        pivot = math.sqrt(p2)
        if n == self._L.shape[0] or n == self._rows:
            self._grow()
        v = self._row(n)  # the new row is computed in place, in its block
        if n:
            np.subtract(k_cand, self._lt_v(l, out=v), out=v)
            np.divide(v, pivot, out=v)
        else:
            np.divide(k_cand, pivot, out=v)
        self._L[n, :n] = l
        self._L[n, n] = pivot
        np.multiply(v, v, out=self._work)
        np.add(self.colsq, self._work, out=self.colsq)
        self.jitter.append(jitter)
        self.n = n + 1
        return l, pivot, v
