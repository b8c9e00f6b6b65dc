"""Griffe extension for the API reference: Sphinx roles in the numpydoc docstrings read as Markdown.

privtune's docstrings are numpydoc, written with Sphinx's inline roles (``:class:`PrivacyTags```,
``:func:`~privtune.space.candidate_set```, ``:math:`\\epsilon```) and a few ``.. math::`` / ``.. warning::``
directives. mkdocstrings renders docstrings as Markdown, where a role would show as the literal text
``:class:`` before the name. This extension rewrites each docstring before it is parsed:

* ``:role:`target``` becomes the code span ```target``` (``~a.b.C`` shows as ``C``, as in Sphinx;
  ``title <target>`` shows the title);
* a ``.. math::`` formula shows as a code block (the directive's name is dropped);
* ``.. warning::`` / ``.. note::`` become a bold "Warning." / "Note." lead.

The docstrings themselves are left as they are (they also serve ``help()`` and numpydoc's conventions).
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|obj|exc|const|math|ref|doc|term):`([^`]+)`")
DIRECTIVE = re.compile(r"^([ \t]*)\.\. (math|warning|note)::[ \t]*(.*)$", re.MULTILINE)


def _role(match: re.Match[str]) -> str:
    target = match.group(1).strip()
    titled = re.fullmatch(r"(.+?)\s*<([^>]+)>", target)
    if titled:
        target = titled.group(1)
    elif target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


def _directive(match: re.Match[str]) -> str:
    indent, kind, rest = match.groups()
    if kind == "math":
        return f"\n{indent}    {rest}" if rest else ""
    return f"{indent}**{kind.capitalize()}.** {rest}".rstrip()


def rewrite(text: str) -> str:
    """The docstring ``text`` with Sphinx roles and directives turned into Markdown."""
    return DIRECTIVE.sub(_directive, ROLE.sub(_role, text))


class RstRoles(Extension):
    """Rewrite Sphinx roles and directives of every loaded docstring (see the module docstring)."""

    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
