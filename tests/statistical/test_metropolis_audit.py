r"""DP audit and distribution test of M_E's Metropolis sampler (seed 001), with broken twins.

What privtune claims. :func:`~privtune.optim.piecewise.pwa_exponential` with ``sampler="metropolis"`` runs the
paper's random-walk Metropolis chain (§5.1: Gaussian proposal of covariance ``eta c I``, ``eta = 0.1``, ``c``
the box's half-width, 5000 steps, started at the centre of the box, proposals outside the box rejected) on the
density proportional to ``exp(-kappa f(x))``, ``kappa = epsilon / (2 offset_bound)``. Unlike the rejection and
Gibbs samplers it has **no** total-variation certificate (``tv_bound`` is ``None`` whatever ``n_steps``), so:

* with the default ``certified_only=True`` the call is refused (``InvalidParameterError``) before anything is
  spent -- the paper's configuration cannot be run at the defaults;
* with ``certified_only=False`` the release is charged as ``EpsilonDeltaEvent(epsilon, 0,
  guarantee="conditional")``: the exact mechanism's pure epsilon (McSherry-Talwar, Lemma 18), which is proven
  only for exact draws of ``pi_D``, and holds for the chain only under the *unproven* assumption that 5000 steps
  have mixed. No delta is added for the chain's distance to stationarity (spec P7 would add
  ``(1 + e**eps) sup_D TV(law_T, pi_D)``, which nothing here bounds).

The tests, with ``certified_only=False`` and every other argument at its default:

* ``test_metropolis_is_refused_by_default_and_conditional_otherwise``: the claim above, read off real calls.
* ``test_fast_chain_is_the_public_function``: the vectorised chain used below is bitwise the public function.
* ``test_metropolis_passes`` / ``test_metropolis_kappa_doubled_is_flagged``: DP-inequality audit on the pair of
  ``test_piecewise_release_audit.py``'s rejection section (``d = 1``, slopes ``(1, -1/4)``, box ``[-1, 1]``,
  ``offset_bound = 3/8``, ``epsilon = 3`` so ``kappa = 4``, ``b = (0, 7/8)`` vs ``b' = (3/8, 1/2)``; true
  epsilon of the exact mechanism on the pair 2.31), same events, same ``ALPHA``; the twin runs the same chain at
  ``kappa = 8`` in the target density. There the chain mixes (proposal sd 0.32 on a box of width 2), and the
  audit cannot tell it from the exact mechanism.
* ``test_metropolis_matches_the_exact_sampler``: two-sample KS test of the chain's output (5000 steps) against
  the exact rejection sampler on ``b``, with a mis-specified target (``kappa * 1.5``) rejected at the same sizes.
* ``test_stuck_chain_refutes_the_conditional_claim``: **the conditional claim is false at the paper's defaults**
  for a plausible problem: the l_inf-norm objective (the paper's §2.3 example) in ``d = 10`` on the box
  ``[-0.05, 0.05]**10`` with ``epsilon = 1``. The proposal's sd ``sqrt(0.1 * 0.05) = 0.071`` exceeds the box's
  half-width, so only about 7 of the 5000 proposals from the centre land in the box; the chain often never moves,
  and how often depends on the data far more than ``e**epsilon`` allows (measured P(x = centre) 0.28 under
  ``b`` against 0.035 under ``b'``, a log-ratio of 2.1 > 1; the public function itself, 400 draws per input:
  0.27 against 0.043; the exact mechanism puts probability 0 there).

Null hypotheses and alpha as in ``test_piecewise_release_audit.py``: a true claim is refuted with probability at
most ``ALPHA = 1e-5`` (one-sided Clopper-Pearson bounds, Bonferroni over the fixed event family, both
directions). Passing is not a proof of differential privacy; failing is strong evidence against the claim.

Sampling. The public function runs the chain in a Python loop (about 37 ms per draw in ``d = 1``); the audits
need about 10**4 draws, so they run :func:`_chains`, a vectorised copy of ``sample_metropolis`` (same arithmetic,
many chains at once). ``test_fast_chain_is_the_public_function`` checks that, fed the same uniforms as the public
function (privtune's seeded source, consumed in the same order), it returns bitwise the public outputs, in both
settings, at the real and the twin kappa. The statistical tests then feed it uniforms from
``numpy.random.Generator.random`` (PCG64, on the same grid ``k / 2**53`` as privtune's ``uniform53``): the same
function of i.i.d. uniforms with the same law, about 3x faster to draw.

Measured (seeds in the docstrings): audit lower bounds real / twin 1.81 / 3.35 against the claimed 3; KS
p-values 0.34 (chain vs exact) and 2.5e-12 (mis-specified target); the stuck chain's lower bound 1.51 against
the claimed 1. Run time about 15 s on one core without the slow test, 26 s with it (measured, unloaded).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.optim.piecewise import pwa_exponential
from privtune.optim.piecewise._core import solve_pwa
from privtune.optim.piecewise._sampling import sample_rejection
from privtune.testing import audit_mechanism
from privtune.utils import check_random_state

pytestmark = pytest.mark.statistical

ALPHA = 1e-5
N_STEPS = 5000  # the default (the paper's), asserted in the first test
ETA = 0.1  # the default step_scale


# ----------------------------------------------------------------------------- the chain, vectorised
def _chains(A, b, lo, hi, kappa, step_std, U, U2):
    """Final states ``(k, d)`` of ``k`` chains of ``sample_metropolis``, from uniforms ``U``, ``U2``.

    Chain ``i`` uses ``U[:, :, i]`` and ``U2[:, :, i]`` exactly as one call of ``sample_metropolis`` uses its
    ``u`` and ``u2``: Box-Muller normals ``sqrt(-2 log1p(-u)) cos(2 pi u2)``, acceptance ``log1p(-u[:, d]) <
    -kappa (f(y) - f(x))``, out-of-box proposals rejected, start at the centre; the output is clipped like the
    public function's.
    """
    T, d1, k = U.shape
    d = d1 - 1
    Z = np.sqrt(-2.0 * np.log1p(-U[:, :d, :])) * np.cos(2.0 * np.pi * U2)
    Z *= step_std  # the public y = x + step_std * z[k] rounds this product once too
    log_acc = np.log1p(-U[:, d, :])
    lo_c, hi_c, b_c = lo[:, None], hi[:, None], b[:, None]
    x = np.repeat((0.5 * (lo + hi))[:, None], k, axis=1)
    fx = (A @ x + b_c).max(axis=0)
    for t in range(T):
        y = x + Z[t]
        inside = ((y >= lo_c) & (y <= hi_c)).all(axis=0)
        fy = (A @ y + b_c).max(axis=0)
        accept = inside & (log_acc[t] < -kappa * (fy - fx))
        np.copyto(x, y, where=accept)
        np.copyto(fx, fy, where=accept)
    return np.clip(x.T, lo, hi)


def _privtune_uniforms(source, T, d, k):
    """The uniforms ``k`` consecutive public calls draw from ``source``, laid out for :func:`_chains`."""
    U, U2 = np.empty((T, d + 1, k)), np.empty((T, d, k))
    for i in range(k):
        U[:, :, i] = source.uniform53((T, d + 1))
        U2[:, :, i] = source.uniform53((T, d))
    return U, U2


def _step_std(lo, hi):
    return math.sqrt(ETA * 0.5 * float(np.max(hi - lo)))  # as pwa_exponential: sqrt(eta c), c the half-width


def _chain_sampler(A, b, lo, hi, kappa, seed, statistic, chunk=500):
    """``sample(n)``: a scalar statistic of ``n`` independent default-length chains (numpy uniforms)."""
    rng = np.random.default_rng(seed)
    d = A.shape[1]
    std = _step_std(lo, hi)

    def sample(n):
        out = []
        for s in range(0, n, chunk):
            k = min(chunk, n - s)
            out.append(statistic(_chains(A, b, lo, hi, kappa, std, rng.random((N_STEPS, d + 1, k)),
                                         rng.random((N_STEPS, d, k)))))
        return np.concatenate(out)

    return sample


# ----------------------------------------------------------------------------- settings
# (1) The rejection pair of test_piecewise_release_audit.py (d = 1). Exact probabilities of pi_D:
#     kappa = 4 (real):  P(x >= 0.5) = 0.3588 vs 0.0479 (log-ratio 2.01); P(x >= 0.6) = 0.2720 vs 0.0297 (2.22)
#     kappa = 8 (twin):  P(x >= 0.5) = 0.4665 vs 0.0088 (log-ratio 3.97); P(x >= 0.6) = 0.3422 vs 0.0039 (4.49)
BOX = (-1.0, 1.0)
LO, HI = np.array([-1.0]), np.array([1.0])
A_ME = np.array([[1.0], [-0.25]])
EPS = 3.0
OFFSET_BOUND = 0.375
KAPPA = EPS / (2 * OFFSET_BOUND)  # 4
B = np.array([0.0, 0.875])
B_PRIME = np.array([0.375, 0.5])
EVENTS = {"x >= 0.5": lambda x: x >= 0.5, "x >= 0.6": lambda x: x >= 0.6, "x >= 0.7": lambda x: x >= 0.7}
N_AUDIT = 5000

# (2) The l_inf norm f(x) = s ||x||_inf (pieces +-s e_j) plus a flat piece, d = 10, box [-0.05, 0.05]**10,
# epsilon = 1, offset_bound = 1/2 (kappa = 1), s = 40 (so kappa s c = 2). Neighbours: every offset moves by
# exactly 1/2, the norm's pieces down and the flat piece up:
#     b  = (0, ..., 0, 0):        f  = 40 ||x||_inf                    (strict minimum at the centre),
#     b' = (-1/2, ..., -1/2, 1/2): f' = max(40 ||x||_inf - 1/2, 1/2)    (a plateau around the centre).
# f - f' is -1/2 at the centre and +1/2 wherever 40 ||y||_inf >= 1, i.e. on almost every point a proposal reaches,
# so each in-box proposal from the centre is accepted with a probability about e**eps = e times larger under b'.
D_INF, C_INF, S_INF = 10, 0.05, 40.0
EPS_INF, OFFSET_BOUND_INF = 1.0, 0.5
A_INF = np.vstack([S_INF * np.eye(D_INF), -S_INF * np.eye(D_INF), np.zeros((1, D_INF))])
B_INF = np.zeros(2 * D_INF + 1)
B_INF_PRIME = np.r_[-OFFSET_BOUND_INF * np.ones(2 * D_INF), OFFSET_BOUND_INF]
LO_INF, HI_INF = -C_INF * np.ones(D_INF), C_INF * np.ones(D_INF)
N_INF = 2000


def _public(A, b, bounds, epsilon, offset_bound, source, **kw):
    return pwa_exponential(A, b, bounds=bounds, epsilon=epsilon, offset_bound=offset_bound, sampler="metropolis",
                           random_state=source, **kw)


# ----------------------------------------------------------------------------- the claim
def test_metropolis_is_refused_by_default_and_conditional_otherwise():
    """The claim, read off real calls: refused (nothing spent) by default; else (eps, 0) "conditional", 5000 steps.

    Also: a longer chain does not help (no certificate exists for any ``n_steps``), and the accountant records
    the release as spending exactly ``epsilon`` with delta 0 and a conditional guarantee.
    """
    for A, b, bounds, eps, bm in ((A_ME, B, BOX, EPS, OFFSET_BOUND),
                                  (A_INF, B_INF, (-C_INF, C_INF), EPS_INF, OFFSET_BOUND_INF)):
        acc = Accountant(Budget(10.0, 0.0), relation="offsets_linf")
        for n_steps in (None, 10**6):
            with pytest.raises(InvalidParameterError, match="no total-variation certificate"):
                _public(A, b, bounds, eps, bm, 0, n_steps=n_steps, accountant=acc)
        assert acc.spent.epsilon == 0.0
        res = _public(A, b, bounds, eps, bm, 0, certified_only=False, n_steps=1, accountant=acc)
        assert res.history["tv_bound"] is None and res.history["kappa"] == eps / (2 * bm)
        assert (res.epsilon, res.delta, res.guarantee) == (eps, 0.0, "conditional")
        assert (acc.spent.epsilon, acc.spent.delta, acc.guarantee) == (eps, 0.0, "conditional")
    default = _public(A_ME, B, BOX, EPS, OFFSET_BOUND, 0, certified_only=False)
    assert default.history["n_steps"] == N_STEPS


def test_fast_chain_is_the_public_function():
    """:func:`_chains` returns bitwise the public outputs from the same seed, in both settings.

    Settings: (1) ``b`` and ``b'`` at the real and the twin kappa, 12 consecutive draws each; (2) ``b`` and
    ``b'`` of the l_inf problem, 4 draws each (its pieces have one non-zero slope each, so ``A @ y`` is exact in
    any summation order). Bitwise identity is stronger than a KS test: any change of the proposal, the
    acceptance rule, the start, the step count or the stream breaks it.
    """
    cases = [(A_ME, b, LO, HI, BOX, eps, OFFSET_BOUND, 12) for b in (B, B_PRIME) for eps in (EPS, 2 * EPS)]
    cases += [(A_INF, b, LO_INF, HI_INF, (-C_INF, C_INF), EPS_INF, OFFSET_BOUND_INF, 4) for b in (B_INF, B_INF_PRIME)]
    for A, b, lo, hi, bounds, eps, bm, n in cases:
        source = check_random_state(81)
        public = np.array([_public(A, b, bounds, eps, bm, source, certified_only=False).x for _ in range(n)])
        fast = _chains(A, b, lo, hi, eps / (2 * bm), _step_std(lo, hi),
                       *_privtune_uniforms(check_random_state(81), N_STEPS, A.shape[1], n))
        assert np.array_equal(public, fast)


# ----------------------------------------------------------------------------- DP audit, d = 1
def _audit(kappa_inside, seeds):
    claim = _public(A_ME, B, BOX, EPS, OFFSET_BOUND, 0, certified_only=False, n_steps=1)
    assert (claim.epsilon, claim.delta) == (EPS, 0.0)
    first = lambda X: X[:, 0]  # noqa: E731
    return audit_mechanism(_chain_sampler(A_ME, B, LO, HI, kappa_inside, seeds[0], first),
                           _chain_sampler(A_ME, B_PRIME, LO, HI, kappa_inside, seeds[1], first),
                           epsilon=claim.epsilon, delta=claim.delta, n_samples=N_AUDIT, events=EVENTS,
                           confidence=1.0 - ALPHA, random_state=0)


def test_metropolis_passes():
    """H0: the default Metropolis chain (5000 steps) satisfies its (3, 0) claim on b, b'.

    If the chain has mixed this is the exact mechanism, true epsilon on the pair 2.31 (77 % of the claim);
    expected lower bound at n = 5000 about 1.74 (measured 1.81 with seeds 91, 92); checked > 1.2 so that the
    audit is not vacuous (a chain stuck near the centre would give far less).
    """
    res = _audit(KAPPA, (91, 92))
    assert not res.violation, str(res)
    assert res.epsilon_lower_bound > 1.2, str(res)


def test_metropolis_kappa_doubled_is_flagged():
    """Broken twin: the same chain with kappa = 8 in the target density, audited against the claim (3, 0).

    Power (as the rejection twin of ``test_piecewise_release_audit.py``, provided the chain mixes at kappa 8,
    which the KS test below supports at kappa 4): P(x >= 0.6) is 0.3422 under b and 0.0039 under b'; with 5000
    samples per input the Clopper-Pearson bounds at level 1e-5 / 12 give a log-ratio of about 3.43 (median of
    the audit's maximum 3.46, 1 % quantile 3.17 by simulation of the counts). Measured with seeds 93, 94: 3.35.
    """
    res = _audit(2 * KAPPA, (93, 94))
    assert res.violation and res.epsilon_lower_bound > 3.05, str(res)


# ----------------------------------------------------------------------------- distribution test, d = 1
N_KS = 5000
KS_ALPHA = 1e-4


def _exact_sampler(b, kappa, seed):
    """Exact draws of pi_D: the module's capped rejection sampler (cap 10**6, never hit here), LP solved once."""
    source = check_random_state(seed)
    _, f_opt = solve_pwa(A_ME, b, LO, HI)

    def sample(n):
        return np.fromiter((sample_rejection(A_ME, b, LO, HI, kappa, f_opt, 10**6, source)[0][0] for _ in range(n)),
                           dtype=np.float64, count=n)

    return sample


@pytest.mark.slow
def test_metropolis_matches_the_exact_sampler():
    """Two-sample KS test, alpha = 1e-4: the chain's output (5000 steps) on b has the exact mechanism's law.

    5000 chain outputs against 5000 exact (rejection) draws at kappa = 4; the critical sup-CDF distance is about
    0.0445. Power: a chain targeting the mis-specified ``kappa = 6`` (epsilon 4.5 inside), whose stationary law
    is at sup-CDF distance 0.079 from pi_D (numerical integration), is rejected at the same sizes with
    probability about 0.9995 (the statistic's sd is about 0.01; kappa = 8 is at distance 0.147). Distances down
    to about 0.068 are detected with probability 0.99. Measured with seeds 101-103: p = 0.34 for the chain
    (KS distance 0.019), 2.5e-12 for the mis-specified one (0.074).
    """
    exact = _exact_sampler(B, KAPPA, 101)(N_KS)
    first = lambda X: X[:, 0]  # noqa: E731
    chain = _chain_sampler(A_ME, B, LO, HI, KAPPA, 102, first)(N_KS)
    assert stats.ks_2samp(chain, exact).pvalue > KS_ALPHA
    wrong = _chain_sampler(A_ME, B, LO, HI, 1.5 * KAPPA, 103, first)(N_KS)
    assert stats.ks_2samp(wrong, exact).pvalue < KS_ALPHA


# ----------------------------------------------------------------------------- the stuck chain, d = 10
@pytest.mark.slow
def test_stuck_chain_refutes_the_conditional_claim():
    """The default chain violates its claimed (1, 0) on the l_inf problem: the claim rests on unproven mixing.

    Statistic: ``||x||_inf``, which is exactly 0 only if the chain never accepted a move (the exact mechanism
    gives it probability 0). From the centre a proposal lands in the box with probability about
    ``P(|N(0,1)| < 0.707)**10 = 1.4e-3``, about 7 times in 5000 steps, and is accepted with probability about
    0.2 under b and up to e times more under b' (see the settings), so P(never moves) is about exp(-7 * 0.2)
    under b and exp(-7 * 0.2 * e) under b': measured 0.279 and 0.035 with 3000 chains each (seeds 7, 8), a
    log-ratio of 2.08 against the claimed 1; the public function itself gives 0.27 under b (400 draws). Audit of
    the claim (1, 0) with the single event {x = centre} (both directions, level 1e-5 / 4): at n = 2000 the
    one-sided bounds are about 0.233 and 0.057, an expected lower bound of about 1.4 (sd about 0.12, so > 1 with
    probability about 0.9998). Measured with seeds 111, 112: 1.51 (counts 611 / 70). Marked slow (about 11 s: d = 10).
    This test fails if the chain is changed so that it mixes here (e.g. a proposal scaled to the box).
    """
    claim = _public(A_INF, B_INF, (-C_INF, C_INF), EPS_INF, OFFSET_BOUND_INF, 0, certified_only=False, n_steps=1)
    assert (claim.epsilon, claim.delta, claim.guarantee) == (EPS_INF, 0.0, "conditional")
    norm = lambda X: np.abs(X).max(axis=1)  # noqa: E731
    kappa = EPS_INF / (2 * OFFSET_BOUND_INF)
    res = audit_mechanism(_chain_sampler(A_INF, B_INF, LO_INF, HI_INF, kappa, 111, norm, chunk=50),
                          _chain_sampler(A_INF, B_INF_PRIME, LO_INF, HI_INF, kappa, 112, norm, chunk=50),
                          epsilon=claim.epsilon, delta=claim.delta, n_samples=N_INF,
                          events={"x = centre": lambda r: r == 0.0}, confidence=1.0 - ALPHA, random_state=0)
    assert res.violation, str(res)
