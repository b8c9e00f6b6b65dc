"""Which seed each fit of a search gets, so that a seeded search is exactly reproducible (internal).

A search draws its own noise from its ``random_state``; the estimators it fits
draw theirs from *their* ``random_state``. A search seeded with an int, over an
estimator left at ``random_state=None``, would otherwise fit every candidate
with fresh, unrepeatable randomness: a DP trainer's noise, a forest's
bootstrap. The search's result, labelled "seeded (reproducible, not for
release)", would then not be reproducible. So every ``random_state``
parameter (nested ones included, ``step__random_state``) that the user left at
``None`` gets a seed derived from the search's stored seeds and the fit's
identity: its role (a candidate fit, the refit, a screening fit), the
candidate's hyperparameters, the fold and, for a candidate run more than once
in this process (random stopping), the run's number -- never for the raw-score
methods (``gp-ucb``, ``gp-ucb-exact``, ``lipschitz``), whose visits to a
candidate follow the raw scores: there every fit of a candidate is run 0's. The
seed never depends on
the order in which workers finish. Parameters the user set are never changed,
and the derived ones are put back to ``None`` once the fit is done, so that a
returned model (or a clone of it fitted later) carries no seed the user did not
choose.

When the training rows are sensitive and the search is unseeded, nothing is
derived: each DP fit draws its noise from the secure source, and the search
refuses an estimator whose own ``random_state`` is set (its noise could be
removed by anyone holding that seed, under a release labelled "secure").
When the training rows are public, fits are seeded from the stored seeds even
in an unseeded search: their randomness protects no one, and a resumed study
then rebuilds the same fits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from privtune.model_selection._inputs import _params_key

__all__ = ["CANDIDATE", "REFIT", "SCREEN", "FitSeeder", "explicit_random_states", "keeps_random_states",
           "random_state_names", "unset_random_states"]

#: The roles a fit plays; part of its seed's key.
CANDIDATE, REFIT, SCREEN = 1, 2, 3


def random_state_names(estimator: Any) -> list[str]:
    """The estimator's ``random_state`` parameters, nested ones included, in sorted order."""
    return sorted(k for k in estimator.get_params(deep=True) if k == "random_state" or k.endswith("__random_state"))


def explicit_random_states(estimator: Any, space_names: Any = ()) -> list[str]:
    """The ``random_state`` parameters set to something other than ``None``, or searched over (public)."""
    params = estimator.get_params(deep=True)
    out = [k for k in random_state_names(estimator) if params[k] is not None]
    out += [k for k in space_names if (k == "random_state" or k.endswith("__random_state")) and k not in out]
    return out


def unset_random_states(estimator: Any) -> list[str]:
    """The estimator's ``random_state`` parameters left at ``None`` (nested ones included), in sorted order."""
    current = estimator.get_params(deep=True)
    return sorted(k for k, v in current.items() if (k == "random_state" or k.endswith("__random_state")) and v is None)


_LEAF_TYPES = (bool, int, float, str, np.number, type(None))


def keeps_random_states(base_params: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether setting ``params`` on an estimator whose deep parameters are ``base_params`` leaves its
    ``random_state`` parameters as they are: every key is an existing parameter other than a ``random_state``, and
    both its old and its new value are plain values (no estimator, step list or other container that could add or
    remove nested parameters). Then :func:`unset_random_states` of the estimator is unchanged."""
    for k, v in params.items():
        if (k not in base_params or k == "random_state" or k.endswith("__random_state")
                or not isinstance(v, _LEAF_TYPES) or not isinstance(base_params[k], _LEAF_TYPES)):
            return False
    return True


def _digest(params: Mapping[str, Any]) -> int:
    """A stable 63-bit name of one candidate's hyperparameters (not Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha256(_params_key(params).encode()).digest()[:8], "little") >> 1


class FitSeeder:
    """Derives the ``random_state`` of each fit from a search's stored seeds.

    Parameters
    ----------
    seeds : sequence of int
        The search's stored seeds (public when the training rows are; from a
        seeded source otherwise).
    active : bool
        False leaves every estimator as it is (an unseeded search over
        sensitive training rows: its DP fits draw secure noise).
    """

    def __init__(self, seeds: Any, *, active: bool) -> None:
        self._entropy = [int(s) for s in seeds]
        self.active = bool(active)

    def seed(self, estimator: Any, role: int, params: Mapping[str, Any], fold: int = 0, run: int = 0, *,
             unset: list[str] | None = None) -> list[str]:
        """Set every ``random_state`` left at ``None`` to a derived int; returns the names set.

        Hand the names to :meth:`unseed` once the fit is done. ``unset``: those
        names, sorted, when the caller already knows them
        (:func:`unset_random_states` of an estimator of the same structure,
        :func:`keeps_random_states`); the estimator's parameters are then not
        read (a deep ``get_params`` of a pipeline costs about as much as
        fitting a small SVC).
        """
        if not self.active:
            return []
        if unset is None:
            unset = unset_random_states(estimator)
        if unset:
            seq = np.random.SeedSequence(self._entropy, spawn_key=(role, _digest(params), int(fold), int(run)))
            values = seq.generate_state(len(unset), dtype=np.uint32)
            estimator.set_params(**{k: int(v) for k, v in zip(unset, values, strict=True)})
        return unset

    @staticmethod
    def unseed(estimator: Any, names: list[str]) -> None:
        """Put the parameters :meth:`seed` set back to ``None`` (the fitted state is unchanged).

        A fitted model handed back to the user (``best_estimator_``) must not
        carry a derived seed: a clone of it fitted later on sensitive rows would
        otherwise draw reproducible noise from a seed the user never chose.
        """
        if names:
            estimator.set_params(**dict.fromkeys(names))
