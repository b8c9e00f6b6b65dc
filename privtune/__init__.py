"""privtune: differentially private hyperparameter tuning for scikit-learn estimators.

Importing :mod:`privtune` is light: it does not import torch, gpytorch or
botorch; those load only when a Bayesian-optimisation engine is built.
"""

from privtune._version import __version__
from privtune.exceptions import (
    BudgetExceededError,
    InvalidParameterError,
    PrivacyLeakWarning,
    PrivtuneError,
)

__all__ = [
    "__version__",
    "PrivateSearchCV",
    "BudgetExceededError",
    "InvalidParameterError",
    "PrivacyLeakWarning",
    "PrivtuneError",
]


def __getattr__(name: str):
    # Lazy: `import privtune` stays light (no scikit-learn search machinery, no torch).
    if name == "PrivateSearchCV":
        from privtune.model_selection import PrivateSearchCV

        return PrivateSearchCV
    raise AttributeError(f"module 'privtune' has no attribute {name!r}")
