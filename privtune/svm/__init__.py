"""Differentially private support vector machines with scikit-learn's interface.

* :class:`DPLinearSVC`: linear SVM with a smoothed hinge loss.
* :class:`DPSVC`: RBF-kernel SVM through random Fourier features drawn from
  public randomness, so that ``C`` and ``gamma`` can be tuned on private data.

Both are trained with the accelerated methods of Kuru et al. (2022)
(:mod:`privtune.optim.accelerated`); with more than two classes, on Crammer &
Singer's multiclass hinge smoothed by a softmax, at the cost of one fit.
"""

from privtune.svm._linear import DPLinearSVC
from privtune.svm._rbf import DPSVC

__all__ = ["DPLinearSVC", "DPSVC"]
