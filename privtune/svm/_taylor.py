r"""Deterministic Taylor (Maclaurin) features of the RBF kernel for ``DPSVC(features="taylor")``.

For inputs ``u, u'`` in the closed unit ball and ``g = gamma r**2`` (``r`` the
public reference norm the inputs are clipped to and divided by),

.. math:: e^{-g\|u - u'\|^2} = e^{-g\|u\|^2} e^{-g\|u'\|^2}
   \sum_{k \ge 0} \frac{(2g)^k}{k!} (u^\top u')^k ,

and ``(u^T u')^k = <m_k(u), m_k(u')>`` exactly, where ``m_k(u)`` lists the
``C(d + k - 1, k)`` degree-``k`` monomials ``u_{i_1} ... u_{i_k}``
(``i_1 <= ... <= i_k``), each times the square root of its multinomial
coefficient ``k! / prod_j c_j!`` (``c_j`` the multiplicity of index ``j``).
The map used is the series truncated at degree ``K``, without its constant
term (the intercept's job) and scaled to norm 1 at ``||u|| = 1``:

.. math:: \tau(u) = \Big[\sqrt{a_k / S}\; m_k(u)\Big]_{k = 1..K}, \qquad
   a_k = \frac{(2g)^k}{k!}, \quad S = \sum_{k=1}^{K} a_k ,

so ``<tau(u), tau(u')> = sum_k a_k (u^T u')^k / S`` and
``||tau(u)||_2**2 = sum_k a_k ||u||**(2k) / S <= 1``. The row factors
``e^{-g ||u||^2}`` are left out: they are the constant ``e^{-g}`` on rows of
norm ``r`` (rows scaled to unit norm, privtune's convention for its linear DP
estimators), where the map is the Maclaurin truncation of the RBF kernel up to
its constant term and a scale. It is **not** a close approximation of that
kernel at ``g >= 1`` and small ``K`` (at ``g = 1`` and ``K = 2`` the dropped
terms are 32 % of ``e^{2g}``): it is the polynomial kernel with the RBF's
Maclaurin weights, a fixed, data-independent map whose dimension, unlike random
features', carries no approximation noise (Cotter, Keshet & Srebro 2011 compare
the two maps without privacy).

**Column balance** (``beta`` in [0, 1]; privtune's choice, not in Cotter et
al.). The squared scale of block ``k`` above is its share ``s_k`` of the
kernel (``sum_k s_k = 1``). With ``beta > 0`` block ``k`` gets instead

.. math:: w_k \propto s_k^{1 - \beta} (m_k / M)^{\beta}, \qquad \sum_k w_k = 1,

with ``m_k = C(d + k - 1, k)`` the block's column count and ``M`` the map's:
``beta = 0`` is the kernel's weighting, ``beta = 1`` gives every column the
same expected square on the unit sphere's rows up to the within-block
multinomial spread (equal weight per column, as standardising the columns
would). The map is then the dot-product kernel ``sum_k w_k (u^T u')^k``, still
of norm 1 at ``||u|| = 1``. Under DP noise a degree-2 block of hundreds of
columns that the kernel weights like the 20-column degree-1 block is learnt
slowly (its columns are small against noise of the same size in every
direction); moving weight towards it helps once the noise is small and hurts
when it is large (``benchmarks/studies/dpsvc_column_balance.py``), which is why
``DPSVC(column_balance="auto")`` sets ``beta`` from the run's public
noise-to-signal ratio.

**Centring** (privtune's choice, as for the random features' ``reference_norm``).
Even-degree monomials have a common component on rows of norm 1 (``sum_i
u_i**2 = 1``): noise on the weights along it shifts every decision alike, an
intercept in disguise. :func:`taylor_sphere_mean` gives ``mu = E tau(u)`` for
``u`` uniform on the unit sphere, in closed form: a monomial's mean is 0 unless
every index appears an even number of times, and then

.. math:: E \prod_i u_i^{2 b_i} = \frac{\Gamma(d/2)}{\Gamma(d/2 + |b|)}
   \prod_i \frac{\Gamma(b_i + 1/2)}{\Gamma(1/2)} .

``DPSVC`` maps rows to ``(tau(u) - mu) / sqrt(1 - ||mu||**2)``, clipped to
norm 1: mean 0 over the sphere, and norm exactly 1 on it, since by symmetry
``<tau(u), mu> = E_v <tau(u), tau(v)> = ||mu||**2`` for every unit ``u``
(the clip acts only on rows inside the ball, e.g. ``u = 0``, whose row is
``-mu / sqrt(1 - ||mu||**2)``).

Everything here depends on public quantities only (``d``, ``K``, ``gamma``,
``r``, ``beta``); nothing is read off the data.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np

__all__ = ["MAX_TAYLOR_DEGREE", "taylor_block_shares", "taylor_coefficients", "taylor_degree_for", "taylor_dimension",
           "taylor_map", "taylor_sphere_mean"]

#: Largest degree of the Taylor map (``degree`` is validated against it).
MAX_TAYLOR_DEGREE = 10

#: Rows per block when the monomials are formed (bounds the temporary array of a block).
_BLOCK_ELEMENTS = 1 << 22


def taylor_dimension(n_features: int, degree: int) -> int:
    """Number of columns of the degree-``degree`` map on ``n_features`` inputs: ``C(d + K, K) - 1``."""
    return math.comb(int(n_features) + int(degree), int(degree)) - 1


def taylor_degree_for(n_features: int, budget: int) -> int:
    """``degree="auto"``: the largest ``K`` in ``[2, 8]`` whose map has at most ``budget`` columns (at least 2)."""
    degree = 2
    while degree < 8 and taylor_dimension(n_features, degree + 1) <= budget:
        degree += 1
    return degree


@lru_cache(maxsize=32)
def _monomials(n_features: int, degree: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per degree ``k = 1..K``: the index tuples (``(m_k, k)`` ints) and ``sqrt(multinomial)`` weights."""
    out = []
    for k in range(1, degree + 1):
        index = np.array(list(combinations_with_replacement(range(n_features), k)), dtype=np.intp).reshape(-1, k)
        weights = np.empty(len(index))
        for row, combo in enumerate(index):
            counts = np.bincount(combo)
            weights[row] = math.sqrt(math.factorial(k) / math.prod(math.factorial(int(c)) for c in counts))
        index.setflags(write=False)
        weights.setflags(write=False)
        out.append((index, weights))
    return tuple(out)


