"""Progress: a light hook for long fits, and progress bars when tqdm is installed.

Learners call :func:`tick` once per iteration of their solvers (L-BFGS iterations of CGM-EM
and of the MLE solver, PSGD steps), and whoever wants to see progress installs a callback
with :func:`progress_hook`. Without a hook a tick is one context-variable lookup.

:func:`tqdm` is ``tqdm.auto.tqdm`` where tqdm is installed (the ``plot`` extra) and a silent
stand-in otherwise, so that progress bars never make tqdm a dependency.

>>> seen = []
>>> with progress_hook(lambda what, n: seen.append((what, n))):
...     tick("cgm")
>>> tick("cgm")  # no hook: nothing happens
>>> seen
[('cgm', 1)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["progress_hook", "tick", "tqdm"]

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


class _SilentBar:
    """What the package uses of a tqdm bar, doing nothing (tqdm is not installed)."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None, **_: Any):
        self.iterable, self.total, self.n = iterable, total, 0

    def __iter__(self) -> Iterator:
        return iter(self.iterable if self.iterable is not None else ())

    def __enter__(self) -> _SilentBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, *_: Any, **__: Any) -> None:
        pass

    def set_postfix(self, *_: Any, **__: Any) -> None:
        pass

    def set_description(self, *_: Any, **__: Any) -> None:
        pass

    def close(self) -> None:
        pass


def tqdm(iterable: Iterable | None = None, *args: Any, **kwargs: Any):
    """``tqdm.auto.tqdm(iterable, *args, **kwargs)``, or a silent bar without tqdm."""
    try:
        from tqdm.auto import tqdm as bar
    except ImportError:
        return _SilentBar(iterable, **kwargs)
    return bar(iterable, *args, **kwargs)
