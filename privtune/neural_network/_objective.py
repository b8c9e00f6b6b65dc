r"""A small torch MLP as a per-example objective for the DP line-search trainer (internal).

:class:`TorchObjective` exposes a multilayer perceptron with a cross-entropy
loss through the ``PerExampleObjective`` protocol of
:mod:`privtune.optim.line_search`: the model's parameters are one flat
``float64`` numpy vector ``w``, and the objective returns, for a set of row
indices, every example's *data* loss (no regulariser, not clipped) and every
example's gradient of it (no regulariser, not clipped). Clipping, noise,
sampling and accounting are the trainer's job; this module never draws
randomness and never touches a global random generator.

Model (public architecture)
---------------------------
``h_0 = x``, ``h_l = act(W_l h_{l-1} + b_l)`` for the hidden layers, and
logits ``W_L h_{L-1} + b_L``. Binary problems (two classes) have **one** logit
``f`` and the loss ``softplus(f) - t f`` with ``t`` in {0, 1} (the binary
cross-entropy of ``sigmoid(f)``); ``K > 2`` classes have ``K`` logits and the
loss ``logsumexp(f) - f_y`` (the cross-entropy of ``softmax(f)``). Both are
``>= 0`` mathematically and in floating point (``logsumexp`` is computed as
``max + log(sum)`` with ``sum >= 1``); a ``clamp_min(0)`` guards it anyway,
because the line search's sensitivity argument needs losses in ``[0, C_obj]``.

Flat layout: for each layer in order, ``W_l`` (shape ``(fan_out, fan_in)``,
row-major) then ``b_l``. The forward pass is written functionally on views
of the flat parameter tensor (no ``torch.nn.Module`` is built: constructing one
runs its default initialisation, which draws from torch's *global* generator,
which privtune never touches). The per-example gradients are
``torch.func.vmap(torch.func.grad(loss))`` over the rows with the flat
parameter vector as the differentiated argument.

Numerics: everything runs in ``float64`` on the CPU. The nets are small (the
estimator's default is one hidden layer of 32 units), so the factor ~2 in
speed over ``float32`` is cheap, and in exchange the losses and gradients the
trainer compares (the Armijo slack is a difference of two losses) are
accurate to ~1e-15 and bit-for-bit deterministic given ``w`` on one thread.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = ["ACTIVATIONS", "TorchObjective", "layer_shapes", "n_parameters", "init_parameters", "torch_threads"]

ACTIVATIONS = ("relu", "tanh")
#: Largest number of float64 entries of per-example gradients built by one vmap call (32 MiB).
_GRAD_CHUNK_ENTRIES = 2**22


_THREADS_LOCK = threading.Lock()
_THREADS_STATE: dict[str, int] = {"depth": 0, "saved": 0}


@contextlib.contextmanager
def torch_threads(n: int = 1) -> Iterator[Any]:
    """Run the block with ``torch.set_num_threads(n)``; the caller's setting is restored afterwards.

    torch's thread count is process-wide, and fits may run concurrently in
    threads (a search with sensitive training data maps its fits over
    threads), so the blocks are reference-counted: the first block to enter
    saves the setting, the last one to leave restores it.
    """
    import torch

    with _THREADS_LOCK:
        if _THREADS_STATE["depth"] == 0:
            _THREADS_STATE["saved"] = torch.get_num_threads()
            if _THREADS_STATE["saved"] != n:
                torch.set_num_threads(n)
        _THREADS_STATE["depth"] += 1
    try:
        yield torch
    finally:
        with _THREADS_LOCK:
            _THREADS_STATE["depth"] -= 1
            if _THREADS_STATE["depth"] == 0 and torch.get_num_threads() != _THREADS_STATE["saved"]:
                torch.set_num_threads(_THREADS_STATE["saved"])


def layer_shapes(n_features: int, hidden_layer_sizes: Sequence[int], n_outputs: int) -> list[tuple[int, int]]:
    """``(fan_out, fan_in)`` of every affine layer, input to output."""
    sizes = [int(n_features), *(int(h) for h in hidden_layer_sizes), int(n_outputs)]
    return [(sizes[i + 1], sizes[i]) for i in range(len(sizes) - 1)]


def n_parameters(n_features: int, hidden_layer_sizes: Sequence[int], n_outputs: int) -> int:
    """Length of the flat parameter vector (weights and biases of every layer)."""
    return sum(o * i + o for o, i in layer_shapes(n_features, hidden_layer_sizes, n_outputs))


def init_parameters(n_features: int, hidden_layer_sizes: Sequence[int], n_outputs: int, activation: str,
                    rng: np.random.Generator) -> np.ndarray:
    """A data-independent initial flat parameter vector.

    Weights are uniform on ``[-b, b]`` with Glorot's ``b = sqrt(6 / (fan_in +
    fan_out))`` (times ``sqrt(2)`` for ReLU layers, He's gain); biases are 0.
    Only public quantities (the architecture) and ``rng`` are used.
    """
    parts: list[np.ndarray] = []
    shapes = layer_shapes(n_features, hidden_layer_sizes, n_outputs)
    for k, (fan_out, fan_in) in enumerate(shapes):
        gain = math.sqrt(2.0) if (activation == "relu" and k < len(shapes) - 1) else 1.0
        bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
        parts.append(rng.uniform(-bound, bound, size=fan_out * fan_in))
        parts.append(np.zeros(fan_out))
    return np.concatenate(parts).astype(np.float64)


class TorchObjective:
    """Per-example cross-entropy losses and gradients of a small MLP on fixed rows (internal).

    Implements the ``PerExampleObjective`` protocol of
    :mod:`privtune.optim.line_search`.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The (already clipped) rows. Sensitive: only the trainer reads them,
        through :meth:`per_example_gradients` and :meth:`per_example_losses`.
    y : ndarray of int of shape (n_samples,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
        Number of classes (public, declared). 2 gives one logit.
    hidden_layer_sizes : sequence of int
        Widths of the hidden layers (may be empty: a linear model).
    activation : {"relu", "tanh"}
    weights : ndarray of shape (n_samples,) of {0, 1} or None
        ``0`` marks a row that contributes nothing (a label outside the
        declared classes): its loss and its gradient are exactly 0, whatever
        its values. ``None``: every row counts.

    Attributes
    ----------
    n_samples, n_params, n_features, n_outputs : int
        Public sizes.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, *, n_classes: int, hidden_layer_sizes: Sequence[int],
                 activation: str = "relu", weights: np.ndarray | None = None) -> None:
        import torch

        if activation not in ACTIVATIONS:
            raise InvalidParameterError(
                f"The 'activation' parameter of TorchObjective must be one of {list(ACTIVATIONS)}. "
                f"Got {activation!r} instead.")
        X = np.array(X, dtype=np.float64, order="C", copy=True)  # own, writable copy (torch shares its memory)
        y = np.asarray(y)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise InvalidParameterError("TorchObjective needs X of shape (n, d) and y of shape (n,).")
        n_classes = int(n_classes)
        if n_classes < 2:
            raise InvalidParameterError(f"TorchObjective needs at least 2 classes; got {n_classes}.")
        self.n_samples = int(X.shape[0])
        self.n_features = int(X.shape[1])
        self.n_classes = n_classes
        self.n_outputs = 1 if n_classes == 2 else n_classes
        self.hidden_layer_sizes = tuple(int(h) for h in hidden_layer_sizes)
        self.activation = activation
        self.shapes = layer_shapes(self.n_features, self.hidden_layer_sizes, self.n_outputs)
        self.n_params = n_parameters(self.n_features, self.hidden_layer_sizes, self.n_outputs)
        self._X = torch.from_numpy(X)
        if self.n_outputs == 1:
            self._T = torch.from_numpy(np.asarray(y, dtype=np.float64).reshape(-1, 1))
        else:
            onehot = np.zeros((self.n_samples, n_classes))
            onehot[np.arange(self.n_samples), np.asarray(y, dtype=np.int64)] = 1.0
            self._T = torch.from_numpy(onehot)
        if weights is None:
            self._mask = torch.ones(self.n_samples, dtype=torch.float64)
        else:
            m = np.asarray(weights, dtype=np.float64)
            if m.shape != (self.n_samples,):
                raise InvalidParameterError("TorchObjective: 'weights' must have one entry per row.")
            self._mask = torch.from_numpy(np.ascontiguousarray(m))

    # -- the model, written functionally on the flat parameter vector ----------------------------------
    def _logits(self, flat: Any, x: Any) -> Any:
        """Logits of a batch ``x`` of shape (..., n_features) at the flat parameters ``flat``."""
        import torch

        h = x
        offset = 0
        last = len(self.shapes) - 1
        for k, (fan_out, fan_in) in enumerate(self.shapes):
            W = flat[offset:offset + fan_out * fan_in].view(fan_out, fan_in)
            offset += fan_out * fan_in
            b = flat[offset:offset + fan_out]
            offset += fan_out
            h = h @ W.T + b
            if k < last:
                h = torch.relu(h) if self.activation == "relu" else torch.tanh(h)
        return h

    def _loss_of_logits(self, f: Any, t: Any) -> Any:
        """Cross-entropy (>= 0) of logits ``f`` (..., n_outputs) against targets ``t`` (same shape)."""
        import torch

        if self.n_outputs == 1:
            out = (torch.nn.functional.softplus(f) - t * f).sum(-1)
        else:
            out = torch.logsumexp(f, dim=-1) - (t * f).sum(-1)
        return out.clamp_min(0.0)

    def _example_loss(self, flat: Any, x: Any, t: Any, m: Any) -> Any:
        return self._loss_of_logits(self._logits(flat, x), t) * m

    # -- helpers ------------------------------------------------------------------------------------------
    def _flat(self, w: Any) -> Any:
        import torch

        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_params,):
            raise InvalidParameterError(
                f"TorchObjective: the parameter vector must have shape ({self.n_params},); got {w.shape}.")
        return torch.from_numpy(w.copy())

    def _index(self, idx: Any) -> Any:
        import torch

        i = np.asarray(idx, dtype=np.int64).reshape(-1)
        if i.size and (i.min() < 0 or i.max() >= self.n_samples):
            raise InvalidParameterError("TorchObjective: row index out of range.")
        return torch.from_numpy(i)

    # -- the PerExampleObjective protocol -------------------------------------------------------------------
    def per_example_losses(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Every indexed example's data loss at ``w``: shape ``(len(idx),)``, values ``>= 0``.

        No regulariser and no clipping (the trainer clips at ``C_obj``).
        Rows marked with weight 0 have loss exactly 0.
        """
        with torch_threads(1) as torch, torch.no_grad():
            flat = self._flat(w)
            i = self._index(idx)
            if i.numel() == 0:
                return np.zeros(0)
            out = self._example_loss(flat, self._X[i], self._T[i], self._mask[i])
            return out.numpy().astype(np.float64, copy=True)

    def per_example_gradients(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Every indexed example's gradient of its data loss at ``w``: shape ``(len(idx), n_params)``.

        No regulariser and no clipping (the trainer clips at ``C_grad``).
        Computed with ``torch.func.vmap(torch.func.grad(...))`` in blocks of at
        most ``2**22`` entries; no autograd graph outlives the call. Rows marked
        with weight 0 have gradient exactly 0. At a ReLU kink the derivative
        used is torch's (0).
        """
        with torch_threads(1):
            from torch.func import grad, vmap

            flat = self._flat(w)
            i = self._index(idx)
            out = np.empty((int(i.numel()), self.n_params), dtype=np.float64)
            if i.numel() == 0:
                return out
            per_example = vmap(grad(self._example_loss), in_dims=(None, 0, 0, 0))
            block = max(1, _GRAD_CHUNK_ENTRIES // self.n_params)
            for start in range(0, int(i.numel()), block):
                j = i[start:start + block]
                g = per_example(flat, self._X[j], self._T[j], self._mask[j])
                out[start:start + int(j.numel())] = g.detach().numpy()
            return out

    # -- prediction (public parameters, any rows) -----------------------------------------------------------
    def logits(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Logits of arbitrary rows ``X`` at ``w``: shape ``(n, n_outputs)`` (post-processing)."""
        return mlp_logits(w, X, self.shapes, self.activation)


def mlp_logits(w: np.ndarray, X: np.ndarray, shapes: Sequence[tuple[int, int]], activation: str) -> np.ndarray:
    """Logits of the MLP with flat parameters ``w`` and layer ``shapes`` on rows ``X`` (numpy, float64).

    Pure numpy, so that prediction with a fitted estimator does not need to
    import torch.
    """
    h = np.asarray(X, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    offset = 0
    last = len(shapes) - 1
    for k, (fan_out, fan_in) in enumerate(shapes):
        W = w[offset:offset + fan_out * fan_in].reshape(fan_out, fan_in)
        offset += fan_out * fan_in
        b = w[offset:offset + fan_out]
        offset += fan_out
        h = h @ W.T + b
        if k < last:
            h = np.maximum(h, 0.0) if activation == "relu" else np.tanh(h)
    return h