def taylor_coefficients(g: float, degree: int) -> np.ndarray:
    """``sqrt(a_k / S)`` for ``k = 1..K`` (module docstring), computed in log space (no overflow for any ``g``)."""
    two_g = 2.0 * float(g)
    if not 0.0 < two_g < math.inf:  # 2g overflowed: all weight on the top degree; underflowed to 0: on degree 1
        share = np.zeros(degree)
        share[-1 if two_g > 0.0 else 0] = 1.0
        return np.sqrt(share)
    ks = np.arange(1, degree + 1, dtype=np.float64)
    log_a = ks * math.log(two_g) - np.array([math.lgamma(k + 1.0) for k in ks])
    share = np.exp(log_a - log_a.max())
    return np.sqrt(share / share.sum())


def taylor_block_shares(g: float, degree: int, n_features: int, linear_share: float = 0.0,
                        balance: float = 0.0) -> np.ndarray:
    """Squared scale of each degree block ``k = 1..K`` of the map (they sum to 1; module docstring).

    With ``linear_share=s`` the kernel's shares are ``s + (1 - s) a_1 / S`` for the degree-1 block and
    ``(1 - s) a_k / S`` for the others (no duplicated columns); ``balance=beta`` moves them towards the blocks'
    column counts, ``s_k**(1 - beta) (m_k / M)**beta``, renormalised (computed in log space; a block the kernel
    gives no weight keeps none unless ``beta = 1``).
    """
    shares = (1.0 - linear_share) * taylor_coefficients(g, degree) ** 2
    shares[0] += linear_share
    beta = float(balance)
    if beta == 0.0:
        return shares
    counts = np.array([math.comb(int(n_features) + k - 1, k) for k in range(1, degree + 1)], dtype=np.float64)
    log_counts = np.log(counts / counts.sum())
    if beta >= 1.0:
        log_w = log_counts
    else:
        with np.errstate(divide="ignore"):
            log_w = (1.0 - beta) * np.log(shares) + beta * log_counts  # -inf where a share is 0
    w = np.exp(log_w - log_w.max())
    return w / w.sum()


def taylor_map(U: np.ndarray, g: float, degree: int, linear_share: float = 0.0, balance: float = 0.0) -> np.ndarray:
    """The map ``tau`` of rows ``U`` of L2 norm at most 1 (module docstring); norm at most 1 up to rounding.

    With ``linear_share=s`` the kernel is ``s u^T u' + (1 - s) <tau(u), tau(u')>``; ``balance`` is the column
    balance ``beta`` (:func:`taylor_block_shares`).
    """
    n, d = U.shape
    scales = np.sqrt(taylor_block_shares(g, degree, d, linear_share, balance))
    blocks = []
    for scale, (index, weights) in zip(scales, _monomials(d, degree), strict=True):
        m, k = index.shape
        cols = np.empty((n, m))
        step = max(1, _BLOCK_ELEMENTS // max(1, m * k))
        for start in range(0, n, step):
            part = U[start:start + step]
            cols[start:start + step] = np.prod(part[:, index], axis=2)
        blocks.append(cols * (scale * weights))
    return np.hstack(blocks)


@lru_cache(maxsize=32)
def _sphere_moments(n_features: int, degree: int) -> tuple[np.ndarray, ...]:
    """Per degree block: ``E`` of each weighted monomial (``sqrt(multinomial)`` times the monomial) on the sphere."""
    d = int(n_features)
    out = []
    for (index, weights) in _monomials(d, degree):
        m, k = index.shape
        mean = np.zeros(m)
        if k % 2 == 0:
            # A sorted index tuple has only even multiplicities iff it is a sequence of equal pairs.
            paired = np.all(index[:, 0::2] == index[:, 1::2], axis=1)
            log_norm = math.lgamma(d / 2.0) - math.lgamma(d / 2.0 + k / 2.0)
            for col in np.flatnonzero(paired):
                half = index[col, 0::2]
                runs = np.diff(np.flatnonzero(np.r_[True, half[1:] != half[:-1], True]))
                log_m = log_norm + sum(math.lgamma(b + 0.5) - math.lgamma(0.5) for b in runs)
                mean[col] = weights[col] * math.exp(log_m)
        mean.setflags(write=False)
        out.append(mean)
    return tuple(out)


def taylor_sphere_mean(n_features: int, degree: int, g: float, linear_share: float = 0.0,
                       balance: float = 0.0) -> np.ndarray:
    """``E tau(u)`` for ``u`` uniform on the unit sphere of ``R^d`` (module docstring), exact, from public inputs."""
    scales = np.sqrt(taylor_block_shares(g, degree, n_features, linear_share, balance))
    return np.concatenate([scale * block for scale, block in zip(scales, _sphere_moments(n_features, degree),
                                                                strict=True)])
