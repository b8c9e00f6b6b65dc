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
  :mod:`privtune.optim._line_search_accounting`.

Losses outside ``[0, C_obj]`` (including NaN) and non-finite per-example
gradients are clipped or zeroed row by row, so the declared sensitivities hold
whatever the objective returns.

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
  :data:`privtune.optim._line_search_accounting.MAX_WOR_ORDER`); at
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from privtune.accounting.accountant import Accountant, compose_events
from privtune.accounting.events import PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms.gaussian import Gaussian
from privtune.mechanisms.sparse_vector import SparseVector
from privtune.optim import _line_search_accounting as acc
from privtune.optim._losses import MarginLoss, clip_rows, get_loss
from privtune.utils._random import RandomSource, check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

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
#: without the trust region (docs/papers/seed003_chen_lee.md): 1/L to 2/L is slightly better for logistic
#: regression on small noisy problems, 8/L or more for the smoothed hinge, whose bound ``L = 1/h`` overstates its
#: typical curvature; with the trust region (the default) the cap binds on noisy problems and the factor matters
#: less.
ETA0_FACTOR = 4.0
_MODES = ("adaptive", "fixed")
_NOISES = ("laplace", "gaussian")
_STRATEGIES = ("adaptive", "none", "always")
_INITIAL = ("calibrated", "paper")
_FAILURES = ("zero", "smallest")


