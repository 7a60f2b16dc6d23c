"""Progress: a light hook for long fits, progress lines on stderr, and progress bars when
tqdm is installed.

Learners call :func:`tick` once per iteration of their solvers (L-BFGS iterations of CGM-EM
and of the MLE solver, PSGD steps), and whoever wants to see progress installs a callback
with :func:`progress_hook`. Without a hook a tick is one context-variable lookup.

Long steps (AIM's rounds, NUTS's iterations, sampling's chunks, compare's fits) call
:func:`step` with a count, ``step("AIM round", 7, 22)``; the command line installs a
:class:`Progress` with :func:`reporting`, which writes one line per step on stderr with the
count, the solver iterations ticked meanwhile, the time spent and an estimate of the time
left. Without a reporter a step does nothing. The reporter is process-wide, not per thread:
NUTS reports from JAX's host callbacks, which may run on another thread.

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

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO

__all__ = [
    "progress_hook",
    "tick",
    "tqdm",
    "Progress",
    "reporting",
    "step",
    "end_line",
    "duration",
]

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


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it: ``"8s"``, ``"3m05s"``, ``"1h02m"``.

    >>> duration(8.4), duration(185), duration(3725)
    ('8s', '3m05s', '1h02m')
    """
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Progress lines on ``stream`` (default stderr), one per step (:func:`step`).

    On a terminal the current step's line is rewritten in place (at most every
    ``every`` seconds, default 0.5); elsewhere (a log file, a pipe) a line is written when a
    step starts, when it completes and at most every ``every`` seconds between (default
    10). A line reads ``  AIM round 7/22: 41% of its budget; mle 1,204 iterations (1m12s,
    about 1m40s left)``: the estimate of the time left extrapolates the rate of the counts
    reported so far within the step (from the first count after its start, so that a
    compilation before the first count does not count as progress).

    Args:
        stream: where the lines go (``sys.stderr`` by default).
        every: least seconds between two lines of one step (``None``: as above).
        clock: the time source (``time.monotonic``; tests pass their own).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty()) if callable(isatty) else False
        self.every = (0.5 if self.live else 10.0) if every is None else every
        self.clock = clock
        self._lock = threading.Lock()
        self._what: str | None = None
        self._last = 0.0
        # per step: its start, its first count and its latest, each as (time, count)
        self._timing: dict[str, tuple] = {}
        self._state: tuple[int | None, int | None, str] = (None, None, "")
        self._iterations: dict[str, int] = {}
        self._width = 0

    def step(
        self, what: str, done: int | None = None, total: int | None = None, note: str = ""
    ) -> None:
        """``done`` of ``total`` units of ``what`` are complete (``None``: it started)."""
        with self._lock:
            now = self.clock()
            new = what != self._what
            if new:
                self._end_line()
                self._what, self._iterations = what, {}
            start, first, last = self._timing.get(what, (now, None, None))
            back = done is not None and last is not None and done < last[1]
            if what not in self._timing or done is None or back:  # (re)started
                start, first, last = now, None, None
            if done is not None and first is None:  # count from here
                first = (now, done)
            if done is not None and (last is None or done != last[1]):
                last = (now, done)
            self._timing[what] = (start, first, last)
            self._state = (done, total, note)
            complete = total is not None and done is not None and done >= total
            if new or complete or now - self._last >= self.every:
                self._write(now)

    def tick(self, what: str, n: int = 1) -> None:
        """``n`` solver iterations of ``what`` (a hook of :func:`progress_hook`): counted on
        the current step's line."""
        with self._lock:
            if self._what is None:
                return
            self._iterations[what] = self._iterations.get(what, 0) + n
            now = self.clock()
            if now - self._last >= self.every:
                self._write(now)

    def close(self) -> None:
        """End the current line (a terminal's line is kept)."""
        with self._lock:
            self._end_line()
            self._what = None

    def line(self, now: float) -> str:
        """The current step's line (without a line end)."""
        done, total, note = self._state
        text = f"  {self._what}"
        if done is not None:
            text += f" {done:,}" + ("" if total is None else f"/{total:,}")
        extra = [note] if note else []
        extra += [f"{k} {n:,} iterations" for k, n in self._iterations.items()]
        if extra:
            text += ": " + "; ".join(extra)
        start, first, last = self._timing[self._what]
        spent = now - start
        left = _left(now, first, last, total)
        tail = duration(spent) + ("" if left is None else f", about {duration(left)} left")
        return text + (f" ({tail})" if spent >= 1 else " ...")

    def _write(self, now: float) -> None:
        text = self.line(now)
        if self.live:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._last = now

    def _end_line(self) -> None:
        if self.live and self._width:
            self.stream.write("\n")
            self.stream.flush()
        self._width = 0


def _left(now: float, first, last, total) -> float | None:
    """Seconds left at the rate between the ``first`` and the ``last`` count (each
    ``(time, count)``), less the time since the last, or ``None`` (no rate yet)."""
    if first is None or last is None or total is None or last[1] >= total:
        return None
    (t0, d0), (t1, d1) = first, last
    if d1 <= d0 or t1 <= t0:
        return None
    return max(0.0, (t1 - t0) / (d1 - d0) * (total - d1) - (now - t1))


_REPORTER: list[Progress | None] = [None]


@contextmanager
def reporting(progress: Progress | None) -> Iterator[None]:
    """Within the block, :func:`step` and :func:`tick` report to ``progress`` (``None``:
    nowhere; process-wide, module docstring); its line is ended at the end."""
    before = _REPORTER[0]
    _REPORTER[0] = progress
    try:
        with progress_hook(None if progress is None else progress.tick):
            yield
    finally:
        _REPORTER[0] = before
        if progress is not None:
            progress.close()


def end_line() -> None:
    """End the reporter's current line, if any (before results are printed: a terminal's
    progress line is not finished with a line end until its step changes)."""
    progress = _REPORTER[0]
    if progress is not None:
        progress.close()


def step(what: str, done: int | None = None, total: int | None = None, note: str = "") -> None:
    """Report that ``done`` of ``total`` units of ``what`` are complete (``None``: the step
    started) to the reporter of :func:`reporting`, if any."""
    progress = _REPORTER[0]
    if progress is not None:
        progress.step(what, done, total, note)


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
