"""The worst-case replace-one pair of the line-search audits (shared by the Laplace and Gaussian SVT tests).

Importable from the test modules of this folder (pytest puts a test's folder on ``sys.path``).
"""

from __future__ import annotations

import math

import numpy as np


class TableObjective:
    """One parameter; every row's loss is ``at_w0[i]`` at w = 0 and ``elsewhere[i]`` at any other point."""

    n_params = 1

    def __init__(self, at_w0, elsewhere):
        self.at_w0 = np.asarray(at_w0, dtype=float)
        self.elsewhere = np.asarray(elsewhere, dtype=float)
        self.n_samples = self.at_w0.size

    def per_example_losses(self, w, idx):
        return (self.at_w0 if float(w[0]) == 0.0 else self.elsewhere)[idx]

    def per_example_gradients(self, w, idx):
        return np.zeros((len(idx), 1))


def table_pair(base: float, *, n_rows: int, c_obj: float):
    """(D, D'): every candidate's slack at ``base - Delta`` on D and ``base`` on D' (value units, ``Delta = 2 C / n``).

    Row 0 is the replaced row: on D its loss is 0 at w and ``c_obj`` at every candidate (slack contribution
    ``-C/n``), on D' the reverse; the other rows make up the rest of ``base`` (loss at w above the candidates'
    for a positive contribution, below for a negative one).
    """
    unit = c_obj / n_rows  # one row's largest contribution
    a, b = np.zeros(n_rows), np.zeros(n_rows)
    rest = base - unit
    k = int(math.floor(abs(rest) / unit))
    assert k < n_rows - 1, "placement out of reach of the table"
    frac = abs(rest) / unit - k
    rows = np.zeros(n_rows - 1)
    rows[:k] = 1.0
    rows[k] = frac
    if rest >= 0:
        a[1:], b[1:] = rows * c_obj, 0.0
    else:
        a[1:], b[1:] = 0.0, rows * c_obj
    d_a, d_b = a.copy(), b.copy()
    d_a[0], d_b[0] = 0.0, c_obj
    p_a, p_b = a.copy(), b.copy()
    p_a[0], p_b[0] = c_obj, 0.0
    return TableObjective(d_a, d_b), TableObjective(p_a, p_b)