# ----------------------------------------------------------------------------- the objective protocol
@runtime_checkable
class PerExampleObjective(Protocol):
    """What :func:`dp_blsgd` needs of a model: per-example data losses and their gradients.

    Attributes
    ----------
    n_samples : int
        Number of rows (public).
    n_params : int
        Length of the flat parameter vector ``w`` (public).

    Notes
    -----
    ``per_example_gradients(w, idx)`` returns an array of shape
    ``(len(idx), n_params)``: the gradient of each example's **data** loss at
    ``w`` (no regulariser, not clipped). ``per_example_losses(w, idx)`` returns
    shape ``(len(idx),)``: each example's data loss at ``w``, which must be
    ``>= 0`` (no regulariser, not clipped). An objective may also define

    * ``smoothness``: a declared, public bound on the smoothness of the mean
      data loss, used only for the default ``eta0``;
    * ``gradient_bound``: a declared, public bound on every per-example
      gradient's L2 norm, **enforced by the objective** (e.g. by clipping rows
      to a declared norm); :func:`dp_blsgd` then clips gradients at
      ``min(clip_grad, gradient_bound)``, which changes nothing in the data
      term and lowers the noise (the events are relative to the sensitivity,
      so the charge is unchanged), and uses it as the losses' Lipschitz
      constant for the trust region (``trust_region``);
    * ``validate()``: reads and checks the data; :func:`dp_blsgd` calls it
      after the budget check and before the charge.
    """

    n_samples: int
    n_params: int

    def per_example_gradients(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray: ...

    def per_example_losses(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray: ...


class MarginObjective:
    r"""A linear model with a margin loss ``phi(y_i x_i^T w)`` as a :class:`PerExampleObjective`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Sensitive rows. Only ``X.shape`` is read at construction; values are read
        by :meth:`validate` (called by :func:`dp_blsgd` after the budget check)
        or at the first loss or gradient.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    loss : {"logistic", "smoothed_hinge"}, default="logistic"
        ``log(1 + e**-m)``, or the Huber-smoothed hinge of width ``smoothing``
        (:class:`privtune.optim._losses.MarginLoss`).
    smoothing : float in (0, inf), default=0.5
        Width ``h`` of the smoothed hinge: quadratic on ``(1 - h, 1)``, zero above
        1. The paper's Huberized hinge with ``hbar`` is quadratic on
        ``[1 - hbar, 1 + hbar]``, i.e. privtune's with ``h = 2 hbar`` applied to
        ``m - hbar``; ``h = 0.5`` is the value the paper names.
    data_norm : float in (0, inf) or None, default=None
        Declared bound on the L2 norm of every row; rows above it are scaled
        down to it when the data is read. ``None``: the caller has bounded the
        rows (or not); DP-BLSGD's sensitivities come from gradient and loss
        clipping and do not need this bound. It gives the public smoothness
        bound used for the default step size.

    Attributes
    ----------
    n_samples, n_params : int
    smoothness : float or None
        ``sup phi'' * data_norm**2`` (1/4 for logistic, ``1/h`` for the smoothed
        hinge), or None without ``data_norm``.

    Notes
    -----
    Per-example gradient ``phi'(m_i) y_i x_i``; loss ``phi(m_i) >= 0``. No
    intercept: append a constant column to ``X`` for one.
    """

    def __init__(self, X: Any, y: Any, loss: str = "logistic", *, smoothing: float = 0.5,
                 data_norm: float | None = None) -> None:
        owner = "MarginObjective"
        shape = getattr(X, "shape", None)
        if shape is None:
            shape = np.shape(X)
        if len(shape) != 2 or int(shape[0]) < 1 or int(shape[1]) < 1:
            raise InvalidParameterError(f"The 'X' parameter of {owner} must be a non-empty 2-D array; got shape "
                                        f"{tuple(shape)}.")
        self.n_samples = int(shape[0])
        self.n_params = int(shape[1])
        h = check_real(smoothing, "smoothing", low=0.0, owner=owner)
        self.loss: MarginLoss = get_loss(loss, h, owner)
        self.data_norm = None if data_norm is None else check_real(data_norm, "data_norm", low=0.0, owner=owner)
        self._X, self._y = X, y
        self._U: np.ndarray | None = None
        self._z: np.ndarray | None = None

    @property
    def smoothness(self) -> float | None:
        if self.data_norm is None:
            return None
        return self.loss.curvature_bound() * self.data_norm**2

    @property
    def gradient_bound(self) -> float | None:
        """``sup |phi'| * data_norm`` (= ``data_norm``): every per-example gradient's L2 norm is at most this."""
        return self.data_norm

    def validate(self) -> None:
        """Read the data: refuse NaN/inf and labels other than -1/+1, clip rows to ``data_norm``."""
        if self._U is not None:
            return
        owner = "MarginObjective"
        try:
            U = np.array(self._X, dtype=np.float64)
            z = np.array(self._y, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"'X' and 'y' passed to {owner} must be arrays of real numbers.") from None
        if U.shape != (self.n_samples, self.n_params):
            raise InvalidParameterError(f"The 'X' parameter of {owner} changed shape while being read.")
        if not np.all(np.isfinite(U)):
            raise InvalidParameterError(f"The 'X' parameter of {owner} contains NaN or infinite values.")
        if z.ndim != 1 or z.shape[0] != self.n_samples:
            raise InvalidParameterError(f"The 'y' parameter of {owner} must be 1-D with one label per row of X "
                                        f"({self.n_samples}); got shape {z.shape}.")
        if not np.all((z == 1.0) | (z == -1.0)):
            raise InvalidParameterError(f"The 'y' parameter of {owner} must contain only the labels -1 and +1.")
        if self.data_norm is not None:
            U = clip_rows(U, math.sqrt(self.n_params) * self.data_norm, self.data_norm, mode="rows", owner=owner)
        self._U, self._z = U, z

    def _rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.validate()
        return self._U[idx], self._z[idx]  # type: ignore[index]

    def per_example_gradients(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``phi'(y_i x_i^T w) y_i x_i`` for the rows ``idx``, shape ``(len(idx), n_params)``."""
        U, z = self._rows(idx)
        coef = self.loss.derivative(z * (U @ w)) * z
        return coef[:, None] * U

    def per_example_losses(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``phi(y_i x_i^T w)`` for the rows ``idx``, shape ``(len(idx),)``."""
        U, z = self._rows(idx)
        return self.loss.value(z * (U @ w))

    def __repr__(self) -> str:
        return (f"MarginObjective(n_samples={self.n_samples}, n_params={self.n_params}, loss={self.loss.name!r}, "
                f"data_norm={self.data_norm!r})")


# ----------------------------------------------------------------------------- results
def _readonly(a: Any) -> np.ndarray:
    out = np.array(a, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class LineSearchOutcome:
    """Result of one :func:`noisy_backtracking_line_search` call.

    Attributes
    ----------
    eta : float
        The released step size: the first candidate that passed the noisy
        Armijo test, 0 for a failed search (``on_failure="zero"``), or
        ``backtrack**max_backtracks * eta0`` (``on_failure="smallest"``).
    accepted : bool
        Whether a candidate passed (implied by ``eta``).
    event : PrivacyEvent
        The privacy event of the call on its rows (not amplified).
    """

    eta: float
    accepted: bool
    event: PrivacyEvent


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


# ----------------------------------------------------------------------------- data access (internal)
def _clipped_gradient_mean(objective: Any, w: np.ndarray, idx: np.ndarray, clip: float, divisor: float,
                           d: int) -> np.ndarray:
    """``(1/divisor) sum_idx clip(grad l_i(w), clip)``; non-finite rows count as zero (row isolation)."""
    if idx.size == 0:
        return np.zeros(d)
    G = np.asarray(objective.per_example_gradients(w, idx), dtype=np.float64)
    if G.shape != (idx.size, d):
        raise InvalidParameterError(
            "per_example_gradients of the objective must return an array of shape (len(idx), n_params).")
    bad = ~np.all(np.isfinite(G), axis=1)
    if bad.any():
        G = np.where(bad[:, None], 0.0, G)
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    with np.errstate(divide="ignore"):
        factor = np.minimum(1.0, clip / np.where(norms > 0.0, norms, 1.0))
    return (factor @ G) / divisor


def _clipped_loss_mean(objective: Any, w: np.ndarray, idx: np.ndarray, clip: float, divisor: float) -> float:
    """``(1/divisor) sum_idx min(max(l_i(w), 0), clip)``; NaN counts as ``clip`` (row isolation)."""
    if idx.size == 0:
        return 0.0
    L = np.asarray(objective.per_example_losses(w, idx), dtype=np.float64).reshape(-1)
    if L.shape != (idx.size,):
        raise InvalidParameterError("per_example_losses of the objective must return an array of shape (len(idx),).")
    L = np.clip(np.where(np.isnan(L), clip, L), 0.0, clip)
    return float(L.sum()) / divisor


def _armijo_slacks(objective: Any, w: np.ndarray, g: np.ndarray, idx: np.ndarray, etas: Any, *, clip_obj: float,
                   divisor: float, l2: float, armijo: float, limit: float) -> Any:
    """Lazily yield the Armijo slack of each candidate (mean form, regulariser outside the clipping).

    ``F_B(w) - armijo eta ||g||**2 - F_B(w - eta g)``, clipped to ``[-limit, limit]``
    (1-Lipschitz: the sensitivity is unchanged). Both evaluations use ``idx``.
    """
    gg = float(g @ g)
    f0 = _clipped_loss_mean(objective, w, idx, clip_obj, divisor) + 0.5 * l2 * float(w @ w)
    for eta in etas:
        v = w - eta * g
        f1 = _clipped_loss_mean(objective, v, idx, clip_obj, divisor) + 0.5 * l2 * float(v @ v)
        q = f0 - armijo * eta * gg - f1
        yield float(np.clip(q, -limit, limit)) if math.isfinite(q) else -limit


class _Search:
    """One NOISYBTLS configuration (internal): the candidates and the noise of a call."""

    def __init__(self, *, noise: str, budget: float, sensitivity: float, eta0: float, backtrack: float,
                 max_backtracks: int, on_failure: str, source: RandomSource) -> None:
        if noise == "laplace":
            self.mech: Any = SparseVector(epsilon=budget, sensitivity=sensitivity, threshold=0.0,
                                          random_state=source)
            self.limit = math.ldexp(self.mech.grid_spacing, 48)
        else:
            self.mech = acc.GaussianSparseVector(budget, sensitivity, source)
            self.limit = self.mech.query_limit()
        self.etas = [eta0 * backtrack**i for i in range(max_backtracks)]
        self.fallback = eta0 * backtrack**max_backtracks if on_failure == "smallest" else 0.0

    def run(self, objective: Any, w: np.ndarray, g: np.ndarray, idx: np.ndarray, *, clip_obj: float,
            divisor: float, l2: float, armijo: float) -> tuple[float, bool]:
        slacks = _armijo_slacks(objective, w, g, idx, self.etas, clip_obj=clip_obj, divisor=divisor, l2=l2,
                                armijo=armijo, limit=self.limit)
        index = self.mech.run(slacks)
        if index is None:
            return self.fallback, False
        return self.etas[index], True


def _angle(u: np.ndarray, v: np.ndarray) -> float:
    """Angle between two released vectors, in degrees (90 if either is zero)."""
    nu, nv = float(np.linalg.norm(u)), float(np.linalg.norm(v))
    if nu == 0.0 or nv == 0.0:
        return 90.0
    return math.degrees(math.acos(max(-1.0, min(1.0, float(u @ v) / (nu * nv)))))


# ----------------------------------------------------------------------------- NOISYBTLS (public)
def noisy_backtracking_line_search(
    objective: PerExampleObjective, w: Any, direction: Any, *, budget: float, noise: str = "laplace",
    rows: Any = None, divisor: float | None = None, relation: str = "replace_one", clip_obj: float = 1.0,
    l2: float = 0.0, armijo: float = 0.5, backtrack: float = 0.8, max_backtracks: int = 10, eta0: float = 1.0,
    on_failure: str = "zero", accountant: Accountant | None = None, random_state: Any = None,
    phase: str = "training",
) -> LineSearchOutcome:
    r"""NOISYBTLS (Chen & Lee, Alg. 1): a private backtracking line search along a released direction.

    Tests the candidates ``eta0 backtrack**i`` (``i = 0 .. max_backtracks - 1``)
    with AboveThreshold on the Armijo slack
    ``F_B(w) - armijo eta ||d||**2 - F_B(w - eta d)`` against the public threshold
    0, where ``F_B(v) = (1/divisor) sum_rows min(l_i(v), clip_obj) + (l2/2)||v||**2``,
    and releases the first candidate that passes.

    Parameters
    ----------
    objective : PerExampleObjective
    w : array-like of shape (n_params,)
        The current point (public or released).
    direction : array-like of shape (n_params,)
        The search direction ``d``; must be public or already released (a noisy
        gradient): ``||d||**2`` enters the query unprotected.
    budget : float in (0, inf)
        ``eps_BT`` (Laplace) or ``rho_BT`` (Gaussian).
    noise : {"laplace", "gaussian"}, default="laplace"
    rows : array-like of int or None, default=None
        The rows of the batch (public indices); None is every row.
    divisor : float in (0, inf) or None, default=None
        The public divisor of the batch mean; None is ``len(rows)``. Never pass a
        realised Poisson batch size: pass ``q n``.
    relation : {"replace_one", "add_remove"}, default="replace_one"
        Sensitivity ``2 clip_obj / divisor`` (replace-one) or ``clip_obj / divisor``.
    clip_obj, l2, armijo, backtrack, max_backtracks, eta0
        Loss clipping ``C_obj``, regulariser, ``alpha`` in (0, 1), ``beta`` in
        (0, 1), number of candidates (1 to 100), first candidate.
    on_failure : {"zero", "smallest"}, default="zero"
        Release 0 (Alg. 1) or ``backtrack**max_backtracks * eta0`` (the paper's
        NN mode) when no candidate passes.
    accountant : Accountant or None, default=None
        If given, the call's event is checked and charged before any data access.
    random_state : None, int, Generator or RandomSource, default=None
        ``None``: secure noise. An int: reproducible, not for release.
    phase : str, default="training"

    Returns
    -------
    LineSearchOutcome

    Raises
    ------
    InvalidParameterError
        For a bad parameter (nothing spent).
    BudgetExceededError
        If the accountant cannot pay (nothing read, nothing spent).

    Notes
    -----
    **Privacy.** Under ``relation`` the Armijo slack moves by at most
    ``Delta_q = f clip_obj / divisor`` (``f = 2`` replace-one, 1 add/remove)
    when one row of the batch changes: each row's term
    ``min(l_i(w), C) - min(l_i(w - eta d), C)`` lies in ``[-C, C]`` (spec App. A;
    losses outside ``[0, C]`` or NaN are clipped) and the regulariser and
    ``armijo eta ||d||**2`` are public. Laplace: threshold noise
    ``Lap(2 Delta_q / eps)`` drawn once per call, fresh ``Lap(4 Delta_q / eps)`` per
    candidate (:class:`privtune.mechanisms.SparseVector`): the call is pure
    ``eps``-DP whatever ``max_backtracks`` (Thm 1); event
    ``SparseVectorEvent(eps)``. Gaussian: ``a rho + log(max_backtracks + 1)/(a - 1)``
    RDP (Zhu & Wang 2020; the paper's Thm 3 drops the log term), stated as a
    ``RenyiEvent``. Only ``eta`` is released. The event is that of the mechanism
    on the given rows (no amplification is claimed for a random choice of rows).
    """
    owner = "noisy_backtracking_line_search"
    kind = _choice(noise, "noise", _NOISES, owner)
    budget = check_real(budget, "budget", low=0.0, owner=owner)
    rel = _choice(relation, "relation", ("replace_one", "add_remove"), owner)
    fail = _choice(on_failure, "on_failure", _FAILURES, owner)
    c_obj = check_real(clip_obj, "clip_obj", low=0.0, owner=owner)
    lam = check_real(l2, "l2", low=0.0, closed="left", owner=owner)
    alpha = check_real(armijo, "armijo", low=0.0, high=1.0, owner=owner)
    beta = check_real(backtrack, "backtrack", low=0.0, high=1.0, owner=owner)
    k = check_integer(max_backtracks, "max_backtracks", low=1, high=100, owner=owner)
    e0 = check_real(eta0, "eta0", low=0.0, owner=owner)
    n, d = _objective_shape(objective, owner)
    wv = _vector(w, d, "w", owner)
    dv = _vector(direction, d, "direction", owner)
    if rows is None:
        idx = np.arange(n)
    else:
        idx = np.asarray(rows)
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 \
                or idx.max() >= n:
            raise InvalidParameterError(f"The 'rows' parameter of {owner} must be a non-empty 1-D array of row "
                                        f"indices in [0, {n}).")
    div = float(idx.size) if divisor is None else check_real(divisor, "divisor", low=0.0, owner=owner)
    if accountant is not None and not isinstance(accountant, Accountant):
        raise InvalidParameterError(f"The 'accountant' parameter of {owner} must be a privtune Accountant or None.")
    source = check_random_state(random_state, owner=owner)
    scheme = acc.Scheme("full", n, n, 1.0, div, rel)
    sens = scheme.sensitivity(c_obj)
    search = _Search(noise=kind, budget=budget, sensitivity=sens, eta0=e0, backtrack=beta, max_backtracks=k,
                     on_failure=fail, source=source)
    event = acc.search_event(scheme, kind, budget, k + 1)
    if accountant is not None:
        accountant.check(event)
        validate = getattr(objective, "validate", None)
        if callable(validate):
            validate()
        accountant.spend(event, phase=phase, role="training")
    eta, accepted = search.run(objective, wv, dv, idx, clip_obj=c_obj, divisor=div, l2=lam, armijo=alpha)
    return LineSearchOutcome(eta=float(eta), accepted=accepted, event=event)


# ----------------------------------------------------------------------------- validation helpers
def _choice(value: Any, name: str, choices: tuple[str, ...], owner: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be one of {list(choices)}. Got {value!r} instead.")
    return value


def _objective_shape(objective: Any, owner: str) -> tuple[int, int]:
    if not isinstance(objective, PerExampleObjective):
        raise InvalidParameterError(
            f"The 'objective' parameter of {owner} must provide n_samples, n_params, per_example_gradients "
            f"and per_example_losses (the PerExampleObjective protocol). Got {type(objective).__name__}.")
    n = check_integer(objective.n_samples, "objective.n_samples", low=1, owner=owner)
    d = check_integer(objective.n_params, "objective.n_params", low=1, owner=owner)
    return n, d


def _vector(value: Any, d: int, name: str, owner: str) -> np.ndarray:
    try:
        v = np.array(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be an array of floats.") from None
    if v.shape != (d,) or not np.all(np.isfinite(v)):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a finite 1-D array of length {d}.")
    return v


# ----------------------------------------------------------------------------- the plan (public quantities only)
_DEFAULTS: dict[str, Any] = dict(
    mode="adaptive", sampling="without_replacement", batch_fraction=0.1, clip_grad=3.0, clip_obj=1.0, l2=1e-3,
    armijo=0.5, backtrack=0.8, max_backtracks=10, eta0=None, line_search_noise="laplace", budget_increase=0.3,
    phi_max=1.1, phi_min=0.5, psi=0.8, reset_every=10, reset_factor=1.2, adaptive_clipping=False, clip_decay=0.05,
    expected_iter=50, n_iter=None, line_search_share=0.1, budget_strategy="adaptive", initial_budget="calibrated",
)


class _Plan:
    """Everything decided from public quantities before the data is read (internal)."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _make_plan(n: int, params: dict[str, Any], owner: str) -> _Plan:
    p = dict(_DEFAULTS)
    unknown = set(params) - set(_DEFAULTS) - {"epsilon", "delta"}
    if unknown:
        raise InvalidParameterError(f"{owner} got unexpected parameter(s) {sorted(unknown)}.")
    p.update(params)
    if "epsilon" not in p or "delta" not in p:
        raise InvalidParameterError(f"{owner} needs 'epsilon' and 'delta'.")
    eps = check_epsilon(p["epsilon"], owner=owner)
    dlt = check_delta(p["delta"], owner=owner, allow_zero=False)
    mode = _choice(p["mode"], "mode", _MODES, owner)
    sampling = _choice(p["sampling"], "sampling", acc.SAMPLINGS, owner)
    noise = _choice(p["line_search_noise"], "line_search_noise", _NOISES, owner)
    strategy = _choice(p["budget_strategy"], "budget_strategy", _STRATEGIES, owner)
    rule = _choice(p["initial_budget"], "initial_budget", _INITIAL, owner)
    high_q = "right" if sampling == "without_replacement" else "neither"
    q = check_real(p["batch_fraction"], "batch_fraction", low=0.0, high=1.0, closed=high_q, owner=owner)
    c_grad = check_real(p["clip_grad"], "clip_grad", low=0.0, owner=owner)
    c_obj = check_real(p["clip_obj"], "clip_obj", low=0.0, owner=owner)
    lam = check_real(p["l2"], "l2", low=0.0, closed="left", owner=owner)
    alpha = check_real(p["armijo"], "armijo", low=0.0, high=1.0, owner=owner)
    beta = check_real(p["backtrack"], "backtrack", low=0.0, high=1.0, owner=owner)
    k = check_integer(p["max_backtracks"], "max_backtracks", low=1, high=100, owner=owner)
    eta0 = None if p["eta0"] is None else check_real(p["eta0"], "eta0", low=0.0, owner=owner)
    xi = check_real(p["budget_increase"], "budget_increase", low=0.0, owner=owner)
    phi_max = check_real(p["phi_max"], "phi_max", low=1.0, closed="left", owner=owner)
    phi_min = check_real(p["phi_min"], "phi_min", low=0.0, high=1.0, closed="right", owner=owner)
    psi = check_real(p["psi"], "psi", low=0.0, high=1.0, closed="left", owner=owner)
    tau = None if p["reset_every"] is None else check_integer(p["reset_every"], "reset_every", low=1, owner=owner)
    sigma = check_real(p["reset_factor"], "reset_factor", low=0.0, owner=owner)
    if not isinstance(p["adaptive_clipping"], bool):
        raise InvalidParameterError(f"The 'adaptive_clipping' parameter of {owner} must be a bool.")
    ac = p["adaptive_clipping"]
    zeta = check_real(p["clip_decay"], "clip_decay", low=0.0, high=1.0, owner=owner)
    big_e = check_integer(p["expected_iter"], "expected_iter", low=1, high=100_000, owner=owner)
    n_iter = None if p["n_iter"] is None else check_integer(p["n_iter"], "n_iter", low=1, high=1_000_000,
                                                              owner=owner)
    share = check_real(p["line_search_share"], "line_search_share", low=0.0, high=1.0, owner=owner)
    if noise == "gaussian" and sampling != "full":
        raise InvalidParameterError(
            f"line_search_noise='gaussian' of {owner} needs sampling='full': the sound RDP of the Gaussian line "
            "search carries a log(max_backtracks + 1)/(a - 1) term (the paper's Thm 3 omits it) that destroys "
            "the amplification by subsampling. Use the Laplace line search (pure eps_BT, amplified tightly).")
    if mode == "fixed":
        if n_iter is None:
            raise InvalidParameterError(f"mode='fixed' of {owner} needs n_iter (the fixed number of iterations).")
        if ac:
            raise InvalidParameterError(
                f"adaptive_clipping=True of {owner} needs mode='adaptive' (clipping decays when CHEB raises the "
                "gradient budget; mode='fixed' has no CHEB).")
    scheme = acc.Scheme.build(sampling, n, q)
    label = f"Chen & Lee DP-BLSGD ({mode}, {sampling}, batch {scheme.m} of {n})"
    common = dict(eps=eps, delta=dlt, mode=mode, scheme=scheme, noise=noise, strategy=strategy, rule=rule,
                  c_grad=c_grad, c_obj=c_obj, l2=lam, armijo=alpha, backtrack=beta, max_backtracks=k, eta0=eta0,
                  xi=xi, phi_max=phi_max, phi_min=phi_min, psi=psi, reset_every=tau, reset_factor=sigma, ac=ac,
                  zeta=zeta, expected_iter=big_e, n_iter=n_iter, share=share, n_outputs=k + 1)
    if mode == "fixed":
        fp = acc.calibrate_fixed(scheme, noise, k + 1, eps, dlt, n_iter, share, label)
        return _Plan(**common, fixed=fp, adaptive=None, charged=fp.charged, rho0=fp.rho_grad,
                     search0=fp.search_budget)
    ap = acc.calibrate_adaptive(scheme, noise, k + 1, eps, dlt, big_e, rule, label)
    e = ap.iteration_budget
    return _Plan(**common, fixed=None, adaptive=ap, charged=ap.charged, rho0=0.5 * e * e,
                 search0=e if noise == "laplace" else 0.5 * e * e)


def _check_grids(plan: _Plan, d: int, source: RandomSource) -> None:
    """Build the first mechanisms (their exact grids must exist) before anything is spent.

    Budgets only grow and clipping thresholds scale the sensitivity and the noise
    together, so later grids exist whenever the first ones do.
    """
    sens_g = plan.scheme.sensitivity(plan.c_grad)
    Gaussian.from_noise_multiplier(acc.noise_multiplier(plan.rho0), sensitivity=sens_g,
                                   random_state=source).grid_spacing(d)
    _Search(noise=plan.noise, budget=plan.search0, sensitivity=plan.scheme.sensitivity(plan.c_obj), eta0=1.0,
            backtrack=plan.backtrack, max_backtracks=plan.max_backtracks, on_failure="zero", source=source)


def _plan_epsilon(plan: _Plan) -> float:
    return compose_events([plan.charged], delta=plan.delta, relation=plan.scheme.relation).epsilon


# ----------------------------------------------------------------------------- the run
class _Runner:
    """The DP-BLSGD loop (internal): every data access goes through a mechanism paid to the filter first."""

    def __init__(self, plan: _Plan, objective: Any, w0: np.ndarray, eta0: float, source: RandomSource,
                 lipschitz: float | None = None) -> None:
        self.plan, self.obj, self.source = plan, objective, source
        self.lipschitz = lipschitz  # declared per-example Lipschitz bound of the loss (trust region), or None
        self.d = w0.shape[0]
        self.rng = source.numpy_generator()  # batch selection (never released)
        self.w = w0.copy()
        self.eta0 = eta0
        self.events: list[PrivacyEvent] = []
        self.final: dict[str, float] = {}

    def batch(self) -> np.ndarray:
        s = self.plan.scheme
        if s.sampling == "full":
            return np.arange(s.n)
        if s.sampling == "without_replacement":
            return np.sort(self.rng.choice(s.n, size=s.m, replace=False))
        return np.flatnonzero(self.rng.random(s.n) < s.rate)

    def gradient(self, rho: float, clip: float) -> np.ndarray:
        """A fresh batch, the clipped mean, exact Gaussian noise; the public ``l2 w`` added after."""
        s = self.plan.scheme
        idx = self.batch()
        mean = _clipped_gradient_mean(self.obj, self.w, idx, clip, s.divisor, self.d)
        mech = Gaussian.from_noise_multiplier(acc.noise_multiplier(rho), sensitivity=s.sensitivity(clip),
                                              random_state=self.source)
        return np.asarray(mech.randomise(mean), dtype=np.float64).reshape(-1) + self.plan.l2 * self.w

    def first_candidate(self, g: np.ndarray, clip_obj: float) -> float:
        """``eta0``, capped at ``clip_obj / (G ||g||)`` when the loss is declared G-Lipschitz (trust region).

        A step of length at most ``clip_obj / G`` moves every example's loss by at
        most ``clip_obj``, the range the clipped Armijo test can see. Public: ``g``
        is released and ``G`` declared.
        """
        norm = float(np.linalg.norm(g))
        if self.lipschitz is None or norm == 0.0:
            return self.eta0
        return min(self.eta0, clip_obj / (self.lipschitz * norm))

    def search(self, g: np.ndarray, budget: float, clip_obj: float, on_failure: str) -> tuple[float, bool]:
        p = self.plan
        srch = _Search(noise=p.noise, budget=budget, sensitivity=p.scheme.sensitivity(clip_obj),
                       eta0=self.first_candidate(g, clip_obj),
                       backtrack=p.backtrack, max_backtracks=p.max_backtracks, on_failure=on_failure,
                       source=self.source)
        return srch.run(self.obj, self.w, g, self.batch(), clip_obj=clip_obj, divisor=p.scheme.divisor, l2=p.l2,
                        armijo=p.armijo)

    def run(self) -> dict[str, Any]:
        p = self.plan
        rec: dict[str, list[Any]] = {k: [] for k in ("iterates", "steps", "eta0s", "grads", "rho", "search",
                                                      "clip_grad", "clip_obj")}
        rec["iterates"].append(self.w.copy())
        counts = dict(n_ls=0, n_cheb=0, n_failed=0)
        if p.mode == "fixed":
            flt = None
            self._run_fixed(rec, counts)
        else:
            ap = p.adaptive
            flt = acc.ZcdpFilter(ap.cap) if ap.filter_kind == "zcdp" else acc.RenyiFilter(ap.order, ap.cap)
            self._run_adaptive(flt, rec, counts)
        return dict(rec=rec, counts=counts, filter=flt)

    def _record(self, rec: dict[str, list[Any]], eta: float, g: np.ndarray, rho: float, budget: float, cg: float,
                co: float, eta0: float) -> None:
        rec["iterates"].append(self.w.copy())
        rec["steps"].append(eta)
        rec["eta0s"].append(eta0)
        rec["grads"].append(g)
        rec["rho"].append(rho)
        rec["search"].append(budget)
        rec["clip_grad"].append(cg)
        rec["clip_obj"].append(co)

    def _reset_eta0(self, t: int, omega: list[float]) -> None:
        """Intelligent backtracking: every ``reset_every`` iterations, ``eta0 <- min(factor max(Omega), eta0)``."""
        tau = self.plan.reset_every
        if tau is not None and t % tau == 0:
            if omega:
                self.eta0 = min(self.plan.reset_factor * max(omega), self.eta0)
            omega.clear()

    def _run_fixed(self, rec: dict[str, list[Any]], counts: dict[str, int]) -> None:
        p, fp = self.plan, self.plan.fixed
        omega: list[float] = []
        for t in range(p.n_iter):
            eta0 = self.eta0
            self.events.append(fp.gradient)
            g = self.gradient(fp.rho_grad, p.c_grad)
            self.events.append(fp.search)
            counts["n_ls"] += 1
            eta, ok = self.search(g, fp.search_budget, p.c_obj, "smallest")
            if ok:
                omega.append(eta)
            else:
                counts["n_failed"] += 1
            self.w = self.w - eta * g
            self._record(rec, eta, g, fp.rho_grad, fp.search_budget, p.c_grad, p.c_obj, eta0)
            self._reset_eta0(t + 1, omega)

    def _run_adaptive(self, flt: Any, rec: dict[str, list[Any]], counts: dict[str, int]) -> None:
        p, s = self.plan, self.plan.scheme
        rho, budget, cg, co = p.rho0, p.search0, p.c_grad, p.c_obj
        theta_bar, g_prev = 90.0, None
        omega: list[float] = []
        t = 0
        while p.n_iter is None or t < p.n_iter:
            ev_g = acc.gradient_event(s, rho)
            if not flt.fits(ev_g, acc.search_event(s, p.noise, budget, p.n_outputs)):
                break  # the next gradient and its line search would not fit the filter
            rho_start, budget_start, cg_start, co_start, eta0 = rho, budget, cg, co, self.eta0
            flt.pay(ev_g)
            self.events.append(ev_g)
            g = self.gradient(rho, cg)
            eta, cut, stop = 0.0, False, False
            while True:
                ev_s = acc.search_event(s, p.noise, budget, p.n_outputs)
                if not flt.fits(ev_s):
                    stop = True
                    break
                flt.pay(ev_s)
                self.events.append(ev_s)
                counts["n_ls"] += 1
                eta, _ = self.search(g, budget, co, "zero")
                if eta > 0.0:
                    self.w = self.w - eta * g
                    omega.append(eta)
                    if g_prev is not None:
                        theta_bar = p.psi * theta_bar + (1.0 - p.psi) * _angle(g, g_prev)
                    g_prev = g
                    break
                counts["n_failed"] += 1
                ev_c = acc.gradient_event(s, rho)  # CHEB's gradient, at the old rho_grad (P10)
                if not flt.fits(ev_c, ev_s):
                    stop = True
                    break
                flt.pay(ev_c)
                self.events.append(ev_c)
                counts["n_cheb"] += 1
                g2 = self.gradient(rho, cg)
                raise_grad = raise_search = False
                if p.strategy == "always":
                    raise_grad = True
                elif p.strategy == "adaptive":
                    theta = _angle(g, g2)
                    if float(g @ g2) < 0.0 or theta > p.phi_max * theta_bar:
                        raise_grad = True
                    elif theta < p.phi_min * theta_bar:
                        raise_search = True
                if raise_grad:
                    rho *= 1.0 + p.xi
                    if p.ac and not cut:  # eq. (9): at most once per SGD update
                        cg *= 1.0 - p.zeta
                        co *= 1.0 - p.zeta
                        cut = True
                if raise_search:
                    budget *= 1.0 + p.xi
                g = 0.5 * (g + g2)
            self._record(rec, eta, g, rho_start, budget_start, cg_start, co_start, eta0)
            t += 1
            self._reset_eta0(t, omega)
            if stop:
                break
        self.final = dict(final_rho_grad=rho, final_search_budget=budget, final_clip_grad=cg, final_clip_obj=co)


def _declared(objective: Any, name: str) -> float | None:
    """A positive finite public bound the objective declares (``smoothness``, ``gradient_bound``), else None."""
    value = getattr(objective, name, None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


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
        a budget that cannot pay for one iteration, or bad data (NaN/inf, bad
        labels); nothing is spent.
    BudgetExceededError
        If the accountant cannot pay for the run; raised before any value is
        read, with nothing spent.

    Notes
    -----
    **Privacy.** ``(epsilon, delta)``-DP under **replace-one** for
    ``sampling="without_replacement"`` (default) and ``"full"``, under
    **add/remove** for ``"poisson"``. Public: ``n``, ``n_params``, ``w0``, every
    hyperparameter. Events per mechanism call (each on a fresh batch):
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
    ``accountant.check`` while only the objective's public sizes were read, then
    the data validation, before the first data access. Deviations from the paper
    and the full argument: module docstring.

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
    validate = getattr(objective, "validate", None)
    if callable(validate):
        validate()
    if accountant is not None:
        accountant.spend(plan.charged, phase=phase, role="training")  # write-ahead, before the first gradient
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
