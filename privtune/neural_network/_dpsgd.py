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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from privtune.accounting import Accountant, Budget, EpsilonDeltaEvent, PrivacyEvent
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError
from privtune.linear_model._input import _numeric_rows, _numeric_table, _public_shape
from privtune.neural_network._dpsgd_accounting import (
    RELATIONS,
    calibrate_noise_multiplier,
    dpsgd_privacy_event,
    effective_sample_rate,
    n_steps,
    run_epsilon,
)
from privtune.optim._losses import zero_non_finite
from privtune.utils._random import check_random_state
from privtune.utils._validation import (
    check_delta,
    check_epsilon,
    check_integer,
    check_real,
    entrywise_float,
    label_entries,
    match_declared_labels,
)

__all__ = ["DPSGDClassifier", "DPSGDRegressor"]

_OPTIMIZERS = ("sgd", "adam")
_MAX_STEPS = 10_000_000
_SEED_HIGH = 2**62


def _import_opacus(owner: str) -> None:
    try:
        import opacus  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        raise ImportError(
            f"{owner} needs torch and Opacus: pip install \"privtune[dpsgd]\" (or pip install opacus). "
            "Nothing was spent.") from None


class _DPSGDBase(BaseEstimator):
    """Parameters, validation, planning, charge and training shared by the classifier and the regressor."""

    _task = "classification"

    def __init__(self, module: Any = None, *, epsilon: float = 1.0, delta: float = 1e-6,
                 noise_multiplier: float | None = None, max_grad_norm: float = 1.0, batch_size: int = 64,
                 epochs: int = 10, lr: float = 0.5, optimizer: str = "sgd", relation: str = "replace_one",
                 accountant: Accountant | None = None, random_state: Any = None) -> None:
        self.module = module
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.max_grad_norm = max_grad_norm
        self.batch_size = batch_size
        self.epochs = epochs
        self.lr = lr
        self.optimizer = optimizer
        self.relation = relation
        self.accountant = accountant
        self.random_state = random_state

    # -- validation (public quantities only) --------------------------------------------------------------
    def _validate_params_public(self, owner: str) -> dict[str, Any]:
        if self.module is not None and not callable(self.module):
            raise InvalidParameterError(
                f"The 'module' parameter of {owner} must be None, a torch.nn.Module or a callable "
                f"(n_features, n_outputs) -> torch.nn.Module. Got {type(self.module).__name__} instead.")
        if not isinstance(self.optimizer, str) or self.optimizer not in _OPTIMIZERS:
            raise InvalidParameterError(
                f"The 'optimizer' parameter of {owner} must be one of {list(_OPTIMIZERS)}. "
                f"Got {self.optimizer!r} instead.")
        if not isinstance(self.relation, str) or self.relation not in RELATIONS:
            raise InvalidParameterError(
                f"The 'relation' parameter of {owner} must be one of {list(RELATIONS)}. "
                f"Got {self.relation!r} instead.")
        if self.accountant is not None:
            if not isinstance(self.accountant, Accountant):
                raise InvalidParameterError(
                    f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. "
                    f"Got {type(self.accountant).__name__} instead.")
            if self.accountant.relation != self.relation:
                raise InvalidParameterError(
                    f"The 'accountant' parameter of {owner} must have relation={self.relation!r} (the fit's "
                    f"relation parameter). Got relation={self.accountant.relation!r}.")
        nm = self.noise_multiplier
        if nm is not None:
            nm = check_real(nm, "noise_multiplier", low=0.0, owner=owner)
        check_random_state(self.random_state, owner=owner)  # type check only; the source is built in fit
        return {
            "epsilon": check_epsilon(self.epsilon, owner=owner),
            "delta": check_delta(self.delta, owner=owner, allow_zero=False),
            "noise_multiplier": nm,
            "max_grad_norm": check_real(self.max_grad_norm, "max_grad_norm", low=0.0, owner=owner),
            "batch_size": check_integer(self.batch_size, "batch_size", low=1, owner=owner),
            "epochs": check_integer(self.epochs, "epochs", low=1, high=1_000_000, owner=owner),
            "lr": check_real(self.lr, "lr", low=0.0, owner=owner),
        }

    def _classes_public(self, owner: str) -> np.ndarray | None:
        return None

    # -- planning -----------------------------------------------------------------------------------------
    def _plan(self, n: int, params: dict[str, Any], owner: str) -> dict[str, Any]:
        """Steps, the exact sampling rate, the noise multiplier and the event, from public sizes only."""
        bs = min(params["batch_size"], n)
        steps = n_steps(params["epochs"], bs, n)
        if steps > _MAX_STEPS:
            raise InvalidParameterError(
                f"{owner} would run {steps} steps (epochs * n / batch_size); at most {_MAX_STEPS}. "
                "Nothing was spent.")
        rate, threshold = effective_sample_rate(bs, n)
        nm = params["noise_multiplier"]
        if nm is None:
            nm = calibrate_noise_multiplier(epsilon=params["epsilon"], delta=params["delta"], sample_rate=rate,
                                            steps=steps, relation=self.relation, owner=owner)
        event = dpsgd_privacy_event(sample_rate=rate, noise_multiplier=nm, steps=steps, relation=self.relation)
        spent = run_epsilon(event, params["delta"], self.relation)
        if spent > params["epsilon"] * (1 + 1e-12):
            raise InvalidParameterError(
                f"{owner}: noise_multiplier={nm!r} over {steps} steps at sample rate {rate:.4g} costs "
                f"epsilon={spent:.4g} (delta={params['delta']!r}, relation={self.relation!r}), above the per-fit "
                f"epsilon={params['epsilon']!r}: raise noise_multiplier or epsilon, or lower epochs or "
                "batch_size. Nothing was spent.")
        return {"batch_size": bs, "steps": steps, "rate": rate, "threshold": threshold, "noise_multiplier": nm,
                "event": event, "epsilon": spent}

    def _fit_privacy_event(self, n_samples: int | None = None, n_features: int | None = None) -> PrivacyEvent:
        """The event one ``fit`` charges, from the hyperparameters (and the public sizes) only.

        Parameters
        ----------
        n_samples : int or None, default=None
            Given: the exact event ``fit`` charges on that many rows. ``None``
            (how :class:`privtune.model_selection.PrivateSearchCV` asks before
            it knows each fold's size): ``EpsilonDeltaEvent(epsilon, delta)``,
            a bound on the charge of a fit on any number of rows (``fit``
            calibrates to, or refuses a ``noise_multiplier`` above, ``epsilon``).
        n_features : int or None, default=None
            Accepted for symmetry; the event does not depend on it.

        Returns
        -------
        PrivacyEvent

        Notes
        -----
        **Privacy.** Spends nothing and reads no data.
        """
        owner = type(self).__name__
        params = self._validate_params_public(owner)
        self._classes_public(owner)
        if n_features is not None:
            check_integer(n_features, "n_features", low=1, owner=owner)
        if n_samples is None:
            return EpsilonDeltaEvent(epsilon=params["epsilon"], delta=params["delta"], relation=self.relation,
                                     label=f"one {owner} fit (bound for any number of rows)")
        n = check_integer(n_samples, "n_samples", low=1, owner=owner)
        return self._plan(n, params, owner)["event"]

    def _check_fit_plan(self, n_samples: int, n_features: int) -> None:
        """Refuse, from public sizes alone, a configuration ``fit`` would refuse before its charge (nothing spent)."""
        owner = type(self).__name__
        n = check_integer(n_samples, "n_samples", low=1, owner=owner)
        d = check_integer(n_features, "n_features", low=1, owner=owner)
        params = self._validate_params_public(owner)
        plan = self._plan(n, params, owner)
        n_outputs = self._n_outputs_public(owner)
        if n_outputs is not None:
            _import_opacus(owner)
            self._prepare(plan, n, d, n_outputs, check_random_state(0, owner=owner), params, owner)

    def _n_outputs_public(self, owner: str) -> int | None:
        return 1

    def _prepare(self, plan: dict[str, Any], n: int, d: int, n_outputs: int, source: Any, params: dict[str, Any],
                 owner: str) -> tuple[Any, Any]:
        """Build and vet the module and the step's noise from public information (refusals spend nothing)."""
        from privtune.neural_network import _dpsgd_engine as engine

        seed = int(source.numpy_generator().integers(_SEED_HIGH))
        module = engine.build_module(self.module, d, n_outputs, seed, owner)
        n_params = engine.check_module(module, d, n_outputs, owner)
        mech = engine.step_mechanism(noise_multiplier=plan["noise_multiplier"],
                                     max_grad_norm=params["max_grad_norm"], n_samples=n, n_params=n_params,
                                     source=source, owner=owner)
        return module, mech

    # -- fit ----------------------------------------------------------------------------------------------
    def _fit(self, X: Any, y: Any) -> _DPSGDBase:
        from privtune.neural_network import _dpsgd_engine as engine

        owner = type(self).__name__
        params = self._validate_params_public(owner)
        _import_opacus(owner)
        y = label_entries(y)
        n, d = _public_shape(X, y, owner)
        plan = self._plan(n, params, owner)
        source = check_random_state(self.random_state, owner=owner)
        n_outputs = self._n_outputs_public(owner)
        prepared = None if n_outputs is None else self._prepare(plan, n, d, n_outputs, source, params, owner)
        acc = self.accountant
        if acc is None:
            acc = Accountant(Budget(params["epsilon"], params["delta"]), relation=self.relation)
        acc.spend(plan["event"], phase=owner, role="training")  # write-ahead, before any value of X or y is read
        X, y = _numeric_rows(self, X, y, owner)
        target, keep = self._encode_targets(y, owner)
        if prepared is None:  # classes read from y (after the charge; see the class docstring)
            prepared = self._prepare(plan, n, d, int(self.classes_.shape[0]), source, params, owner)
        module, mech = prepared
        torch_seed = int(source.numpy_generator().integers(_SEED_HIGH))
        self.module_ = engine.train(
            module, zero_non_finite(X), target, keep, task=self._task, steps=plan["steps"],
            threshold=plan["threshold"], batch_size=plan["batch_size"], lr=params["lr"],
            optimizer=self.optimizer, mech=mech, clip=params["max_grad_norm"], source=source,
            torch_seed=torch_seed)
        self.n_iter_ = plan["steps"]
        self.sample_rate_ = plan["rate"]
        self.noise_multiplier_ = plan["noise_multiplier"]
        self.privacy_spent_ = Budget(plan["epsilon"], params["delta"])
        self.privacy_event_ = plan["event"]
        self.accountant_ = acc
        self.seeded_ = bool(source.seeded)
        return self

    def _outputs(self, X: Any) -> np.ndarray:
        from privtune.neural_network import _dpsgd_engine as engine

        check_is_fitted(self, "module_")
        X = _numeric_table(self, X, type(self).__name__, reset=False)
        return engine.forward(self.module_, zero_non_finite(X))

    # -- tags -----------------------------------------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # non-finite entries are mapped to 0 row by row (never refused)
        return tags


