r"""Differentially private logistic regression trained with the accelerated methods of Kuru et al. (2022).

:class:`DPLogisticRegression` is a scikit-learn classifier whose ``fit`` runs
:func:`privtune.optim.dp_accelerated` on the (clipped, intercept-augmented)
training rows and charges the run to a privacy accountant. Its shared base
class :class:`_DPMarginClassifier` (module :mod:`privtune.linear_model._margin`
since issue 39; re-exported here) also serves :class:`privtune.svm.DPLinearSVC`
and :class:`privtune.svm.DPSVC`. The parameter, attribute, privacy and scaling
paragraphs the three share are the ``_*_DOC`` strings below.
"""

from __future__ import annotations

from typing import Any

from privtune.accounting.accountant import Accountant
from privtune.linear_model._classifier import _LogisticProbaMixin

# Re-exported (issue 39 moved the shared base to _margin): every name keeps its import path, and a class pickled
# under privtune.linear_model._logistic is found here.
from privtune.linear_model._margin import (  # noqa: F401
    _CLIPS,
    _LINE_SEARCH_PLACEHOLDER_N,
    _MULTICLASS_LOSS,
    _NOISES,
    ESTIMATOR_SOLVERS,
    LINE_SEARCH,
    _ClippedLinearMixin,
    _DPMarginClassifier,
)

__all__ = ["DPLogisticRegression"]


