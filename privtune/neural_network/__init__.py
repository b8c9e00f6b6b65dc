"""Differentially private neural networks with scikit-learn's interface.

- :class:`DPMLPClassifier`: a small multilayer perceptron (torch) trained with
  DP-BLSGD of Chen & Lee (seed 003) in the paper's neural-network mode
  (:func:`privtune.optim.line_search.dp_blsgd`, ``mode="fixed"``).
- :class:`DPSGDClassifier`, :class:`DPSGDRegressor`: a user's ``torch.nn.Module``
  trained with DP-SGD (per-example gradients from Opacus, an optional extra:
  ``pip install "privtune[dpsgd]"``; privtune's Poisson batches, exact discrete
  Gaussian noise and accounting).

Importing this package does not import torch or Opacus; ``fit`` does.
"""

from privtune.neural_network._dpsgd import DPSGDClassifier, DPSGDRegressor
from privtune.neural_network._mlp import DPMLPClassifier

__all__ = ["DPMLPClassifier", "DPSGDClassifier", "DPSGDRegressor"]
