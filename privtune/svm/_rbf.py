r"""Differentially private RBF-kernel SVM through public kernel maps: random Fourier or Taylor features.

The RBF kernel ``k(x, x') = exp(-gamma ||x - x'||^2)`` is approximated by the
random Fourier features of Rahimi & Recht (2007),

.. math:: \phi(x) = \sqrt{2/D}\, \cos(W^\top x + b), \quad W_{ij} \sim N(0, 2\gamma),
   \; b_j \sim U[0, 2\pi),

and a smoothed-hinge linear SVM is trained on ``phi(X)`` with the solvers of
Kuru et al. (2022). ``W`` and ``b`` are drawn from ``feature_seed``, which is
**public**: the feature map depends on ``gamma``, ``n_components``,
``n_features`` and the seed only, never on the data. Every coordinate of
``phi(x)`` lies in ``[-sqrt(2/D), sqrt(2/D)]`` whatever ``x`` is, so
``||phi(x)||_1 <= sqrt(2 D)`` and ``||phi(x)||_2 <= sqrt(2)`` for every input
``x``: no input norm bound is needed. Since ``E ||phi(x)||_2**2 = 1`` and the
norm concentrates around 1 (standard deviation about ``sqrt(1 / (2 D))`` of the
squared norm), the mapped rows are clipped to the L2 norm 1: the declared bounds
are

.. math:: \|\phi(x)\|_1 \le \sqrt{2D}, \qquad \|\phi(x)\|_2 \le 1,

which lowers the Gaussian noise by ``sqrt(2)`` against the unclipped bound at
the price of shrinking about half the rows by a few per cent (privtune's
choice; the same clipping is applied in ``predict``).

**Centred features** (``reference_norm=r``, the default ``r = 1``; privtune's
choice, not in Rahimi & Recht). For an input of norm ``r`` the features share a
common component: over the random directions, ``E phi(x) = e^{-gamma r^2} phi(0)``
with ``phi(0) = sqrt(2/D) cos(b)``, and the part that tells inputs apart has
expected squared norm ``1 - e^{-2 gamma r^2}`` only (about ``2 gamma r^2`` for a
small ``gamma``). Noisy gradient steps then spend their budget on that common
direction, an intercept in disguise, and at small ``gamma`` the clipped rows
carry almost no signal: on breast cancer at epsilon = 0.3 with ``gamma = 0.1``
the plain map returned the majority-class model. The map used is therefore

.. math:: \psi(x) = \frac{\phi(x) - a\,\phi(0)}{\sqrt{1 - a^2}}, \qquad a = e^{-\gamma r^2},

clipped to the L2 norm 1 as above. It is a fixed, data-independent affine map of
the features (the public ``W``, ``b``, ``gamma`` and ``r``): before the clipping,
linear models with an intercept on ``psi`` and on ``phi`` are the same class (the
shift is a change of intercept, the scale one of the weights), and the privacy
analysis is unchanged, since the declared bounds hold after the clipping whatever
``x`` is. What changes is which rows the clip shrinks and the conditioning of the
noisy gradient steps. ``reference_norm=None`` keeps the plain map.

**Taylor features** (``features="taylor"``; privtune's choice, not in Rahimi &
Recht). The deterministic map of ``privtune/svm/_taylor.py``: the inputs are
clipped to the L2 norm ``r`` (``reference_norm``, 1 when it is None) and divided
by it, then mapped to every monomial of degree 1 to ``K`` of the RBF kernel's
Maclaurin series ``exp(2 gamma r^2 u.u')``, weighted so that inner products of
mapped rows are the truncated series (the constant term is left to the
intercept, the row factors ``e^{-gamma ||x||^2}``, constant on rows of norm
``r``, are left out), scaled to norm 1 at ``||u|| = 1``, centred (with a
``reference_norm``: its mean ``mu`` over the unit sphere, a public vector in
closed form, is subtracted and the rows divided by ``sqrt(1 - ||mu||^2)``, as
the random features are centred) and clipped to norm 1. The
map has ``C(d + K, K) - 1`` columns and no approximation noise; it is a
public, data-independent map, so the privacy analysis is the same as for the
random features. ``features="auto"`` (the default) takes it when the training
set has at least 4 rows per column of it (and, with an explicit integer
``n_components``, at most that many columns). The threshold is measured, not
derived (``benchmarks/results/dpsvc_taylor_threshold.md``): with the
column balance and the centring below, the Taylor map beat the random features
by 3.1 points on average over the 105 cells (gamma 0.3 / 1 / 3, epsilon 0.1 to
10) of the seven development tasks with 4 to 20 rows per column (71 better, 10
worse by more than a point) and by 4.0 over the 75 cells of five tasks made
afterwards; below 4 rows per column it fell to the majority class on
imbalanced sets more often. It was 20 before (``benchmarks/studies/dpsvc_taylor.py``,
chosen before the balance and the centring).

**Column balance** (``column_balance``, Taylor map only; privtune's choice).
The kernel's Maclaurin weights give the degree-1 block (d columns) as much
weight as the degree-2 block (about d**2 / 2 columns) at gamma = 1, so each
higher-degree column is small, and under noise of the same size in every
direction the noisy steps learn those columns slowly. ``column_balance=beta``
moves the blocks' weights towards their column counts
(``privtune/svm/_taylor.py``); ``"auto"`` (the default) sets beta from the
run's public noise-to-signal ratio, 0 in the noisy regime and up to 0.75 once
the noise is small (:func:`auto_column_balance`). With the centring, on 14 000
synthetic rows of 20 features at epsilon = 1: 0.946 against 0.927 without
either (5 seeds, ``benchmarks/results/dpsvc_column_balance.md``; 0.945 over 25
seeds at today's defaults, ``benchmarks/results/dp_trainer_defaults.md``). It moves the
kernel with epsilon, so at a strong regularisation the accuracy can fall as
epsilon grows: raw ``make_circles`` rows at C = 0.01, gamma = 1, 0.984 at
epsilon = 0.1 and 0.974 at 1 (``benchmarks/trainers/dp_svm_accuracy.py``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant
from privtune.exceptions import InvalidParameterError
from privtune.linear_model._logistic import (
    _COMMON_ATTRS_DOC,
    _COMMON_PARAMS_DOC,
    _PRIVACY_DOC,
    _SCALING_DOC,
    _DPMarginClassifier,
)
from privtune.optim._losses import clip_rows, zero_non_finite
from privtune.optim.accelerated import gaussian_run_multiplier
from privtune.svm._taylor import (
    MAX_TAYLOR_DEGREE,
    taylor_degree_for,
    taylor_dimension,
    taylor_map,
    taylor_sphere_mean,
)
from privtune.utils._validation import check_integer, check_real

__all__ = ["DPSVC"]



def _auto_components(n_samples: int) -> int:
    """``n_components="auto"``: ``clamp(round(4 sqrt(n)), 100, 500)`` from the public training size."""
    return int(min(500, max(100, round(4.0 * math.sqrt(n_samples)))))


#: Declared L2 bound of the random-feature rows (they are clipped to it; their mean squared norm is 1).
_FEATURE_NORM = 1.0

#: The kernel maps of ``features``.
_FEATURE_MAPS = ("auto", "fourier", "taylor")

#: ``features="auto"`` takes the Taylor map when the training set has at least this many rows per column of it
#: (``benchmarks/studies/dpsvc_taylor_threshold.py``; 20 before the column balance and the centring).
TAYLOR_ROWS_PER_FEATURE = 4

#: Largest number of columns of the Taylor map (the same cap as ``n_components``).
_MAX_TAYLOR_COLUMNS = 100_000

#: ``column_balance="auto"``: the largest balance, reached when the noise-to-signal ratio is at most
#: ``_BALANCE_QUIET``; none at ``_BALANCE_NOISY`` or above; log-linear in between (measured,
#: ``benchmarks/results/dpsvc_column_balance.md``; the sweep of beta that chose the two constants is described in
#: ``benchmarks/results/trainers_guide_notes.md``).
COLUMN_BALANCE_MAX = 0.75
_BALANCE_NOISY = 0.1
_BALANCE_QUIET = 0.01


def auto_column_balance(epsilon: float, delta: float, noise: str, n_samples: int, columns: int) -> float:
    """``column_balance="auto"`` of a Taylor-map fit, from public quantities only.

    ``r = 2 nm sqrt(columns) / n`` is the run's noise-to-signal ratio (the one
    ``horizon="auto"`` reads: ``nm`` the Gaussian noise multiplier of one run at
    ``(epsilon, delta)``, ``columns`` the coefficients of one weight vector,
    the intercept's included). The balance is ``0.75 * clip(log10(0.1 / r), 0, 1)``:
    none when one step's noise is a tenth of the largest gradient or more, 0.75
    from a hundredth down. Measured, not derived (``benchmarks/studies/dpsvc_column_balance.py``):
    the two constants were chosen from a sweep of the balance over {0, 0.25,
    0.5, 0.75} on the 8 tasks of ``benchmarks/studies/dpsvc_taylor.py`` where the Taylor
    map is the default (gamma 0.3 / 1 / 3, epsilon 0.1 to 10), where a fixed
    balance of 0.5 gained at epsilon >= 1 and lost up to 6.5 points at
    epsilon = 0.1. The balance alone against none, both on the uncentred map
    (``reference_norm=None``), over 120 (task, gamma, epsilon) cells each: on
    those tasks +1.0 point on average, 44 cells better by more than a point,
    none worse (worst -0.7); on 8 tasks made afterwards +0.9, 41 better, none
    worse (worst -0.8). With the centring of the default map: +1.2 and +1.1
    against the map before, 1 of the 240 cells worse by more than a point. The
    gain shrinks as gamma grows (the kernel already weights the high degrees).
    Laplace noise: 0 (not measured).
    """
    if noise != "gaussian":
        return 0.0
    r = 2.0 * gaussian_run_multiplier(float(epsilon), float(delta)) * math.sqrt(columns) / max(1, int(n_samples))
    if not math.isfinite(r) or r >= _BALANCE_NOISY:
        return 0.0
    if r <= _BALANCE_QUIET:
        return COLUMN_BALANCE_MAX
    return COLUMN_BALANCE_MAX * math.log(_BALANCE_NOISY / r) / math.log(_BALANCE_NOISY / _BALANCE_QUIET)


class DPSVC(_DPMarginClassifier):
    __doc__ = r"""RBF-kernel SVM with differential privacy through a public kernel map; two or more classes.

    (epsilon, delta)-DP by default (Gaussian noise, privtune's extension);
    ``noise="laplace"`` gives pure epsilon-DP. By default a quarter of the
    kernel is linear (``linear_share=0.25``: the kernel is ``0.25 <xbar, xbar'>
    + 0.75 k_rbf``, module docstring), which learns markedly better under noise
    on small sets; ``linear_share=0`` is the plain RBF kernel.

    Parameters
    ----------
    C : float in (0, inf), default=1.0
        Inverse regularisation strength (scikit-learn's convention, see below).
    gamma : float in (0, inf), default=1.0
        RBF kernel coefficient: ``k(x, x') = exp(-gamma ||x - x'||^2)``.
    n_components : int in [1, 100000] or "auto", default="auto"
        Number ``D`` of random Fourier features. ``"auto"``:
        ``D = clamp(round(4 sqrt(n)), 100, 500)`` from the public training size
        ``n`` (100 features up to 625 rows, 500 from 15 625 rows): more
        features approximate the kernel better and cost little accuracy to
        noise once ``n`` is large (measured in
        ``benchmarks/trainers/dp_trainer_defaults.py``: on 14 000 synthetic rows at
        epsilon = 1, 0.864 with 100 features and 0.922 with 500, 3 seeds; on breast
        cancer's 398 rows the count made no consistent difference). Their L2 norm is at most
        1 whatever ``D`` (they are clipped to it; the Gaussian noise's bound);
        their L1 bound, hence the Laplace noise, grows as ``sqrt(D)``
        (``sqrt(2 D)`` with ``reference_norm=None``).
    reference_norm : float in (0, inf) or None, default=1.0
        The input norm ``r`` the random features are centred and scaled for
        (module docstring): ``(phi(x) - e^{-gamma r^2} phi(0)) / sqrt(1 -
        e^{-2 gamma r^2})``, then clipped to norm 1. The Taylor map clips the
        inputs to norm ``r``, divides them by it and is centred on the unit
        sphere (``(tau(u) - mu) / sqrt(1 - ||mu||^2)``, module docstring); with
        None it clips to norm 1 and is not centred. It affects accuracy only,
        never the guarantee (a public map followed by the clipping); the random
        features never clip the inputs, the linear part (``linear_share``)
        clips them to norm ``r``. 1 suits rows scaled to unit norm, the convention
        of privtune's linear DP estimators. Measured at the defaults against the
        plain map (``None``, the map before this release) in
        ``benchmarks/results/dpsvc_features.md`` (the random features alone:
        ``benchmarks/results/dpsvc_features_fourier.md``).
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit`` (with ``delta`` below for the default
        Gaussian noise; pure DP with ``noise="laplace"``).
    smoothing : float in (0, inf), default=1.0
        Width ``h`` of the quadratic part of the smoothed hinge loss.
    feature_seed : int in [0, inf), default=0
        Seed of the random features. **Public**: it determines the feature map,
        which is data-independent; it is unrelated to the noise (``random_state``).
    linear_share : float in [0, 1), default=0.25
        Share ``s`` of a linear kernel in the model's kernel (module docstring):
        the features are ``[sqrt(s) xbar, sqrt(1 - s) psi(x)]`` with ``xbar`` the
        input clipped to the L2 norm ``reference_norm`` (1 with
        ``reference_norm=None``) and divided by it, so the kernel is
        ``s <xbar, xbar'> + (1 - s) k_rbf``. It affects accuracy only, never the
        guarantee. 0 is the plain RBF kernel. With the Taylor map the share is
        added to its degree-1 block (the same kernel, no duplicated columns).
    features : {"auto", "fourier", "taylor"}, default="auto"
        The public kernel map (module docstring). ``"fourier"``: the (centred)
        random Fourier features, ``n_components`` of them. ``"taylor"``: the
        monomials of degree 1 to ``degree`` of the kernel's Maclaurin series,
        ``C(d + K, K) - 1`` columns (refused above 100 000, before anything is
        spent). ``"auto"``: ``"taylor"`` when the training set has at least 4
        rows per column of it, else ``"fourier"``; a function of the public
        sizes ``n`` and ``d`` only; an explicit integer ``n_components`` also
        caps the Taylor map's columns under ``"auto"`` (more columns: the
        random features, as many as asked). Measured in
        ``benchmarks/results/dpsvc_taylor.md`` and
        ``benchmarks/results/dpsvc_taylor_threshold.md``.
    degree : int in [1, 10] or "auto", default="auto"
        Top degree ``K`` of the Taylor map. ``"auto"``: the largest ``K`` in
        [2, 8] whose map has at most as many columns as the random-feature
        count (``n_components``, or its ``"auto"`` value) would be, and at least
        2 (a circle is exact in the degree-2 monomials).
    column_balance : float in [0, 1] or "auto", default="auto"
        Taylor map only: the exponent ``beta`` that moves the weight of each
        degree block from its share of the kernel towards its share of the
        columns (``privtune/svm/_taylor.py``; 0: the kernel's Maclaurin
        weights, 1: the same weight per column). The map stays public and of
        norm at most 1, so the guarantee is unchanged; the kernel becomes
        ``sum_k w_k (u.u')^k``. ``"auto"``: ``0.75 * clip(log10(0.1 / r), 0,
        1)`` with ``r = 2 nm sqrt(columns + 1) / n`` the run's noise-to-signal
        ratio (``nm`` the Gaussian noise multiplier of ``(epsilon, delta)``):
        0 in the noisy regime, 0.75 once the noise is small; 0 with
        ``noise="laplace"`` (not measured). Public quantities only. Measured
        in ``benchmarks/results/dpsvc_column_balance.md``.
    horizon_floor : float in [0, 1e6], default=0.5
        With ``horizon="auto"`` and Gaussian noise, at least
        ``horizon_floor / r`` steps (``r`` the run's noise-to-signal ratio, as
        above), still at most the rule's cap ``max(50, 2 d)`` and
        ``max_iter``. It lengthens the horizon only once the noise is small
        (``r < (horizon_floor / 5)**2``, i.e. below 0.01 at 0.5), where the
        kernel maps' many small columns still gain from more steps; 0 is the
        linear models' rule (privtune's, not the paper's). Privacy-neutral:
        the run's cost does not depend on its number of steps. Measured in
        ``benchmarks/results/dpsvc_horizon_floor.md``.""" + \
        _COMMON_PARAMS_DOC.replace("""
    C : float in (0, inf), default=1.0
        Inverse regularisation strength, as in scikit-learn""", """
    C (convention)
        Inverse regularisation strength, as in scikit-learn""").replace("""
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit`` (with ``delta`` below for the default
        Gaussian noise; pure DP, ``delta = 0``, with ``noise="laplace"``).""", "").replace(
            "MAX_SLOPE_DEFAULT", "1.0").replace("MAX_SLOPE_NOTE", "").replace("""
    max_iter : int in [1, 100000], default=100
        Largest number of steps (exactly the number with
        ``horizon="max_iter"``). Every step is one full pass over the data
        (one batch with ``batch_size``). With ``horizon="auto"`` the rule's
        own cap ``max(50, 2 d)`` binds first unless ``d`` exceeds 50.""", """
    max_iter : int in [1, 100000], default=1000
        Largest number of steps (exactly the number with
        ``horizon="max_iter"``; also the cap of ``horizon="paper"``). Every
        step is one full pass over the mapped rows (one batch with
        ``batch_size``). With ``horizon="auto"`` the rule chooses ``T``
        (``5 / sqrt(r)`` steps, fewer in the noisy regime, at least
        ``horizon_floor / r`` in the quiet one) up to its own cap
        ``max(50, 2 d)`` (``d`` the mapped columns and the intercept), so
        ``max_iter`` binds only where it is lower than both. 1000 rather than the
        linear models' 100 because the kernel maps have hundreds of columns:
        the cap of 100 stopped the rule at 14 000 rows from ``epsilon = 10``
        and at 35 000 rows from ``epsilon = 3``, where more steps gained 0.15,
        0.7 and 1.7 points (25 seeds; ``benchmarks/results/trainers_guide_notes.md``,
        "Parameters of ``DPLogisticRegression``, ``DPLinearSVC`` and ``DPSVC``").""") + """

    Attributes
    ----------""" + _COMMON_ATTRS_DOC + """
    features_ : {"fourier", "taylor"}
        The kernel map used (``features="auto"`` resolved).
    n_components_ : int
        Columns of that map: ``D`` random features, or the Taylor map's
        ``C(d + K, K) - 1`` monomials.
    degree_ : int or None
        The Taylor map's top degree ``K`` (None with the Fourier map).
    column_balance_ : float or None
        The Taylor map's column balance ``beta`` used (``"auto"`` resolved;
        None with the Fourier map).
    taylor_centre_ : ndarray of shape (n_components_,) or None
        The Taylor map's mean ``mu`` on the unit sphere, subtracted from every
        mapped row (public: a function of the parameters and ``d``); None
        with the Fourier map or ``reference_norm=None``.
    random_weights_ : ndarray of shape (n_features, n_components_)
        ``W`` (public, from ``feature_seed``); Fourier map only.
    random_offset_ : ndarray of shape (n_components_,)
        ``b`` (public, from ``feature_seed``); Fourier map only.
    linear_share_ : float
        The ``linear_share`` used. Fourier map: ``coef_`` holds the
        ``n_features_in_`` weights of the linear part first, then the
        ``n_components_`` weights of the random features (only the latter when
        it is 0). Taylor map: the ``n_components_`` weights of the monomials,
        degree by degree (the linear part is the degree-1 block).

    See Also
    --------
    privtune.svm.DPLinearSVC : the linear model trained on the features.

    Notes
    -----""" + _PRIVACY_DOC + """ The mapped rows satisfy, for every ``x``
    (module docstring), ``||psi(x)||_2 <= 1`` after clipping and so
    ``||psi(x)||_1 <= sqrt(D)`` (with ``reference_norm=None``:
    ``||phi(x)||_1 <= sqrt(2 D)`` coordinate by coordinate); with the linear
    share ``s`` the row ``[sqrt(s) xbar, sqrt(1 - s) psi(x)]`` has L2 norm at
    most 1 and ``R_1 = sqrt(s d) + sqrt(1 - s)`` times that L1 bound. So the
    per-example L1 sensitivity of the gradient is ``2 kappa (R_1 + intercept_scaling)``
    with that ``R_1`` (``kappa = max_slope``), the L2 one
    ``2 kappa sqrt(1 + intercept_scaling**2)``, and the smoothness bound is
    ``(1 + intercept_scaling**2) / h + 1/(C n)``. ``coef_`` holds the weights
    of the linear part (the clipped inputs ``xbar``, when ``linear_share > 0``)
    and then of the (centred) random features.

    With the Taylor map the rows are clipped to L2 norm 1 and so
    ``||u||_1 <= sqrt(n_components_)``: the same L2 bound, hence the same
    Gaussian sensitivity and charged event, as the random features.

    The inputs are clipped to the L2 norm ``reference_norm`` before the
    Taylor map and the linear part, and the RBF kernel
    ``exp(-gamma ||x - x'||^2)`` assumes inputs on the scale ``gamma`` is
    chosen for: with raw features (a column near 1000) the clipped inputs all
    point almost along that column and the kernel between distinct rows is
    about 0, so the model predicts the majority class.""" + _SCALING_DOC.replace(
        "CLIPPED_TO", "the inputs are clipped to ``reference_norm``, the mapped rows to norm 1") + """

    Random features are not in Kuru et al. (2022); the seed-002 solvers are
    applied unchanged to the mapped data (Rahimi & Recht 2007; the same route as
    Chaudhuri, Monteleoni & Sarwate 2011, section 6, for private kernel SVMs).

    References
    ----------
    .. [KBGY22] N. Kuru, S. I. Birbil, M. Gürbüzbalaban and S. Yıldırım,
       "Differentially Private Accelerated Optimization Algorithms", SIAM J.
       Optim. 32(2), 2022.
    .. [RR07] A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel
       Machines", NeurIPS 2007.
    .. [CMS11] K. Chaudhuri, C. Monteleoni and A. D. Sarwate, "Differentially
       Private Empirical Risk Minimization", JMLR 12, 2011.
    .. [CKS11] A. Cotter, J. Keshet and N. Srebro, "Explicit Approximations of
       the Gaussian Kernel", arXiv:1109.4603, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.svm import DPSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> y = (np.linalg.norm(X, axis=1) < 1.2).astype(int)
    >>> clf = DPSVC(C=100.0, gamma=0.5, n_components=20, epsilon=5.0, random_state=0).fit(X, y)
    >>> clf.features_, clf.degree_, clf.n_components_  # 4 000 rows >= 20 x 20 columns: the Taylor map
    ('taylor', 5, 20)
    >>> 4.98 < clf.privacy_spent_.epsilon <= 5.0, clf.privacy_spent_.delta
    (True, 1e-06)
    """

    _loss = "smoothed_hinge"

    def __init__(self, C: float = 1.0, gamma: float = 1.0, *, n_components: int | str = "auto",
                 reference_norm: float | None = 1.0, epsilon: float = 1.0,
                 solver: str = "nag", horizon: str = "auto", smoothing: float = 1.0, fit_intercept: bool = True,
                 intercept_scaling: float = 0.5, batch_size: int | None = None, max_iter: int = 1000,
                 step_scale: float = 1.0, initial_gap: float | None = None, max_slope: float = 1.0, classes: Any = None,
                 feature_seed: int = 0, linear_share: float = 0.25, features: str = "auto",
                 degree: int | str = "auto", column_balance: float | str = "auto", horizon_floor: float = 0.5,
                 random_state: Any = None, accountant: Accountant | None = None, noise: str = "gaussian",
                 delta: float = 1e-6) -> None:
        self.noise = noise
        self.delta = delta
        self.C = C
        self.gamma = gamma
        self.n_components = n_components
        self.reference_norm = reference_norm
        self.epsilon = epsilon
        self.solver = solver
        self.horizon = horizon
        self.smoothing = smoothing
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.step_scale = step_scale
        self.initial_gap = initial_gap
        self.max_slope = max_slope
        self.classes = classes
        self.feature_seed = feature_seed
        self.linear_share = linear_share
        self.features = features
        self.degree = degree
        self.column_balance = column_balance
        self.horizon_floor = horizon_floor
        self.random_state = random_state
        self.accountant = accountant

    def _horizon_floor(self) -> float:
        return float(self.horizon_floor)

    def _validate_extra(self, owner: str) -> dict[str, Any]:
        check_real(self.gamma, "gamma", low=0.0, owner=owner)
        if not (isinstance(self.n_components, str) and self.n_components == "auto"):
            check_integer(self.n_components, "n_components", low=1, high=100_000, owner=owner)
        check_integer(self.feature_seed, "feature_seed", low=0, owner=owner)
        if self.reference_norm is not None:
            check_real(self.reference_norm, "reference_norm", low=0.0, owner=owner)
        check_real(self.linear_share, "linear_share", low=0.0, high=1.0, closed="left", owner=owner)
        if not isinstance(self.features, str) or self.features not in _FEATURE_MAPS:
            raise InvalidParameterError(
                f"The 'features' parameter of {owner} must be one of {list(_FEATURE_MAPS)}. "
                f"Got {self.features!r} instead.")
        if not (isinstance(self.degree, str) and self.degree == "auto"):
            check_integer(self.degree, "degree", low=1, high=MAX_TAYLOR_DEGREE, owner=owner)
        if not (isinstance(self.column_balance, str) and self.column_balance == "auto"):
            check_real(self.column_balance, "column_balance", low=0.0, high=1.0, closed="both", owner=owner)
        check_real(self.horizon_floor, "horizon_floor", low=0.0, high=1e6, closed="both", owner=owner)
        return {"smoothing": check_real(self.smoothing, "smoothing", low=0.0, owner=owner)}

    def _feature_bounds(self, n_features: int) -> tuple[float, float]:
        if getattr(self, "features_", "fourier") == "taylor":
            return math.sqrt(self.n_components_) * _FEATURE_NORM, _FEATURE_NORM
        D = int(self.random_weights_.shape[1])
        return self._bounds_for(D, float(getattr(self, "linear_share_", 0.0)), n_features)

    def _bounds_for(self, D: int, s: float, n_features: int) -> tuple[float, float]:
        """Declared (L1, L2) bounds of the mapped rows for D random Fourier features and linear share s."""
        if self.reference_norm is None:  # every coordinate is at most sqrt(2/D) in absolute value
            r1 = math.sqrt(2.0 * D)
        else:
            r1 = math.sqrt(D) * _FEATURE_NORM  # ||v||_1 <= sqrt(D) ||v||_2 after the L2 clip
        if s == 0.0:
            return r1, _FEATURE_NORM
        # [sqrt(s) xbar, sqrt(1 - s) psi]: ||xbar||_2 <= 1 so ||xbar||_1 <= sqrt(d); ||.||_2**2 <= s + (1 - s)
        return math.sqrt(s * n_features) + math.sqrt(1.0 - s) * r1, _FEATURE_NORM

    def _n_components_for(self, n_samples: int) -> int:
        """D, the number of random features of a fit on ``n_samples`` rows (public)."""
        return _auto_components(n_samples) if isinstance(self.n_components, str) else int(self.n_components)

    def _feature_map_for(self, n_samples: int, n_features: int) -> tuple[str, int, int | None]:
        """``(map, columns, degree)`` of a fit on ``n_samples`` x ``n_features`` rows, from public sizes only.

        ``features="auto"``: the Taylor map at its degree (``degree="auto"``: the largest in [2, 8] whose map has
        at most as many columns as the random-feature count would be) when there are at least
        ``TAYLOR_ROWS_PER_FEATURE`` = 4 rows per column of it and, with an explicit integer ``n_components``, it
        has at most that many columns; else the random Fourier features. The Taylor map's dimension is refused
        above 100 000 columns (before anything is spent).
        """
        budget = self._n_components_for(n_samples)
        if isinstance(self.degree, str):
            degree = taylor_degree_for(n_features, budget)
        else:
            degree = int(self.degree)
        columns = taylor_dimension(n_features, degree)
        explicit_cap = not isinstance(self.n_components, str) and columns > budget  # the user's feature count
        use_taylor = self.features == "taylor" or (
            self.features == "auto" and n_samples >= TAYLOR_ROWS_PER_FEATURE * columns and not explicit_cap)
        if not use_taylor:
            return "fourier", budget, None
        if columns > _MAX_TAYLOR_COLUMNS:
            raise InvalidParameterError(
                f"features='taylor' of {type(self).__name__} would map {n_features} features to {columns} "
                f"monomials at degree {degree} (at most {_MAX_TAYLOR_COLUMNS}); lower 'degree' or use "
                "features='fourier'.")
        return "taylor", columns, degree

    def _planned_features(self, n_samples: int, n_features: int) -> tuple[int, float, float]:
        kind, columns, _ = self._feature_map_for(n_samples, n_features)
        if kind == "taylor":
            return columns, math.sqrt(columns) * _FEATURE_NORM, _FEATURE_NORM
        s = float(self.linear_share)
        return (columns + (n_features if s > 0.0 else 0), *self._bounds_for(columns, s, n_features))

    def _clipped_inputs(self, X: np.ndarray) -> np.ndarray:
        """The inputs clipped to the L2 norm r and divided by it (norm <= 1), non-finite entries as 0."""
        r = 1.0 if self.reference_norm is None else float(self.reference_norm)
        # clipped first, then divided: no overflow
        return clip_rows(zero_non_finite(X), math.inf, r, mode="rows", owner=type(self).__name__) / r

    def _column_balance_for(self, n_samples: int, columns: int) -> float:
        """The Taylor map's column balance for a fit on ``n_samples`` rows (public quantities only)."""
        if not isinstance(self.column_balance, str):
            return float(self.column_balance)
        return auto_column_balance(self.epsilon, self.delta, self.noise, n_samples,
                                   columns + (1 if self.fit_intercept else 0))

    def _taylor_g(self) -> float:
        r = 1.0 if self.reference_norm is None else float(self.reference_norm)
        return float(self.gamma) * (r * r)  # may be inf or 0: taylor_coefficients saturates

    def _taylor_centre(self, n_features: int) -> np.ndarray | None:
        """``E tau(u)`` on the unit sphere for the fitted map (public), or None with ``reference_norm=None``."""
        if self.reference_norm is None:
            return None
        return taylor_sphere_mean(n_features, int(self.degree_), self._taylor_g(), float(self.linear_share_),
                                  float(self.column_balance_ or 0.0))

    def _taylor_features(self, X: np.ndarray) -> np.ndarray:
        beta = float(getattr(self, "column_balance_", None) or 0.0)  # a model pickled before the balance had none
        U = taylor_map(self._clipped_inputs(X), self._taylor_g(), int(self.degree_), float(self.linear_share_), beta)
        mu = getattr(self, "taylor_centre_", None)  # None: reference_norm=None, or a model pickled before centring
        if mu is not None:
            spread = math.sqrt(max(0.0, 1.0 - float(mu @ mu)))
            U = U - mu
            if spread > 0.0:
                U /= spread  # mean squared norm 1 on the sphere again; the clip below bounds every row
        return clip_rows(U, math.inf, _FEATURE_NORM, mode="rows", owner=type(self).__name__)  # float rounding

    def _features(self, X: np.ndarray, *, fitting: bool) -> np.ndarray:
        if fitting:
            self.linear_share_ = float(self.linear_share)
            kind, columns, degree = self._feature_map_for(X.shape[0], X.shape[1])
            self.features_, self.n_components_, self.degree_ = kind, columns, degree
            self.column_balance_ = self._column_balance_for(X.shape[0], columns) if kind == "taylor" else None
            self.taylor_centre_ = self._taylor_centre(X.shape[1]) if kind == "taylor" else None
            for stale in ("random_weights_", "random_offset_"):
                self.__dict__.pop(stale, None)
            if kind == "fourier":
                rng = np.random.default_rng(int(self.feature_seed))  # public randomness, data-independent
                self.random_weights_ = rng.normal(0.0, math.sqrt(2.0 * float(self.gamma)),
                                                  size=(X.shape[1], columns))
                self.random_offset_ = rng.uniform(0.0, 2.0 * math.pi, size=columns)
        if getattr(self, "features_", "fourier") == "taylor":  # a model pickled before features_ had Fourier's
            return self._taylor_features(X)
        W, b = self.random_weights_, self.random_offset_
        if X.shape[1] != W.shape[0]:  # pragma: no cover - validate_data checks n_features_in_ first
            raise InvalidParameterError(f"X has {X.shape[1]} features; the model expects {W.shape[0]}.")
        with np.errstate(over="ignore", invalid="ignore"):
            phi = math.sqrt(2.0 / W.shape[1]) * np.cos(X @ W + b)
        # A finite row with huge entries can overflow X @ W (cos(inf) is NaN): such coordinates are mapped to 0,
        # in fit and in predict alike, so that no row's values can make fit raise after its charge.
        if not np.isfinite(phi).all():
            phi = np.where(np.isfinite(phi), phi, 0.0)
        if self.reference_norm is not None:  # centred and scaled by public constants (module docstring)
            r_ref = float(self.reference_norm)
            g_r2 = float(self.gamma) * (r_ref * r_ref)  # float products go to inf (no OverflowError after the charge)
            a = math.exp(-g_r2)
            spread = math.sqrt(-math.expm1(-2.0 * g_r2))  # sqrt(1 - a**2), accurate for a small gamma r**2
            if spread > 0.0:
                phi = (phi - a * math.sqrt(2.0 / W.shape[1]) * np.cos(b)) / spread
        # Plain map: |cos| <= 1 makes every coordinate at most sqrt(2/D) in absolute value (the L1 bound holds
        # exactly). Either map: the L2 norm is clipped to _FEATURE_NORM, in fit and in predict alike.
        phi = clip_rows(phi, math.inf, _FEATURE_NORM, mode="rows", owner=type(self).__name__)
        s = float(getattr(self, "linear_share_", 0.0))  # a model pickled before linear_share had none
        if s == 0.0:
            return phi
        # The linear part: the input clipped to the public norm r and divided by it (norm <= 1), non-finite
        # entries as 0 (fit maps them so before; predict's rows alike), in fit and in predict alike.
        out = np.hstack((math.sqrt(s) * self._clipped_inputs(X), math.sqrt(1.0 - s) * phi))
        return clip_rows(out, math.inf, _FEATURE_NORM, mode="rows", owner=type(self).__name__)  # float rounding
