"""Kernel hyperparameters by marginal likelihood on PUBLIC tasks only.

Kusner et al.'s guarantee assumes *known* kernels. Fitting the lengthscale or
the task correlations on the private validation scores would both leak them
and break that assumption, so privtune fits them only on public data (scores
of the same model family on public or proxy data, or an earlier study) and
then freezes them. This module never sees a private score: everything passed
to :func:`fit_public_hyperparameters` is treated as public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from privtune.exceptions import InvalidParameterError
from privtune.gp._kernels import _KINDS, InputKernel
from privtune.gp._scaling import ScoreScale
from privtune.utils._random import check_random_state
from privtune.utils._validation import check_finite_array, check_real

__all__ = ["PublicHyperparameters", "fit_public_hyperparameters"]


@dataclass(frozen=True, eq=False)
class PublicHyperparameters:
    """Frozen kernel hyperparameters fitted on public tasks.

    Attributes
    ----------
    kind : str
        ``"matern52"`` or ``"rbf"``.
    lengthscale : float or tuple of float
        Fitted k2 lengthscale (one per coordinate when ``ard=True``).
    task_labels : tuple of int
        The public task labels, in the order of ``correlations``.
    correlations : ndarray of shape (P, P)
        Fitted correlations between the public tasks (unit diagonal; all
        non-negative, as BoTorch's ``PositiveIndexKernel`` constrains them).
        Correlations between the private task and the public tasks cannot be
        fitted on public data: they must still be declared.
    noise_var : float
        Observation noise variance on the standardised scale (fitted, or the
        value given).
    """

    kind: str
    lengthscale: float | tuple[float, ...]
    task_labels: tuple[int, ...]
    correlations: np.ndarray
    noise_var: float

    def input_kernel(self) -> InputKernel:
        """The frozen k2 as an :class:`InputKernel`."""
        return InputKernel(self.lengthscale, kind=self.kind)


def _data_kernel(kind: str, d: int, ard: bool) -> Any:
    import gpytorch

    ard_dims = d if ard else None
    if kind == "matern52":
        return gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=ard_dims)
    return gpytorch.kernels.RBFKernel(ard_num_dims=ard_dims)


def fit_public_hyperparameters(
    public_X: Any,
    public_y: Any,
    public_tasks: Any = None,
    *,
    score_bounds: ScoreScale | tuple[float, float],
    kind: str = "matern52",
    ard: bool = True,
    noise_var: float | None = None,
    random_state: Any = None,
) -> PublicHyperparameters:
    """Fit k2's lengthscale and the public-task correlations on PUBLIC data only.

    Parameters
    ----------
    public_X : array-like of shape (n, d)
        Encoded hyperparameters in ``[0, 1]^d`` (e.g. ``space.encode_many``).
    public_y : array-like of shape (n,)
        **Public** scores at those points, in score units. Never pass scores
        computed on the sensitive validation set.
    public_tasks : array-like of int, shape (n,), optional
        Public task label of each row (any non-negative ints); default: one task.
    score_bounds : ScoreScale or (lower, upper)
        Declared score bounds; scores are mapped to the standardised scale
        exactly as :class:`~privtune.gp.GPPosterior` does.
    kind : {"matern52", "rbf"}, default="matern52"
        The k2 family.
    ard : bool, default=True
        One lengthscale per coordinate.
    noise_var : float, optional
        Fixed observation noise variance on the standardised scale; default:
        fitted along with the kernel.
    random_state : None, int, numpy Generator or RandomSource, default=None
        Seeds the parameter initialisation (inside :func:`torch.random.fork_rng`,
        so torch's global RNG state is left as it was).

    Returns
    -------
    PublicHyperparameters

    Notes
    -----
    Builds ``botorch.models.SingleTaskGP`` (one task, with an output scale
    that is fitted and then discarded) or ``botorch.models.MultiTaskGP``
    (several tasks; k2 times BoTorch's ``PositiveIndexKernel``) on the scaled
    public scores with no outcome transform, and maximises the exact marginal
    likelihood with :func:`botorch.fit.fit_gpytorch_mll`. The fitted task
    covariance is normalised to correlations. Importing BoTorch changes some
    global ``linear_operator`` settings; this function imports it lazily.
    """
    if kind not in _KINDS:
        raise InvalidParameterError(
            f"The 'kind' parameter of fit_public_hyperparameters must be one of {list(_KINDS)!r}."
            f" Got {kind!r} instead."
        )
    X = check_finite_array(public_X, "public_X", owner="fit_public_hyperparameters", ndim=2)
    y = check_finite_array(public_y, "public_y", owner="fit_public_hyperparameters", ndim=1)
    n, d = X.shape
    if y.shape[0] != n or n < 2 or d == 0:
        raise InvalidParameterError(
            "public_X must have shape (n, d) with n >= 2 and d >= 1 and public_y shape (n,). "
            f"Got {X.shape} and {y.shape}."
        )
    if not np.all((X >= 0.0) & (X <= 1.0)):
        raise InvalidParameterError("public_X must lie in the unit cube [0, 1]^d.")
    if public_tasks is None:
        t = np.zeros(n, dtype=np.int64)
    else:
        t = np.asarray(public_tasks)
        if t.shape != (n,) or t.dtype.kind not in "iu" or (t.size and t.min() < 0):
            raise InvalidParameterError(
                "public_tasks must be non-negative ints, one per row of public_X."
            )
    labels, t_idx = np.unique(t, return_inverse=True)
    scale = ScoreScale.coerce(score_bounds)
    z = scale.to_scaled(y)
    fixed_noise = None if noise_var is None else check_real(
        noise_var, "noise_var", low=0.0, owner="fit_public_hyperparameters")
    seed = int(check_random_state(random_state).numpy_generator().integers(2**62))

    from botorch.fit import fit_gpytorch_mll
    from botorch.models import MultiTaskGP, SingleTaskGP
    from gpytorch.kernels import ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        train_Y = torch.as_tensor(z, dtype=torch.float64).reshape(-1, 1)
        Yvar = None if fixed_noise is None else torch.full_like(train_Y, fixed_noise)
        data_kernel = _data_kernel(kind, d, ard).to(torch.float64)
        if labels.size == 1:
            model = SingleTaskGP(
                torch.as_tensor(X, dtype=torch.float64), train_Y, train_Yvar=Yvar,
                covar_module=ScaleKernel(data_kernel), outcome_transform=None,
            )
        else:
            train_X = torch.as_tensor(np.column_stack([X, t_idx]), dtype=torch.float64)
            model = MultiTaskGP(
                train_X, train_Y, task_feature=-1, train_Yvar=Yvar, covar_module=data_kernel,
                outcome_transform=None, rank=int(labels.size),
            )
        model = model.to(torch.float64)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        with torch.no_grad():
            ls = data_kernel.lengthscale.detach().numpy().reshape(-1).astype(np.float64)
            if labels.size == 1:
                C = np.ones((1, 1))
            else:
                task_kernel = model.covar_module.kernels[1]
                cov = task_kernel.covar_matrix.to_dense().detach().numpy().astype(np.float64)
                sd = np.sqrt(np.diag(cov))
                C = cov / np.outer(sd, sd)
                C = (C + C.T) / 2.0
                np.fill_diagonal(C, 1.0)
            if fixed_noise is None:
                fitted_noise = float(model.likelihood.noise.detach().reshape(-1)[0])
            else:
                fitted_noise = fixed_noise
    C.setflags(write=False)
    lengthscale: float | tuple[float, ...] = (
        tuple(float(v) for v in ls) if ard else float(ls[0])
    )
    return PublicHyperparameters(
        kind=kind, lengthscale=lengthscale, task_labels=tuple(int(v) for v in labels),
        correlations=C, noise_var=fitted_noise,
    )