_COMMON_PARAMS_DOC = """
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit`` (with ``delta`` below for the default
        Gaussian noise; pure DP, ``delta = 0``, with ``noise="laplace"``).
    solver : {"nag", "nag-opt", "hb", "gd", "masg", "masg-opt", "line-search"}, default="nag"
        The seed-002 algorithm (:func:`privtune.optim.dp_accelerated`):
        ``"nag"`` splits the budget evenly over the steps, ``"nag-opt"`` /
        ``"masg-opt"`` with the paper's optimal split. The paper's full method
        is ``solver="nag-opt", horizon="paper"``. ``"line-search"``: seed 003's
        full-batch DP-BLGD (:func:`privtune.optim.dp_blsgd` with
        ``sampling="full"``): Gaussian noisy gradients, each step size chosen by
        a private Armijo line search (a Laplace sparse vector), budgets raised
        by the angle test and stopped by a zCDP filter whose cap, a
        ``RenyiEvent`` depending on ``(epsilon, delta)`` only, is the charge.
        No step size or horizon to choose (``horizon``, ``max_iter``,
        ``step_scale`` and ``initial_gap`` are unused); ``max_slope`` becomes
        the per-example gradient clip ``max_slope * R_2``. Needs
        ``noise="gaussian"`` and ``batch_size=None``. Breast cancer, 398 rows,
        epsilon = 1: 0.942 against 0.959 non-private (median of 7 seeds).
    horizon : {"auto", "max_iter", "paper"}, default="auto"
        How the number of steps ``T <= max_iter`` is chosen, from public
        constants only. ``"auto"`` (privtune's rule, not in the paper): ``T``
        grows as ``sqrt(n / (nm sqrt(d)))`` (Gaussian; ``nm`` the fit's noise
        multiplier, ``d`` the number of coefficients), or as
        ``n / (nm sqrt(d))`` when the noise is large, between 1 and
        ``min(max_iter, max(50, 2 d))`` (enough steps to finish the
        optimisation once the noise is small), and the output is the mean of
        the last ``ceil(T/2)`` iterates
        (:func:`privtune.optim.accelerated._schedules.auto_horizon`).
        ``"max_iter"``: ``T = max_iter``, tail-averaged output.
        ``"paper"``: Kuru et al.'s ``T*`` minimising their bound with
        ``mu = 1 / (C n)``, last iterate; faithful. It picks one or a few steps
        at per-fit epsilon <= 1 on a few hundred rows; with rows clipped in L2
        that still learns (breast cancer, epsilon = 1: 0.918 against 0.924 for
        ``"auto"``, 25 seeds), but on 14 000 rows at epsilon = 0.3 it trailed
        ``"auto"`` by 1.0 point (``benchmarks/results/dp_trainer_defaults.md``).
        privtune's default deviates from the paper here.
    C : float in (0, inf), default=1.0
        Inverse regularisation strength, as in scikit-learn: the objective is
        ``C * sum(loss) + ||w||^2 / 2``, i.e. the mean loss plus
        ``||w||^2 / (2 C n)`` (``alpha = 1 / (C n)`` for the solver; ``n`` is public).
        With ``fit_intercept`` the intercept is regularised too (liblinear style).
    fit_intercept : bool, default=True
        Append a constant feature ``intercept_scaling`` to every row; its
        weight times ``intercept_scaling`` is ``intercept_``. The constant
        enters the declared bounds (L1 bound ``+ intercept_scaling``), so the
        intercept is paid for honestly.
    intercept_scaling : float in (0, inf), default=0.5
        The constant feature (it enters the declared bounds, whose range is
        limited: see ``data_norm``). With unit-norm rows, 0.5 makes the squared L2
        bound of the augmented rows 1.25 instead of 2 (the noise 21 % lower);
        measured about a point more accurate than 1.0 on breast cancer and on
        an imbalanced synthetic set at epsilon 0.3 to 3 (15 seeds).
    batch_size : int in [1, n_samples] or None, default=None
        Mini-batch size (sampling without replacement, amplified); ``None`` is
        the full batch. Mini-batches need ``noise="laplace"``.
    max_iter : int in [1, 100000], default=100
        Largest number of steps (exactly the number with
        ``horizon="max_iter"``). Every step is one full pass over the data
        (one batch with ``batch_size``). With ``horizon="auto"`` the rule's
        own cap ``max(50, 2 d)`` binds first unless ``d`` exceeds 50.
    step_scale : float in (0, 1], default=1.0
        ``c`` in the step size ``c / L`` (``L`` from the declared bounds).
    initial_gap : float in (0, inf) or None, default=None
        Declared bound ``E_0`` on the initial objective gap ``F(0) - F*``
        with which the ``*-opt`` solvers choose their horizon ``T*`` (by
        minimising the paper's bound; the paper's experiments use 10).
        ``None`` uses the data-free bound ``phi(0)`` (``ln 2`` for the
        logistic loss; for the smoothed hinge ``1 - smoothing / 2``, or
        ``1 / (2 smoothing)`` when ``smoothing > 1``).
        A larger value gives a longer horizon. Privacy-neutral (a public
        constant); ignored by the uniform-split solvers.
    max_slope : float in (0, 1], default=MAX_SLOPE_DEFAULT
        ``kappa``: the derivative of the loss is clipped at ``-kappa``
        (per-example gradient clipping, written as a loss; privtune's
        extension, not in the paper, whose loss is ``kappa = 1``). The
        objective becomes the convex loss that follows the original while its
        slope is at most ``kappa`` and is linear beyond; the noise scale (the
        sensitivity ``2 kappa R``) is multiplied by ``kappa``.MAX_SLOPE_NOTE
    classes : array-like of two or more labels, or None, default=None
        Declared label set. ``None`` reads the labels from ``y`` (see Notes).
        With more than two classes the model has one weight vector per class,
        fitted jointly by one run with the fit's whole budget (a multinomial
        model for ``DPLogisticRegression``, Crammer & Singer's multiclass
        hinge smoothed by a softmax for the SVMs), so a K-class fit costs what
        a binary fit costs (see Notes). ``solver="line-search"`` takes two
        classes only.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` gives cryptographically secure noise; an int makes the fit
        reproducible and **not for release**.
    accountant : Accountant or None, default=None
        Charged with the run. ``None``: a fresh ``Accountant(Budget(epsilon, delta))``
        (``Budget(epsilon, 0)`` with ``noise="laplace"``) is created and
        exposed as ``accountant_``. A given accountant needs a budget with
        ``delta > 0`` for the default Gaussian noise. Note that
        :func:`sklearn.base.clone` deep-copies this parameter.
    noise : {"gaussian", "laplace"}, default="gaussian"
        ``"gaussian"`` (the default): privtune's extension, **not from the
        paper**, ``(epsilon, delta)``-DP with exact discrete Gaussian noise
        calibrated on the declared L2 row bound and composed exactly; full
        batch only (``batch_size=None``). ``"laplace"``: the paper's pure
        epsilon-DP method (L1 sensitivity; mini-batches allowed). The default
        is Gaussian because it is the more accurate on the project's benchmark
        (it meets the accuracy targets the Laplace runs miss,
        ``benchmarks/results/dp_logreg_peers.md``).
    delta : float in (0, 1), default=1e-6
        The delta of the default Gaussian noise; validated but unused with
        ``noise="laplace"``."""

_COMMON_ATTRS_DOC = """
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features_out) or (n_classes, n_features_out)
        One row for two classes (the model of ``classes_[1]``), else one
        weight row per class.
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        Noisy-gradient steps run (``T*`` for the ``*-opt`` solvers).
    privacy_spent_ : Budget
        Privacy cost of the fit: the exact composition
        ``Budget(epsilon', delta)`` with ``epsilon (1 - 2e-3) < epsilon' <= epsilon``
        (Gaussian, the default) or ``Budget(epsilon, 0)`` (Laplace).
    privacy_event_ : PrivacyEvent
        The composed event charged.
    accountant_ : Accountant
        The accountant charged (the given one, or the estimator's own).
    optimize_result_ : DPOptimizeResult
        The solver's result (released iterates, noise scales, budget split);
        with more than two classes its ``x`` holds the ``n_classes`` weight
        rows (intercept last in each) one after the other.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names."""

