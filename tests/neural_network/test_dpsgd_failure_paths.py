"""DP-SGD failure paths (review findings F1-F3 of issue 40's code).

* F1: a chunk on which the user's module raises is recomputed row by row (each row alone in a zero chunk of the
  same size, at its own position, torch's generator at the chunk's starting state); a raising row contributes a
  zero gradient, every other row exactly its batched gradient.
* F2: a trainable parameter without a per-example gradient is refused by ``check_module`` before the charge.
* F3: ``check_module`` probes, on public synthetic rows, that changing one row of a chunk leaves every other row's
  output and per-example gradient bit-identical, and refuses a module that mixes rows before the charge.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError

opacus = pytest.importorskip("opacus")
torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from privtune.neural_network import DPSGDClassifier, DPSGDRegressor  # noqa: E402
from privtune.neural_network import _dpsgd_engine as engine  # noqa: E402

nn = torch.nn


class Coded(nn.Module):
    """Feature 0 is a category code looked up in a table of 4 (a code >= 4 makes the forward raise); dropout."""

    def __init__(self, n_features: int, n_outputs: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(4, 3)
        self.lin = nn.Linear(n_features, 5)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(8, n_outputs)

    def forward(self, x):
        return self.out(torch.cat([self.emb(x[:, 0].abs().long()), self.drop(torch.tanh(self.lin(x)))], 1))


def coded_factory(n_features: int, n_outputs: int) -> nn.Module:
    return Coded(n_features, n_outputs)


class Spare(nn.Module):
    def __init__(self, n_features: int, n_outputs: int) -> None:
        super().__init__()
        self.used = nn.Linear(n_features, n_outputs)
        self.spare = nn.Linear(n_features, n_outputs)

    def forward(self, x):
        return self.used(x)


def spare_factory(n_features: int, n_outputs: int) -> nn.Module:
    return Spare(n_features, n_outputs)


def frozen_spare_factory(n_features: int, n_outputs: int) -> nn.Module:
    net = Spare(n_features, n_outputs)
    net.spare.requires_grad_(False)
    return net


class Mixing(nn.Module):
    """A linear model whose input is first transformed across the rows of the batch (``kind``)."""

    def __init__(self, n_features: int, n_outputs: int, kind: str) -> None:
        super().__init__()
        self.lin = nn.Linear(n_features, n_outputs)
        self.kind = kind

    def forward(self, x):
        if self.kind == "centre":
            x = x - x.mean(0, keepdim=True)
        elif self.kind == "roll":
            x = x.roll(1, 0)
        elif self.kind == "cumsum":
            x = x.cumsum(0)
        elif self.kind == "batch_norm_scale":
            x = x / x.norm()
        elif self.kind == "eval_only" and not self.training:
            x = x - x.mean(0, keepdim=True)
        out = self.lin(x)
        if self.kind == "gradient_only":  # the same outputs bit for bit; the backward adds every row's gradient
            total = out.sum(0, keepdim=True)
            out = out + (total - total.detach())
        return out


def _blobs(n: int = 120, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 0] = rng.integers(0, 4, size=n)  # valid codes
    return X, (X[:, 1] > 0).astype(int)


def _gsm(net):
    from opacus import GradSampleModule

    gsm = GradSampleModule(net, batch_first=True, loss_reduction="sum")
    gsm.train()
    return gsm, [p for p in net.parameters() if p.requires_grad]


# ============================================================================ F1
def test_a_failing_chunk_gives_every_other_row_its_batched_gradient_bit_for_bit():
    """The same chunk with one row's code valid (one batched pass) and out of the table (the module raises, the
    chunk is recomputed row by row): every other row's per-example gradient is bit-identical, dropout included,
    the raising row's is zero, and torch's generator ends in the same state."""
    X, y = _blobs(50)
    odd = X.copy()
    odd[17, 0] = 9.0  # the embedding lookup raises IndexError
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = coded_factory(3, 2)
    gsm, params = _gsm(net)
    loss = engine.loss_function("classification")
    rows = np.arange(50)
    got, states = [], []
    for Xa in (X, odd):
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(3)
            got.append(engine._chunk_gradients(gsm, params, loss, torch.as_tensor(Xa, dtype=torch.float32),
                                               torch.as_tensor(y), rows))
            states.append(torch.get_rng_state())
    others = rows != 17
    assert np.array_equal(got[0][others], got[1][others])
    assert np.all(got[1][17] == 0.0) and np.any(got[0][17] != 0.0)
    assert torch.equal(states[0], states[1])
    # the failed pass left no state behind: the next batched pass is the same as on a fresh wrapper
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(5)
        again = engine._chunk_gradients(gsm, params, loss, torch.as_tensor(X, dtype=torch.float32),
                                        torch.as_tensor(y), rows)
        fresh_gsm, fresh_params = _gsm(copy.deepcopy(gsm.to_standard_module()))
        torch.manual_seed(5)
        fresh = engine._chunk_gradients(fresh_gsm, fresh_params, loss, torch.as_tensor(X, dtype=torch.float32),
                                        torch.as_tensor(y), rows)
    assert np.array_equal(again, fresh)


def test_a_raising_row_is_a_zero_gradient_row_in_a_seeded_fit():
    """A seeded fit with one row on which the module raises gives exactly the weights of the same fit in which
    that row is valid but contributes a zero gradient (its label outside the declared classes), with the same
    charge: the raising row changes its own term only."""
    X, y = _blobs(150)
    raising, dropped = X.copy(), y.astype(object)
    raising[5, 0] = 1e6
    dropped[5] = "outside"
    fits = []
    for Xa, ya in ((raising, y), (X, dropped)):
        acc = Accountant(Budget(2.0, 1e-6))
        clf = DPSGDClassifier(coded_factory, epsilon=2.0, classes=[0, 1], epochs=2, batch_size=100,
                              accountant=acc, random_state=4).fit(Xa, ya)
        fits.append(([p.detach().clone() for p in clf.module_.parameters()], acc.spent))
    assert all(torch.equal(a, b) for a, b in zip(fits[0][0], fits[1][0], strict=True))
    assert fits[0][1] == fits[1][1]


def _old_clipped_sum(gsm, params, loss_fn, X, y, keep, idx, clip, d):
    """``clipped_sum`` as it was before the row-by-row fallback (verbatim arithmetic), for the comparison below."""
    partial = []
    for start in range(0, idx.size, engine.CHUNK):
        rows = idx[start:start + engine.CHUNK]
        r = rows.size
        Xc = torch.zeros((engine.CHUNK,) + tuple(X.shape[1:]), dtype=X.dtype)
        Xc[:r] = X[rows]
        yc = torch.zeros((engine.CHUNK,) + tuple(y.shape[1:]), dtype=y.dtype)
        yc[:r] = y[rows]
        with np.errstate(all="ignore"):
            for p in params:
                p.grad_sample = None
                p.grad = None
            loss_fn(gsm(Xc), yc).backward()
            G = np.concatenate([p.grad_sample[:r].reshape(r, -1).detach().to(dtype=torch.float64).numpy()
                                for p in params], axis=1)
            bad = ~np.all(np.isfinite(G), axis=1) | ~keep[rows]
            G = np.where(bad[:, None], 0.0, G)
            norms = np.sqrt(np.einsum("ij,ij->i", G, G))
            factor = np.minimum(1.0, clip / np.where(norms > 0.0, norms, 1.0))
            factor = np.where(norms > clip * engine._HUGE_GRADIENT, 0.0, factor)
            partial.append(factor @ G)
    if not partial:
        return np.zeros(d)
    if len(partial) == 1:
        return partial[0]
    return np.array([math.fsum(col) for col in np.stack(partial).T.tolist()])


@pytest.mark.parametrize("module", [None, coded_factory], ids=["default", "embedding_dropout"])
def test_seeded_fits_without_raising_rows_are_unchanged(module, monkeypatch):
    """With no row raising, a seeded fit gives exactly the weights of the pre-fix engine (old clipped sum, no
    probe in check_module): the fallback and the probes change nothing else (no random draw, no weight)."""
    X, y = _blobs(300)
    X[:, 1:] *= 3.0
    X[7, 2] = np.nan  # a non-finite entry (mapped to 0) is not a raising row

    def fit():
        return DPSGDClassifier(module, epsilon=1.0, classes=[0, 1], epochs=2, batch_size=150,
                               random_state=11).fit(X, y)

    new = fit()
    monkeypatch.setattr(engine, "clipped_sum", _old_clipped_sum)
    monkeypatch.setattr(engine, "_probe_per_example", lambda *a, **k: None)
    old = fit()
    pairs = zip(new.module_.parameters(), old.module_.parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    assert new.lr_ == old.lr_ and new.noise_multiplier_ == old.noise_multiplier_


def test_a_regressor_row_that_raises_does_not_make_fit_raise():
    X, _ = _blobs(100)
    t = X[:, 1] - X[:, 2]
    X[3, 0] = -50.0  # abs -> 50: out of the table
    acc = Accountant(Budget(1.0, 1e-6))
    reg = DPSGDRegressor(coded_factory, epochs=1, batch_size=50, accountant=acc, random_state=0).fit(X, t)
    assert len(acc.entries) == 1 and np.isfinite(reg.module_.out.weight.detach().numpy()).all()


# ============================================================================ F2
def test_a_trainable_parameter_without_a_per_example_gradient_is_refused_by_name():
    X, y = _blobs()
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="Nothing was spent") as info:
        DPSGDClassifier(spare_factory, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    message = str(info.value)
    assert "spare.weight" in message and "spare.bias" in message and "used." not in message
    assert "requires_grad=False" in message and "remove" in message
    assert len(acc.entries) == 0
    with pytest.raises(InvalidParameterError, match="spare.weight"):
        DPSGDClassifier(spare_factory, classes=[0, 1])._check_fit_plan(120, 3)  # a search's pre-check too
    with pytest.raises(InvalidParameterError, match="spare.weight"):
        DPSGDRegressor(spare_factory, accountant=Accountant(Budget(1.0, 1e-6)), random_state=0).fit(X, X[:, 1])
    clf = DPSGDClassifier(frozen_spare_factory, classes=[0, 1], epochs=1, random_state=0).fit(X, y)
    assert clf.n_iter_ > 0 and clf.accountant_.entries


# ============================================================================ F3
ORDINARY = {
    "default": lambda d, k: engine.default_module(d, k),
    "tanh_dropout": lambda d, k: nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 16),
                                               nn.ReLU(), nn.Linear(16, k)),
    "layer_norm": lambda d, k: nn.Sequential(nn.Linear(d, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, k)),
    "group_norm": lambda d, k: nn.Sequential(nn.Linear(d, 16), nn.GroupNorm(4, 16), nn.ELU(), nn.Linear(16, k)),
    "embedding_dropout": coded_factory,
}


@pytest.mark.parametrize("name", list(ORDINARY))
@pytest.mark.parametrize(("task", "n_outputs"), [("classification", 3), ("regression", 1)])
def test_row_wise_modules_pass_the_probe_and_are_left_untouched(name, task, n_outputs):
    """Ordinary row-wise modules give bit-identical other rows (no tolerance needed); the probe works on a copy:
    the module's weights, attributes and hooks, and torch's global generator, are as before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        net = ORDINARY[name](4, n_outputs)
    before = copy.deepcopy(net.state_dict())
    rng_before = torch.get_rng_state()
    n = engine.check_module(net, 4, n_outputs, "DPSGDClassifier", task=task)
    assert n == sum(p.numel() for p in net.parameters())
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    for m in net.modules():
        assert not m._forward_hooks and not m._backward_hooks and not hasattr(m, "activations")
    for p in net.parameters():
        assert p.grad is None and not hasattr(p, "grad_sample") and not hasattr(p, "_forward_counter")


