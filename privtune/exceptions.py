"""Every error and warning that privtune raises.

One module, like :mod:`sklearn.exceptions`, so that callers can catch the whole
family with :class:`PrivtuneError` and auditors can read every failure mode in
one place.

Hierarchy::

    PrivtuneError(Exception)
    |-- InvalidParameterError(PrivtuneError, ValueError, TypeError)
    |-- BudgetExceededError(PrivtuneError, ValueError)
    |-- UnsupportedEventError(PrivtuneError, TypeError)
    |-- LedgerError(PrivtuneError, RuntimeError)
    `-- SessionClosedError(PrivtuneError, RuntimeError)

    PrivtuneWarning(UserWarning)
    |-- PrivacyLeakWarning(PrivtuneWarning, RuntimeWarning)
    |-- InsecureRandomnessWarning(PrivtuneWarning)
    `-- AccountingWarning(PrivtuneWarning)
"""

from __future__ import annotations

from typing import Any, Protocol


class _BudgetLike(Protocol):
    """What an exception needs of a budget (``privtune.accounting.Budget`` is one).

    A protocol, so that this module imports nothing from privtune: every other
    module imports it, and an import of the accounting package here closed a
    circle (exceptions -> accounting.budget -> utils._validation -> exceptions).
    """

    epsilon: float
    delta: float


Budget = _BudgetLike  # the name used in the annotations and docstrings below

__all__ = [
    "PrivtuneError",
    "InvalidParameterError",
    "BudgetExceededError",
    "UnsupportedEventError",
    "LedgerError",
    "SessionClosedError",
    "PrivtuneWarning",
    "PrivacyLeakWarning",
    "InsecureRandomnessWarning",
    "AccountingWarning",
    "LowUtilityWarning",
]


class PrivtuneError(Exception):
    """Root of every exception raised by privtune."""


class InvalidParameterError(PrivtuneError, ValueError, TypeError):
    """A parameter or an input is outside its documented domain.

    It derives from both :class:`ValueError` and :class:`TypeError` so that code
    written for scikit-learn's conventions catches it. The message names the
    parameter, its domain and the value received. It is always raised before any
    sensitive data is read and before any budget is spent.
    """


class BudgetExceededError(PrivtuneError, ValueError):
    """A charge would take the privacy spent beyond the budget.

    Raised by :meth:`privtune.accounting.Accountant.check` and
    :meth:`~privtune.accounting.Accountant.spend` **before** the data access the
    charge would pay for. When it is raised nothing has been spent and the ledger
    is unchanged.

    Attributes
    ----------
    requested : Budget or None
        The total privacy spent if the charge had been accepted.
    spent : Budget or None
        The privacy spent before the refused charge.
    ceiling : Budget or None
        The budget that would have been exceeded.
    """

    def __init__(
        self,
        message: str,
        *,
        requested: Budget | None = None,
        spent: Budget | None = None,
        ceiling: Budget | None = None,
    ) -> None:
        super().__init__(message)
        self.requested = requested
        self.spent = spent
        self.ceiling = ceiling

    def __reduce__(self) -> tuple[Any, ...]:  # keep pickling (joblib) working
        return (
            _rebuild_budget_error,
            (self.args[0] if self.args else "", self.requested, self.spent, self.ceiling),
        )


def _rebuild_budget_error(message, requested, spent, ceiling):  # pragma: no cover - pickling
    return BudgetExceededError(message, requested=requested, spent=spent, ceiling=ceiling)


class UnsupportedEventError(PrivtuneError, TypeError):
    """An accountant cannot bound the privacy loss of this event."""


class LedgerError(PrivtuneError, RuntimeError):
    """The privacy ledger could not record a charge durably, or is corrupt.

    When it is raised by a charge, the charge did not happen and the data it
    would have paid for must not be touched.
    """


class SessionClosedError(PrivtuneError, RuntimeError):
    """A one-shot mechanism session was used after it halted.

    For example a sparse-vector session after its first positive answer: its
    noisy threshold must never be reused (seed 003 spec, P8).
    """


class PrivtuneWarning(UserWarning):
    """Root of every warning issued by privtune."""


class PrivacyLeakWarning(PrivtuneWarning, RuntimeWarning):
    """Something may weaken the stated privacy guarantee.

    For example a bound read off the data rather than declared, or an opt-in to
    expose non-private values.
    """


class InsecureRandomnessWarning(PrivtuneWarning):
    """Noise comes from a seeded generator: reproducible, but not for release."""


class AccountingWarning(PrivtuneWarning):
    """An accounting bound is valid but loose or near the edge of its range."""


class LowUtilityWarning(PrivtuneWarning):
    """The configuration's noise is so large that a release says little (public quantities only).

    Issued before any data is read, from the privacy plan's noise scales in
    score units against the declared score range: e.g. an exponential-mechanism
    selection that is close to a uniformly random pick, or a released score
    whose noise dwarfs the score range. It never depends on data.
    """
