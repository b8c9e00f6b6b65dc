r"""A differentially private ``StandardScaler`` with declared per-feature bounds (:class:`DPStandardScaler`).

Each feature ``j`` has a declared, public range ``[lower_j, upper_j]`` (width
``w_j``, midpoint ``c_j``). ``fit`` maps every entry into it (a value outside is
clipped to the nearer end, NaN to the midpoint), rescales it to
``u = (x - c_j) / w_j`` in ``[-1/2, 1/2]`` (clipped there again, so that float
rounding cannot leave it), and releases the sums over the rows of ``u`` and of
``u**2`` (one vector of ``2 d`` coordinates; ``d`` with ``with_std=False``) with
one exact discrete Gaussian (or Laplace) mechanism. The mean and the variance
are post-processing of that release; so is everything ``transform`` does.

Sensitivity. Replacing one row moves each coordinate pair ``(u_j, u_j**2)`` by
``(a, a s)`` with ``a = u - v``, ``s = u + v`` and ``|a| + |s| <= 1``; so
``a**2 (1 + s**2) <= 1`` and ``|a| (1 + |s|) <= 1``: the L2 sensitivity of the
whole vector is ``sqrt(d)`` and its L1 sensitivity ``d`` -- the same as for the
sums of ``u`` alone, so the variance costs no extra noise. The computed (float)
sums of neighbouring data sets can differ by a little more (their rounding):
the mechanism is calibrated on the sensitivity times the proven factor ``psi``
of :func:`privtune.optim._sums.rounding_factor` (blocked sums of 4 096 rows
added with ``math.fsum``), about ``1 + n 2**-40``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from privtune.accounting.accountant import Accountant
from privtune.accounting.budget import Budget
from privtune.accounting.events import PrivacyEvent
from privtune.base import PrivacyTags
from privtune.exceptions import InvalidParameterError
from privtune.linear_model._input import _public_defects
from privtune.mechanisms import Gaussian, Laplace
from privtune.optim._sums import blocked_sum, check_sum_terms, rounding_factor
from privtune.utils._validation import check_delta, check_epsilon

__all__ = ["DPStandardScaler"]

_NOISES = ("gaussian", "laplace")


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Standardize features with a differentially private mean and variance, from declared bounds.

    The private counterpart of :class:`sklearn.preprocessing.StandardScaler`
    (and of diffprivlib's ``StandardScaler``): ``transform`` computes
    ``(x - mean_) / scale_`` where ``mean_`` and ``var_`` are released with
    differential privacy from rows clipped to the declared ``bounds``. Use it
    in a ``Pipeline`` before a privtune DP estimator, also inside
    :class:`~privtune.model_selection.PrivateSearchCV` with sensitive training
    rows: the search charges its fit with the estimator's, up front.

    Parameters
    ----------
    bounds : (lower, upper), required
        Public range of every feature: each a float (the same for every
        feature) or an array of ``n_features`` floats, ``lower < upper``,
        finite. Never read off the data (as in diffprivlib, a value outside is
        clipped for the statistics); choose them from domain knowledge (a
        questionnaire's scale, a sensor's range) or from public data.
    epsilon : float in (0, inf), default=1.0
        Privacy budget of one ``fit``.
    delta : float in (0, 1), default=1e-6
        With ``noise="gaussian"``: the delta of one ``fit``. Unused (validated)
        with ``noise="laplace"``.
    noise : {"gaussian", "laplace"}, default="gaussian"
        Exact discrete Gaussian noise calibrated through RDP on the vector of
        sums (``(epsilon, delta)``-DP), or discrete Laplace noise
        (``(epsilon, 0)``-DP).
    with_mean : bool, default=True
        Centre the data (subtract ``mean_``) in ``transform``.
    with_std : bool, default=True
        Scale the data to unit variance (divide by ``scale_``). ``with_mean``
        and ``with_std`` may not both be False (nothing would be learnt: drop
        the step).
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None`` draws the noise from the operating system's CSPRNG (for
        release). A seed makes the fit reproducible and is **not for release**.
    accountant : privtune.accounting.Accountant or None, default=None
        Charged the fit's event before any value is read. ``None``: a fresh
        accountant with the budget ``(epsilon, delta)``.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private mean, inside the declared bounds.
    var_ : ndarray of shape (n_features,) or None
        The private variance, in ``[0, (w / 2)**2]`` (``w`` the declared width);
        None with ``with_std=False``.
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``; where the private variance is 0 (the noise hid it), the
        declared half-width ``w / 2``, the largest standard deviation a feature
        within its bounds can have, so that such a feature is shrunk, never
        blown up (scikit-learn's ``StandardScaler`` uses 1 for a zero variance).
        None with ``with_std=False``.
    n_samples_seen_ : int
        Number of training rows (public).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string column names.
    privacy_event_ : PrivacyEvent
        The event charged (``_fit_privacy_event()``).
    privacy_spent_ : Budget
        What one fit costs, ``(epsilon, delta)`` (``delta = 0`` with Laplace).
    accountant_ : Accountant
        The accountant charged.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : the non-private scaler.
    privtune.linear_model.DPLogisticRegression : a DP estimator to put after it.

    Notes
    -----
    **Privacy.** ``fit`` is ``(epsilon, delta)``-DP (Gaussian) or
    ``(epsilon, 0)``-DP (Laplace) under the **replace-one** relation (data sets
    of the same public size ``n`` differing in one row), and the guarantee covers
    ``mean_``, ``var_`` and ``scale_``. Public: ``n``, ``n_features``, the
    column names, every parameter and the bounds. The event
    (``GaussianEvent`` with the noise multiplier of ``(epsilon, delta)``, a
    vector release accounted through RDP; or ``LaplaceEvent``) is charged once,
    before any value of ``X`` is read; then nothing about a value can make
    ``fit`` raise: an entry that is not a number becomes NaN and every NaN the
    midpoint of its feature's bounds, row by row. ``y`` is ignored.
    ``transform`` is post-processing: it reads only the row it transforms and
    never refuses a value (NaN stays NaN, a non-number becomes NaN), so a DP
    estimator after it maps such entries as it would without the scaler. In a
    ``Pipeline`` before a privtune DP estimator the whole pipeline is DP with
    the composition of the two events, which is what
    :class:`~privtune.model_selection.PrivateSearchCV` charges per fit.

    Deviations from scikit-learn's ``StandardScaler``: ``bounds`` are required;
    the statistics are noisy; a zero private variance scales by the declared
    half-width (above), not 1; sparse input is refused (the DP estimators read
    dense rows); ``partial_fit`` and ``sample_weight`` are not supported (a
    weighted sum has the weights' sensitivity).

    References
    ----------
    .. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian
       for Differential Privacy", NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from privtune.preprocessing import DPStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(500.0, 100.0, size=(20_000, 2))
    >>> scaler = DPStandardScaler(bounds=(0.0, 1000.0), epsilon=1.0, random_state=0).fit(X)
    >>> bool(np.all(np.abs(scaler.mean_ - 500.0) < 5.0)), bool(np.all(np.abs(scaler.scale_ - 100.0) < 5.0))
    (True, True)
    >>> round(float(scaler.transform(X).std()), 1)
    1.0
    """

    def __init__(self, bounds: Any = None, *, epsilon: float = 1.0, delta: float = 1e-6, noise: str = "gaussian",
                 with_mean: bool = True, with_std: bool = True, random_state: Any = None,
                 accountant: Accountant | None = None) -> None:
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise
        self.with_mean = with_mean
        self.with_std = with_std
        self.random_state = random_state
        self.accountant = accountant

    # -- public declarations ------------------------------------------------------------
    def __privtune_tags__(self) -> PrivacyTags:
        """The guarantee covers whole training rows, and ``fit`` never refuses a row's values (:mod:`privtune.base`)."""
        return PrivacyTags(covers="rows")

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # mapped to the midpoint in fit, kept as NaN by transform (never refused)
        return tags

    def _validate(self, owner: str) -> dict[str, Any]:
        if not isinstance(self.noise, str) or self.noise not in _NOISES:
            raise InvalidParameterError(
                f"The 'noise' parameter of {owner} must be one of {list(_NOISES)}. Got {self.noise!r} instead.")
        for name in ("with_mean", "with_std"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidParameterError(
                    f"The '{name}' parameter of {owner} must be a bool. Got {getattr(self, name)!r} instead.")
        if not (self.with_mean or self.with_std):
            raise InvalidParameterError(
                f"{owner} with with_mean=False and with_std=False learns nothing: drop the step (or use "
                "sklearn.preprocessing.FunctionTransformer()).")
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise InvalidParameterError(
                f"The 'accountant' parameter of {owner} must be a privtune.accounting.Accountant or None. Got "
                f"{type(self.accountant).__name__} instead.")
        gaussian = self.noise == "gaussian"
        return {"epsilon": check_epsilon(self.epsilon, owner=owner),
                "delta": check_delta(self.delta, owner=owner, allow_zero=not gaussian)}

    def _declared_bounds(self, n_features: int, owner: str) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` as float arrays of ``n_features`` (public; refused before any charge)."""
        how = ("declare bounds=(lower, upper): floats, or arrays of one value per feature, from public knowledge "
               "(privtune never reads them off the data)")
        if self.bounds is None:
            raise InvalidParameterError(f"{owner} needs declared bounds: {how}.")
        try:
            lower, upper = self.bounds
            lo = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,)).copy()
            hi = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,)).copy()
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"The 'bounds' parameter of {owner} must be a pair (lower, upper) of floats or of arrays of "
                f"n_features={n_features} floats; got {self.bounds!r}. {how[0].upper()}{how[1:]}.") from None
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
            raise InvalidParameterError(
                f"The 'bounds' parameter of {owner} must hold finite values with lower < upper for every feature; "
                f"got {self.bounds!r}.")
        width = hi - lo
        if not np.all(np.isfinite(width)) or np.any(width <= 0):
            raise InvalidParameterError(
                f"The 'bounds' parameter of {owner}: upper - lower overflows or vanishes in float64 for some feature "
                f"(got {self.bounds!r}).")
        return lo, hi

    def _coordinates(self, n_features: int) -> int:
        return 2 * n_features if self.with_std else n_features

    def _sensitivity(self, n_samples: int, n_features: int) -> float:
        """The calibrated sensitivity of the vector of sums: exact (``sqrt(d)`` or ``d``) times ``psi`` (public)."""
        k = self._coordinates(n_features)
        gaussian = self.noise == "gaussian"
        exact = math.nextafter(math.sqrt(n_features), math.inf) if gaussian else float(n_features)
        per_row = (0.25 + 0.0625 if self.with_std else 0.25) if gaussian else (0.75 if self.with_std else 0.5)
        term = (math.nextafter(math.sqrt(n_features * per_row), math.inf) if gaussian
                else n_features * per_row)  # the largest norm of one row's terms
        psi = rounding_factor(terms=n_samples, bound=term, divisor=1.0, factor=exact / term, coordinates=k,
                              norm=2 if gaussian else 1, exact_sensitivity=exact)
        return math.nextafter(exact * psi, math.inf)

    def _mechanism(self, params: dict[str, Any], sensitivity: float, random_state: Any) -> Any:
        if self.noise == "gaussian":
            return Gaussian(epsilon=params["epsilon"], delta=params["delta"], sensitivity=sensitivity,
                            calibration="rdp", random_state=random_state)
        return Laplace(epsilon=params["epsilon"], sensitivity=sensitivity, random_state=random_state)

    def _fit_privacy_event(self) -> PrivacyEvent:
        """The event one ``fit`` charges, from the hyperparameters only (nothing is read or spent).

        Raises
        ------
        InvalidParameterError
            For a hyperparameter outside its domain.
        """
        owner = type(self).__name__
        params = self._validate(owner)
        event = self._mechanism(params, 1.0, 0).privacy_event()  # the event does not depend on the sensitivity
        return dataclasses.replace(event, label=f"one {owner} fit ({self.noise})")

    def _check_fit_plan(self, n_samples: int, n_features: int) -> None:
        """Refuse, from public sizes alone, a configuration ``fit`` would refuse before its charge (nothing spent)."""
        owner = type(self).__name__
        params = self._validate(owner)
        self._plan(params, int(n_samples), int(n_features), owner)

    def _plan(self, params: dict[str, Any], n: int, d: int, owner: str) -> tuple[np.ndarray, np.ndarray, Any]:
        """Bounds and the mechanism, from public sizes (its noise grid checked; no randomness drawn)."""
        lo, hi = self._declared_bounds(d, owner)
        check_sum_terms(n, owner)
        sensitivity = self._sensitivity(n, d)
        probe = self._mechanism(params, sensitivity, 0)
        probe.grid_spacing(self._coordinates(d))  # refuses a grid no float can hold, before the charge
        return lo, hi, sensitivity

    # -- fit / transform ------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> DPStandardScaler:
        """Release the private mean and variance of the rows of ``X`` (clipped to ``bounds``) and charge them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (sensitive). Dense.
        y : None
            Ignored.

        Returns
        -------
        self

        Raises
        ------
        InvalidParameterError
            For a parameter outside its domain, undeclared or invalid
            ``bounds``, or a public defect of ``X`` (not 2-D, sparse, no
            rows); nothing is spent.
        BudgetExceededError
            If the accountant cannot pay for the fit; nothing is spent.

        Notes
        -----
        **Privacy.** See the class docstring: the event is charged before any
        value is read, and nothing about a value can make ``fit`` raise after it.
        """
        from privtune.linear_model._input import _numeric_table
        from privtune.utils._random import check_random_state

        owner = type(self).__name__
        params = self._validate(owner)
        n, d = _public_table_shape(X, owner)
        lo, hi, sensitivity = self._plan(params, n, d, owner)
        source = check_random_state(self.random_state, owner=owner)
        mech = self._mechanism(params, sensitivity, source)
        event = self._fit_privacy_event()
        acc = self.accountant
        if acc is None:
            acc = (Accountant(Budget(params["epsilon"], params["delta"]), method="rdp") if self.noise == "gaussian"
                   else Accountant(Budget(params["epsilon"], 0.0), method="basic"))
        acc.spend(event, phase=owner, role="training")  # write-ahead, before any value of X is read
        values = _numeric_table(self, X, owner, reset=True, entrywise=True)  # never refuses a value now
        mid, width = (lo + hi) / 2.0, hi - lo
        with np.errstate(all="ignore"):
            clipped = np.where(np.isnan(values), mid, np.clip(values, lo, hi))
            u = np.clip((clipped - mid) / width, -0.5, 0.5)

        def block(start: int, stop: int) -> np.ndarray:
            part = u[start:stop]
            sums = [part.sum(axis=0)]
            if self.with_std:
                sums.append((part * part).sum(axis=0))
            return np.concatenate(sums)

        released = np.asarray(mech.randomise(blocked_sum(n, block)), dtype=float)
        mean_u = np.clip(released[:d] / n, -0.5, 0.5)
        self.mean_ = np.clip(mid + width * mean_u, lo, hi)
        if self.with_std:
            second = np.clip(released[d:] / n, 0.0, 0.25)
            var_u = np.clip(second - mean_u * mean_u, 0.0, 0.25)
            self.var_ = width * width * var_u
            self.scale_ = np.where(var_u > 0.0, np.sqrt(self.var_), width / 2.0)
        else:
            self.var_ = None
            self.scale_ = None
        self.n_samples_seen_ = n
        self.privacy_event_ = event
        self.privacy_spent_ = (Budget(params["epsilon"], params["delta"]) if self.noise == "gaussian"
                               else Budget(params["epsilon"], 0.0))
        self.accountant_ = acc
        return self

    def transform(self, X: Any, copy: bool | None = None) -> np.ndarray:
        """``(X - mean_) / scale_`` (as far as ``with_mean`` / ``with_std`` ask); NaN stays NaN, never refused.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        copy : None
            Ignored (a new array is always returned).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        out = self._fitted_rows(X)
        with np.errstate(all="ignore"):
            if self.with_mean:
                out -= self.mean_
            if self.with_std:
                out /= self.scale_
        return out

    def _fitted_rows(self, X: Any) -> np.ndarray:
        """``X`` as a new float array of the fitted width (entries that are not numbers: NaN; never refused)."""
        from privtune.linear_model._input import _numeric_table

        check_is_fitted(self, "n_samples_seen_")
        _public_table_shape(X, type(self).__name__)
        return np.array(_numeric_table(self, X, type(self).__name__, reset=False, entrywise=True), dtype=float)

    def inverse_transform(self, X: Any, copy: bool | None = None) -> np.ndarray:
        """Undo :meth:`transform`: ``X * scale_ + mean_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        copy : None
            Ignored.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        out = self._fitted_rows(X)
        with np.errstate(all="ignore"):
            if self.with_std:
                out *= self.scale_
            if self.with_mean:
                out += self.mean_
        return out


def _public_table_shape(X: Any, owner: str) -> tuple[int, int]:
    """``(n_samples, n_features)`` of a dense 2-D table from its structure only (no value is read)."""
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise InvalidParameterError(
            f"Sparse data was passed to {owner}, but dense data is required (the DP estimators read dense rows). "
            "Use X.toarray() to convert to a dense numpy array.")
    shape = getattr(X, "shape", None)
    if shape is None:
        try:
            shape = np.asarray(X, dtype=object).shape
        except Exception:  # noqa: BLE001 - ragged input
            raise InvalidParameterError(f"{owner}: X must be a 2-D array-like (n_samples, n_features).") from None
    if len(shape) != 2:
        raise InvalidParameterError(
            f"Expected 2D array, got an array with {len(shape)} dimension(s) instead ({owner}: X). Reshape your data "
            "either using array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if it "
            "contains a single sample.")
    if shape[0] < 1 or shape[1] < 1:
        raise InvalidParameterError(
            f"Found array with {shape[0]} sample(s) and {shape[1]} feature(s) (shape={tuple(shape)}) while a "
            f"minimum of 1 is required by {owner}.")
    _public_defects(X, owner)  # a complex dtype, mixed-type column names: refused before the charge
    return int(shape[0]), int(shape[1])
