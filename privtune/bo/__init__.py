"""Private Bayesian optimisation: Kusner et al.'s GP-UCB loop and five release methods.

==================  ===========================================  ==============  ====================
method              class                                        guarantee       noise shrinks with m
==================  ===========================================  ==============  ====================
``gp-ucb``          :class:`GPUCB` (Kusner Alg. 1)               conditional     no
``gp-ucb-exact``    :class:`GPUCBExact` (Kusner Alg. 2)          conditional     no
``lipschitz``       :class:`LipschitzRelease` (Kusner Alg. 3)    unconditional   partly
``noisy-ucb``       :class:`NoisyUCB` (beyond the paper)         unconditional   yes
``random``          :class:`RandomSearch` (EM / P&S stopping)    unconditional   yes
==================  ===========================================  ==============  ====================

With public validation rows and sensitive training rows
(``PrivateSearchCV(sensitive="training")``) a method's candidate choice is
wrapped in :class:`PostProcessingSelection`: the best candidate and its score
are exact (post-processing of the DP fits), and the validation role spends
nothing.

:func:`kusner_constants` and the other functions of :mod:`privtune.bo.constants`
need only the standard library; the methods and the engine import the GP
engine (torch), which loads on first use of one of them.
"""

from __future__ import annotations

import importlib
from typing import Any

from privtune.bo.constants import (
    beta_t,
    kusner_constants,
    kusner_exact_constants,
    lipschitz_constants,
)
from privtune.bo.release import IterationRecord, Release

__all__ = [
    "GPUCB",
    "GPUCBExact",
    "IterationRecord",
    "LipschitzRelease",
    "METHODS",
    "NoisyUCB",
    "PostProcessingSelection",
    "PrescreenedRandomSearch",
    "RandomSearch",
    "Release",
    "UCBEngine",
    "beta_t",
    "kusner_constants",
    "kusner_exact_constants",
    "lipschitz_constants",
    "make_method",
]

_LAZY = {
    "GPUCB": "privtune.bo.gp_ucb",
    "GPUCBExact": "privtune.bo.gp_ucb_exact",
    "LipschitzRelease": "privtune.bo.lipschitz",
    "NoisyUCB": "privtune.bo.noisy_ucb",
    "PostProcessingSelection": "privtune.bo.post_processing",
    "PrescreenedRandomSearch": "privtune.bo.prescreen",
    "RandomSearch": "privtune.bo.random_search",
    "UCBEngine": "privtune.bo.engine",
}

#: Release-method names (``PrivateSearchCV(method=...)``) and their classes.
METHODS = {
    "gp-ucb": "GPUCB",
    "gp-ucb-exact": "GPUCBExact",
    "lipschitz": "LipschitzRelease",
    "noisy-ucb": "NoisyUCB",
    "prescreen": "PrescreenedRandomSearch",
    "random": "RandomSearch",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'privtune.bo' has no attribute {name!r}")


def make_method(name: str, **params: Any) -> Any:
    """Build a release method by its name (``"gp-ucb"``, ``"noisy-ucb"``, ...)."""
    from privtune.exceptions import InvalidParameterError

    if name not in METHODS:
        raise InvalidParameterError(f"The 'method' parameter must be one of {sorted(METHODS)}. Got {name!r} instead.")
    return __getattr__(METHODS[name])(**params)