#: "Scaling the features" paragraph of the DP estimators' Notes (CLIPPED_TO: what the rows are clipped to).
_SCALING_DOC = """

    **Scaling the features.** The noise is calibrated to declared bounds,
    never to the data:
    CLIPPED_TO,
    in ``fit`` and in ``predict`` (a row is scaled down, keeping its
    direction). Features on their raw scale defeat this without any warning
    (no row is inspected): with one column near 1000 every row is shrunk to
    almost that column's direction, and the model predicts the majority class
    (breast cancer, whose largest feature reaches 4 254: ``DPLogisticRegression``
    and ``DPSVC`` at epsilon = 1 both test at 0.632, the majority class's share;
    median of 5 splits). Put the features on comparable scales first, with
    constants that do not come from the sensitive rows: divide by published
    ranges (``FunctionTransformer(lambda X: X / upper)``:
    ``DPLogisticRegression`` 0.848 there), freeze a scaler fitted on public
    data (``sklearn.frozen.FrozenEstimator(StandardScaler().fit(X_public))``),
    or learn the scaling privately from declared bounds with
    :class:`privtune.preprocessing.DPStandardScaler` (0.918 there, the budget
    split evenly between the scaler and ``DPLogisticRegression``). In a
    ``Pipeline`` each of these is accepted by
    :class:`~privtune.model_selection.PrivateSearchCV` with sensitive training
    rows, the DP scaler's fit charged with this one's (``docs/trainers.md``,
    "Scaling the features, and pipelines with sensitive training rows")."""

_PRIVACY_DOC = """
    **Privacy.** ``fit`` is ``(epsilon, delta)``-DP (default, Gaussian noise)
    or ``(epsilon, 0)``-DP (``noise="laplace"``) under the **replace-one**
    relation (training sets of the same public size ``n`` differing in one
    row, features and label), and the guarantee covers ``coef_``,
    ``intercept_``, ``n_iter_`` and every released iterate in
    ``optimize_result_``. Public: ``n``, ``n_features``, every hyperparameter,
    the declared bounds and the label set. With ``classes=None`` the two labels
    are read from ``y``: the guarantee then holds only between neighbouring
    datasets with the same set of labels, equal in value *and* type (a label
    ``1.0`` among ints changes the dtype of ``classes_``; a third label or a
    NaN makes ``fit`` refuse after its charge). Declare ``classes`` to remove
    this condition (``PrivateSearchCV`` requires it). The event charged, once
    and before the first gradient, is (Gaussian, privtune's extension) the
    composition of one
    ``GaussianEvent(noise_multiplier=nm_t)`` per step, which composes exactly
    to one Gaussian calibrated at ``(epsilon (1 - 1e-3), delta)``, with the
    per-example L2 sensitivity ``2 kappa R_2`` (``R_2`` the declared L2 bound
    of the (intercept-augmented) rows, ``kappa = max_slope``); or (Laplace,
    the paper's) the composition of one Laplace event per step (with sampling
    without replacement when ``batch_size < n``) whose costs sum to
    ``epsilon``. With ``K > 2`` classes (privtune's extension; the paper fits
    two) the solver runs once, with the fit's whole budget, on one weight
    vector per class and a loss whose per-example gradient is ``r u^T`` with
    ``r = p - e_y`` (``p`` a softmax: of the scores for the multinomial
    logistic model, of the scores plus the margin 1 outside the row's class,
    over ``smoothing``, for the SVMs' smoothed multiclass hinge), each row's
    ``r`` clipped to the L2 norm ``c = min((kappa / kappa_0) r_0, sqrt(2))``
    (``r_0`` the residual's norm at ``W = 0``, ``kappa_0`` the default
    ``max_slope``: nothing is clipped at the start by default; for the
    multinomial model ``c = 2 kappa sqrt((K - 1) / K)``):
    the per-example sensitivity is ``2 c R_2`` (L2) or
    ``2 min(2, sqrt(K) c) R_1`` (L1), whatever K, and the event charged is
    the same as for two classes. With ``classes=None`` the number of classes
    is read from ``y``, within the same condition as above."""


