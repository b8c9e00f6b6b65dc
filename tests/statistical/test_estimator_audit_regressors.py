r"""Estimator-level DP audits of ``DPChebyshevRegressor`` and ``DPNonConvexClassifier``, through the public API.

The mechanism- and trainer-level audits (``test_piecewise_release_audit.py``, ``test_piecewise_audit.py``,
``test_second_order_audit.py``, ``test_trainer_default_audit.py``) call the optimisers on rows or offsets that are
already inside the declared bounds. Here every sample is one ``Estimator(random_state=seed).fit(X, y)`` at the
estimator's defaults, so what is audited also includes the estimator's own pre-processing: the clipping of targets
(Chebyshev) or rows (non-convex) to the declared bounds, the intercept column, the float conversion of the inputs,
the reading of the labels, and the budget the estimator reports. The audited output is one scalar of the fitted
model. The claimed ``(epsilon, delta)`` is read off the fitted estimator (``privacy_spent_``), not hard-coded, and
every sampled fit must report the same value.

Each pair is a replace-one pair whose differing row lies **outside** the declared bounds, so clipping is what keeps
the claim true. Each estimator has a broken twin: the same public ``fit`` with its clipping switched off by a
``monkeypatch`` of the clipping function it calls. The unclipped row then moves the output by far more than the
declared sensitivity. The twin must be flagged at the same sample size.

* **H0** of each "passes" test: the estimator satisfies its reported ``(epsilon, delta)`` on the pair.
  ``audit_mechanism`` refutes a true claim with probability at most ``ALPHA = 1e-5`` (``confidence = 1 - ALPHA``).
  The output sets are a small fixed family chosen before sampling, from the analysis below. The audit tests them
  in both directions with a Bonferroni correction: for ``k`` events, each one-sided Clopper-Pearson bound is at
  level ``ALPHA / (4 k)``. Both audits afford 1 - 1e-5: the twins are resolved with a wide margin at that level.
* Passing is not a proof of differential privacy. Failing the real estimator would be strong evidence of a bug.
* Seeds. The fit seeds are disjoint integer ranges, one per (estimator, real or twin, D or D'). The audits use
  fixed events, so there is no selection split and ``random_state`` is irrelevant. The results are therefore
  deterministic.

Measured lower bounds (real / twin, claimed epsilon in brackets):

* ``DPChebyshevRegressor``: 0.307 / 2.077 [1.0], at 1 500 fits per input.
* ``DPNonConvexClassifier``: 0.000 / 3.555 [0.999], at 1 000 fits per input.

Runtime: about 1.7 ms per Chebyshev fit and 2-2.5 ms per non-convex fit (2 000 rows; most runs stop early),
so 4-5 s per audit and about 20 s for the file (measured on a shared 2-core machine).

DPChebyshevRegressor (defaults: ``method="perturb-objective"``, ``epsilon=1``, ``target_bound=1``,
-----------------------------------------------------------------------------------------------------------------
``bounds=(-1, 1)``, ``fit_intercept=True``, intercept box = the target range ``[-1, 1]``)

Setting. One public row ``x = 0`` (``n = 1``, ``d = 1``). ``D`` has target ``y = -5`` and ``D'`` has ``y = +5``,
passed as Python ints (``fit`` converts them to float). Both targets are outside the declared range ``[-1, 1]``.
``fit`` clips them to ``-+1``, builds the pieces ``a = (z, -z)``, ``b = (-y_c, y_c)`` with ``z = (x, 1)``, and
calls M_P with L1 sensitivity ``2 (hi - lo) = 4`` (``n_changed = 2``). M_P adds grid-exact Laplace noise of
scale ``s = 4 (1 + 2**-10) / epsilon`` to each offset and solves the LP. The audited output is the prediction at
the public point ``x = 0``, that is ``intercept_``. Whatever the LP picks for the degenerate ``coef_``, it is
``clip(y_c + (w_2 - w_1) / 2, -1, 1)``, where ``w_2 - w_1`` is the difference ``Dl`` of two Laplace(s) variables
(``P(Dl > t) = e^{-t/s} (2 + t/s) / 4`` for ``t >= 0``).

Why clipping matters. After clipping, the pair is ``y_c = -1`` vs ``+1``, a change of the declared 2 per offset
(L1 4, the calibrated sensitivity). Without clipping each offset moves by 10, five times the declared bound.
``pwa_perturb_objective`` clips the offsets again to the ``max_abs_offset`` the estimator passes (the declared
range's magnitude, 1 here): switching off the estimator's clip alone is not a broken twin, so the twin switches
off both.

Output sets: the atoms ``{f(0) = -1}`` and ``{f(0) = +1}`` (the clipped box edges), and ``{f(0) < 0}``,
``{f(0) > 0}``.

* Real (claim ``(1, 0)``). The atom at -1 has probability ``P(Dl <= 0) = 0.5`` on ``D`` and
  ``P(Dl <= -4) = 0.276`` on ``D'``, a log-ratio of 0.594. Its expected audit bound at 1 500 samples is 0.27.
* Twin (``np.clip`` switched off in ``_chebyshev`` and in ``piecewise``). The atom at -1 has probability
  ``P(Dl <= 8) = 0.864`` on ``D`` and ``P(Dl <= -12) = 0.0624`` on ``D'``, a log-ratio of 2.63. Its expected
  audit bound at 1 500 samples is 2.12.
  A twin with epsilon doubled inside instead would have an atom log-ratio of 1.31, and an expected audit bound of
  only 0.89 at this size (below the claim). Hence the clipping twin: it is also the estimator-level defect.

DPNonConvexClassifier (defaults: ``epsilon=1``, ``delta=1e-6``, sigmoid loss, ``solver="2opt-ls"``,
-----------------------------------------------------------------------------------------------------------------
``max_iter=5``, ``tolerance=0.01``, ``data_norm=1``, ``fit_intercept=True``, ``intercept_scaling=0.5``,
``classes=None``)

Setting. ``n = 2000`` rows in ``d = 1``: labels 1 (rows 0-999) and 0 (rows 1000-1999), read from ``y``, as the
default ``classes=None`` does. Row 0 has feature ``x_0 = +100`` in ``D`` and ``-100`` in ``D'`` (label 1). Every
other feature is 0. ``fit`` clips ``x_0`` to ``+-1`` and appends the intercept column 0.5. The solver's declared row
bound is ``R' = hypot(1, 0.5)``. At ``w = 0`` the two classes' intercept terms cancel, so the first noisy gradient
is ``(-+ x_0 / (4 n), 0)`` plus N(0, sigma^2 I), where ``x_0`` is row 0 as the solver reads it (``+-1`` after
clipping, ``+-100`` in the twin) and ``sigma = 12.83 x (2 R' / 4) / n = 0.00359``. Its declared
sensitivity is ``2 R' / (4 n) = 0.00028``. The audited output is ``coef_[0, 0]``. Output sets:
``{coef_ > 0}`` and ``{coef_ < 0}``. A run stopped (certified) at ``w = 0`` has ``coef_ = 0``.

* Real (claim ``(0.999, 1e-6)``, the accountant's bound on the charged event). The clipped row moves the first
  gradient by 0.00025, 0.07 sigma, and the run nearly always stops at ``w = 0``. Over 10 000 fits per input
  (other seeds) the probabilities were ``P(coef_ > 0) = 0.022 / 0.020`` and ``P(coef_ < 0) = 0.019 / 0.021``
  (D / D'). So the audit's lower bound is about 0: H0 holds and the test has no power against small errors here.
  That is inherent. At ``epsilon = 1``, ``delta = 1e-6`` the run's noise is about 13 times its sensitivity per
  release, and 1 000 samples only resolve sets of probability well above 1e-2. The twin is the power control.
* Twin (``clip_rows`` switched off both in the estimator, ``privtune.linear_model._nonconvex.clip_rows``, and
  in the solver, ``privtune.optim.second_order._solver.clip_rows``). Switching off the estimator's clip alone is
  **not** a broken twin. ``dp_second_order`` clips the augmented rows again to ``R'``
  (``test_nonconvex_solver_clip_backs_the_estimator_clip``), so the claim still holds. The twin's first gradient
  moves by 0.025 (89 times the declared sensitivity, 7 sigma): the first step goes the way of ``x_0``. Over 3 000
  fits per input: ``P(coef_ > 0) = 0.867`` on ``D`` and 0.009 on ``D'``, a log-ratio of 4.6. The expected audit
  bound at 1 000 samples is 3.24 against the claim 0.999. A row of norm 5 (the real row's sensitivity times 4.5)
  would move that release by 0.35 sigma, which is not resolvable at any affordable sample size. Norm 100 models an
  unstandardised outlier.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privtune.linear_model import DPChebyshevRegressor, DPNonConvexClassifier, _chebyshev, _nonconvex
from privtune.optim._losses import clip_rows
from privtune.optim.piecewise import _mechanisms as piecewise
from privtune.optim.second_order import _solver as second_order
from privtune.testing import audit_mechanism

pytestmark = pytest.mark.statistical

ALPHA = 1e-5

# ============================================================================= DPChebyshevRegressor
N_CHEB = 1500
CHEB_X = np.zeros((1, 1))  # one public row x = 0: the prediction at 0 is the intercept
CHEB_Y_D = [-5]  # outside the declared target range [-1, 1]; a Python int (converted by fit)
CHEB_Y_DP = [5]
CHEB_POINT = np.zeros((1, 1))  # the public point where the fitted model is read
CHEB_EVENTS = {
    "f(0) = -1": lambda p: p <= -1.0,
    "f(0) = +1": lambda p: p >= 1.0,
    "f(0) < 0": lambda p: p < 0.0,
    "f(0) > 0": lambda p: p > 0.0,
}
CHEB_SEEDS = {"real": (10_000_000, 20_000_000), "twin": (30_000_000, 40_000_000)}


class _NumpyWithoutClip:
    """``numpy`` as a module sees it, except ``clip``, which returns its input: the twin's target clipping."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def clip(a, a_min, a_max, *args, **kwargs):  # noqa: ARG004 - the bounds are ignored: no clipping
        return np.asarray(a, dtype=np.float64)


