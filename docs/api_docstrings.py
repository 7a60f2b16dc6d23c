"""A griffe extension for the API reference: the package's docstrings read as Markdown.

The docstrings are written for both ``help()`` and Sphinx-like tools: examples are doctests
(``>>>`` lines and their output), often outside a numpy-style ``Examples`` section, and
cross-references are reST roles such as ``:class:`~pgm_dp.learners.CGMEM```. Before
mkdocstrings renders them, this extension

* wraps every unindented doctest block in a ``pycon`` code fence (as Markdown, ``>>>``
  would start a block quote and the output could read as link syntax);
* turns each role into an optional cross-reference to the object it names, resolved in the
  docstring's scope (relative names such as ``.conditioning.shrunk_marginals`` included):
  a link where that object is documented, plain code otherwise.

Loaded by ``mkdocs.yml`` (``extensions:`` of the Python handler). Only the loaded copies of
the docstrings change, never the source files.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):"
    r"`(?:(?P<title>[^`<]+?)\s*<(?P<target>[^`>]+)>|(?P<plain>[^`]+))`"
)


def fence_doctests(text: str) -> str:
    """``text`` with each doctest block (prompt lines and the output up to the next blank
    line) wrapped in a fenced ``pycon`` block; lines inside code fences or indented by four
    spaces or more are left alone."""
    out: list[str] = []
    in_fence = in_doctest = False
    margin = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("```") and not in_doctest:
            in_fence = not in_fence
        if not in_fence and not in_doctest and indent < 4 and stripped.startswith(">>>"):
            margin = " " * indent
            out.append(margin + "```pycon")
            in_doctest = True
        elif in_doctest and not stripped:
            out.append(margin + "```")
            in_doctest = False
        out.append(line)
    if in_doctest:
        out.append(margin + "```")
    return "\n".join(out)


def _canonical(obj: griffe.Object, path: str) -> str:
    """The path of the object ``path`` leads to, following re-exports where possible."""
    try:
        target = obj.modules_collection[path]
        while target.is_alias:
            target = target.final_target
        return target.path
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return path


def resolve(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` as written in ``obj``'s docstring (best effort)."""
    if name.startswith("."):
        dots = len(name) - len(name.lstrip("."))
        module = obj.module
        base = module.path if module.is_package else module.path.rpartition(".")[0]
        for _ in range(dots - 1):
            base = base.rpartition(".")[0]
        return _canonical(obj, f"{base}.{name.lstrip('.')}")
    if name.startswith(obj.package.path + "."):
        return _canonical(obj, name)
    head, _, rest = name.partition(".")
    for scope in (obj, obj.module):
        try:
            found = scope.resolve(head)
        except griffe.NameResolutionError:
            continue
        return _canonical(obj, f"{found}.{rest}" if rest else found)
    return f"{obj.module.path}.{name}"


def link_roles(obj: griffe.Object, text: str) -> str:
    """``text`` with each reST role replaced by an optional autorefs cross-reference."""

    def replace(match: re.Match) -> str:
        written = (match["target"] or match["plain"]).strip()
        short = written.startswith("~")
        target = written.lstrip("~")
        title = match["title"] or (target.rpartition(".")[2] if short else target.lstrip("."))
        identifier = html.escape(resolve(obj, target), quote=True)
        code = f"<code>{html.escape(title)}</code>"
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class MarkdownDocstrings(griffe.Extension):
    """Rewrite every docstring of the loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            doc = obj.docstring
            if doc is None:
                continue
            text = fence_doctests(doc.value) if ">>>" in doc.value else doc.value
            doc.value = link_roles(obj, text) if ":" in text else text
