"""Black-box DP audit of one small DP-SGD run (DPSGDRegressor) and of a broken twin with half the noise.

Setting. n = 8 rows, one feature, a linear module without bias whose weight starts at 0; every row is
``(x, y) = (0, 0)`` except row 0: ``(1, -10)`` in D and ``(1, +10)`` in D' (a replace-one pair). At ``w = 0`` the
per-example gradient of the squared error ``(w x - y)**2`` is ``-2 y x``: 0 for every row but row 0, whose
gradient (+20 or -20) is clipped to ``+C`` or ``-C``, so the two clipped sums differ by ``2 C``: the worst case
of the replace-one sensitivity. The run is one step on the full data (``batch_size = n``: sampling rate 1,
so the noise is the only randomness), claimed ``(epsilon, delta) = (1, 1e-5)`` under replace-one, for which
the estimator calibrates ``sigma = 8.15``; the exact epsilon of that Gaussian on this pair is 0.91 at
``delta = 1e-5``, and 1.95 for the twin whose noise multiplier is halved (the claim unchanged).

* **H0** ("passes"): the run is (1, 1e-5)-DP on this pair. ``audit_mechanism`` refutes a true claim with
  probability at most ALPHA = 1e-5.
* **Negative control** (must be flagged): the twin. At 1 000 000 samples per input the audit's lower bound is
  1.30 for the twin (1.05 at 300 000) and 0.57 for the correct run, with these seeds.

Sampling. 300 000 real fits would take about an hour, so the audited runs are replayed vectorised with the
estimator's **own pieces**: the clipped sum computed by the engine (:func:`engine.clipped_sum`, on Opacus's
per-example gradients of the real module) and the step's mechanism (:func:`engine.step_mechanism`, its grid and
exact discrete Gaussian sampler), with the noise multiplier and sensitivity of the estimator's plan.
``test_replay_matches_real_fits`` (slow) checks the replay against real ``fit`` calls by a two-sample
Kolmogorov-Smirnov test (alpha = 1e-4), whose power is shown by rejecting the twin at the same size.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

opacus = pytest.importorskip("opacus")
torch = pytest.importorskip("torch")

from privtune.mechanisms._samplers import grid_to_float, round_to_grid  # noqa: E402
from privtune.neural_network import DPSGDRegressor  # noqa: E402
from privtune.neural_network import _dpsgd_engine as engine  # noqa: E402
from privtune.testing import audit_mechanism  # noqa: E402
from privtune.utils._random import check_random_state  # noqa: E402

pytestmark = pytest.mark.statistical

ALPHA = 1e-5
N_ROWS = 8
EPS, DELTA = 1.0, 1e-5
LR = 1.0
X = np.zeros((N_ROWS, 1))
X[0, 0] = 1.0
Y_D = np.zeros(N_ROWS)
Y_D[0] = -10.0
Y_DP = Y_D.copy()
Y_DP[0] = 10.0


def zero_linear(n_features: int, n_outputs: int) -> torch.nn.Module:
    net = torch.nn.Linear(n_features, n_outputs, bias=False)
    with torch.no_grad():
        net.weight.zero_()
    return net


def estimator(random_state=None) -> DPSGDRegressor:
    return DPSGDRegressor(zero_linear, epsilon=EPS, delta=DELTA, batch_size=N_ROWS, epochs=1, lr=LR,
                          optimizer="sgd", max_grad_norm=1.0, random_state=random_state)  # one plain SGD step


def plan() -> dict:
    est = estimator()
    return est._plan(N_ROWS, est._validate_params_public("audit"), "audit")


def clipped_sum(y: np.ndarray) -> np.ndarray:
    """The engine's clipped gradient sum at the initial weights, on Opacus's per-example gradients."""
    import warnings

    from opacus import GradSampleModule

    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on full backward hooks (inputs need no gradient)
        module = zero_linear(1, 1)
        gsm = GradSampleModule(module, batch_first=True, loss_reduction="sum")
        params = [p for p in module.parameters()]

        def loss_fn(out, target):
            return torch.nn.functional.mse_loss(out, target, reduction="sum")

        total = engine.clipped_sum(gsm, params, loss_fn, torch.as_tensor(X, dtype=torch.float32),
                                   torch.as_tensor(y, dtype=torch.float32).reshape(-1, 1),
                                   np.ones(N_ROWS, dtype=bool), np.arange(N_ROWS), 1.0, 1)
        gsm.to_standard_module()
    return total


def sampler(y: np.ndarray, seed: int, *, broken: bool = False):
    p = plan()
    nm = p["noise_multiplier"] / (2.0 if broken else 1.0)
    mech = engine.step_mechanism(noise_multiplier=nm, max_grad_norm=1.0, n_samples=N_ROWS, n_params=1,
                                 source=check_random_state(seed), owner="audit")
    total = clipped_sum(y)
    kexp, g = mech._grid(1)
    base = round_to_grid(np.asarray(total, dtype=np.float64).reshape(-1), g, "value", "audit")

    def draw(k: int) -> np.ndarray:
        released = grid_to_float(np.repeat(base, k), mech._integer_noise(kexp, k), g)
        return -LR * released / p["batch_size"]  # the weight after one SGD step (post-processing)

    return draw


def test_the_pair_attains_the_sensitivity_and_the_plan_is_the_claim():
    assert clipped_sum(Y_D)[0] == pytest.approx(1.0) and clipped_sum(Y_DP)[0] == pytest.approx(-1.0)
    p = plan()
    assert p["steps"] == 1 and p["rate"] == 1.0 and p["epsilon"] <= EPS
    assert 8.0 < p["noise_multiplier"] < 8.3


def test_dpsgd_run_passes_audit():
    res = audit_mechanism(sampler(Y_D, 1), sampler(Y_DP, 2), epsilon=EPS, delta=DELTA, n_samples=1_000_000,
                          confidence=1 - ALPHA, random_state=0)
    assert not res.violation, str(res)  # lower bound measured 0.57 with these seeds (exact epsilon 0.91)


def test_broken_twin_with_half_noise_is_flagged():
    res = audit_mechanism(sampler(Y_D, 1, broken=True), sampler(Y_DP, 2, broken=True), epsilon=EPS, delta=DELTA,
                          n_samples=1_000_000, confidence=1 - ALPHA, random_state=0)
    assert res.violation and res.epsilon_lower_bound > 1.15, str(res)  # measured 1.30 with these seeds


@pytest.mark.slow
def test_replay_matches_real_fits():
    real = np.array([float(estimator().fit(X, Y_D).module_.weight.detach()[0, 0]) for _ in range(400)])
    assert stats.ks_2samp(real, sampler(Y_D, 4)(20_000)).pvalue > 1e-4
    assert stats.ks_2samp(real, sampler(Y_D, 5, broken=True)(20_000)).pvalue < 1e-4