def _switch_off_target_clipping(monkeypatch) -> None:
    monkeypatch.setattr(_chebyshev, "np", _NumpyWithoutClip())  # the estimator's clip to the declared range
    monkeypatch.setattr(piecewise, "np", _NumpyWithoutClip())  # M_P's clip to max_abs_offset


def _cheb_fit(y, seed: int) -> DPChebyshevRegressor:
    return DPChebyshevRegressor(random_state=seed).fit(CHEB_X, y)


def _cheb_claim() -> tuple[float, float]:
    spent = _cheb_fit(CHEB_Y_D, 0).privacy_spent_
    return spent.epsilon, spent.delta


def _fit_sampler(fit, data, output, seed0: int, claim: tuple[float, float]):
    """``sample(k)``: ``output`` of ``k`` fits ``fit(data, seed)`` on consecutive seeds from ``seed0``, each
    checked to report the same claim."""
    state = {"next": seed0}

    def sample(k: int) -> np.ndarray:
        out = np.empty(k)
        for i in range(k):
            est = fit(data, state["next"])
            state["next"] += 1
            assert (est.privacy_spent_.epsilon, est.privacy_spent_.delta) == claim
            out[i] = output(est)
        return out

    return sample


def _cheb_sampler(y, seed0: int, claim: tuple[float, float]):
    return _fit_sampler(_cheb_fit, y, lambda reg: reg.predict(CHEB_POINT)[0], seed0, claim)


