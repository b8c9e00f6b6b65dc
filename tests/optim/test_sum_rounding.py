"""The float rounding of the line-search, MLP and second-order sums is paid for by their mechanisms' sensitivities.

Issue 37: a float64 sum of ``m`` terms in an unknown order (a BLAS product) errs by up to about ``m**2 2**-53`` of
the exact sensitivity between two neighbouring data sets, and these trainers had no argument for it: the computed
means of neighbours differ by *more* than the sensitivity the noise was calibrated on (here by about 1e-12,
relative, at 100 000 rows; the bound grows as ``m**2``). The sums are now blocked (4 096 rows by position, added
with ``math.fsum``) and every mechanism is built with the exact sensitivity times a proven factor ``psi``
(``privtune.optim._sums``). Each test below builds two neighbouring data sets whose exact means differ by the exact
sensitivity (or within ``2**-50`` of it) and checks that their *computed* releases differ by at most the
sensitivity the mechanism actually uses; before the fix they did not.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import privtune.optim.line_search._loop as loop_module
import privtune.optim.line_search._step as step_module
import privtune.optim.second_order._plan as plan_module
import privtune.optim.second_order._steps as steps_module
from privtune.exceptions import InvalidParameterError
from privtune.optim._sums import MAX_SUM_TERMS, SUM_BLOCK, blocked_sum, clip_norm_bound, rounding_factor
from privtune.optim.line_search import dp_blsgd, noisy_backtracking_line_search
from privtune.optim.second_order import dp_second_order

N = 100_000  # more than one block of SUM_BLOCK rows


def _l2(a: np.ndarray, b: np.ndarray) -> float:
    """``||a - b||_2`` of two float vectors, to within one rounding (fsum of exact float64 squares of differences)."""
    diff = [float(x) - float(y) for x, y in zip(np.ravel(a), np.ravel(b), strict=True)]
    return math.sqrt(math.fsum(v * v for v in diff))


class _Rows:
    """A PerExampleObjective returning fixed per-example gradients and (w-dependent) losses."""

    def __init__(self, G: np.ndarray, losses_at_zero: np.ndarray, losses_elsewhere: np.ndarray) -> None:
        self.G, self.L0, self.L1 = G, losses_at_zero, losses_elsewhere
        self.n_samples, self.n_params = G.shape

    def per_example_gradients(self, w, idx):
        return self.G[idx]

    def per_example_losses(self, w, idx):
        return (self.L0 if not np.any(w) else self.L1)[idx]


def _gradient_pair(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-example gradients of norm just below the clip 1 (never clipped), and the neighbour with row 0 negated."""
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(N, 2))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    G *= rng.choice([-1.0, 1.0], size=(N, 1)) * (1.0 - 2.0**-50)
    G2 = G.copy()
    G2[0] = -G[0]  # the exact means differ by 2 ||g_0|| / n, within 2**-49 of the sensitivity 2 / n
    return G, G2


@pytest.mark.parametrize("seed", [1, 26, 27])
def test_neighbouring_line_search_gradients_stay_within_the_mechanism_sensitivity(monkeypatch, seed):
    seen: dict[str, list] = {"means": [], "sens": []}
    mean_fn = loop_module._clipped_gradient_mean
    gaussian = loop_module.Gaussian

    class SpyGaussian:
        @staticmethod
        def from_noise_multiplier(nm, *, sensitivity, random_state):
            seen["sens"].append(sensitivity)
            return gaussian.from_noise_multiplier(nm, sensitivity=sensitivity, random_state=random_state)

    def spy_mean(*args):
        out = mean_fn(*args)
        seen["means"].append(out)
        return out

    monkeypatch.setattr(loop_module, "Gaussian", SpyGaussian)
    monkeypatch.setattr(loop_module, "_clipped_gradient_mean", spy_mean)
    zeros = np.zeros(N)
    means, sens = [], []
    for G in _gradient_pair(seed):
        seen["means"].clear()
        seen["sens"].clear()
        dp_blsgd(_Rows(G, zeros, zeros), epsilon=1.0, delta=1e-6, sampling="full", clip_grad=1.0, n_iter=1,
                 random_state=0)
        means.append(seen["means"][0])  # the first gradient: at w0 = 0 on both data sets
        sens.append(seen["sens"][-1])
    assert sens[0] == sens[1] and sens[0] >= 2.0 / N  # public: the same on both
    assert _l2(means[0], means[1]) <= sens[0]


@pytest.mark.parametrize("seed", [1, 3, 4])
def test_neighbouring_armijo_slacks_stay_within_the_sparse_vector_sensitivity(monkeypatch, seed):
    """Row 0's loss drops by C = 1 on one data set and rises by 1 on the other: the exact slacks differ by 2 C / n."""
    rng = np.random.default_rng(seed)
    A, B = rng.uniform(0, 1, size=N), rng.uniform(0, 1, size=N)
    A[0], B[0] = 1.0, 0.0
    A2, B2 = A.copy(), B.copy()
    A2[0], B2[0] = 0.0, 1.0
    seen: dict[str, list] = {"slacks": [], "sens": []}
    slacks_fn, svt = step_module._armijo_slacks, step_module.SparseVector

    def spy_slacks(*args, **kwargs):
        values = list(slacks_fn(*args, **kwargs))
        seen["slacks"].append(values)
        return iter(values)

    def spy_svt(*, epsilon, sensitivity, threshold, random_state):
        seen["sens"].append(sensitivity)
        return svt(epsilon=epsilon, sensitivity=sensitivity, threshold=threshold, random_state=random_state)

    monkeypatch.setattr(step_module, "_armijo_slacks", spy_slacks)
    monkeypatch.setattr(step_module, "SparseVector", spy_svt)
    G = np.zeros((N, 2))
    for a, b in ((A, B), (A2, B2)):
        noisy_backtracking_line_search(_Rows(G, a, b), np.zeros(2), np.array([1.0, 0.5]), budget=1e-9,
                                       max_backtracks=1, random_state=0)
    assert seen["sens"][0] == seen["sens"][1] and seen["sens"][0] >= 2.0 / N
    assert abs(seen["slacks"][0][0] - seen["slacks"][1][0]) <= seen["sens"][0]


