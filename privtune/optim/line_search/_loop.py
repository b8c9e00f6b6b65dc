r"""The DP-BLSGD loop of Chen & Lee (seed 003, Alg. 2-3): the public plan and the runner (internal).

This module holds the machinery behind :func:`privtune.optim.line_search.dp_blsgd`
and :func:`privtune.optim.line_search.blsgd_privacy_event`:

* the **plan** (:func:`_make_plan`): every parameter checked and every budget,
  filter and charged event decided from public quantities only, before any
  data is read (:func:`_check_grids` builds the first mechanisms so that a
  missing exact grid is refused before anything is spent);
* the **runner** (:class:`_Runner`): fresh batches, the noisy gradients
  (exact Gaussian noise on the clipped batch mean), the line searches
  (:class:`privtune.optim.line_search._step._Search`), CHEB with its angle test
  (:func:`_angle`) in ``mode="adaptive"``, paid to the filter before each
  mechanism runs, and the fixed schedule of ``mode="fixed"``.

The privacy argument is stated in the module docstring of
:mod:`privtune.optim.line_search`, which also holds the public entry points and
:class:`~privtune.optim.line_search.LineSearchResult`. The other pieces:
:mod:`privtune.optim.line_search._objective` (objectives, clipped batch means),
:mod:`privtune.optim.line_search._step` (NOISYBTLS) and
:mod:`privtune.optim.line_search._accounting` (events, filters, calibration).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.accountant import compose_events
from privtune.accounting.events import PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms.gaussian import Gaussian
from privtune.optim._sums import check_sum_terms, clip_norm_bound, rounding_factor
from privtune.optim.line_search import _accounting as acc
from privtune.optim.line_search._objective import _clipped_gradient_mean
from privtune.optim.line_search._step import _NOISES, _Search, search_rounding
from privtune.utils._random import RandomSource
from privtune.utils._validation import check_choice as _choice
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

_MODES = ("adaptive", "fixed")
_STRATEGIES = ("adaptive", "none", "always")
_INITIAL = ("calibrated", "paper")


# ----------------------------------------------------------------------------- CHEB's angle test
def _angle(u: np.ndarray, v: np.ndarray) -> float:
    """Angle between two released vectors, in degrees (90 if either is zero)."""
    nu, nv = float(np.linalg.norm(u)), float(np.linalg.norm(v))
    if nu == 0.0 or nv == 0.0:
        return 90.0
    return math.degrees(math.acos(max(-1.0, min(1.0, float(u @ v) / (nu * nv)))))


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
    check_sum_terms(_max_terms(scheme), owner)  # the sums' rounding bound (module privtune.optim._sums)
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


def _max_terms(scheme: acc.Scheme) -> int:
    """The most terms one batch sum can have: ``m`` without replacement, else ``n`` (Poisson batches vary)."""
    return scheme.m if scheme.sampling == "without_replacement" else scheme.n


def _relation_factor(scheme: acc.Scheme) -> float:
    return 2.0 if scheme.relation == "replace_one" else 1.0


def gradient_sensitivity(scheme: acc.Scheme, clip: float, d: int) -> float:
    """The sensitivity the noisy gradient's mechanism is built with: the exact ``f clip / D`` times ``psi``.

    ``psi`` (:func:`privtune.optim._sums.rounding_factor`) covers the float
    rounding of the clipped batch mean (its blocked sum, and the clipping's
    own float error, :func:`privtune.optim._sums.clip_norm_bound`): two
    neighbouring *computed* means differ by at most this. Public: the scheme,
    the clip and ``d``.
    """
    psi = rounding_factor(terms=_max_terms(scheme), bound=clip, divisor=scheme.divisor,
                          factor=_relation_factor(scheme), coordinates=d, norm=2,
                          term_bound=clip_norm_bound(clip, d))
    return scheme.sensitivity(clip) * psi


def _search_rounding(scheme: acc.Scheme, clip_obj: float) -> float:
    return search_rounding(terms=_max_terms(scheme), clip_obj=clip_obj, divisor=scheme.divisor,
                           factor=_relation_factor(scheme))


def _check_grids(plan: _Plan, d: int, source: RandomSource) -> None:
    """Build the first mechanisms (their exact grids must exist) before anything is spent.

    Budgets only grow and clipping thresholds scale the sensitivity and the noise
    together, so later grids exist whenever the first ones do.
    """
    Gaussian.from_noise_multiplier(acc.noise_multiplier(plan.rho0),
                                   sensitivity=gradient_sensitivity(plan.scheme, plan.c_grad, d),
                                   random_state=source).grid_spacing(d)
    _Search(noise=plan.noise, budget=plan.search0, sensitivity=plan.scheme.sensitivity(plan.c_obj), eta0=1.0,
            backtrack=plan.backtrack, max_backtracks=plan.max_backtracks, on_failure="zero", source=source,
            rounding=_search_rounding(plan.scheme, plan.c_obj))


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
        sens = gradient_sensitivity(s, clip, self.d)  # the exact one times the sum's rounding factor (public)
        mech = Gaussian.from_noise_multiplier(acc.noise_multiplier(rho), sensitivity=sens, random_state=self.source)
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
                       source=self.source, rounding=_search_rounding(p.scheme, clip_obj))
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