@pytest.mark.parametrize("kind", ["centre", "roll", "cumsum", "batch_norm_scale", "eval_only", "gradient_only"])
def test_a_module_that_mixes_rows_is_refused_before_the_charge(kind):
    X, y = _blobs()

    def factory(d, k):
        return Mixing(d, k, kind)

    for est in (DPSGDClassifier(factory, classes=[0, 1]), DPSGDRegressor(factory)):
        acc = Accountant(Budget(1.0, 1e-6))
        with pytest.raises(InvalidParameterError, match="mixes the rows of a batch.*Nothing was spent"):
            est.set_params(accountant=acc, random_state=0).fit(X, y)
        assert len(acc.entries) == 0


def test_a_module_that_raises_on_the_public_probe_rows_is_refused():
    class Picky(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            if bool((x > 0.5).any()):
                raise ValueError("no")
            return self.lin(x)

    with torch.random.fork_rng(devices=[]):
        picky = Picky()
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match=r"public synthetic rows.*ValueError.*Nothing was spent"):
        DPSGDClassifier(picky, classes=[0, 1], accountant=acc).fit(*_blobs())
    assert len(acc.entries) == 0


# ============================================================================ predict
def test_predict_raises_on_a_public_raising_row_and_a_search_scorer_isolates_a_sensitive_one():
    """predict on rows the caller holds propagates the module's exception (torch's message; nothing private is
    involved); PrivateSearchCV's built-in scorers isolate validation rows (privtune.model_selection._isolation),
    so a validation row on which the module raises moves the accuracy by at most its own term 1/m."""
    from privtune.model_selection._scoring import make_bounded_scorer

    X, y = _blobs(200)
    clf = DPSGDClassifier(coded_factory, epsilon=5.0, classes=[0, 1], epochs=2, batch_size=40,
                          random_state=0).fit(X[:160], y[:160])
    Xv, yv = X[160:], y[160:]
    odd = Xv.copy()
    odd[3, 0] = 1e6
    with pytest.raises(IndexError):
        clf.predict(odd)
    scorer = make_bounded_scorer("accuracy")
    assert abs(scorer(clf, Xv, yv) - scorer(clf, odd, yv)) <= 1.0 / len(yv) + 1e-12
