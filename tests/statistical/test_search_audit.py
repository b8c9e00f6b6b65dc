"""Black-box DP audit of PrivateSearchCV itself, end to end, on neighbouring validation sets.

Everything a user gets back is produced by ``PrivateSearchCV.fit`` (split handling, row-isolated scoring, the release
method, clipping, the report); the audit only sees the released score ``release_.score`` and the selected candidate,
as an outsider would. Two neighbouring pairs (replace-one of one validation row):

* **label flip**: one row's label changes, the worst ordinary change (every candidate's score moves by 1/m);
* **failure path** (issue 10, item 1): one row is replaced by a row on which the good candidate's ``predict`` raises
  for the whole batch. Row isolation makes this cost that row's term only.

Each audit must (a) find no violation of the claimed epsilon for the real search and (b) flag a deliberately broken
twin at the same sample size: a search whose scoring turns a failing batch into the lower bound for the whole set
(the old behaviour), or one whose declared sensitivity is too small (a quarter of the true one for ``random``, a
twentieth for ``noisy-ucb``, whose Gaussian noise needs a larger error to be seen at this sample size). The claims
are epsilon = 2 (for ``noisy-ucb`` with delta = 1e-5), so that a twin's excess shows within a few hundred runs; m = 40
validation rows. Split-sample Clopper-Pearson bounds at 99.9 % confidence (``privtune.testing.audit_mechanism``).
Measured when written: real searches 0.08 / 0.0 / 0.5 (random / noisy-ucb / prescreen), twins 2.3-3.7.
``gp-ucb``, ``gp-ucb-exact`` and ``lipschitz`` are audited the same way at the end of this file (their twins are
explained there). Passing is evidence, not a proof.
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privtune import PrivateSearchCV
from privtune.bo import gp_ucb, gp_ucb_exact
from privtune.bo.lipschitz import LipschitzRelease
from privtune.model_selection import _scoring
from privtune.space import Categorical, Real
from privtune.testing import audit_mechanism

pytestmark = pytest.mark.statistical

M = 40  # validation rows: sensitivity of accuracy 1/M = 0.025
POISON = 1e6


class TwoModels(ClassifierMixin, BaseEstimator):
    """k=0 predicts sign(x0) and raises on a poisoned row (x0 > 100); k=1 predicts 1 everywhere."""

    def __init__(self, k=0):
        self.k = k

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        if self.k == 1:
            return np.ones(len(X), dtype=int)
        if np.any(X[:, 0] > 100):
            raise ValueError("unseen value")
        return (X[:, 0] > 0).astype(int)


def _data():
    X_tr = np.array([[-1.0, 0.0], [1.0, 0.0]] * 3)  # public; six rows so that prescreen's 3-fold screening runs
    y_tr = np.array([0, 1] * 3)
    x0 = np.concatenate([-np.linspace(2.0, 0.1, M // 2), np.linspace(0.1, 2.0, M // 2)])  # row 0: x0 = -2
    X_val = np.column_stack([x0, np.zeros(M)])
    y_val = (x0 > 0).astype(int)  # k=0 scores 1.0, k=1 scores 0.5
    return X_tr, y_tr, X_val, y_val


def _neighbour(kind):
    X_tr, y_tr, X_val, y_val = _data()
    X2, y2 = X_val.copy(), y_val.copy()
    if kind == "label":  # row 0 (x0 < 0): k=0 becomes wrong, k=1 becomes right
        y2[0] = 1
    else:  # the failure path: row 0 poisoned, so k=0's batch predict raises
        X2[0, 0] = POISON
        y2[0] = 1
    return (X_tr, y_tr, X_val, y_val), (X_tr, y_tr, X2, y2)


def _broken_isolation(evaluate, n_rows, worst, *, block_rows=None):
    """The broken twin of row isolation: any failure makes the whole set worst (the old behaviour)."""
    try:
        v = np.asarray(evaluate(np.arange(n_rows)), dtype=float)
        if v.shape == (n_rows,) and np.isfinite(v).all():
            return v
    except Exception:  # noqa: BLE001
        pass
    return np.full(n_rows, worst)


def _broken_block_means(score_block, n_rows, worst, *, block_rows=None):
    """The same twin for callables: one call over every row, the lower bound for all if it fails."""
    try:
        v = float(score_block(np.arange(n_rows))(np.arange(n_rows)))
        if np.isfinite(v):
            return np.full(n_rows, v)
    except Exception:  # noqa: BLE001
        pass
    return np.full(n_rows, worst)


class _Bare:
    """The twin's 'view': the estimator itself, unisolated (callables reach it directly)."""

    def __init__(self, est, frozen=None):
        self._est = est

    def freeze(self, X):
        return None

    def __getattr__(self, name):
        return getattr(self._est, name)