class DPSGDClassifier(ClassifierMixin, _DPSGDBase):
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
        The architecture must pass Opacus's ``ModuleValidator`` (no BatchNorm)
        and must not raise on finite inputs. The factory is the form to prefer
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
    lr : float in (0, inf), default=0.5
        Learning rate of the optimizer.
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
    gradient is non-finite or whose label is outside the declared ``classes`` contributes zero.

    With ``classes=None`` the label set is read from ``y`` after the charge:
    the guarantee then holds between neighbouring datasets with the same label
    set, and a module whose number of outputs does not match is refused only
    then (declare ``classes`` to remove both conditions).

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

    def __init__(self, module: Any = None, *, epsilon: float = 1.0, delta: float = 1e-6,
                 noise_multiplier: float | None = None, max_grad_norm: float = 1.0, batch_size: int = 64,
                 epochs: int = 10, lr: float = 0.5, optimizer: str = "sgd", relation: str = "replace_one",
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
            relation, a module Opacus cannot train or whose outputs do not
            match, a ``noise_multiplier`` whose run costs more than ``epsilon``,
            or mismatched shapes: nothing is spent. With ``classes=None``, fewer
            than two classes, a continuous target or a module whose number of
            outputs differs from the number of classes is found only after the
            charge.
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

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels (post-processing, no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        f = self._outputs(X)  # checks that the model is fitted
        return self.classes_[np.argmax(f, axis=1)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: the softmax of the logits (post-processing, no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        f = self._outputs(X)
        f = f - f.max(axis=1, keepdims=True)
        e = np.exp(f)
        return e / e.sum(axis=1, keepdims=True)

    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers whole training rows; ``classes`` declares the label set (:mod:`privtune.base`)."""
        return PrivacyTags(covers="rows", classes_param="classes", relation=self.relation, raises_on_rows=False)


class DPSGDRegressor(RegressorMixin, _DPSGDBase):
    r"""A torch regressor trained with DP-SGD (Opacus's per-example gradients; privtune's noise, accounting).

    ``fit`` trains ``module`` (one output, squared error) by DP-SGD exactly as
    :class:`DPSGDClassifier` does. No bound on the target is needed: each
    per-example gradient is clipped to ``max_grad_norm`` whatever the target.

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
        The architecture must pass Opacus's ``ModuleValidator`` (no BatchNorm)
        and must not raise on finite inputs. The factory is the form to prefer
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
    lr : float in (0, inf), default=0.5
        Learning rate of the optimizer.
    optimizer : {"sgd", "adam"}, default="sgd"
        The torch optimizer applied to the noisy gradients (post-processing).
    relation : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation of the guarantee. ``"replace_one"`` (privtune's
        unit; required by :class:`privtune.model_selection.PrivateSearchCV`)
        or ``"add_remove"`` (Opacus's and most DP-SGD papers'; the same noise
        costs about 2-3 times less epsilon under it: see Notes).

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
    module_ : torch.nn.Module
        The trained network (in eval mode).
    n_iter_ : int
        Steps run.
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
    DPSGDClassifier

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
    gradient is non-finite or whose target is not finite contributes zero.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.neural_network import DPSGDRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2))
    >>> y = X[:, 0] - X[:, 1]
    >>> reg = DPSGDRegressor(epsilon=3.0, epochs=5, lr=0.1, random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.5
    True
    """

    _task = "regression"

    def _encode_targets(self, y: np.ndarray, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """Targets as float64 (a non-finite or non-numeric target: 0 with a zero gradient) and the usable rows."""
        t = entrywise_float(np.asarray(y, dtype=object).reshape(-1) if y.dtype == object else y.reshape(-1))
        ok = np.isfinite(t)
        return np.where(ok, t, 0.0), ok

    def fit(self, X: Any, y: Any) -> DPSGDRegressor:
        """Train the network with DP-SGD and charge its privacy cost.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (sensitive).
        y : array-like of shape (n_samples,)
            Targets (sensitive; any real values).

        Returns
        -------
        self

        Raises
        ------
        ImportError
            Without torch and Opacus; nothing spent.
        InvalidParameterError
            For a hyperparameter outside its domain, an accountant of another
            relation, a module Opacus cannot train or with other than one
            output, a ``noise_multiplier`` whose run costs more than
            ``epsilon``, or mismatched shapes: nothing is spent.
        BudgetExceededError
            If the accountant cannot pay for the run; raised before any value
            is read, with nothing spent and nothing trained.

        Notes
        -----
        **Privacy.** ``privacy_spent_``-DP under ``relation``; charged once,
        before any value is read (see the class docstring).
        """
        return self._fit(X, y)

    def predict(self, X: Any) -> np.ndarray:
        """The network's output (post-processing, no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._outputs(X)[:, 0]

    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers whole training rows (:mod:`privtune.base`)."""
        return PrivacyTags(covers="rows", relation=self.relation, raises_on_rows=False)

