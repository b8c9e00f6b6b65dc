"""Unit tests of privtune.mechanisms.Gaussian and the analytic calibration."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from privtune.accounting.events import GaussianEvent
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Gaussian, calibrate_analytic_gaussian, gaussian_delta

ETA = 2.0**-10


def _reference_delta(sigma: float, epsilon: float, sens: float = 1.0) -> float:
    """Balle & Wang's curve with plain scipy.stats (independent of the implementation)."""
    a, b = sens / (2 * sigma), epsilon * sigma / sens
    return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b)


# --------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, r"The 'epsilon' parameter of Gaussian must be a float in the range "
                           r"\(0\.0, inf\)\. Got 0\.0 instead\."),
        ({"epsilon": float("nan")}, r"The 'epsilon' parameter of Gaussian .* Got nan instead"),
        ({"epsilon": float("inf")}, r"The 'epsilon' parameter of Gaussian .* Got inf instead"),
        ({"delta": 0.0}, r"The 'delta' parameter of Gaussian must be a float in the range "
                         r"\(0\.0, 1\.0\)\. Got 0\.0 instead\."),
        ({"delta": 1.0}, r"The 'delta' parameter of Gaussian .* Got 1\.0 instead"),
        ({"delta": -1e-5}, r"The 'delta' parameter of Gaussian .* Got -1e-05 instead"),
        ({"delta": float("nan")}, r"The 'delta' parameter of Gaussian .* Got nan instead"),
        ({"sensitivity": 0}, r"The 'sensitivity' parameter of Gaussian must be a float in the "
                             r"range \(0\.0, inf\)\. Got 0 instead\."),
        ({"sensitivity": float("nan")}, r"The 'sensitivity' parameter of Gaussian .* Got nan"),
        ({"sensitivity": -1.0}, r"The 'sensitivity' parameter of Gaussian .* Got -1\.0"),
        ({"calibration": "Analytic"}, r"The 'calibration' parameter of Gaussian must be one of "
                                      r"\['analytic', 'classic', 'rdp'\]\. Got 'Analytic' instead\."),
        ({"calibration": None}, r"The 'calibration' parameter of Gaussian .* Got None instead"),
        ({"calibration": "classic", "epsilon": 1.0},
         r"The 'epsilon' parameter of Gaussian must be a float in the range \(0\.0, 1\.0\) when "
         r"calibration='classic'.* Got 1\.0 instead"),
        ({"calibration": "classic", "epsilon": 3.0}, r"when calibration='classic'"),
        ({"random_state": "seed"}, r"The 'random_state' parameter of Gaussian"),
    ],
)
def test_bad_parameters_are_refused(kwargs, match):
    params = {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        Gaussian(**params)


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError):
        Gaussian(1.0, 1e-5, 1.0)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("func", "kwargs", "match"),
    [
        (calibrate_analytic_gaussian, {"epsilon": -1, "delta": 1e-5},
         r"The 'epsilon' parameter of calibrate_analytic_gaussian must be a float"),
        (calibrate_analytic_gaussian, {"epsilon": 1, "delta": 0},
         r"The 'delta' parameter of calibrate_analytic_gaussian must be a float in the range "
         r"\(0\.0, 1\.0\)"),
        (calibrate_analytic_gaussian, {"epsilon": 1, "delta": 1e-5, "sensitivity": 0},
         r"The 'sensitivity' parameter of calibrate_analytic_gaussian"),
        (gaussian_delta, {"sigma": 0.0, "epsilon": 1.0},
         r"The 'sigma' parameter of gaussian_delta must be a float in the range \(0\.0, inf\)"),
        (gaussian_delta, {"sigma": 1.0, "epsilon": -0.1},
         r"The 'epsilon' parameter of gaussian_delta must be a float in the range \[0\.0, inf\)"),
        (gaussian_delta, {"sigma": 1.0, "epsilon": 1.0, "sensitivity": float("inf")},
         r"The 'sensitivity' parameter of gaussian_delta"),
    ],
)
def test_function_parameters_are_validated(func, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        func(**kwargs)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (float("nan"), r"The 'value' parameter of Gaussian contains NaN or infinite values"),
        ([0.0, float("-inf")], r"The 'value' parameter of Gaussian contains NaN or infinite"),
        (np.array([]), r"The 'value' parameter of Gaussian must not be empty"),
    ],
)
def test_randomise_refuses_bad_values_without_drawing(generator, value, match):
    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=generator)
    before = generator.bit_generator.state
    with pytest.raises(InvalidParameterError, match=match):
        mech.randomise(value)
    assert generator.bit_generator.state == before


