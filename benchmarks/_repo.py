"""Puts the repository root on ``sys.path`` (imported first by the benchmarks that use the
``reproductions`` package, which is not installed with ``pgm_dp``: run them from a clone)."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` from the command line as ``(key, value)``: an int, a float, ``None`` or
    the text itself (learner options such as ``--cgm prior_cells=100``)."""
    key, value = text.split("=", 1)
    if value == "None":
        return key, None
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value
