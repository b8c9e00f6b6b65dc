r"""DP-SGD torch models as privtune estimators: :class:`DPSGDClassifier` and :class:`DPSGDRegressor`.

A user's ``torch.nn.Module`` (or a factory building it) trained with DP-SGD
(Abadi et al. 2016): Poisson batches, per-example gradients clipped to
``max_grad_norm``, Gaussian noise, ``epochs`` passes. Per-example gradients and
the architecture check come from Opacus (an optional extra:
``pip install "privtune[dpsgd]"``); the batches, the noise (exact discrete
Gaussian from privtune's secure source) and the accounting are privtune's
(:mod:`privtune.neural_network._dpsgd_engine`,
:mod:`privtune.neural_network._dpsgd_accounting`). Importing this module
imports neither torch nor Opacus; ``fit`` does.

This module holds :class:`DPSGDClassifier`; the shared base (parameters, public checks, privacy plan, the fit's
order) is in ``_dpsgd_base.py`` and :class:`DPSGDRegressor` in ``_dpsgd_regressor.py``, both re-exported here.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from privtune.accounting import Accountant
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError
from privtune.linear_model._classifier import _LogisticProbaMixin, _ScorePredictMixin
from privtune.neural_network._dpsgd_base import (  # noqa: F401 - re-exported
    _MAX_STEPS,
    _OPTIMIZERS,
    _SEED_HIGH,
    _DPSGDBase,
    _import_opacus,
)
from privtune.neural_network._dpsgd_regressor import DPSGDRegressor
from privtune.utils._validation import (
    match_declared_labels,
)

__all__ = ["DPSGDClassifier", "DPSGDRegressor"]


class DPSGDClassifier(_ScorePredictMixin, _LogisticProbaMixin, ClassifierMixin, _DPSGDBase):
    r"""A torch classifier trained with DP-SGD (Opacus's per-example gradients; privtune's noise, accounting).

    ``fit`` trains ``module`` (cross-entropy over one output per class) by
    DP-SGD: ``epochs`` passes of Poisson batches of expected size
    ``batch_size``, per-example gradients clipped to ``max_grad_norm``, exact
    discrete Gaussian noise, and the ``optimizer``'s step. Tune ``lr``,
    ``max_grad_norm``, ``batch_size`` and ``epochs`` (e.g. with
    :class:`privtune.model_selection.PrivateSearchCV`), with the whole search
    accounted.

    Parameters
    ----------
    module : None, torch.nn.Module or callable, default=None
        The network (public architecture and initial weights). ``None``: one
        hidden layer of 32 ReLU units. A ``torch.nn.Module`` mapping
        ``(batch, n_features)`` to ``(batch, n_outputs)``: ``fit`` trains a deep
        copy (the given module is never modified; its weights are the initial
        ones). A callable ``factory(n_features, n_outputs) -> torch.nn.Module``
        (a module-level function or a :func:`functools.partial` of one, so the
        estimator pickles; called under torch's RNG seeded from
        ``random_state``, so its initial weights are reproducible when seeded).
        The architecture must pass Opacus's ``ModuleValidator`` (no BatchNorm),
        give every trainable parameter a gradient, compute each row from its
        own entries (checked by a probe before the charge: see Notes) and
        should not raise on finite inputs (a training row on which it raises
        contributes a zero gradient). The factory is the form to prefer
        with :func:`sklearn.base.clone` and in searches: cloning deep-copies a
        module instance (large for a big network), a factory is shared.
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit`` (with ``delta``), under ``relation``. With
        ``noise_multiplier=None`` the noise is calibrated so that the run costs
        at most ``epsilon``; with a ``noise_multiplier`` it is a cap (a run that
        would cost more is refused before any charge).
    delta : float in (0, 1), default=1e-6
    noise_multiplier : float in (0, inf) or None, default=None
        Noise standard deviation over ``max_grad_norm``. ``None``: calibrated
        from ``epsilon`` (the smallest value, to 0.1 %, whose run fits).
    max_grad_norm : float in (0, inf), default=1.0
        ``C``: every per-example gradient is clipped to this L2 norm. It is the
        only bound the guarantee needs (no bound on the data).
    batch_size : int in [1, inf), default=64
        Expected batch size: each row is in each step's batch independently
        with probability ``q = batch_size / n`` (Poisson sampling; capped at
        ``n``). The noisy gradient sum is divided by this public number, never
        by a realised batch size.
    epochs : int in [1, 1000000], default=10
        The run has ``epochs * max(1, round(n / batch_size))`` steps.
    lr : float in (0, inf) or "auto", default="auto"
        Learning rate of the optimizer. ``"auto"`` (a step size that shrinks
        as the noise grows; it reads no data): with ``optimizer="sgd"``,
        ``min(0.5, 0.3 B / (sigma C sqrt(T)))``, where ``sigma`` is the noise
        multiplier (calibrated or given), ``C`` is ``max_grad_norm``, ``B`` the
        expected batch size the noisy sum is divided by and ``T`` the number of
        steps, so that the noise alone moves a weight by at most about 0.3 over
        the run; 0.5 without noise. With the other defaults this is about 0.06
        at ``epsilon=0.3``, 0.2 at 1 and 0.5 from 3 on. With
        ``optimizer="adam"``: 0.03. The value used is ``lr_``. Measured on
        seven classification tasks (see Notes); a float is used as given.
    optimizer : {"sgd", "adam"}, default="sgd"
        The torch optimizer applied to the noisy gradients (post-processing).
    relation : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation of the guarantee. ``"replace_one"`` (privtune's
        unit; required by :class:`privtune.model_selection.PrivateSearchCV`)
        or ``"add_remove"`` (Opacus's and most DP-SGD papers'; the same noise
        costs about 2-3 times less epsilon under it: see Notes).
    classes : array-like of labels or None, default=None
        Declared label set (at least two labels; the module has one output per
        class, in sorted order). A row whose label is outside it contributes a
        zero gradient. ``None`` reads the labels from ``y`` after the charge
        (see Notes); a search with sensitive training data requires it.
    accountant : Accountant or None, default=None
        Charged with the run; its relation must equal ``relation``. ``None``: a
        fresh ``Accountant(Budget(epsilon, delta), relation=relation)``,
        exposed as ``accountant_``. :func:`sklearn.base.clone` deep-copies it.
    random_state : None, int or numpy.random.Generator, default=None
        ``None``: batches and noise from the operating system's CSPRNG. An int
        makes the fit reproducible and **not for release** (``seeded_``). The
        initial weights of a factory or of the default network, and torch's
        layer randomness (dropout), are seeded from the same source inside
        :func:`torch.random.fork_rng` (torch's global state is not touched).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    module_ : torch.nn.Module
        The trained network (in eval mode).
    n_iter_ : int
        Steps run.
    lr_ : float
        The learning rate used (``lr``, or what ``"auto"`` resolved to).
    sample_rate_ : float
        The exact Poisson rate (``ceil(q 2**53) / 2**53``).
    noise_multiplier_ : float
        The noise multiplier used (given or calibrated).
    privacy_spent_ : Budget
        ``(epsilon', delta)`` of the charged event under ``relation``, ``epsilon' <= epsilon``.
    privacy_event_ : PrivacyEvent
        The event charged, equal to ``_fit_privacy_event(n_samples)``.
    accountant_ : Accountant
    seeded_ : bool
        True when ``random_state`` made the fit reproducible: **not for release**.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.

    See Also
    --------
    DPSGDRegressor : the same training for a regression target.
    DPMLPClassifier : an MLP trained with DP-BLSGD (no learning rate to tune).

    Notes
    -----
    **Privacy.** ``fit`` is ``(epsilon', delta)``-DP (``privacy_spent_``) with
    respect to ``relation``, for whole training rows (features and target);
    the guarantee covers every released attribute (the trained weights).
    Public: ``n``, ``n_features``, every hyperparameter, the architecture and
    its initial weights (data-independent), the label set. The charge, made
    once before any value of ``X`` or ``y`` is read (only their shapes), is the
    run of ``T`` steps of the Poisson-subsampled Gaussian mechanism: each step
    sums the per-example gradients clipped to ``C`` over a Poisson batch (rate
    ``q``) and adds Gaussian noise of standard deviation ``sigma C``, so one
    row moves the sum by at most ``C`` under add/remove. Under
    ``relation="add_remove"`` the event is
    ``SelfComposedEvent(PoissonSampledEvent(GaussianEvent(sigma, vector=True), q), T)``,
    whose RDP curve is Mironov, Talwar & Zhang's (2019), the one Opacus's
    ``RDPAccountant`` computes. Tests check privtune's epsilon against
    Opacus's on the same run: never more than 0.1 % below (privtune's order
    grid is finer) and at most about 5 % above, the excess being privtune's
    chord between integer orders, which its lattice noise needs
    (:func:`privtune.accounting.rdp_math.poisson_gaussian_rdp`). Under ``relation="replace_one"`` a
    replacement is a removal then an addition, and the composed curve is
    converted by the weak triangle inequality of Rényi divergence (Mironov
    2017, Prop. 11; :meth:`privtune.accounting.RenyiEvent.as_replace_one`):
    the same run costs about 2-3 times the add/remove epsilon. Under
    add/remove, ``n`` (hence ``q`` and ``T``) is treated as public, as Opacus
    and DP-SGD papers do.

    Noise and floating point. The noise is privtune's exact discrete Gaussian
    on a grid, drawn from ``os.urandom`` unless seeded (Opacus's noise, a
    floating-point Gaussian from torch's generator, is not used: it is open to
    the floating-point attack on textbook samplers, and its ``secure_mode``
    needs the ``torchcsprng`` package, which does not exist for current
    torch). The clipping and the sum are in float64 with a proven rounding
    bound paid for by a sensitivity factor ``psi`` (about ``1 + n 2**-52``;
    :mod:`privtune.optim._sums`). The batches come from the same source. The
    guarantee relies on each row's per-example gradient (Opacus's, computed
    in chunks of a fixed number of rows) depending on that row, its position
    in the chunk and the weights only; the network's own float32 arithmetic
    is otherwise not analysed. Once charged, ``fit`` does not raise because
    of a row's values: a non-finite feature is mapped to 0, and a row whose
    gradient is non-finite, whose label is outside the declared ``classes``, or on which the
    module raises contributes zero (a chunk whose forward or backward raises
    is computed again row by row, each row alone in a zero chunk of the same
    size at its own position, so that, under the assumption above, every
    other row keeps exactly its batched gradient; the exception and its
    message are dropped). That recomputation takes longer, so the fit's
    duration, unlike its result, then depends on the raising row: keep the
    module from raising on finite inputs (e.g. clamp an embedding index to
    its public range).

    Module probe. Before the charge (from public information only: nothing
    is spent by a refusal), the run's per-example machinery is run on a copy
    of the module over public synthetic rows (uniform in ``[0, 1)`` from a
    fixed seed, never the data): a trainable parameter without a per-example
    gradient is refused (use it, remove it or set ``requires_grad=False``),
    and so is a module in which changing one row of a chunk (the first, then
    the last) changes another row's output (train and eval mode) or
    per-example gradient by a single bit (a module that mixes the rows of its
    batch, e.g. ``x - x.mean(0)``, breaks the sensitivity the noise is built
    for). This is a probe, not a proof: a module could mix rows only on some
    inputs or for some weights, and the assumption stays the user's. It
    costs three forward/backward passes of one chunk (about 5 ms for the
    default network). ``predict`` propagates an exception the module raises
    on a row it is given; :class:`~privtune.model_selection.PrivateSearchCV`'s
    scorers isolate such a sensitive validation row to its own term.

    Learning rate. ``lr="auto"`` is computed from the plan above (public
    numbers only) after the charge, so it releases nothing. It was fitted on
    five classification tasks (breast cancer, digits 0-4 against 5-9, digits'
    10 classes, wine, a 4 000-row synthetic set; rows of norm 1 and
    standardised columns; ``epsilon`` 0.3 to 8, 3 seeds) and checked on two
    it never saw (iris, a 4-class synthetic set): the mean regret to the best
    fixed learning rate of each cell fell from 4.8 to 1.5 points on the first
    five (10.4 to 2.1 at ``epsilon=0.3``) and from 5.9 to 4.7 on the other
    two, with ``C = 1``, ``batch_size=64`` and ``epochs=10``
    (``benchmarks/studies/dpsgd_defaults.py``). On 10-class digits with rows
    of norm 1 it is still near chance at ``epsilon=0.3``: pass a smaller
    ``lr`` or tune it there.

    With ``classes=None`` the label set is read from ``y`` after the charge:
    the guarantee then holds between neighbouring datasets with the same label
    set, and a module whose number of outputs does not match, or that the
    module probe refuses, is refused only then (declare ``classes`` to remove
    both conditions).

    References
    ----------
    .. [ACG16] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    .. [MTZ19] I. Mironov, K. Talwar and L. Zhang, "Rényi Differential Privacy of
       the Sampled Gaussian Mechanism", 2019.
    .. [YSS21] A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy
       Library in PyTorch", 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.neural_network import DPSGDClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPSGDClassifier(epsilon=3.0, classes=[0, 1], epochs=5, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.8, clf.privacy_spent_.epsilon <= 3.0
    (True, True)
    """

    _auto_lr = True

    def __init__(self, module: Any = None, *, epsilon: float = 1.0, delta: float = 1e-6,
                 noise_multiplier: float | None = None, max_grad_norm: float = 1.0, batch_size: int = 64,
                 epochs: int = 10, lr: float | str = "auto", optimizer: str = "sgd", relation: str = "replace_one",
                 classes: Any = None, accountant: Accountant | None = None, random_state: Any = None) -> None:
        super().__init__(module, epsilon=epsilon, delta=delta, noise_multiplier=noise_multiplier,
                         max_grad_norm=max_grad_norm, batch_size=batch_size, epochs=epochs, lr=lr,
                         optimizer=optimizer, relation=relation, accountant=accountant, random_state=random_state)
        self.classes = classes

    def _classes_public(self, owner: str) -> np.ndarray | None:
        if self.classes is None:
            return None
        try:
            raw = np.asarray(self.classes)
            classes = np.unique(raw)
        except TypeError:
            raw = classes = None
        if raw is None or raw.ndim != 1 or classes.shape[0] < 2 or classes.shape[0] != raw.shape[0]:
            raise InvalidParameterError(
                f"The 'classes' parameter of {owner} must be None or at least two distinct labels. "
                f"Got {self.classes!r} instead.")
        return classes

    def _n_outputs_public(self, owner: str) -> int | None:
        classes = self._classes_public(owner)
        return None if classes is None else int(classes.shape[0])

    def _encode_targets(self, y: np.ndarray, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """Class indices and whether each row's label is usable (after the charge)."""
        classes = self._classes_public(owner)
        if classes is None:
            try:
                check_classification_targets(y)
                y_type = type_of_target(y, input_name="y")
                classes = np.unique(y) if y_type in ("binary", "multiclass") else None
            except Exception:  # noqa: BLE001 - labels numpy cannot compare or sort: never the label's own text
                raise InvalidParameterError(
                    f"{owner}.fit needs class labels in y (a continuous target is not supported). Unknown label "
                    "type: continuous or multi-output targets are not supported.") from None
            if y_type not in ("binary", "multiclass"):
                raise InvalidParameterError(f"{owner} supports binary and multiclass targets; got {y_type}.")
            if classes.shape[0] < 2:
                raise InvalidParameterError(
                    f"{owner} needs samples of at least two classes (or declared 'classes'); got 1 class.")
        index, inside = match_declared_labels(y, classes)
        self.classes_ = classes
        return np.where(inside, index, 0).astype(np.int64), np.asarray(inside, dtype=bool)

    def fit(self, X: Any, y: Any) -> DPSGDClassifier:
        """Train the network with DP-SGD and charge its privacy cost.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (sensitive).
        y : array-like of shape (n_samples,)
            Class labels (sensitive).

        Returns
        -------
        self

        Raises
        ------
        ImportError
            Without torch and Opacus (``pip install "privtune[dpsgd]"``); nothing spent.
        InvalidParameterError
            For a hyperparameter outside its domain, an accountant of another
            relation, a module Opacus cannot train, whose outputs do not
            match or that the module probe refuses (see Notes), a
            ``noise_multiplier`` whose run costs more than ``epsilon``, or
            mismatched shapes: nothing is spent. With ``classes=None``, fewer
            than two classes, a continuous target or a module whose number of
            outputs differs from the number of classes (or that the probe
            refuses with that many outputs) is found only after the charge.
        BudgetExceededError
            If the accountant cannot pay for the run; raised before any value
            of ``X`` or ``y`` is read, with nothing spent and nothing trained.

        Notes
        -----
        **Privacy.** ``privacy_spent_``-DP under ``relation``; the event
        ``_fit_privacy_event(n_samples)`` is charged once, while only the
        shapes are known (see the class docstring).
        """
        return self._fit(X, y)

    def decision_function(self, X: Any) -> np.ndarray:
        """The network's logits (post-processing, no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (logit of ``classes_[1]``
        minus that of ``classes_[0]``), else (n_samples, n_classes)
        """
        f = self._outputs(X)
        return f[:, 1] - f[:, 0] if f.shape[1] == 2 else f

    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers whole training rows; ``classes`` declares the label set (:mod:`privtune.base`)."""
        return PrivacyTags(covers="rows", classes_param="classes", relation=self.relation, raises_on_rows=False)
