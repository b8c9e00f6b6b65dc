r"""DP (accelerated) gradient methods of Kuru et al. (2022): pure epsilon-DP, plus a Gaussian variant.

The functions here minimise the L2-regularised empirical risk of a linear model
with a margin loss (logistic or smoothed hinge),

.. math:: F(w) = \frac1n \sum_{i=1}^n \phi(z_i u_i^\top w) + \frac{\alpha}{2}\|w\|_2^2,
   \qquad z_i \in \{-1, +1\},

by releasing, at each step, a (mini-batch) gradient plus Laplace noise, and
running gradient descent (DP-GD), heavy ball (DP-HB), Nesterov's accelerated
gradient (DP-NAG), or the multistage accelerated method (DP-MASG) on the noisy
gradients. The ``*-opt`` variants split the budget non-uniformly
(``eps_t`` proportional to ``a_{T,t}**(1/3)``) and choose the number of steps by
minimising the paper's error bound, both from public constants only.

Every function builds **all** its privacy events before touching the data,
calls ``accountant.check`` on their composition while only the (public) shape of
``X`` has been read, then charges the composed event **once, up front** with
``accountant.spend`` (write-ahead: before any value of ``X`` or ``y`` is read).
Values are then mapped into the domain, never refused for what they are (a
refusal that depends on a row is a release no charge covers): a non-finite
entry counts as 0, a row whose label is not -1/+1 becomes the zero row, a row
over the declared norm is clipped (:func:`~privtune.optim._losses.map_into_domain`).

Gaussian (zCDP) variant -- **privtune's extension, not from the paper** (spec
section 6, [ours]): ``noise="gaussian"`` with ``delta > 0`` adds exact discrete
Gaussian noise calibrated on the per-step **L2** sensitivity ``2 R_2 / n`` (``R_2``
the declared L2 row bound ``data_norm_l2``, else ``data_norm``; rows are clipped
in L2 only). The whole run is one Gaussian mechanism of multiplier ``nm`` with
``1 / nm**2 = sum_t 1 / nm_t**2``, calibrated through RDP at
``(epsilon (1 - 1e-3), delta)`` (:func:`gaussian_run_multiplier`: the discrete
Gaussian's vector release is proven through RDP, not through the continuous
Gaussian's exact curve); its precision (i.e. zCDP ``rho``) is split
uniformly, or ``rho_t`` proportional to ``a_{T,t}**(1/2)`` for the ``*-opt``
solvers. Full batch only (no accounted amplification for Gaussian steps here).

Deviations from the paper (see the seed-002 spec, P1, P2, P10, P11):

* the Laplace parameter ``b`` is a *scale* (variance ``2 b**2``), not a standard
  deviation as in the authors' code;
* the sensitivity comes from *declared* row-norm bounds enforced by clipping
  (L1, the norm the Laplace mechanism needs), and the smoothness ``L`` from the
  declared bounds (``R_2**2 / 4 + alpha`` for logistic), never from the data;
* the output is chosen by a public rule (last iterate or tail average), never as
  the best iterate by its objective on the data;
* ``horizon="auto"`` (the estimators' default) chooses ``T`` by privtune's
  noise-to-signal rule instead of the paper's bound (``horizon="paper"`` keeps
  the paper's rule; see :func:`privtune.optim.accelerated._schedules.auto_horizon`);
* noise is the exact grid Laplace of :class:`privtune.mechanisms.Laplace`, whose
  scale is ``2**-10`` larger than the textbook one (pays for the rounding);
* the regulariser is ``(alpha/2)||w||^2`` (the paper writes ``lambda ||w||^2``:
  pass ``alpha = 2 lambda`` to reproduce it).

References
----------
.. [KBGY22] N. Kuru, S. I. Birbil, M. Gürbüzbalaban and S. Yıldırım,
   "Differentially Private Accelerated Optimization Algorithms", SIAM J. Optim.
   32(2), 2022, doi:10.1137/20M1355847.
.. [ALKO19] N. S. Aybat, A. Fallah, M. Gürbüzbalaban and A. Ozdaglar, "A Universally
   Optimal Multistage Accelerated Stochastic Gradient Method", NeurIPS 2019.
.. [BBG18] B. Balle, G. Barthe and M. Gaboardi, "Privacy Amplification by
   Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._batched import PredrawnNoise
from privtune.optim._losses import (
    MULTICLASS_LOSSES,
    ClippedRows,
    MarginLoss,
    clip_rows,
    map_into_domain,
    valid_labels,
)
from privtune.optim._result import DPOptimizeResult
from privtune.optim.accelerated._plan import _make_plan, _Plan
from privtune.optim.accelerated._plan import gaussian_run_multiplier as gaussian_run_multiplier  # re-exported
from privtune.utils._validation import entrywise_float, label_entries, public_shape

__all__ = [
    "dp_accelerated",
    "dp_gradient_descent",
    "dp_heavy_ball",
    "dp_nesterov",
    "dp_nesterov_opt",
    "dp_masg",
    "dp_masg_opt",
]

#: Largest number of noise integers drawn ahead at once by the solvers' loop (8 MiB of int64).
_NOISE_BLOCK = 2**20
#: Test-only switch: the noiseless runner refuses to run unless a test sets this to True.
_ALLOW_NOISELESS = False


# ----------------------------------------------------------------------------- validation
def _public_shape(X: Any, owner: str) -> tuple[int, int]:
    """``(n, d)`` read from ``X.shape`` (public under replace-one) without reading any value.

    Also refuses what the *type* of ``X`` says (public): a sparse matrix or a
    complex dtype. Everything about the values is left to after the charge.
    """
    if hasattr(X, "tocsr"):
        raise InvalidParameterError(f"The 'X' parameter of {owner} must be a dense array (sparse input is not "
                                    "supported; use X.toarray()).")
    if getattr(getattr(X, "dtype", None), "kind", None) == "c":
        raise InvalidParameterError(f"The 'X' parameter of {owner} has a complex dtype; real numbers are needed.")
    shape = public_shape(X)  # the structure only: an odd entry cannot make this raise
    if len(shape) != 2:
        raise InvalidParameterError(f"The 'X' parameter of {owner} must be a 2-D array; got {len(shape)} "
                                    "dimension(s).")
    n, d = int(shape[0]), int(shape[1])
    if n < 1 or d < 1:
        raise InvalidParameterError(f"The 'X' parameter of {owner} must not be empty; got shape {(n, d)}.")
    return n, d


def _check_label_shape(y: Any, n: int, owner: str) -> None:
    """Refuse ``y`` unless it is 1-D with one label per row (its shape is public; no value is released)."""
    shape = public_shape(y)
    if len(shape) != 1 or shape[0] != n:
        raise InvalidParameterError(
            f"The 'y' parameter of {owner} must be 1-D with one label per row of X ({n}); got shape {shape}.")


def _read_data(X: Any, y: Any, n: int, d: int, owner: str, n_classes: int | None = None,
               dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (float32 kept as is, see :func:`~privtune.optim._losses.compact_rows`) and ``y``, mapped into the domain.

    ``dtype``: the plan's row dtype (:func:`~privtune.optim._losses.storage_dtype`,
    from the declared bounds); float32 rows are converted (exactly) to float64
    when it is float64, i.e. when the bounds are outside float32's safe range.

    Values are read entry by entry when they have no numeric dtype of their
    own (:func:`~privtune.utils._validation.entrywise_float`: an entry that is
    not a real number, label or feature, becomes NaN) and then mapped, never
    refused (:func:`map_into_domain`). Only a structure that changed while
    being read (a ragged list) is refused.
    """
    single = getattr(X, "dtype", None) == np.float32 and dtype == np.float32
    try:
        if isinstance(X, ClippedRows) and (single or X.dtype == np.float64):
            U = X
        else:  # float32 rows C-contiguous once (the gradient's runs assume it)
            U = np.ascontiguousarray(X, dtype=np.float32) if single else entrywise_float(X)
        z = entrywise_float(y)
    except (TypeError, ValueError):  # a structure numpy cannot hold (ragged nesting)
        raise InvalidParameterError(f"'X' and 'y' passed to {owner} must be rectangular arrays.") from None
    if U.shape != (n, d) or z.shape != (n,):
        raise InvalidParameterError(f"'X' or 'y' passed to {owner} changed shape while being read.")
    if isinstance(U, ClippedRows):  # finite by construction; only the labels can need mapping
        valid = valid_labels(z, n_classes)
        return (U, z) if valid.all() else map_into_domain(np.asarray(U), z, n_classes)
    return map_into_domain(U, z, n_classes)


