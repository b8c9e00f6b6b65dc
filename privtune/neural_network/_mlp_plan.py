"""What :class:`~privtune.neural_network.DPMLPClassifier` decides from public quantities, before its charge.

:class:`_MLPPublicPlanMixin` holds the estimator's checks of its hyperparameters
(``_validate_params_public``, with :func:`_check_hidden` for ``hidden_layer_sizes``),
the privacy event one ``fit`` charges (``_fit_privacy_event``) and the trainer's plan
built from public sizes so that a configuration no noise grid or float can hold is
refused with nothing spent (``_public_plan``, ``_check_fit_plan``). None of it reads
a value of the data or spends budget. ``_mlp.py`` holds the estimator itself (its
parameters, ``fit`` and prediction).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.accounting.accountant import Accountant
from privtune.accounting.events import EpsilonDeltaEvent, PrivacyEvent
from privtune.exceptions import InvalidParameterError
from privtune.neural_network._objective import ACTIVATIONS, n_parameters
from privtune.optim.line_search import blsgd_privacy_event
from privtune.optim.line_search._loop import _check_grids as _check_trainer_grids
from privtune.optim.line_search._loop import _make_plan as _make_trainer_plan
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

_SAMPLINGS = ("without_replacement", "full")
_MAX_LAYERS = 20
_MAX_WIDTH = 100_000


def _check_hidden(value: Any, owner: str) -> tuple[int, ...]:
    """``hidden_layer_sizes`` as a tuple of positive ints (an int is one layer; empty: a linear model)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,)
    ok = isinstance(value, Sequence) and not isinstance(value, str) and len(value) <= _MAX_LAYERS
    if ok:
        ok = all(isinstance(h, numbers.Integral) and not isinstance(h, bool) and 1 <= h <= _MAX_WIDTH
                 for h in value)
    if not ok:
        raise InvalidParameterError(
            f"The 'hidden_layer_sizes' parameter of {owner} must be a tuple of at most {_MAX_LAYERS} ints in "
            f"[1, {_MAX_WIDTH}] (or one int). Got {value!r} instead.")
    return tuple(int(h) for h in value)


