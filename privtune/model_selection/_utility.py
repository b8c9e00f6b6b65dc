"""Plain-words checks of a privacy plan's noise against the score range (public quantities only).

A configuration can be valid and still release next to nothing: a selection
whose probabilities hardly depend on the scores is a random pick, and a
released score whose noise spans the whole score range says nothing. These
checks read only the plan's noise scales (from ε, δ, the sensitivity, |Λ|)
and the declared score bounds, so they can run -- and warn -- before any data
is read (``PrivateSearchCV.fit``, ``privacy_plan()["warnings"]``, ``privtune
budget``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["SELECTION_GAP", "SELECTION_MIN_ODDS", "NOISE_SHARE", "utility_warnings", "score_noise_verdict"]

#: A candidate better by this share of the score range ...
SELECTION_GAP = 0.05
#: ... should be at least this many times as likely to be selected, or the selection is close to a random pick.
SELECTION_MIN_ODDS = 2.0
#: A release whose noise standard deviation is this share of the score range or more says almost nothing.
NOISE_SHARE = 0.25


def utility_warnings(noise: Mapping[str, float], bounds: tuple[float, float]) -> list[str]:
    """Warnings (plain sentences) for the plan's noise scales in score units against ``bounds``.

    Parameters
    ----------
    noise : mapping
        ``method.noise_scales(...)``: ``selection_em_weight_per_score_unit``,
        ``observation_noise_std``, ``score_noise_std`` where the method has them.
    bounds : (float, float)
        The declared score bounds.

    Returns
    -------
    list of str
        Empty when every release carries information at this budget.
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return []
    out = []
    weight = noise.get("selection_em_weight_per_score_unit")
    if weight is not None:
        odds = math.exp(min(float(weight) * SELECTION_GAP * span, 700.0))
        if odds < SELECTION_MIN_ODDS:
            out.append(
                f"the selection is close to a random pick at this budget: a candidate better by "
                f"{SELECTION_GAP:.0%} of the score range is at most {odds:.3g} times as likely to be chosen as "
                "one that is not. Raise epsilon, enlarge the validation set, or shrink the search space.")
    obs = noise.get("observation_noise_std")
    if obs is not None and float(obs) >= NOISE_SHARE * span:
        out.append(
            f"each released observation's noise standard deviation ({float(obs):.3g}) is "
            f"{float(obs) / span:.2g} times the score range: the search learns little from them; method='random' "
            "spends the whole budget on the selection instead.")
    verdict = score_noise_verdict(noise.get("score_noise_std"), (lo, hi))
    if verdict is not None:
        out.append(verdict)
    return out


def score_noise_verdict(score_noise_std: float | None, bounds: tuple[float, float]) -> str | None:
    """The plain-words verdict when the released score's noise sd is ``NOISE_SHARE`` of the score range or more.

    Shared by the plan's warnings and the report's headline (public quantities only).
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    span = hi - lo
    if score_noise_std is None or not (math.isfinite(span) and span > 0):
        return None
    sd = float(score_noise_std)
    if sd < NOISE_SHARE * span:
        return None
    return (f"the released score's noise standard deviation ({sd:.3g}) is {sd / span:.2g} times the score range "
            f"[{lo:.4g}, {hi:.4g}]: the released score carries almost no information at this budget. Raise "
            "epsilon, enlarge the validation set, or release the hyperparameters only.")