def _break_isolation(mp):
    """Install the broken twin of row isolation, for built-in scorers and for callables (which get the estimator
    itself instead of the isolating view)."""
    mp.setattr(_scoring, "isolated_row_values", _broken_isolation)
    mp.setattr(_scoring, "isolated_block_means", _broken_block_means)
    mp.setattr(_scoring, "IsolatedEstimator", _Bare)


def _reblocking_isolation(evaluate, n_rows, worst, *, block_rows=None):
    """The twin of issue 37, item 1: the previous fallback, which re-scored the other rows of a failing batch in
    bisection blocks (so a row's value depended on which other row failed)."""
    out = np.empty(n_rows)
    stack = [np.arange(n_rows)]
    while stack:
        idx = stack.pop()
        try:
            values = np.asarray(evaluate(idx), dtype=float)
        except Exception:  # noqa: BLE001
            values = None
        if values is not None and values.shape == idx.shape:
            out[idx] = np.where(np.isfinite(values), values, worst)
        elif len(idx) == 1:
            out[idx] = worst
        else:
            stack += [idx[len(idx) // 2:], idx[:len(idx) // 2]]
    return out


def _sampler(data, method, epsilon, *, broken=None, output="score", method_params=None, factor=None,
             estimator=TwoModels):
    X_tr, y_tr, X_val, y_val = data
    seeds = iter(range(10**9))

    def sample(n):
        out = []
        with pytest.MonkeyPatch.context() as mp:
            if broken == "isolation":
                _break_isolation(mp)
            if broken == "reblocking":
                mp.setattr(_scoring, "isolated_row_values", _reblocking_isolation)
            if broken == "sensitivity":  # the scorer's rule itself under-states accuracy's 1/m (the public API
                under = factor or (4 if method == "random" else 20)  # refuses a declared value below it)
                proven = _scoring.BoundedScorer.sensitivity
                mp.setattr(_scoring.BoundedScorer, "sensitivity",
                           lambda self, m, k=2: proven(self, m, k) / under)
            for _ in range(n):
                search = PrivateSearchCV(
                    estimator(), {"k": Categorical([0, 1])}, method=method, epsilon=epsilon, delta=1e-5, n_iter=2,
                    n_candidates=2, refit=False, random_state=next(seeds), method_params=method_params)
                search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
                out.append(search.release_.score if output == "score" else search.best_params_["k"])
        return np.asarray(out)
    return sample


@pytest.mark.slow
@pytest.mark.parametrize("method,epsilon,n", [("random", 2.0, 800), ("noisy-ucb", 2.0, 500), ("prescreen", 2.0, 800)])
@pytest.mark.parametrize("pair,twin", [("failure", "isolation"), ("label", "sensitivity")])
def test_private_search_cv_passes_an_end_to_end_audit_and_its_broken_twin_is_flagged(method, epsilon, n, pair, twin):
    d, d2 = _neighbour(pair)
    delta = 0.0 if method in ("random", "prescreen") else 1e-5
    kw = dict(epsilon=epsilon, delta=delta, n_samples=n, confidence=0.999, random_state=0)
    ok = audit_mechanism(_sampler(d, method, epsilon), _sampler(d2, method, epsilon), **kw)
    bad = audit_mechanism(_sampler(d, method, epsilon, broken=twin), _sampler(d2, method, epsilon, broken=twin),
                          **kw)
    assert not ok.violation, ok
    assert bad.violation, bad


class BoundaryModels(TwoModels):
    """TwoModels whose k=0 computes sign(x0 + s) with a tiny shift s that depends on the block's length (its parity),
    a deterministic model of BLAS rounding that depends on the block's shape; raises on a poisoned row."""

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        if self.k == 1:
            return np.ones(len(X), dtype=int)
        if np.any(X[:, 0] > 100):
            raise ValueError("unseen value")
        return (X[:, 0] + (1e-9 if len(X) % 2 == 0 else -1e-9) > 0).astype(int)


def _boundary_pair():
    """Issue 37, item 1: rows 1-11 sit at x0 = 1e-10, right (class 1) in a block of even length; row 0 is replaced by
    a poisoned row. Re-blocking rows 1-9 into bisection blocks of odd length made them wrong: k=0's score moved by
    10/m where 1/m is declared."""
    X_tr, y_tr, X_val, y_val = _data()
    X_val, y_val = X_val.copy(), y_val.copy()
    X_val[1:12, 0] = 1e-10
    y_val[1:12] = 1
    X2, y2 = X_val.copy(), y_val.copy()
    X2[0, 0] = POISON
    y2[0] = 1
    return (X_tr, y_tr, X_val, y_val), (X_tr, y_tr, X2, y2)


@pytest.mark.slow
def test_boundary_rows_pass_an_end_to_end_audit_and_a_re_blocking_twin_is_flagged():
    """Issue 37, item 1, end to end (random, epsilon = 2, 800 runs per side). Measured when written: real 0.29,
    twin 3.60 (the largest bound 800 runs can give here)."""
    d, d2 = _boundary_pair()
    kw = dict(epsilon=2.0, delta=0.0, n_samples=800, confidence=0.999, random_state=0)
    ok = audit_mechanism(_sampler(d, "random", 2.0, estimator=BoundaryModels),
                         _sampler(d2, "random", 2.0, estimator=BoundaryModels), **kw)
    bad = audit_mechanism(_sampler(d, "random", 2.0, estimator=BoundaryModels, broken="reblocking"),
                          _sampler(d2, "random", 2.0, estimator=BoundaryModels, broken="reblocking"), **kw)
    assert not ok.violation, ok
    assert bad.violation, bad


@pytest.mark.slow
def test_the_released_choice_passes_an_audit_and_its_broken_twin_is_flagged():
    """The released best_params_ (random's exponential selection), not only the released score. The candidates
    tie (both score 0.75) and the pair flips one label, moving k=0 down and k=1 up by one row each: the real
    search's log-odds move by at most epsilon; the twin whose sensitivity rule is 20 times too small is caught."""
    X_tr, y_tr, X_val, _ = _data()
    y_val = (X_val[:, 0] > 0).astype(int)
    y_val[M // 4: M // 2] = 1  # half of the x0 < 0 rows labelled 1: k=0 and k=1 both score 30/40
    y2 = y_val.copy()
    y2[0] = 1  # row 0 (x0 < 0, label 0): k=0 becomes wrong, k=1 right
    d, d2 = (X_tr, y_tr, X_val, y_val), (X_tr, y_tr, X_val, y2)
    method = "random"
    kw = dict(epsilon=2.0, delta=0.0, n_samples=800, confidence=0.999, random_state=0, output_type="discrete")
    ok = audit_mechanism(_sampler(d, method, 2.0, output="params"), _sampler(d2, method, 2.0, output="params"), **kw)
    bad = audit_mechanism(_sampler(d, method, 2.0, broken="sensitivity", output="params"),
                          _sampler(d2, method, 2.0, broken="sensitivity", output="params"), **kw)
    assert not ok.violation, ok
    assert bad.violation, bad


@pytest.mark.slow
def test_random_stopping_passes_an_end_to_end_audit_and_its_broken_twin_is_flagged():
    """Papernot & Steinke's random stopping (one RepeatAndSelectEvent for the whole search), label pair, released
    score. Measured when written: real 0.07, twin (sensitivity rule 20 times too small) 4.6 against epsilon = 2."""
    d, d2 = _neighbour("label")
    mp = {"selection": "random-stopping"}
    kw = dict(epsilon=2.0, delta=1e-5, n_samples=2000, confidence=0.999, random_state=0)
    ok = audit_mechanism(_sampler(d, "random", 2.0, method_params=mp), _sampler(d2, "random", 2.0, method_params=mp),
                         **kw)
    bad = audit_mechanism(_sampler(d, "random", 2.0, broken="sensitivity", method_params=mp, factor=20),
                          _sampler(d2, "random", 2.0, broken="sensitivity", method_params=mp, factor=20), **kw)
    assert not ok.violation, ok
    assert bad.violation, bad



# ----------------------------------------------------------------------------- gp-ucb, gp-ucb-exact, lipschitz
# Kusner's Algorithms 1 and 2 calibrate the score's Laplace noise to a GP-prior sensitivity that dwarfs what one
# replaced row can do (scale 8.2 in score units at epsilon = 2 here, against a change of 1/m = 0.025): the real
# search's true epsilon on any replace-one pair is a few thousandths, and a twin whose sensitivity is a few times
# too small is still far inside the claim. What the end-to-end audit can check is that the whole pipeline (row
# isolation, clipping, the GP-UCB loop on raw scores, the release) adds no path around that noise; its twin is the
# release without its noise (``randomise_on_grid`` returning the raw maximum), which must be flagged. For ``gp-ucb``
# the twin also drops Alg. 1's observation noise alpha_t (sigma = 0.1 GP units, 0.05 in accuracy here), which the
# maximum released otherwise carries: a Gaussian of twice the sensitivity is far too private for 300 runs to show.
# Algorithm 3 (``lipschitz``) is calibrated to one row's effect (loss_bound / m plus the path term), so there the
# twin is the usual one: the method's sensitivities a twentieth of the true ones.

class ShrunkLinear(ClassifierMixin, BaseEstimator):
    """decision_function = 5 x0 / lam (a public fit; w is 5 / lam). Raises on a poisoned row (x0 > 100)."""

    def __init__(self, lam=1.0):
        self.lam = lam

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def decision_function(self, X):
        X = np.asarray(X, dtype=float)
        if np.any(X[:, 0] > 100):
            raise ValueError("unseen value")
        return 5.0 * X[:, 0] / self.lam

    def predict(self, X):
        return (self.decision_function(X) > 0).astype(int)


def neg_sigmoid_loss(est, X, y):
    """Mean sigmoid loss sigma(-y z) in [0, 1] (g* = 1); in w it is |x0| / 4 <= 1/2-Lipschitz (|x0| <= 2)."""
    z = est.decision_function(X) * np.where(np.asarray(y) == 1, 1.0, -1.0)
    return -float(np.mean(1.0 / (1.0 + np.exp(z))))


#: Alg. 3's declarations for ShrunkLinear: w = 5 / lam moves by 5 |1/lam1 - 1/lam2|, and g is 1/2-Lipschitz in w,
#: so the score is L = 2.5-Lipschitz in the 1/lam path (the path term's L); the per-row loss is bounded by 1.
LIPSCHITZ_PARAMS = {"regularization": "lam", "lambda_bounds": (1.0, 1.01), "lipschitz": 2.5, "loss_bound": 1.0}


def _kusner_sampler(data, method, *, broken=None, output="score"):
    X_tr, y_tr, X_val, y_val = data
    seeds = iter(range(10**9))
    if method == "lipschitz":
        est, space = ShrunkLinear(), {"lam": Real(1.0, 1.01)}
        extra = dict(scoring=neg_sigmoid_loss, score_bounds=(-1.0, 0.0), method_params=LIPSCHITZ_PARAMS)
    else:
        est, space = TwoModels(), {"k": Categorical([0, 1])}
        extra = dict(method_params={"A": 1.0, "tau": 1.0} if method == "gp-ucb-exact" else None)

    def sample(n):
        out = []
        with pytest.MonkeyPatch.context() as mp:
            if broken == "isolation":
                _break_isolation(mp)
            if broken == "noise":  # the release of the raw maximum (of the exact scores)
                mp.setattr(gp_ucb if method == "gp-ucb" else gp_ucb_exact, "randomise_on_grid", lambda mech, v: v)
                mp.setattr(gp_ucb, "observation_noise", lambda source, sd, n: np.zeros(n))
            if broken == "sensitivity":
                proven = LipschitzRelease.constants
                mp.setattr(LipschitzRelease, "constants",
                           lambda self: {k: v / 20 for k, v in proven(self).items()})
            for _ in range(n):
                search = PrivateSearchCV(est, space, method=method, epsilon=2.0, delta=1e-5, n_iter=2,
                                         n_candidates=2, refit=False, random_state=next(seeds), **extra)
                search.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
                out.append(search.release_.score)
        return np.asarray(out)
    return sample


@pytest.mark.parametrize("method,pair,twin", [
    ("gp-ucb", "label", "noise"), ("gp-ucb", "failure", "noise"),
    ("gp-ucb-exact", "label", "noise"), ("gp-ucb-exact", "failure", "noise"),
    ("lipschitz", "label", "sensitivity"), ("lipschitz", "failure", "isolation")])
@pytest.mark.slow
def test_kusner_searches_pass_an_end_to_end_audit_and_their_broken_twins_are_flagged(method, pair, twin):
    """Label pair and failure pair (row 0 poisoned), released score, claims epsilon = 2 (delta = 1e-5 for the
    conditional methods), 300 runs per side at 99.9 %. For ``lipschitz`` row 0 (x0 = -2, z = -10) is confidently
    right: flipping its label moves its loss from 5e-5 to about 1, i.e. the score by 1/m, the per-lambda
    sensitivity; the path term (2.5 * 0.01 / 1.01) is about as large again. Measured when written: every real
    search 0.0; every twin 2.65-2.71 (the largest bound 150 evaluation runs can give)."""
    d, d2 = _neighbour(pair)
    delta = 0.0 if method == "lipschitz" else 1e-5
    kw = dict(epsilon=2.0, delta=delta, n_samples=300, confidence=0.999, random_state=0)
    ok = audit_mechanism(_kusner_sampler(d, method), _kusner_sampler(d2, method), **kw)
    bad = audit_mechanism(_kusner_sampler(d, method, broken=twin), _kusner_sampler(d2, method, broken=twin), **kw)
    assert not ok.violation, ok
    assert bad.violation, bad


# ----------------------------------------------------------------------------- cross-validation, sensitive="both"
def _cv_sampler(y, *, broken=False):
    """cv=2 over 40 rows x0 = -1 .. -0.05, 0.05 .. 1 (row 0: x0 = -1) with a privtune DP estimator."""
    from privtune.linear_model import DPLogisticRegression
    X = np.r_[-np.linspace(1.0, 0.05, M // 2), np.linspace(0.05, 1.0, M // 2)][:, None]
    seeds = iter(range(10**9))

    def make(seed):
        return PrivateSearchCV(DPLogisticRegression(epsilon=0.25, fit_intercept=False, classes=[0, 1]),
                               {"C": Categorical([0.01, 100.0])}, method="random", sensitive="both", cv=2,
                               epsilon=2.0, delta=1e-5, n_iter=2, n_candidates=2, refit=False, random_state=seed)

    def sample(n):
        out = []
        with pytest.MonkeyPatch.context() as mp:
            if broken:
                proven = _scoring.BoundedScorer.sensitivity
                mp.setattr(_scoring.BoundedScorer, "sensitivity", lambda self, m, k=2: proven(self, m, k) / 20)
            for _ in range(n):
                out.append(make(next(seeds)).fit(X, y).release_.score)
        return np.asarray(out)
    sample.make = make
    sample.X = X
    return sample


@pytest.mark.slow
def test_cross_validated_search_with_sensitive_training_passes_an_audit_and_its_broken_twin_is_flagged():
    """cv=2 and sensitive="both": every row is a validation row of one fold and a training row of the other
    fold's DP fit. The pair flips row 0's label (x0 = -1, label 0 -> 1): its fold's accuracy moves by up to
    1/20 (the fold's sensitivity; the score, a mean over 2 folds, by 1/40) and the other fold's DP fit sees a
    changed row. The claim is the search's own overall (epsilon, delta) (validation 1, training 1 at
    delta 1e-5, composed; about (1.59, 1e-5)). Twin: the scorer's sensitivity rule a twentieth of the truth
    (the score release's true epsilon then about 10). 300 runs per side at 99.9 %; measured when written: real
    0.0, twin 2.59."""
    y = np.r_[np.zeros(M // 2, int), np.ones(M // 2, int)]
    y2 = y.copy()
    y2[0] = 1
    probe = _cv_sampler(y)
    claim = probe.make(0).fit(probe.X, y).privacy_spent_["overall"]
    kw = dict(epsilon=claim.epsilon, delta=claim.delta, n_samples=300, confidence=0.999, random_state=0)
    ok = audit_mechanism(_cv_sampler(y), _cv_sampler(y2), **kw)
    bad = audit_mechanism(_cv_sampler(y, broken=True), _cv_sampler(y2, broken=True), **kw)
    assert not ok.violation, ok
    assert bad.violation, bad


# ----------------------------------------------------------------------------- random stopping, sensitive training
def _training_row_sampler(y, *, broken=False, fit_epsilon, **search):
    """A search over Gaussian DP fits (one split) whose output is best_estimator_'s coefficient (the selected
    candidate's own fit). 40 training rows x0 = -1 .. -0.05, 0.05 .. 1 (row 0: x0 = -1); the validation rows are
    fixed (the pair differs in a training row). ``broken``: the solver adds a twentieth of the noise its fit declares
    (and is charged for)."""
    from privtune.linear_model import DPLogisticRegression
    from privtune.optim.accelerated import _plan as _accelerated_plan
    X = np.r_[-np.linspace(1.0, 0.05, M // 2), np.linspace(0.05, 1.0, M // 2)][:, None]
    y_val = (X[:, 0] > 0).astype(int)
    seeds = iter(range(10**9))

    def make(seed):
        return PrivateSearchCV(DPLogisticRegression(epsilon=fit_epsilon, fit_intercept=False, classes=[0, 1]),
                               {"C": Categorical([0.01, 100.0])}, method="random", epsilon=2.0, delta=1e-5,
                               n_candidates=2, random_state=seed, **search)

    def sample(n):
        out = []
        with pytest.MonkeyPatch.context() as mp:
            if broken:
                proven = _accelerated_plan.gaussian_run_multiplier
                mp.setattr(_accelerated_plan, "gaussian_run_multiplier", lambda e, d: proven(e, d) / 20)
            for _ in range(n):
                out.append(make(next(seeds)).fit(X, y, X_val=X, y_val=y_val).best_estimator_.coef_[0, 0])
        return np.asarray(out)
    sample.make = make
    sample.X, sample.y_val = X, y_val
    return sample


def _stopping_training_sampler(y, *, broken=False):
    """Random stopping over Gaussian DP fits (sensitive="both", one split), per-fit epsilon 1.3, mean of K 3."""
    return _training_row_sampler(y, broken=broken, fit_epsilon=1.3, sensitive="both", n_iter=3,
                                 method_params={"selection": "random-stopping"})


def _training_row_audit(sampler, broken, role="training"):
    """Audit a search built by ``sampler`` (a ``_training_row_sampler``) on a training row: row 0's label flipped.

    The claim is ``privacy_spent_[role]`` of one fit of the search (at most the search's epsilon of 2); 1000 runs
    per side at 99.9 %. Returns (that fitted search, the claim, the audit's result)."""
    y = (np.r_[-np.ones(M // 2), np.ones(M // 2)] > 0).astype(int)
    y2 = y.copy()
    y2[0] = 1
    probe = sampler(y)
    fitted = probe.make(0).fit(probe.X, y, X_val=probe.X, y_val=probe.y_val)
    claim = fitted.privacy_spent_[role]
    assert claim.epsilon <= 2.0 * (1 + 1e-9)
    kw = dict(epsilon=claim.epsilon, delta=claim.delta, n_samples=1000, confidence=0.999, random_state=0)
    return fitted, claim, audit_mechanism(sampler(y, broken=broken), sampler(y2, broken=broken), **kw)


def _stopping_training_audit(broken):
    return _training_row_audit(_stopping_training_sampler, broken)[2]


@pytest.mark.slow
def test_random_stopping_over_gaussian_fits_passes_a_training_row_audit():
    """Papernot & Steinke over Gaussian DP fits, audited on a *training* row: the pair flips row 0's label
    (x0 = -1, label 0 -> 1). The output is the released model (the selected run's own fit, kept without a refit),
    the claim the training role's (epsilon, delta) ((1.98, 1e-5): per-fit epsilon 1.3, mean of K 3, eta 1).
    1000 runs per side at 99.9 %; measured when written: 0.0 (about 40 s on one core)."""
    res = _stopping_training_audit(broken=False)
    assert not res.violation, res


@pytest.mark.slow
def test_random_stopping_over_gaussian_fits_broken_twin_is_flagged():
    """The twin of the audit above: the solver adds a twentieth of the noise its fit declares (and is charged
    for), at the same size and seeds. Measured when written: 2.53 against the claim 1.98."""
    res = _stopping_training_audit(broken=True)
    assert res.violation, res


# ----------------------------------------------------------------------------- sensitive="training", exact release
def _exact_release_sampler(y, *, broken=False):
    """sensitive="training" (the validation rows public): both candidates are fitted by Gaussian DP fits (per-fit
    epsilon 1) and the released model is the exact best on the public validation rows -- post-processing of the two
    fits."""
    return _training_row_sampler(y, broken=broken, fit_epsilon=1.0, sensitive="training", n_iter=2)


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["real", "twin"])
def test_exact_release_with_public_validation_rows_passes_a_training_row_audit_and_its_twin_is_flagged(broken):
    """sensitive="training" spends nothing on the validation role (issue 40): the selection and the score are
    post-processing of the DP fits. Audited on a *training* row (row 0's label flipped) against the search's whole
    claim, the training role's (epsilon, delta) (two Gaussian fits at per-fit epsilon 1, delta 1e-6; the overall
    equals it, the validation role having spent 0): (1.29, 1e-5). Twin: the solver adds a twentieth of the noise its
    fits declare. 1000 runs per side at 99.9 %; measured when written: real 0.0, twin 2.33."""
    fitted, claim, res = _training_row_audit(_exact_release_sampler, broken, role="overall")
    assert fitted.privacy_spent_["validation"].epsilon == 0.0 and claim == fitted.privacy_spent_["training"]
    assert res.violation == broken, res


# ----------------------------------------------------------------------------- subsampled tuning (issue 40)
def _subsampled_sampler(y, *, broken=False):
    """Subsampled tuning (sensitive="training"): random stopping (mean 3) over Gaussian DP fits (per-fit epsilon 0.8)
    on a secret half of the 40 training rows, then the released model refitted on all of them."""
    return _training_row_sampler(y, broken=broken, fit_epsilon=0.8, sensitive="training", n_iter=3,
                                 method_params={"selection": "random-stopping", "subsample": 0.5})


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True], ids=["real", "twin"])
def test_subsampled_tuning_passes_a_training_row_audit_and_its_twin_is_flagged(broken):
    """The whole subsampled search, audited on a *training* row (row 0's label flipped; the row may or may not be in
    the secret tuning subset) against its claim, the training role's (epsilon, delta): the amplified tuning phase
    composed with the refit. The output is the released model's coefficient (the refit on all rows, with the chosen
    C). Twin: the solver adds a twentieth of the noise its fits declare. 1000 runs per side at 99.9 %; claim
    (1.48, 1e-5); measured when written: real 0.0, twin 1.93 (about 110 s each on one core)."""
    fitted, _, res = _training_row_audit(_subsampled_sampler, broken, role="overall")
    assert [e.phase for e in fitted.training_accountant_.entries] == ["selection (random stopping)", "refit"]
    assert res.violation == broken, res
