"""The shared part of privtune's DP-SGD estimators: parameters, public checks, privacy plan, the fit's order.

:class:`_DPSGDBase` holds what :class:`~privtune.neural_network.DPSGDClassifier` and
:class:`~privtune.neural_network.DPSGDRegressor` share: ``__init__``'s parameters, the checks and the privacy plan
made from public quantities only (``_fit_privacy_event``), and ``_fit``, which charges the accountant before the
first value is read and then trains (:mod:`privtune.neural_network._dpsgd_engine`). Importing this module imports
neither torch nor Opacus.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from privtune.accounting import Accountant, Budget, EpsilonDeltaEvent, PrivacyEvent
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
    label_entries,
)

__all__ = ["_DPSGDBase"]

_OPTIMIZERS = ("sgd", "adam")
_MAX_STEPS = 10_000_000
#: ``lr="auto"`` with ``optimizer="sgd"``: the noise's random walk over the run held to this, per coordinate ...
_AUTO_WALK = 0.3
#: ... and never a step larger than this (the classifier's fixed default before ``"auto"``).
_AUTO_SGD_CAP = 0.5
#: ``lr="auto"`` with ``optimizer="adam"``: the best of the Adam settings measured on the classification tasks.
_AUTO_ADAM = 0.03
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
    #: Whether ``lr="auto"`` is accepted (the classifier's budget-aware step size; measured on classification only).
    _auto_lr = False

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
            "lr": self._check_lr(owner),
        }

    def _check_lr(self, owner: str) -> float | str:
        """A positive real, or ``"auto"`` where the estimator has that rule (public)."""
        if isinstance(self.lr, str):
            if self.lr == "auto" and self._auto_lr:
                return "auto"
            allowed = 'a positive real or "auto"' if self._auto_lr else "a positive real"
            extra = ("" if self._auto_lr or self.lr != "auto" else
                     ' ("auto" is DPSGDClassifier\'s budget-aware step size, measured on classification tasks '
                     "only)")
            raise InvalidParameterError(
                f"The 'lr' parameter of {owner} must be {allowed}. Got {self.lr!r} instead{extra}.")
        return check_real(self.lr, "lr", low=0.0, owner=owner)

    def _resolved_lr(self, params: dict[str, Any], plan: dict[str, Any]) -> float:
        """The learning rate the run uses: ``lr``, or ``"auto"`` resolved from the public plan (reads no data).

        ``"auto"`` with ``optimizer="sgd"``: ``min(0.5, 0.3 B / (sigma C sqrt(T)))`` with ``sigma`` the noise
        multiplier, ``C`` = ``max_grad_norm``, ``B`` the expected batch size the noisy sum is divided by and ``T``
        the number of steps (0.5 without noise); with ``"adam"``: 0.03.
        """
        lr = params["lr"]
        if lr != "auto":
            return float(lr)
        if self.optimizer == "adam":
            return _AUTO_ADAM
        walk = plan["noise_multiplier"] * params["max_grad_norm"] * float(np.sqrt(plan["steps"])) / plan["batch_size"]
        return _AUTO_SGD_CAP if walk <= 0.0 else min(_AUTO_SGD_CAP, _AUTO_WALK / walk)

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
        n_params = engine.check_module(module, d, n_outputs, owner, task=self._task)
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
        lr = self._resolved_lr(params, plan)
        self.module_ = engine.train(
            module, zero_non_finite(X), target, keep, task=self._task, steps=plan["steps"],
            threshold=plan["threshold"], batch_size=plan["batch_size"], lr=lr,
            optimizer=self.optimizer, mech=mech, clip=params["max_grad_norm"], source=source,
            torch_seed=torch_seed)
        self.n_iter_ = plan["steps"]
        self.lr_ = lr
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
