"""Search spaces written for RandomizedSearchCV / GridSearchCV, translated exactly (issue 38)."""

import numpy as np
import pytest
import scipy.stats as st

from privtune.exceptions import InvalidParameterError
from privtune.space import Categorical, Integer, Real, SearchSpace, candidate_set
from privtune.space._translate import as_search_space


def test_scipy_distributions_lists_and_dimensions_translate_to_dimensions():
    space, grid = as_search_space({
        "a": st.uniform(1.0, 2.0), "b": st.loguniform(1e-3, 1e3), "c": st.reciprocal(2, 8), "d": st.randint(2, 5),
        "e": st.randint(1, 5, loc=10), "f": ["x", "y"], "g": (1, 2, 3), "h": np.array([0.5, 1.5]), "i": Real(0, 1),
        "j": range(3), "k": st.randint(4, 5)})
    assert grid is None
    expected = {"a": Real(1.0, 3.0), "b": Real(1e-3, 1e3, log=True), "c": Real(2.0, 8.0, log=True),
                "d": Integer(2, 4), "e": Integer(11, 14), "f": Categorical(["x", "y"]),
                "g": Categorical([1, 2, 3]), "h": Categorical([0.5, 1.5]), "i": Real(0, 1),
                "j": Categorical([0, 1, 2]), "k": Categorical([4])}
    assert dict(space.items()) == expected
    assert type(space["h"].choices[0]) is float  # numpy scalars become Python values (the estimator gets floats)


@pytest.mark.parametrize("dist", [st.uniform(-2.0, 5.0), st.loguniform(1e-4, 10.0), st.randint(3, 9)])
def test_candidates_follow_the_distribution_randomized_search_would_draw_from(dist):
    """Each translation is exact: privtune's candidates (a scrambled Sobol design over the encoding) are spread as
    scipy's draws are. Kolmogorov-Smirnov at alpha = 0.001 against the distribution's own cdf (512 candidates;
    Sobol points are closer to their law than i.i.d. draws, so the test is conservative)."""
    space, _ = as_search_space({"p": dist})
    values = np.array([c["p"] for c in candidate_set(space, 512, random_state=0).params], dtype=float)
    if dist.dist.name == "randint":  # the de-duplicated set is exactly the support; Integer's bins are equal
        lo, hi = dist.support()
        assert sorted(values.astype(int).tolist()) == list(range(int(lo), int(hi) + 1))
        codes = space["p"].encode_array(np.arange(int(lo), int(hi) + 1))
        assert np.allclose(np.diff(codes), 1 / (hi - lo + 1))
    else:
        assert st.kstest(values, dist.cdf).pvalue > 1e-3


def test_a_list_of_dicts_is_grid_search_cvs_param_grid():
    dicts = [{"kernel": ["linear"], "C": [1, 10]}, {"kernel": ["rbf"], "C": [1, 10], "gamma": [1e-3, 1e-4]}]
    space, grid = as_search_space(dicts, defaults={"kernel": "rbf", "C": 1.0, "gamma": "scale"})
    from sklearn.model_selection import ParameterGrid
    sk = list(ParameterGrid(dicts))
    assert len(grid) == len(sk) == 6
    for point in sk:  # every point of scikit-learn's grid, the left-out key at the estimator's own value
        full = {"gamma": "scale"} | point
        assert any(all(p[k] == v for k, v in full.items()) for p in grid)
    assert space["gamma"] == Categorical(["scale", 1e-3, 1e-4])
    assert as_search_space([{"C": [1, 2]}, {"C": [2, 3]}])[1] == [{"C": 1}, {"C": 2}, {"C": 3}]  # no duplicates


@pytest.mark.parametrize("space,needle", [
    ({"C": st.norm()}, "'C' scipy.stats.norm, which has no exact translation"),
    ({"C": st.expon()}, "'C' scipy.stats.expon"),
    ({"C": st.loguniform(1, 10, loc=1)}, "shifted or scaled"),
    ({"C": 1.0}, "To search a single value write [1.0]"),
    ({"kernel": "rbf"}, "write ['rbf']"),
    ({"C": {"low": 1}}, "'C' a value of type builtins.dict"),
    ({"C": []}, "'C' an empty list"),
    ({"C": [1, 1.0]}, "duplicates"),
    ({1: [1, 2]}, "non-empty str"),
    ("C", "Got a value of type builtins.str"),
    ([], "Got an empty list"),
    ([{"C": st.uniform(0, 1)}], "every value must be a list of choices"),
    ([{"C": [1]}, {"gamma": [1]}], "leaves out 'gamma'"),
    ({"n": st.randint(0, 2**60)}, "gives 'n' scipy.stats.randint"),
])
def test_anything_else_is_refused_naming_the_key_its_type_and_the_accepted_forms(space, needle):
    with pytest.raises(InvalidParameterError) as err:
        as_search_space(space)
    assert needle in str(err.value)


def test_a_search_space_passes_through():
    s = SearchSpace({"C": Real(1, 2)})
    assert as_search_space(s) == (s, None)
