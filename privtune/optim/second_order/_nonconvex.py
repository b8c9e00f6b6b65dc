r"""Non-convex margin losses of the seed-004 trainers, their public constants, and numerical helpers.

Both losses are functions of the margin ``m = y x^T w`` of a row ``x`` (clipped to
the declared L2 norm ``R``) with label ``y`` in {-1, +1}, plus a regulariser
``r(w)`` that never touches the data. With ``p = sigmoid(-m) = 1 / (1 + e^m)``:

* ``"sigmoid"`` (Gao & Wright, App. E.3; the code's ``torch.sigmoid(y X w)`` up to
  ``w -> -w``): ``l = p`` in (0, 1), ``dl/dm = -p (1 - p)``,
  ``d2l/dm2 = p (1 - p)(1 - 2p)``, and ``r(w) = (lam / 2) ||w||^2``.
* ``"nonconvex_logistic"`` (Gao & Wright, section 4): ``l = log(1 + e^{-m})``,
  ``dl/dm = -p``, ``d2l/dm2 = p (1 - p)``, and the Tukey-type regulariser
  ``r(w) = lam sum_i w_i^2 / (1 + w_i^2)``.

Per-example gradient and Hessian of the data term: ``l'(m) y x`` and
``l''(m) x x^T`` (``y^2 = 1``).

**Public constants** (spec section 1, Asm. 1-2; derived from ``R`` and ``lam``
only, never read off the data; section 5 item 9):

=========================  ==========================  ===============================================
constant                   ``"sigmoid"``               ``"nonconvex_logistic"``
=========================  ==========================  ===============================================
``B``  (0 <= l <= B)       1                           unbounded (``inf``)
``B_g`` (per-example grad) ``R / 4``                   ``R``
``B_H`` (per-example Hess) ``R^2 sqrt(3) / 18``        ``R^2 / 4``
``G``  (smoothness)        ``R^2 sqrt(3)/18 + lam``    ``R^2 / 4 + 2 lam``
``M``  (Hessian Lipschitz) ``R^3 / 8``                 ``R^3 / (6 sqrt(3)) + lam * 4.6686...``
``f_low`` (lower bound)    0                           0
=========================  ==========================  ===============================================

Derivations. Let ``s`` be the logistic sigmoid and ``u = s (1 - s)`` in [0, 1/4].
``s' = u``, ``s'' = u (1 - 2 s)`` with ``max |s''| = sqrt(3) / 18`` (at
``s = (3 +- sqrt 3) / 6``), ``s''' = u (1 - 6 u)`` with ``max |s'''| = 1/8`` (at
``u = 1/4``). For the sigmoid loss ``|l'| = u <= 1/4``, ``|l''| = |s''| <= sqrt(3)/18``,
``|l'''| = |s'''| <= 1/8``; for the log-loss ``|l'| = p <= 1``, ``l'' = u <= 1/4``,
``|l'''| = |s''| <= sqrt(3)/18 = 1 / (6 sqrt 3)``. Hence, for ``||x|| <= R``:
``||grad l|| <= max|l'| R`` (= ``B_g``), ``||hess l||_2 = ||hess l||_F = |l''| ||x||^2 <= max|l''| R^2``
(= ``B_H``; the per-example Hessian has rank one), the data term is
``max|l''| R^2``-smooth, and its Hessian is ``max|l'''| R^3``-Lipschitz (because
``|l''(m_1) - l''(m_2)| <= max|l'''| |x^T (w_1 - w_2)|``). The regulariser adds
only to ``G`` and ``M``, never to a sensitivity (spec section 5 item 15):
``(lam/2)||w||^2`` has Hessian ``lam I`` (adds ``lam`` to ``G``, 0 to ``M``); the Tukey
term ``rho(t) = t^2 / (1 + t^2)`` has ``rho'' = (2 - 6 t^2) / (1 + t^2)^3`` in
``[-1/2, 2]`` and ``rho''' = 24 t (t^2 - 1) / (1 + t^2)^4`` with
``max |rho'''| = 4.6686`` (at ``t^2 = 1 - 2 / sqrt 5``), so its diagonal Hessian adds
``2 lam`` to ``G`` and ``4.6686 lam`` to ``M``; its curvature goes down to ``-lam / 2``
per coordinate (spec section 5 item 15).

The module also holds the deterministic pieces of the algorithms (no noise, no
privacy accounting): the roots ``t_1 < t_2`` of the line search's ``r(t)``, the
number of backtracking trials ``i_max``, the half-vectorisation of a symmetric
matrix and a Lanczos solver for the smallest eigenpair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.linalg import eigh_tridiagonal
from scipy.special import expit

from privtune.exceptions import InvalidParameterError

__all__ = ["LOSSES", "LossConstants", "NonconvexLoss", "get_nonconvex_loss", "curvature_roots", "trial_count",
           "pack_upper", "unpack_symmetric", "lanczos_smallest", "lanczos_iterations"]

LOSSES = ("sigmoid", "nonconvex_logistic")
#: ``max |s''|`` of the logistic sigmoid ``s``: ``sqrt(3) / 18``.
SIGMOID_SECOND = math.sqrt(3.0) / 18.0
#: ``max |s'''|`` of the logistic sigmoid: ``1 / 8``.
SIGMOID_THIRD = 0.125
#: ``max |rho''|`` and ``min rho''`` of ``rho(t) = t^2 / (1 + t^2)``: 2 (at 0) and -1/2 (at ``t^2 = 1``).
TUKEY_SECOND_MAX = 2.0
TUKEY_SECOND_MIN = -0.5
_A = 1.0 - 2.0 / math.sqrt(5.0)
#: ``max |rho'''| = 24 t (1 - t^2) / (1 + t^2)^4`` at ``t^2 = 1 - 2 / sqrt(5)`` (4.66856...).
TUKEY_THIRD = 24.0 * math.sqrt(_A) * (1.0 - _A) / (1.0 + _A) ** 4


@dataclass(frozen=True)
class LossConstants:
    """The public constants of a loss (spec section 1): all derived from ``data_norm`` and ``l2``.

    Attributes
    ----------
    loss : str
    data_norm : float
        ``R``, the declared L2 bound of every row (enforced by clipping).
    l2 : float
        ``lam``, the regularisation strength.
    B : float
        Upper bound of the per-example loss (``inf`` when unbounded).
    B_g, B_H : float
        Per-example bounds on ``||grad l||_2`` and ``||hess l||_2`` (``= ||hess l||_F``, rank one).
    G, M : float
        Smoothness and Hessian-Lipschitz constants of the whole objective (regulariser included).
    f_low : float
        Data-independent lower bound of the objective.
    """

    loss: str
    data_norm: float
    l2: float
    B: float
    B_g: float
    B_H: float
    G: float
    M: float
    f_low: float = 0.0

    def as_dict(self) -> dict[str, float | str]:
        return {"loss": self.loss, "data_norm": self.data_norm, "l2": self.l2, "B": self.B, "B_g": self.B_g,
                "B_H": self.B_H, "G": self.G, "M": self.M, "f_low": self.f_low}


class NonconvexLoss:
    """A non-convex margin loss with its regulariser and public constants (internal).

    The data-term methods (``data_*``) read the rows; they are only called on
    clipped rows, inside a mechanism, or for evaluation. The regulariser
    methods (``reg_*``) are public functions of ``w``.
    """

    def __init__(self, name: str, data_norm: float, l2: float) -> None:
        self.name = name
        self.data_norm = float(data_norm)
        self.l2 = float(l2)

    # ----------------------------------------------------------------- constants
    def constants(self) -> LossConstants:
        R, lam = self.data_norm, self.l2
        if self.name == "sigmoid":
            return LossConstants(loss=self.name, data_norm=R, l2=lam, B=1.0, B_g=R / 4.0,
                                 B_H=R * R * SIGMOID_SECOND, G=R * R * SIGMOID_SECOND + lam,
                                 M=R**3 * SIGMOID_THIRD)
        return LossConstants(loss=self.name, data_norm=R, l2=lam, B=math.inf, B_g=R, B_H=R * R / 4.0,
                             G=R * R / 4.0 + TUKEY_SECOND_MAX * lam, M=R**3 * SIGMOID_SECOND + TUKEY_THIRD * lam)

    # ----------------------------------------------------------------- margin functions
    def margin_value(self, m: np.ndarray) -> np.ndarray:
        if self.name == "sigmoid":
            return expit(-m)
        return np.maximum(-m, 0.0) + np.log1p(np.exp(-np.abs(m)))  # log(1 + e^{-m}), stable

    def margin_first(self, m: np.ndarray) -> np.ndarray:
        p = expit(-m)
        return -p * (1.0 - p) if self.name == "sigmoid" else -p

    def margin_second(self, m: np.ndarray) -> np.ndarray:
        p = expit(-m)
        u = p * (1.0 - p)
        return u * (1.0 - 2.0 * p) if self.name == "sigmoid" else u

    # ----------------------------------------------------------------- data term (reads rows)
    def data_value(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> float:
        """Mean per-example loss (never released without a mechanism)."""
        return float(np.mean(self.margin_value(z * (U @ w))))

    def data_gradient(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Mean per-example gradient ``mean_i l'(m_i) y_i x_i``."""
        coef = self.margin_first(z * (U @ w)) * z
        return U.T @ coef / U.shape[0]

    def data_hessian(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Mean per-example Hessian ``mean_i l''(m_i) x_i x_i^T`` (symmetric)."""
        c = self.margin_second(z * (U @ w))
        H = (U * c[:, None]).T @ U / U.shape[0]
        return 0.5 * (H + H.T)

    # ----------------------------------------------------------------- regulariser (public)
    def reg_value(self, w: np.ndarray) -> float:
        if self.name == "sigmoid":
            return 0.5 * self.l2 * float(w @ w)
        w2 = w * w
        return self.l2 * float(np.sum(w2 / (1.0 + w2)))

    def reg_gradient(self, w: np.ndarray) -> np.ndarray:
        if self.name == "sigmoid":
            return self.l2 * w
        return self.l2 * 2.0 * w / (1.0 + w * w) ** 2

    def reg_hessian(self, w: np.ndarray) -> np.ndarray:
        if self.name == "sigmoid":
            return self.l2 * np.eye(w.shape[0])
        w2 = w * w
        return np.diag(self.l2 * (2.0 - 6.0 * w2) / (1.0 + w2) ** 3)

    # ----------------------------------------------------------------- whole objective (evaluation only)
    def objective(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> float:
        """``f(w)``: for evaluation and tests only, never released."""
        return self.data_value(w, U, z) + self.reg_value(w)

    def gradient(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``grad f(w)``: for evaluation and tests only, never released."""
        return self.data_gradient(w, U, z) + self.reg_gradient(w)

    def hessian(self, w: np.ndarray, U: np.ndarray, z: np.ndarray) -> np.ndarray:
        """``hess f(w)``: for evaluation and tests only, never released."""
        return self.data_hessian(w, U, z) + self.reg_hessian(w)


def get_nonconvex_loss(loss: str, data_norm: float, l2: float, owner: str) -> NonconvexLoss:
    """The loss, after checking that its public constants are finite floats (refused otherwise, naming the cause)."""
    if not isinstance(loss, str) or loss not in LOSSES:
        raise InvalidParameterError(
            f"The 'loss' parameter of {owner} must be one of {list(LOSSES)}. Got {loss!r} instead.")
    out = NonconvexLoss(loss, data_norm, l2)
    try:
        c = out.constants()
        finite = all(math.isfinite(x) for x in (c.B_g, c.B_H, c.G, c.M))
    except ArithmeticError:  # R**3 overflows
        finite = False
    if not finite:
        raise InvalidParameterError(
            f"The 'data_norm' and 'l2' parameters of {owner} give loss constants that overflow a float (M grows "
            f"like data_norm^3, G like data_norm^2 + l2). Got data_norm={data_norm!r}, l2={l2!r}. Hint: rescale "
            "the rows to a norm of order 1 (then data_norm around 1). Nothing was spent.")
    return out


# ----------------------------------------------------------------------------- line-search constants
def curvature_roots(c: float, c_H: float, c2: float, owner: str = "curvature_roots") -> tuple[float, float]:
    r"""The roots ``t_1 < t_2`` of ``r(t) = -t^2/6 + (1 - c - c_H) t / 2 - c2`` (eq. 15, Lemma 6).

    They are real iff ``(1 - c - c_H)^2 >= (8/3) c2``, i.e. ``c_H <= 1 - c - sqrt(8 c2 / 3)``
    (spec section 5 item 3: the paper's printed range ``c_H < 1 - c - (8/3) c2`` is not
    sufficient; with ``c = c2 = 0.1`` and ``c_H = 0.5`` there is no real root).

    Raises
    ------
    InvalidParameterError
        When the roots are complex (or ``t_1 <= 0``), naming the bound on ``c_H``.
    """
    a = 1.0 - c - c_H
    disc = 0.25 * a * a - (2.0 / 3.0) * c2
    if a <= 0.0 or disc < 0.0:
        bound = 1.0 - c - math.sqrt(8.0 * c2 / 3.0)
        raise InvalidParameterError(
            f"The 'c_H' parameter of {owner} must satisfy c_H <= 1 - c - sqrt(8 c2 / 3) = {bound!r} for c={c!r} "
            f"and c2={c2!r}: otherwise the roots t1, t2 of r(t) = -t^2/6 + (1 - c - c_H) t / 2 - c2 (eq. 15) are "
            f"complex and the curvature line search has no sufficient-decrease interval. Got c_H={c_H!r}.")
    root = 3.0 * math.sqrt(disc)
    t1, t2 = 1.5 * a - root, 1.5 * a + root
    r2 = -t2 * t2 / 6.0 + 0.5 * a * t2 - c2
    if not (t1 > 0.0 and abs(r2) <= 1e-12 * max(1.0, t2 * t2)):  # pragma: no cover - guards the algebra
        raise InvalidParameterError(f"{owner}: the roots of r(t) are not usable (t1={t1!r}, r(t2)={r2!r}).")
    return t1, t2


def trial_count(b: float, beta: float) -> int:
    """``i_max = floor(log_{1/beta} b) + 1``: the number of trials ``b beta^j >= 1``, ``j = 0, 1, ...``.

    (Lemma 7 with the spec's fix, section 5 item 4: the paper writes ``log_beta``,
    which is negative.) Every trial step ``b beta^j gamma_bar`` is then at least
    ``gamma_bar`` and the next one would not be. Counted in exact rational
    arithmetic on the float values, so an exact power (``b = 16, beta = 0.5``:
    5 trials) is not lost to rounding.
    """
    fb, fbeta = Fraction(b), Fraction(beta)
    if fb < 1 or not (0 < fbeta < 1):
        raise InvalidParameterError(f"trial_count needs b >= 1 and 0 < beta < 1; got b={b!r}, beta={beta!r}.")
    count, step = 0, fb
    while step >= 1:
        count += 1
        step *= fbeta
    return count


# ----------------------------------------------------------------------------- symmetric matrices
def pack_upper(H: np.ndarray) -> np.ndarray:
    """The entries on and above the diagonal of ``H`` (row-major), ``d (d + 1) / 2`` values."""
    iu = np.triu_indices(H.shape[0])
    return H[iu]


def unpack_symmetric(values: np.ndarray, d: int) -> np.ndarray:
    """The symmetric ``d x d`` matrix whose upper triangle (row-major, diagonal included) is ``values``."""
    iu = np.triu_indices(d)
    S = np.zeros((d, d))
    S[iu] = values
    return S + np.triu(S, 1).T


# ----------------------------------------------------------------------------- Lanczos
def lanczos_iterations(d: int, norm_bound: float, precision: float, failure: float) -> int:
    """Lanczos steps of Carmon et al. (2018), Lemma C.1 (paper App. C).

    ``min(d, 1 + ceil(ln(2.75 d / failure^2) sqrt(norm_bound / precision) / 2))``:
    Lanczos from a uniformly random start then finds ``lambda_min`` within
    ``precision / 2`` with probability at least ``1 - failure``, for a matrix of
    spectral norm at most ``norm_bound``.
    """
    if norm_bound <= 0.0:
        return 1
    k = 1 + math.ceil(0.5 * math.log(2.75 * d / failure**2) * math.sqrt(norm_bound / precision))
    return int(min(d, k))


def lanczos_smallest(A: np.ndarray, iterations: int, start: np.ndarray) -> tuple[float, np.ndarray]:
    """Smallest Ritz pair of the symmetric ``A`` after ``iterations`` Lanczos steps (full reorthogonalisation).

    Returns ``(lam, v)`` with ``||v|| = 1`` and ``lam = v^T A v`` (the Rayleigh
    quotient, so ``lam >= lambda_min(A)``); with ``iterations = d`` it is the
    smallest eigenpair up to rounding. ``A`` is only used through products
    ``A q``: the same matrix (the same noise) for every product of one call.
    """
    d = A.shape[0]
    k = max(1, min(int(iterations), d))
    Q = np.zeros((d, k))
    alpha = np.zeros(k)
    beta = np.zeros(k)
    q = np.asarray(start, dtype=float)
    q = q / np.linalg.norm(q)
    scale = max(float(np.abs(A).max()), 1e-300)
    used = k
    for j in range(k):
        Q[:, j] = q
        v = A @ q
        alpha[j] = float(q @ v)
        basis = Q[:, :j + 1]
        v = v - basis @ (basis.T @ v)
        v = v - basis @ (basis.T @ v)  # twice is enough (Kahan-Parlett)
        b = float(np.linalg.norm(v))
        if j + 1 == k or b <= 1e-13 * scale:
            used = j + 1
            break
        beta[j] = b
        q = v / b
    if used == 1:
        vec = Q[:, 0]
    else:
        _, vecs = eigh_tridiagonal(alpha[:used], beta[:used - 1], select="i", select_range=(0, 0))
        vec = Q[:, :used] @ vecs[:, 0]
    vec = vec / np.linalg.norm(vec)
    return float(vec @ (A @ vec)), vec