class _MLPPublicPlanMixin:
    """The public checks and privacy plan of :class:`~privtune.neural_network.DPMLPClassifier` (see the module).

    Reads the estimator's hyperparameters (``self.hidden_layer_sizes``, ``self.epsilon``, ...) and the public
    sizes only.
    """

    # -- validation (public quantities only) ----------------------------------------------------------
    def _validate_params_public(self, owner: str) -> dict[str, Any]:
        hidden = _check_hidden(self.hidden_layer_sizes, owner)
        if not isinstance(self.activation, str) or self.activation not in ACTIVATIONS:
            raise InvalidParameterError(
                f"The 'activation' parameter of {owner} must be one of {list(ACTIVATIONS)}. "
                f"Got {self.activation!r} instead.")
        if not isinstance(self.sampling, str) or self.sampling not in _SAMPLINGS:
            raise InvalidParameterError(
                f"The 'sampling' parameter of {owner} must be one of {list(_SAMPLINGS)}. Got {self.sampling!r} "
                "instead. (The paper's Poisson sampling is analysed under add/remove; privtune's estimators are "
                "replace-one.)")
        if self.accountant is not None:
            if not isinstance(self.accountant, Accountant):
                raise InvalidParameterError(
                    f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. "
                    f"Got {type(self.accountant).__name__} instead.")
            if self.accountant.relation != "replace_one":
                raise InvalidParameterError(
                    f"The 'accountant' parameter of {owner} must have relation='replace_one' (the fit is analysed "
                    f"under replace-one). Got relation={self.accountant.relation!r}.")
        classes = None
        if self.classes is not None:
            try:
                raw = np.asarray(self.classes)
                classes = np.unique(raw)
            except TypeError:
                raw = classes = None
            if raw is None or raw.ndim != 1 or classes.shape[0] < 2 or classes.shape[0] != raw.shape[0]:
                raise InvalidParameterError(
                    f"The 'classes' parameter of {owner} must be None or at least two distinct labels. "
                    f"Got {self.classes!r} instead.")
        check_random_state(self.random_state, owner=owner)  # type check only; the source is built in fit
        return {
            "hidden": hidden,
            "classes": classes,
            "data_norm": check_real(self.data_norm, "data_norm", low=0.0, owner=owner),
            "trainer": {
                "epsilon": check_epsilon(self.epsilon, owner=owner),
                "delta": check_delta(self.delta, owner=owner, allow_zero=False),
                "mode": "fixed",
                "sampling": self.sampling,
                "n_iter": check_integer(self.n_iter, "n_iter", low=1, high=1_000_000, owner=owner),
                "batch_fraction": check_real(self.batch_fraction, "batch_fraction", low=0.0, high=1.0,
                                             closed="right", owner=owner),
                "clip_grad": check_real(self.clip_grad, "clip_grad", low=0.0, owner=owner),
                "clip_obj": check_real(self.clip_obj, "clip_obj", low=0.0, owner=owner),
                "l2": check_real(self.l2, "l2", low=0.0, closed="left", owner=owner),
                "armijo": check_real(self.armijo, "armijo", low=0.0, high=1.0, owner=owner),
                "backtrack": check_real(self.backtrack, "backtrack", low=0.0, high=1.0, owner=owner),
                "max_backtracks": check_integer(self.max_backtracks, "max_backtracks", low=1, high=100,
                                                owner=owner),
                "eta0": check_real(self.eta0, "eta0", low=0.0, owner=owner),
                "line_search_share": check_real(self.line_search_share, "line_search_share", low=0.0, high=1.0,
                                                owner=owner),
                "line_search_noise": "laplace",
            },
        }

    # -- planning -----------------------------------------------------------------------------------------
    def _fit_privacy_event(self, n_samples: int | None = None, n_features: int | None = None) -> PrivacyEvent:
        """The event one ``fit`` charges, from the hyperparameters (and the public sizes) only.

        Parameters
        ----------
        n_samples : int or None, default=None
            The (public) number of training rows. Given: the exact event
            ``fit`` charges on that many rows (the composed RDP curve of the
            fixed schedule, which depends on ``n`` through the sampling rate
            ``m / n``). ``None`` (how :class:`privtune.model_selection.PrivateSearchCV`
            asks, before it knows the size of each fold):
            ``EpsilonDeltaEvent(epsilon, delta)``, which bounds the charge of a
            fit on any number of rows (the schedule is calibrated to convert to
            at most ``(epsilon, delta)`` whatever ``n``).
        n_features : int or None, default=None
            Accepted for symmetry; the event does not depend on it (the
            sensitivities come from clipping, not from the data's dimension).

        Returns
        -------
        PrivacyEvent

        Raises
        ------
        InvalidParameterError
            For a hyperparameter outside its domain (the checks of ``fit``),
            or a budget that cannot pay for ``n_iter`` iterations.

        Notes
        -----
        **Privacy.** Spends nothing and reads no data.
        """
        owner = type(self).__name__
        params = self._validate_params_public(owner)
        if n_features is not None:
            check_integer(n_features, "n_features", low=1, owner=owner)
        if n_samples is None:
            tr = params["trainer"]
            # The trainer's own checks, on its cheapest scheme (the full batch: no amplification to calibrate;
            # it ignores q, validated above). A schedule that fits without amplification fits with it too.
            blsgd_privacy_event(1, **{**tr, "sampling": "full", "batch_fraction": 0.5})
            return EpsilonDeltaEvent(epsilon=tr["epsilon"], delta=tr["delta"],
                                     label=f"one {owner} fit (bound for any number of rows)")
        n = check_integer(n_samples, "n_samples", low=1, owner=owner)
        return blsgd_privacy_event(n, **params["trainer"])

    def _public_plan(self, n: int, d: int, params: dict[str, Any], owner: str) -> None:
        """Build the trainer's plan and its noise mechanisms from public sizes, before the charge.

        ``fit`` used to charge first and build the mechanisms inside the
        trainer, so a public misconfiguration that no exact noise grid or float
        can hold (``line_search_share`` of 1e-30, whose sparse vector has no
        grid; ``clip_obj`` of 1e307, whose query bound overflows a float; a
        gradient noise too small for the grid of every parameter) was refused
        after the charge: no leak (public parameters only), but the fit's budget
        was lost. The same mechanisms (the first, which the fixed schedule keeps
        for every iteration) are now built here first, so such a fit is refused
        with nothing spent. No noise is drawn (a fixed seed is passed).

        The number of parameters depends on the number of outputs: from the
        declared ``classes``, or, with ``classes=None`` (read from ``y`` after the
        charge), the binary case (one output); a grid missing only for more
        classes is then found after the charge, from the label set alone (which
        the guarantee of ``classes=None`` already assumes the same on neighbours).
        """
        classes = params["classes"]
        n_outputs = 1 if classes is None or classes.shape[0] == 2 else int(classes.shape[0])
        width = n_parameters(d, params["hidden"], n_outputs)
        try:
            _check_trainer_grids(_make_trainer_plan(n, params["trainer"], owner), width,
                                 check_random_state(0, owner=owner))
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{exc} Nothing was spent.") from None
        except (ArithmeticError, ValueError):  # a float the plan cannot hold (e.g. the query bound overflows)
            raise InvalidParameterError(
                f"The noise of {owner}'s line search or gradient cannot be built on an exact grid within a float "
                f"(clip_obj={params['trainer']['clip_obj']!r}, clip_grad={params['trainer']['clip_grad']!r}, "
                f"line_search_share={params['trainer']['line_search_share']!r}): use values nearer 1. "
                "Nothing was spent.") from None

    def _check_fit_plan(self, n_samples: int, n_features: int) -> None:
        """Refuse, from public sizes alone, a configuration whose trainer cannot be built (nothing spent).

        What ``fit`` checks before its charge (:meth:`_public_plan`), for a
        search that prepays its fits and must refuse such a candidate before it
        charges the plan.
        """
        owner = type(self).__name__
        n = check_integer(n_samples, "n_samples", low=1, owner=owner)
        d = check_integer(n_features, "n_features", low=1, owner=owner)
        self._public_plan(n, d, self._validate_params_public(owner), owner)
