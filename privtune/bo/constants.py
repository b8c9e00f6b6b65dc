r"""The constants of Kusner et al. (2015), exactly as the paper states them.

Every quantity here is a function of *public, declared* inputs only (the size of
the candidate set, the number of iterations, delta, the declared task
correlation k1(V, V'), the declared observation-noise standard deviation, the
information gain gamma_T and epsilon), so it can be printed, logged and put in a
report, and users and auditors can see what a configuration costs before any
data is read (``privtune budget``).

All values are in units of the GP prior standard deviation (the GP's scaled
score axis, on which k(lambda, lambda) = 1). Multiply by the half-range of the
declared score bounds to get score units.

Algorithm 1 (noisy observations, sigma > 0)::

    beta_t = 2 log(|Lambda| t^2 pi^2 / (3 delta))
    c      = 2 sqrt((1 - k1) log(3 |Lambda| / delta))
    q      = sigma sqrt(4 log(3 / delta))
    C1     = 8 / log(1 + sigma^-2)
    EM sensitivity       Delta = 2 sqrt(beta_{T+1}) + c
    Laplace scale (on v*) b = sqrt(C1 beta_T gamma_T) / (epsilon sqrt(T)) + c / epsilon + q / epsilon

Algorithm 2 (noise-free observations; de Freitas et al. 2012 constants A, tau)::

    c = 2 sqrt((1 - k1) log(2 |Lambda| / delta))
    b = (A / epsilon) exp(-2 tau / (log 2)^(d / 4)) + c / epsilon

Algorithm 3 (Lipschitz and convex, pure epsilon-DP; score units, not GP units)::

    sensitivity = g* / m + (lambda_max - lambda_min) L / (lambda_max lambda_min)
    b = sensitivity / epsilon

    (The paper's per-lambda term is min(g* / m, L / (m lambda_min)). privtune uses g* / m alone: the
    L / (m lambda_min) branch needs every validation record to have ||x|| <= 1 and the same g(0, x, y), which
    privtune cannot enforce on sensitive rows: see :func:`lipschitz_constants`.)
"""

from __future__ import annotations

import math
from typing import Any

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = [
    "beta_t",
    "kusner_constants",
    "kusner_exact_constants",
    "lipschitz_constants",
    "selection_utility_bound",
    "score_utility_bound",
    "exact_score_utility_bound",
    "lipschitz_score_utility_bound",
]


def beta_t(t: int, *, n_candidates: int, delta: float) -> float:
    """Alg. 1's exploration weight ``beta_t = 2 log(|Lambda| t^2 pi^2 / (3 delta))`` (used as sqrt(beta))."""
    t = check_integer(t, "t", low=1, owner="beta_t")
    n = check_integer(n_candidates, "n_candidates", low=1, owner="beta_t")
    d = check_delta(delta, owner="beta_t", allow_zero=False)
    return 2.0 * (math.log(n) + 2.0 * math.log(t) + 2.0 * math.log(math.pi) - math.log(3.0 * d))


def _common(n_candidates: Any, delta: Any, task_correlation: Any, epsilon: Any, owner: str):
    n = check_integer(n_candidates, "n_candidates", low=1, owner=owner)
    d = check_delta(delta, owner=owner, allow_zero=False)
    k1 = check_real(task_correlation, "task_correlation", low=0.0, high=1.0, closed="both", owner=owner)
    eps = check_epsilon(epsilon, owner=owner)
    return n, d, k1, eps


