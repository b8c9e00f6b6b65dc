"""Differentially private linear models with scikit-learn's interface.

- :class:`DPLogisticRegression`: logistic regression ((epsilon, delta)- or pure
  epsilon-DP; multinomial for more than two classes), trained with the accelerated methods of Kuru et al. (2022)
  (:mod:`privtune.optim.accelerated`).
- :class:`DPChebyshevRegressor`: label-private minimax (L-infinity) regression
  with public features, on the piecewise-affine mechanisms of Han et al.
  (:mod:`privtune.optim.piecewise`).
"""

from privtune.linear_model._chebyshev import DPChebyshevRegressor
from privtune.linear_model._logistic import DPLogisticRegression
from privtune.linear_model._nonconvex import DPNonConvexClassifier

__all__ = ["DPChebyshevRegressor", "DPLogisticRegression", "DPNonConvexClassifier"]
