"""The multi-task kernel k1 ⊗ k2 of Kusner et al. (2015), Assumption 1.

* ``k2`` (:class:`InputKernel`): Matérn-5/2 or squared exponential on the
  encoded unit cube, with a **fixed, declared** lengthscale and ``k2(λ, λ) = 1``
  (no output scale: scores are put on the GP's scale by the data-independent
  map of :class:`~privtune.gp.ScoreScale`). Covariances are evaluated with
  GPyTorch kernel objects whose parameters are frozen.
* ``k1`` (:class:`TaskKernel`): correlations between validation sets (tasks).
  Task 0 is the private validation set; tasks 1..P are optional public tasks
  (scores on public or proxy data) that warm-start the search at no privacy
  cost. ``task_correlation`` is the declared k1(V, V') between the private set
  and a neighbour differing in one record; the release methods use it in
  Kusner et al.'s constant c = 2 sqrt((1 - k1(V, V')) log(3|Λ|/δ)).

Nothing here is ever fitted on private scores.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import gpytorch
import numpy as np
import torch

from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_real

__all__ = ["InputKernel", "TaskKernel", "MultiTaskKernel"]

_KINDS = ("matern52", "rbf")
_PSD_TOL = 1e-10  # eigenvalues above -_PSD_TOL count as non-negative


def _as_points(X: Any, name: str, n_dims: int | None = None) -> np.ndarray:
    try:
        arr = np.array(X, dtype=np.float64)  # a writable copy (torch.from_numpy needs one)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"The {name!r} parameter must be an array of encoded points in [0, 1]^d."
        ) from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise InvalidParameterError(
            f"The {name!r} parameter must have shape (n, d) with d >= 1. Got shape {arr.shape}."
        )
    if n_dims is not None and arr.shape[1] != n_dims:
        raise InvalidParameterError(
            f"The {name!r} parameter must have {n_dims} columns (one per lengthscale). "
            f"Got {arr.shape[1]}."
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"The {name!r} parameter contains NaN or infinite values.")
    return arr


#: Largest allowed sum(lengthscale**-2): squared distances on the unit cube stay far from float overflow.
_MAX_INVERSE_SQUARED = 1e100


class InputKernel:
    """k2: a stationary kernel on the encoded unit cube with a fixed lengthscale.

    Parameters
    ----------
    lengthscale : float or sequence of float, default=0.2
        Declared lengthscale ℓ in encoded units (the unit cube), either one value
        for all coordinates or one per coordinate (then ``d`` is fixed). It is a
        prior assumption, never fitted on private scores; it may be fitted on
        public tasks only (:func:`~privtune.gp.fit_public_hyperparameters`).
    kind : {"matern52", "rbf"}, default="matern52"
        ``"matern52"``: (1 + √5 r + 5r²/3) exp(-√5 r); ``"rbf"`` (squared
        exponential): exp(-r²/2); with r = ‖(λ - λ')/ℓ‖ (per-coordinate ℓ).

    Notes
    -----
    ``k2(λ, λ) = 1``: there is no output scale, as Kusner et al.'s constants
    assume. Covariances come from :class:`gpytorch.kernels.MaternKernel`
    (``nu=2.5``) or :class:`gpytorch.kernels.RBFKernel` in float64 with the
    lengthscale set and its gradient switched off, evaluated through the
    kernel's ``forward`` (a dense tensor; the lazy wrapper of ``__call__`` is
    skipped for speed) under :func:`torch.no_grad`; torch's global RNG is
    never used.
    """

    def __init__(self, lengthscale: float | Any = 0.2, *, kind: str = "matern52") -> None:
        if kind not in _KINDS:
            raise InvalidParameterError(
                f"The 'kind' parameter of InputKernel must be one of {list(_KINDS)!r}. "
                f"Got {kind!r} instead."
            )
        self.kind = kind
        if isinstance(lengthscale, numbers.Real) and not isinstance(lengthscale, bool):
            ls = np.array([check_real(lengthscale, "lengthscale", low=0.0, owner="InputKernel")])
            self.n_dims: int | None = None
        else:
            try:
                ls = np.asarray(lengthscale, dtype=np.float64)
            except (TypeError, ValueError):
                raise InvalidParameterError(
                    "The 'lengthscale' parameter of InputKernel must be a positive float or a "
                    f"1-D sequence of positive floats. Got {lengthscale!r} instead."
                ) from None
            if ls.ndim != 1 or ls.size == 0 or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
                raise InvalidParameterError(
                    "The 'lengthscale' parameter of InputKernel must be a positive float or a "
                    "non-empty 1-D sequence of finite positive floats. "
                    f"Got {lengthscale!r} instead."
                )
            self.n_dims = int(ls.size)
        # Encoded points lie in the unit cube, so r**2 <= sum(ls**-2) (times d for one shared value): keep that
        # finite with room, or a covariance could overflow to inf * 0 = NaN for some pairs of candidates only --
        # which pairs a GP method meets follows its raw scores, so the failure would depend on the data.
        with np.errstate(over="ignore", divide="ignore"):
            worst = float(np.sum(ls**-2.0))
        if not math.isfinite(worst) or worst > _MAX_INVERSE_SQUARED:
            raise InvalidParameterError(
                "The 'lengthscale' parameter of InputKernel is too small: sum(lengthscale**-2) must be at most "
                f"{_MAX_INVERSE_SQUARED:g} so that every covariance on the unit cube is finite. Got {lengthscale!r} "
                "instead.")
        self.lengthscale = float(ls[0]) if self.n_dims is None else tuple(float(v) for v in ls)
        self._module = self._build_module(ls)

    def _build_module(self, ls: np.ndarray) -> gpytorch.kernels.Kernel:
        ard = None if self.n_dims is None else self.n_dims
        if self.kind == "matern52":
            module = gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=ard)
        else:
            module = gpytorch.kernels.RBFKernel(ard_num_dims=ard)
        module = module.to(torch.float64)
        module.lengthscale = torch.as_tensor(ls, dtype=torch.float64).reshape(1, -1)
        for p in module.parameters():
            p.requires_grad_(False)
        return module.eval()

    @property
    def lengthscale_array(self) -> np.ndarray:
        """The lengthscale as a 1-D float64 array (length 1 or ``d``)."""
        ls = self.lengthscale
        return np.atleast_1d(np.asarray(ls, dtype=np.float64))

    def __call__(self, X1: Any, X2: Any) -> np.ndarray:
        """Covariance matrix ``k2(X1[i], X2[j])`` of shape ``(n1, n2)`` (float64 numpy)."""
        A = _as_points(X1, "X1", self.n_dims)
        B = _as_points(X2, "X2", self.n_dims)
        if A.shape[1] != B.shape[1]:
            raise InvalidParameterError(
                f"X1 and X2 must have the same number of columns. Got {A.shape[1]} and "
                f"{B.shape[1]}."
            )
        return self._covariance(torch.from_numpy(A), torch.from_numpy(B))

    def _covariance(self, A: torch.Tensor, B: torch.Tensor) -> np.ndarray:
        """Unchecked evaluation on float64 tensors of shape (n1, d) and (n2, d).

        Calls the GPyTorch kernel's ``forward`` (the dense covariance) directly,
        skipping the lazy-tensor wrapper of ``__call__``, which costs about
        0.1 ms per call, a large share of a BO iteration at |Λ| = 4096.
        """
        with torch.no_grad():
            K = self._module.forward(A, B)
        return K.numpy()

    def column(self, X: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``k2(X[i], x)`` for one point ``x`` (unchecked float64 arrays), in numpy.

        The same closed forms as GPyTorch's ``MaternKernel(nu=2.5)`` /
        ``RBFKernel`` (tested to agree within 1e-12), without a torch call: a
        BO iteration needs one column over Λ, and torch's dispatch cost was a
        large share of it. Callers that evaluate many columns over one ``X``
        prepare it once with :meth:`_prepare` and call :meth:`_column_prepared`.
        """
        return self._column_prepared(self._prepare(X), np.asarray(x, dtype=np.float64))

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        """``Xᵀ`` as a C-contiguous ``(d, n)`` float64 array, the input of :meth:`_column_prepared`.

        One contiguous row per coordinate: the scaled differences to a point are
        then ``d`` passes over contiguous memory (broadcasting ``(X - x) / ℓ``
        over the short rows of an ``(n, d)`` array cost ~1.4 ms at n = 65 536,
        d = 2; the passes cost ~0.1 ms).
        """
        return np.ascontiguousarray(np.asarray(X, dtype=np.float64).T)

    def _column_prepared(self, XT: np.ndarray, x: np.ndarray, out: np.ndarray | None = None,
                         work: np.ndarray | None = None) -> np.ndarray:
        """``k2(X[i], x)`` from ``XT = self._prepare(X)``; no allocation when the buffers are given.

        ``out`` (shape ``(n,)``) receives the column and is returned; ``work``
        (shape ``(2, n)``) is scratch. Each pass is one in-place numpy ufunc
        over contiguous memory. The arithmetic is that of the formula
        ``r² = Σ_k ((X_k - x_k) / ℓ_k)²``, ``(1 + √5 r + 5r²/3) exp(-√5 r)``
        (or ``exp(-r²/2)``) operation for operation, summing the squares in the
        order ``numpy.einsum`` uses for an ``(n, d)`` array (one running sum for
        d <= 2, the even and the odd coordinates apart for 3 <= d <= 7, einsum
        itself beyond): with numpy 2.4 the columns, hence every posterior and
        every seeded release, are bit-identical to those of the ``(n, d)``
        formulation (checked for d = 1..10); ``tests/gp/test_engine_inplace.py``
        asserts agreement within two units in the last place, which holds
        whatever order another numpy's einsum uses.
        ``r²`` is finite on the unit cube (the constructor bounds ``Σ ℓ⁻²``), so
        ``exp`` underflows to 0 and no ``inf * 0`` arises.
        """
        d, n = XT.shape
        sq = np.empty(n) if out is None else out
        w = np.empty((2, n)) if work is None else work
        t, u = w[0], w[1]
        ls = self.lengthscale_array
        ls = np.broadcast_to(ls, (d,)) if ls.size == 1 else ls

        def scaled_square(k: int, into: np.ndarray) -> np.ndarray:
            np.subtract(XT[k], x[k], out=into)
            np.divide(into, ls[k], out=into)
            return np.multiply(into, into, out=into)

        if d <= 2:
            scaled_square(0, sq)
            for k in range(1, d):
                np.add(sq, scaled_square(k, t), out=sq)
        elif d <= 7:  # einsum's two interleaved accumulators (even, odd coordinates), then their sum
            scaled_square(0, sq)
            scaled_square(1, u)
            for k in range(2, d):
                acc = sq if k % 2 == 0 else u
                np.add(acc, scaled_square(k, t), out=acc)
            np.add(sq, u, out=sq)
        else:
            diff = (np.ascontiguousarray(XT.T) - x[None, :]) / self.lengthscale_array  # as (n, d), C order
            sq[:] = np.einsum("ij,ij->i", diff, diff)
        if self.kind != "matern52":
            np.multiply(sq, -0.5, out=sq)
            return np.exp(sq, out=sq)
        s5 = math.sqrt(5.0)
        np.sqrt(sq, out=u)
        np.multiply(u, s5, out=u)  # √5 r
        np.negative(u, out=t)
        np.exp(t, out=t)  # exp(-√5 r)
        np.add(u, 1.0, out=u)  # 1 + √5 r
        np.multiply(sq, 5.0 / 3.0, out=sq)
        np.add(u, sq, out=sq)  # (1 + √5 r) + 5r²/3
        return np.multiply(sq, t, out=sq)

    def diag(self, X: Any) -> np.ndarray:
        """``k2(x, x) = 1`` for every row of ``X``."""
        return np.ones(_as_points(X, "X", self.n_dims).shape[0])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, InputKernel) and self.kind == other.kind
                and self.lengthscale == other.lengthscale)

    def __hash__(self) -> int:
        return hash((self.kind, self.lengthscale))

    def __repr__(self) -> str:
        return f"InputKernel(lengthscale={self.lengthscale!r}, kind={self.kind!r})"

    def __getstate__(self) -> dict[str, Any]:  # rebuild the torch module on unpickling
        return {"kind": self.kind, "lengthscale": self.lengthscale}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["lengthscale"], kind=state["kind"])  # type: ignore[misc]