class DPLogisticRegression(_ClippedLinearMixin, _LogisticProbaMixin, _DPMarginClassifier):
    __doc__ = r"""Logistic regression with differential privacy (Kuru et al. 2022 solvers); multinomial for K > 2.

    (epsilon, delta)-DP by default, with exact Gaussian noise on the gradients
    (privtune's extension of the paper, at ``delta = 1e-6``), which is the more
    accurate on the benchmark in ``benchmarks/results/dp_logreg_peers.md``; ``noise="laplace"``
    gives the paper's pure epsilon-DP method. The loss derivative is clipped
    at ``max_slope = 1/2`` by default (privtune's extension; ``max_slope=1``
    is the paper's logistic loss).

    Parameters
    ----------""" + _COMMON_PARAMS_DOC.replace("MAX_SLOPE_DEFAULT", "0.5").replace("MAX_SLOPE_NOTE", """
        ``0.5`` is ``|phi'(0)|`` of the logistic loss: nothing is clipped at
        the start (``w = 0``) and every step's noise is halved; the loss is
        ``log(1 + e**-m)`` for margins ``m >= 0`` and ``ln 2 - m / 2`` below
        (a robust, Huber-like logistic loss). ``max_slope=1`` is the paper's
        logistic regression.""") + """
    data_norm : float in (0, inf), default=1.0
        Declared bound on the norm of every row of ``X``, in the norm the
        noise needs: the **L2** norm with the default Gaussian noise, the
        **L1** norm with ``noise="laplace"``. Rows above it are scaled down
        (``clip="rows"``) or refused (``clip="raise"``); the same clipping is
        applied in ``predict``. (Before this release it was an L1 bound for both
        noises, which shrank typical rows several-fold under Gaussian noise.) The declared bounds
        (intercept column included) must lie between about ``sqrt(d) 4e-121``
        and ``2.6e120`` (float64's safe range; refused before any charge
        otherwise); inside float32's safe range (about ``sqrt(d) 3e-33`` to
        ``1.3e36``, with ``max_slope`` times the bound at least about
        ``sqrt(d) 2e-31``) the rows are stored in float32, else in float64
        (:func:`privtune.optim._losses.storage_dtype`).
    data_norm_l2 : float in (0, inf) or None, default=None
        Optional declared bound on the L2 norm of every row (enforced the same
        way). Gaussian noise: the L2 bound, overriding ``data_norm``. Laplace:
        an extra bound that tightens the smoothness ``L = R_2**2 / 4 + 1/(C n)``
        and so allows larger steps; ``None`` uses ``data_norm``.
    clip : {"rows", "raise"}, default="rows"

    Attributes
    ----------""" + _COMMON_ATTRS_DOC + """

    See Also
    --------
    privtune.optim.dp_accelerated : the solver.
    privtune.svm.DPLinearSVC : the same with a smoothed hinge loss.

    Notes
    -----""" + _PRIVACY_DOC + """ The per-example L1 sensitivity of the
    gradient is ``2 kappa (data_norm + intercept_scaling)`` with
    ``kappa = max_slope`` (the clipped derivative lies in ``[-kappa, 0]``).""" + _SCALING_DOC.replace(
        "CLIPPED_TO", "every row is clipped to ``data_norm`` (L2 with Gaussian noise, L1 with Laplace)") + """

    Deviations from the paper (seed-002 spec): Laplace ``b`` is a scale; ``L``
    comes from the declared bounds, not from the data; the output is the last
    iterate, never the best one chosen on the data.

    References
    ----------
    .. [KBGY22] N. Kuru, S. I. Birbil, M. Gürbüzbalaban and S. Yıldırım,
       "Differentially Private Accelerated Optimization Algorithms", SIAM J.
       Optim. 32(2), 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.linear_model import DPLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(5000, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPLogisticRegression(epsilon=1.0, C=10.0, random_state=0).fit(X, y)
    >>> round(clf.privacy_spent_.epsilon, 2), clf.privacy_spent_.delta, clf.score(X, y) > 0.8
    (1.0, 1e-06, True)
    """

    _loss = "logistic"

    def __init__(self, epsilon: float = 1.0, *, solver: str = "nag", horizon: str = "auto", C: float = 1.0,
                 data_norm: float = 1.0, data_norm_l2: float | None = None, fit_intercept: bool = True,
                 intercept_scaling: float = 0.5, batch_size: int | None = None, max_iter: int = 100,
                 step_scale: float = 1.0, initial_gap: float | None = None, max_slope: float = 0.5,
                 clip: str = "rows", classes: Any = None, random_state: Any = None,
                 accountant: Accountant | None = None, noise: str = "gaussian", delta: float = 1e-6) -> None:
        self.epsilon = epsilon
        self.noise = noise
        self.delta = delta
        self.solver = solver
        self.horizon = horizon
        self.C = C
        self.data_norm = data_norm
        self.data_norm_l2 = data_norm_l2
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.step_scale = step_scale
        self.initial_gap = initial_gap
        self.max_slope = max_slope
        self.clip = clip
        self.classes = classes
        self.random_state = random_state
        self.accountant = accountant