def _audit_pair(sampler, data_d, data_dp, claim: tuple[float, float], seeds: tuple[int, int], n: int, events):
    return audit_mechanism(sampler(data_d, seeds[0], claim), sampler(data_dp, seeds[1], claim), epsilon=claim[0],
                           delta=claim[1], n_samples=n, events=events, confidence=1.0 - ALPHA, random_state=0)


def _audit_cheb(which: str):
    return _audit_pair(_cheb_sampler, CHEB_Y_D, CHEB_Y_DP, _cheb_claim(), CHEB_SEEDS[which], N_CHEB, CHEB_EVENTS)


def test_chebyshev_pair_is_clipped_and_twin_only_drops_the_clipping(monkeypatch):
    """The claim, the calibration, the clipped pair, and what the twin changes (deterministic, same seeds).

    The real fit reports ``(1, 0)`` with L1 sensitivity 4 (``2 x (hi - lo)``). Its noisy offsets on ``y = -5``
    are bitwise those on ``y = -1`` (the clipped target), and the prediction at 0 is the intercept. The twin
    gives bitwise the real outputs for an in-range target. On ``y = -5`` its offsets are the real ones moved by
    ``(4, -4)`` (up to the rounding of the values to the noise grid): the noise is unchanged and only the clipping
    is gone.
    """
    reg = _cheb_fit(CHEB_Y_D, 7)
    assert reg.get_params()["method"] == "perturb-objective" and reg.get_params()["target_bound"] == 1.0
    assert (reg.privacy_spent_.epsilon, reg.privacy_spent_.delta) == (1.0, 0.0)
    assert reg.result_.history["l1_sensitivity"] == 4.0
    assert reg.result_.history["scale"] == pytest.approx(4.0 * (1 + 2**-10))
    assert reg.predict(CHEB_POINT)[0] == reg.intercept_
    for y_out, y_in in ((CHEB_Y_D, [-1.0]), (CHEB_Y_DP, [1.0])):
        for seed in (7, 8):
            a, b = _cheb_fit(y_out, seed), _cheb_fit(y_in, seed)
            np.testing.assert_array_equal(a.result_.history["b_noisy"], b.result_.history["b_noisy"])
            assert a.intercept_ == b.intercept_
    real_in = [_cheb_fit([0.3], s) for s in (7, 8)]
    real_out = [_cheb_fit(CHEB_Y_D, s) for s in (7, 8)]
    _switch_off_target_clipping(monkeypatch)
    for seed, r_in, r_out in zip((7, 8), real_in, real_out, strict=True):
        t_in, t_out = _cheb_fit([0.3], seed), _cheb_fit(CHEB_Y_D, seed)
        assert t_in.intercept_ == r_in.intercept_ and np.array_equal(t_in.coef_, r_in.coef_)
        assert (t_out.privacy_spent_.epsilon, t_out.privacy_spent_.delta) == (1.0, 0.0)  # same claim
        np.testing.assert_allclose(t_out.result_.history["b_noisy"] - r_out.result_.history["b_noisy"],
                                   [4.0, -4.0], rtol=0, atol=2.0**-16)  # up to the noise grid's rounding


