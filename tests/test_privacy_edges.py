"""The edges of the guarantee (issue 10): secret K with privtune's DP trainers, adversarial training rows, and
messages, warnings and logs that never quote a data value, whatever the input.
"""

import json
import logging
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.svm import SVC

from privtune import InvalidParameterError, PrivateSearchCV
from privtune.linear_model import DPChebyshevRegressor, DPLogisticRegression, DPNonConvexClassifier
from privtune.neural_network import DPMLPClassifier
from privtune.space import Real
from privtune.svm import DPSVC, DPLinearSVC

SENTINEL_STR = "SENTINEL-ALICE-7731"
SENTINEL_NUM = 1234567.891


@pytest.fixture(scope="module")
def unit_rows():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)  # public-constant scaling stands in for a declared one
    X = X / np.abs(X).sum(1, keepdims=True)  # rows inside the declared L1 bound
    return X[:400], y[:400], X[400:], y[400:]


def _stopped(seed):
    return PrivateSearchCV(DPLogisticRegression(epsilon=0.05, classes=[0, 1], noise="laplace", max_iter=5),
                           {"C": Real(0.1, 100, log=True)}, sensitive="both", epsilon=1.0, n_iter=4, n_candidates=16,
                           method_params={"selection": "random-stopping"}, random_state=seed)


def test_random_stopping_with_dp_trainers_keeps_k_secret(unit_rows, monkeypatch):
    """Every output is the same across seeds although K (counted by the test, not the search) varies; no fit
    beyond a plan is ever refused inside the objective (the old code charged each fit and swallowed the refusal)."""
    X_tr, y_tr, X_v, y_v = unit_rows
    fits = []
    real_fit = DPLogisticRegression.fit

    def counting_fit(self, X, y):
        fits.append(1)
        return real_fit(self, X, y)

    monkeypatch.setattr(DPLogisticRegression, "fit", counting_fit)
    outputs, ks = set(), set()
    for seed in range(6):
        fits.clear()
        s = _stopped(seed).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        ks.add(len(fits))
        outputs.add(json.dumps([[e.to_dict() for e in s.ledger_], {k: v.to_dict() for k, v in s.privacy_spent_.items()},
                                s.search_time_, s.n_iter_, s.report_.to_dict()["budget"]], sort_keys=True))
    assert len(ks) > 1 and len(outputs) == 1


def test_adversarial_training_rows_change_no_ledger(unit_rows):
    """Neighbouring training sets: one row NaN, with a label outside the declared classes, or of huge norm."""
    X_tr, y_tr, X_v, y_v = unit_rows
    ledgers = []
    for mutate in (None, "nan", "label", "huge"):
        X, y = X_tr.copy(), y_tr.copy().astype(object)
        if mutate == "nan":
            X[0, 0] = np.nan
        elif mutate == "label":
            y[0] = SENTINEL_STR
        elif mutate == "huge":
            X[0] *= 1e300
        s = PrivateSearchCV(DPLogisticRegression(epsilon=0.1, classes=[0, 1], max_iter=5),
                            {"C": Real(0.1, 100, log=True)}, sensitive="both", epsilon=1.0, n_iter=3, n_candidates=8,
                            random_state=0).fit(X, y, X_val=X_v, y_val=y_v)
        ledgers.append(json.dumps([[e.to_dict() for e in s.ledger_],
                                   {k: v.to_dict() for k, v in s.privacy_spent_.items()}], sort_keys=True))
    assert len(set(ledgers)) == 1


def _planted(X, y, where):
    X = X.astype(object)
    y = y.astype(object)
    if where == "X":
        X[1, 2] = SENTINEL_STR
    elif where == "Xnum":
        X = np.asarray(X, dtype=float)
        X[1, 2] = SENTINEL_NUM
    elif where == "y":
        y[1] = SENTINEL_STR
    elif where == "shape":
        X = np.array([SENTINEL_NUM, SENTINEL_NUM + 1])
    return X, y


ESTIMATORS = [DPLogisticRegression(classes=[0, 1]), DPLinearSVC(classes=[0, 1]), DPSVC(classes=[0, 1]),
              DPLogisticRegression(classes=[0, 1], solver="line-search"),
              DPMLPClassifier(classes=[0, 1], n_iter=20, sampling="full"), DPNonConvexClassifier(classes=[0, 1]),
              DPChebyshevRegressor(), SVC(random_state=0)]


@pytest.mark.parametrize("where", ["X", "Xnum", "y", "shape"])
@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__ + ("-ls" if getattr(e, "solver", "")
                                                                              == "line-search" else ""))