# ----------------------------------------------------------------------------- the loop
def _execute(plan: _Plan, U: np.ndarray, z: np.ndarray, *, noise: bool) -> DPOptimizeResult:
    T, d, n, m = plan.t_used, plan.d, plan.n, plan.m
    sched = plan.sched
    rng = plan.source.numpy_generator() if m < n else None  # batch selection (not released)
    z = z.astype(U.dtype, copy=False)  # labels in the rows' dtype (float32 rows: float32 products)
    x_prev = plan.w0.copy()
    x = plan.w0.copy()
    iterates = np.empty((T + 1, d))
    iterates[0] = x
    queries = np.empty((T, d))
    grads = np.empty((T, d))
    moms = np.empty(T)
    heavy_ball = plan.solver in ("gd", "hb")
    # the labels are mapped into {-1, +1} (two classes) by _read_data: the margin losses' faster path holds
    gradient = plan.loss._gradient_pm1 if isinstance(plan.loss, MarginLoss) else (
        lambda w, Ub, zb: plan.loss.gradient(w, Ub, zb, 0.0))
    # The noise of every step is data-independent: draw it ahead, one exact-sampler call per distinct
    # noise parameter and block of steps (same law per step as plan.mechs[t].randomise; see
    # privtune.mechanisms._batched). Blocks hold at most _NOISE_BLOCK integers, whatever T and d.
    block = max(1, _NOISE_BLOCK // d)
    stream, first = None, 0
    for t in range(T):
        if noise and t % block == 0:
            stream, first = PredrawnNoise(plan.mechs[t:t + block], d), t
        a, b = float(sched.alphas[t]), float(sched.betas[t])
        if sched.restarts[t]:
            x_prev = x.copy()  # MASG restart: z_t = x_t
            b_used = 0.0
        else:
            b_used = b
        q = x if heavy_ball else x + b * (x - x_prev)
        if rng is not None:
            idx = rng.choice(n, size=m, replace=False)
            g = gradient(q, U[idx], z[idx])
        else:
            g = gradient(q, U, z)
        # Noise goes on the data term only (|g|_1 <= R_1, so it always fits the exact grid); the
        # regulariser's gradient mu q is public (q is) and is added after: same release as the paper's.
        g_tilde = (stream.release(t - first, g) if stream is not None else g) + plan.mu * q
        if heavy_ball:
            x_new = x - a * g_tilde + b * (x - x_prev)
        else:
            x_new = q - a * g_tilde
        x_prev, x = x, x_new
        iterates[t + 1] = x
        queries[t] = q
        grads[t] = g_tilde
        moms[t] = b_used
    extra = {"initial_gap": plan.e0, "data_norm": plan.r1, "data_norm_l2": plan.r2, "noise": noise,
             "max_slope": plan.loss.max_slope, "horizon_rule": plan.horizon_rule}
    if plan.noise == "gaussian":
        extra["noise_multipliers"] = plan.noise_multipliers.copy()
        extra["precision_shares"] = plan.precision_shares.copy()
    if plan.output == "last":
        out = iterates[-1]
    else:
        k = math.ceil(T / 2)
        out = iterates[T + 1 - k:].mean(axis=0)
    return DPOptimizeResult(
        x=out, solver=plan.solver, n_iter=T, horizon=plan.horizon, iterates=iterates, query_points=queries,
        noisy_gradients=grads, step_sizes=sched.alphas, momentums=moms, step_epsilons=plan.step_costs,
        noise_scales=plan.noise_scales, events=plan.events,
        privacy_event=plan.total, epsilon=plan.total_epsilon, sensitivity=plan.sens, batch_size=m,
        n_samples=n, smoothness=plan.smooth, strong_convexity=plan.mu, seeded=bool(plan.source.seeded),
        extra=extra, noise=plan.noise, delta=plan.delta,
    )


def _run(X: Any, y: Any, *, add_noise: bool, accountant: Any, phase: str, **kw: Any) -> DPOptimizeResult:
    owner = kw.pop("owner")
    n, d = _public_shape(X, owner)
    if not isinstance(phase, str):
        raise InvalidParameterError(f"The 'phase' parameter of {owner} must be a str. Got {phase!r} instead.")
    k = kw.get("n_classes")
    multiclass = (kw.get("loss") in MULTICLASS_LOSSES and isinstance(k, (int, np.integer))
                  and not isinstance(k, bool))  # else _make_plan refuses n_classes before anything is read
    plan = _make_plan(n=n, d=d * int(k) if multiclass else d, accountant=accountant, owner=owner, **kw)
    y = label_entries(y)  # a list's entries each read on their own
    _check_label_shape(y, n, owner)
    if accountant is not None:
        accountant.check(plan.total)  # refuses an over-budget run before any value of X is read
        accountant.spend(plan.total, phase=phase, role="training")  # write-ahead, before any value is read
    U, z = _read_data(X, y, n, d, owner, plan.loss.n_classes if multiclass else None, plan.row_dtype)
    U = np.asarray(clip_rows(U, plan.r1, plan.r2, mode=plan.clip, owner=owner))  # a plain view from here on
    return _execute(plan, U, z, noise=add_noise)


def _noiseless_run_for_tests(X: Any, y: Any, **kw: Any) -> DPOptimizeResult:
    """Run a solver **without noise** (not private). Test-only.

    Refuses to run unless the module flag ``_ALLOW_NOISELESS`` has been set to
    True (tests do it with ``monkeypatch``); no public function or estimator
    reaches this path. Nothing is charged to any accountant.
    """
    if not _ALLOW_NOISELESS:
        raise RuntimeError("The noiseless runner is for privtune's tests only; it is not private.")
    kw.setdefault("owner", "_noiseless_run_for_tests")
    return _run(X, y, add_noise=False, accountant=None, phase="test", **_defaults(kw))


def _defaults(kw: dict[str, Any]) -> dict[str, Any]:
    base = dict(solver="nag-opt", data_norm_l2=None, loss="logistic", smoothing=1.0, n_iter=100,
                batch_size=None, step_scale=1.0, initial_gap=None, x0=None, masg_p=1, clip="rows",
                output="last", random_state=None, noise="laplace", delta=None, max_slope=1.0, horizon=None,
                horizon_floor=0.0)
    base.update(kw)
    return base


# ----------------------------------------------------------------------------- public API
def dp_accelerated(
    X: Any, y: Any, *, solver: str = "nag-opt", epsilon: float, alpha: float, data_norm: float,
    data_norm_l2: float | None = None, loss: str = "logistic", smoothing: float = 1.0, n_iter: int = 100,
    batch_size: int | None = None, step_scale: float = 1.0, initial_gap: float | None = None,
    x0: Any = None, masg_p: int = 1, clip: str = "rows", output: str = "last",
    accountant: Accountant | None = None, random_state: Any = None, phase: str = "training",
    noise: str = "laplace", delta: float | None = None, max_slope: float = 1.0, horizon: str | None = None,
    budget_share: float = 1.0, n_classes: int | None = None, horizon_floor: float = 0.0,
) -> DPOptimizeResult:
    r"""Minimise a regularised margin loss with a DP (accelerated) gradient method (Laplace or Gaussian).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Sensitive rows ``u_i``. Its shape is public. A float32 array is used
        in float32 (about twice as fast on large data; a row then counts as
        over a bound beyond ``1 - 2**-20`` times it and is scaled to
        ``1 - 2**-16`` times it, so that float32 rounding cannot lift it above)
        when the declared bounds are inside float32's safe range
        (:func:`privtune.optim._losses.storage_dtype`: roughly ``sqrt(d)
        2**-109`` to ``2**120``, with ``max_slope`` times the bound above
        ``sqrt(d) 2**-102``); anything else is converted to float64. Declared
        bounds outside float64's safe range (``sqrt(d) 2**-400`` to
        ``2**400``, about 4e-121 to 2.6e120) are refused before any charge.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}. Values are mapped, never refused: a row whose label
        is anything else (NaN included) becomes the zero row and contributes
        nothing, and a non-finite entry of ``X`` counts as 0.
    solver : {"gd", "hb", "nag", "nag-opt", "masg", "masg-opt"}, default="nag-opt"
        DP-GD, DP-HB (heavy ball, ``beta`` tied to ``alpha`` as in the paper's
        experiments), DP-NAG, DP-MASG with a uniform budget split, or DP-NAG /
        DP-MASG with the optimal split and the automatic choice of ``T*``.
    epsilon : float in (0, inf)
        Total privacy budget of the run (pure DP, ``delta = 0``).
    alpha : float in (0, inf)
        Regularisation strength: ``F(w) = mean loss + (alpha/2)||w||^2``; also
        the strong-convexity constant ``mu``.
    data_norm : float in (0, inf)
        Declared row-norm bound in the norm the noise needs. Laplace: ``R_1``,
        the **L1** norm of every row; rows above it are scaled down
        (``clip="rows"``) or refused after the charge (``clip="raise"``, a
        release the guarantee does not cover, see ``clip``). Gaussian: the **L2**
        bound ``R_2`` when ``data_norm_l2`` is None; no L1 bound is imposed
        (rows are clipped in L2 only).
    data_norm_l2 : float in (0, inf) or None, default=None
        Optional declared bound ``R_2`` on the L2 norm of every row (enforced
        the same way). Laplace: it tightens the smoothness bound ``L`` (hence
        allows larger steps) and, if ``sqrt(d) R_2 < R_1``, the sensitivity;
        ``None`` uses ``R_2 = R_1``. Gaussian: the L2 bound (overrides
        ``data_norm``).
    loss : {"logistic", "smoothed_hinge", "multinomial", "multiclass_smoothed_hinge"}, default="logistic"
    smoothing : float in (0, inf), default=1.0
        Width ``h`` of the quadratic part of the smoothed hinge loss.
    n_iter : int in [1, 100000], default=100
        Horizon ``T`` with ``horizon="max_iter"``; a cap with ``"auto"`` and
        ``"paper"``.
    batch_size : int in [1, n_samples] or None, default=None
        Mini-batch size ``m`` (sampled without replacement, fresh at every
        step); ``None`` is the full batch.
    step_scale : float in (0, 1], default=1.0
        ``c`` in the step size ``c / L`` (``c / (4**k L)`` in MASG stage ``k >= 2``).
    initial_gap : float in (0, inf) or None, default=None
        Declared bound ``E_0`` on ``F(x0) - F*`` used by the ``*-opt`` solvers
        to choose ``T*``. ``None`` uses the data-free bound
        ``sup phi(-R_2 ||x0||) + (alpha/2)||x0||^2`` (``ln 2`` for logistic at ``x0 = 0``).
    x0 : array-like of shape (n_features,) or None, default=None
        Public starting point; ``None`` is zero.
    masg_p : int in [1, 30], default=1
        ``p`` of the MASG stage lengths.
    clip : {"rows", "raise"}, default="rows"
        ``"rows"``: rows over the declared bound are scaled down to it (a map
        of each row: the guarantee holds). ``"raise"``: they are refused,
        **after** the charge; whether it raises depends on the rows, so the
        refusal is itself a release about every row that the guarantee does
        not cover. Use it only on purpose, to check data already known to be
        inside the bound, never on sensitive rows in production.
    output : {"last", "tail_average"}, default="last"
        The public rule choosing the output among the released iterates: the
        last one, or the mean of the last ``ceil(T/2)``.
    accountant : Accountant or None, default=None
        Charged once, before the first gradient, with the composed event.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None`` is cryptographically secure noise; an int makes the run
        reproducible and **not for release**.
    phase : str, default="training"
        The phase recorded in the accountant's ledger.
    noise : {"laplace", "gaussian"}, default="laplace"
        ``"laplace"``: the paper's pure epsilon-DP method. ``"gaussian"``:
        privtune's extension (not in the paper), ``(epsilon, delta)``-DP with
        Gaussian noise on the L2 sensitivity; see Notes. Full batch only.
    delta : float in (0, 1) or None, default=None
        Required with ``noise="gaussian"``; must be None (or 0) with
        ``noise="laplace"``.
    max_slope : float in (0, 1], default=1.0
        ``kappa``: the loss derivative is clipped at ``-kappa`` (per-example
        gradient clipping; privtune's extension, not in the paper, which has
        ``kappa = 1``). The loss becomes the convex, equally smooth
        ``phi_kappa`` (linear with slope ``-kappa`` beyond the clipping point,
        :mod:`privtune.optim._losses`) and every sensitivity is multiplied by
        ``kappa``. For logistic, ``kappa = 1/2`` is ``|phi'(0)|``: nothing is
        clipped at ``w = 0`` and the noise of every step is halved.
    horizon : {"auto", "max_iter", "paper"} or None, default=None
        How the number of steps ``T <= n_iter`` is chosen, from public
        constants only. ``"paper"``: ``T*`` minimising the paper's bound (4.6)
        (with the solver's split: the optimal one for ``*-opt``, uniform
        otherwise; the Gaussian analogue with ``noise="gaussian"``).
        ``"max_iter"``: ``T = n_iter``. ``"auto"``: privtune's rule
        (:func:`privtune.optim.accelerated._schedules.auto_horizon`, not in the paper),
        ``T = min(5 / sqrt(r), 1.5 / r)`` (Gaussian; ``r`` the public
        noise-to-signal ratio of one full-budget step), rounded, between 1 and
        ``min(n_iter, max(50, 2 d))``; ``T`` grows with ``epsilon n / sqrt(d)``.
        ``None`` (the function's historical default): ``"paper"`` for the
        ``*-opt`` solvers and ``"max_iter"`` otherwise. The estimators default
        to ``"auto"``.
    horizon_floor : float in [0, 1e6], default=0.0
        With ``horizon="auto"`` and Gaussian noise: at least
        ``horizon_floor / r`` steps (rounded, still at most the cap), which
        lengthens the rule's horizon only where the noise is small
        (``r < (horizon_floor / 5)**2``). Public; privacy-neutral. ``DPSVC``
        passes 0.5 (privtune's choice, measured in
        ``benchmarks/results/dpsvc_horizon_floor.md``).
    budget_share : float in (0, 1], default=1.0
        The share of the budget of ``(epsilon, delta)`` this run spends, for
        runs released together on the same rows (e.g. one-vs-rest fits of a
        multi-class model built from binary runs). Laplace: the run is ``epsilon *
        budget_share``-DP. Gaussian: the run gets the share ``budget_share`` of
        the precision ``1 / nm**2`` (the zCDP ``rho``) of one run calibrated at
        ``(epsilon, delta)``, i.e. the multiplier ``nm / sqrt(budget_share)``;
        ``k`` runs with shares summing to 1 compose (RDP adds) to exactly that
        one run. The horizon rules see the run's own noise. Each run charges
        and reports its own event.
    n_classes : int in [2, 2**20] or None, default=None
        ``K``, required with ``loss="multinomial"`` or
        ``"multiclass_smoothed_hinge"`` (and only then): the softmax
        cross-entropy of ``K`` classes, or Crammer & Singer's multiclass hinge
        smoothed by a softmax of width ``smoothing`` (privtune's extensions, not
        in the paper). ``y`` then holds class indices ``0 .. K - 1`` (any other
        label makes its row the zero row), the model is ``K`` weight vectors
        and ``x`` (and every iterate) has ``K * n_features`` entries,
        ``x.reshape(K, n_features)``. ``max_slope = kappa`` clips each row's
        residual ``p - e_y`` to the L2 norm ``c = min((kappa / kappa_0) r_0,
        sqrt(2))``, ``r_0`` the residual's norm at ``W = 0`` and ``kappa_0``
        the binary loss's default (1/2 multinomial, 1 hinge: nothing is
        clipped at the start at those values; ``c = 2 kappa sqrt((K - 1) / K)``
        for the multinomial loss), so the per-example
        sensitivity is ``2 c R_2`` (L2, Gaussian) or ``2 min(2, sqrt(K) c) R_1``
        (L1, Laplace); the smoothness is ``R_2**2 / (2 h) + alpha`` (``h = 1``
        for the multinomial loss; :class:`privtune.optim._losses.SoftmaxLoss`).

    Returns
    -------
    DPOptimizeResult

    Raises
    ------
    InvalidParameterError
        For a parameter outside its domain, a shape mismatch, or declared
        bounds outside float64's safe range (public; nothing is spent); after
        the charge, for input that is not a rectangular array (a ragged list)
        or rows over the bound with ``clip="raise"`` (a release, see ``clip``).
        NaN/inf entries, entries that are not numbers and bad labels are
        mapped, not refused.
    BudgetExceededError
        If the accountant cannot pay for the run; raised before any value of
        ``X`` is read, with nothing spent.

    Notes
    -----
    **Privacy.** The run is ``(epsilon, 0)``-DP under the **replace-one**
    relation (datasets of the same public size ``n`` differing in one row),
    and it releases *all* iterates and noisy gradients. Public: ``n``, ``d``,
    the declared bounds, every hyperparameter, ``x0`` and the whole schedule.
    Step ``t`` releases the batch-mean gradient of the data term plus Laplace
    noise (the regulariser's gradient ``alpha q_t`` is public and is added
    after the noise, which gives the same release as the paper's) of scale
    ``b_t = S_1 (1 + 2**-10) / (m eps0_t)`` per coordinate, where ``S_1 = 2
    kappa min(R_1, sqrt(d) R_2)`` bounds the L1 change of one example's
    data-term gradient (logistic: ``phi' in (-1, 0)``; smoothed hinge:
    ``phi' in [-1, 0]``; clipped to ``[-kappa, 0]`` by ``max_slope = kappa``;
    see :mod:`privtune.optim._losses` for the derivation) and
    ``eps0_t = ln(1 + (e**eps_t - 1) n / m)``, so that after amplification by
    sampling without replacement ([BBG18], eq. (3.3)) step ``t`` costs exactly
    ``eps_t`` and the ``eps_t`` sum to ``epsilon`` (basic composition). The
    event charged is the composition of one ``LaplaceEvent(eps0_t)`` per step
    (full batch) or one ``SampledWithoutReplacementEvent`` per step; it is
    charged once, up front, after :meth:`Accountant.check` and the data
    validation, before any gradient is computed. ``T*`` and the split use only
    public constants and cost nothing. The batch indices are drawn from a
    generator seeded from the same source as the noise and are never released.

    With ``noise="gaussian"`` (privtune's extension, not from the paper) the
    run is ``(epsilon, delta)``-DP under replace-one, same releases and public
    quantities. Step ``t`` adds exact discrete Gaussian noise of standard
    deviation ``sigma_t = nm_t S_2 (1 + 2**-10) / n`` per coordinate, where
    ``S_2 = 2 kappa R_2`` bounds the L2 change of one example's data-term gradient
    (``R_2`` is the declared ``data_norm_l2``, else ``data_norm``, since
    ``||u||_2 <= ||u||_1``; rows are clipped to both). The composition of
    Gaussians is exactly the Gaussian of multiplier ``nm`` with
    ``1 / nm**2 = sum_t 1 / nm_t**2`` (Dong, Roth & Su 2019); ``nm`` is
    calibrated through RDP at ``(epsilon (1 - 1e-3), delta)``
    (:func:`gaussian_run_multiplier`, with the orders and RDP-to-DP conversion
    the accountant uses: the discrete Gaussian's vector release is proven
    through RDP, not through the continuous Gaussian's exact curve of Balle &
    Wang 2018) and the precision is split uniformly or, for the ``*-opt`` solvers, with
    ``rho_t`` proportional to ``a_{T,t}**(1/2)`` (the zCDP analogue of
    Prop. 4.2, seed-002 spec section 6) and ``T*`` minimising the matching
    bound. The event charged is the composition of one
    ``GaussianEvent(noise_multiplier=nm_t, vector=True)`` per step, which the
    accountant composes through RDP (the steps' RDP curves add exactly);
    ``epsilon`` of the result is that composition converted at ``delta``
    (within a relative ``2e-3`` below the budget) and ``step_epsilons`` are the
    steps' *shares* of it, not per-step guarantees. ``batch_size < n`` is
    refused with ``noise="gaussian"``: the accountant has no exact bound for
    Gaussian steps amplified by sampling without replacement under replace-one.

    References
    ----------
    .. [KBGY22] N. Kuru, S. I. Birbil, M. Gürbüzbalaban and S. Yıldırım,
       "Differentially Private Accelerated Optimization Algorithms", SIAM J.
       Optim. 32(2), 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.optim import dp_accelerated
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / 3
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> res = dp_accelerated(X, y, solver="nag-opt", epsilon=1.0, alpha=0.01, data_norm=1.0,
    ...                      n_iter=50, random_state=0)
    >>> res.x.shape, round(res.epsilon, 9), res.n_iter <= 50
    ((3,), 1.0, True)
    """
    return _run(X, y, add_noise=True, accountant=accountant, phase=phase, owner="dp_accelerated", solver=solver,
                epsilon=epsilon, alpha=alpha, data_norm=data_norm, data_norm_l2=data_norm_l2, loss=loss,
                smoothing=smoothing, n_iter=n_iter, batch_size=batch_size, step_scale=step_scale,
                initial_gap=initial_gap, x0=x0, masg_p=masg_p, clip=clip, output=output,
                random_state=random_state, noise=noise, delta=delta, max_slope=max_slope, horizon=horizon,
                budget_share=budget_share, n_classes=n_classes, horizon_floor=horizon_floor)


_WRAPPER_DOC = """{summary}

    Same as :func:`dp_accelerated` with ``solver="{solver}"``; every keyword
    argument of :func:`dp_accelerated` except ``solver`` is accepted.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Labels in {{-1, +1}}.
    **kwargs
        ``epsilon``, ``alpha``, ``data_norm`` (required) and the optional
        arguments of :func:`dp_accelerated`.

    Returns
    -------
    DPOptimizeResult

    Notes
    -----
    **Privacy.** ``(epsilon, 0)``-DP under replace-one; {split}. Charges the
    composed per-step Laplace events once, up front (see :func:`dp_accelerated`).
    With ``noise="gaussian"`` (privtune's extension): ``(epsilon, delta)``-DP,
    one ``GaussianEvent`` per step, composed exactly.

    References
    ----------
    .. [KBGY22] N. Kuru, S. I. Birbil, M. Gürbüzbalaban and S. Yıldırım,
       "Differentially Private Accelerated Optimization Algorithms", SIAM J.
       Optim. 32(2), 2022, {where}.
    """


def _wrapper(solver: str, name: str, summary: str, split: str, where: str):
    def fn(X: Any, y: Any, **kwargs: Any) -> DPOptimizeResult:
        if "solver" in kwargs:
            raise InvalidParameterError(f"{name} fixes solver={solver!r}; use dp_accelerated to choose it.")
        return dp_accelerated(X, y, solver=solver, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _WRAPPER_DOC.format(summary=summary, solver=solver, split=split, where=where)
    return fn


_UNIFORM = "the budget is split uniformly, ``eps_t = epsilon / T``"
_OPT = ("the budget is split as ``eps_t`` proportional to ``a_{T,t}**(1/3)`` and ``T* <= n_iter`` "
        "is chosen by minimising the bound (4.6); both use public constants only")
dp_gradient_descent = _wrapper("gd", "dp_gradient_descent", "DP-GD: noisy gradient descent.", _UNIFORM,
                               "eqs. (2.4), (2.8)")
dp_heavy_ball = _wrapper("hb", "dp_heavy_ball", "DP-HB: heavy ball on noisy gradients.", _UNIFORM,
                         "section 3, eq. (3.1)")
dp_nesterov = _wrapper("nag", "dp_nesterov", "DP-NAG: Nesterov's accelerated gradient, uniform split.",
                       _UNIFORM, "eq. (4.1), Thm 4.1")
dp_nesterov_opt = _wrapper("nag-opt", "dp_nesterov_opt",
                           "DP-NAG-opt: Nesterov's method with the optimal budget split and T*.", _OPT,
                           "Prop. 4.2, Rem. 4.1-4.2")
dp_masg = _wrapper("masg", "dp_masg", "DP-MASG: multistage accelerated gradient, uniform split.", _UNIFORM,
                   "section 4.2, eq. (4.7)")
dp_masg_opt = _wrapper("masg-opt", "dp_masg_opt",
                       "DP-MASG-opt: multistage accelerated gradient with the optimal split and T*.", _OPT,
                       "Thm 4.3")