def test_chebyshev_solver_clip_backs_the_estimator_clip(monkeypatch):
    """Switching off only the estimator's target clip does not break the claim: M_P clips the offsets again to
    the ``max_abs_offset`` the estimator passes, so the fit on ``y = -5`` is bitwise the real one."""
    real = [_cheb_fit(CHEB_Y_D, s) for s in (7, 8)]
    monkeypatch.setattr(_chebyshev, "np", _NumpyWithoutClip())
    for seed, r in zip((7, 8), real, strict=True):
        t = _cheb_fit(CHEB_Y_D, seed)
        np.testing.assert_array_equal(t.result_.history["b_noisy"], r.result_.history["b_noisy"])
        assert t.intercept_ == r.intercept_


@pytest.mark.slow
def test_chebyshev_default_fit_passes_audit():
    """H0: the default ``DPChebyshevRegressor`` is (1, 0)-DP, as it reports, on targets -5 vs +5 (clipped to -+1).

    The true log-ratio of the best set (an atom at -+1) is 0.594. The expected bound at 1 500 fits per input
    is 0.27 (simulated sd 0.05; its 0.1 % quantile is 0.13). Measured (fit seeds 10 000 000 + i on D and
    20 000 000 + i on D'): 0.307, on the atom at +1. The test also checks that the bound is not vacuous
    (> 0.1).
    """
    res = _audit_cheb("real")
    assert not res.violation, str(res)
    assert res.epsilon_lower_bound > 0.1, str(res)


