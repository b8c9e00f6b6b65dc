"""Sources of randomness: cryptographically secure by default, seeded on request.

privtune's noise never comes from numpy's or torch's global generators, and no
global RNG state is ever read or changed.

* ``random_state=None`` gives a :class:`SecureRandomSource`: uniform integers are
  built from the operating system's CSPRNG (:func:`os.urandom`) by exact rejection
  sampling, so that nobody who observes outputs can predict or reconstruct the
  noise.
* An ``int``, a :class:`numpy.random.SeedSequence` or a
  :class:`numpy.random.Generator` gives a :class:`SeededRandomSource`: exactly
  reproducible, and labelled ``seeded=True`` so that reports can say the run is
  "seeded (reproducible, not for release)". Anyone holding the seed can remove
  the noise.

The exact samplers in :mod:`privtune.mechanisms` need only one primitive:
uniform integers below a given bound, element-wise over an array of bounds.
"""

from __future__ import annotations

import os
import secrets
from typing import Any, Union

import numpy as np

from privtune.exceptions import InvalidParameterError

__all__ = ["RandomSource", "SecureRandomSource", "SeededRandomSource", "check_random_state",
           "RandomStateLike"]

RandomStateLike = Union[None, int, np.integer, np.random.SeedSequence, np.random.Generator,
                        "RandomSource"]

_MAX_HIGH = 2**62  # upper bound for integer draws; keeps all sampler arithmetic inside int64


class RandomSource:
    """Abstract source of uniform randomness used by every privtune sampler.

    Subclasses implement :meth:`integers_below`; everything else derives from it.

    Attributes
    ----------
    seeded : bool
        True when the output is reproducible from a seed (not for release).
    """

    seeded: bool = False

    def integers_below(self, high: np.ndarray) -> np.ndarray:
        """Uniform integers ``0 <= out[i] < high[i]``, exactly, element-wise.

        Parameters
        ----------
        high : ndarray of int64
            Positive bounds, each at most ``2**62``.

        Returns
        -------
        ndarray of int64, same shape as ``high``.
        """
        raise NotImplementedError

    def _check_high(self, high: Any) -> np.ndarray:
        h = np.asarray(high, dtype=np.int64)
        if h.size and (h.min() < 1 or h.max() > _MAX_HIGH):
            raise InvalidParameterError("integer bounds must lie in [1, 2**62].")
        return h

    def uniform53(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniform floats on the grid ``k / 2**53``, ``k`` in ``[0, 2**53)`` (exact)."""
        shape = (size,) if isinstance(size, int) else tuple(size)
        k = self.integers_below(np.full(shape, 2**53, dtype=np.int64))
        return k.astype(np.float64) * (2.0**-53)

    def bernoulli_half(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Fair coins as a boolean array."""
        shape = (size,) if isinstance(size, int) else tuple(size)
        return self.integers_below(np.full(shape, 2, dtype=np.int64)).astype(bool)

    def spawn(self) -> RandomSource:
        """An independent child source of the same kind (secure stays secure)."""
        raise NotImplementedError

    def numpy_generator(self) -> np.random.Generator:
        """A numpy Generator for *non-noise* randomness (splits, Sobol scrambling).

        For a secure source it is freshly seeded from the OS entropy pool; for a
        seeded source it is derived deterministically from the seed stream.
        """
        raise NotImplementedError


class SecureRandomSource(RandomSource):
    """Uniform integers from :func:`os.urandom` by exact rejection sampling."""

    seeded = False

    def integers_below(self, high: np.ndarray) -> np.ndarray:
        h = self._check_high(high)
        flat = h.reshape(-1).astype(np.uint64)
        out = np.empty(flat.shape, dtype=np.uint64)
        todo = np.arange(flat.size)
        while todo.size:
            hh = flat[todo]
            r = np.frombuffer(os.urandom(8 * todo.size), dtype=np.uint64).copy()
            # Accept r < 2**64 - (2**64 mod hh): then r mod hh is exactly uniform.
            rem = (np.uint64(0) - hh) % hh  # == 2**64 mod hh, computed in uint64
            with np.errstate(over="ignore"):
                limit = np.uint64(0) - rem  # == 2**64 - rem (wraps to 0 when rem == 0)
            ok = (rem == 0) | (r < limit)
            out[todo[ok]] = r[ok] % hh[ok]
            todo = todo[~ok]
        return out.astype(np.int64).reshape(h.shape)

    def spawn(self) -> RandomSource:
        return SecureRandomSource()

    def numpy_generator(self) -> np.random.Generator:
        return np.random.default_rng(secrets.randbits(128))

    def __repr__(self) -> str:
        return "SecureRandomSource()"


class SeededRandomSource(RandomSource):
    """Reproducible uniform integers from a :class:`numpy.random.Generator`."""

    seeded = True

    def __init__(self, generator: np.random.Generator) -> None:
        self.generator = generator

    def integers_below(self, high: np.ndarray) -> np.ndarray:
        h = self._check_high(high)
        if h.size == 0:
            return np.empty(h.shape, dtype=np.int64)
        return self.generator.integers(0, h, dtype=np.int64)

    def spawn(self) -> RandomSource:
        return SeededRandomSource(self.generator.spawn(1)[0])

    def numpy_generator(self) -> np.random.Generator:
        return self.generator.spawn(1)[0]

    def __repr__(self) -> str:
        return f"SeededRandomSource({self.generator!r})"


def check_random_state(random_state: Any, *, owner: str | None = None) -> RandomSource:
    """Turn a ``random_state`` argument into a :class:`RandomSource`.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence, numpy.random.Generator or RandomSource
        ``None`` gives cryptographically secure randomness (never numpy's global
        generator). An int or a SeedSequence seeds a fresh PCG64 generator. A
        Generator is used as given (and advanced). A RandomSource is returned
        unchanged.
    owner : str or None
        Name used in the error message.

    Returns
    -------
    RandomSource

    Raises
    ------
    InvalidParameterError
        For any other type, negative ints, or a legacy ``RandomState``.
    """
    if random_state is None:
        return SecureRandomSource()
    if isinstance(random_state, RandomSource):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return SeededRandomSource(random_state)
    if isinstance(random_state, np.random.SeedSequence):
        return SeededRandomSource(np.random.Generator(np.random.PCG64(random_state)))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise InvalidParameterError(
                f"The 'random_state' parameter{' of ' + owner if owner else ''} must be None, a "
                f"non-negative int, a numpy SeedSequence or Generator. Got {random_state!r} instead."
            )
        return SeededRandomSource(np.random.default_rng(int(random_state)))
    raise InvalidParameterError(
        f"The 'random_state' parameter{' of ' + owner if owner else ''} must be None, a "
        "non-negative int, a numpy SeedSequence or Generator. "
        f"Got {random_state!r} of type {type(random_state).__name__} instead."
    )
