r"""``noisy-ucb``: GP-UCB on privatised observations (beyond the paper; its Section 8 future work).

Every score the loop observes goes through the Gaussian mechanism at the
scorer's declared sensitivity (e.g. ``1/m`` for accuracy on m validation rows
under replace-one), so the whole trajectory is a post-processing of private
releases and the guarantee is **unconditional** -- no GP assumption. GP-UCB is
Alg. 1's loop with the observation noise now the mechanism's (its variance is
added to the GP's noise), lambda~ = argmax mu_T (post-processing), and v~ is one
fresh Gaussian release of lambda~'s score.

Calibration. A composition of Gaussian mechanisms with noise multipliers
``nm_i`` is exactly a Gaussian mechanism with ``1 / nm**2 = sum_i 1 / nm_i**2``.
So privtune calibrates one Gaussian to the whole (epsilon, delta) budget
(Balle & Wang's analytic calibration, on a target epsilon reduced by a relative
``1e-3`` to absorb the accountant's pessimistic PLD discretisation), and splits
its precision: a share ``observation_share`` evenly over the T observations, the
rest to the final release. The accountant checks the whole plan (PLD) before
the first evaluation; each observation's event is then spent right before that
evaluation.

A search stopped early. A callback may stop the loop after k < T observations
(it sees the released observations, so the stop is data-dependent). The whole
plan stays charged: when the loop stops, the T - k observations that will not
run are charged as planned (phase ``"observations_not_run"``, the same events,
before the final release), so the ledger, the release's ``spent``,
``PrivateSearchCV.privacy_spent_`` and the report all state the plan's total.
That total is the proven bound: the stopped run is an adaptive composition in
which each planned slot holds a mechanism dominated by the planned one (the
slots after the stop hold a constant, the last slot the final release of
whichever candidate was chosen), which the plan's fixed sequence of events
bounds. The charged prefix alone (k observations and the final release) would be
an odometer reading: with a stop chosen from the outputs it is not a proven
(epsilon, delta) of what was released (Rogers et al. 2016: composition with
adaptively chosen privacy parameters needs a filter). A study stopped this
way and resumed charges the same total; one stopped by a previous privtune
release, which charged the final release right after the stop, gets the rest
charged after it.

Unlike Alg. 1, the noise on each observation shrinks as the validation set
grows (the sensitivity is 1/m), which is why this method is the one to use when
the validation set is large.

The GP here is only a model for choosing the next candidate and lambda~: each
observation is the score clipped to the declared bounds plus the mechanism's
Gaussian noise, so the GP's Gaussian noise is real, but the clipped, bounded
score is no draw of the prior (which leaves the bounds with probability
2 Phi(-1) ~ 0.32 at each lambda). A wrong model costs utility only: the privacy
of every release is the Gaussian mechanism's, whatever the GP.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from privtune.accounting import Accountant, GaussianEvent, PrivacyEvent, compose_events
from privtune.bo._base import Callback
from privtune.bo._common import ROLE, ChargedObjective
from privtune.bo._gp_method import GPMethod
from privtune.bo.release import IterationRecord, Release
from privtune.exceptions import LedgerError
from privtune.gp import MultiTaskKernel
from privtune.mechanisms import Gaussian, calibrate_analytic_gaussian
from privtune.space import CandidateSet
from privtune.utils._random import RandomSource
from privtune.utils._validation import check_real

__all__ = ["NoisyUCB"]

_CALIBRATION_MARGIN = 1e-3

#: The phase of the planned observations a callback's stop left unrun (charged at the stop, as planned).
NOT_RUN = "observations_not_run"


class NoisyUCB(GPMethod):
    """GP-UCB whose every observation is released through the Gaussian mechanism.

    Parameters
    ----------
    epsilon : float in (0, inf)
    delta : float in (0, 1)
        Total budget of the search (all observations plus the final release).
    n_iter : int
        T, the number of noisy observations.
    score_sensitivity : float in (0, inf)
        Declared sensitivity of one score under replace-one (``(upper - lower) / m``
        for a mean of per-row scores in [lower, upper] over m validation rows).
    score_bounds : (float, float), default=(0.0, 1.0)
    kernel : MultiTaskKernel or None
        Declared kernel (its ``task_correlation`` is not used: the guarantee does
        not rest on the GP).
    model_noise_std : float in [0, inf), default=0.0
        Extra GP observation noise (GP units) for model misspecification, added
        to the mechanism's noise variance.
    observation_share : float in (0, 1), default=0.8
        Share of the Gaussian precision spent on the T observations.

    Notes
    -----
    **Privacy.** Unconditional (epsilon, delta)-DP under replace-one for the
    validation data. Charges T ``GaussianEvent``s (phase ``"observations"``) and one
    (phase ``"score_release"``), each before its evaluation, after checking the
    whole plan. A callback that stops the loop after k < T observations does not
    lower the charge: the T - k events not run are charged at the stop (phase
    ``"observations_not_run"``), as the plan's total is the proven bound of a
    data-dependent stop and the charged prefix is not (see the module
    docstring). The trajectory, the noisy scores and anything computed from them
    (posterior, lambda~) are post-processing and safe to show.
    """

    name = "noisy-ucb"
    guarantee = "unconditional"

    def __init__(self, *, epsilon: float, delta: float, n_iter: int, score_sensitivity: float,
                 score_bounds: tuple[float, float] = (0.0, 1.0), kernel: MultiTaskKernel | None = None,
                 model_noise_std: float = 0.0, observation_share: float = 0.8) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_bounds=score_bounds, kernel=kernel)
        owner = type(self).__name__
        self.score_sensitivity = check_real(score_sensitivity, "score_sensitivity", low=0.0, owner=owner)
        self.model_noise_std = check_real(model_noise_std, "model_noise_std", low=0.0, closed="left", owner=owner)
        self.observation_share = check_real(observation_share, "observation_share", low=0.0, high=1.0, owner=owner)
        if self.delta == 0:
            from privtune.exceptions import InvalidParameterError

            raise InvalidParameterError(f"The 'delta' parameter of {owner} must be in (0, 1) for the Gaussian "
                                        "mechanism. Got 0.0.")

    def noise_multipliers(self) -> tuple[float, float]:
        """(per-observation, final-release) noise multipliers of the plan."""
        total = calibrate_analytic_gaussian(epsilon=self.epsilon * (1 - _CALIBRATION_MARGIN), delta=self.delta)
        obs = total * math.sqrt(self.n_iter / self.observation_share)
        final = total / math.sqrt(1.0 - self.observation_share)
        return obs, final

    def noise_scales(self, candidates: CandidateSet) -> dict[str, float]:
        obs, final = self.noise_multipliers()
        h = 1.0 + 2.0**-10
        return {"observation_noise_std": obs * self.score_sensitivity * h,
                "score_noise_std": final * self.score_sensitivity * h}

    def _release_mechanisms(self, candidates: CandidateSet) -> list[tuple[str, Any, float]]:
        nm_obs, nm_final = self.noise_multipliers()
        return [(what, Gaussian.from_noise_multiplier(nm, sensitivity=self.score_sensitivity, random_state=0),
                 self.half_range) for what, nm in (("observations", nm_obs), ("score release", nm_final))]

    def max_evaluations(self, candidates: CandidateSet) -> int:
        """``n_iter`` observations and at most one more for the final fresh release."""
        return self.n_iter + 1

    def plan(self, candidates: CandidateSet) -> list[tuple[PrivacyEvent, str]]:
        obs, final = self.noise_multipliers()
        return ([(GaussianEvent(noise_multiplier=obs, label="noisy observation"), "observations")] * self.n_iter
                + [(GaussianEvent(noise_multiplier=final, label="score of the selected candidate"),
                    "score_release")])

    def _stopped_plan(self, plan: list[tuple[PrivacyEvent, str]], stopped: int, journal: Any,
                      accountant: Accountant) -> list[tuple[PrivacyEvent, str]]:
        """The plan of a run stopped after ``stopped`` observations: the same events, the ones not run relabelled.

        The T - stopped observation events that will not run keep their place
        (before the final release) under the phase ``"observations_not_run"``;
        a study stopped by a previous privtune release, whose ledger holds the
        final release right after the last observation, gets them after it.
        """
        unrun = [(event, NOT_RUN) for event, _ in plan[stopped:-1]]
        paid = journal.paid_prefix(accountant)
        if len(paid) > stopped and paid[stopped].phase == "score_release":  # the previous release's layout
            return plan[:stopped] + plan[-1:] + unrun
        return plan[:stopped] + unrun + plan[-1:]

    def _search(self, f: ChargedObjective, candidates: CandidateSet, accountant: Accountant, source: RandomSource,
                public_observations: Sequence[Any], callback: Callback | None) -> Release:
        plan = self.plan(candidates)
        journal = self._journal
        # A study a callback stopped at iteration k (the stop is a released fact, stored before any later charge)
        # resumes the plan it charged: k observations, the T - k not run, then the final release (a study stopped
        # by a previous privtune release charged the final release right after the stop: the rest follows it).
        stopped = next((t for t in range(1, self.n_iter + 1) if journal.get(f"stopped:{t}")), None)
        opened = plan if stopped is None else self._stopped_plan(plan, stopped, journal, accountant)
        journal.open_plan(accountant, opened)  # the whole (unpaid) plan is checked before any access
        nm_obs, nm_final = self.noise_multipliers()
        obs_mech = Gaussian.from_noise_multiplier(nm_obs, sensitivity=self.score_sensitivity, random_state=source)
        noise_var = (obs_mech.sigma / self.half_range) ** 2 + self.model_noise_std**2
        engine = self._engine(candidates, noise_var, self.delta, public_observations)
        history: list[IterationRecord] = []
        charged: list[PrivacyEvent] = []
        raw: dict[int, float] = {}  # private; used only for the final fresh release
        for t in range(1, self.n_iter + 1):
            i = engine.ask()
            event, phase = opened[t - 1]
            journal.charge(accountant, event, phase, ROLE)
            charged.append(event)
            stored = journal.get(f"observation:{t}")
            if stored is not None:  # a resumed study: this observation was already released
                if stored["index"] != i:
                    raise LedgerError("The stored observations do not match this search (candidate set or kernel "
                                      "changed since the study started).")
                noisy = float(stored["released_score"])
            else:
                f.pay(1)
                v = f(i)
                raw[i] = v
                noisy = self._release_score(obs_mech, v)
                journal.put(f"observation:{t}", {"index": i, "released_score": noisy})
            engine.tell(i, noisy)
            rec = IterationRecord(iteration=t, params=candidates[i], released_score=noisy,
                                  noise_std=obs_mech.sigma, epsilon_spent=self._spent(accountant))
            history.append(rec)
            if journal.get(f"stopped:{t}") or self._record(callback, rec):
                journal.put(f"stopped:{t}", True)
                if stopped is None:
                    opened = self._stopped_plan(plan, t, journal, accountant)
                break
        index = int(engine.mean().argmax())  # post-processing of released observations
        # The rest of the plan, in order: after a stop, the observations not run (charged as planned: the plan's
        # total, not the prefix, bounds a run stopped on released values), and the final release, before its access.
        for event, phase in opened[len(charged):]:
            journal.charge(accountant, event, phase, ROLE)
            charged.append(event)
        if index in raw:
            v = raw[index]
        else:
            f.pay(1)
            v = f(index)
        final_mech = Gaussian.from_noise_multiplier(nm_final, sensitivity=self.score_sensitivity,
                                                    random_state=source)
        score = self._release_score(final_mech, v)
        post = engine.posterior
        return Release(
            method=self.name, params=candidates[index], index=index, score=score, events=tuple(charged),
            spent=compose_events(charged, delta=self.delta), guarantee="unconditional",
            noise={"observation_noise_std": obs_mech.sigma, "score_noise_std": final_mech.sigma,
                   "observation_noise_multiplier": nm_obs, "score_noise_multiplier": nm_final},
            utility_bounds={},
            diagnostics={"posterior_mean_at_selection": float(post.mean_scores[index]),
                         "posterior_std_at_selection": float(post.std_scores[index]),
                         "n_candidates": len(candidates)},
            history=tuple(history), n_iter=engine.t, seeded=source.seeded,
        )
