r"""The privacy event of one DP-SGD run and its noise calibration (public quantities only; no torch).

A DP-SGD run of :class:`~privtune.neural_network.DPSGDClassifier` /
:class:`~privtune.neural_network.DPSGDRegressor` is ``steps`` noisy gradient
steps, each the sum of per-example gradients clipped to L2 norm ``C``
(``max_grad_norm``) over a **Poisson** subsample (each row kept independently
with probability ``q``), plus discrete Gaussian noise of standard deviation
``noise_multiplier * C`` on every coordinate. Under **add/remove** one row
moves that sum by at most ``C``, so a step is the Poisson-subsampled Gaussian
mechanism of noise multiplier ``sigma`` and the run is its ``steps``-fold
composition (Abadi et al. 2016; Mironov, Talwar & Zhang 2019):

``SelfComposedEvent(PoissonSampledEvent(GaussianEvent(sigma, vector=True), q), steps)``

which privtune's accountant bounds through RDP with
:func:`privtune.accounting.rdp_math.poisson_gaussian_rdp` (exact at integer
orders, valid for the lattice Gaussian; see its docstring), the curve Opacus's
:class:`opacus.accountants.RDPAccountant` computes for the continuous Gaussian
(tests compare the two).

Under **replace-one** (privtune's default unit: sizes are public, and
:class:`privtune.model_selection.PrivateSearchCV` composes replace-one events) a
replacement is a removal followed by an addition; the run's composed add/remove
RDP curve is converted by the weak triangle inequality of Rényi divergence
(Mironov 2017, Prop. 11; :meth:`privtune.accounting.RenyiEvent.as_replace_one`),
which roughly doubles to triples the epsilon of the same run (2.65 times at
``q = 0.05``, ``sigma = 1.1``, 200 steps, ``delta = 1e-5``). The replace-one
event is that converted :class:`~privtune.accounting.RenyiEvent`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from privtune.accounting import (
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RenyiEvent,
    SelfComposedEvent,
    compose_events,
)
from privtune.accounting.rdp_math import DEFAULT_ORDERS, poisson_gaussian_rdp
from privtune.exceptions import InvalidParameterError

__all__ = ["RELATIONS", "effective_sample_rate", "n_steps", "dpsgd_privacy_event", "run_epsilon",
           "calibrate_noise_multiplier"]

#: Neighbouring relations a DP-SGD run can be accounted under.
RELATIONS = ("replace_one", "add_remove")
#: Poisson inclusion is decided by an exact uniform integer below 2**53 compared with ``ceil(q 2**53)``.
SAMPLING_RESOLUTION = 2**53
#: Largest noise multiplier the calibration searches (beyond it, the target is out of reach).
_MAX_NOISE = 1e4
_MIN_NOISE = 1e-3


def effective_sample_rate(batch_size: int, n_samples: int) -> tuple[float, int]:
    """The exact Poisson rate the run samples with, and its integer threshold.

    Each row is kept when a uniform integer in ``[0, 2**53)`` is below
    ``K = ceil(q 2**53)``, ``q = batch_size / n_samples`` (capped at 1): the
    inclusion probability is exactly ``K / 2**53 >= q`` (at most ``2**-53``
    above), and the accounting uses that exact value.

    Returns
    -------
    rate : float
        ``K / 2**53``.
    threshold : int
        ``K``.
    """
    q = min(1.0, batch_size / n_samples)
    k = min(SAMPLING_RESOLUTION, math.ceil(q * SAMPLING_RESOLUTION))
    return k / SAMPLING_RESOLUTION, int(k)


def n_steps(epochs: int, batch_size: int, n_samples: int) -> int:
    """Steps of the run: ``epochs`` times ``max(1, round(n / batch_size))`` (Opacus's steps per epoch)."""
    return int(epochs) * max(1, int(round(n_samples / batch_size)))


@functools.lru_cache(maxsize=4096)
def dpsgd_privacy_event(*, sample_rate: float, noise_multiplier: float, steps: int,
                        relation: str = "replace_one") -> PrivacyEvent:
    """The event one DP-SGD run charges (module docstring).

    Memoised: a pure function of public numbers returning an immutable event, asked for the same run again and
    again by a search (every candidate's declaration is checked against the plan's, at every step of
    ``largest_fit_epsilon``'s bisection; a learning rate does not change it).

    Parameters
    ----------
    sample_rate : float in (0, 1]
        The exact Poisson rate (:func:`effective_sample_rate`).
    noise_multiplier : float in (0, inf)
        Noise standard deviation over ``max_grad_norm`` (add/remove sensitivity).
    steps : int >= 1
    relation : {"replace_one", "add_remove"}, default="replace_one"

    Returns
    -------
    PrivacyEvent
        Add/remove: the ``steps``-fold :class:`~privtune.accounting.SelfComposedEvent`
        of the Poisson-subsampled vector Gaussian. Replace-one: a
        :class:`~privtune.accounting.RenyiEvent`, that run's composed curve on
        :data:`~privtune.accounting.rdp_math.DEFAULT_ORDERS` converted by
        :meth:`~privtune.accounting.RenyiEvent.as_replace_one`.
    """
    if relation not in RELATIONS:
        raise InvalidParameterError(f"relation must be one of {list(RELATIONS)}; got {relation!r}.")
    one = PoissonSampledEvent(event=GaussianEvent(noise_multiplier=noise_multiplier, vector=True,
                                                  relation="add_remove"),
                              sample_rate=sample_rate, relation="add_remove", label="DP-SGD step")
    if relation == "add_remove":
        return SelfComposedEvent(event=one, count=steps, relation="add_remove", label="DP-SGD run")
    curve = steps * poisson_gaussian_rdp(DEFAULT_ORDERS, sample_rate, noise_multiplier)
    if not np.all(np.isfinite(curve)):
        raise InvalidParameterError("The run's RDP curve overflows: raise noise_multiplier or lower the steps.")
    return RenyiEvent(orders=tuple(float(a) for a in DEFAULT_ORDERS), epsilons=tuple(float(e) for e in curve),
                      relation="add_remove", label="DP-SGD run").as_replace_one()


def run_epsilon(event: PrivacyEvent, delta: float, relation: str) -> float:
    """The run's epsilon at ``delta`` as privtune's accountant composes it (``compose_events``)."""
    return compose_events([event], delta=delta, relation=relation).epsilon


def calibrate_noise_multiplier(*, epsilon: float, delta: float, sample_rate: float, steps: int,
                               relation: str, owner: str) -> float:
    """The smallest noise multiplier (to 0.1 %) whose run costs at most ``(epsilon, delta)``.

    Bisection in log space on the epsilon privtune's accountant gives the
    event (the returned value is one whose run was checked to convert to at
    most ``epsilon``).

    Raises
    ------
    InvalidParameterError
        If even a noise multiplier of 1e4 does not reach the target (public: nothing spent).
    """
    sigma = _calibrated(float(epsilon), float(delta), float(sample_rate), int(steps), str(relation))
    if sigma is None:
        raise InvalidParameterError(
            f"{owner}: no noise multiplier up to {_MAX_NOISE:g} makes {steps} steps at sample rate "
            f"{sample_rate:.4g} cost at most epsilon={epsilon!r} (delta={delta!r}, relation={relation!r}): "
            "raise epsilon, or lower epochs or batch_size. Nothing was spent.")
    return sigma


@functools.lru_cache(maxsize=4096)
def _calibrated(epsilon: float, delta: float, sample_rate: float, steps: int, relation: str) -> float | None:
    """:func:`calibrate_noise_multiplier`'s bisection, memoised (a pure function of public numbers); None when out
    of reach."""
    def cost(s: float) -> float:
        return run_epsilon(dpsgd_privacy_event(sample_rate=sample_rate, noise_multiplier=s, steps=steps,
                                               relation=relation), delta, relation)

    hi = 1.0
    while cost(hi) > epsilon:
        hi *= 4.0
        if hi > _MAX_NOISE:
            return None
    lo = hi / 4.0 if hi > 1.0 else _MIN_NOISE
    if lo == _MIN_NOISE and cost(lo) <= epsilon:
        return lo
    while hi / lo > 1.001:  # cost(lo) > epsilon >= cost(hi)
        mid = math.sqrt(lo * hi)
        if cost(mid) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi
