"""Subsampled tuning (Koskela & Kulkarni 2023): random stopping on a secret subset of the training rows, then one fit.

With sensitive training rows and public validation rows (``sensitive="training"``)
and random stopping, ``method_params={"subsample": q}`` runs the whole tuning
phase -- Papernot & Steinke's randomly stopped runs, each a DP fit -- on a
uniformly random subset of ``m = floor(q n)`` of the ``n`` training rows, drawn
from the search's noise source and never shown, and then fits the released
model once on all ``n`` rows with the chosen hyperparameters.

Accounting (replace-one, ``n`` public): the tuning phase is the
:class:`~privtune.accounting.RepeatAndSelectEvent` of the fits *at m rows*,
amplified by sampling without replacement with the general theorem that holds
for any mechanism (:class:`~privtune.accounting.SubsampledEvent`; Wang, Balle &
Kasiviswanathan 2019, Thm. 9), composed with the final fit at ``n`` rows. This
is the structure of Koskela & Kulkarni's analysis (an RDP bound of the tuning
phase amplified by subsampling, composed with the final training); privtune
evaluates it with those general theorems on its own curves (their paper's
text beyond its abstract was not available to us, so no formula of theirs is
copied, and none is claimed to be reproduced).

Extrapolation. The chosen hyperparameters are carried to the final fit
unchanged. Koskela & Kulkarni extrapolate the values chosen on the subset to
the full data; privtune measured the rule DP-SGD's accounting suggests (keep
the tuning run's sampling rate and number of steps, hence its noise
multiplier: ``batch_size`` times ``n / m`` on the full rows, ``lr`` and
``epochs`` unchanged) against carrying the values unchanged, with an exact
selection on the subset so that only the rule differs
(``benchmarks/studies/subsample_extrapolation.py``, results in
``benchmarks/results/subsample_extrapolation.md``): on 703 and 1 960
training rows, q = 0.1 and 0.25, per-fit epsilon 1 and 3, the rescaled batch
tested 0.9 to 9.1 points worse in every cell, 4.4 on average. So no rule is
applied: for privtune's estimators every hyperparameter is stated per row or
per step independently of ``n`` (a regularisation strength of a mean loss, a
learning rate, an expected batch size in rows, a number of epochs), and each
fit is calibrated to the estimator's per-fit ``epsilon`` at its own number of
rows. Their paper's own rule could not be read (see above), so this is not a
claim about it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from privtune.accounting import PrivacyEvent, SubsampledEvent
from privtune.exceptions import InvalidParameterError
from privtune.utils._validation import check_real

#: The method_params key of subsampled tuning.
KEY = "subsample"


def subsample_fraction(search: Any, stopping: bool) -> float | None:
    """The checked ``method_params["subsample"]`` or None; refused where subsampled tuning does not apply (public).

    Raises
    ------
    InvalidParameterError
        Outside ``sensitive="training"`` with one split and random stopping, or a fraction outside (0, 1).
    """
    params = dict(search.method_params or {})  # a Mapping: _validate_params checked it first
    if KEY not in params:
        return None
    q = check_real(params[KEY], KEY, low=0.0, high=1.0, closed="neither", owner="PrivateSearchCV method_params")
    if search.sensitive != "training" or search.cv is not None or not stopping:
        raise InvalidParameterError(
            f"method_params['subsample']={q!r} (subsampled tuning, Koskela & Kulkarni 2023) runs random stopping "
            "on a secret subset of sensitive training rows and scores the runs on public validation rows: it needs "
            "sensitive='training', no cv, and random stopping (method='auto', or method='random' with "
            f"method_params['selection']='random-stopping'). Got sensitive={search.sensitive!r}, cv={search.cv!r}, "
            f"method={search.method!r}. Nothing was read or spent.")
    return q


def tuning_rows(q: float, n_train: int) -> int:
    """``m = floor(q n)``, the size of the secret tuning subset (public); at least 2 rows, at most ``n - 1``.

    Raises
    ------
    InvalidParameterError
        If the fraction leaves fewer than 2 rows.
    """
    m = int(math.floor(q * n_train))
    if m < 2:
        raise InvalidParameterError(
            f"method_params['subsample']={q!r} of {n_train} training rows leaves {m} row(s) to tune on; at least 2 "
            "are needed. Raise the fraction. Nothing was read or spent.")
    return min(m, n_train - 1)


def check_relation(one_fit: PrivacyEvent) -> None:
    """Subsampled tuning draws a fixed-size subset, analysed under replace-one (public)."""
    if one_fit.relation != "replace_one":
        raise InvalidParameterError(
            "method_params['subsample'] draws a fixed-size subset of the training rows, an amplification analysed "
            f"under the replace-one relation; the estimator declares its fits under {one_fit.relation!r}. Use the "
            "estimator's relation='replace_one' (privtune's default). Nothing was read or spent.")


def tuning_event(selection: Any, tuning_fit: PrivacyEvent, n_train: int, m: int) -> SubsampledEvent:
    """The tuning phase's event: random stopping over fits at ``m`` rows, amplified by the secret subset (public).

    ``selection`` is the random-stopping method (its ``selection_event`` gives the law of the number of runs).
    """
    runs = selection.selection_event(tuning_fit, label="best of a secret number of DP fits on the tuning subset "
                                                       "(Papernot & Steinke 2022)")
    runs = replace(runs, relation=tuning_fit.relation)
    return SubsampledEvent(event=runs, dataset_size=int(n_train), sample_size=int(m), relation="replace_one",
                           label=f"tuning on a secret subset of {m} of {n_train} training rows "
                                 "(Koskela & Kulkarni 2023; Wang, Balle & Kasiviswanathan 2019, Thm. 9)")


def draw_subset(source: Any, n: int, m: int) -> np.ndarray:
    """A uniformly random ``m``-subset of ``range(n)`` from ``source`` (secure unless seeded), sorted.

    A partial Fisher-Yates shuffle: position ``i`` takes a uniform draw among the ``n - i`` positions not yet
    taken, from the source's exact integer sampler. Reads no data; its indices are never shown.
    """
    perm = np.arange(n)
    draws = source.integers_below(np.arange(n, n - m, -1, dtype=np.int64))
    for i, j in enumerate(np.asarray(draws, dtype=np.int64)):
        k = i + int(j)
        perm[i], perm[k] = perm[k], perm[i]
    return np.sort(perm[:m])
