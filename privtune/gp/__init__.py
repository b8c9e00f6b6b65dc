"""The GP engine of private Bayesian optimisation (Kusner et al. 2015, Assumption 1).

Importing this subpackage imports torch and gpytorch; :mod:`privtune` itself
never imports it.

- :class:`InputKernel` (k2), :class:`TaskKernel` (k1) and
  :class:`MultiTaskKernel` (k1 ⊗ k2): declared, fixed kernels.
- :class:`ScoreScale`: the data-independent map from declared score bounds to
  the GP's standardised scale.
- :class:`GPPosterior`: closed-form posterior of the private task over a finite
  candidate set Λ with incremental Cholesky updates.
- :func:`gamma_T`: greedy maximum information gain and its (1 - 1/e) upper bound.
- :func:`fit_public_hyperparameters`: kernel hyperparameters by marginal
  likelihood on **public** tasks only.
- :func:`estimate_task_correlation`: Kusner et al.'s Section 6 procedure for
  choosing the declared k1(V, V') on **public** data (Figure 1).

Nothing in this subpackage is ever fitted on private scores.
"""

from __future__ import annotations

from privtune.gp._information_gain import InformationGain, gamma_T
from privtune.gp._kernels import InputKernel, MultiTaskKernel, TaskKernel
from privtune.gp._posterior import GPPosterior
from privtune.gp._public_fit import PublicHyperparameters, fit_public_hyperparameters
from privtune.gp._scaling import ScoreScale
from privtune.gp._task_correlation import TaskCorrelationCurve, estimate_task_correlation

__all__ = [
    "GPPosterior",
    "InformationGain",
    "InputKernel",
    "MultiTaskKernel",
    "PublicHyperparameters",
    "ScoreScale",
    "TaskCorrelationCurve",
    "TaskKernel",
    "estimate_task_correlation",
    "fit_public_hyperparameters",
    "gamma_T",
]
