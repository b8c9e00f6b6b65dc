"""Public helpers to test differential privacy claims empirically.

Users can audit their own mechanisms with the same tools privtune's test suite
uses on its own:

* :func:`audit_mechanism` runs a black-box (epsilon, delta) audit on one pair of
  neighbouring inputs and returns an :class:`AuditResult` whose
  ``epsilon_lower_bound`` is a lower confidence bound on the true epsilon;
* :func:`audit_histograms` does the same from outcome counts over a finite,
  known output set;
* :func:`clopper_pearson` and :func:`epsilon_lower_bound_from_counts` are the
  exact binomial bounds behind both;
* :func:`discrete_epsilon` and :func:`hockey_stick_delta` give the exact
  (epsilon, delta) of a mechanism with finitely many outputs, from its output
  probabilities, to compare an audit with the truth.

Passing an audit is not a proof of differential privacy; failing one is strong
evidence of a bug.
"""

from privtune.testing._audit import AuditResult, audit_histograms, audit_mechanism
from privtune.testing._bounds import (
    clopper_pearson,
    discrete_epsilon,
    epsilon_lower_bound_from_counts,
    hockey_stick_delta,
)

__all__ = [
    "AuditResult",
    "audit_mechanism",
    "audit_histograms",
    "clopper_pearson",
    "epsilon_lower_bound_from_counts",
    "discrete_epsilon",
    "hockey_stick_delta",
]