def test_no_message_warning_or_log_quotes_a_data_value(unit_rows, est, where, caplog):
    X_tr, y_tr, X_v, y_v = unit_rows
    caplog.set_level(logging.DEBUG, logger="privtune")
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # scikit-learn's own messages about its own inputs are not privtune's to fix, and with
        # sensitive="validation" the training rows are public: only the validation rows must never be quoted
        own = type(est).__module__.startswith("privtune.")
        for role in (("fit", "predict", "search_train") if own else ()) + ("search_val",):
            Xa, ya = _planted(X_tr[:60], y_tr[:60], where)
            try:
                if role == "fit":
                    est.fit(Xa, ya)
                elif role == "predict":
                    est.fit(X_tr[:60], y_tr[:60].astype(float) if isinstance(est, DPChebyshevRegressor)
                            else y_tr[:60]).predict(Xa)
                else:
                    train = (Xa, ya) if role == "search_train" else (X_tr[:60], y_tr[:60])
                    val = (Xa, ya) if role == "search_val" else (X_v[:40], y_v[:40])
                    PrivateSearchCV(est, {"C": Real(0.1, 10, log=True)} if "C" in est.get_params()
                                    else {"epsilon": Real(0.5, 1.0)}, n_iter=2, n_candidates=4, random_state=0,
                                    error_score="lower").fit(*train, X_val=val[0], y_val=val[1])
            except Exception as exc:  # noqa: BLE001 - the message is what is checked
                texts.append(f"{type(exc).__name__}: {exc}")
    texts += [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    blob = "\n".join(texts)
    for needle in (SENTINEL_STR, "1234567.891", "1.234567891e+06", "1234567"):
        assert needle not in blob, blob[:2000]


def test_public_defects_still_get_a_clear_message():
    with pytest.raises(InvalidParameterError, match="X has 3 rows but y has 2"):
        DPLogisticRegression(classes=[0, 1]).fit(np.zeros((3, 2)), [0, 1])


@pytest.mark.parametrize("method", ["random", "noisy-ucb"])
@pytest.mark.parametrize("epsilon", [2000.0, 1e6])
def test_a_huge_epsilon_is_handled_not_an_overflow(unit_rows, method, epsilon):
    """dp-accounting builds exp(epsilon) for a PLD: events above epsilon 500 are bounded without it."""
    X_tr, y_tr, X_v, y_v = unit_rows
    s = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, method=method, epsilon=epsilon, n_iter=3,
                        n_candidates=8, random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert s.privacy_spent_["overall"].epsilon <= epsilon
    DPLogisticRegression(epsilon=epsilon, classes=[0, 1], random_state=0, max_iter=3).fit(X_tr, y_tr)


@pytest.mark.parametrize("est", [DPLogisticRegression(classes=[0, 1]), DPLinearSVC(classes=[0, 1]),
                                 DPSVC(classes=[0, 1], n_components=20)], ids=lambda e: type(e).__name__)
def test_every_margin_classifier_declares_rows_and_runs_as_a_training_sensitive_inner_trainer(unit_rows, est):
    from privtune.base import get_privacy_tags

    tags = get_privacy_tags(est)
    assert tags.covers == "rows" and tags.classes_param == "classes" and not tags.raises_on_rows
    X_tr, y_tr, X_v, y_v = unit_rows
    s = PrivateSearchCV(est.set_params(epsilon=0.1), {"C": Real(0.1, 10, log=True)}, sensitive="both", n_iter=2,
                        n_candidates=4, random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert [e.phase for e in s.training_accountant_.entries] == ["fits"]  # the selected fit is best_estimator_


# ----------------------------------------------------------------------------- one entry never re-types the others
@pytest.mark.parametrize("est", [DPLogisticRegression(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPNonConvexClassifier(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPMLPClassifier(classes=[0, 1], n_iter=10, sampling="full", random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_a_list_with_one_odd_entry_is_read_entry_by_entry(unit_rows, est):
    """numpy turns a whole list into strings for one string: one row would zero every row of a DP fit (a
    string label matches no declared class) or make it refuse (a string cell). Lists are read entry by entry,
    exactly like the object arrays that already were."""
    X_tr, y_tr = unit_rows[0][:120], unit_rows[1][:120]
    y_list, y_obj = y_tr.tolist(), y_tr.astype(object)
    y_list[3] = y_obj[3] = SENTINEL_STR
    from sklearn.base import clone
    a = clone(est).fit(X_tr.tolist(), y_list)
    b = clone(est).fit(X_tr, y_obj)
    clean = clone(est).fit(X_tr, y_tr)
    def coef(m):
        return np.concatenate([np.ravel(c) for c in m.coefs_]) if hasattr(m, "coefs_") else np.ravel(m.coef_)

    np.testing.assert_array_equal(coef(a), coef(b))
    assert np.linalg.norm(coef(a) - coef(clean)) < 0.5 * np.linalg.norm(coef(clean))  # not the zero model
    X_list = X_tr.tolist()
    X_list[5][2] = SENTINEL_STR
    X_nan = X_tr.copy()
    X_nan[5, 2] = np.nan
    np.testing.assert_array_equal(coef(clone(est).fit(X_list, y_tr.tolist())), coef(clone(est).fit(X_nan, y_tr)))


def test_validation_lists_with_one_odd_entry_are_read_entry_by_entry(unit_rows):
    X_tr, y_tr, X_v, y_v = unit_rows

    def released(X_val, y_val):
        s = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, n_iter=3, n_candidates=4,
                            epsilon=1e6, random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
        return s.best_score_

    y_list, y_obj = y_v.tolist(), y_v.astype(object)
    y_list[0] = y_obj[0] = SENTINEL_STR
    clean = released(X_v, y_v)
    assert released(X_v, y_list) == released(X_v, y_obj) > clean - 2 / len(y_v)  # one row, not every row
    X_list, X_obj = X_v.tolist(), X_v.astype(object)
    X_list[0][1] = X_obj[0, 1] = SENTINEL_STR
    assert released(X_list, y_v) == released(X_obj, y_v) > clean - 2 / len(y_v)


def test_chebyshev_targets_that_are_not_numbers_are_mapped_not_refused():
    from privtune.accounting import Accountant, Budget
    X = np.random.default_rng(0).normal(size=(50, 2))
    y = list(X[:, 0])
    y_nan = np.array(y)
    y[3], y_nan[3] = SENTINEL_STR, np.nan
    acc = Accountant(Budget(10.0, 0.0))
    a = DPChebyshevRegressor(epsilon=1.0, accountant=acc, random_state=0).fit(X, y)
    b = DPChebyshevRegressor(epsilon=1.0, random_state=0).fit(X, y_nan)
    assert len(acc.entries) == 1
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("cell", [1j, np.complex128(0.1 + 0.2j), [0.1, 0.2], SENTINEL_STR],
                         ids=["complex", "np-complex", "sequence", "string"])
def test_any_odd_cell_counts_as_nan_in_a_dp_fit_and_as_a_wrong_row_in_validation(unit_rows, cell):
    """Whatever one entry is (a string, a complex number, a nested sequence), a DP fit reads it as NaN -- the same
    model as with a NaN there, charged once -- and the search scores that validation row as wrong; no refusal, no
    warning (each would depend on the row)."""
    from privtune.accounting import Accountant, Budget
    X_tr, y_tr, X_v, y_v = unit_rows
    X_nan = X_tr[:80].copy()
    X_nan[2, 1] = np.nan
    ref = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X_nan, y_tr[:80]).coef_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for table in (X_tr[:80].astype(object), X_tr[:80].tolist()):
            table[2][1] = cell
            acc = Accountant(Budget(5.0, 1e-5))
            got = DPLogisticRegression(classes=[0, 1], accountant=acc, random_state=0).fit(table, y_tr[:80]).coef_
            np.testing.assert_array_equal(got, ref)
            assert len(acc.entries) == 1

    def released(X_val):
        return PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, n_iter=2, n_candidates=4,
                               epsilon=1e6, random_state=0).fit(X_tr, y_tr, X_val=X_val, y_val=y_v).best_score_

    odd = X_v.tolist()
    odd[0][1] = cell
    assert released(X_v) - 1.5 / len(y_v) < released(odd) <= released(X_v)  # one row, at most


# ----------------------------------------------------------------------------- labels numpy cannot compare (audit)
class _NALike:
    """A label like pandas.NA: ``==`` returns itself and ``bool()`` of it raises."""

    __hash__ = None

    def __eq__(self, other):
        return self

    def __ne__(self, other):
        return self

    def __bool__(self):
        raise TypeError("boolean value of NA is ambiguous")


class _BadFloat:
    """An entry whose ``__float__`` raises an exception numpy does not expect."""

    def __float__(self):
        raise ZeroDivisionError(SENTINEL_STR)


def _coef(m):
    return np.concatenate([np.ravel(c) for c in m.coefs_]) if hasattr(m, "coefs_") else np.ravel(m.coef_)


@pytest.mark.parametrize("label", [_NALike(), np.array([1, 2]), 7, SENTINEL_STR],
                         ids=["na-like", "nested-array", "other-class", "string"])
@pytest.mark.parametrize("est", [DPLogisticRegression(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPSVC(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPNonConvexClassifier(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPMLPClassifier(classes=[0, 1], n_iter=10, sampling="full", random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_one_label_outside_the_declared_classes_drops_only_its_row(unit_rows, est, label):
    """Whatever one label is -- one numpy cannot compare (pandas.NA-like), a nested array, another class, a
    string -- the fit is charged once, does not raise or warn, and gives exactly the model of the same data with
    that label replaced by another label outside the declared set (its row contributes nothing). Before the fix
    an NA-like label zeroed every row of a DPMLPClassifier and made DPLogisticRegression / DPNonConvexClassifier
    raise after the charge."""
    from sklearn.base import clone

    from privtune.accounting import Accountant, Budget
    X_tr, y_tr = unit_rows[0][:120], unit_rows[1][:120]
    y_odd = y_tr.astype(object)
    y_odd[3] = label
    y_ref = y_tr.copy()
    y_ref[3] = 5  # outside {0, 1}: the reference for "this row contributes nothing"
    acc = Accountant(Budget(10.0, 1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = clone(est).set_params(accountant=acc).fit(X_tr, y_odd)
    assert len(acc.entries) == 1
    np.testing.assert_array_equal(_coef(got), _coef(clone(est).fit(X_tr, y_ref)))


@pytest.mark.parametrize("est", [DPLogisticRegression(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPNonConvexClassifier(classes=[0, 1], epsilon=5.0, random_state=0),
                                 DPMLPClassifier(classes=[0, 1], n_iter=10, sampling="full", random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_an_entry_whose_float_raises_anything_is_nan(unit_rows, est):
    from sklearn.base import clone

    from privtune.accounting import Accountant, Budget
    X_tr, y_tr = unit_rows[0][:120], unit_rows[1][:120]
    X_odd, X_nan = X_tr.astype(object), X_tr.copy()
    X_odd[4, 2], X_nan[4, 2] = _BadFloat(), np.nan
    acc = Accountant(Budget(10.0, 1e-5))
    got = clone(est).set_params(accountant=acc).fit(X_odd, y_tr)
    assert len(acc.entries) == 1
    np.testing.assert_array_equal(_coef(got), _coef(clone(est).fit(X_nan, y_tr)))


def test_function_level_trainers_read_odd_entries_after_the_charge(unit_rows):
    """dp_second_order and dp_blsgd: a list X with one cell that is an array (numpy cannot shape it) is charged
    and read as NaN, not refused before the charge; an entry whose __float__ raises is NaN, not a raw error."""
    from privtune.accounting import Accountant, Budget
    from privtune.optim import MarginObjective, dp_blsgd, dp_second_order
    X, y = unit_rows[0][:60], np.where(unit_rows[1][:60] == 1, 1.0, -1.0)
    X_nan = X.copy()
    X_nan[1, 0] = np.nan
    for cell in (np.array([0.3]), _BadFloat()):
        X_odd = X.tolist()
        X_odd[1][0] = cell
        acc = Accountant(Budget(10.0, 1e-5))
        a = dp_second_order(X_odd, y, epsilon=1.0, delta=1e-6, max_iter=3, accountant=acc, random_state=0)
        assert len(acc.entries) >= 1
        b = dp_second_order(X_nan, y, epsilon=1.0, delta=1e-6, max_iter=3, random_state=0)
        np.testing.assert_array_equal(a.x, b.x)
        acc = Accountant(Budget(10.0, 1e-5))
        obj = MarginObjective(X_odd, y, data_norm=1.0)
        c = dp_blsgd(obj, np.zeros(X.shape[1]), epsilon=1.0, delta=1e-6, sampling="full", n_iter=3, mode="fixed",
                     accountant=acc, random_state=0)
        assert len(acc.entries) >= 1
        d = dp_blsgd(MarginObjective(X_nan, y, data_norm=1.0), np.zeros(X.shape[1]), epsilon=1.0, delta=1e-6,
                     sampling="full", n_iter=3, mode="fixed", random_state=0)
        np.testing.assert_array_equal(c.x, d.x)


# ----------------------------------------------------------------------------- one table split in two (audit)
def test_an_odd_validation_label_in_a_split_table_leaves_the_training_labels_alone(unit_rows):
    """With validation_size, the labels are read as one list before the split: a string label in one validation
    row made the whole column an object array, scikit-learn refused the (public) training labels, and every fit
    failed (released accuracy 0, or a refit error after the charge). Each part now takes its types from its own
    rows: the release equals that of a neighbour whose row holds the other class's mismatch."""
    X = np.vstack([unit_rows[0], unit_rows[2]])
    y = np.concatenate([unit_rows[1], unit_rows[3]])

    def search():
        return PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, n_iter=3, n_candidates=4,
                               epsilon=1e6, validation_size=0.3, random_state=0)

    probe = search().fit(X, y)
    val_row = int(np.flatnonzero(~np.isin(np.arange(len(y)), _training_rows(probe, X)))[0])
    y_odd = y.tolist()
    y_odd[val_row] = SENTINEL_STR
    y_wrong = y.copy()
    y_wrong[val_row] = 7  # a label no prediction equals: the same one wrong row
    got = search().fit(X, y_odd)
    assert got.best_score_ == search().fit(X, y_wrong).best_score_ > 0.8
    assert got.best_estimator_.classes_.dtype.kind in "iu"  # the training labels kept their own (integer) type


def _training_rows(search, X):
    """Indices of X's rows the refit was trained on (the split is data-independent: found from the fitted SVC)."""
    sv = search.best_estimator_.support_vectors_
    return [i for i in range(X.shape[0]) if any(np.array_equal(X[i], s) for s in sv)]


@pytest.mark.parametrize("method", ["random", "noisy-ucb"])
def test_scoring_validation_rows_never_warns(unit_rows, method):
    """An overflow in the estimator's prediction on one validation row used to reach the user as a RuntimeWarning
    (its presence depends on the row)."""
    from sklearn.linear_model import LogisticRegression
    X_tr, y_tr, X_v, y_v = unit_rows
    X_v = X_v.copy()
    X_v[0] = 1e308
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        PrivateSearchCV(LogisticRegression(max_iter=500), {"C": Real(0.1, 10, log=True)}, n_iter=3,
                        n_candidates=4, epsilon=1.0, method=method, random_state=0).fit(X_tr, y_tr, X_val=X_v,
                                                                                       y_val=y_v)
    assert not [w for w in seen if "overflow" in str(w.message) or issubclass(w.category, RuntimeWarning)]


# ----------------------------------------------------------------------------- clocks (audit)
def test_no_clock_tells_how_long_the_work_on_sensitive_rows_took(unit_rows, tmp_path, monkeypatch, capsys):
    """The study file's `updated` column followed every write (its distance to `created` was proportional to the
    secret number of runs K of random stopping), the report's time stamp was the end of fit, and the progress bar
    showed elapsed time along gp-ucb's raw-score path. Now: `updated` == `created`, the report's stamp is taken
    before any row is read, and no elapsed time is drawn for a secret path."""
    import datetime
    import sqlite3

    import privtune.model_selection._search as search_module
    X_tr, y_tr, X_v, y_v = unit_rows
    real = datetime.datetime

    class Clock(real):  # every call one hour later: any stamp taken after the start would differ
        calls = 0

        @classmethod
        def now(cls, tz=None):
            cls.calls += 1
            return real(2026, 1, 1, tzinfo=tz) + datetime.timedelta(hours=cls.calls)

    class WorkingSVC(SVC):  # the work on the rows moves the clock on
        def fit(self, X, y, **kw):
            Clock.calls += 10
            return super().fit(X, y, **kw)

    monkeypatch.setattr(search_module.datetime, "datetime", Clock)
    path = tmp_path / "s.sqlite"
    s = PrivateSearchCV(WorkingSVC(random_state=0), {"C": Real(0.1, 10, log=True)}, n_iter=3, n_candidates=8,
                        epsilon=1.0, method="gp-ucb", verbose=1, storage=str(path), study_name="t",
                        random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert s.report_.timings["created_utc"] == "2026-01-01T01:00:00+00:00"  # the first clock call: fit's start
    created, updated = sqlite3.connect(path).execute(
        "SELECT created, updated FROM privtune_studies WHERE name = 't'").fetchone()
    assert created == updated
    err = capsys.readouterr().err
    assert "evaluated" in err or "/3" in err
    assert " s)" not in err  # no elapsed time on gp-ucb's progress line


# ----------------------------------------------------------------------------- release methods (audit)
def test_balanced_accuracy_reads_each_validation_label_on_its_own(unit_rows):
    """One validation label numpy cannot compare (pandas.NA-like) made balanced accuracy raise after the charge."""
    X_tr, y_tr, X_v, y_v = unit_rows

    def released(y_val):
        return PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, scoring="balanced_accuracy",
                               min_class_size=20, n_iter=2, n_candidates=4, epsilon=1e6,
                               random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_val).best_score_

    y_odd, y_wrong = y_v.astype(object), y_v.copy()
    y_odd[0], y_wrong[0] = _NALike(), 7
    assert released(y_odd) == released(y_wrong)


def test_method_params_cannot_replace_the_derived_privacy_parameters(unit_rows):
    """method_params={'score_sensitivity': 1e-4} used to give 500x less noise than the report stated."""
    X_tr, y_tr, X_v, y_v = unit_rows
    for key, value in (("score_sensitivity", 1e-4), ("epsilon", 100.0), ("delta", 0.1), ("score_bounds", (0, 9))):
        s = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, method="noisy-ucb", n_iter=2,
                            n_candidates=4, method_params={key: value}, random_state=0)
        with pytest.raises(InvalidParameterError, match="'method_params' must not set"):
            s.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
        assert not hasattr(s, "accountant_")


def test_a_declared_sensitivity_below_a_builtin_rule_is_refused(unit_rows):
    X_tr, y_tr, X_v, y_v = unit_rows
    m = len(y_v)

    def search(value):
        return PrivateSearchCV(SVC(random_state=0), {"C": Real(0.1, 10, log=True)}, score_sensitivity=value,
                               n_iter=2, n_candidates=4, random_state=0)

    with pytest.raises(InvalidParameterError, match="below the sensitivity of scoring='accuracy'"):
        search(0.5 / m).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search(2.0 / m).fit(X_tr, y_tr, X_val=X_v, y_val=y_v).score_sensitivity_ == 2.0 / m  # more is fine


def test_lipschitz_needs_a_score_inside_its_loss_bound(unit_rows):
    """Alg. 3's sensitivity assumes per-row losses in [-loss_bound, 0]: neg_log_loss capped at 10 with loss_bound 1
    gave 8x the declared sensitivity."""
    from privtune.accounting import Accountant, Budget
    X_tr, y_tr, X_v, y_v = unit_rows
    params = {"regularization": "C", "lambda_bounds": (1.0, 1.01), "lipschitz": 1.0, "loss_bound": 1.0}
    acc = Accountant(Budget(1.0, 0.0))
    for scoring, bounds, g in (("neg_log_loss", (-10.0, 0.0), 1.0), ("accuracy", None, 1.0),
                               ("neg_log_loss", (-10.0, 0.0), np.float32(1.0))):  # numpy reals were let through
        with pytest.raises(InvalidParameterError, match=r"per-row losses in \[-loss_bound, 0\]"):
            PrivateSearchCV(SVC(probability=True, random_state=0), {"C": Real(1.0, 1.01)}, method="lipschitz",
                            scoring=scoring, score_bounds=bounds, method_params={**params, "loss_bound": g},
                            n_iter=2, n_candidates=4, accountant=acc, random_state=0).fit(X_tr, y_tr, X_val=X_v,
                                                                                         y_val=y_v)
    assert len(acc.entries) == 0


def test_lipschitz_refuses_a_score_sensitivity_above_loss_bound_over_m(unit_rows):
    """Alg. 3 calibrates to loss_bound/m (a mean of bounded per-row losses): a declared score_sensitivity of 1 (a
    callable whose one row can move the score by the whole range) was silently ignored, 40x too little noise on
    40 validation rows. Declaring exactly loss_bound/m, or nothing, is fine."""
    from privtune.accounting import Accountant, Budget
    X_tr, y_tr, X_v, y_v = unit_rows
    m = len(y_v)

    def worst_row_loss(est, X, y):  # not a mean: the worst row's loss
        return -float(np.max(np.abs(est.predict(X) - y)))

    params = {"regularization": "C", "lambda_bounds": (1.0, 1.01), "lipschitz": 1.0, "loss_bound": 1.0}
    acc = Accountant(Budget(10.0, 0.0))

    def search(sens):
        return PrivateSearchCV(SVC(random_state=0), {"C": Real(1.0, 1.01)}, method="lipschitz",
                               scoring=worst_row_loss, score_bounds=(-1.0, 0.0), score_sensitivity=sens,
                               method_params=params, n_iter=2, n_candidates=2, accountant=acc, random_state=0,
                               refit=False)

    with pytest.raises(InvalidParameterError, match="would add too little noise"):
        search(1.0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert len(acc.entries) == 0
    for sens in (None, 1.0 / m):
        assert search(sens).fit(X_tr, y_tr, X_val=X_v, y_val=y_v).release_.diagnostics["constants"][
            "per_lambda_sensitivity"] == pytest.approx(1.0 / m)


def test_raw_score_paths_refuse_error_score_raise_and_fit_silently(unit_rows):
    """gp-ucb fits the candidates its raw scores point to: whether a failing candidate is reached, or which public
    fits warn, would tell the path."""
    X_tr, y_tr, X_v, y_v = unit_rows
    with pytest.raises(InvalidParameterError, match="error_score='raise' with method='gp-ucb'"):
        PrivateSearchCV(SVC(), {"C": Real(0.1, 10, log=True)}, method="gp-ucb", error_score="raise",
                        n_iter=2, n_candidates=4).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)

    class WarningSVC(SVC):
        def fit(self, X, y, **kw):
            warnings.warn(f"fitted C={self.C}", UserWarning, stacklevel=2)
            return super().fit(X, y, **kw)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        PrivateSearchCV(WarningSVC(random_state=0), {"C": Real(0.1, 10, log=True)}, method="gp-ucb", n_iter=3,
                        n_candidates=8, refit=False, random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert not [w for w in seen if "fitted C=" in str(w.message)]


def test_worker_processes_are_silenced_too(unit_rows, capfd):
    """With n_jobs=2 the public fits run in worker processes, which ignore the caller's warning filters: random
    stopping printed one ConvergenceWarning per run, i.e. its secret K (review finding)."""
    from sklearn.linear_model import LogisticRegression
    X_tr, y_tr, X_v, y_v = unit_rows
    PrivateSearchCV(LogisticRegression(max_iter=1), {"C": Real(0.1, 10, log=True)}, n_iter=4, n_candidates=8,
                    method="random", method_params={"selection": "random-stopping"}, delta=1e-6, n_jobs=2,
                    refit=False, random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "ConvergenceWarning" not in capfd.readouterr().err



@pytest.mark.parametrize("method", ["gp-ucb", "lipschitz"])
def test_raw_score_paths_deliver_their_records_after_the_loop(unit_rows, method):
    """When a callback (or a progress line) arrives would time each step of the raw-score trajectory (the fit and
    scoring of the candidate the raw scores pointed to). Records are held back: the first callback comes after
    the last evaluation of the loop, and a stop request no longer stops anything."""
    X_tr, y_tr, X_v, y_v = unit_rows
    events = []

    class Timed(SVC):
        def predict(self, X):
            events.append("eval")
            return super().predict(X)

        def decision_function(self, X):
            events.append("eval")
            return super().decision_function(X)

    def neg_sigmoid(est, X, y):
        z = est.decision_function(X) * np.where(np.asarray(y) == 1, 1.0, -1.0)
        return -float(np.mean(1 / (1 + np.exp(z))))

    def cb(record):
        events.append("record")
        return True  # would stop after the first iteration if records were live

    extra = (dict(scoring=neg_sigmoid, score_bounds=(-1.0, 0.0),
                  method_params={"regularization": "C", "lambda_bounds": (1.0, 1.01), "lipschitz": 1.0,
                                 "loss_bound": 1.0, "select": False})
             if method == "lipschitz" else {})
    s = PrivateSearchCV(Timed(random_state=0), {"C": Real(1.0, 1.01)}, method=method, n_iter=3, n_candidates=4,
                        callbacks=[cb], random_state=0, refit=False, **extra).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert events.count("record") == 3 and s.n_iter_ == 3
    first = events.index("record")
    assert "eval" not in events[first:] and events[:first].count("eval") >= 1


def _fit_quietly(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, [f"{w.category.__name__}: {w.message}" for w in caught]


def test_one_entry_of_a_column_vector_list_cannot_change_how_the_others_are_read():
    """y = [[0], [1], ...] was ravelled with a warning; one entry replaced by a bare scalar (same value) made the
    list ragged, every other label a list matching no class, and the fit used that one row only (training accuracy
    0.994 -> 0.661 at n = 2000; the search's released score 0.995 -> 0.005). Each entry is now read on its own."""
    rng = np.random.default_rng(0)
    X = rng.normal(0, 0.3, (300, 3))
    y = (X[:, 0] > 0).astype(int)
    col = [[int(v)] for v in y]
    for row in (int(y[7]), [0, 1], [], "x"):  # a bare scalar, a 2-element list, an empty list, a string
        nb = list(col)
        nb[7] = row
        a, wa = _fit_quietly(DPLogisticRegression(classes=[0, 1], random_state=0), X, col)
        b, wb = _fit_quietly(DPLogisticRegression(classes=[0, 1], random_state=0), X, nb)
        ref = list(y)
        ref[7] = int(y[7]) if isinstance(row, int) else 5  # the row's own reading: its label, or outside
        c, _ = _fit_quietly(DPLogisticRegression(classes=[0, 1], random_state=0), X, ref)
        assert wa == wb == [] and np.array_equal(b.coef_, c.coef_)
        assert a.score(X, y) > 0.9 and b.score(X, y) > 0.9
    t = np.clip(0.5 * X[:60, 0] + 0.1, -1, 1)
    tcol = [[float(v)] for v in t]
    tnb = list(tcol)
    tnb[7] = float(t[7])
    r1, _ = _fit_quietly(DPChebyshevRegressor(random_state=0), X[:60], tcol)
    r2, _ = _fit_quietly(DPChebyshevRegressor(random_state=0), X[:60], tnb)
    assert np.array_equal(r1.coef_, r2.coef_)
    X_tr, y_tr = X[:150], y[:150]
    scores = []
    for yv in (col[150:], [int(y[150])] + col[151:]):
        s = PrivateSearchCV(SVC(random_state=0), {"C": Real(0.5, 2.0)}, epsilon=50.0, n_iter=2, n_candidates=2,
                            random_state=0, refit=False).fit(X_tr, y_tr, X_val=X[150:], y_val=yv)
        scores.append(s.best_score_)
    assert scores[0] == scores[1] > 0.8


def test_an_overflowing_cast_of_one_entry_does_not_warn():
    """A long-double row of 1e4000 (the caller's public dtype) made fit print numpy's 'overflow encountered in
    cast'; with noise='laplace' a row of L1 norm beyond float64 printed 'overflow encountered in reduce'. The
    entry becomes inf (then a row of norm 0 after clipping), silently."""
    rng = np.random.default_rng(0)
    X = rng.normal(0, 0.3, (40, 3))
    y = (X[:, 0] > 0).astype(int)
    if np.finfo(np.longdouble).max > 1e4000:  # an 80-bit long double (x86-64)
        XL = X.astype(np.longdouble)
        XL[3, 0] = np.longdouble("1e4000")
        for est in (DPLogisticRegression(classes=[0, 1], random_state=0), DPNonConvexClassifier(classes=[0, 1],
                                                                                                random_state=0)):
            assert _fit_quietly(est, XL, y)[1] == []
        t = np.zeros(40, dtype=np.longdouble)
        t[3] = np.longdouble("1e4000")
        assert _fit_quietly(DPChebyshevRegressor(random_state=0), X, t)[1] == []
    X2 = X.copy()
    X2[3] = [1e308, -1e308, 0.0]
    for est in (DPLogisticRegression(classes=[0, 1], noise="laplace", random_state=0),
                DPLinearSVC(classes=[0, 1], noise="laplace", random_state=0)):
        assert _fit_quietly(est, X2, y)[1] == []


def _files_under(folder):
    import os
    return sum(len(files) for _, _, files in os.walk(folder))


def test_parallel_workers_never_get_the_rows_through_a_temporary_file(tmp_path, monkeypatch):
    """joblib memory-maps arrays over 1 MB to JOBLIB_TEMP_FOLDER (/dev/shm or the disk) for its worker
    processes: a search with n_jobs=2 wrote its sensitive validation rows there. Its mapper now never does."""
    from privtune.model_selection._parallel import make_mapper

    folder = tmp_path / "joblib"
    folder.mkdir()
    monkeypatch.setenv("JOBLIB_TEMP_FOLDER", str(folder))
    big = np.random.default_rng(0).normal(size=(4000, 40))  # 1.28 MB: over joblib's default threshold
    seen = make_mapper(2)(lambda a, path=str(folder): (_files_under(path), float(a.sum())), [big, big])
    assert [n for n, _ in seen] == [0, 0]


def test_parallel_search_ships_object_rows_to_threads_and_secret_counts_stay_in_process(unit_rows, monkeypatch):
    """(1) One validation cell that cannot be pickled (an object array) made a loky n_jobs=2 search raise
    PicklingError where the neighbour ran: object data now goes to threads. (2) Random stopping's secret K and
    lipschitz's final batch were task counts a dask scheduler shows: those methods no longer use the pool, and
    lipschitz's final batch is every candidate (a public count)."""
    import threading

    from privtune.bo.lipschitz import LipschitzRelease
    from privtune.model_selection import _evaluation  # the evaluation stage maps the candidates over workers
    from privtune.space import SearchSpace, candidate_set

    X_tr, y_tr, X_v, y_v = unit_rows
    X_obj = X_v.astype(object)
    X_obj[3, 0] = threading.Lock()  # becomes NaN for the row-isolated scorer; a process pool cannot pickle it

    class Tolerant(SVC):
        def predict(self, X):
            return super().predict(np.asarray([[float(v) if isinstance(v, float) else 0.0 for v in r] for r in X]))

    s = PrivateSearchCV(Tolerant(random_state=0), {"C": Real(0.5, 2.0)}, n_jobs=2, n_iter=2, n_candidates=4,
                        random_state=0, refit=False).fit(X_tr, y_tr, X_val=X_obj, y_val=y_v)
    assert s.best_score_ is not None
    calls = []
    real = _evaluation.make_mapper

    def recording(*args, **kwargs):
        inner = real(*args, **kwargs)
        return lambda fn, items: calls.append(len(items)) or inner(fn, items)

    monkeypatch.setattr(_evaluation, "make_mapper", recording)
    PrivateSearchCV(_stopped(0).estimator, {"C": Real(0.1, 100, log=True)}, sensitive="both", epsilon=1.0,
                    n_iter=4, n_candidates=16, method_params={"selection": "random-stopping"}, n_jobs=2,
                    random_state=0).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    params = {"regularization": "C", "lambda_bounds": (1.0, 1.01), "lipschitz": 1.0, "loss_bound": 1.0}
    # (probability=True: an SVC without predict_proba under neg_log_loss is refused before anything runs, issue 38)
    PrivateSearchCV(SVC(random_state=0, probability=True), {"C": Real(1.0, 1.01)}, method="lipschitz",
                    scoring="neg_log_loss", score_bounds=(-1.0, 0.0), method_params=params, n_jobs=2, n_iter=3,
                    n_candidates=4,
                    random_state=0, refit=False).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert calls == []
    batches = []
    cands = candidate_set(SearchSpace({"C": Real(1.0, 1.01)}), 6, random_state=0)
    LipschitzRelease(epsilon=1.0, n_iter=4, regularization="C", lambda_bounds=(1.0, 1.01), lipschitz=1.0,
                     loss_bound=1.0, n_validation=40).run(
        lambda p: -0.5, cands, random_state=0, mapper=lambda fn, items: batches.append(len(items)) or
        [fn(it) for it in items])
    assert batches == [6]
