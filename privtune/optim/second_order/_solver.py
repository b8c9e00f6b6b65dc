r"""Private second-order methods for smooth non-convex ERM (Gao & Wright 2023): OPT, OPT-LS, mini-batch, two-phase.

:func:`dp_second_order` looks for an approximate second-order necessary point
(2NS) of

.. math:: f(w) = \frac1n \sum_{i=1}^n l(y_i x_i^\top w) + r(w), \qquad \|x_i\|_2 \le R,

with the losses of :mod:`privtune.optim.second_order._nonconvex` (the sigmoid loss with
``(lam/2)||w||^2``, or the log-loss with the non-convex Tukey regulariser). Each
iteration releases a noisy gradient; while its norm is above ``eps_g`` it takes a
gradient step (short step ``1/G``, or a private backtracking line search run as
AboveThreshold); otherwise it releases a noisy symmetric Hessian, and steps along
its smallest eigenvector (sign chosen with the *noisy* gradient) if the smallest
eigenvalue is below ``-eps_H``, or stops with a certified point.

Variants (``variant=``): ``"opt"`` (Alg. 1, short steps), ``"opt-ls"`` (Alg. 2-3,
SVT line searches), ``"opt-b"`` (mini-batches of ``m`` rows drawn without
replacement, short steps), and the two-phase ``"2opt"``, ``"2opt-ls"``,
``"2opt-b"`` (a first phase of ``T1 = floor(sqrt(T))`` iterations on 75 % of the
budget; if it does not certify a point, the full ``T`` iterations on the rest,
warm-started).

The plan (parameters, calibration, events; public quantities only) is built
in :mod:`privtune.optim.second_order._plan`; the loop, its eigensolvers and
its trace are in :mod:`privtune.optim.second_order._steps`; this module holds
the public functions and the result.

House rules followed here (as in :mod:`privtune.optim.accelerated`): every
privacy event is built from public quantities before the data is touched; the
accountant is asked (``check``) while only ``X.shape`` has been read; then the
whole worst-case event is charged (``spend``) once, before any value is read
(with a privatised gap: the ``f(w0)`` release first, the rest once it is known);
then the data is mapped into the domain (a non-finite entry counts as 0, a row
whose label is not -1/+1 becomes the zero row) and clipped -- never refused for
its values. Noise is exact
(discrete Gaussian on a grid, discrete Laplace for the sparse vector) and comes
from a cryptographically secure source unless ``random_state`` is given.

References
----------
.. [GW23] C. Gao and S. J. Wright, "Differentially Private Optimization for
   Smooth Nonconvex ERM", arXiv:2302.04972, 2023.
.. [CDHS18] Y. Carmon, J. C. Duchi, O. Hinder and A. Sidford, "Accelerated
   Methods for Nonconvex Optimization", SIAM J. Optim. 28(2), 2018 (Lanczos).
.. [WBK19] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Renyi
   Differential Privacy and Analytical Moments Accountant", AISTATS 2019.
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
   Privacy", 2014 (AboveThreshold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant, compose_events
from privtune.accounting.events import ComposedEvent, PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.optim._losses import clip_rows
from privtune.optim.accelerated._solvers import _check_label_shape, _public_shape, _read_data
from privtune.optim.second_order._nonconvex import LossConstants

# ``import x as x``: not used here, re-exported for the callers and tests that import these names from this module.
from privtune.optim.second_order._plan import CALIBRATION_SLACK as CALIBRATION_SLACK
from privtune.optim.second_order._plan import VARIANTS, _make_plan, _Plan, _validate
from privtune.optim.second_order._plan import _Rules as _Rules
from privtune.optim.second_order._steps import (
    SecondOrderHistory,
    _DataOracle,
    _readonly,
    _Releases,
    _run_phase,
    _Trace,
)
from privtune.optim.second_order._steps import _line_search as _line_search
from privtune.optim.second_order._steps import _smallest_eigenpair as _smallest_eigenpair
from privtune.optim.second_order._steps import curvature_direction as curvature_direction
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_integer, label_entries

__all__ = ["dp_second_order", "second_order_privacy_event", "SecondOrderResult", "SecondOrderHistory",
           "VARIANTS"]

#: ``kappa`` of the privatised horizon ``T = ceil((f~0 + kappa sigma_f - f_low) / MIN_DEC)`` (spec section 5 item 1).
GAP_MARGIN = 3.0


# ============================================================================= result
@dataclass(frozen=True)
class SecondOrderResult:
    """Output of :func:`dp_second_order`. Everything in it is public or a function of released values.

    No quantity computed on the data without noise (loss values, exact
    gradients or Hessians, the line-search queries, counts of clipped rows,
    batch contents) is stored, so the whole object may be published.

    Attributes
    ----------
    x : ndarray of shape (n_features,)
        The last iterate (the certified point when ``certified``).
    variant, loss, eigensolver : str
    certified : bool
        True when the loop stopped at a point whose noisy gradient norm is at
        most ``gradient_threshold`` and whose noisy smallest Hessian eigenvalue is
        at least ``-curvature_threshold`` (with Lanczos: above
        ``-curvature_threshold / 2``). On the noisy quantities, not a guarantee on
        ``f``: see Notes of :func:`dp_second_order`.
    stopped_in_phase : int or None
        The phase (1 or 2) in which the point was certified; None if not certified.
    n_iter, n_gradient_steps, n_curvature_steps, n_hessian_evaluations, n_line_search_fallbacks : int
    horizon : int
        ``T`` (fixed before the loop; the number of iterations paid for in the last phase).
    phase_one_horizon : int or None
        ``T1 = floor(sqrt(T))`` for the two-phase variants.
    tolerance : float
        ``alpha``: the target is an ``(alpha, hessian_tolerance)``-2NS.
    hessian_tolerance : float
        ``sqrt(M alpha)`` unless given.
    gradient_threshold, curvature_threshold : float
        ``eps_g = alpha / (1 + c1)`` and ``eps_H = hessian_tolerance / (1 + c)`` used by the loop.
    min_decrease : float
        ``MIN_DEC`` of eq. (10) (short steps) or (17) (line search).
    noise_multipliers : tuple of dict
        Per phase: ``{"gradient": sigma_g, "hessian": sigma_H}`` and, with line
        search, ``"line_search"``: ``lambda`` (each call is ``1/lambda``-DP).
    noise_scales : tuple of dict
        Per phase: the standard deviation of each coordinate of the gradient
        noise and of each entry of the Hessian noise.
    sensitivities : dict
        ``"gradient"``: ``2 B_g / n`` (``/ m`` for mini-batches), ``"hessian"``:
        ``2 B_H sqrt(d) / n`` (or ``2 B_H / n`` with ``hessian_sensitivity="rank_one"``),
        ``"initial_value"``: ``B / n`` when the initial gap was privatised.
    initial_gap : float
        The gap ``f(w0) - f_low`` the horizon was planned from (declared, or
        privatised: ``f~0 + kappa sigma_f - f_low``).
    gap_noise_multiplier : float or None
        ``sigma_f`` when the initial value was released; None for a declared gap.
    constants : LossConstants
        ``B, B_g, B_H, G, M, f_low`` (public, from ``data_norm`` and ``l2``).
    batch_size, n_samples, n_features : int
    events : tuple of PrivacyEvent
        The initial-value release (if any), then one event per phase (worst case:
        ``T_p`` iterations each releasing a gradient, a Hessian and, with line
        search, one sparse-vector run).
    privacy_event : PrivacyEvent
        The composition of ``events`` (what was charged).
    epsilon, delta : float
        The accountant's bound on ``privacy_event`` (RDP, at ``delta``); ``epsilon``
        is at most the budget.
    seeded : bool
        True when the noise came from a seeded generator (not for release).
    history : SecondOrderHistory
    extra : dict
        Public diagnostics: the line-search constants ``t1, t2, i_max_g, i_max_H``,
        the budget split, the uncapped horizon.
    """

    x: np.ndarray
    variant: str
    loss: str
    eigensolver: str
    certified: bool
    stopped_in_phase: int | None
    n_iter: int
    n_gradient_steps: int
    n_curvature_steps: int
    n_hessian_evaluations: int
    n_line_search_fallbacks: int
    horizon: int
    phase_one_horizon: int | None
    tolerance: float
    hessian_tolerance: float
    gradient_threshold: float
    curvature_threshold: float
    min_decrease: float
    noise_multipliers: tuple[dict[str, float], ...]
    noise_scales: tuple[dict[str, float], ...]
    sensitivities: dict[str, float]
    initial_gap: float
    gap_noise_multiplier: float | None
    constants: LossConstants
    batch_size: int
    n_samples: int
    n_features: int
    events: tuple[PrivacyEvent, ...]
    privacy_event: PrivacyEvent
    epsilon: float
    delta: float
    seeded: bool
    history: SecondOrderHistory
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _readonly(self.x))
        object.__setattr__(self, "events", tuple(self.events))

    def __repr__(self) -> str:
        return (f"SecondOrderResult(variant={self.variant!r}, loss={self.loss!r}, certified={self.certified}, "
                f"n_iter={self.n_iter}, horizon={self.horizon}, epsilon={self.epsilon!r}, delta={self.delta!r}, "
                f"seeded={self.seeded})")


# ============================================================================= public API
_DEFAULTS: dict[str, Any] = dict(
    variant="2opt-ls", loss="sigmoid", epsilon=1.0, delta=1e-6, tolerance=0.04, hessian_tolerance=None,
    data_norm=1.0, l2=1e-3, batch_size=None, eigensolver="dense", max_iter=2000, initial_gap=0.5, gap_fraction=0.05,
    w0=None, c1=0.1, c=0.1, c2=1.0 / 12.0, c_g=0.6, c_H=0.25, b_g=20.0, b_H=20.0, beta_g=0.6, beta_H=0.5,
    phase_one_fraction=0.75, budget_split=(1.0, 1.0, 1.0), hessian_sensitivity="paper", clip="rows",
    accountant=None, random_state=None, phase="training")


def _params(kw: dict[str, Any], owner: str) -> dict[str, Any]:
    unknown = set(kw) - set(_DEFAULTS)
    if unknown:
        raise InvalidParameterError(f"{owner} got unexpected parameter(s) {sorted(unknown)}.")
    p = dict(_DEFAULTS)
    p.update(kw)
    return p


def second_order_privacy_event(n_samples: int, n_features: int, **params: Any) -> PrivacyEvent:
    """The event :func:`dp_second_order` charges for data of this shape, computed without any data.

    Parameters
    ----------
    n_samples, n_features : int
        The public shape of ``X``.
    **params
        The keyword arguments of :func:`dp_second_order` (``accountant`` and
        ``random_state`` are accepted and ignored). ``initial_gap`` must be a float.

    Returns
    -------
    PrivacyEvent
        Equal (``==``) to the ``privacy_event`` of every run with these
        parameters on data of this shape.

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain, or ``initial_gap=None`` (the
        privatised gap's horizon, hence the event's parameters, depends on a
        released value).

    Notes
    -----
    **Privacy.** Spends nothing and reads no data: the event is a function of
    ``n_samples``, ``n_features`` and the parameters only (its guarantee is
    described in :func:`dp_second_order`).
    """
    owner = "second_order_privacy_event"
    n = check_integer(n_samples, "n_samples", low=1, owner=owner)
    d = check_integer(n_features, "n_features", low=1, owner=owner)
    p = _params(params, owner)
    if p["initial_gap"] is None:
        raise InvalidParameterError(
            f"The 'initial_gap' parameter of {owner} must be a float: with initial_gap=None the horizon T is computed "
            "from a released f(w0), so the run's event (its horizons and noise multipliers, though not its total "
            "cost) depends on that release.")
    v = _validate(n, d, p, owner)
    v["source"] = check_random_state(0, owner=owner)  # mechanisms are built but never used
    return _public_plan(n, d, v, None, owner).total


def _public_plan(n: int, d: int, v: dict[str, Any], gap: float | None, owner: str) -> Any:
    """``_make_plan`` before any charge, its float failures turned into a clear refusal (nothing spent).

    Public hyperparameters of extreme magnitude (a ``tolerance`` of 1e-300 or 1e300,
    an ``epsilon`` or ``delta`` the mini-batch calibration cannot reach) make the
    plan's arithmetic overflow, divide by an underflowed zero or leave a
    logarithm's domain; that surfaced as a raw ``ZeroDivisionError``,
    ``OverflowError`` or ``ValueError``.
    """
    try:
        return _make_plan(n, d, v, gap=gap, owner=owner)
    except InvalidParameterError:
        raise
    except (ArithmeticError, ValueError) as exc:
        raise InvalidParameterError(
            f"The plan of {owner} cannot be computed in floating point for these public parameters "
            f"(epsilon={v.get('epsilon')!r}, delta={v.get('delta')!r}, tolerance={v.get('tolerance')!r}, "
            f"batch size {v.get('m')!r} of {n}; {type(exc).__name__}: {exc}). Hint: a moderate tolerance "
            "(1e-6 to 1), an epsilon of 0.05 or more and a small delta (e.g. 1e-6); the mini-batch variants "
            "need the most. Nothing was spent.") from exc


def dp_second_order(
    X: Any, y: Any, *, variant: str = "2opt-ls", loss: str = "sigmoid", epsilon: float = 1.0, delta: float = 1e-6,
    tolerance: float = 0.04, hessian_tolerance: float | None = None, data_norm: float = 1.0, l2: float = 1e-3,
    batch_size: int | None = None, eigensolver: str = "dense", max_iter: int = 2000,
    initial_gap: float | None = 0.5, gap_fraction: float = 0.05, w0: Any = None, c1: float = 0.1, c: float = 0.1,
    c2: float = 1.0 / 12.0, c_g: float = 0.6, c_H: float = 0.25, b_g: float = 20.0, b_H: float = 20.0,
    beta_g: float = 0.6, beta_H: float = 0.5, phase_one_fraction: float = 0.75,
    budget_split: tuple[float, float, float] = (1.0, 1.0, 1.0), hessian_sensitivity: str = "paper",
    clip: str = "rows", accountant: Accountant | None = None, random_state: Any = None, phase: str = "training",
) -> SecondOrderResult:
    r"""Find an approximate second-order stationary point of a non-convex ERM privately (Gao & Wright 2023).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Sensitive rows ``x_i``; clipped to L2 norm ``data_norm``. Its shape is public.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}. Values are mapped, never refused: a row whose label
        is anything else (NaN included) becomes the zero row and contributes
        nothing, and a non-finite entry of ``X`` counts as 0.
    variant : {"opt", "opt-ls", "opt-b", "2opt", "2opt-ls", "2opt-b"}, default="2opt-ls"
        Short steps (Alg. 1), SVT line search (Alg. 2-3), mini-batch short steps
        (App. B); the ``"2"`` prefix adds the two-phase strategy (section 3.4).
    loss : {"sigmoid", "nonconvex_logistic"}, default="sigmoid"
        ``sigmoid(-y x^T w) + (l2/2)||w||^2`` or
        ``log(1 + exp(-y x^T w)) + l2 sum_i w_i^2 / (1 + w_i^2)``
        (:mod:`privtune.optim.second_order._nonconvex`).
    epsilon : float in (0, inf), default=1.0
    delta : float in (0, 1), default=1e-6
        The run is ``(epsilon, delta)``-DP (the paper's ``delta = 1/n`` is weak for
        a tuner, spec section 5 item 16).
    tolerance : float in (0, inf), default=0.04
        ``alpha``: the target is an ``(alpha, hessian_tolerance)``-2NS. The loop
        runs at ``eps_g = alpha / (1 + c1)`` and ``eps_H = hessian_tolerance / (1 + c)``
        (spec section 5 item 12).
    hessian_tolerance : float in (0, inf) or None, default=None
        ``None`` is ``sqrt(M alpha)`` with the loss's ``M``. (The paper's settings
        ``(0.04, 0.2)`` and ``(0.02, 0.141)`` assume ``M = 1``.)
    data_norm : float in (0, inf), default=1.0
        ``R``, the declared L2 bound of every row; rows above it are scaled down
        (``clip="rows"``) or refused after the charge (``clip="raise"``, a
        release the guarantee does not cover, see ``clip``). Every constant derives from it.
    l2 : float in [0, inf), default=1e-3
        The regularisation strength ``lam``.
    batch_size : int in [1, n_samples] or None, default=None
        ``m`` of the ``-b`` variants (None: ``max(1, n // 50)``); must be None otherwise.
    eigensolver : {"dense", "lanczos"}, default="dense"
        Smallest eigenpair of the released ``H~``: ``numpy.linalg.eigh``, or
        Lanczos from a random start (Carmon et al. 2018) with the paper's App. C
        rule (step if the Ritz value is at most ``-eps_H / 2``, else certify;
        ``MIN_DEC`` then uses ``eps_H / 2``). Both run on the materialised
        ``H~ = H + E`` (one ``E`` per evaluation).
    max_iter : int in [1, 1000000], default=2000
        Cap on the horizon: ``T = min(ceil((gap - f_low) / MIN_DEC), max_iter)``;
        the noise is calibrated for this ``T``.
    initial_gap : float in (0, inf) or None, default=0.5
        Declared, data-independent ``f(w0) - f_low`` (the authors' code uses 0.5;
        an underestimate only hurts utility). ``None`` (sigmoid loss, full
        batch only) releases ``f~0 = f(w0) + N(0, (sigma_f B / n)^2)`` with
        ``gap_fraction`` of the budget and uses ``f~0 + 3 sigma_f B / n - f_low``
        (spec section 5 item 1: the paper's ``f(w0) + |z|`` is not DP).
    gap_fraction : float in (0, 1), default=0.05
        Share of the zCDP budget spent on ``f~0`` when ``initial_gap=None``.
    w0 : array-like of shape (n_features,) or None, default=None
        Public starting point; None is zero.
    c1, c, c2, c_g, c_H : float, default=0.1, 0.1, 1/12, 0.6, 0.25
        Constants of the analysis: ``0 < c1 < 1/2``, ``c + c2 < 1/3``,
        ``0 < c_g < 1 - c1``, ``0 < c_H <= 1 - c - sqrt(8 c2 / 3)`` (so that the
        roots ``t1 < t2`` of eq. 15 are real; spec section 5 item 3).
    b_g, b_H : float in (1, inf), default=20.0
        Initial line-search step multipliers.
    beta_g : float in (0, 1), default=0.6
    beta_H : float in (t1 / t2, 1), default=0.5
        Backtracking factors.
    phase_one_fraction : float in (0, 1), default=0.75
        Share of the budget of phase 1 of the two-phase variants.
    budget_split : tuple of three positive floats, default=(1, 1, 1)
        Weights of the gradient, Hessian and line-search releases within each
        iteration's budget; equal weights are the paper's eqs. (8) and (14)
        (``sigma_g = sigma_H = lambda``).
    hessian_sensitivity : {"paper", "rank_one"}, default="paper"
        ``"paper"``: the Frobenius sensitivity ``2 B_H sqrt(d) / n`` of eq. (4).
        ``"rank_one"`` (privtune's extension): ``2 B_H / n``, valid because each
        per-example Hessian ``l''(m) x x^T`` has rank one, so its Frobenius norm
        equals its spectral norm, at most ``B_H``.
    clip : {"rows", "raise"}, default="rows"
        ``"rows"``: rows over the declared bound are scaled down to it (a map
        of each row: the guarantee holds). ``"raise"``: they are refused,
        **after** the charge; whether it raises depends on the rows, so the
        refusal is itself a release about every row that the guarantee does
        not cover. Use it only on purpose, to check data already known to be
        inside the bound, never on sensitive rows in production.
    accountant : Accountant or None, default=None
        Checked before any value of ``X`` is read and charged before the first data access.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None``: cryptographically secure noise. An int makes the run
        reproducible and **not for release**.
    phase : str, default="training"
        The phase recorded in the accountant's ledger.

    Returns
    -------
    SecondOrderResult

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain (including constants that make the
        roots of eq. 15 complex), a shape mismatch, or more than about 8.6e9
        rows (the sums' rounding bound); nothing is spent. After the charge:
        input that is not a rectangular array (a ragged list), rows over the
        bound with ``clip="raise"`` (a release, see ``clip``). NaN/inf entries,
        entries that are not numbers and bad labels are mapped, not refused.
    BudgetExceededError
        If the accountant cannot pay for the run; raised before any value of
        ``X`` is read, with nothing spent.

    Notes
    -----
    **Privacy.** ``(epsilon, delta)``-DP under **replace-one** (datasets of the
    same public size ``n`` differing in one row), for the release of every
    iterate, every noisy gradient and Hessian, every line-search answer and the
    stopping time. Public: ``n``, ``d``, ``R``, every constant and parameter,
    ``w0``. Events, all fixed before the loop (``T`` and every noise multiplier
    are functions of public quantities), worst case charged (spec section 5
    item 7): ``T_p`` iterations of each phase, each releasing

    * a gradient of the data term with Gaussian noise of multiplier ``sigma_g``
      on the L2 sensitivity ``Delta_g = 2 B_g / n`` (``GaussianEvent``, vector);
    * a symmetric Hessian of the data term, noise i.i.d. on and above the
      diagonal (same variance on it) of multiplier ``sigma_H`` on
      ``Delta_H = 2 B_H sqrt(d) / n``, which bounds the L2 norm of the change of
      the released upper triangle by the Frobenius norm of the change
      (``GaussianEvent``, vector);
    * with line search, one AboveThreshold run, ``1/lambda``-DP
      (``SparseVectorEvent``), on queries of sensitivity
      ``min(2 B_g ||largest trial step||, 2 B) / n`` (replace-one, the loss being
      ``B_g``-Lipschitz and ``[0, B]``-valued; the paper uses the first term).

    The iterations that release no Hessian (or end) are charged as if they did,
    and the second phase of a two-phase run is charged even when the first one
    certifies. Mini-batch variants draw ``m`` rows without replacement at
    every iteration (gradient and Hessian on the same batch, sensitivities with
    ``m``) and charge ``SampledWithoutReplacementEvent`` (replace-one; RDP bound
    of Wang, Balle & Kasiviswanathan 2019 through ``dp_accounting``; that
    strengthened bound is stated for the continuous Gaussian, and its transfer
    to privtune's discrete Gaussian on a fine grid, whose moments agree to a
    relative ``exp(-2 pi^2 4^10)``, is argued, not proven). The
    regulariser's gradient and Hessian are public and added after the noise.
    Calibration: the total zCDP ``rho`` is that of the single Gaussian meeting
    ``(epsilon (1 - 1e-3), delta)`` in privtune's RDP accountant; phase ``p``
    gets ``fraction_p rho`` over ``T_p`` iterations, split equally between the
    mechanisms of an iteration (eq. 8: ``sigma^2 = 2 T / (2 rho)``; eq. 14:
    ``sigma^2 = lambda^2 = 3 T / (2 rho)``). Mini-batch variants calibrate one
    common scale of these multipliers by a root search on the subsampled RDP bound.
    ``epsilon`` of the result is the accountant's bound on the charged event.
    With ``initial_gap=None``, ``f(w0)`` is released first (scalar Gaussian,
    ``Delta_f = B / n``, ``gap_fraction`` of ``rho``) and charged in a first
    ledger entry; the rest, whose RDP curve does not depend on ``T``, is
    charged after it, before the loop. Noise is exact (discrete Gaussian and
    discrete Laplace on grids, :mod:`privtune.mechanisms`). Stopping uses the
    noisy gradient norm and eigenvalue only; the eigenvector's sign uses the
    noisy gradient. The batch indices and Lanczos start vectors come from a
    generator seeded from the same source as the noise and are never released.

    **Floating point.** The gradient, the Hessian and ``f(w0)`` are means over
    rows computed in float64, summed in fixed blocks of 4 096 rows (by
    position) added with ``math.fsum``; each mechanism is built with its exact
    sensitivity times a factor ``psi`` that provably covers that rounding,
    the float error of the rows' clipping and of the loss derivatives
    (:func:`privtune.optim.second_order._plan._rounding_factors`,
    :mod:`privtune.optim._sums`; ``psi - 1`` is at most about ``m 2**-40``, and 0
    for the Hessian with ``hessian_sensitivity="paper"`` when its ``sqrt(d)``
    already covers it). A line-search query is the mean over the rows of each
    row's loss decrease, clipped per row to ``min(B_g gamma ||d||, B)`` (so
    its sensitivity holds whatever the rounding of the losses), plus its
    public part, added last; the queries are clipped to ``2**24`` grid steps
    and the sparse vector is built with the sensitivity times ``psi (1 +
    2**-30)``. The charged events do not change. This holds up to about 8.6e9
    rows (more is refused before any charge). Before, the computed releases of
    neighbouring data sets could differ by more than the sensitivity (by
    about ``n**2 2**-53`` of it at worst), and the line-search queries'
    Lipschitz sensitivity did not bound their rounding at all.

    **Deviations from the paper** (spec section 5): worst-case ``rho-bar``
    charged instead of the "actual run" figure; data-independent gap by
    default; constants derived from the declared, enforced row bound instead
    of ``G = M = B_g = B_H = 1``; sampling without replacement and
    sensitivities with ``m`` for mini-batches (no line search on mini-batches,
    which the paper does not analyse); both phases charged up front (no
    leftover reuse); the fallback step ``gamma_bar`` when every trial fails;
    ``i_max = floor(log_{1/beta} b) + 1``; accounting through RDP instead of
    Prop. A.6's closed form; ``T`` capped by ``max_iter``. If the loop reaches
    ``T`` without certifying, the last iterate is returned with
    ``certified=False``.

    **Certificate.** When ``certified`` and the noise satisfies eq. (9)
    (``||noise_g|| <= c1 eps_g`` and ``||E|| <= c eps_H``, which holds with high
    probability once ``n`` is large, Thm 4), ``x`` is an
    ``(alpha, hessian_tolerance)``-2NS of ``f``; the flag itself is computed on
    released values only.

    References
    ----------
    .. [GW23] C. Gao and S. J. Wright, "Differentially Private Optimization for
       Smooth Nonconvex ERM", arXiv:2302.04972, 2023, Alg. 1-3, Thms 1, 5, B.5.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.optim.second_order import dp_second_order
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 3)) / 2
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> res = dp_second_order(X, y, variant="2opt-ls", epsilon=1.0, delta=1e-6, random_state=0)
    >>> res.x.shape, res.epsilon <= 1.0
    ((3,), True)
    """
    owner = "dp_second_order"
    p = _params(dict(variant=variant, loss=loss, epsilon=epsilon, delta=delta, tolerance=tolerance,
                     hessian_tolerance=hessian_tolerance, data_norm=data_norm, l2=l2, batch_size=batch_size,
                     eigensolver=eigensolver, max_iter=max_iter, initial_gap=initial_gap, gap_fraction=gap_fraction,
                     w0=w0, c1=c1, c=c, c2=c2, c_g=c_g, c_H=c_H, b_g=b_g, b_H=b_H, beta_g=beta_g, beta_H=beta_H,
                     phase_one_fraction=phase_one_fraction, budget_split=budget_split,
                     hessian_sensitivity=hessian_sensitivity, clip=clip, accountant=accountant,
                     random_state=random_state, phase=phase), owner)
    n, d = _public_shape(X, owner)
    v = _validate(n, d, p, owner)
    v["source"] = check_random_state(random_state, owner=owner)
    privatised = v["initial_gap"] is None
    if privatised:
        # Any horizon gives the same RDP curve (sigma^2 is proportional to T): check with the data-free worst case.
        consts = v["loss"].constants()
        reference_gap = consts.B + v["loss"].reg_value(v["w0"]) - consts.f_low
        plan = _public_plan(n, d, v, reference_gap, owner)
    else:
        plan = _public_plan(n, d, v, None, owner)
    y = label_entries(y)  # a list's entries each read on their own
    _check_label_shape(y, n, owner)
    if accountant is not None:
        accountant.check(plan.total)  # refuses an over-budget run before any value of X is read
        # write-ahead, before any value is read: the f(w0) release first when the gap is privatised
        accountant.spend(plan.f0_event if privatised else plan.total, phase=phase, role="training")
    U, z = _read_data(X, y, n, d, owner, dtype=np.float64)  # float64 rows (the sums' rounding bound is float64's)
    U = clip_rows(U, math.inf, v["data_norm"], mode=v["clip"], owner=owner)
    oracle = _DataOracle(v["loss"], U, z)
    if privatised:
        f0_tilde = float(plan.f0_mech.randomise(oracle.value(v["w0"])))
        gap = f0_tilde + v["loss"].reg_value(v["w0"]) + GAP_MARGIN * plan.f0_mech.sigma - consts.f_low
        plan = _make_plan(n, d, v, gap=gap, owner=owner)
        if accountant is not None:
            accountant.spend(ComposedEvent(events=plan.phase_events), phase=phase, role="training")
    return _execute(plan, oracle)


def _execute(plan: _Plan, oracle: _DataOracle) -> SecondOrderResult:
    v, rules = plan.v, plan.rules
    source = v["source"]
    rng = source.numpy_generator()  # batches and Lanczos starts (never released)
    trace = _Trace()
    w = v["w0"].copy()
    certified, stopped = False, None
    for i, (T_p, _frac) in enumerate(plan.phases):
        g_mech, h_mech = plan.mechs[i]
        lam_svt = plan.multipliers[i].get("line_search")
        releases = _Releases(g_mech, h_mech, lam_svt, source)
        w, certified = _run_phase(w, phase=i + 1, horizon=T_p, oracle=oracle, regulariser=plan.loss,
                                  releases=releases, rules=rules, n=plan.n,
                                  batch=plan.m if v["minibatch"] else None, rng=rng, trace=trace)
        if certified:
            stopped = i + 1
            break
    hist = trace.history()
    charged = compose_events([plan.total], delta=v["delta"])
    if charged.epsilon > v["epsilon"] * (1.0 + 1e-12):  # pragma: no cover - the calibration leaves a margin
        raise RuntimeError("second-order plan exceeds its budget after calibration; please report this bug.")
    sens = {"gradient": plan.sens_g, "hessian": plan.sens_H}
    if plan.f0_mech is not None:
        sens["initial_value"] = plan.f0_mech.sensitivity
    scales = tuple({"gradient": g.sigma, "hessian": h.sigma} for g, h in plan.mechs)
    kinds = hist.kind
    extra = {"t1": v["t1"], "t2": v["t2"], "i_max_g": rules.i_max_g, "i_max_H": rules.i_max_H,
             "budget_split": v["budget_split"], "uncapped_horizon": plan.raw_horizon,
             "phase_one_fraction": v["phase_one_fraction"] if v["two_phase"] else None,
             "hessian_sensitivity": v["hessian_sensitivity"], "relation": "replace_one"}
    return SecondOrderResult(
        x=w, variant=v["variant"], loss=plan.loss.name, eigensolver=v["eigensolver"], certified=certified,
        stopped_in_phase=stopped, n_iter=int(kinds.shape[0]), n_gradient_steps=int(np.sum(kinds == "gradient")),
        n_curvature_steps=int(np.sum(kinds == "curvature")),
        n_hessian_evaluations=int(np.sum(np.isfinite(hist.lambda_min))),
        n_line_search_fallbacks=int(np.sum(hist.line_search_trial == -1)), horizon=plan.T,
        phase_one_horizon=plan.T1, tolerance=plan.alpha, hessian_tolerance=plan.target_H,
        gradient_threshold=rules.eps_g, curvature_threshold=rules.eps_H, min_decrease=plan.min_dec,
        noise_multipliers=tuple(dict(mm) for mm in plan.multipliers), noise_scales=scales, sensitivities=sens,
        initial_gap=float(plan.gap), gap_noise_multiplier=plan.sigma_f, constants=plan.consts, batch_size=plan.m,
        n_samples=plan.n, n_features=plan.d, events=plan.events, privacy_event=plan.total, epsilon=charged.epsilon,
        delta=charged.delta, seeded=bool(source.seeded), history=hist, extra=extra)
