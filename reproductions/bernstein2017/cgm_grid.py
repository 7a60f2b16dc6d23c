"""CGM-EM against naive MLE and mbi on a grid wider than Bernstein et al.'s Fig. 2.

Graph families (third-order chain, Erdős–Rényi, random tree; ``T`` variables), domain sizes
``k``, record counts ``N``, budgets ``epsilon`` and release mechanisms (Laplace at
``epsilon``-DP, Gaussian at ``(epsilon, 1/N)``-DP), each cell ``populations x replications``
releases fitted by every learner asked for (mbi's mirror descent at 300 / 1,000 / 3,000
iterations needs the ``bench`` extra). Rows go to ``cgm_grid_runs.csv`` block by block, and a
run resumes where an earlier one stopped (:func:`reproductions.bernstein2017.fig2.run_blocks`).
:func:`grid_summary` gives per cell the median KL of each learner, CGM's ratio to naive MLE
and to mbi's best iteration count, the non-private KL and whether every fit converged.

>>> r = run_grid(graphs=("tree",), ks=(2,), Ns=(300,), epsilons=(1.0,),
...              mechanisms=("gaussian",), populations=1, replications=1,
...              learners=("nonprivate", "naive", "cgm"), T=4, progress=False, out_dir=None)
>>> list(r.summary.columns[:3])
['nonprivate', 'naive', 'cgm']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pgm_dp.compare.graphs import check_settings, columns

from .fig2 import run_blocks

__all__ = ["GridResult", "grid_summary", "plot_grid", "run_grid"]

_CSV = "cgm_grid_runs.csv"
_CELL = ["graph", "k", "N", "epsilon", "mechanism"]


@dataclass(frozen=True)
class GridResult:
    """``runs``: one row per fit; ``summary``: :func:`grid_summary`; ``plot``: the PNG."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    plot: Path | None


def run_grid(
    graphs: Sequence[str] = ("chain", "er", "tree"),
    ks: Sequence[int] = (2, 4, 6, 10),
    Ns: Sequence[int] = (10_000, 100_000, 1_000_000),
    epsilons: Sequence[float] = (0.1, 0.5, 1.0, 5.0),
    mechanisms: Sequence[str] = ("laplace", "gaussian"),
    populations: int = 3,
    replications: int = 3,
    learners: Sequence[str] = ("nonprivate", "naive", "cgm", "mbi"),
    T: int = 10,
    seed: int = 0,
    progress: bool = True,
    out_dir: str | Path | None = "pgm_dp_results",
) -> GridResult:
    """Run (or resume) the grid; see the module docstring."""
    for graph in graphs:
        for k in ks:
            for N in Ns:
                for mech in mechanisms:
                    check_settings(
                        graph, T, k, N, epsilons, populations, replications, learners, mech
                    )
    path = None if out_dir is None else Path(out_dir) / _CSV
    tables = []
    for k in ks:
        for mech in mechanisms:
            setting = {"T": int(T), "k": int(k), "seed": int(seed), "mechanism": mech}
            grid = (graphs, Ns, epsilons, populations, replications, learners)
            table = run_blocks(grid, setting, path, progress)
            keep = (table.k == k) & (table.mechanism == mech) & (table["T"] == T)
            keep &= table.graph.isin(graphs) & table.N.isin(Ns) & table.epsilon.isin(epsilons)
            keep &= (table.population < populations) & (table.replication < replications)
            tables.append(table[keep & (table.seed == seed)])
    runs = pd.concat(tables, ignore_index=True).drop_duplicates()
    summary = grid_summary(runs)
    plot = None if out_dir is None else plot_grid(summary, Path(out_dir) / "cgm_grid.png")
    return GridResult(runs, summary, plot)


def grid_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: median KL of each learner, ``cgm/naive``, ``cgm/best_mbi`` (mbi's best
    iteration count in that cell), ``converged`` (the fraction of CGM fits that did)."""
    table = runs.pivot_table(index=_CELL, columns="learner", values="kl", aggfunc="median")
    table = table[[c for c in columns() if c in table.columns]]
    table.columns.name = None
    if {"cgm", "naive"} <= set(table.columns):
        table["cgm/naive"] = table["cgm"] / table["naive"]
    mbi = [c for c in table.columns if c.startswith("mbi")]
    if mbi and "cgm" in table.columns:
        table["cgm/best_mbi"] = table["cgm"] / table[mbi].min(axis=1)
    cgm = runs[runs.learner == "cgm"]
    if not cgm.empty and "converged" in cgm:
        table["converged"] = cgm.groupby(_CELL)["converged"].mean()
    return table


def plot_grid(summary: pd.DataFrame, path: str | Path) -> Path:
    """CGM's KL ratio to naive MLE (and to mbi's best) per cell, against the non-private KL."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    x = summary["nonprivate"] if "nonprivate" in summary else np.arange(len(summary))
    for ratio, marker in (("cgm/naive", "o"), ("cgm/best_mbi", "s")):
        if ratio in summary:
            ax.scatter(x, summary[ratio], marker=marker, label=f"CGM / {ratio[4:]}", alpha=0.7)
    ax.axhline(1.0, color="k", lw=1)
    if np.all(np.asarray(x, dtype=float) > 0):  # a non-private KL can be exactly 0
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("non-private KL of the cell" if "nonprivate" in summary else "cell")
    ax.set_ylabel("median KL ratio (below 1: CGM better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _print(result: GridResult) -> None:
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(result.summary.to_string(float_format=lambda x: f"{x:.4g}"))
    s = result.summary
    for ratio in ("cgm/naive", "cgm/best_mbi"):
        if ratio in s:
            worst = s[ratio].idxmax()
            print(f"{ratio}: worst {s[ratio].max():.3f} at {worst}; <= 1.01 in ", end="")
            print(f"{int((s[ratio] <= 1.01).sum())} of {len(s)} cells")
    if "converged" in s:
        print(f"CGM fits converged: {s['converged'].mean():.1%}")
    if result.plot is not None:
        print(f"Plot written to {result.plot}")
