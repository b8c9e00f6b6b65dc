"""Differentially private neural networks with scikit-learn's interface.

- :class:`DPMLPClassifier`: a small multilayer perceptron (torch) trained with
  DP-BLSGD of Chen & Lee (seed 003) in the paper's neural-network mode
  (:func:`privtune.optim.line_search.dp_blsgd`, ``mode="fixed"``).

Importing this package does not import torch; ``fit`` does.
"""

from privtune.neural_network._mlp import DPMLPClassifier

__all__ = ["DPMLPClassifier"]
