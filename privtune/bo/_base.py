"""The base class of the release methods (internal)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from privtune.accounting import Accountant, Budget, PrivacyEvent
from privtune.bo._common import ROLE, ChargedObjective, check_objective
from privtune.bo.journal import Journal
from privtune.bo.release import IterationRecord, Release
from privtune.exceptions import InvalidParameterError
from privtune.mechanisms._grid import MAX_GRID_INDEX
from privtune.space import CandidateSet
from privtune.utils._random import RandomSource, check_random_state
from privtune.utils._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = ["ReleaseMethod", "Callback"]

Callback = Callable[[IterationRecord], Any]


def randomise_on_grid(mech: Any, value: float) -> float:
    """``mech.randomise`` of ``value`` clipped to the range the exact sampler accepts (``|value| / g < 2**51``).

    The clip is a 1-Lipschitz map of the value, so the mechanism's sensitivity
    and guarantee are unchanged; it only removes a refusal that would come
    after the charge and depend on the private value (DESIGN rule 7). Reached
    only when a declared sensitivity is minute against the value's range.
    """
    limit = (MAX_GRID_INDEX - 1.0) * mech.grid_spacing()
    return float(mech.randomise(min(max(float(value), -limit), limit)))


#: Largest magnitude of a declared score bound: far from float overflow in the release arithmetic.
_MAX_SCORE_MAGNITUDE = 1e100


class ReleaseMethod:
    """A private search strategy over a finite candidate set.

    Subclasses implement :meth:`plan` (every privacy event the search will charge,
    computed from public inputs only) and :meth:`_search`.
    """

    name = "base"

    def __init__(self, *, epsilon: float, delta: float, n_iter: int, score_bounds: tuple[float, float]) -> None:
        owner = type(self).__name__
        self.epsilon = check_epsilon(epsilon, owner=owner)
        self.delta = check_delta(delta, owner=owner)
        self.n_iter = check_integer(n_iter, "n_iter", low=1, owner=owner)
        if not (isinstance(score_bounds, (tuple, list)) and len(score_bounds) == 2):
            raise InvalidParameterError(
                f"The 'score_bounds' parameter of {owner} must be a (lower, upper) pair. Got {score_bounds!r}.")
        lo = check_real(score_bounds[0], "score_bounds[0]", owner=owner)
        hi = check_real(score_bounds[1], "score_bounds[1]", low=lo, owner=owner)
        if max(abs(lo), abs(hi)) > _MAX_SCORE_MAGNITUDE:  # scales, midpoints and noise must stay finite: checked
            raise InvalidParameterError(  # here, before any charge, not found to overflow after it
                f"The 'score_bounds' parameter of {owner} must lie within +-{_MAX_SCORE_MAGNITUDE:g} (a score range "
                f"near the float limit overflows the release arithmetic). Got {score_bounds!r}.")
        self.score_bounds = (lo, hi)

    @property
    def half_range(self) -> float:
        return 0.5 * (self.score_bounds[1] - self.score_bounds[0])

    @property
    def mid(self) -> float:
        lo, hi = self.score_bounds
        return lo + 0.5 * (hi - lo)  # no overflow where hi + lo would (bounds near the float limit)

    # -- to implement --------------------------------------------------------------
    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        """Every (event, phase) the search charges, from public inputs only."""
        raise NotImplementedError

    def noise_scales(self, candidates: CandidateSet) -> dict[str, float]:
        """Public noise scales of the releases, in score units (no data needed)."""
        raise NotImplementedError

    def max_evaluations(self, candidates: CandidateSet) -> int | None:
        """The most objective evaluations the search can make, from public inputs only.

        A training-sensitive search pays for this many DP fits up front. ``None``
        means the count is random and covered by the plan's own event (random
        stopping). The default is ``n_iter``.
        """
        return self.n_iter

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant,
                source: RandomSource, public_observations: Sequence[Any],
                callback: Callback | None) -> Release:
        raise NotImplementedError

    def _release_mechanisms(self, candidates: CandidateSet) -> list[tuple[str, Any, float]]:
        """The additive noise mechanisms ``_search`` will build, from public inputs only (to override).

        Each entry is ``(what, mechanism, reach)``: the mechanism as ``_search``
        builds it (its exponential mechanisms are built too, and need no entry),
        and the largest magnitude of the value it randomises (``half_range`` for
        a score centred on the midpoint, 1 for a GP-unit value).
        """
        return []

    def check_release(self, candidates: CandidateSet) -> None:
        """Refuse, before any charge, a configuration whose releases cannot be drawn or would saturate (public).

        Every additive release is drawn on an exact noise grid
        (:mod:`privtune.mechanisms._grid`). At a tiny per-release epsilon no
        grid is fine enough (a Laplace needs about ``epsilon >= 2e-15``, a
        Gaussian a noise multiplier below about ``5e5``): building the mechanism
        after the charge failed, its budget lost. At a huge one the grid is so
        fine that ``2**51`` steps no longer cover the values it randomises: the
        release is clipped to that range (private, but pinned near the centre
        of the score range, whatever the score). Both are functions of the
        public configuration, so they are refused here, before anything is
        charged or evaluated.

        Raises
        ------
        InvalidParameterError
            Naming the release and what to change.
        """
        for what, mech, reach in self._release_mechanisms(candidates):
            g = mech.grid_spacing()  # raises InvalidParameterError when no exact grid exists
            if not (MAX_GRID_INDEX - 1.0) * g >= reach:
                raise InvalidParameterError(
                    f"{type(self).__name__}: the noise of the {what} is so small (scale "
                    f"{getattr(mech, 'scale', getattr(mech, 'sigma', math.nan)):.3g}) that its "
                    f"exact grid (spacing {g:.3g}, at most 2**51 steps) cannot hold the values it randomises (up to "
                    f"{reach:.3g}): the release would be pinned near the centre of the score range whatever the "
                    "score. A grid step is about a thousandth of the sensitivity, and smaller still at a large "
                    "epsilon: declare a larger score sensitivity, or lower epsilon.")

    # -- the protocol --------------------------------------------------------------
    def run(
        self,
        objective: Callable[[Mapping[str, Any]], float],
        candidates: CandidateSet,
        *,
        accountant: Accountant | None = None,
        random_state: Any = None,
        public_observations: Sequence[tuple[int, Any, float]] = (),
        callback: Callback | None = None,
        mapper: Callable[..., list[Any]] | None = None,
        journal: Journal | None = None,
    ) -> Release:
        """Run the private search and return its :class:`~privtune.bo.Release`.

        Parameters
        ----------
        objective : callable
            ``objective(params) -> score`` on the sensitive validation data. Scores
            are clipped to ``score_bounds``; non-finite scores and values that are
            not real numbers count as the lower bound. It is called only after the
            accountant has been charged. **It must not raise**: an exception
            propagates out of ``run`` after the charge, and on a raw-score path
            (``GPUCB``, ``GPUCBExact``, ``Lipschitz``) whether a failing
            candidate is ever evaluated depends on the data, so the failure is a
            release the analysis does not cover. Catch failures inside the
            objective and return a score (``PrivateSearchCV`` does: a failing fit
            scores the lower bound through row isolation).
        candidates : CandidateSet
            The finite candidate set Lambda (public).
        accountant : Accountant or None
            Charged before any evaluation. ``None`` builds one whose budget is
            exactly this method's ``(epsilon, delta)``.
        random_state : None, int, Generator
            ``None``: secure noise. An int makes the run reproducible and the
            release is labelled "seeded (reproducible, not for release)".
        public_observations : sequence of (task, encoded x, score)
            Scores on public tasks (task >= 1) that warm-start the GP at no
            privacy cost (GP methods only).
        callback : callable or None
            Called with each :class:`~privtune.bo.IterationRecord` (releasable
            fields only); returning True stops the search early. On a raw-score
            path (``GPUCB``, ``GPUCBExact``, ``Lipschitz``) it is called live,
            inside the loop, so the *moment* each call arrives times a step of
            the secret trajectory; ``PrivateSearchCV`` therefore holds these
            records back until the loop ends. Do the same with a callback of your
            own (collect, and act after ``run`` returns) when its timing can be
            observed.
        mapper : callable or None
            ``mapper(objective, list_of_params) -> list_of_scores`` used where a
            method evaluates a data-independent batch (``random``, the selection
            stage of ``lipschitz``), e.g. a joblib parallel map. Results must come
            back in order; the noise is drawn afterwards, so they do not depend
            on the mapper.
        journal : Journal or None
            Where charges and releases are journaled; a storage-backed journal
            (:mod:`privtune.storage`) makes the search resumable after a crash
            without re-spending. ``None`` is a fresh in-memory search.

        Raises
        ------
        BudgetExceededError
            Before any evaluation, if the plan does not fit the accountant's budget.
        """
        check_objective(objective)
        if not isinstance(candidates, CandidateSet):
            raise InvalidParameterError("The 'candidates' parameter must be a privtune.space.CandidateSet.")
        if callback is not None and not callable(callback):
            raise InvalidParameterError("The 'callback' parameter must be callable or None.")
        if accountant is None:
            accountant = Accountant(Budget(self.epsilon, self.delta))
        elif not isinstance(accountant, Accountant):
            raise InvalidParameterError("The 'accountant' parameter must be a privtune Accountant or None.")
        source = check_random_state(random_state, owner=type(self).__name__)
        f = ChargedObjective(objective, candidates, *self.score_bounds, mapper=mapper)
        journal = Journal() if journal is None else journal
        if not isinstance(journal, Journal):
            raise InvalidParameterError("The 'journal' parameter must be a privtune.bo.journal.Journal or None.")
        stored = journal.get("release")
        if stored is not None:  # a completed study: return its release, spend and evaluate nothing
            return Release.from_dict(stored)
        self.check_release(candidates)  # public: refused before any charge or evaluation
        self._journal = journal
        try:
            release = self._search(f, candidates, accountant, source, tuple(public_observations), callback)
        finally:
            self._journal = None
        journal.put("release", release.to_dict())
        return release

    def _charge(self, accountant: Accountant, plan: list[tuple[PrivacyEvent, str]]) -> None:
        """Check the whole (unpaid) plan, then charge every event up front, before any access."""
        self._journal.open_plan(accountant, plan)
        for event, phase in plan:
            self._journal.charge(accountant, event, phase, ROLE)

    @staticmethod
    def _record(callback: Callback | None, record: IterationRecord) -> bool:
        """Call the callback; True means stop."""
        return bool(callback(record)) if callback is not None else False

    def _spent(self, accountant: Accountant) -> float:
        return accountant.spent.epsilon

    def _release_score(self, mech: Any, value: float) -> float:
        """``mech`` applied to a score measured from the public midpoint of the score bounds.

        Additive noise is translation-equivariant, so this is the same mechanism.
        Centring keeps the value's index on the exact sampler's grid small
        (``|value - mid| <= half_range`` for a clipped score), so the sampler's
        range check (``|value| / grid < 2**51``) cannot refuse a score whose
        declared bounds lie far from 0 -- a refusal after the charge that would
        depend on the private score (DESIGN rule 7). When the declared
        sensitivity is so small against the range that even ``half_range``
        crosses that line, the centred value is also clipped to the grid's
        range: a 1-Lipschitz map of the score, so the sensitivity (and the
        guarantee) is unchanged and nothing is refused.
        """
        return self.mid + randomise_on_grid(mech, value - self.mid)

    def _to_scores(self, z: float) -> float:
        return self.mid + self.half_range * z

    def _to_gp(self, v: float) -> float:
        return (v - self.mid) / self.half_range

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r}, delta={self.delta!r}, n_iter={self.n_iter!r})"


