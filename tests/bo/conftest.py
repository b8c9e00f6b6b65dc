import pytest

from privtune.space import Real, SearchSpace, candidate_set


@pytest.fixture(scope="module")
def cands2d():
    space = SearchSpace({"x": Real(0.0, 1.0), "y": Real(0.0, 1.0)})
    return candidate_set(space, 128, random_state=0)