# --------------------------------------------------------------------------------------
# calibration
# --------------------------------------------------------------------------------------
def test_analytic_calibration_known_value_against_independent_root_find():
    sigma = calibrate_analytic_gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    reference = optimize.brentq(lambda s: _reference_delta(s, 1.0) - 1e-5, 0.5, 50.0,
                                xtol=1e-14, rtol=1e-14)
    assert sigma == pytest.approx(3.73, abs=0.005)
    assert sigma == pytest.approx(reference, rel=1e-7)  # calibrated at delta (1 - 1e-6): sigma ~1e-8 above
    assert sigma > reference


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10])
def test_analytic_calibration_is_tight_and_never_overshoots(epsilon, delta):
    sigma = calibrate_analytic_gaussian(epsilon=epsilon, delta=delta)
    achieved = gaussian_delta(sigma=sigma, epsilon=epsilon)
    assert achieved <= delta * (1 - 1e-6)  # the margin for the float error of the computed curve
    assert achieved > delta * (1 - 2e-6)
    # the next smaller float already violates the (margined) target (rounded up, to adjacent floats)
    assert gaussian_delta(sigma=math.nextafter(sigma, 0.0), epsilon=epsilon) > delta * (1 - 1e-6)
    # independent evaluation agrees that the target is met up to evaluation error
    assert _reference_delta(sigma, epsilon) <= delta * (1 + 1e-7)


def test_calibration_scales_with_sensitivity():
    unit = calibrate_analytic_gaussian(epsilon=0.8, delta=1e-6)
    three = calibrate_analytic_gaussian(epsilon=0.8, delta=1e-6, sensitivity=3.0)
    assert three == pytest.approx(3.0 * unit, rel=1e-12)
    assert gaussian_delta(sigma=three, epsilon=0.8, sensitivity=3.0) <= 1e-6


def test_gaussian_delta_known_values_and_monotonicity():
    assert gaussian_delta(sigma=1.0, epsilon=0.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1)
    sigmas = np.linspace(0.5, 20.0, 50)
    deltas = [gaussian_delta(sigma=s, epsilon=1.0) for s in sigmas]
    assert all(a > b for a, b in zip(deltas[:-1], deltas[1:], strict=True))
    for s in (0.7, 2.0, 6.0):
        assert gaussian_delta(sigma=s, epsilon=0.5) == pytest.approx(_reference_delta(s, 0.5),
                                                                     rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.9])
@pytest.mark.parametrize("delta", [1e-4, 1e-8])
def test_analytic_never_noisier_than_classic(epsilon, delta):
    analytic = Gaussian(epsilon=epsilon, delta=delta, sensitivity=2.0)
    classic = Gaussian(epsilon=epsilon, delta=delta, sensitivity=2.0, calibration="classic")
    assert analytic.sigma <= classic.sigma
    assert classic.noise_multiplier >= math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    assert classic.noise_multiplier == pytest.approx(
        math.sqrt(2 * math.log(1.25 / delta)) / epsilon, rel=1e-15)
    # the classic calibration is valid: its exact delta is below the target
    assert gaussian_delta(sigma=classic.noise_multiplier, epsilon=epsilon) <= delta
    assert classic.calibration == "classic" and analytic.calibration == "analytic"


def test_sigma_noise_multiplier_and_event():
    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    nm = calibrate_analytic_gaussian(epsilon=1.0, delta=1e-5)
    assert mech.noise_multiplier == nm
    # sigma covers the rounding headroom: sigma >= nm * sensitivity * (1 + eta), tightly
    assert Fraction(mech.sigma) >= Fraction(nm) * 2 * (1 + Fraction(1, 1024))
    assert mech.sigma == pytest.approx(nm * 2.0 * (1 + ETA), rel=1e-15)
    assert mech.variance() == mech.sigma**2
    event = mech.privacy_event()
    assert isinstance(event, GaussianEvent) and event == GaussianEvent(noise_multiplier=nm)
    assert event.relation == "replace_one"
    assert gaussian_delta(sigma=event.noise_multiplier, epsilon=1.0) <= 1e-5


# --------------------------------------------------------------------------------------
# grid
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 5, 10_000, 10**6])
def test_grid_keeps_the_calibrated_noise_multiplier(size):
    mech = Gaussian(epsilon=0.7, delta=1e-6, sensitivity=1.3)
    g = mech.grid_spacing(size)
    sigma_grid = Fraction(mech.sigma) / Fraction(g)
    assert sigma_grid.denominator == 1 and sigma_grid >= 2**10
    assert sigma_grid.numerator & (sigma_grid.numerator - 1) == 0  # a power of two
    # integer L2 sensitivity Delta/g + 2 sqrt(d); effective multiplier >= nm, exactly
    a = sigma_grid / Fraction(mech.noise_multiplier) - Fraction(1.3) / Fraction(g)
    assert a >= 0 and a * a >= 4 * size
    # the brief's sufficient condition 2 sqrt(d) g <= eta Delta
    assert 2 * math.sqrt(size) * g <= ETA * 1.3 * (1 + 1e-12)