def kusner_constants(
    *,
    n_candidates: int,
    n_iter: int,
    delta: float,
    task_correlation: float,
    noise_std: float,
    gamma_T: float,
    epsilon: float,
    beta_delta: float | None = None,
) -> dict[str, float]:
    """The constants of Kusner et al. Algorithm 1 for one configuration.

    Parameters
    ----------
    n_candidates : int
        |Lambda|, the size of the finite candidate set.
    n_iter : int
        T, the number of GP-UCB iterations.
    delta : float in (0, 1)
        The delta of *one* release (Alg. 1 releases lambda and v, each (epsilon, delta)).
    task_correlation : float in [0, 1]
        The declared k1(V, V') between the validation set and a neighbour.
    noise_std : float in (0, inf)
        sigma, the declared observation-noise standard deviation (GP units).
    gamma_T : float in [0, inf)
        The maximum information gain (privtune uses the greedy value / (1 - 1/e)).
    epsilon : float in (0, inf)
        The epsilon of one release.
    beta_delta : float in (0, 1) or None, default=None
        The delta at which the *loop* computed its beta_t (``None``: ``delta``).
        Thm. 3's regret term bounds the GP-UCB run that actually happened, so
        the score release's ``beta_T`` must be the loop's; the union-bound terms
        ``c`` and ``q`` stay at the release's own ``delta``. When the loop's delta
        is the smaller (an uneven budget split), the three failure events still
        sum to at most ``delta``.

    Returns
    -------
    dict
        ``beta_T``, ``beta_T1`` (beta_{T+1}), ``c``, ``q``, ``C1``, ``gamma_T``,
        ``em_sensitivity`` (2 sqrt(beta_{T+1}) + c), ``em_weight`` (epsilon /
        (2 em_sensitivity), the coefficient of mu_T in the EM exponent) and
        ``laplace_scale`` (Alg. 1's noise scale on max v_t), all in GP units.
    """
    owner = "kusner_constants"
    n, d, k1, eps = _common(n_candidates, delta, task_correlation, epsilon, owner)
    T = check_integer(n_iter, "n_iter", low=1, owner=owner)
    sigma = check_real(noise_std, "noise_std", low=0.0, owner=owner)
    g = check_real(gamma_T, "gamma_T", low=0.0, closed="left", owner=owner)
    db = d if beta_delta is None else check_delta(beta_delta, owner=owner, allow_zero=False)
    bT = beta_t(T, n_candidates=n, delta=db)
    bT1 = beta_t(T + 1, n_candidates=n, delta=d)
    c = 2.0 * math.sqrt((1.0 - k1) * math.log(3.0 * n / d))
    q = sigma * math.sqrt(4.0 * math.log(3.0 / d))
    C1 = 8.0 / math.log1p(sigma**-2)
    em = 2.0 * math.sqrt(bT1) + c
    lap = math.sqrt(C1 * bT * g) / (eps * math.sqrt(T)) + c / eps + q / eps
    return {"beta_T": bT, "beta_T1": bT1, "c": c, "q": q, "C1": C1, "gamma_T": g,
            "em_sensitivity": em, "em_weight": eps / (2.0 * em), "laplace_scale": lap}


def kusner_exact_constants(
    *,
    n_candidates: int,
    delta: float,
    task_correlation: float,
    A: float,
    tau: float,
    n_dims: int,
    epsilon: float,
) -> dict[str, float]:
    """The constants of Kusner et al. Algorithm 2 (noise-free observations).

    ``A`` and ``tau`` are the constants of de Freitas et al. (2012)'s exponential
    regret bound; the paper gives no values, so the user declares them and the
    guarantee is conditional on that bound holding. Returns ``c`` (with
    log(2|Lambda|/delta)), ``regret_term`` A exp(-2 tau / (log 2)^(d/4)),
    ``sensitivity`` (regret_term + c) and ``laplace_scale`` (sensitivity / epsilon).
    """
    owner = "kusner_exact_constants"
    n, d, k1, eps = _common(n_candidates, delta, task_correlation, epsilon, owner)
    a = check_real(A, "A", low=0.0, closed="left", owner=owner)
    t = check_real(tau, "tau", low=0.0, closed="left", owner=owner)
    dims = check_integer(n_dims, "n_dims", low=1, owner=owner)
    c = 2.0 * math.sqrt((1.0 - k1) * math.log(2.0 * n / d))
    regret = a * math.exp(-2.0 * t / math.log(2.0) ** (dims / 4.0))
    return {"c": c, "regret_term": regret, "sensitivity": regret + c, "laplace_scale": (regret + c) / eps}


