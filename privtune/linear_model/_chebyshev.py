r"""Label-private minimax (Chebyshev, L-infinity) linear regression (seed 001, Han et al. 2014).

:class:`DPChebyshevRegressor` fits ``min_w max_j |z_j . w - y_j|`` over a box of
coefficients, where the features ``z_j`` are **public** and only the targets
``y_j`` are private. It is the seed-001 problem with ``m = 2 n`` pieces: slopes
``a = +z_j, -z_j`` (public) and offsets ``b = -y_j, +y_j`` (private), so that
replacing one target moves two offsets, each by at most the width of the declared
target range. Any of the four mechanisms of :mod:`privtune.optim.piecewise`
then releases the coefficients.

References
----------
.. [HTP14] S. Han, U. Topcu and G. J. Pappas, "Differentially Private Convex
   Optimization with Piecewise Affine Objectives", IEEE CDC 2014,
   arXiv:1403.6135.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from privtune.accounting.budget import Budget
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError
from privtune.linear_model._input import _numeric_table
from privtune.optim.piecewise import (
    pwa_exponential,
    pwa_perturb_objective,
    pwa_perturb_solution,
    pwa_subgradient,
)
from privtune.optim.piecewise._core import check_box
from privtune.utils import check_epsilon, check_finite_array, check_integer, check_random_state
from privtune.utils._validation import entrywise_float, label_entries

__all__ = ["DPChebyshevRegressor"]

_METHODS = ("perturb-objective", "perturb-solution", "exponential", "subgradient")
_OWNER = "DPChebyshevRegressor"


class DPChebyshevRegressor(RegressorMixin, BaseEstimator):
    r"""Label-private minimax (Chebyshev) linear regression with public features.

    Fits ``w`` (and an intercept) minimising the largest absolute residual
    ``max_j |x_j . w + w_0 - y_j|`` over a public box, with epsilon-DP for the
    targets (Han et al. 2014).

    Parameters
    ----------
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit``.
    method : {"perturb-objective", "perturb-solution", "exponential", "subgradient"}, \