@pytest.mark.parametrize("size", [1, 3, 5000])
def test_outputs_lie_on_the_grid(size):
    mech = Gaussian(epsilon=2.0, delta=1e-5, sensitivity=0.5, random_state=3,
                    calibration="rdp" if size > 1 else "analytic")
    g = mech.grid_spacing(size)
    out = np.atleast_1d(mech.randomise(np.linspace(-1.0, 1.0, size) + 0.017))
    assert np.array_equal(out, g * np.round(out / g))


def test_reproducibility_secure_source_and_shapes():
    a = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=9, calibration="rdp")
    b = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=9, calibration="rdp")
    assert a.randomise(0.25) == b.randomise(0.25)
    assert np.array_equal(a.randomise(np.ones((2, 3))), b.randomise(np.ones((2, 3))))
    assert a.seeded is True
    secure = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="rdp")
    assert secure.seeded is False
    assert isinstance(secure.randomise(1), float)
    assert secure.randomise(np.zeros((3, 2))).shape == (3, 2)


def test_immutable_and_picklable():
    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=1)
    for name in ("sigma", "noise_multiplier", "epsilon", "_sigma", "other"):
        with pytest.raises(AttributeError):
            setattr(mech, name, 1.0)
    clone = pickle.loads(pickle.dumps(mech))
    assert clone.sigma == mech.sigma and clone.randomise(0.0) == mech.randomise(0.0)


def test_noise_has_the_stated_variance():
    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, random_state=4)
    out = mech.randomise_each(np.zeros(50_000))
    # sample variance within 5 standard errors (SE of s**2 is sigma**2 sqrt(2/n))
    assert abs(out.var() / mech.variance() - 1) < 5 * math.sqrt(2 / out.size)


def test_a_vector_release_needs_the_rdp_calibration():
    """The analytic / classic curves are proven for one coordinate of discrete Gaussian noise only."""
    import privtune.accounting as acc_mod

    mech = Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0, random_state=0)
    with pytest.raises(InvalidParameterError, match="calibration='rdp'"):
        mech.randomise(np.zeros(3))
    assert not mech.privacy_event().vector
    vec = Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0, random_state=0, calibration="rdp")
    assert vec.randomise(np.zeros(3)).shape == (3,) and vec.privacy_event().vector
    assert vec.noise_multiplier > mech.noise_multiplier  # RDP calibration: a little more noise
    spent = acc_mod.compose_events([vec.privacy_event()], delta=1e-6)
    assert spent.epsilon <= 1.0 and spent.delta <= 1e-6


def test_noise_multiplier_mechanism_charges_a_vector_event_by_default():
    """from_noise_multiplier releases vectors, so its default event is the vector (RDP-only) one."""
    mech = Gaussian.from_noise_multiplier(2.0, sensitivity=1.0, random_state=0)
    assert mech.randomise(np.zeros(4)).shape == (4,)
    assert mech.privacy_event().vector
    assert mech.privacy_event() == GaussianEvent(noise_multiplier=2.0, vector=True)
    assert not mech.privacy_event(vector=False).vector  # explicit: the caller releases one coordinate per call
    assert not Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0).privacy_event().vector


@pytest.mark.parametrize(("epsilon", "delta"), [(0.01, 1e-15), (0.1, 1e-15), (0.01, 1e-12), (0.1, 1e-10),
                                                (0.05, 1e-10), (0.05, 1e-8), (0.01, 1e-5), (1.0, 1e-5),
                                                (8.0, 1e-10), (50.0, 1e-9)])
def test_analytic_calibration_meets_the_target_in_exact_arithmetic(epsilon, delta):
    """The exact curve (50 digits) at the calibrated sigma is at most delta; with the float curve alone the
    bisection stopped up to 3e-11 relative above it at the first five of these targets."""
    mp = pytest.importorskip("mpmath")
    sigma = calibrate_analytic_gaussian(epsilon=epsilon, delta=delta)
    with mp.workdps(50):
        a, b = 1 / (2 * mp.mpf(sigma)), mp.mpf(epsilon) * mp.mpf(sigma)
        exact = mp.ncdf(a - b) - mp.e ** mp.mpf(epsilon) * mp.ncdf(-a - b)
        assert exact <= mp.mpf(delta)
        assert exact >= mp.mpf(delta) * (1 - 2e-6)  # and the margin stays small (about 1e-6)
