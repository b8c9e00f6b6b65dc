import math

import pytest

from privtune.space import Real, SearchSpace, candidate_set


@pytest.fixture(scope="module")
def cands2d():
    space = SearchSpace({"x": Real(0.0, 1.0), "y": Real(0.0, 1.0)})
    return candidate_set(space, 128, random_state=0)


def bump(p):
    return 0.5 + 0.4 * math.exp(-((p["x"] - 0.3) ** 2 + (p["y"] - 0.7) ** 2) / 0.05)
