"""What a DP estimator's guarantee covers: the public tag :class:`PrivacyTags`.

A search that treats *training* data as sensitive (``PrivateSearchCV(sensitive=
"training" | "both")``) may only fit estimators whose own differential-privacy
guarantee covers whole training rows. It does not guess this from an
``epsilon`` parameter: an estimator declares it by defining

.. code-block:: python

    def __privtune_tags__(self) -> PrivacyTags: ...

and :func:`get_privacy_tags` reads the declaration. privtune's own DP
estimators declare theirs; any other estimator has no tags and is refused in a
training-sensitive role.

The contract an estimator signs with ``covers="rows"``:

* one ``fit`` is differentially private with respect to replacing one training
  row (features and label together), with the event returned by
  ``_fit_privacy_event()`` (computed from hyperparameters only) composing at
  least as pessimistically as what ``fit`` charges;
* ``fit`` charges its accountant before reading any value of the data, and once
  charged it does not raise because of any row's values: rows outside the
  declared domain (norm over the bound, a label outside the declared
  ``classes``) are mapped into it row by row, never refused. (Shape and
  parameter errors are public and may still raise.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privtune.exceptions import InvalidParameterError

__all__ = ["PrivacyTags", "get_privacy_tags", "COVERS"]

#: What a guarantee can cover: whole rows (features and labels) or labels only (features public).
COVERS = ("rows", "labels")


@dataclass(frozen=True)
class PrivacyTags:
    """A DP estimator's public declaration of what its guarantee covers.

    Parameters
    ----------
    covers : {"rows", "labels"}
        ``"rows"``: one fit is DP with respect to replacing a whole training row
        (features and label). ``"labels"``: only the labels are protected; the
        features are public (e.g. :class:`privtune.linear_model.DPChebyshevRegressor`,
        Han et al.'s label-private regression). Such an estimator cannot be the
        inner trainer of a training-sensitive search.
    classes_param : str or None, default=None
        For classifiers: the constructor parameter that declares the label set
        (e.g. ``"classes"``). A training-sensitive search requires it to be set,
        so that no fit reads the set of labels off the sensitive rows.
    relation : str, default="replace_one"
        The neighbouring relation of the guarantee.
    raises_on_rows : bool, default=False
        True when the estimator's *current configuration* makes ``fit`` refuse
        data because of a row's values (e.g. ``clip="raise"``): whether it
        raises then depends on one row, so a training-sensitive search refuses
        the configuration.
    """

    covers: str
    classes_param: str | None = None
    relation: str = "replace_one"
    raises_on_rows: bool = False

    def __post_init__(self) -> None:
        if self.covers not in COVERS:
            raise InvalidParameterError(
                f"The 'covers' parameter of PrivacyTags must be one of {list(COVERS)}. Got {self.covers!r}.")
        if self.classes_param is not None and not isinstance(self.classes_param, str):
            raise InvalidParameterError("The 'classes_param' parameter of PrivacyTags must be a str or None.")


def get_privacy_tags(estimator: Any) -> PrivacyTags | None:
    """The estimator's :class:`PrivacyTags`, or None if it declares none (not a DP estimator).

    Parameters
    ----------
    estimator : object
        An estimator instance (or class).

    Returns
    -------
    PrivacyTags or None

    Raises
    ------
    InvalidParameterError
        If ``__privtune_tags__`` exists but does not return a :class:`PrivacyTags`.
    """
    fn = getattr(estimator, "__privtune_tags__", None)
    if fn is None or isinstance(estimator, type):
        return None
    tags = fn()
    if not isinstance(tags, PrivacyTags):
        raise InvalidParameterError(
            f"{type(estimator).__name__}.__privtune_tags__() must return a privtune.base.PrivacyTags; got "
            f"{type(tags).__name__}.")
    return tags
