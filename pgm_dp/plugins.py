"""Extensions from other installed packages, through package entry points.

A package extends pgm_dp by declaring entry points in a group pgm_dp reads, e.g. a learner
in its ``pyproject.toml``::

    [project.entry-points."pgm_dp.learners"]
    mine = "my_package.learner:SPEC"     # a LearnerSpec, or a function returning one

:func:`load_plugins` imports every entry point of one group and returns the loaded objects
by name; the registries call it once, on first use (the learner registry:
:mod:`pgm_dp.learners.registry`). A plugin that fails to import is skipped with a
:class:`PluginWarning`, so one broken package never breaks the others.

>>> load_plugins("pgm_dp.no_such_group")
{}
"""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points

__all__ = ["PluginWarning", "load_plugins"]


class PluginWarning(UserWarning):
    """A plugin could not be loaded (or registered) and was skipped."""


def load_plugins(group: str) -> dict[str, object]:
    """``{name: object}`` of every entry point of ``group`` in the installed distributions,
    each imported now (``EntryPoint.load``). An entry point that fails to load, or whose name
    an earlier one already took, is skipped with a :class:`PluginWarning`."""
    found: dict[str, object] = {}
    for ep in entry_points(group=group):
        if ep.name in found:
            warnings.warn(
                f"{group} plugin {ep.name!r} ({ep.value}) skipped: the name is taken",
                PluginWarning,
                stacklevel=2,
            )
            continue
        try:
            found[ep.name] = ep.load()
        except Exception as err:  # any failure of third-party code: warn, keep the rest
            warnings.warn(
                f"{group} plugin {ep.name!r} ({ep.value}) failed to load: "
                f"{type(err).__name__}: {err}",
                PluginWarning,
                stacklevel=2,
            )
    return found
