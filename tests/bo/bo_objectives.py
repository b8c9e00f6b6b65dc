"""Deterministic test objectives for the release methods."""

import math


def bump(p):
    return 0.5 + 0.4 * math.exp(-((p["x"] - 0.3) ** 2 + (p["y"] - 0.7) ** 2) / 0.05)
