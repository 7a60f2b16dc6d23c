"""What the experiments' plots share: the median-with-range line (labels: the registry's).

>>> import pandas as pd
>>> from matplotlib.figure import Figure
>>> ax = Figure().add_subplot()
>>> runs = pd.DataFrame({"epsilon": [0.1, 0.1, 1.0], "kl": [1.0, 3.0, 0.5]})
>>> median_errorbar(ax, runs, "epsilon", "kl", label="CGM", marker="o")
>>> [float(v) for v in ax.lines[0].get_ydata()]
[2.0, 0.5]
"""

from __future__ import annotations

import pandas as pd

__all__ = ["median_errorbar"]


def median_errorbar(ax, runs: pd.DataFrame, x: str, y: str, label: str, **style) -> None:
    """Median of ``y`` over the runs at each ``x``, with bars to the minimum and maximum."""
    g = runs.groupby(x)[y]
    med, lo, hi = g.median(), g.min(), g.max()
    ax.errorbar(med.index, med.values, yerr=[med - lo, hi - med], capsize=3, label=label, **style)
