"""Shared by the accelerated-solver audits: the exact integer noise of every step of a plan, drawn as the loop does."""

from __future__ import annotations

from typing import Any


def step_integer_noise(plan: Any, k: int) -> list:
    """The integer noise of each step for ``k`` runs at once, drawn per distinct (mechanism kind, grid exponent).

    The real loop's ``PredrawnNoise`` draws ``(steps, 1)`` per distinct grid; drawing ``(steps, k)`` at once gives
    each run the law of the loop's draws. Returns one ``(k,)`` integer array per step, in step order.
    """
    grids = [m._grid(1) for m in plan.mechs]
    ints: list = [None] * plan.t_used
    groups: dict = {}
    for t, (m, (kexp, _)) in enumerate(zip(plan.mechs, grids, strict=True)):
        groups.setdefault((type(m), kexp), []).append(t)
    for (_, kexp), steps in groups.items():
        block = plan.mechs[steps[0]]._integer_noise(kexp, (len(steps), k))
        for j, t in enumerate(steps):
            ints[t] = block[j]
    return ints