class TaskKernel:
    """k1: declared correlations between validation sets (tasks).

    Parameters
    ----------
    task_correlation : float
        k1(V, V') between the private validation set V and any neighbour V'
        (one record swapped), in ``[0, 1)``. It enters Kusner et al.'s c through
        ``1 - task_correlation``; the paper's §6 found 0.95 the most likely of
        the values it tried. It must be declared (or estimated on public data),
        never estimated on V.
    correlations : array-like of shape (P + 1, P + 1), optional
        Correlations between the private task 0 and public tasks 1..P: a
        symmetric positive semi-definite matrix with unit diagonal and entries
        in ``[-1, 1]``. Default ``[[1.0]]`` (no public task).

    Raises
    ------
    InvalidParameterError
        If a matrix is not symmetric, has a diagonal other than 1, an entry
        outside ``[-1, 1]`` or is not PSD; or if the joint matrix over
        (V, V', public tasks) is not PSD (see Notes).

    Notes
    -----
    A neighbour V' is as related to each public task as V is, so the joint
    correlation matrix over (V, V', tasks 1..P), with V' given V's row of
    ``correlations``, must itself be PSD. A public task can therefore not be
    declared much closer to V than V' is (e.g. correlations 0.99 with a public
    task force ``task_correlation >= 2 * 0.99**2 - 1 = 0.9602``). This
    consistency check is ours, not the paper's.
    """

    def __init__(self, task_correlation: float, correlations: Any = None) -> None:
        self.task_correlation = check_real(
            task_correlation, "task_correlation", low=0.0, high=1.0, closed="left",
            owner="TaskKernel",
        )
        if correlations is None:
            B = np.ones((1, 1))
        else:
            try:
                B = np.array(correlations, dtype=np.float64)
            except (TypeError, ValueError):
                raise InvalidParameterError(
                    "The 'correlations' parameter of TaskKernel must be a square matrix of "
                    f"floats. Got {correlations!r} instead."
                ) from None
        if B.ndim != 2 or B.shape[0] != B.shape[1] or B.shape[0] == 0:
            raise InvalidParameterError(
                "The 'correlations' parameter of TaskKernel must be a non-empty square matrix. "
                f"Got shape {B.shape} instead."
            )
        if not np.all(np.isfinite(B)):
            raise InvalidParameterError(
                "The 'correlations' parameter of TaskKernel contains NaN or infinite values."
            )
        if not np.array_equal(B, B.T):
            raise InvalidParameterError(
                "The 'correlations' parameter of TaskKernel must be symmetric."
            )
        if not np.all(np.diag(B) == 1.0):
            raise InvalidParameterError(
                "The 'correlations' parameter of TaskKernel must have a unit diagonal. "
                f"Got diagonal {np.diag(B).tolist()!r}."
            )
        if np.any(np.abs(B) > 1.0):
            raise InvalidParameterError(
                "The 'correlations' parameter of TaskKernel must have entries in [-1, 1]."
            )
        min_eig = float(np.linalg.eigvalsh(B).min())
        if min_eig < -_PSD_TOL:
            raise InvalidParameterError(
                "The 'correlations' parameter of TaskKernel must be positive semi-definite. "
                f"Its smallest eigenvalue is {min_eig:.3g}."
            )
        joint = self.joint_matrix(B, self.task_correlation)
        min_eig = float(np.linalg.eigvalsh(joint).min())
        if min_eig < -_PSD_TOL:
            raise InvalidParameterError(
                "The 'task_correlation' and 'correlations' parameters of TaskKernel are "
                "inconsistent: the correlation matrix over (V, V', public tasks), with the "
                "neighbour V' as correlated with each public task as V, is not positive "
                f"semi-definite (smallest eigenvalue {min_eig:.3g}). Increase task_correlation "
                "or decrease the correlations between the private and public tasks."
            )
        B.setflags(write=False)
        self.correlations = B

    @staticmethod
    def joint_matrix(correlations: np.ndarray, task_correlation: float) -> np.ndarray:
        """Correlations over (V, V', tasks 1..P): V' copies V's row, k1(V, V') as declared."""
        B = np.asarray(correlations, dtype=np.float64)
        p = B.shape[0]
        J = np.empty((p + 1, p + 1))
        order = [0, 0, *range(1, p)]
        J[:, :] = B[np.ix_(order, order)]
        J[0, 1] = J[1, 0] = task_correlation
        return J

    @property
    def n_tasks(self) -> int:
        """Number of tasks 1 + P (private task 0 and P public tasks)."""
        return int(self.correlations.shape[0])

    def __call__(self, tasks1: Any, tasks2: Any) -> np.ndarray:
        """The matrix ``k1(tasks1[i], tasks2[j])`` for integer task indices."""
        return self.correlations[np.ix_(self.check_tasks(tasks1), self.check_tasks(tasks2))]

    def check_tasks(self, tasks: Any) -> np.ndarray:
        """Validate task indices (ints in ``[0, n_tasks)``) and return them as int64."""
        t = np.atleast_1d(np.asarray(tasks))
        if t.dtype.kind not in "iu" or t.ndim != 1:
            raise InvalidParameterError(
                f"Task indices must be ints in [0, {self.n_tasks - 1}]. Got {tasks!r} instead."
            )
        if t.size and (t.min() < 0 or t.max() >= self.n_tasks):
            raise InvalidParameterError(
                f"Task indices must be ints in [0, {self.n_tasks - 1}]. Got {tasks!r} instead."
            )
        return t.astype(np.int64)

    def __repr__(self) -> str:
        return (f"TaskKernel(task_correlation={self.task_correlation!r}, "
                f"correlations={self.correlations.tolist()!r})")


