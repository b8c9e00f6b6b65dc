"""DataFrames and targets as users hold them (issue 38): pandas / polars frames reach the estimator as frames,
targets in every pandas dtype, the validation table's structure, per-sample fit parameters and groups.

Every refusal is checked to spend nothing: an Accountant whose ledger stays empty.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from privtune import PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.exceptions import InvalidParameterError
from privtune.space import Categorical, Real

pd = pytest.importorskip("pandas")

SPACE = {"logisticregression__C": Real(0.01, 10.0, log=True)}


def _frame(n=None):
    d = load_breast_cancer(as_frame=True)
    X = d.data.iloc[:, :6].copy()
    X.columns = ["radius", "texture", "perimeter", "area", "smoothness", "compactness"]
    X["site"] = np.where(np.arange(len(X)) % 3 == 0, "north", "south")  # a string column (pandas 3: str)
    y = d.target.copy()
    if n is not None:
        X, y = X.iloc[:n], y.iloc[:n]
    return X, y


def _pipe():
    numeric = ["radius", "texture", "perimeter", "area", "smoothness", "compactness"]
    ct = ColumnTransformer([("num", StandardScaler(), numeric), ("cat", OneHotEncoder(), ["site"])])
    return make_pipeline(ct, LogisticRegression(max_iter=500))


def _split(X, y, n_train=350):
    return X.iloc[:n_train], y.iloc[:n_train], X.iloc[n_train:], y.iloc[n_train:]


# -- the estimator sees frames ------------------------------------------------------------------------------
SEEN = []


class FrameSpy(ClassifierMixin, BaseEstimator):
    """Records the type and columns of every table its fit and predict receive; predicts x0 > median."""

    def __init__(self, k=0):
        self.k = k

    def fit(self, X, y, sample_weight=None):
        SEEN.append(("fit", type(X).__name__, list(getattr(X, "columns", [])), len(X),
                     None if sample_weight is None else np.asarray(sample_weight).copy(),
                     np.asarray(X.iloc[:, 0] if hasattr(X, "iloc") else X[:, 0]).copy()))
        self.classes_ = np.unique(np.asarray(y))
        self.threshold_ = float(np.median(np.asarray(X)[:, 0].astype(float)))
        return self

    def predict(self, X):
        SEEN.append(("predict", type(X).__name__, list(getattr(X, "columns", [])), len(X), None, None))
        return np.where(np.asarray(X)[:, 0].astype(float) > self.threshold_, self.classes_[-1], self.classes_[0])


@pytest.mark.parametrize("method", ["auto", "random", "noisy-ucb"])
@pytest.mark.parametrize("split", ["X_val", "validation_size"])
def test_a_dataframe_reaches_every_fit_and_prediction_as_a_dataframe(method, split):
    """Candidates, prescreen's screening fits, the pre-flight, the refit and the validation scoring all get the
    frame with its column names (it used to be turned into an array by check_array)."""
    X, y = _frame(300)
    X = X.drop(columns="site")
    SEEN.clear()
    search = PrivateSearchCV(FrameSpy(), {"k": Categorical([0, 1, 2, 3])}, method=method, n_iter=2, n_candidates=4,
                             random_state=0, **({"validation_size": 0.3} if split == "validation_size" else {}))
    if split == "X_val":
        X_tr, y_tr, X_v, y_v = _split(X, y, 200)
        search.fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    else:
        search.fit(X, y)
    assert SEEN and {kind for kind, *_ in SEEN} == {"fit", "predict"}
    for kind, cls, columns, *_ in SEEN:
        assert cls == "DataFrame", kind
        assert columns == list(X.columns), kind


def test_a_column_transformer_selecting_columns_by_name_works_and_predict_gives_no_feature_name_warning():
    X, y = _frame()
    X_tr, y_tr, X_v, y_v = _split(X, y)
    acc = Accountant(Budget(1.0, 0.0))
    search = PrivateSearchCV(_pipe(), SPACE, epsilon=1.0, n_iter=4, n_candidates=16, random_state=0,
                             accountant=acc).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search.best_score_ is not None and search.best_score_ > 0.7  # was 0.0: every candidate failed
    assert list(search.feature_names_in_) == list(X.columns)
    assert search.n_features_in_ == X.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "X has feature names, but ... was fitted without feature names"
        pred = search.predict(X_v)
    assert pred.shape == (len(X_v),)
    assert search.score(X_v, y_v) > 0.7


def test_feature_names_in_is_not_set_without_a_refit_or_names():
    X, y = _frame(300)
    X_tr, y_tr, X_v, y_v = _split(X, y, 200)
    search = PrivateSearchCV(_pipe(), SPACE, method="random", n_iter=2, n_candidates=4, random_state=0,
                             refit=False).fit(X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert not hasattr(search, "feature_names_in_")
    num = X_tr.drop(columns="site").to_numpy()
    search = PrivateSearchCV(LogisticRegression(), {"C": Real(0.01, 10.0, log=True)}, method="random", n_iter=2,
                             n_candidates=4, random_state=0).fit(num, y_tr.to_numpy(),
                                                                 X_val=X_v.drop(columns="site").to_numpy(),
                                                                 y_val=y_v.to_numpy())
    assert not hasattr(search, "feature_names_in_") and search.n_features_in_ == num.shape[1]


# -- targets in every pandas dtype --------------------------------------------------------------------------
def _targets(y):
    words = np.where(y.to_numpy() == 1, "benign", "malignant")
    return {
        "str (pandas 3's default)": pd.Series(list(words)),
        "category": pd.Series(words, dtype="category"),
        "Int64": y.astype("Int64"),
        "boolean": y.astype(bool).astype("boolean"),
        "object": pd.Series(words.astype(object), dtype=object),
    }


@pytest.mark.parametrize("kind", ["str (pandas 3's default)", "category", "Int64", "boolean", "object"])
def test_every_pandas_target_dtype_is_accepted(kind, n_jobs=None):
    """pandas' str, category, nullable Int64 / boolean and object targets used to crash with an internal TypeError
    (_ships_by_dtype iterated a Series' single dtype)."""
    X, y = _frame()
    target = _targets(y)[kind]
    target.index = X.index
    X_tr, y_tr, X_v, y_v = _split(X, target)
    search = PrivateSearchCV(_pipe(), SPACE, n_iter=3, n_candidates=8, random_state=0, n_jobs=n_jobs).fit(
        X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert search.best_score_ > 0.7
    assert len(search.best_estimator_.classes_) == 2
    assert set(np.asarray(search.predict(X_v)).tolist()) <= set(np.asarray(search.best_estimator_.classes_).tolist())


@pytest.mark.slow
def test_every_pandas_target_dtype_is_accepted_by_worker_processes():
    for kind in ("str (pandas 3's default)", "category", "Int64", "boolean", "object"):
        test_every_pandas_target_dtype_is_accepted(kind, n_jobs=2)


@pytest.mark.parametrize("kind", ["str (pandas 3's default)", "category", "Int64", "boolean", "object"])
def test_every_pandas_target_dtype_works_with_a_validation_size_split(kind):
    X, y = _frame()
    target = _targets(y)[kind]
    target.index = X.index
    search = PrivateSearchCV(_pipe(), SPACE, n_iter=3, n_candidates=8, validation_size=0.3, random_state=0).fit(
        X, target)
    assert search.best_score_ > 0.7


def test_the_worker_kind_is_judged_from_pandas_dtypes_without_error():
    from privtune.model_selection._search import _ships_by_dtype

    X, y = _frame(20)
    for target in _targets(y).values():
        assert isinstance(_ships_by_dtype(target), bool)
    assert _ships_by_dtype(X)  # numbers and pandas' str
    assert not _ships_by_dtype(X.astype({"site": object}))
    assert not _ships_by_dtype(pd.Series([object()] * 3))


def test_a_one_column_dataframe_target_is_ravelled_with_scikit_learns_warning():
    from sklearn.exceptions import DataConversionWarning

    X, y = _frame(300)
    X_tr, y_tr, X_v, y_v = _split(X, y, 200)
    with pytest.warns(DataConversionWarning, match="column-vector"):
        PrivateSearchCV(_pipe(), SPACE, method="random", n_iter=2, n_candidates=4, random_state=0).fit(
            X_tr, y_tr.to_frame(), X_val=X_v, y_val=y_v)


def test_a_split_types_each_part_of_a_frame_from_its_own_rows():
    """As for arrays: one validation row must not type the public training part (an object column of integers with
    one string, a category listing a validation-only value, float labels made by one NaN)."""
    n, m = 40, 12
    perm = np.random.default_rng(5).permutation(n)
    val = np.sort(perm[:m])
    cells = np.arange(n).astype(object)
    cells[val[0]] = "n/a"
    site = np.array(["a", "b"] * (n // 2), dtype=object)
    site[val[1]] = "only-in-validation"
    X = pd.DataFrame({"num": cells, "site": pd.Series(site, dtype="category")})
    labels = (np.arange(n) % 2).astype(float)
    labels[val[2]] = np.nan
    y = pd.Series(labels)
    X_tr, y_tr, X_v, y_v, tr = PrivateSearchCV._split(X, y, m, np.random.default_rng(5), positions=True)
    assert X_tr["num"].dtype == np.int64 and X_v["num"].dtype == object
    assert "only-in-validation" not in list(X_tr["site"].cat.categories)
    assert y_tr.dtype == np.int64 and y_v.dtype == np.float64
    assert list(tr) == sorted(set(range(n)) - set(val.tolist()))


# -- polars ---------------------------------------------------------------------------------------------------
def test_polars_frames_work_where_scikit_learn_accepts_them():
    pl = pytest.importorskip("polars")
    X, y = _frame()
    P = pl.DataFrame({c: X[c].to_numpy() for c in X.columns})
    Y = pl.Series("diagnosis", np.where(y.to_numpy() == 1, "benign", "malignant"))
    search = PrivateSearchCV(_pipe(), SPACE, n_iter=3, n_candidates=8, random_state=0).fit(
        P[:350], Y[:350], X_val=P[350:], y_val=Y[350:])
    assert search.best_score_ > 0.7
    assert list(search.feature_names_in_) == list(X.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(search.predict(P[350:])) == len(X) - 350
    split = PrivateSearchCV(_pipe(), SPACE, n_iter=3, n_candidates=8, random_state=0, validation_size=0.3).fit(P, Y)
    assert split.best_score_ > 0.7
    reordered = P[350:].select(list(reversed(P.columns)))
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="another order"):
        PrivateSearchCV(_pipe(), SPACE, n_iter=3, n_candidates=8, accountant=acc).fit(
            P[:350], Y[:350], X_val=reordered, y_val=Y[350:])
    assert len(acc.ledger) == 0


# -- the validation table's structure -----------------------------------------------------------------------
@pytest.mark.parametrize("change, pattern", [
    ("reorder", r"another order \(column 0 is 'radius' in X but 'site' in X_val\)"),
    ("drop", r"X_val has 6 features but X has 7\. X_val lacks 'site'"),
    ("add", r"X_val has 8 features but X has 7\. X_val has 'extra', which X lacks"),
    ("rename", r"X_val lacks 'site'; X_val has 'place', which X lacks"),
    ("array", r"X is a pandas DataFrame but X_val is a ndarray without column names"),
])
def test_a_validation_table_of_another_structure_is_refused_before_anything_is_spent(change, pattern):
    """A reordered X_val made every row fail, spent epsilon = 1 and released 0.304."""
    X, y = _frame()
    X_tr, y_tr, X_v, y_v = _split(X, y)
    X_v = {"reorder": lambda f: f[list(reversed(f.columns))],
           "drop": lambda f: f.drop(columns="site"),
           "add": lambda f: f.assign(extra=1.0),
           "rename": lambda f: f.rename(columns={"site": "place"}),
           "array": lambda f: f.to_numpy()}[change](X_v)
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match=pattern) as info:
        PrivateSearchCV(_pipe(), SPACE, n_iter=3, n_candidates=8, random_state=0, accountant=acc).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v)
    assert "Nothing was read or spent" in str(info.value)
    assert len(acc.ledger) == 0


# -- per-sample fit parameters ------------------------------------------------------------------------------
def _weighted_frame(n=240):
    """A frame whose first column is the row's own id: a fit's sample_weight must equal its rows' ids + 1."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"row": np.arange(n, dtype=float), "x": rng.normal(size=n)})
    y = pd.Series((rng.normal(size=n) > 0).astype(int))
    return X, y, np.arange(n, dtype=float) + 1.0


def _check_weights_followed_their_rows():
    fits = [s for s in SEEN if s[0] == "fit"]
    assert fits
    for _, _, _, n, weights, ids in fits:
        assert weights is not None and len(weights) == n
        np.testing.assert_array_equal(weights, ids + 1.0)


@pytest.mark.parametrize("method, kw", [("auto", {"validation_size": 0.3}), ("random", {"validation_size": 0.3}),
                                        ("auto", {}), ("random", {})])
def test_sample_weight_is_sliced_with_its_rows_in_every_fit(method, kw):
    """Before, sample_weight went unsplit to every fit: each screening fit failed and the kept set degraded."""
    X, y, w = _weighted_frame()
    SEEN.clear()
    search = PrivateSearchCV(FrameSpy(), {"k": Categorical([0, 1, 2, 3, 4, 5])}, method=method, n_iter=2,
                             n_candidates=6, random_state=0, **kw)
    if kw:
        search.fit(X, y, sample_weight=w)
    else:
        search.fit(X.iloc[:160], y.iloc[:160], X_val=X.iloc[160:], y_val=y.iloc[160:], sample_weight=w[:160])
    _check_weights_followed_their_rows()


def test_sample_weight_is_sliced_with_the_cv_folds():
    from privtune.linear_model import DPLogisticRegression

    class WeightedDP(DPLogisticRegression):
        def fit(self, X, y, sample_weight=None):
            SEEN.append(("fit", type(X).__name__, [], len(X), np.asarray(sample_weight).copy(),
                         np.asarray(X.iloc[:, 0]).copy()))
            return super().fit(X, y)

    X, y, w = _weighted_frame()
    X = X.assign(row=X["row"] / 1000.0)  # inside the DP estimator's row-norm bound
    SEEN.clear()
    PrivateSearchCV(WeightedDP(classes=[0, 1], epsilon=0.1), {"C": Real(0.1, 10.0, log=True)}, cv=3, epsilon=4.0,
                    sensitive="both", n_iter=2, n_candidates=4, random_state=0).fit(X, y, sample_weight=w)
    fits = [s for s in SEEN if s[0] == "fit"]
    assert len(fits) == 2 * 3 + 1  # n_iter candidates x 3 folds, and the refit
    for *_, weights, ids in fits:
        np.testing.assert_array_equal(weights, np.round(ids * 1000.0) + 1.0)


def test_sample_weight_of_another_length_is_refused_before_anything_is_spent():
    X, y, w = _weighted_frame()
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="sample_weight has 240 entries but X has 160 rows") as info:
        PrivateSearchCV(FrameSpy(), {"k": Categorical([0, 1])}, n_iter=2, n_candidates=2, accountant=acc).fit(
            X.iloc[:160], y.iloc[:160], X_val=X.iloc[160:], y_val=y.iloc[160:], sample_weight=w)
    assert "Nothing was read or spent" in str(info.value) and len(acc.ledger) == 0


def test_a_fit_parameter_the_estimator_does_not_take_is_refused_before_anything_is_spent():
    X, y = _frame()
    X_tr, y_tr, X_v, y_v = _split(X, y)
    acc = Accountant(Budget(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="Pipeline.fit does not accept the sample_weight parameter"):
        PrivateSearchCV(_pipe(), SPACE, n_iter=2, n_candidates=4, accountant=acc).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v, sample_weight=np.ones(len(X_tr)))
    with pytest.raises(InvalidParameterError, match="FrameSpy.fit takes no parameter 'weights'"):
        PrivateSearchCV(FrameSpy(), {"k": Categorical([0, 1])}, n_iter=2, n_candidates=2, accountant=acc).fit(
            X_tr, y_tr, X_val=X_v, y_val=y_v, weights=np.ones(len(X_tr)))
    from privtune.linear_model import DPLogisticRegression

    with pytest.raises(InvalidParameterError, match="DPLogisticRegression.fit takes no parameter 'sample_weight'"):
        PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": Real(0.1, 1.0)}, sensitive="both", n_iter=2,
                        n_candidates=2, accountant=acc).fit(X_tr.drop(columns="site"), y_tr,
                                                            X_val=X_v.drop(columns="site"), y_val=y_v,
                                                            sample_weight=np.ones(len(X_tr)))
    assert len(acc.ledger) == 0
    search = PrivateSearchCV(_pipe(), SPACE, method="random", n_iter=2, n_candidates=4, random_state=0).fit(
        X_tr, y_tr, X_val=X_v, y_val=y_v, logisticregression__sample_weight=np.ones(len(X_tr)))
    assert search.best_score_ > 0.7  # a pipeline's step__param is sliced and passed on


def test_metadata_routing_routes_sample_weight_to_the_estimators_request():
    import sklearn

    X, y, w = _weighted_frame()
    acc = Accountant(Budget(1.0, 0.0))
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(InvalidParameterError, match="sample_weight") as info:  # scikit-learn's own message
            PrivateSearchCV(FrameSpy(), {"k": Categorical([0, 1])}, n_iter=2, n_candidates=2, validation_size=0.3,
                            accountant=acc).fit(X, y, sample_weight=w)
        assert "Nothing was read or spent" in str(info.value) and len(acc.ledger) == 0
        SEEN.clear()
        PrivateSearchCV(FrameSpy().set_fit_request(sample_weight=True), {"k": Categorical([0, 1, 2, 3])},
                        n_iter=2, n_candidates=4, validation_size=0.3, random_state=0).fit(X, y, sample_weight=w)
    _check_weights_followed_their_rows()


# -- groups ---------------------------------------------------------------------------------------------------
def test_groups_make_prescreens_screening_folds_group_folds():
    X, y, _ = _weighted_frame()
    groups = np.arange(160) // 20  # 8 groups of 20 training rows
    SEEN.clear()
    search = PrivateSearchCV(FrameSpy(), {"k": Categorical(list(range(8)))}, n_iter=2, n_candidates=8,
                             random_state=0)
    search.fit(X.iloc[:160], y.iloc[:160], X_val=X.iloc[160:], y_val=y.iloc[160:], groups=groups)
    assert search.method_ == "prescreen"
    part_fits = [s for s in SEEN if s[0] == "fit" and s[3] < 160]  # the screening's fits (others: all 160 rows)
    assert part_fits
    for *_, ids in part_fits:
        seen_groups = groups[ids.astype(int)]
        for g in np.unique(seen_groups):  # a group in a screening fit is there whole
            assert np.sum(seen_groups == g) == np.sum(groups == g)


@pytest.mark.parametrize("kw, pattern", [
    ({"method": "random"}, "applies to method='prescreen''s screening folds only"),
    ({"validation_size": 0.3}, "cannot be used with validation_size"),
    ({}, "groups has 100 entries but X has 160 rows"),
])
def test_groups_where_they_do_not_apply_are_refused_before_anything_is_spent(kw, pattern):
    X, y, _ = _weighted_frame()
    acc = Accountant(Budget(1.0, 0.0))
    search = PrivateSearchCV(FrameSpy(), {"k": Categorical([0, 1])}, n_iter=2, n_candidates=2, accountant=acc, **kw)
    with pytest.raises(InvalidParameterError, match=pattern):
        if "validation_size" in kw:
            search.fit(X, y, groups=np.arange(len(X)) // 20)
        else:
            search.fit(X.iloc[:160], y.iloc[:160], X_val=X.iloc[160:], y_val=y.iloc[160:],
                       groups=np.arange(160 if "method" in kw else 100) // 20)
    assert len(acc.ledger) == 0


def test_groups_with_cv_are_refused_before_anything_is_spent():
    from privtune.linear_model import DPLogisticRegression

    X, y, _ = _weighted_frame()
    acc = Accountant(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="cannot be used with cv"):
        PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": Real(0.1, 1.0)}, cv=3, sensitive="both",
                        n_iter=2, n_candidates=2, accountant=acc).fit(X / 1000, y, groups=np.arange(len(X)) // 20)
    assert len(acc.ledger) == 0
