"""Search-space dimensions and their encodings onto the unit interval.

Every dimension maps its values to one coordinate in ``[0, 1]`` (``encode``) and
back (``decode``). The GP engine works on the encoded unit cube only, with one
coordinate per dimension, so that ``d`` (which enters Kusner et al.'s constants
through |Λ| and γ_T) stays equal to the number of hyperparameters.

Encodings
---------
``Real(low, high)``
    ``u = (v - low) / (high - low)``; ``log=True`` applies the same map to
    ``log v`` with bounds ``log low`` and ``log high``. Decoding clips to
    ``[low, high]`` and maps ``u = 0`` and ``u = 1`` exactly onto the bounds.
``Integer(low, high)``
    The ``n = high - low + 1`` integers own equal-width bins of ``[0, 1]``:
    integer ``v`` owns ``[(v - low) / n, (v - low + 1) / n)`` and is encoded at
    its bin centre. With ``log=True`` integer ``v`` owns the interval
    ``[log(v - 1/2), log(v + 1/2))`` rescaled from
    ``[log(low - 1/2), log(high + 1/2)]`` to ``[0, 1]`` (equal bins in log
    space), and is encoded at the centre of that bin.
``Categorical(choices)``
    The ``k`` choices own equal bins ``[i/k, (i + 1)/k)`` in the order given and
    choice ``i`` is encoded at ``(i + 1/2)/k``. A single coordinate keeps ``d``
    small; the price is that the kernel treats choices adjacent in the given
    order as more similar than distant ones, so list related choices together.

Decoding any point of ``[0, 1]`` gives a valid value, and encoding a decoded
value gives the canonical ("snapped") encoding of that value, so
``encode(decode(u))`` is idempotent. Integers and categoricals round-trip
exactly (``decode(encode(v)) == v``). For reals the map is a bijection only up
to rounding: several neighbouring floats may share one encoding. ``decode``
returns the member of that run of floats with the shortest decimal
representation, so values as typed by people (``1.0``, ``0.1``, ``17.9094``)
round-trip exactly, every real satisfies
``encode(decode(encode(v))) == encode(v)``, and a float with more digits
than its encoding can tell apart comes back as a float within a few units in
the last place that has the same encoding.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from privtune.exceptions import InvalidParameterError
from privtune.space._float_keys import _float_to_key, _key_to_float, _round_sig, _shortest_in
from privtune.utils._validation import check_integer, check_real

__all__ = ["Dimension", "Real", "Integer", "Categorical"]


class Dimension:
    """Abstract base of a search-space dimension (one encoded coordinate).

    Subclasses implement :meth:`validate`, :meth:`encode_array`,
    :meth:`decode_array` and :meth:`key`.
    """

    def validate(self, value: Any, name: str = "value") -> Any:
        """Check that ``value`` belongs to the dimension and return it normalised.

        Parameters
        ----------
        value : object
            Candidate value.
        name : str, default="value"
            Name used in the error message (the hyperparameter's name).

        Returns
        -------
        object
            The value as the dimension's Python type (float, int or the choice).

        Raises
        ------
        InvalidParameterError
            If the value is outside the dimension.
        """
        raise NotImplementedError

    def encode_array(self, values: Sequence[Any]) -> np.ndarray:
        """Encode already-validated values to floats in ``[0, 1]``."""
        raise NotImplementedError

    def decode_array(self, u: np.ndarray) -> list[Any]:
        """Decode floats in ``[0, 1]`` to values of the dimension."""
        raise NotImplementedError

    def key(self, value: Any) -> Any:
        """A hashable key identifying a validated value (used for de-duplication)."""
        return value

    # -- whole-array "codes": floats for reals, ints for integers, choice indices for categoricals --
    def decode_codes(self, u: np.ndarray) -> np.ndarray:
        """Decode floats in ``[0, 1]`` to an array of codes (no Python objects per point)."""
        raise NotImplementedError

    def encode_codes(self, codes: np.ndarray) -> np.ndarray:
        """Canonical encodings in ``[0, 1]`` of an array of codes."""
        raise NotImplementedError

    def design_codes(self, u: np.ndarray) -> np.ndarray:
        """Codes of values for the points ``u`` of a space-filling design (candidate sets).

        The default is :meth:`decode_codes`. A design needs *some* value in the
        bin of each ``u``, not the canonical decoding of ``u`` itself, so
        :class:`Real` returns a short decimal near it instead (faster, and
        easier to read).
        """
        return self.decode_codes(u)

    def code_of(self, value: Any) -> Any:
        """The code of one validated value (its de-duplication key)."""
        return self.key(value)

    def value_of(self, code: Any) -> Any:
        """The value (of the dimension's Python type) of one code."""
        raise NotImplementedError

    def encode(self, value: Any) -> float:
        """Encode one value to a float in ``[0, 1]`` (validating it first)."""
        return float(self.encode_array([self.validate(value)])[0])

    def decode(self, u: float) -> Any:
        """Decode one float in ``[0, 1]`` to a value of the dimension."""
        return self.decode_array(np.asarray([u], dtype=np.float64))[0]


def _check_bounds(low: Any, high: Any, owner: str) -> tuple[float, float]:
    lo = check_real(low, "low", owner=owner)
    hi = check_real(high, "high", owner=owner)
    if not lo < hi:
        raise InvalidParameterError(
            f"The 'low' and 'high' parameters of {owner} must satisfy low < high. "
            f"Got low={low!r}, high={high!r} instead."
        )
    return lo, hi


class Real(Dimension):
    """A real-valued hyperparameter in ``[low, high]``, on a linear or log scale.

    Parameters
    ----------
    low, high : float
        Finite bounds, ``low < high``; both belong to the dimension.
    log : bool, default=False
        Encode ``log v`` linearly (for scale parameters such as ``C``); requires
        ``low > 0``.

    Examples
    --------
    >>> from privtune.space import Real
    >>> Real(1e-3, 1e3, log=True).encode(1.0)
    0.5
    """


    def __init__(self, low: float, high: float, log: bool = False) -> None:
        self.low, self.high = _check_bounds(low, high, "Real")
        if not math.isfinite(self.high - self.low):
            raise InvalidParameterError(
                "The 'low' and 'high' parameters of Real must have a finite difference "
                f"high - low. Got low={low!r}, high={high!r} instead."
            )
        if not isinstance(log, bool):
            raise InvalidParameterError(
                f"The 'log' parameter of Real must be a bool. Got {log!r} instead."
            )
        if log and self.low <= 0:
            raise InvalidParameterError(
                "The 'low' parameter of Real must be a float in the range (0.0, inf) when "
                f"log=True. Got {low!r} instead."
            )
        self.log = log
        if log:
            self._a, self._b = math.log(self.low), math.log(self.high)
        else:
            self._a, self._b = self.low, self.high

    def validate(self, value: Any, name: str = "value") -> float:
        where = f"The {name!r} hyperparameter must be a float in [{self.low!r}, {self.high!r}]"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidParameterError(
                f"{where}. Got {value!r} of type {type(value).__name__} instead."
            )
        v = float(value)
        if not (self.low <= v <= self.high):  # also refuses NaN
            raise InvalidParameterError(f"{where}. Got {value!r} instead.")
        return v

    def encode_array(self, values: Sequence[Any]) -> np.ndarray:
        v = np.atleast_1d(np.asarray(values, dtype=np.float64))
        t = np.log(v) if self.log else v
        u = (t - self._a) / (self._b - self._a)
        u = np.clip(u, 0.0, 1.0)
        u[v == self.low] = 0.0
        u[v == self.high] = 1.0
        return u

    def decode_array(self, u: np.ndarray) -> list[float]:
        return [float(x) for x in self.decode_codes(u)]

    def encode_codes(self, codes: np.ndarray) -> np.ndarray:
        return self.encode_array(codes)

    def value_of(self, code: Any) -> float:
        return float(code)

    #: Significant digits kept in a design's values: log scale, relative; linear scale, of the range.
    DESIGN_DIGITS = 10

    def design_codes(self, u: np.ndarray) -> np.ndarray:
        """Values near the decoding of ``u``, rounded to a short decimal.

        Log scale: a relative step of about ``10**-DESIGN_DIGITS`` of
        ``log(high / low)`` (``DESIGN_DIGITS - log10(log(high / low))``
        significant digits); linear scale: a multiple of the power of ten
        below ``(high - low) * 10**-DESIGN_DIGITS``.
        The rounding moves a point by about ``1e-9`` of its coordinate's range
        (immaterial for a design), and each value is the shortest decimal of its
        run of floats, so ``decode(encode(v)) == v`` for every design value
        (the per-point search of :meth:`decode_codes` is not needed). Bounds
        are kept exactly.
        """
        u = np.clip(np.atleast_1d(np.asarray(u, dtype=np.float64)), 0.0, 1.0)
        t = self._a + u * (self._b - self._a)
        v = np.exp(t) if self.log else t
        if self.log:
            # a relative step of about 10**-DESIGN_DIGITS of the log-range
            digits = max(1, math.ceil(self.DESIGN_DIGITS - math.log10(self._b - self._a)))
            if digits > 15:  # a range so narrow that short decimals cannot resolve it: decode canonically
                return self.decode_codes(u)
            with np.errstate(divide="ignore"):
                top = np.floor(np.log10(np.abs(v))).astype(np.int64)
            c, decided = _round_sig(v, top - (digits - 1), digits)
            for j in np.flatnonzero(~decided):
                c[j] = float(f"{v[j]:.{digits}g}")
        else:
            e = math.floor(math.log10(self.high - self.low)) - self.DESIGN_DIGITS
            c, decided = _round_sig(v, np.full(v.shape, e, dtype=np.int64), 11)  # multiples of 10**e
            for j in np.flatnonzero(~decided):
                c[j] = float(round(float(v[j]), -e))
        c = np.clip(c, self.low, self.high)
        c[u <= 0.0] = self.low
        c[u >= 1.0] = self.high
        # Each value is the only decimal of its length in its run of floats when the run is far narrower
        # than the rounding step: always on a log scale (relative run width < 2e-13), and on a linear scale
        # unless the bounds are huge next to their difference. There, use the canonical decoding instead.
        if not self.log and np.spacing(max(abs(self.low), abs(self.high))) * 1e4 > 10.0 ** e:
            return self.decode_codes(self.encode_array(c))
        tiny = np.abs(c) < 1e-290  # near the subnormals float spacing is coarse: decode canonically there
        if tiny.any():
            c[tiny] = self.decode_codes(self.encode_array(c[tiny]))
        return c + 0.0

    def decode_codes(self, u: np.ndarray) -> np.ndarray:
        u = np.atleast_1d(np.asarray(u, dtype=np.float64))
        t = self._a + u * (self._b - self._a)
        v = np.clip(np.exp(t) if self.log else t, self.low, self.high)
        # The map is inverted only up to rounding, and several floats may share
        # one encoding. Find the floats whose encoding is exactly u (a run of
        # consecutive floats: encode is monotone) and return the shortest
        # decimal among them, so that decode(encode(v)) == v for values such as
        # 1.0, 0.1 or 17.9094, and encode(decode(u)) == u whenever u is an
        # encoding. If no float encodes to exactly u, the same is done for the
        # encoding of the rounded inverse, so that decode(encode(decode(u))) ==
        # decode(u) for every u.
        guess = _float_to_key(v)
        lo = self._first_key(u, guess, strict=False)  # first float with encode >= u
        hi = self._first_key(u, guess, strict=True) - 1  # last float with encode <= u
        empty = lo > hi
        if empty.any():
            u_back = self.encode_array(v[empty])
            lo[empty] = self._first_key(u_back, guess[empty], strict=False)
            hi[empty] = self._first_key(u_back, guess[empty], strict=True) - 1
        key_low, key_high = _float_to_key(self.low), _float_to_key(self.high)
        found = np.flatnonzero(lo <= hi)
        a, b = _key_to_float(lo[found]), _key_to_float(hi[found])
        at_low, at_high = lo[found] <= key_low, hi[found] >= key_high  # the bounds are the canonical values of 0, 1
        zero = ~at_low & ~at_high & (a <= 0.0) & (0.0 <= b)
        rest = ~(at_low | at_high | zero)
        v[found[at_low]] = self.low
        v[found[~at_low & at_high]] = self.high
        v[found[zero]] = 0.0
        v[found[rest]] = _shortest_in(a[rest], b[rest])
        v[u <= 0.0] = self.low
        v[u >= 1.0] = self.high
        return v + 0.0  # -0.0 -> 0.0

    def _first_key(self, u: np.ndarray, guess: np.ndarray, *, strict: bool) -> np.ndarray:
        """Ordered key of the first float in [low, high] with encode > u (strict) or >= u.

        Returns ``key(high) + 1`` where there is none. Bisection on float keys,
        bracketed first by growing windows around ``guess`` (the key of the
        rounded inverse), then by the whole range.
        """
        glo = int(_float_to_key(self.low))
        ghi = int(_float_to_key(self.high)) + 1

        def pred(k: np.ndarray, idx: np.ndarray) -> np.ndarray:
            enc = self.encode_array(_key_to_float(k))
            return (enc > u[idx]) if strict else (enc >= u[idx])

        lo = np.full(u.shape, glo, dtype=np.int64)
        hi = np.full(u.shape, ghi, dtype=np.int64)
        todo = np.arange(u.size)
        for w in (8, 2**12, 2**30):
            if not todo.size:
                break
            g = guess[todo]
            lw = np.maximum(g - w, glo)
            hw = np.minimum(g + w, ghi)
            ok_lo = lw == glo
            chk = ~ok_lo
            ok_lo[chk] = ~pred(lw[chk] - 1, todo[chk])
            ok_hi = hw == ghi
            chk = ~ok_hi
            ok_hi[chk] = pred(hw[chk], todo[chk])
            ok = ok_lo & ok_hi
            lo[todo[ok]], hi[todo[ok]] = lw[ok], hw[ok]
            todo = todo[~ok]
        active = np.flatnonzero(lo < hi)
        while active.size:
            a_lo, a_hi = lo[active], hi[active]
            mid = a_lo // 2 + a_hi // 2 + (a_lo % 2 + a_hi % 2) // 2  # no int64 overflow
            right = pred(mid, active)
            hi[active] = np.where(right, mid, a_hi)
            lo[active] = np.where(right, a_lo, mid + 1)
            active = active[lo[active] < hi[active]]
        return lo

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Real) and (self.low, self.high, self.log)
                == (other.low, other.high, other.log))

    def __hash__(self) -> int:
        return hash(("Real", self.low, self.high, self.log))

    def __repr__(self) -> str:
        log = ", log=True" if self.log else ""
        return f"Real({self.low!r}, {self.high!r}{log})"


class Integer(Dimension):
    """An integer hyperparameter in ``[low, high]`` (both included).

    Parameters
    ----------
    low, high : int
        Bounds, ``low < high``.
    log : bool, default=False
        Give the integers equal bins in log space (requires ``low >= 1``).

    Notes
    -----
    Integer ``v`` owns an equal-width bin of ``[0, 1]`` (in log space when
    ``log=True``) and is encoded at the bin's centre, so every integer is
    equally likely under a uniform (e.g. Sobol) design in the encoded space.
    """

    def __init__(self, low: int, high: int, log: bool = False) -> None:
        self.low = check_integer(low, "low", low=-(2**52), high=2**52, owner="Integer")
        self.high = check_integer(high, "high", low=-(2**52), high=2**52, owner="Integer")
        if not self.low < self.high:
            raise InvalidParameterError(
                "The 'low' and 'high' parameters of Integer must satisfy low < high. "
                f"Got low={low!r}, high={high!r} instead."
            )
        if not isinstance(log, bool):
            raise InvalidParameterError(
                f"The 'log' parameter of Integer must be a bool. Got {log!r} instead."
            )
        if log and self.low < 1:
            raise InvalidParameterError(
                "The 'low' parameter of Integer must be an int in the range [1, inf] when "
                f"log=True. Got {low!r} instead."
            )
        self.log = log
        self.n_values = self.high - self.low + 1
        if log:
            self._a, self._b = math.log(self.low - 0.5), math.log(self.high + 0.5)

    def validate(self, value: Any, name: str = "value") -> int:
        where = f"The {name!r} hyperparameter must be an int in [{self.low}, {self.high}]"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidParameterError(
                f"{where}. Got {value!r} of type {type(value).__name__} instead."
            )
        if not isinstance(value, numbers.Integral):
            x = float(value)
            if not (math.isfinite(x) and x.is_integer()):
                raise InvalidParameterError(f"{where}. Got {value!r} instead.")
        v = int(value)
        if not (self.low <= v <= self.high):
            raise InvalidParameterError(f"{where}. Got {value!r} instead.")
        return v

    def encode_array(self, values: Sequence[Any]) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        if self.log:
            centre = 0.5 * (np.log(v - 0.5) + np.log(v + 0.5))
            return np.clip((centre - self._a) / (self._b - self._a), 0.0, 1.0)
        return (v - self.low + 0.5) / self.n_values

    def decode_array(self, u: np.ndarray) -> list[int]:
        return [int(x) for x in self.decode_codes(u)]

    def decode_codes(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        if self.log:
            v = np.floor(np.exp(self._a + u * (self._b - self._a)) + 0.5)
            return np.clip(v, self.low, self.high).astype(np.int64)
        idx = np.clip(np.floor(u * self.n_values), 0, self.n_values - 1).astype(np.int64)
        return self.low + idx

    def encode_codes(self, codes: np.ndarray) -> np.ndarray:
        return self.encode_array(codes)

    def value_of(self, code: Any) -> int:
        return int(code)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Integer) and (self.low, self.high, self.log)
                == (other.low, other.high, other.log))

    def __hash__(self) -> int:
        return hash(("Integer", self.low, self.high, self.log))

    def __repr__(self) -> str:
        log = ", log=True" if self.log else ""
        return f"Integer({self.low}, {self.high}{log})"


