"""``python -m reproductions bernstein2017 fig2``: Bernstein et al. (2017) Fig. 2, KL vs N per
epsilon (resumable).

Arguments only (checked while parsing); :mod:`reproductions.bernstein2017.fig2` is imported
to run.
"""

from __future__ import annotations

import argparse

from pgm_dp.cli._args import int_at_least
from pgm_dp.cli.compare import add_common_arguments, add_graph_arguments

__all__ = ["add_parser"]


def _run(a: argparse.Namespace) -> None:
    from . import fig2

    result = fig2.run_fig2(
        a.graphs, a.N, a.eps, a.populations, a.replications, a.learners, T=a.T, k=a.k,
        seed=a.seed, out_dir=a.out,
    )  # fmt: skip
    fig2.print_result(result)


def add_parser(subparsers) -> None:
    """Register ``fig2``."""
    p = subparsers.add_parser("fig2", help="Bernstein et al. Fig. 2: KL vs N per epsilon")
    p.add_argument(
        "--graphs", nargs="+", default=["chain", "er"], choices=["chain", "er"], help="models"
    )
    add_graph_arguments(p, [10_000, 100_000], [0.01, 0.1, 0.5, 1.0])
    p.add_argument(
        "--populations", type=int_at_least(1), default=5, help="data sets per (graph, N)"
    )
    p.add_argument("--replications", type=int_at_least(1), default=5, help="releases per data set")
    add_common_arguments(p)
    p.set_defaults(func=_run)