def _second_order_rows(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of norm just below R = 1 (never clipped), labels, and the neighbour's labels (row 0 flipped)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= 1.0 - 2.0**-50
    y = rng.choice([-1.0, 1.0], size=N)
    y2 = y.copy()
    y2[0] = -y[0]  # at w = 0 every gradient is -y x / 4: the exact means differ by 2 B_g / n within 2**-49
    return X, y, y2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_neighbouring_second_order_gradients_stay_within_the_mechanism_sensitivity(monkeypatch, seed):
    X, y, y2 = _second_order_rows(seed)
    seen: dict[str, list] = {"grads": [], "sens": []}
    gaussian, gradient = plan_module.Gaussian, steps_module._DataOracle.gradient

    class SpyGaussian:
        @staticmethod
        def from_noise_multiplier(nm, *, sensitivity, random_state):
            seen["sens"].append(sensitivity)
            return gaussian.from_noise_multiplier(nm, sensitivity=sensitivity, random_state=random_state)

    def spy_gradient(self, w, rows):
        out = gradient(self, w, rows)
        seen["grads"].append(out)
        return out

    monkeypatch.setattr(plan_module, "Gaussian", SpyGaussian)
    monkeypatch.setattr(steps_module._DataOracle, "gradient", spy_gradient)
    grads, sens = [], []
    for labels in (y, y2):
        seen["grads"].clear()
        seen["sens"].clear()
        dp_second_order(X, labels, variant="opt", epsilon=1.0, delta=1e-6, max_iter=1, random_state=0)
        grads.append(seen["grads"][0])
        sens.append(seen["sens"][0])  # the gradient mechanism is built first
    assert sens[0] == sens[1] and sens[0] >= 2.0 * 0.25 / N
    assert _l2(grads[0], grads[1]) <= sens[0]


def test_blocked_sum_is_the_one_product_up_to_a_block_and_fsum_beyond():
    rng = np.random.default_rng(5)
    c = rng.normal(size=3 * SUM_BLOCK + 17)
    G = rng.normal(size=(c.size, 3))
    small = blocked_sum(SUM_BLOCK, lambda a, b: c[a:b] @ G[a:b])
    assert small.tobytes() == (c[:SUM_BLOCK] @ G[:SUM_BLOCK]).tobytes()  # bit for bit the unblocked product
    full = blocked_sum(c.size, lambda a, b: c[a:b] @ G[a:b])
    parts = [c[a:a + SUM_BLOCK] @ G[a:a + SUM_BLOCK] for a in range(0, c.size, SUM_BLOCK)]
    assert np.array_equal(full, [math.fsum(p[j] for p in parts) for j in range(3)])
    assert blocked_sum(c.size, lambda a, b: float(c[a:b].sum())) == math.fsum(
        float(c[a:a + SUM_BLOCK].sum()) for a in range(0, c.size, SUM_BLOCK))


def _gamma(k: int) -> Fraction:
    u = Fraction(1, 2**53)
    return k * u / (1 - k * u)


def test_rounding_factor_matches_its_formula_and_stays_small():
    """psi = 1 + 2 gamma_{B+2} m / f (plus negligible underflow terms), rounded up; psi - 1 <= 2**-6 up to the
    largest sum accepted, and about 1.1e-10 at 1 000 rows (the noise is that much larger)."""
    for m in (1, 1000, SUM_BLOCK, 10**5, 10**7, MAX_SUM_TERMS):
        psi = rounding_factor(terms=m, bound=1.0, divisor=float(m), factor=2.0, coordinates=10)
        k = min(m, SUM_BLOCK) + 2
        main = 1 + 2 * _gamma(k) * m / 2
        assert Fraction(psi) >= main and psi - float(main) < 1e-12
        assert psi - 1 <= 2.0**-6
    assert rounding_factor(terms=1000, bound=1.0, divisor=1000.0, factor=2.0) - 1 < 2e-10


def test_a_sum_beyond_the_largest_accepted_is_refused_before_the_charge():
    with pytest.raises(InvalidParameterError, match="Nothing was spent"):
        step_module.check_sum_terms(MAX_SUM_TERMS + 1, "test")


@pytest.mark.parametrize("d", [1, 3, 50])
@pytest.mark.parametrize("clip", [1.0, 3.0, 1e-100, 1e100])
def test_clip_norm_bound_covers_the_float_clipping(d, clip):
    """The exact norm of ``min(1, clip / ||g||_c) g``, with the norm and the factor computed in float64 as
    ``_clipped_gradient_mean`` computes them, never exceeds ``clip_norm_bound`` (rows far over, just over, just
    under the clip; exact rational arithmetic)."""
    rng = np.random.default_rng(d)
    G = rng.normal(size=(300, d))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    G *= clip * np.concatenate([np.full(100, 1 + 1e-15), np.full(100, 1 - 1e-16), rng.uniform(1, 1e6, 100)])[:, None]
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    factor = np.minimum(1.0, clip / norms)
    bound = Fraction(clip_norm_bound(clip, d))
    for f, g in zip(factor, G, strict=True):
        assert sum((Fraction(float(f)) * Fraction(float(v))) ** 2 for v in g) <= bound**2