def lipschitz_constants(
    *,
    n_validation: int,
    epsilon: float,
    lipschitz: float,
    loss_bound: float,
    lambda_min: float,
    lambda_max: float,
) -> dict[str, float]:
    """The constants of Kusner et al. Algorithm 3 (Theorem 7 and Chaudhuri & Vinterbo 2013), corrected.

    The per-lambda sensitivity (how far the score of one fixed lambda, the
    trained weights w_lambda fixed, moves when one validation record is
    replaced) is ``g* / m``, for every record whatever it is: the score is a
    mean of m per-row losses in ``[0, g*]`` (``PrivateSearchCV`` refuses a
    scorer whose own replace-one sensitivity exceeds ``g* / m``), and a record
    on which the estimator or scorer fails keeps a term in that range (row
    isolation; a failing row of a built-in scorer gets the worst value ``g*``).

    **Deviation from the paper.** Theorem 7 (with Chaudhuri & Vinterbo 2013)
    uses ``min(g* / m, L / (m lambda_min))``. Its second branch (which would
    be ``2 L / (m lambda_min)`` under replace-one, since both the removed and
    the added record move the score) rests on two facts about *every*
    validation record: ``||x|| <= 1``, so that ``|g(w, x, y) - g(0, x, y)| <=
    L ||w|| <= L / lambda_min``, and ``g(0, x, y) = phi(0)`` the same for every
    record (a margin loss). privtune can enforce neither on the sensitive
    validation rows: they are never norm-clipped (an estimator's own
    preprocessing decides its feature space), and a row on which
    ``predict``/``predict_proba`` raises or returns NaN is given ``g*`` by row
    isolation, whatever w is, so ``g(0, x_bad, y) = g* != phi(0)``. One such
    row moves the score by up to ``g* / m``: with ``L = 1``, ``lambda_min = 1``,
    ``g* = 10``, ``m = 100`` a NaN row, or a row of norm 100, moved the released
    score by 0.094 where ``2 L / (m lambda_min) + path`` allowed 0.021. So the
    branch is dropped; it was never the smaller one when ``g* <= 2 L / lambda_min``.

    The path term ``(lambda_max - lambda_min) L / (lambda_max lambda_min)``
    (strong convexity: ``||w_lambda - w_lambda'|| <= (lambda' - lambda) /
    (lambda lambda')``, then L-Lipschitz g) is kept as the paper states it. It
    bounds how far the score of one data set moves between two lambdas, and so
    needs the declared L to hold on the validation records as well: it remains a
    declaration about the data (rows inside the domain on which g is
    L-Lipschitz in w) that privtune does not enforce. Rows far outside it (norm
    1e6) can make one data set's score jump by a large part of g* between two
    candidates; one replaced row that changes which candidates the raw-score
    loop visits then moves f_BO by that jump (measured: 13.8 times this
    ``sensitivity``, with the per-lambda term already g*/m).

    Parameters
    ----------
    n_validation : int
        m, the (public) size of the validation set.
    epsilon : float in (0, inf)
    lipschitz : float in (0, inf)
        L, the Lipschitz constant of the validation loss g in w (used by the
        path term only).
    loss_bound : float in (0, inf)
        g*, the maximum of g (the width of the declared score bounds).
    lambda_min, lambda_max : float
        The range of the L2-regularisation hyperparameter, 0 < lambda_min <= lambda_max.

    Returns
    -------
    dict
        ``per_lambda_sensitivity`` g*/m (the score of one fixed lambda; used by
        the exponential mechanism over Lambda), ``path_term`` (lambda_max -
        lambda_min) L / (lambda_max lambda_min), ``sensitivity`` (their sum,
        Thm. 7) and ``laplace_scale`` in **score units**.
    """
    owner = "lipschitz_constants"
    m = check_integer(n_validation, "n_validation", low=1, owner=owner)
    eps = check_epsilon(epsilon, owner=owner)
    L = check_real(lipschitz, "lipschitz", low=0.0, owner=owner)
    g = check_real(loss_bound, "loss_bound", low=0.0, owner=owner)
    lo = check_real(lambda_min, "lambda_min", low=0.0, owner=owner)
    hi = check_real(lambda_max, "lambda_max", low=lo, closed="left", owner=owner)
    per = g / m  # not min(g/m, 2L/(m lo)): see the docstring
    path = (hi - lo) * L / (hi * lo)
    return {"per_lambda_sensitivity": per, "path_term": path, "sensitivity": per + path,
            "laplace_scale": (per + path) / eps}


