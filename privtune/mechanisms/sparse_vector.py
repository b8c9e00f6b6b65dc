r"""The sparse vector technique (AboveThreshold), with exact grid noise.

:class:`SparseVector` answers a stream of queries ``q_1, q_2, ...`` with
"below" until the first query that looks above a public threshold ``T``, and
releases only that query's index (Dwork & Roth 2014, Alg. 1, as specified in
seed 003's spec, Lemma 5 and P8):

1. draw the noisy threshold ``T_hat = T + Lap(2 Delta / epsilon)`` **once** per
   run;
2. for each query draw fresh ``nu_i ~ Lap(4 Delta / epsilon)`` and answer "above"
   iff ``q_i + nu_i >= T_hat``;
3. halt at the first "above".

The whole run is ``(epsilon, 0)``-DP however many queries are answered "below".

Exact noise. As in :mod:`privtune.mechanisms.laplace`, both noises are discrete
Laplace variables on a grid ``g`` drawn with integer arithmetic: with headroom
``eta = 2**-10`` the threshold noise has scale ``2 Delta (1 + eta) / epsilon =
g 2**k`` and the query noise twice that, where ``k >= 10`` is the smallest exponent
with ``2 (Delta / g + 2) <= epsilon 2**k`` (checked exactly). Queries and the
threshold are rounded to the grid; a rounded query moves by at most
``S = Delta / g + 2`` steps between neighbouring data sets (half a step per
rounding plus a float error below a quarter step; a query beyond
``|q / g| < 2**51`` is clipped to it, a 1-Lipschitz map, and a threshold beyond
it is refused), and Dwork & Roth's proof (Thm. 3.23) goes through verbatim on the
integers, because its changes of variables are then integer shifts of at most
``S`` (threshold) and ``2 S`` (query) and the discrete Laplace pmf changes by at
most ``exp(|c| / t)`` under a shift by ``c``: the run is
``(S / 2**k + 2 S / 2**(k+1))``-DP, which is at most ``epsilon``. The
comparison is between exact integers, so no floating-point effect can leak.

References
----------
.. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
   Privacy", Foundations and Trends in TCS, 2014, Sec. 3.6 (AboveThreshold).
.. [LSL17] M. Lyu, D. Su and N. Li, "Understanding the Sparse Vector Technique
   for Differential Privacy", PVLDB 2017.
.. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020 (exact discrete Laplace sampling).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from privtune.accounting.events import SparseVectorEvent
from privtune.exceptions import InvalidParameterError, SessionClosedError
from privtune.mechanisms._samplers import (
    GRID_HEADROOM,
    _Frozen,
    discrete_laplace,
    laplace_grid,
    round_to_grid,
)
from privtune.utils import check_epsilon, check_real, check_sensitivity
from privtune.utils._random import check_random_state

__all__ = ["SparseVector", "SparseVectorSession"]


class SparseVector(_Frozen):
    r"""AboveThreshold: the index of the first query above a public threshold, privately.

    Parameters
    ----------
    epsilon : float in (0, inf)
        Privacy parameter of one whole run (one :meth:`run` or one
        :meth:`start` session).
    sensitivity : float in (0, inf)
        Declared sensitivity of **each** query: the largest change of ``q_i``
        when one record is replaced. A public bound.
    threshold : float in (-inf, inf)
        The public threshold ``T``. It must not be chosen by looking at the
        data.
    random_state : None, int, numpy.random.Generator or RandomSource, default=None
        ``None`` draws from the operating system's CSPRNG; an int or Generator
        makes runs reproducible and is **not for release**. Resolved once, at
        construction.

    Attributes
    ----------
    epsilon, sensitivity, threshold : float
    seeded : bool
        True when the noise is reproducible from a seed (not for release).

    Raises
    ------
    InvalidParameterError
        If a parameter is outside its domain.

    Notes
    -----
    **Privacy.** One run is ``(epsilon, 0)``-DP under the neighbouring relation
    the sensitivity was declared for (replace-one by default), however many
    queries are answered "below", and whether or not any query is answered
    "above" (a run that ends without "above" costs the full epsilon). Queries may
    be chosen adaptively (each may depend on the earlier "below" answers).
    Public: epsilon, the sensitivity, the threshold. Released: the index of the
    first "above" answer (or that there was none) and nothing else; the noisy
    threshold and the noisy query values are never exposed. Charge
    :meth:`privacy_event`, ``SparseVectorEvent(epsilon)``, once per run, before
    it. A session that has answered "above" refuses further queries; a new run
    needs a new session and a new charge. The implementation follows seed 003's
    spec (Lemma 5 and P8): threshold noise drawn once per run, fresh noise per
    query.

    References
    ----------
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
       Privacy", 2014, Sec. 3.6.
    .. [LSL17] M. Lyu, D. Su and N. Li, "Understanding the Sparse Vector
       Technique for Differential Privacy", PVLDB 2017.

    Examples
    --------
    >>> from privtune.mechanisms import SparseVector
    >>> svt = SparseVector(epsilon=1.0, sensitivity=1.0, threshold=10.0, random_state=0)
    >>> svt.run([-100.0, -100.0, 100.0, -100.0])
    2
    """

    __slots__ = ("_epsilon", "_sensitivity", "_threshold", "_source", "_k", "_g",
                 "_threshold_index")

    def __init__(self, *, epsilon: float, sensitivity: float, threshold: float,
                 random_state: Any = None) -> None:
        owner = "SparseVector"
        eps = check_epsilon(epsilon, owner=owner)
        sens = check_sensitivity(sensitivity, owner=owner)
        thr = check_real(threshold, "threshold", owner=owner)
        scale = 2.0 * sens * (1.0 + GRID_HEADROOM) / eps
        if not np.isfinite(scale):
            raise InvalidParameterError(
                f"The noise scale 2*sensitivity/epsilon of {owner} must be finite; got "
                f"sensitivity={sens!r} and epsilon={eps!r}."
            )
        # (2 Delta / g + 2 * 2) / 2**k <= epsilon  <=>  2 (Delta/g + 2) <= epsilon 2**k
        k, g = laplace_grid(scale=scale, sensitivity=2.0 * sens, epsilon=eps, dim=2, owner=owner)
        t_index = int(round_to_grid(np.asarray([thr]), g, "threshold", owner, public=True)[0])
        self._set("_epsilon", eps)
        self._set("_sensitivity", sens)
        self._set("_threshold", thr)
        self._set("_k", k)
        self._set("_g", g)
        self._set("_threshold_index", t_index)
        self._set("_source", check_random_state(random_state, owner=owner))

    @property
    def epsilon(self) -> float:
        """Privacy parameter of one run."""
        return self._epsilon

    @property
    def sensitivity(self) -> float:
        """Declared sensitivity of each query."""
        return self._sensitivity

    @property
    def threshold(self) -> float:
        """The public threshold."""
        return self._threshold

    @property
    def seeded(self) -> bool:
        """True when the noise is reproducible from a seed (not for release)."""
        return bool(self._source.seeded)

    @property
    def grid_spacing(self) -> float:
        """Grid on which queries and the threshold are compared (public)."""
        return self._g

    def start(self) -> SparseVectorSession:
        """Begin one run: draw the noisy threshold and return a one-shot session.

        Returns
        -------
        SparseVectorSession
            Call :meth:`SparseVectorSession.test` once per query.

        Notes
        -----
        **Privacy.** Charge :meth:`privacy_event` before calling this: the
        session's whole life is one ``(epsilon, 0)``-DP run.
        """
        return SparseVectorSession(self)

    def run(self, queries: Iterable[Any]) -> int | None:
        """Run AboveThreshold over ``queries`` and return the index of the first "above".

        Parameters
        ----------
        queries : iterable of float
            Query values, consumed lazily: iteration stops right after the first
            "above" answer, so a generator that computes each data-dependent
            query on demand computes no more than needed.

        Returns
        -------
        int or None
            Index of the first query answered "above", or None if the iterable
            was exhausted without one.

        Raises
        ------
        InvalidParameterError
            If ``queries`` is not iterable (nothing is drawn), or a query is not a
            finite real number (raised when that query is reached; no noise is
            drawn for it). A query beyond ``2**51`` grid steps is clipped to
            that range, not refused (the refusal would depend on the data).

        Notes
        -----
        **Privacy.** One ``(epsilon, 0)``-DP run; charge :meth:`privacy_event`
        once, before the call.
        """
        try:
            iterator = iter(queries)
        except TypeError:
            raise InvalidParameterError(
                f"The 'queries' parameter of SparseVector.run must be an iterable of floats. "
                f"Got {type(queries).__name__} instead."
            ) from None
        session = self.start()
        for index, value in enumerate(iterator):
            if session.test(value):
                return index
        return None

    def privacy_event(self) -> SparseVectorEvent:
        """The event to charge for one run: ``SparseVectorEvent(epsilon)``."""
        return SparseVectorEvent(epsilon=self._epsilon)

    def __repr__(self) -> str:
        return (f"SparseVector(epsilon={self._epsilon!r}, sensitivity={self._sensitivity!r}, "
                f"threshold={self._threshold!r}, "
                f"random_state={'<seeded>' if self.seeded else '<secure>'})")


class SparseVectorSession(_Frozen):
    """One AboveThreshold run: a noisy threshold drawn once, tested query by query.

    Built by :meth:`SparseVector.start`; not meant to be constructed directly.
    The noisy threshold is drawn at creation and never exposed. After the first
    "above" answer the session is closed and :meth:`test` raises.

    Parameters
    ----------
    mechanism : SparseVector
        The mechanism whose parameters and random source the run uses.

    Attributes
    ----------
    halted : bool
        True once a query has been answered "above".
    n_queries : int
        Number of queries answered so far (public: it equals the released index
        plus one after "above").

    Notes
    -----
    **Privacy.** The whole session is one ``(epsilon, 0)``-DP run of its
    mechanism; see :class:`SparseVector`.
    """

    __slots__ = ("_mechanism", "_noisy_threshold", "_halted", "_n_queries")

    def __init__(self, mechanism: SparseVector) -> None:
        if not isinstance(mechanism, SparseVector):
            raise InvalidParameterError(
                "The 'mechanism' parameter of SparseVectorSession must be a SparseVector. "
                f"Got {type(mechanism).__name__} instead."
            )
        z = discrete_laplace(2**mechanism._k, 1, 1, mechanism._source)[0]
        self._set("_mechanism", mechanism)
        self._set("_noisy_threshold", mechanism._threshold_index + int(z))
        self._set("_halted", False)
        self._set("_n_queries", 0)

    @property
    def halted(self) -> bool:
        """True once a query has been answered "above"."""
        return self._halted

    @property
    def n_queries(self) -> int:
        """Number of queries answered so far."""
        return self._n_queries

    def test(self, value: Any) -> bool:
        """Answer one query: True ("above") iff ``value + noise >= noisy threshold``.

        Parameters
        ----------
        value : float
            The query's value on the private data; finite.

        Returns
        -------
        bool
            True for "above" (the session then closes), False for "below".

        Raises
        ------
        SessionClosedError
            If the session already answered "above" (a new run, with a new
            charge, is needed).
        InvalidParameterError
            If ``value`` is not a finite real number. No noise is drawn and the
            session stays usable. (The refusal itself reveals that the value was
            invalid: clip queries to a finite range.) A value beyond ``2**51``
            grid steps is clipped to that range, not refused.
        """
        if self._halted:
            raise SessionClosedError(
                "This SparseVector session already answered 'above' and is closed; start a new "
                "run with SparseVector.start() (and charge its privacy event) to continue."
            )
        mech = self._mechanism
        v = check_real(value, "value", owner="SparseVectorSession")
        q = int(round_to_grid(np.asarray([v]), mech._g, "value", "SparseVectorSession")[0])
        nu = int(discrete_laplace(2 ** (mech._k + 1), 1, 1, mech._source)[0])
        above = q + nu >= self._noisy_threshold
        self._set("_n_queries", self._n_queries + 1)
        if above:
            self._set("_halted", True)
        return above

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("A SparseVector session cannot be copied or pickled (it is one-shot).")

    def __repr__(self) -> str:
        return f"SparseVectorSession(n_queries={self._n_queries}, halted={self._halted})"
