r"""DP-BLSGD of Chen & Lee (seed 003): SGD with a private backtracking (Armijo) line search.

:func:`dp_blsgd` minimises ``F(w) = (1/n) sum_i l_i(w) + (l2 / 2) ||w||**2`` for
any model exposed through the :class:`PerExampleObjective` protocol (a linear
model: :class:`MarginObjective`; a torch MLP: :mod:`privtune.neural_network`).
Each iteration releases a clipped, Gaussian-noised mini-batch gradient
``g~``, then chooses the step size by :func:`noisy_backtracking_line_search`
(NOISYBTLS, the paper's Alg. 1): AboveThreshold over the candidates
``eta0, beta eta0, beta**2 eta0, ...`` testing the Armijo condition on clipped
losses, releasing only the accepted step (or "failed"). In
``mode="adaptive"`` (Alg. 2 and 3) a failed search triggers CHEB: a second noisy
gradient on a fresh batch, an angle test that raises the gradient budget
``rho_grad`` or the line-search budget ``eps_BT`` (budgets only grow), and the
average of the two gradients; the run stops when the next mechanism would not
fit a privacy **filter** fixed in advance. ``mode="fixed"`` is the paper's
neural-network mode (Sec. 5.7): ``n_iter`` iterations at a fixed per-iteration
budget split between gradient and line search, no CHEB, and a failed search
steps by ``beta**max_backtracks eta0``.

Privacy argument
----------------
**Unit and relation.** One row of the objective's data. The default
``sampling="without_replacement"`` and ``sampling="full"`` are analysed under
privtune's **replace-one** relation (``n`` is public); ``sampling="poisson"`` is
the paper's scheme, analysed under **add/remove** (its events must be charged to
an ``Accountant(relation="add_remove")``; privtune's replace-one accountant
refuses a Poisson-sampled Gaussian, and :func:`dp_blsgd` refuses a replace-one
accountant with Poisson sampling).

**From the paper's add/remove analysis to replace-one.** Seed 003 amplifies
every call by Poisson subsampling under add/remove (sensitivities ``C_grad /|B|``
and ``C_obj``, spec section 1). privtune's default draws, for **every** mechanism
call (each gradient, each NOISYBTLS call, each CHEB gradient; spec P2), a fresh
batch of ``m = max(1, round(q n))`` rows without replacement, and analyses it
natively under replace-one: replacing one row moves a batch mean of terms
bounded by ``C`` by at most ``2 C / m`` (the sensitivities double), and each
call is a ``SampledWithoutReplacementEvent(dataset_size=n, sample_size=m)``,
bounded by dp-accounting's replace-one RDP for sampling without replacement
(Wang, Balle & Kasiviswanathan 2019) for the Gaussian, and by
``log(1 + (m/n)(e**eps - 1))`` (Balle, Barthe & Gaboardi 2018) for the line
search's pure epsilon.

**The mechanisms.** With ``D`` the public divisor (``m``; ``n`` for the full
batch; the public ``q n`` for Poisson, never the realised ``|B|``, spec P6) and
``f = 2`` under replace-one, ``f = 1`` under add/remove:

* gradient: ``(1/D) sum_B clip(grad l_i(w), C_grad) + N(0, s**2 I)`` with L2
  sensitivity ``f C_grad / D`` and noise multiplier ``1/sqrt(2 rho_grad)``
  (``rho_grad`` is the zCDP parameter of the mechanism on its batch); exact
  discrete Gaussian noise (:class:`privtune.mechanisms.Gaussian`), event
  ``GaussianEvent(vector=True)``. The regulariser's gradient ``l2 w`` is public
  and is added after the noise (spec P7);
* line search, Laplace (default): the Armijo slack in mean form,
  ``F_B(w) - alpha eta ||g~||**2 - F_B(w - eta g~)`` with
  ``F_B(v) = (1/D) sum_B min(l_i(v), C_obj) + (l2/2)||v||**2``, has sensitivity
  ``f C_obj / D`` (both loss evaluations of one call use the same batch, spec
  P9); AboveThreshold with public threshold 0 (:class:`privtune.mechanisms.SparseVector`:
  threshold noise drawn once per call, fresh noise per candidate, spec P8) is
  pure ``eps_BT``-DP whatever the number of candidates (Thm 1; spec P1), event
  ``SparseVectorEvent(eps_BT)``;
* line search, Gaussian (``sampling="full"`` only): the paper's Thm 3 curve is
  not proven (P1); privtune charges Zhu & Wang's ``a rho_BT + log(K)/(a - 1)``
  (``K = max_backtracks + 1`` outputs) as a ``RenyiEvent``, see
  :mod:`privtune.optim.line_search._accounting`.

Losses outside ``[0, C_obj]`` (including NaN) and non-finite per-example
gradients are clipped or zeroed row by row, so the declared sensitivities hold
whatever the objective returns.

**Floating point.** Every batch mean is summed in fixed blocks of 4 096 rows
added with ``math.fsum``, and each mechanism is built with its exact
sensitivity times a proven rounding factor ``psi`` (at most about ``1 + m 2**-40``;
:mod:`privtune.optim._sums`), so the guarantee holds for the computed means,
not only for the exact ones, up to about 8.6e9 rows per batch. The line
search's query is the mean of the rows' loss differences (its private part)
plus its public part, added last and clipped to ``2**24`` grid steps.

**Adaptive budgets need a filter (P5).** ``rho_grad`` and ``eps_BT`` depend on
earlier releases, so the run is charged as a filter fixed before the first data
access: with the full batch and the Laplace line search, a zCDP filter (each
Gaussian costs ``rho_grad``, each search ``eps_BT**2 / 2``; a mechanism runs only
if the running sum plus its cost stays within ``rho_cap``, the largest ``rho``
whose curve ``a rho`` converts to ``(epsilon, delta)``); otherwise a Renyi filter
at one order ``a*`` chosen in advance (the best order for the planned schedule of
``expected_iter`` iterations at the initial budgets), with cap ``B``, the largest
RDP value at ``a*`` that converts to ``(epsilon, delta)``. The run's
``privacy_event`` is the cap as a :class:`~privtune.accounting.events.RenyiEvent`
(the zCDP curve ``a rho_cap`` on the accountant's default orders, or the single
pair ``(a*, B)``), charged once, up front; :func:`blsgd_privacy_event` returns
the same event without data. In ``mode="fixed"`` every event is fixed in advance
and the charged event is their composed RDP curve, stated as a ``RenyiEvent``.

**Released.** The iterates, the noisy gradients, the accepted step sizes (0 for
a failed search), the budgets and the clipping thresholds of every iteration,
the numbers of line searches, CHEB calls and failures, the filter's order and
spent value: all post-processing of released values and public constants.
Never released: losses, exact gradients, noisy slacks or thresholds, the number
of rows clipped, the realised Poisson batch sizes, the batch indices.

Deviations from the paper (spec section 5)
------------------------------------------
* fresh batch per mechanism call (P2); without replacement and replace-one by
  default (above); the public divisor ``q n`` for Poisson (P6);
* mean-form Armijo query with ``Delta_q = f C_obj / D`` (P6), so ``alpha`` means
  what it means in eq. (2);
* regulariser outside both clippings (P7);
* Laplace NOISYBTLS as pure ``eps_BT``-DP (Thm 1), amplified as pure DP and
  converted with Bun & Steinke's bound, instead of Thm 2 and Lemma 4 (P1, P3);
  Gaussian NOISYBTLS only unsampled, with the ``log(K)/(a - 1)`` term (P1);
* a filter fixed in advance instead of per-order budgets with "stop when every
  order is exhausted" (P5); the run stops when the next gradient plus a line
  search (or a CHEB gradient plus a line search) would not fit;
* initial budgets (``initial_budget="calibrated"``, the default): the paper's
  heuristic ``eps_iter = eps / (2 x 50)`` "expects about 50 iterations" but its
  meaning depends on the accountant (P3: 2 to 13 000 iterations); privtune takes
  the iteration budget ``e`` (``rho_grad = e**2/2``, ``eps_BT = e``, as in the
  paper) for which ``expected_iter`` iterations exactly fill the filter's cap.
  ``initial_budget="paper"`` keeps ``e = epsilon / (2 expected_iter)``;
* DP-BLGD (``sampling="full"``): the paper says it "uses the budget increasing
  technique of DP-AGD" without giving the merge; privtune runs the same CHEB as
  DP-BLSGD, with the second gradient on the full batch, and averages the two;
* ``max_backtracks`` and the default ``eta0`` are not in the paper (P11):
  ``eta0 = None`` uses ``ETA0_FACTOR / (L + l2)`` (4/L) when the objective
  declares a smoothness bound ``L`` (:class:`MarginObjective` with
  ``data_norm``), else 1;
* trust region (``trust_region=True``, privtune's extension): when each
  example's loss is declared G-Lipschitz, each search starts at
  ``min(eta0, C_obj / (G ||g~||))``, so that no candidate moves any example's
  loss by more than ``C_obj`` (the range of the clipped Armijo test);
* gradients are clipped at ``min(C_grad, gradient_bound)`` when the objective
  declares an enforced per-example gradient bound (rows clipped to
  ``data_norm``): the paper's ``C_grad = 3`` never binds on rows of norm 1 and
  would triple the noise;
* without replacement, the sampled Gaussian's RDP (dp-accounting) is used at
  orders up to 128 only (numerically unstable above;
  :data:`privtune.optim.line_search._accounting.MAX_WOR_ORDER`); at
  ``delta = 1e-8`` this makes ``epsilon <= 0.05`` infeasible with this scheme;
* the Gaussian NOISYBTLS splits its noise as ``s_Q = 2 s_T`` (the paper:
  ``sqrt(2)``) at the same total ``a rho``, so that both are exact power-of-two
  discrete Gaussians;
* Fig. 1 ablation (``budget_strategy``): "none" never raises budgets and
  "always" raises ``rho_grad`` after every failed search; both still draw CHEB's
  second gradient and average, so that only the angle test differs;
* noise is exact (discrete Laplace / Gaussian on a grid, 0.1 % above the
  textbook scale).

References
----------
.. [CL22] C. Chen and J. Lee, "Stochastic Adaptive Line Search for
   Differentially Private Optimization", preprint, 2022.
.. [FZ21] V. Feldman and T. Zrnic, "Individual Privacy Accounting via a Renyi
   Filter", NeurIPS 2021.
.. [ZW20] Y. Zhu and Y.-X. Wang, "Improving Sparse Vector Technique with Renyi
   Differential Privacy", NeurIPS 2020.
.. [WBK19] Y.-X. Wang, B. Balle and S. Kasiviswanathan, "Subsampled Renyi
   Differential Privacy and Analytical Moments Accountant", AISTATS 2019.
.. [BBG18] B. Balle, G. Barthe and M. Gaboardi, "Privacy Amplification by
   Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018.

Layout
------
This module holds the public entry points (:func:`dp_blsgd`,
:func:`blsgd_privacy_event`), :class:`LineSearchResult` and the default step
size; the rest lives in private modules and is re-exported here:

* :mod:`privtune.optim.line_search._objective` -- :class:`PerExampleObjective`,
  :class:`MarginObjective`, the clipped batch means and the argument checks;
* :mod:`privtune.optim.line_search._step` -- NOISYBTLS
  (:func:`noisy_backtracking_line_search`, :class:`LineSearchOutcome`);
* :mod:`privtune.optim.line_search._loop` -- the plan fixed from public
  quantities and the DP-BLSGD loop (gradients, searches, CHEB, filter);
* :mod:`privtune.optim.line_search._accounting` -- events, RDP costs, filters,
  calibration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant
from privtune.accounting.events import PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.optim._result import _readonly
from privtune.optim.line_search._loop import _check_grids, _make_plan, _plan_epsilon, _Runner
from privtune.optim.line_search._objective import (
    MarginObjective,
    PerExampleObjective,
    _declared,
    _objective_shape,
    _vector,
)
from privtune.optim.line_search._objective import _clipped_gradient_mean as _clipped_gradient_mean  # tests, benchmark
from privtune.optim.line_search._objective import _clipped_loss_mean as _clipped_loss_mean  # tests
from privtune.optim.line_search._step import LineSearchOutcome, noisy_backtracking_line_search
from privtune.optim.line_search._step import _armijo_slacks as _armijo_slacks  # tests
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_integer

__all__ = [
    "PerExampleObjective",
    "MarginObjective",
    "LineSearchOutcome",
    "LineSearchResult",
    "noisy_backtracking_line_search",
    "dp_blsgd",
    "blsgd_privacy_event",
    "ETA0_FACTOR",
]

#: ``eta0 = ETA0_FACTOR / (L + l2)`` when the objective declares a smoothness bound ``L`` (spec P11 suggests "a few
#: times 1/L"; with ``max_backtracks = 10`` and ``beta = 0.8`` the candidates then span ``[0.54/L, 4/L]``). Measured
#: without the trust region (docs/papers/seed003.md): 1/L to 2/L is slightly better for logistic
#: regression on small noisy problems, 8/L or more for the smoothed hinge, whose bound ``L = 1/h`` overstates its
#: typical curvature; with the trust region (the default) the cap binds on noisy problems and the factor matters
#: less.
ETA0_FACTOR = 4.0


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class LineSearchResult:
    """Output of :func:`dp_blsgd`. Every field is public or a post-processed release.

    Attributes
    ----------
    x : ndarray of shape (n_params,)
        The last iterate (released).
    mode, sampling, line_search_noise, budget_strategy : str
    n_iter : int
        Outer iterations run (noisy gradients of the main loop).
    iterates : ndarray of shape (n_iter + 1, n_params)
        ``w_0`` (public) and the iterate after each iteration (unchanged after a
        failed search).
    step_sizes : ndarray of shape (n_iter,)
        Released step of each iteration (0 when every search of it failed).
    eta0s : ndarray of shape (n_iter,)
        The first candidate ``eta0`` of each iteration (intelligent backtracking).
    noisy_gradients : ndarray of shape (n_iter, n_params)
        The released direction of each iteration (after CHEB averaging),
        including the regulariser's gradient.
    rho_grads, search_budgets : ndarray of shape (n_iter,)
        The gradient budget ``rho_grad`` and line-search budget (``eps_BT``, or
        ``rho_BT`` for the Gaussian line search) at the start of each iteration.
    n_line_searches, n_cheb, n_failed : int
        NOISYBTLS calls, CHEB gradients, and searches that returned no
        candidate.
    filter_kind : {"zcdp", "renyi", "none"}
        ``"none"`` in ``mode="fixed"`` (every event fixed in advance).
    filter_order : float
        ``a*`` of the Renyi filter (``inf`` for the zCDP filter, ``nan`` for none).
    filter_cap, filter_spent : float
        The cap and the value spent at the filter's order (zCDP: ``rho``); in
        ``mode="fixed"``, the charged curve's epsilon and the same.
    events : tuple of PrivacyEvent
        Every mechanism event, in order.
    privacy_event : PrivacyEvent
        What was charged (equal to :func:`blsgd_privacy_event` of the same parameters).
    epsilon, delta : float
        The ``(epsilon, delta)`` of ``privacy_event`` under ``relation``.
    relation : {"replace_one", "add_remove"}
    batch_size : int
        ``m`` (Poisson: the expected ``q n``, rounded; the realised sizes are
        never stored).
    n_samples : int
    seeded : bool
        True when the noise came from a seed (not for release).
    extra : dict
        Public diagnostics: initial budgets, the rule, ``eta0``, the clipping
        thresholds per iteration (``clip_grads``, ``clip_objs``), the divisor.
    """

    x: np.ndarray
    mode: str
    sampling: str
    line_search_noise: str
    budget_strategy: str
    n_iter: int
    iterates: np.ndarray
    step_sizes: np.ndarray
    eta0s: np.ndarray
    noisy_gradients: np.ndarray
    rho_grads: np.ndarray
    search_budgets: np.ndarray
    n_line_searches: int
    n_cheb: int
    n_failed: int
    filter_kind: str
    filter_order: float
    filter_cap: float
    filter_spent: float
    events: tuple[PrivacyEvent, ...]
    privacy_event: PrivacyEvent
    epsilon: float
    delta: float
    relation: str
    batch_size: int
    n_samples: int
    seeded: bool
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("x", "iterates", "step_sizes", "eta0s", "noisy_gradients", "rho_grads", "search_budgets"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "events", tuple(self.events))

    def __repr__(self) -> str:
        return (f"LineSearchResult(mode={self.mode!r}, sampling={self.sampling!r}, n_iter={self.n_iter}, "
                f"n_line_searches={self.n_line_searches}, n_cheb={self.n_cheb}, epsilon={self.epsilon!r}, "
                f"delta={self.delta!r}, seeded={self.seeded})")


# ----------------------------------------------------------------------------- the default step size
def _default_eta0(objective: Any, l2: float) -> float:
    smooth = _declared(objective, "smoothness")
    return 1.0 if smooth is None else ETA0_FACTOR / (smooth + l2)


# ----------------------------------------------------------------------------- public API
def blsgd_privacy_event(n_samples: int, **params: Any) -> PrivacyEvent:
    """The event :func:`dp_blsgd` charges for these parameters, computed without data.

    Parameters
    ----------
    n_samples : int
        Number of rows (public).
    **params
        The keyword arguments of :func:`dp_blsgd` (``epsilon`` and ``delta``
        required). ``w0``, ``accountant``, ``random_state``, ``phase`` and the
        parameters that do not change the event (``eta0``, the clipping
        thresholds, ...) are accepted; only ``objective`` is not.

    Returns
    -------
    PrivacyEvent
        A :class:`~privtune.accounting.events.RenyiEvent`: the cap of the run's
        filter (adaptive) or the composed curve of its fixed schedule.

    Raises
    ------
    InvalidParameterError
        For the same bad parameters :func:`dp_blsgd` refuses.

    Notes
    -----
    **Privacy.** Spends nothing and reads nothing. Use it to check or reserve a
    run's cost up front (e.g. in ``PrivateSearchCV``).
    """
    owner = "blsgd_privacy_event"
    n = check_integer(n_samples, "n_samples", low=1, owner=owner)
    for key in ("w0", "accountant", "random_state", "phase", "trust_region"):
        params.pop(key, None)
    return _make_plan(n, params, owner).charged


def dp_blsgd(
    objective: PerExampleObjective, w0: Any = None, *, epsilon: float, delta: float, mode: str = "adaptive",
    sampling: str = "without_replacement", batch_fraction: float = 0.1, clip_grad: float = 3.0,
    clip_obj: float = 1.0, l2: float = 1e-3, armijo: float = 0.5, backtrack: float = 0.8, max_backtracks: int = 10,
    eta0: float | None = None, line_search_noise: str = "laplace", budget_increase: float = 0.3,
    phi_max: float = 1.1, phi_min: float = 0.5, psi: float = 0.8, reset_every: int | None = 10,
    reset_factor: float = 1.2, adaptive_clipping: bool = False, clip_decay: float = 0.05, expected_iter: int = 50,
    n_iter: int | None = None, line_search_share: float = 0.1, budget_strategy: str = "adaptive",
    initial_budget: str = "calibrated", trust_region: bool = True, accountant: Accountant | None = None,
    random_state: Any = None, phase: str = "training",
) -> LineSearchResult:
    r"""DP-BLSGD (Chen & Lee, Alg. 2-3): DP SGD with a private Armijo line search and adaptive budgets.

    Parameters
    ----------
    objective : PerExampleObjective
        The model and its sensitive data (e.g. :class:`MarginObjective`).
    w0 : array-like of shape (n_params,) or None, default=None
        Public starting point; None is zero.
    epsilon : float in (0, inf)
    delta : float in (0, 1)
        The run's ``(epsilon, delta)`` under its relation (see Notes).
    mode : {"adaptive", "fixed"}, default="adaptive"
        ``"adaptive"``: Alg. 2 with CHEB (Alg. 3), stopped by a filter.
        ``"fixed"``: the paper's NN mode, ``n_iter`` iterations at a fixed budget.
    sampling : {"without_replacement", "full", "poisson"}, default="without_replacement"
        A fresh batch for every mechanism call: ``m = max(1, round(q n))`` rows
        without replacement (replace-one); every row (DP-BLGD, replace-one); or
        Poisson with rate ``q`` (the paper's, add/remove).
    batch_fraction : float, default=0.1
        ``q``: in (0, 1] without replacement, (0, 1) for Poisson; unused for the
        full batch.
    clip_grad, clip_obj : float in (0, inf), default=3.0, 1.0
        ``C_grad`` (per-example L2 gradient clipping) and ``C_obj`` (loss clipping).
        When the objective declares an enforced ``gradient_bound`` below
        ``clip_grad`` (:class:`MarginObjective` with ``data_norm``: the bound is
        ``data_norm``), gradients are clipped at that bound instead: the same
        data term with less noise (privtune's extension, not in the paper).
    l2 : float in [0, inf), default=1e-3
        ``mu`` of the regulariser ``(mu/2)||w||**2`` (outside the clippings).
    armijo, backtrack : float in (0, 1), default=0.5, 0.8
        ``alpha`` and ``beta`` of the line search.
    max_backtracks : int in [1, 100], default=10
        ``max_it``: candidates per search.
    eta0 : float in (0, inf) or None, default=None
        First candidate. None: ``ETA0_FACTOR / (L + l2)`` (``ETA0_FACTOR = 4``) when
        the objective declares a smoothness bound ``L`` (``objective.smoothness``),
        else 1 (spec P11: privtune's choice, not the paper's). Intelligent
        backtracking only ever lowers it.
    line_search_noise : {"laplace", "gaussian"}, default="laplace"
        Gaussian only with ``sampling="full"`` (see Notes).
    budget_increase : float in (0, inf), default=0.3
        ``xi``: budgets are multiplied by ``1 + xi`` when raised.
    phi_max, phi_min, psi : float, default=1.1, 0.5, 0.8
        Angle test thresholds (``phi_max >= 1``, ``phi_min`` in (0, 1]) and the
        decay of the running angle ``theta_bar`` (in [0, 1)).
    reset_every : int >= 1 or None, default=10
        ``tau`` of intelligent backtracking (None disables it).
    reset_factor : float in (0, inf), default=1.2
        ``varsigma``: ``eta0 <- min(varsigma max(Omega), eta0)``.
    adaptive_clipping : bool, default=False
        DP-BLSGD-AC (eq. 9): both clipping thresholds decay by ``1 - clip_decay``
        when CHEB raises ``rho_grad`` (at most once per iteration).
    clip_decay : float in (0, 1), default=0.05
        ``zeta``.
    expected_iter : int in [1, 100000], default=50
        ``E``: the planned number of iterations from which the initial budgets
        and the filter's order are derived.
    n_iter : int or None, default=None
        ``mode="fixed"``: the number of iterations (required). ``mode="adaptive"``:
        an optional cap on the iterations (the charge is the filter's cap anyway).
    line_search_share : float in (0, 1), default=0.1
        ``mode="fixed"``: the share of each iteration's zCDP-equivalent budget
        given to the line search (the paper's NN mode: 10 %).
    budget_strategy : {"adaptive", "none", "always"}, default="adaptive"
        Fig. 1's ablation: the angle test, never raise budgets, or raise
        ``rho_grad`` after every failed search.
    initial_budget : {"calibrated", "paper"}, default="calibrated"
        ``e`` (``rho_grad = e**2/2``, ``eps_BT = e``) such that ``expected_iter``
        iterations fill the filter's cap, or the paper's ``epsilon / (2 E)``.
    trust_region : bool, default=True
        When the objective declares an enforced ``gradient_bound`` ``G`` (each
        example's loss is then G-Lipschitz in ``w``), the first candidate of each
        search is ``min(eta0, C_obj / (G ||g~||))``: no candidate step moves any
        example's loss by more than ``C_obj``, the range the clipped Armijo test
        can see (privtune's extension, not in the paper; post-processing of the
        released ``g~``). Without it, on well-separated data and small noise the
        first accepted steps can trade the minority class's losses (capped at
        ``C_obj``) for the majority's, and every later search fails (the
        docs page shows the trap). No effect on objectives without the bound.
    accountant : Accountant or None, default=None
        Charged once, before any data access, with ``privacy_event``. Its relation
        must match the sampling's (replace-one, or add/remove for Poisson).
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None``: cryptographically secure noise and batches. An int: reproducible,
        **not for release**.
    phase : str, default="training"
        Recorded in the accountant's ledger.

    Returns
    -------
    LineSearchResult

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain, an accountant of the wrong relation,
        a budget that cannot pay for one iteration, more than about 8.6e9 rows
        per batch (the sums' rounding bound; nothing is spent); after the
        charge, for data the objective's ``validate`` cannot read (for
        :class:`MarginObjective`, only input that is not a rectangular array).
        :class:`MarginObjective` maps NaN/inf entries, entries that are not
        numbers and bad labels instead of refusing them; every objective's
        non-finite per-example gradients count as zero and NaN losses as
        ``clip_obj``.
    BudgetExceededError
        If the accountant cannot pay for the run; raised before any value is
        read, with nothing spent.

    Notes
    -----
    **Privacy.** ``(epsilon, delta)``-DP under **replace-one** for
    ``sampling="without_replacement"`` (default) and ``"full"``, under
    **add/remove** for ``"poisson"``. Public: ``n``, ``n_params``, ``w0``, every
    hyperparameter. For ``"poisson"`` this is add/remove **with n public**, as
    in the paper and in Opacus / TF Privacy: ``n`` is read from ``X`` and
    enters the divisor ``q n``, the result and the event labels, so the
    guarantee compares a data set with one row added or removed *at the same
    declared n* (the divisor is not recomputed); a neighbour whose size
    differs, with ``n`` itself secret, is not covered. Use the replace-one
    samplings when the size must stay secret. Events per mechanism call (each on a fresh batch):
    gradient, ``GaussianEvent(noise_multiplier=1/sqrt(2 rho_grad), vector=True)``
    at L2 sensitivity ``2 C_grad / m`` (``2 C_grad / n`` full batch;
    ``C_grad / (q n)`` Poisson); Laplace line search,
    ``SparseVectorEvent(eps_BT)`` at sensitivity ``2 C_obj / m`` (``2 C_obj / n``;
    ``C_obj / (q n)``), pure DP by Thm 1; wrapped in
    ``SampledWithoutReplacementEvent`` (``PoissonSampledEvent``) when subsampled.
    Gaussian line search (full batch only): ``a rho_BT + log(max_backtracks + 1)/(a - 1)``
    (Zhu & Wang), a ``RenyiEvent``. Adaptive mode charges the cap of its filter,
    fixed in advance (zCDP filter for the full batch with the Laplace search,
    else a Renyi filter at one order ``a*``), as a ``RenyiEvent``; fixed mode
    charges the composed curve of its schedule. The charge is made once, after
    ``accountant.check`` while only the objective's public sizes were read and
    before the objective's ``validate()`` reads any value (write-ahead).
    Deviations from the paper and the full argument: module docstring.

    **Floating point.** The noise is calibrated on the sensitivity of the
    exact means, so the *computed* means of two neighbouring data sets must
    not differ by more; a float64 sum of ``m`` terms in an unknown order (a
    BLAS product) can exceed that by about ``m**2 2**-53`` of it, which no
    margin covered (the worst case was proven only up to about ``10**6`` rows
    per sum). Every batch mean is now summed in fixed blocks of 4 096 rows (by
    position; one BLAS product each) whose sums are added with ``math.fsum``,
    and every mechanism (gradient, line search) is built with the exact
    sensitivity times a factor ``psi`` that provably covers the rounding of
    that sum and of the clipping (:mod:`privtune.optim._sums`; ``psi - 1`` is
    at most about ``m 2**-40``: 1.1e-10 at 1 000 rows, 4.5e-7 at ``10**6``), plus a
    relative ``2**-30`` for the line-search queries' last addition (queries
    clipped to ``2**24`` grid steps). The charged events do not change. The
    guarantee then holds for the computed releases at every batch size up
    to about 8.6e9 rows (more is refused before any charge), provided the
    objective computes each row's loss and gradient from that row, its
    position and ``w`` only (:class:`PerExampleObjective`; true of
    :class:`MarginObjective` and of the MLP's objective).

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.optim.line_search import MarginObjective, dp_blsgd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> res = dp_blsgd(MarginObjective(X, y, data_norm=1.0), epsilon=1.0, delta=1e-6, random_state=0)
    >>> res.x.shape, res.epsilon <= 1.0, res.relation
    ((3,), True, 'replace_one')
    """
    owner = "dp_blsgd"
    n, d = _objective_shape(objective, owner)
    if not isinstance(phase, str):
        raise InvalidParameterError(f"The 'phase' parameter of {owner} must be a str. Got {phase!r} instead.")
    if not isinstance(trust_region, bool):
        raise InvalidParameterError(f"The 'trust_region' parameter of {owner} must be a bool. Got {trust_region!r}.")
    params = dict(epsilon=epsilon, delta=delta, mode=mode, sampling=sampling, batch_fraction=batch_fraction,
                  clip_grad=clip_grad, clip_obj=clip_obj, l2=l2, armijo=armijo, backtrack=backtrack,
                  max_backtracks=max_backtracks, eta0=eta0, line_search_noise=line_search_noise,
                  budget_increase=budget_increase, phi_max=phi_max, phi_min=phi_min, psi=psi,
                  reset_every=reset_every, reset_factor=reset_factor, adaptive_clipping=adaptive_clipping,
                  clip_decay=clip_decay, expected_iter=expected_iter, n_iter=n_iter,
                  line_search_share=line_search_share, budget_strategy=budget_strategy,
                  initial_budget=initial_budget)
    plan = _make_plan(n, params, owner)
    w_start = np.zeros(d) if w0 is None else _vector(w0, d, "w0", owner)
    bound = _declared(objective, "gradient_bound")
    if bound is not None and bound < plan.c_grad:
        plan.c_grad = bound  # the declared bound (enforced by the objective's row clipping) is a tighter clip
    eta_start = _default_eta0(objective, plan.l2) if plan.eta0 is None else plan.eta0
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise InvalidParameterError(f"The 'accountant' parameter of {owner} must be a privtune Accountant or "
                                        f"None. Got {type(accountant).__name__} instead.")
        if accountant.relation != plan.scheme.relation:
            raise InvalidParameterError(
                f"sampling={plan.scheme.sampling!r} of {owner} is analysed under the {plan.scheme.relation!r} "
                f"relation but the accountant's relation is {accountant.relation!r}. "
                + ("Poisson-sampled Gaussian gradients are bounded under add/remove only (privtune's replace-one "
                   "accountant cannot convert them): use Accountant(budget, relation='add_remove'), or "
                   "sampling='without_replacement' (replace-one)." if plan.scheme.sampling == "poisson" else
                   "Use an Accountant with relation='replace_one', or sampling='poisson' for add/remove."))
    source = check_random_state(random_state, owner=owner)
    _check_grids(plan, d, source)
    if accountant is not None:
        accountant.check(plan.charged)  # an over-budget run is refused before any value is read
        accountant.spend(plan.charged, phase=phase, role="training")  # write-ahead, before any value is read
    validate = getattr(objective, "validate", None)
    if callable(validate):
        validate()
    lipschitz = _declared(objective, "gradient_bound") if trust_region else None
    runner = _Runner(plan, objective, w_start, eta_start, source, lipschitz)
    out = runner.run()
    rec, counts, flt = out["rec"], out["counts"], out["filter"]
    t = len(rec["steps"])
    if flt is None:
        kind, order, cap = "none", math.nan, plan.fixed.epsilon
        spent = cap
    else:
        kind, order, cap, spent = flt.kind, flt.order, flt.cap, flt.spent
    extra = dict(eta0=eta_start, initial_rho_grad=plan.rho0, initial_search_budget=plan.search0,
                 initial_budget=plan.rule, divisor=plan.scheme.divisor, expected_iter=plan.expected_iter,
                 clip_grads=np.array(rec["clip_grad"], dtype=float), clip_objs=np.array(rec["clip_obj"], dtype=float),
                 adaptive_clipping=plan.ac, clip_grad=plan.c_grad, trust_region=lipschitz, **runner.final)
    return LineSearchResult(
        x=runner.w, mode=plan.mode, sampling=plan.scheme.sampling, line_search_noise=plan.noise,
        budget_strategy=plan.strategy, n_iter=t, iterates=np.array(rec["iterates"]).reshape(t + 1, d),
        step_sizes=np.array(rec["steps"], dtype=float), eta0s=np.array(rec["eta0s"], dtype=float),
        noisy_gradients=np.array(rec["grads"], dtype=float).reshape(t, d),
        rho_grads=np.array(rec["rho"], dtype=float), search_budgets=np.array(rec["search"], dtype=float),
        n_line_searches=counts["n_ls"], n_cheb=counts["n_cheb"], n_failed=counts["n_failed"], filter_kind=kind,
        filter_order=order, filter_cap=cap, filter_spent=spent, events=tuple(runner.events),
        privacy_event=plan.charged, epsilon=_plan_epsilon(plan), delta=plan.delta, relation=plan.scheme.relation,
        batch_size=plan.scheme.m, n_samples=n, seeded=bool(source.seeded), extra=extra,
    )