class Categorical(Dimension):
    """A hyperparameter taking one of a finite list of choices.

    Parameters
    ----------
    choices : sequence
        At least one choice, no two equal (by identity or ``==``). Any Python
        objects (strings, numbers, ``None``, ...) are allowed; decoding returns
        the very objects given. The order matters: choice ``i`` owns the bin
        ``[i/k, (i + 1)/k)`` and adjacent choices look similar to the kernel.
    """

    def __init__(self, choices: Sequence[Any]) -> None:
        if isinstance(choices, (str, bytes)):
            raise InvalidParameterError(
                "The 'choices' parameter of Categorical must be a non-empty sequence of choices, "
                f"not a string. Got {choices!r}; did you mean [{choices!r}]?"
            )
        try:
            choices = list(choices)  # any iterable
        except TypeError:
            raise InvalidParameterError(
                "The 'choices' parameter of Categorical must be a non-empty sequence. "
                f"Got {choices!r} of type {type(choices).__name__} instead."
            ) from None
        choices = tuple(choices)
        if len(choices) == 0:
            raise InvalidParameterError(
                "The 'choices' parameter of Categorical must be a non-empty sequence. "
                "Got an empty sequence instead."
            )
        for i, c in enumerate(choices):
            j = self._find(choices[:i], c)
            if j is not None:
                raise InvalidParameterError(
                    "The 'choices' parameter of Categorical must not contain duplicates. "
                    f"Choice {c!r} at position {i} equals choice {choices[j]!r} at position {j}."
                )
        self.choices = choices
        self.n_values = len(choices)

    @staticmethod
    def _find(choices: Sequence[Any], value: Any) -> int | None:
        for i, c in enumerate(choices):
            if c is value:
                return i
        for i, c in enumerate(choices):
            try:
                if bool(c == value):
                    return i
            except Exception:  # noqa: BLE001 - exotic __eq__ (arrays, ...): not equal
                continue
        return None

    def index(self, value: Any) -> int:
        """Position of ``value`` among the choices.

        Raises
        ------
        InvalidParameterError
            If ``value`` is not one of the choices.
        """
        i = self._find(self.choices, value)
        if i is None:
            raise InvalidParameterError(
                f"The value must be one of {list(self.choices)!r}. Got {value!r} instead."
            )
        return i

    def validate(self, value: Any, name: str = "value") -> Any:
        i = self._find(self.choices, value)
        if i is None:
            raise InvalidParameterError(
                f"The {name!r} hyperparameter must be one of {list(self.choices)!r}. "
                f"Got {value!r} instead."
            )
        return self.choices[i]

    def key(self, value: Any) -> int:
        return self.index(value)

    def encode_array(self, values: Sequence[Any]) -> np.ndarray:
        idx = np.asarray([self.index(v) for v in values], dtype=np.float64)
        return (idx + 0.5) / self.n_values

    def decode_array(self, u: np.ndarray) -> list[Any]:
        return [self.choices[int(i)] for i in self.decode_codes(u)]

    def decode_codes(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        return np.clip(np.floor(u * self.n_values), 0, self.n_values - 1).astype(np.int64)

    def encode_codes(self, codes: np.ndarray) -> np.ndarray:
        return (np.asarray(codes, dtype=np.float64) + 0.5) / self.n_values

    def value_of(self, code: Any) -> Any:
        return self.choices[int(code)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Categorical) or other.n_values != self.n_values:
            return False
        pairs = zip(self.choices, other.choices, strict=True)
        return all(self._find((a,), b) == 0 for a, b in pairs)

    def __hash__(self) -> int:
        return hash(("Categorical", self.n_values))

    def __repr__(self) -> str:
        return f"Categorical({list(self.choices)!r})"
