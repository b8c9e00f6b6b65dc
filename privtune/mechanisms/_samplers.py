r"""Exact integer samplers and the grid arithmetic behind privtune's noise.

Textbook samplers compute Laplace or Gaussian noise from floating-point
uniforms (``-b * log(u)``, Box-Muller). Their outputs have holes and uneven
spacing that depend on the value being protected, and Mironov (2012) showed that
the low-order bits of such outputs can reveal the input exactly. privtune never
uses them. Noise is sampled **exactly** on the integers, using only

* uniform integers below a bound (:meth:`RandomSource.integers_below`), and
* integer arithmetic (``int64``; Python integers only where a value could
  overflow ``int64``),

following Canonne, Kamath & Steinke (2020), Algorithms 1-3:

* :func:`bernoulli_exp` draws Bernoulli(exp(-x/y)) for non-negative integers x
  and positive integers y;
* :func:`discrete_laplace` draws Z with ``P[Z = z]`` proportional to
  ``exp(-|z| den / num)``;
* :func:`discrete_gaussian` draws Z with ``P[Z = z]`` proportional to
  ``exp(-z**2 / (2 sigma2))`` for a rational ``sigma2 = num / den``.

All three are vectorised: a whole array of samples is drawn by rejection with an
"active" mask, and the loops stop as soon as no element is active. They
terminate with probability one. Randomness is consumed in *blocks* (the trials
of several rounds, or more proposals than needed, per ``integers_below`` call),
which leaves every distribution exactly unchanged: trials drawn past a row's
stopping time are independent of the ones before it and are discarded, and the
first ``m`` accepted proposals (in proposal order, chosen without looking at
their values) are i.i.d. from the target. See the comment above
:func:`privtune.mechanisms._bernoulli._block_width` for the full argument.

Layout:

* :mod:`privtune.mechanisms._bernoulli` -- :func:`bernoulli_exp`, its
  primitives, the block sizes and the shared argument checks;
* :mod:`privtune.mechanisms._discrete` -- :func:`discrete_laplace` and
  :func:`discrete_gaussian`;
* :mod:`privtune.mechanisms._grid` -- the grid arithmetic used by
  :mod:`privtune.mechanisms.laplace`, ``gaussian`` and ``sparse_vector``
  (spacing, rounding, and the headroom that pays for it);
* this module -- :class:`_Frozen`, the immutability mixin of the mechanisms, and
  the names above, re-exported for the mechanisms, the optimisers and the tests.

References
----------
.. [CKS20] C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020, arXiv:2004.00010.
.. [Mir12] I. Mironov, "On Significance of the Least Significant Bits for
   Differential Privacy", ACM CCS 2012.
"""

from __future__ import annotations

from typing import Any

from privtune.mechanisms._bernoulli import _bernoulli_exp_minus_one as _bernoulli_exp_minus_one  # tests
from privtune.mechanisms._bernoulli import _block_width as _block_width  # tests
from privtune.mechanisms._bernoulli import _proposal_count as _proposal_count  # tests
from privtune.mechanisms._bernoulli import bernoulli_exp as bernoulli_exp
from privtune.mechanisms._discrete import _gaussian_rejection_constants as _gaussian_rejection_constants  # tests
from privtune.mechanisms._discrete import _geometric_exp_minus_one as _geometric_exp_minus_one  # tests
from privtune.mechanisms._discrete import discrete_gaussian as discrete_gaussian
from privtune.mechanisms._discrete import discrete_laplace as discrete_laplace
from privtune.mechanisms._grid import GRID_HEADROOM as GRID_HEADROOM
from privtune.mechanisms._grid import MAX_GAUSSIAN_GRID_EXPONENT as MAX_GAUSSIAN_GRID_EXPONENT
from privtune.mechanisms._grid import MAX_GRID_INDEX as MAX_GRID_INDEX
from privtune.mechanisms._grid import MAX_LAPLACE_GRID_EXPONENT as MAX_LAPLACE_GRID_EXPONENT
from privtune.mechanisms._grid import MIN_GRID_EXPONENT as MIN_GRID_EXPONENT
from privtune.mechanisms._grid import gaussian_grid as gaussian_grid
from privtune.mechanisms._grid import grid_to_float as grid_to_float
from privtune.mechanisms._grid import laplace_grid as laplace_grid
from privtune.mechanisms._grid import round_to_grid as round_to_grid

__all__ = [
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
    "GRID_HEADROOM",
    "MIN_GRID_EXPONENT",
    "MAX_GRID_INDEX",
]


class _Frozen:
    """Mixin for immutable mechanisms: ``__slots__`` plus a refusing ``__setattr__``."""

    __slots__ = ()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead.")

    def __getstate__(self) -> dict[str, Any]:
        names = [n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())]
        return {n: getattr(self, n) for n in names if hasattr(self, n)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