default="perturb-objective"
        The mechanism: M_P, M_S, M_E or the DP subgradient method (see
        :mod:`privtune.optim.piecewise`).
    bounds : pair (lo, hi) of floats or arrays of shape (n_features,), default=(-1.0, 1.0)
        Public box on the coefficients (it plays the role of a regulariser).
    target_bound : float in (0, inf) or pair (lo, hi), default=1.0
        Public range of the targets: ``B`` means ``[-B, B]``. Targets are
        clipped to it (never read off the data).
    fit_intercept : bool, default=True
        Whether to fit an intercept.
    intercept_bounds : pair (lo, hi) of floats or None, default=None
        Public box on the intercept; ``None`` uses the target range.
    n_iter : int in [1, inf), default=100
        Iterations of the subgradient method.
    sampler : {"rejection", "gibbs", "metropolis"}, default="gibbs"
        Sampler of the exponential mechanism.
    n_steps : int in [1, inf) or None, default=None
        Sampler steps (see :func:`~privtune.optim.piecewise.pwa_exponential`).
    certified_only : bool, default=True
        Exponential mechanism: refuse a sampler without a total-variation certificate.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws noise from a secure source; an int makes ``fit``
        reproducible and is **not for release**.
    accountant : Accountant or None, default=None
        Charged before the targets are read. ``sklearn.base.clone`` deep-copies
        parameters, so a cloned estimator holds a *copy* of the accountant:
        set it again on clones that must charge the original.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    privacy_spent_ : Budget
        ``(epsilon, delta)`` of the last ``fit`` (basic composition of its events).
    privacy_events_ : tuple of PrivacyEvent
    privacy_guarantee_ : {"unconditional", "conditional"}
    seeded_ : bool
        True when the noise was seeded (not for release).
    result_ : PiecewiseResult
        The mechanism's output (released and public quantities only).

    Raises
    ------
    InvalidParameterError
        From ``fit``, on bad parameters or data, before anything is spent.
    BudgetExceededError
        From ``fit``, if the accountant refuses the charge.

    Notes
    -----
    **Privacy.** ``epsilon``-DP (``(epsilon, delta)`` for a certified finite
    sampler of the exponential mechanism, heuristic only for an uncertified one)
    for the **targets**, under replace-one of a single target: with targets
    clipped to ``[lo, hi]``, one replacement changes two offsets by at most
    ``b_max = hi - lo`` each. So M_P uses L1 sensitivity ``2 b_max``; M_E and
    the subgradient method use score sensitivity ``b_max``; M_S uses the box's
    L1 diameter (any targets). Public: the features ``X``, ``n``, the boxes,
    the target range, all hyperparameters. The features are **not** protected.
    Each ``fit`` charges its events (see ``privacy_events_``) before reading
    ``y``.

    Evaluation of the fitted model on private data (``score``) is not private.

    *Deviations from the paper.* Those of :mod:`privtune.optim.piecewise`
    (grid-exact L1 Laplace noise, corrected Alg. 1 sign, projection, average
    output, certified MCMC). The regression use is the seed-001 spec's §6 [ours].

    References
    ----------
    .. [HTP14] S. Han, U. Topcu and G. J. Pappas, "Differentially Private Convex
       Optimization with Piecewise Affine Objectives", IEEE CDC 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.linear_model._chebyshev import DPChebyshevRegressor
    >>> X = np.linspace(-1, 1, 40).reshape(-1, 1)
    >>> y = 0.5 * X.ravel()
    >>> reg = DPChebyshevRegressor(epsilon=1.0, method="subgradient", random_state=0).fit(X, y)
    >>> reg.coef_.shape, reg.privacy_spent_.epsilon
    ((1,), 1.0)
    """

    def __init__(self, epsilon: float = 1.0, method: str = "perturb-objective", bounds: Any = (-1.0, 1.0),
                 target_bound: Any = 1.0, fit_intercept: bool = True, intercept_bounds: Any = None,
                 n_iter: int = 100, sampler: str = "gibbs", n_steps: int | None = None,
                 certified_only: bool = True, random_state: Any = None, accountant: Any = None) -> None:
        self.epsilon = epsilon
        self.method = method
        self.bounds = bounds
        self.target_bound = target_bound
        self.fit_intercept = fit_intercept
        self.intercept_bounds = intercept_bounds
        self.n_iter = n_iter
        self.sampler = sampler
        self.n_steps = n_steps
        self.certified_only = certified_only
        self.random_state = random_state
        self.accountant = accountant

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags

    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers the targets only: the features are public by assumption (:mod:`privtune.base`).

        The fitted coefficients (and an iterative method's history) are
        functions of the features as well, which this estimator does not
        protect; a training-sensitive ``PrivateSearchCV`` therefore refuses it.
        """
        return PrivacyTags(covers="labels")

    # -- validation -------------------------------------------------------------------------
    def _target_range(self) -> tuple[float, float]:
        tb = self.target_bound
        if isinstance(tb, (tuple, list)):
            lo, hi = check_box(tb, 1, _OWNER, name="target_bound")
            return float(lo[0]), float(hi[0])
        B = check_epsilon(tb, "target_bound", owner=_OWNER)
        return -B, B

    def _validate_params(self) -> None:
        check_epsilon(self.epsilon, owner=_OWNER)
        if self.method not in _METHODS:
            raise InvalidParameterError(
                f"The 'method' parameter of {_OWNER} must be one of {list(_METHODS)}. Got {self.method!r} instead.")
        for name in ("fit_intercept", "certified_only"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {_OWNER} must be a bool. Got {getattr(self, name)!r} instead.")
        check_integer(self.n_iter, "n_iter", low=1, owner=_OWNER)
        if self.n_steps is not None:
            check_integer(self.n_steps, "n_steps", low=1, owner=_OWNER)
        if self.sampler not in ("rejection", "gibbs", "metropolis"):
            raise InvalidParameterError(
                f"The 'sampler' parameter of {_OWNER} must be one of ['rejection', 'gibbs', 'metropolis']. "
                f"Got {self.sampler!r} instead.")
        check_random_state(self.random_state, owner=_OWNER)

    def _design(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Design matrix ``Z`` and its coefficient box (intercept last)."""
        d = X.shape[1]
        lo, hi = check_box(self.bounds, d, _OWNER)
        if not self.fit_intercept:
            return X, lo, hi
        if self.intercept_bounds is None:
            ilo, ihi = self._target_range()
        else:
            il, ih = check_box(self.intercept_bounds, 1, _OWNER, name="intercept_bounds")
            ilo, ihi = float(il[0]), float(ih[0])
        Z = np.hstack([X, np.ones((X.shape[0], 1))])
        return Z, np.r_[lo, ilo], np.r_[hi, ihi]

    # -- fit / predict ------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> DPChebyshevRegressor:
        """Fit the coefficients under epsilon-DP for ``y``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            Public features.
        y : array_like of shape (n_samples,)
            Private targets; clipped to ``target_bound``.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            On bad parameters, non-numeric or non-finite *features* (public) or
            wrong shapes, before anything is spent. Targets are never refused for
            their values: a non-finite target is mapped to the middle of
            ``target_bound`` and every target is clipped to it, row by row; and
            the exact LP of ``"perturb-solution"``, ``"perturb-objective"`` and
            the rejection sampler is rescaled when HiGHS rejects its magnitudes
            (targets of ``1e20`` or more inside a wide ``target_bound``, huge
            public features), with a data-free fallback if it still fails
            (:func:`~privtune.optim.piecewise.pwa_perturb_solution`), so nothing
            is refused after the charge.
        BudgetExceededError
            If the accountant refuses the charge; ``y`` is not used.

        Notes
        -----
        **Privacy.** See the class Notes; the events charged are in ``privacy_events_``.
        """
        self._validate_params()
        if y is None:
            raise InvalidParameterError(f"{_OWNER} requires y to be passed, but the target y is None.")
        X = _numeric_table(self, X, _OWNER, reset=True)
        X = check_finite_array(X, "X", owner=_OWNER, ndim=2)  # the features are public
        try:  # each target on its own: one that is not a number becomes NaN (mapped below), never a refusal
            y = entrywise_float(label_entries(y))
        except Exception:  # noqa: BLE001 - ragged input: a structure, not a value
            raise InvalidParameterError(f"{_OWNER}.fit: y must be a 1-D array of numbers (ragged input).") from None
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; it is ravelled.",
                          DataConversionWarning, stacklevel=2)
            y = y.ravel()
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise InvalidParameterError(
                f"{_OWNER}.fit: y must be 1-D with one target per row of X ({X.shape[0]}); got shape {y.shape}.")
        ylo, yhi = self._target_range()
        # The targets are private: never refused for their values. A non-finite target is mapped to the middle of
        # the declared range (then clipped like every target): a deterministic per-row map into the domain.
        y = np.where(np.isnan(y), 0.5 * (ylo + yhi), y)
        Z, lo, hi = self._design(X)
        A = np.vstack([Z, -Z])
        offset_bound = yhi - ylo
        # One replaced target moves two offsets (b = (-y, y)), each within the declared target range: a change
        # inside seed 001's offset relation, so the events hold under replace-one of a target (features public).
        common = dict(bounds=(lo, hi), epsilon=self.epsilon, accountant=self.accountant,
                      random_state=self.random_state, relation="replace_one")
        y_c = np.clip(y, ylo, yhi)  # the clipping is part of the mechanism (declared range)
        b = np.concatenate([-y_c, y_c])
        if self.method == "perturb-objective":
            res = pwa_perturb_objective(A, b, offset_bound=offset_bound, n_changed=2,
                                        max_abs_offset=max(abs(ylo), abs(yhi)), **common)
        elif self.method == "perturb-solution":
            res = pwa_perturb_solution(A, b, **common)
        elif self.method == "exponential":
            res = pwa_exponential(A, b, offset_bound=offset_bound, sampler=self.sampler, n_steps=self.n_steps,
                                  certified_only=self.certified_only, **common)
        else:
            res = pwa_subgradient(A, b, offset_bound=offset_bound, n_iter=self.n_iter, **common)
        w = np.array(res.x, dtype=np.float64)
        if self.fit_intercept:
            self.coef_, self.intercept_ = w[:-1], float(w[-1])
        else:
            self.coef_, self.intercept_ = w, 0.0
        self.result_ = res
        self.privacy_events_ = res.events
        self.privacy_spent_ = Budget(res.epsilon, res.delta)
        self.privacy_guarantee_ = res.guarantee
        self.seeded_ = res.seeded
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predict ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        X = check_finite_array(_numeric_table(self, X, _OWNER, reset=False), "X", owner=_OWNER, ndim=2)
        return X @ self.coef_ + self.intercept_
