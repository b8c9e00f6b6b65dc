"""``DPSGDRegressor``: a torch module trained with DP-SGD on a squared loss (see ``_dpsgd.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import RegressorMixin

from privtune.accounting import Accountant
from privtune.base import PrivacyTags
from privtune.neural_network._dpsgd_base import _DPSGDBase
from privtune.utils._validation import (
    entrywise_float,
)

__all__ = ["DPSGDRegressor"]


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
    lr : float in (0, inf), default=0.01
        Learning rate of the optimizer. (``"auto"``, the classifier's
        budget-aware step size, is refused here: it was measured on
        classification tasks only.)
    optimizer : {"sgd", "adam"}, default="adam"
        The torch optimizer applied to the noisy gradients (post-processing).
        The defaults differ from :class:`DPSGDClassifier`'s (``"sgd"``, 0.5):
        measured on five regression tasks (diabetes, friedman1, three
        ``make_regression`` sets; rows scaled to norm 1 or columns
        standardised; epsilon 0.3 to 8), plain SGD at 0.5 had a median test
        R^2 below 0 in 16 of 40 cells, all at epsilon <= 1 (the noisy steps
        blow the weights up), Adam at 0.01 in 2 (-0.05 and -0.07), with a
        mean regret to the best setting of 3.6 against 20.9 points on the
        two tasks it was chosen on and 6.3 against 30.3 on the three held
        out; it was worse in one cell (diabetes, rows of norm 1, epsilon 3:
        R^2 0.18 against 0.33). See ``benchmarks/results/dpsgd_defaults.md``.
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
    gradient is non-finite, whose target is not finite, or on which the
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

    def __init__(self, module: Any = None, *, epsilon: float = 1.0, delta: float = 1e-6,
                 noise_multiplier: float | None = None, max_grad_norm: float = 1.0, batch_size: int = 64,
                 epochs: int = 10, lr: float = 0.01, optimizer: str = "adam", relation: str = "replace_one",
                 accountant: Accountant | None = None, random_state: Any = None) -> None:
        # the classifier's parameters, with the regressor's own defaults for lr and optimizer (see above)
        super().__init__(module, epsilon=epsilon, delta=delta, noise_multiplier=noise_multiplier,
                         max_grad_norm=max_grad_norm, batch_size=batch_size, epochs=epochs, lr=lr,
                         optimizer=optimizer, relation=relation, accountant=accountant, random_state=random_state)

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
            relation, a module Opacus cannot train, with other than one
            output or that the module probe refuses (see Notes), a ``noise_multiplier`` whose run costs more than
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
