"""Public structure decides refusals, never a sensitive row: the pipeline probe, column names, dtypes (issue 38).

Found by an independent review of issue 38's commits; each test failed before its fix. (The review's r2 / roc_auc
pairs are in test_declared_scores.py.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from privtune import InvalidParameterError, PrivateSearchCV
from privtune.accounting import Accountant, Budget
from privtune.linear_model import DPLogisticRegression
from privtune.preprocessing import DPStandardScaler
from privtune.space import Real


def _outcome(search, *args, **kw):
    """'ran' or the refusal's type: what an observer of fit learns (before or after any charge)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            search.fit(*args, **kw)
        except InvalidParameterError as exc:
            return f"refused: {type(exc).__name__}"
    return "ran"


# -- 1. privacy: a refusal before the charge that one sensitive TRAINING row decides ------------------------------
def _split_pipeline_search(acc):
    return PrivateSearchCV(
        make_pipeline(Normalizer(), DPLogisticRegression(epsilon=0.5, classes=[0, 1])),
        {"dplogisticregression__C": Real(0.1, 10.0, log=True)}, sensitive="both", epsilon=2.0, n_iter=1,
        n_candidates=2, method="random", random_state=0, validation_size=0.3, accountant=acc)


def test_split_training_part_dtypes_do_not_decide_the_pipeline_probe():
    """sensitive='both' + validation_size + a Pipeline: the training part of the split is re-typed from its own rows
    (_config._split / _own_types), and check_candidate_plans builds the public probe (public_probe) from those
    dtypes. An object column of numbers becomes float64 unless a training row holds a non-number ('n/a'): then it
    stays object, the probe gets NaN there, Normalizer refuses NaN, and the search is refused before its charge.
    The neighbour (that row a number) runs. The refusal is a release about one sensitive training row.

    (Row 1 is a training row of the split drawn by random_state=0; rows 1 and 2 were checked to be.)"""
    rng = np.random.default_rng(0)
    n = 200
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n).astype(object)})
    y = (X["a"] > 0).astype(int).to_numpy()
    neighbour = X.copy()
    neighbour.iat[1, 1] = "n/a"  # replace-one of a training row: one cell of it
    assert _outcome(_split_pipeline_search(Accountant(Budget(2.0, 1e-6))), X, y) == \
        _outcome(_split_pipeline_search(Accountant(Budget(2.0, 1e-6))), neighbour, y)


# -- 2. bugs: failures that public structure shows, found only after the charge -----------------------------------
def test_mixed_type_column_names_are_refused_before_the_training_charge():
    """A DataFrame whose column names mix int and str (public structure): scikit-learn's validate_data raises
    TypeError in every DP fit. Since frames now reach the estimator as frames, the search charges the whole plan,
    every fit fails, and the refit raises CandidateFitError: the budget is spent on a failure public information
    shows. It must be refused before any charge."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(200, 2))
    y = (A[:, 0] > 0).astype(int)
    X = pd.DataFrame(A, columns=[0, "b"])
    acc = Accountant(Budget(2.0, 1e-6))
    search = PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), {"C": Real(0.1, 10.0, log=True)},
                             sensitive="both", epsilon=2.0, n_iter=2, n_candidates=4, method="random",
                             random_state=0, accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InvalidParameterError):
            search.fit(X, y, X_val=X, y_val=y)
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("X", [
    np.array([[1.0 + 1j, 2.0], [3.0, 4.0]]),  # the array's own dtype: public
    pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], columns=[0, "b"]),  # column names: public
], ids=["complex-ndarray", "mixed-column-names"])
def test_dp_standard_scaler_refuses_public_defects_before_its_charge(X):
    """DPStandardScaler.fit charges, then _numeric_table raises InvalidParameterError on a defect of X's public
    structure (its own dtype, its column names): the epsilon is spent on nothing. Its docstring promises that a
    public defect of X is refused with nothing spent."""
    acc = Accountant(Budget(10.0, 1e-5))
    with pytest.raises(InvalidParameterError):
        DPStandardScaler(bounds=(0.0, 10.0), accountant=acc, random_state=0).fit(X)
    assert len(acc.ledger) == 0


def test_polars_frame_with_a_frozen_column_transformer_by_name_is_accepted_like_pandas():
    """With sensitive training rows, public_probe turns a polars frame into a numpy row of zeros (no column
    names), so a FrozenEstimator(ColumnTransformer) that selects columns by name is refused, while the same
    pandas frame runs; the docs say polars frames are taken as users hold them."""
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(0)
    A = rng.normal(size=(200, 2))
    y = (A[:, 0] > 0).astype(int)
    ct = ColumnTransformer([("s", StandardScaler(), ["a"])], remainder="passthrough").fit(
        pd.DataFrame({"a": A[:, 0], "b": A[:, 1]}))
    X = pl.DataFrame({"a": A[:, 0], "b": A[:, 1]})
    search = PrivateSearchCV(make_pipeline(FrozenEstimator(ct), DPLogisticRegression(epsilon=0.5, classes=[0, 1])),
                             {"dplogisticregression__C": Real(0.1, 10.0, log=True)}, sensitive="both", epsilon=2.0,
                             n_iter=1, n_candidates=2, method="random", random_state=0)
    assert _outcome(search, X, y, X_val=X, y_val=y) == "ran"


def test_a_complex_cell_in_a_split_training_row_does_not_make_its_part_a_complex_column():
    """The split types each pandas part from its own rows: an object column whose one training cell is complex
    became complex128 there, and the DP estimator's check of public defects then refused every fit after the
    charge, for that neighbour only. Such a column stays object (the cell becomes NaN like any non-number)."""
    from privtune.model_selection._splitting import _own_types

    part = pd.DataFrame({"a": [1.0, 2.0], "b": np.array([1.0, 2 + 3j], dtype=object)})
    assert _own_types(part)["b"].dtype == object
    rng = np.random.default_rng(0)
    n = 200
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n).astype(object)})
    y = (X["a"] > 0).astype(int).to_numpy()
    neighbour = X.copy()
    neighbour.iat[1, 1] = 2 + 3j  # replace-one of a training row of the split (row 1: see the test above)

    def search():
        return PrivateSearchCV(DPLogisticRegression(epsilon=0.5, classes=[0, 1]), {"C": Real(0.1, 10.0, log=True)},
                               sensitive="both", epsilon=2.0, n_iter=1, n_candidates=2, method="random",
                               random_state=0, validation_size=0.3, accountant=Accountant(Budget(2.0, 1e-6)))

    for data in (X, neighbour):  # both run: a refit that fails raises CandidateFitError
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert hasattr(search().fit(data, y), "best_estimator_")