class MultiTaskKernel:
    """The product kernel k((V, λ), (V', λ')) = k1(V, V') k2(λ, λ') of Assumption 1.

    Parameters
    ----------
    input_kernel : InputKernel
        k2 over the encoded hyperparameters.
    task_kernel : TaskKernel
        k1 over tasks (private task 0, public tasks 1..P) and the declared
        ``task_correlation`` k1(V, V').
    """

    def __init__(self, input_kernel: InputKernel, task_kernel: TaskKernel) -> None:
        if not isinstance(input_kernel, InputKernel):
            raise InvalidParameterError(
                "The 'input_kernel' parameter of MultiTaskKernel must be an InputKernel. "
                f"Got {input_kernel!r} instead."
            )
        if not isinstance(task_kernel, TaskKernel):
            raise InvalidParameterError(
                "The 'task_kernel' parameter of MultiTaskKernel must be a TaskKernel. "
                f"Got {task_kernel!r} instead."
            )
        self.input_kernel = input_kernel
        self.task_kernel = task_kernel

    @property
    def task_correlation(self) -> float:
        """The declared k1(V, V') (used for Kusner et al.'s c)."""
        return self.task_kernel.task_correlation

    @property
    def n_tasks(self) -> int:
        """Number of tasks (private task 0 plus public tasks)."""
        return self.task_kernel.n_tasks

    def __call__(self, tasks1: Any, X1: Any, tasks2: Any, X2: Any) -> np.ndarray:
        """Dense covariance ``k1(t1[i], t2[j]) k2(X1[i], X2[j])``."""
        B = self.task_kernel(tasks1, tasks2)
        K = self.input_kernel(X1, X2)
        if B.shape != K.shape:
            raise InvalidParameterError(
                "tasks1/X1 and tasks2/X2 must have matching lengths. Got task shape "
                f"{B.shape} and point shape {K.shape}."
            )
        return B * K

    def __repr__(self) -> str:
        return f"MultiTaskKernel({self.input_kernel!r}, {self.task_kernel!r})"