@pytest.mark.slow
def test_chebyshev_without_target_clipping_is_flagged(monkeypatch):
    """Broken twin: ``fit`` with the target clipping switched off, audited against the same reported ``(1, 0)``.

    Each offset moves by 10 where the declared bound is 2. Power: the atom at -1 has probability 0.864 on D
    and 0.0624 on D'. At 1 500 samples the Clopper-Pearson bounds at level 1e-5 / 16 are about 0.82 and 0.098,
    an expected lower bound of 2.12. Over 20 000 simulated count pairs its sd is 0.08 and its 0.1 % quantile is
    1.90. Measured (fit seeds 30 000 000 + i and 40 000 000 + i): 2.077. The test asks for more than 1.5.
    """
    _switch_off_target_clipping(monkeypatch)
    res = _audit_cheb("twin")
    assert res.violation and res.epsilon_lower_bound > 1.5, str(res)


# ============================================================================= DPNonConvexClassifier
N_NC = 1000
NC_ROWS = 2000
NC_OUTLIER = 100.0  # the norm of the differing row; the declared data_norm is 1
NC_X_D = np.zeros((NC_ROWS, 1))
NC_X_D[0, 0] = NC_OUTLIER
NC_X_DP = -NC_X_D
NC_Y = np.array([1] * (NC_ROWS // 2) + [0] * (NC_ROWS // 2))  # both labels; row 0 has label 1
NC_EVENTS = {"coef > 0": lambda c: c > 0.0, "coef < 0": lambda c: c < 0.0}
NC_SEEDS = {"real": (50_000_000, 60_000_000), "twin": (70_000_000, 80_000_000)}


def _no_clip(U, l1_bound, l2_bound, *, mode, owner, name="X"):  # noqa: ARG001 - the twin ignores the bounds
    return U


def _switch_off_row_clipping(monkeypatch, *, solver: bool = True) -> None:
    monkeypatch.setattr(_nonconvex, "clip_rows", _no_clip)  # the estimator's clip to data_norm
    if solver:
        monkeypatch.setattr(second_order, "clip_rows", _no_clip)  # the solver's clip to hypot(data_norm, 0.5)


def _nc_fit(X, seed: int) -> DPNonConvexClassifier:
    return DPNonConvexClassifier(random_state=seed).fit(X, NC_Y)


def _nc_claim() -> tuple[float, float]:
    spent = _nc_fit(NC_X_D, 0).privacy_spent_
    return spent.epsilon, spent.delta


def _nc_sampler(X, seed0: int, claim: tuple[float, float]):
    return _fit_sampler(_nc_fit, X, lambda clf: clf.coef_[0, 0], seed0, claim)


def _audit_nc(which: str):
    return _audit_pair(_nc_sampler, NC_X_D, NC_X_DP, _nc_claim(), NC_SEEDS[which], N_NC, NC_EVENTS)


def test_nonconvex_pair_is_clipped_and_twin_only_drops_the_clipping(monkeypatch):
    """The claim, the sensitivity the pair attains after clipping, and what the twin changes (deterministic).

    The default fit reports ``(0.999, 1e-6)`` and a gradient sensitivity of ``2 R' / (4 n)``. The fit on D is
    bitwise the fit on D with row 0 pre-clipped to norm 1. The twin gives bitwise the real outputs on rows
    inside the bounds. On the out-of-bound pair it charges the same event, but its coefficients differ from the
    real ones for the same seed.
    """
    r_prime = math.hypot(1.0, 0.5)
    clf = _nc_fit(NC_X_D, 3)
    p = clf.get_params()
    assert (p["solver"], p["loss"], p["max_iter"], p["data_norm"], p["classes"]) == ("2opt-ls", "sigmoid", 5, 1.0,
                                                                                      None)
    assert clf.privacy_spent_.epsilon == pytest.approx(0.999) and clf.privacy_spent_.delta == 1e-6
    res = clf.optimize_result_
    assert res.sensitivities["gradient"] == pytest.approx(2 * (r_prime / 4) / NC_ROWS)
    assert res.noise_scales[0]["gradient"] > 12 * res.sensitivities["gradient"]
    assert list(clf.classes_) == [0, 1]
    pre = clip_rows(NC_X_D, math.inf, 1.0, mode="rows", owner="audit")
    assert 1.0 - 1e-9 < np.linalg.norm(pre[0]) <= 1.0
    for seed in (3, 4):
        np.testing.assert_array_equal(_nc_fit(NC_X_D, seed).coef_, _nc_fit(pre, seed).coef_)
    inside = NC_X_D * (0.9 / NC_OUTLIER)
    real_in = [_nc_fit(inside, s) for s in range(6)]
    real_out = [_nc_fit(NC_X_D, s) for s in range(6)]
    _switch_off_row_clipping(monkeypatch)
    differs = 0
    for seed in range(6):
        t_in, t_out = _nc_fit(inside, seed), _nc_fit(NC_X_D, seed)
        np.testing.assert_array_equal(t_in.coef_, real_in[seed].coef_)
        assert t_in.intercept_[0] == real_in[seed].intercept_[0]
        assert t_out.privacy_event_ == real_out[seed].privacy_event_
        differs += not np.array_equal(t_out.coef_, real_out[seed].coef_)
    assert differs >= 4


def test_nonconvex_solver_clip_backs_the_estimator_clip(monkeypatch):
    """Switching off only the estimator's ``clip_rows`` does not break the claim: the solver clips again.

    With ``_nonconvex.clip_rows`` switched off, the augmented row 0 ``(100, 0.5)`` reaches ``dp_second_order``
    unclipped. Its own ``clip_rows`` (spied here) scales the row to the declared bound ``R' = hypot(1, 0.5)``,
    which is what the charged event assumes. So the broken twin must switch off both.
    """
    r_prime = math.hypot(1.0, 0.5)
    seen = []
    solver_clip = second_order.clip_rows

    def spy(U, l1_bound, l2_bound, **kw):
        out = solver_clip(U, l1_bound, l2_bound, **kw)
        seen.append((np.linalg.norm(U, axis=1).max(), l2_bound, np.linalg.norm(out, axis=1).max()))
        return out

    _switch_off_row_clipping(monkeypatch, solver=False)
    monkeypatch.setattr(second_order, "clip_rows", spy)
    _nc_fit(NC_X_D, 0)
    (before, bound, after), = seen
    assert before == pytest.approx(math.hypot(NC_OUTLIER, 0.5)) and bound == pytest.approx(r_prime)
    assert after <= r_prime


@pytest.mark.slow
def test_nonconvex_default_fit_passes_audit():
    """H0: the default ``DPNonConvexClassifier`` is (0.999, 1e-6)-DP, as it reports, on x_0 = +100 vs -100.

    The pair (clipped to +-1) moves each release by at most 0.07 of its noise. The two laws are nearly equal
    (see the module docstring), so the expected bound is about 0: this test checks H0 only. Measured (fit seeds
    50 000 000 + i on D and 60 000 000 + i on D'): 0.000 (best set ``coef_ < 0``, counts 25 / 24).
    """
    res = _audit_nc("real")
    assert not res.violation, str(res)


@pytest.mark.slow
def test_nonconvex_without_row_clipping_is_flagged(monkeypatch):
    """Broken twin: rows unclipped in the estimator and in the solver, audited against the reported (0.999, 1e-6).

    The first noisy gradient moves by 89 times the declared sensitivity. Power: ``P(coef_ > 0)`` is about
    0.867 on D and 0.009 on D' (and symmetrically for ``coef_ < 0``). At 1 000 samples the Clopper-Pearson
    bounds at level 1e-5 / 8 are about 0.81 and 0.032 (expected counts 867 and 9), an expected lower bound of
    3.24. Over 20 000 simulated count pairs its sd is 0.16 and its 0.1 % quantile is 2.8. Measured (fit seeds
    70 000 000 + i and 80 000 000 + i): 3.555, on ``coef_ < 0`` (counts 4 / 860). The test asks for more
    than 2.
    """
    _switch_off_row_clipping(monkeypatch)
    res = _audit_nc("twin")
    assert res.violation and res.epsilon_lower_bound > 2.0, str(res)