def _check_a(confidence: float, delta: float, owner: str) -> float:
    """a such that the bound holds with probability >= confidence = 1 - (delta + e^-a)."""
    conf = check_real(confidence, "confidence", low=0.0, high=1.0, owner=owner)
    slack = 1.0 - conf - delta
    if slack <= 0:
        raise InvalidParameterError(
            f"The 'confidence' parameter of {owner} must be below 1 - delta = {1 - delta!r}; got {confidence!r}.")
    return math.log(1.0 / slack)


def selection_utility_bound(constants: dict[str, float], *, n_candidates: int, epsilon: float, delta: float,
                            confidence: float = 0.95) -> float:
    """Thm. 2: with probability >= ``confidence``, mu_T(lambda~) >= f(lambda*) - (returned value), GP units.

    The value is ``2 sqrt(beta_T) + q + (2 Delta / epsilon)(log |Lambda| + a)`` with
    ``a = log(1 / (1 - confidence - delta))``.
    """
    a = _check_a(confidence, delta, "selection_utility_bound")
    return (2.0 * math.sqrt(constants["beta_T"]) + constants.get("q", 0.0)
            + (2.0 * constants["em_sensitivity"] / epsilon) * (math.log(n_candidates) + a))


def score_utility_bound(constants: dict[str, float], *, n_iter: int, epsilon: float, delta: float,
                        confidence: float = 0.95) -> float:
    """Thm. 4: with probability >= ``confidence``, |v~ - f(lambda*)| <= (returned value), GP units.

    ``sqrt(2 log(2T/delta)) + Omega/T + a (Omega/(epsilon T) + c/epsilon + q/epsilon)``
    with ``Omega = sqrt(C1 T beta_T gamma_T)``.
    """
    a = _check_a(confidence, delta, "score_utility_bound")
    T = n_iter
    omega = math.sqrt(constants["C1"] * T * constants["beta_T"] * constants["gamma_T"])
    return (math.sqrt(2.0 * math.log(2.0 * T / delta)) + omega / T
            + a * (omega / (epsilon * T) + constants["c"] / epsilon + constants["q"] / epsilon))


def exact_score_utility_bound(constants: dict[str, float], *, epsilon: float, delta: float,
                              confidence: float = 0.95) -> float:
    """Thm. 6: with probability >= ``confidence``, |f~ - f(lambda*)| <= Omega + a(Omega/eps + c/eps), GP units."""
    a = _check_a(confidence, delta, "exact_score_utility_bound")
    omega = constants["regret_term"]
    return omega + a * (omega / epsilon + constants["c"] / epsilon)


def lipschitz_score_utility_bound(constants: dict[str, float], *, confidence: float = 0.95) -> float:
    """Thm. 8: with probability >= ``confidence``, |f~_L - f_BO| <= a * laplace_scale (score units)."""
    conf = check_real(confidence, "confidence", low=0.0, high=1.0, owner="lipschitz_score_utility_bound")
    return math.log(1.0 / (1.0 - conf)) * constants["laplace_scale"]
