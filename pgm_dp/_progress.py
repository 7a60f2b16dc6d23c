"""A light progress hook for long fits: learners call :func:`tick` once per iteration of their
solvers (L-BFGS iterations of CGM-EM and of the MLE solver, PSGD steps), and whoever wants to
see progress installs a callback with :func:`progress_hook`. Without a hook a tick is one
context-variable lookup.

>>> seen = []
>>> with progress_hook(lambda what, n: seen.append((what, n))):
...     tick("cgm")
>>> tick("cgm")  # no hook: nothing happens
>>> seen
[('cgm', 1)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["progress_hook", "tick"]

Hook = Callable[[str, int], None]
_HOOK: ContextVar[Hook | None] = ContextVar("pgm_dp_progress_hook", default=None)


@contextmanager
def progress_hook(hook: Hook | None) -> Iterator[None]:
    """Within the block, :func:`tick` calls ``hook(what, n)`` (``None``: no hook)."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)


def tick(what: str, n: int = 1) -> None:
    """Report ``n`` iterations of ``what`` (a learner or solver name) to the hook, if any."""
    hook = _HOOK.get()
    if hook is not None:
        hook(what, n)
