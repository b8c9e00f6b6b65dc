r"""The DP-SGD loop behind :class:`~privtune.neural_network.DPSGDClassifier` (internal; imports torch and Opacus).

What comes from Opacus and what from privtune:

* **Opacus** computes the per-example gradients (:class:`opacus.GradSampleModule`,
  ``loss_reduction="sum"``) and vets the architecture before anything is spent
  (:class:`opacus.validators.ModuleValidator`: a BatchNorm, which mixes the rows
  of a batch, is refused).
* **privtune** draws the Poisson batches and the noise from its own random
  source (``os.urandom`` unless seeded), clips and sums in float64 with a proven
  rounding bound (:mod:`privtune.optim._sums`: the clip's own float error,
  :func:`~privtune.optim._sums.clip_norm_bound`, and the sum's,
  :func:`~privtune.optim._sums.rounding_factor`, are paid for by raising the
  sensitivity the noise is built with), and adds **exact discrete Gaussian**
  noise on a grid (:class:`privtune.mechanisms.Gaussian`), the sampler of the
  seed-003 trainers. Opacus's own noise (a floating-point Gaussian from
  torch's generator, open to Mironov's 2012 attack on textbook samplers; its
  ``secure_mode`` needs ``torchcsprng``, which does not exist for current torch)
  and its data loader are not used.

One step: each row kept independently with probability ``q`` (exactly
``K / 2**53``, an integer drawn below ``2**53`` by the source compared with
``K``); the kept rows' per-example gradients, computed in chunks of
:data:`CHUNK` rows padded to that fixed shape (so the kernels a row passes
through do not depend on how many rows were sampled), each clipped to L2 norm
``C`` (non-finite rows, rows whose label is outside the declared classes and
rows whose gradient norm exceeds ``2**960 C`` count as zero); their float64
sum released with discrete Gaussian noise of multiplier ``sigma`` at
sensitivity ``psi C`` (add/remove: one row moves the sum by at most ``C``;
``psi - 1`` is about ``n 2**-52``); the release divided by the public
``batch_size`` and handed to a torch optimizer (SGD or Adam: post-processing).

Failure paths. A chunk whose forward or backward raises (the user's module may
fail on some finite input, e.g. an embedding index out of range) is computed
again row by row, each row alone in a zero-padded chunk of the same size at its
own position and with torch's generator at the state the chunk's pass started
from (so, under the documented assumption, each row's gradient equals the
batched one, dropout masks included); a row that still raises contributes a
zero gradient. The exception and its message are never kept. Before the charge,
:func:`check_module` runs the run's per-example machinery on public synthetic
rows: a trainable parameter left without a per-example gradient is refused, and
a module in which changing one row of a chunk changes another row's output or
per-example gradient is refused (a probe, not a proof).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.mechanisms import Gaussian
from privtune.optim._sums import check_sum_terms, clip_norm_bound, rounding_factor

__all__ = ["CHUNK", "build_module", "check_module", "clipped_sum", "forward", "loss_function", "step_mechanism",
           "train"]

#: Rows per forward/backward pass (batches are cut into chunks of this many rows, the last padded with zeros).
CHUNK = 128
#: A row whose computed gradient norm exceeds this times the clip is zeroed (the clip factor stays a normal float).
_HUGE_GRADIENT = 2.0**960


def _torch():
    import torch

    return torch


def default_module(n_features: int, n_outputs: int) -> Any:
    """The default network: one hidden layer of 32 ReLU units (public architecture)."""
    nn = _torch().nn
    return nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, n_outputs))


def build_module(spec: Any, n_features: int, n_outputs: int, seed: int, owner: str) -> Any:
    """A fresh ``torch.nn.Module`` from ``spec`` (None, a Module to copy, or a factory), torch's RNG forked.

    The user's module is never modified (a deep copy is trained); a factory is
    called with ``(n_features, n_outputs)`` under torch's RNG seeded with
    ``seed`` (so its initial weights are reproducible when the fit is seeded),
    inside :func:`torch.random.fork_rng` (the global state is left untouched).
    """
    torch = _torch()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if spec is None:
            module = default_module(n_features, n_outputs)
        elif isinstance(spec, torch.nn.Module):
            module = copy.deepcopy(spec)
        else:
            module = spec(n_features, n_outputs)
    if not isinstance(module, torch.nn.Module):
        raise InvalidParameterError(
            f"The 'module' parameter of {owner} must be None, a torch.nn.Module or a callable "
            f"(n_features, n_outputs) -> torch.nn.Module; the callable returned {type(module).__name__}. "
            "Nothing was spent.")
    return module


def loss_function(task: str) -> Callable[..., Any]:
    """The summed loss of the run: cross-entropy over class indices, or squared error on a (rows, 1) target."""
    torch = _torch()
    if task == "classification":
        def loss_fn(out: Any, target: Any) -> Any:
            return torch.nn.functional.cross_entropy(out, target, reduction="sum")
    else:
        def loss_fn(out: Any, target: Any) -> Any:
            return torch.nn.functional.mse_loss(out, target, reduction="sum")
    return loss_fn


def check_module(module: Any, n_features: int, n_outputs: int, owner: str, *,
                 task: str = "classification") -> int:
    """Vet the architecture from public information; returns its number of trainable parameters.

    Opacus's :class:`~opacus.validators.ModuleValidator` must accept it (no
    BatchNorm: it mixes a batch's rows), it must have trainable parameters
    of a floating dtype, and a zero row of ``n_features`` must map to
    ``n_outputs`` outputs. Then the run's own per-example machinery
    (:class:`opacus.GradSampleModule`, the ``task``'s summed loss, chunks of
    :data:`CHUNK` rows, train mode) is run on a deep copy, on public synthetic
    rows (:func:`_probe_rows`: uniform in ``[0, 1)`` from a fixed seed, never
    the data):

    * every trainable parameter must receive a per-example gradient (a
      parameter the forward never uses would fail the run after its charge);
    * changing one row of the chunk (the first, then the last; features and
      target) must leave every other row's output, in train and in eval mode,
      and per-example gradient bit-identical (torch's generator reseeded
      identically for each pass, so dropout draws the same masks). The
      guarantee assumes each row's gradient depends on that row, its position
      and the weights only; a module that mixes the rows of its batch (batch
      statistics, ``x - x.mean(0)``) breaks the sensitivity the noise is built
      for. This is a **probe, not a proof**: a module could mix rows only on
      some inputs, or only with other weights.

    The module itself is not modified and no global random state is touched.
    Nothing is spent by a refusal.
    """
    torch = _torch()
    from opacus.validators import ModuleValidator

    errors = ModuleValidator.validate(module, strict=False)
    if errors:
        raise InvalidParameterError(
            f"The 'module' of {owner} cannot be trained with DP-SGD: {errors[0]} "
            "(opacus.validators.ModuleValidator.fix replaces such layers). Nothing was spent.")
    params = [p for p in module.parameters() if p.requires_grad]
    if not params or any(not p.is_floating_point() for p in params):
        raise InvalidParameterError(
            f"The 'module' of {owner} must have trainable floating-point parameters. Nothing was spent.")
    with torch.random.fork_rng(devices=[]), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = module(torch.zeros((1, n_features), dtype=params[0].dtype))
        except Exception as exc:  # noqa: BLE001 - a public architecture error, on a zero row
            raise InvalidParameterError(
                f"The 'module' of {owner} fails on a zero row of {n_features} features "
                f"({type(exc).__name__}); it must map (batch, {n_features}) to (batch, {n_outputs}). "
                "Nothing was spent.") from None
    if tuple(out.shape) != (1, n_outputs):
        raise InvalidParameterError(
            f"The 'module' of {owner} maps one row of {n_features} features to an output of shape "
            f"{tuple(out.shape)[1:]}; it must give {n_outputs} output(s) ({'one per class' if n_outputs > 1 else 'one'}"
            "). Nothing was spent.")
    _probe_per_example(module, n_features, n_outputs, owner, task)
    return int(sum(p.numel() for p in params))


#: The public seed of :func:`check_module`'s synthetic rows and of torch's generator during its passes.
_PROBE_SEED = 20261129


def _probe_rows(n_features: int, n_outputs: int, task: str, dtype: Any) -> tuple[Any, ...]:
    """Public synthetic chunks: ``A`` (uniform in ``[0, 1)``), ``A`` with its first row changed, with its last."""
    torch = _torch()
    rng = np.random.default_rng(_PROBE_SEED)
    base = rng.random((CHUNK + 2, n_features))
    if task == "classification":
        labels = rng.integers(0, n_outputs, size=CHUNK + 2)
        labels[CHUNK:] = (labels[[0, CHUNK - 1]] + 1) % n_outputs  # the changed rows' labels differ too
        target = torch.as_tensor(labels, dtype=torch.long)
    else:
        target = torch.as_tensor(rng.normal(size=(CHUNK + 2, 1)), dtype=dtype)
    X = torch.as_tensor(base, dtype=dtype)
    chunks = []
    for where, spare in ((None, None), (0, CHUNK), (CHUNK - 1, CHUNK + 1)):
        Xc, yc = X[:CHUNK].clone(), target[:CHUNK].clone()
        if where is not None:
            Xc[where], yc[where] = X[spare], target[spare]
        chunks.append((where, Xc, yc))
    return tuple(chunks)


def _probe_per_example(module: Any, n_features: int, n_outputs: int, owner: str, task: str) -> None:
    """:func:`check_module`'s per-example probes (on a deep copy; torch's global state forked)."""
    torch = _torch()
    from opacus import GradSampleModule

    copy_ = copy.deepcopy(module)
    names = {id(p): name for name, p in copy_.named_parameters()}
    params = [p for p in copy_.parameters() if p.requires_grad]
    loss_fn = loss_function(task)
    fix = "Nothing was spent."
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            gsm = GradSampleModule(copy_, batch_first=True, loss_reduction="sum")
        except Exception as exc:  # noqa: BLE001 - public architecture
            raise InvalidParameterError(
                f"Opacus cannot compute per-example gradients for the 'module' of {owner} "
                f"({type(exc).__name__} from opacus.GradSampleModule). {fix}") from None
        chunks = _probe_rows(n_features, n_outputs, task, params[0].dtype)
        first: tuple[Any, Any, list[Any]] | None = None
        for where, Xc, yc in chunks:
            try:
                gsm.train()
                torch.manual_seed(_PROBE_SEED)
                out, grads = _pass(gsm, params, loss_fn, Xc, yc)
                gsm.eval()
                torch.manual_seed(_PROBE_SEED)
                with torch.no_grad():
                    out_eval = gsm(Xc).detach()
            except Exception as exc:  # noqa: BLE001 - public synthetic rows
                raise InvalidParameterError(
                    f"The 'module' of {owner} fails on public synthetic rows (uniform in [0, 1), "
                    f"{CHUNK} per chunk, in train mode through opacus.GradSampleModule) with "
                    f"{type(exc).__name__}; it must not raise on finite inputs. {fix}") from None
            if first is None:
                missing = [names[id(p)] for p, g in zip(params, grads, strict=True) if g is None]
                if missing:
                    raise InvalidParameterError(
                        f"The 'module' of {owner} has trainable parameter(s) {missing} that receive no "
                        "per-example gradient (its forward does not use them): use them in forward, remove "
                        "them, or set requires_grad=False on them. Nothing was spent.")
                first = (out, out_eval, grads)
                continue
            out0, eval0, grads0 = first
            if not (_same_bits(out, out0, where) and _same_bits(out_eval, eval0, where)
                    and all(_same_bits(g, g0, where) for g, g0 in zip(grads, grads0, strict=True))):
                raise InvalidParameterError(
                    f"The 'module' of {owner} mixes the rows of a batch: on public synthetic rows, changing row "
                    f"{where} of a chunk of {CHUNK} changed another row's output or per-example gradient (batch "
                    "statistics such as x - x.mean(0), or an operation across rows). DP-SGD's noise assumes each "
                    "row's gradient depends on that row, its position and the weights only; compute every row "
                    "from its own entries. Nothing was spent.")


def step_mechanism(*, noise_multiplier: float, max_grad_norm: float, n_samples: int, n_params: int,
                   source: Any, owner: str) -> Gaussian:
    """The noise of one step: a lattice Gaussian at sensitivity ``psi C`` (add/remove) and multiplier ``sigma``.

    ``psi`` covers the float64 clipping and the sum of at most ``n_samples``
    terms (:func:`privtune.optim._sums.rounding_factor`). Its grid is built
    here, so a configuration no exact grid can hold is refused before the charge.
    """
    check_sum_terms(n_samples, owner)
    psi = rounding_factor(terms=n_samples, bound=max_grad_norm, divisor=1.0, factor=1.0, coordinates=n_params,
                          norm=2, term_bound=clip_norm_bound(max_grad_norm, n_params))
    mech = Gaussian.from_noise_multiplier(noise_multiplier, sensitivity=max_grad_norm * psi, random_state=source)
    try:
        mech.grid_spacing(n_params)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{exc} Nothing was spent.") from None
    return mech


def _pass(gsm: Any, params: list[Any], loss_fn: Callable[..., Any], Xc: Any, yc: Any) -> tuple[Any, list[Any]]:
    """One forward/backward of a chunk: its outputs and each parameter's per-example gradients (torch, detached).

    A parameter without a per-example gradient gives None.
    """
    for p in params:
        p.grad_sample = None
        p.grad = None
    out = gsm(Xc)
    loss_fn(out, yc).backward()
    grads = [None if p.grad_sample is None else p.grad_sample.detach() for p in params]
    for p in params:
        p.grad_sample = None
        p.grad = None
    return out.detach(), grads


def _same_bits(a: Any, b: Any, where: int) -> bool:
    """Whether the rows of ``a`` and ``b`` other than row ``where`` (the first or the last) are bit-identical."""
    if a is None or b is None:
        return a is b
    rows = slice(1, None) if where == 0 else slice(None, -1)
    a, b = a[rows].contiguous(), b[rows].contiguous()
    return a.shape == b.shape and a.dtype == b.dtype and _torch().equal(a.view(-1).view(_torch().uint8),
                                                                        b.view(-1).view(_torch().uint8))


def _per_example_gradients(gsm: Any, params: list[Any], loss_fn: Callable[..., Any], Xc: Any, yc: Any,
                           rows: int | slice) -> np.ndarray:
    """Per-example gradients of the rows ``rows`` (the first ``rows`` if an int) of one padded chunk.

    Float64, of shape (selected rows, n_params). A parameter without a
    per-example gradient in this pass (one its forward did not use here)
    contributes zeros (:func:`check_module` refuses a parameter never used).
    """
    for p in params:
        p.grad_sample = None
        p.grad = None
    loss = loss_fn(gsm(Xc), yc)
    loss.backward()
    sel = slice(0, rows) if isinstance(rows, int) else rows
    count = len(range(*sel.indices(Xc.shape[0])))
    float64 = _torch().float64
    parts = [np.zeros((count, p.numel())) if p.grad_sample is None
             else p.grad_sample[sel].reshape(count, -1).detach().to(dtype=float64).numpy() for p in params]
    return np.concatenate(parts, axis=1)


def _reset_per_example_state(gsm: Any, params: list[Any]) -> None:
    """Clear what a forward/backward that raised half-way may leave in Opacus's hooks' state."""
    for m in gsm.modules():
        if hasattr(m, "activations"):
            m.activations = []
        if hasattr(m, "max_batch_len"):
            del m.max_batch_len
    for p in params:
        p._forward_counter = 0
        if hasattr(p, "_current_grad_sample"):
            del p._current_grad_sample
        p.grad_sample = None
        p.grad = None


def _chunk_gradients(gsm: Any, params: list[Any], loss_fn: Callable[..., Any], X: Any, y: Any,
                     rows: np.ndarray) -> np.ndarray:
    """The per-example gradients of ``rows`` (at most :data:`CHUNK`), computed in one zero-padded chunk.

    If the chunk's pass raises, each row is computed again alone in a zero
    chunk of the same size, at its own position, with torch's generator reset
    to the state the chunk's pass started from (the same dropout masks); a row
    that raises there gets a zero gradient. Afterwards the generator is left
    where a successful chunk pass leaves it (taken from the first row that did
    not raise, else from a pass on a zero chunk). The exception is dropped
    (its message may quote a value) and nothing records which rows failed.
    """
    torch = _torch()
    r = rows.size
    Xc = torch.zeros((CHUNK,) + tuple(X.shape[1:]), dtype=X.dtype)
    Xc[:r] = X[rows]
    yc = torch.zeros((CHUNK,) + tuple(y.shape[1:]), dtype=y.dtype)
    yc[:r] = y[rows]
    state = torch.get_rng_state()
    try:
        return _per_example_gradients(gsm, params, loss_fn, Xc, yc, r)
    except Exception:  # noqa: BLE001 - the module failed on some row: recomputed below, message never kept
        pass
    _reset_per_example_state(gsm, params)
    out = np.zeros((r, sum(p.numel() for p in params)))
    after = None
    for j in range(r):
        Xj = torch.zeros_like(Xc)
        Xj[j] = Xc[j]
        yj = torch.zeros_like(yc)
        yj[j] = yc[j]
        torch.set_rng_state(state)
        try:
            out[j] = _per_example_gradients(gsm, params, loss_fn, Xj, yj, slice(j, j + 1))[0]
        except Exception:  # noqa: BLE001 - this row makes the module raise: a zero gradient, nothing kept
            _reset_per_example_state(gsm, params)
            continue
        if after is None:
            after = torch.get_rng_state()
    if after is None:
        torch.set_rng_state(state)
        try:
            _per_example_gradients(gsm, params, loss_fn, torch.zeros_like(Xc), torch.zeros_like(yc), 0)
            after = torch.get_rng_state()
        except Exception:  # noqa: BLE001 - not expected (check_module ran such a pass before the charge)
            _reset_per_example_state(gsm, params)
    if after is not None:
        torch.set_rng_state(after)
    return out


def clipped_sum(gsm: Any, params: list[Any], loss_fn: Callable[..., Any], X: Any, y: Any, keep: np.ndarray,
                idx: np.ndarray, clip: float, d: int) -> np.ndarray:
    """``sum_idx clip(grad l_i, C)`` in float64; rows with ``keep`` False, non-finite or huge count as zero.

    Chunks of :data:`CHUNK` rows (the last padded with zero rows, whose gradients
    are dropped; :func:`_chunk_gradients`, which recomputes a chunk row by row
    when the module raises, a raising row counting as zero); each chunk's
    clipped gradients are summed by one BLAS product
    and the chunks' sums added with :func:`math.fsum`, coordinate by coordinate,
    so each term passes through at most ``CHUNK + 2`` roundings (within the
    bound :func:`~privtune.optim._sums.rounding_factor` pays for with
    ``terms = n``). No floating-point warning escapes (one could depend on a row).
    """
    partial = []
    for start in range(0, idx.size, CHUNK):
        rows = idx[start:start + CHUNK]
        with np.errstate(all="ignore"):
            G = _chunk_gradients(gsm, params, loss_fn, X, y, rows)
            bad = ~np.all(np.isfinite(G), axis=1) | ~keep[rows]
            G = np.where(bad[:, None], 0.0, G)
            norms = np.sqrt(np.einsum("ij,ij->i", G, G))
            factor = np.minimum(1.0, clip / np.where(norms > 0.0, norms, 1.0))
            factor = np.where(norms > clip * _HUGE_GRADIENT, 0.0, factor)
            partial.append(factor @ G)
    if not partial:
        return np.zeros(d)
    if len(partial) == 1:
        return partial[0]
    import math

    stack = np.stack(partial)
    return np.array([math.fsum(col) for col in stack.T.tolist()])


def poisson_batch(source: Any, n: int, threshold: int) -> np.ndarray:
    """Indices of a Poisson batch: row ``i`` kept when a uniform integer below ``2**53`` is below ``threshold``."""
    u = source.integers_below(np.full(n, 2**53, dtype=np.int64))
    return np.flatnonzero(u < threshold)


def train(module: Any, X: np.ndarray, y: np.ndarray, keep: np.ndarray, *, task: str, steps: int, threshold: int,
          batch_size: int, lr: float, optimizer: str, mech: Gaussian, clip: float, source: Any,
          torch_seed: int) -> Any:
    """Run the DP-SGD loop on ``module`` in place (module docstring); returns the trained module.

    Called after the charge. Torch's global RNG is forked (dropout and other
    layer randomness are seeded from ``torch_seed``) and every warning is
    silenced (a warning could depend on a row).
    """
    torch = _torch()
    from opacus import GradSampleModule

    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(torch_seed)
        params = [p for p in module.parameters() if p.requires_grad]
        dtype = params[0].dtype
        Xt = torch.as_tensor(X, dtype=dtype)
        if task == "classification":
            yt = torch.as_tensor(y, dtype=torch.long)
        else:
            yt = torch.as_tensor(y, dtype=dtype).reshape(-1, 1)
        loss_fn = loss_function(task)

        gsm = GradSampleModule(module, batch_first=True, loss_reduction="sum")
        gsm.train()
        opt = (torch.optim.SGD(params, lr=lr) if optimizer == "sgd" else torch.optim.Adam(params, lr=lr))
        d = int(sum(p.numel() for p in params))
        n = X.shape[0]
        for _ in range(steps):
            idx = poisson_batch(source, n, threshold)
            total = clipped_sum(gsm, params, loss_fn, Xt, yt, keep, idx, clip, d)
            released = np.asarray(mech.randomise(total), dtype=np.float64).reshape(-1) / batch_size
            offset = 0
            for p in params:
                k = p.numel()
                p.grad = torch.as_tensor(released[offset:offset + k], dtype=dtype).view_as(p).clone()
                p.grad_sample = None
                offset += k
            opt.step()
        for p in params:
            p.grad = None
            p.grad_sample = None
        module = gsm.to_standard_module()  # Opacus's hooks removed: the module pickles and predicts plainly
    module.eval()
    return module


def forward(module: Any, X: np.ndarray) -> np.ndarray:
    """The module's outputs on ``X`` (no gradient, float64; post-processing).

    Rows pass in chunks of :data:`CHUNK`, the last padded with zero rows, as in
    training: a row's output then does not depend on how many rows are
    predicted with it (float32 kernels may round differently for other batch
    shapes).
    """
    torch = _torch()
    dtype = next(module.parameters()).dtype
    out = []
    with torch.random.fork_rng(devices=[]), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, X.shape[0], CHUNK):
            rows = X[start:start + CHUNK]
            xb = torch.zeros((CHUNK,) + tuple(X.shape[1:]), dtype=dtype)
            xb[:rows.shape[0]] = torch.as_tensor(rows, dtype=dtype)
            out.append(module(xb)[:rows.shape[0]].detach().to(torch.float64).numpy())
    if not out:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            width = module(torch.zeros((1,) + tuple(X.shape[1:]), dtype=dtype)).shape[1]
        return np.zeros((0, width))
    return np.concatenate(out, axis=0)
