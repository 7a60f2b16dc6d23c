"""Plotting helpers (matplotlib is optional: ``pip install 'pgm-dp[plot]'``).

:func:`pyplot` imports matplotlib's ``pyplot`` on the Agg back end, or raises an
``ImportError`` that says which extra to install; :func:`have_matplotlib` tells whether a
plot can be drawn at all. :func:`median_errorbar` is the median-with-range line the
comparison and the reproductions' plots share (labels: the registry's).

>>> import pandas as pd
>>> from matplotlib.figure import Figure
>>> ax = Figure().add_subplot()
>>> runs = pd.DataFrame({"epsilon": [0.1, 0.1, 1.0], "kl": [1.0, 3.0, 0.5]})
>>> median_errorbar(ax, runs, "epsilon", "kl", label="CGM", marker="o")
>>> [float(v) for v in ax.lines[0].get_ydata()]
[2.0, 0.5]
"""

from __future__ import annotations

import importlib.util

import pandas as pd

__all__ = ["MISSING_MATPLOTLIB", "have_matplotlib", "median_errorbar", "pyplot"]

#: The message of a plot asked for without matplotlib.
MISSING_MATPLOTLIB = "plots need matplotlib: pip install 'pgm-dp[plot]'"


def have_matplotlib() -> bool:
    """Whether matplotlib is installed (checked without importing it)."""
    return importlib.util.find_spec("matplotlib") is not None


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg back end; an ``ImportError`` naming
    the ``plot`` extra when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError(MISSING_MATPLOTLIB) from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def median_errorbar(ax, runs: pd.DataFrame, x: str, y: str, label: str, **style) -> None:
    """Median of ``y`` over the runs at each ``x``, with bars to the minimum and maximum."""
    g = runs.groupby(x)[y]
    med, lo, hi = g.median(), g.min(), g.max()
    ax.errorbar(med.index, med.values, yerr=[med - lo, hi - med], capsize=3, label=label, **style)
