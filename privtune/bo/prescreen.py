r"""``prescreen``: screen candidates on the public training rows, then select privately among the best.

privtune's extension (not in Kusner et al.). When only the validation rows are
sensitive, the training rows are public, and anything computed from them alone
is free: ``PrivateSearchCV`` scores a data-independent subset of the candidate
set by k-fold cross-validation *on the training rows only*, keeps the ``keep``
best (``n_iter`` by default), and this method then spends the whole budget as
``random`` does -- one exponential-mechanism selection among the kept
candidates on the sensitive validation rows and a Laplace release of the
winner's score.

Privacy: the kept set is a function of public data (the training rows, the
declared space, the seeds), so the guarantee is ``random``'s, unconditional
pure epsilon-DP (replace-one of a validation row), with the same two events.
It is refused when the training rows are sensitive (the screening would read
them without privacy) and with cross-validation (``cv=``), where training and
validation rows are the same.

What it buys: the structure of the search space (how good each region is on the
training data) is used for free, so the private selection runs among strong
candidates; measured in ``benchmarks/prescreen_utility.py``.
"""

from __future__ import annotations

from typing import Any

from privtune.bo.random_search import RandomSearch
from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_integer

__all__ = ["PrescreenedRandomSearch"]


class PrescreenedRandomSearch(RandomSearch):
    """``random``'s private selection over candidates screened on public training rows.

    Parameters
    ----------
    epsilon, delta, n_iter, score_sensitivity, score_bounds, selection_share
        As :class:`~privtune.bo.RandomSearch` (exponential selection only).
    screen_size : int or None, default=None
        How many candidates (a data-independent random subset of the
        candidate set) are scored on the training rows; ``None``:
        ``max(64, 4 * n_iter)``, at most the candidate set.
    screen_cv : int, default=3
        Folds of the cross-validation on the training rows.
    keep : int or None, default=None
        How many of the best-screened candidates the private selection runs
        over; ``None``: ``n_iter`` (then every kept candidate is scored on the
        validation rows).

    Notes
    -----
    **Privacy.** As ``random``: an ``ExponentialEvent`` (phase ``"selection"``)
    and a ``LaplaceEvent`` (phase ``"score_release"``), unconditional. The
    screening reads only public training rows and charges nothing.
    """

    name = "prescreen"

    def __init__(self, *, epsilon: float, n_iter: int, score_sensitivity: float, delta: float = 0.0,
                 score_bounds: tuple[float, float] = (0.0, 1.0), selection_share: float = 0.5,
                 screen_size: int | None = None, screen_cv: int = 3, keep: int | None = None) -> None:
        super().__init__(epsilon=epsilon, delta=delta, n_iter=n_iter, score_sensitivity=score_sensitivity,
                         score_bounds=score_bounds, selection="exponential", selection_share=selection_share)
        owner = type(self).__name__
        self.screen_size = None if screen_size is None else check_integer(screen_size, "screen_size", low=1,
                                                                          owner=owner)
        self.screen_cv = check_integer(screen_cv, "screen_cv", low=2, high=100, owner=owner)
        self.keep = None if keep is None else check_integer(keep, "keep", low=1, owner=owner)
        if self.keep is not None and self.keep < self.n_iter:
            raise InvalidParameterError(
                f"The 'keep' parameter of {owner} must be >= n_iter={self.n_iter} (the selection scores n_iter of "
                f"the kept candidates). Got {keep!r} instead.")
        self.screen_info: dict[str, Any] = {}

    def sizes(self, n_candidates: int) -> tuple[int, int]:
        """``(screened, kept)`` for a candidate set of ``n_candidates`` points (public)."""
        screened = min(n_candidates, self.screen_size if self.screen_size is not None else max(64, 4 * self.n_iter))
        kept = min(screened, self.keep if self.keep is not None else self.n_iter)
        return screened, kept

    def _search(self, f, candidates, accountant, source, public_observations, callback):  # noqa: ANN001
        release = super()._search(f, candidates, accountant, source, public_observations, callback)
        from dataclasses import replace

        return replace(release, diagnostics={**release.diagnostics, "selection": "exponential after prescreen",
                                             "prescreen": dict(self.screen_info)})
