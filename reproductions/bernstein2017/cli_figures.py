"""``python -m reproductions bernstein2017 figures``: Bernstein et al. (2017) Fig. 1(a)-(c)
and 3(a).

Arguments only (checked while parsing); :mod:`reproductions.bernstein2017.figures` is
imported to run.
"""

from __future__ import annotations

import argparse

from pgm_dp.cli._args import int_at_least, output_dir

__all__ = ["add_parser", "FIGURES"]

#: figure -> one-line description (the runs: ``bernstein_figures.FIGURES``, tested equal).
FIGURES = {
    "fig1a": "Fig. 1(a): MSE of marginals vs N",
    "fig1b": "Fig. 1(b): projection vs N",
    "fig1c": "Fig. 1(c): KL vs lambda",
    "fig3a": "Fig. 3(a): true vs inferred marginals",
}


def _run(a: argparse.Namespace):
    from .figures import run_figure

    return run_figure(a)


def add_parser(subparsers) -> None:
    """Register ``figures {fig1a, fig1b, fig1c, fig3a}``."""
    p = subparsers.add_parser("figures", help="Bernstein et al. (2017) Fig. 1(a)-(c) and 3(a)")
    p.add_argument("figure", choices=list(FIGURES), help="; ".join(FIGURES.values()))
    p.add_argument(
        "--trials", type=int_at_least(1), default=None, help="trials per setting (unset: 3)"
    )
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
    p.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    p.add_argument("--progress", action="store_true", help="show progress bars")
    p.add_argument(
        "--out", type=output_dir, default="pgm_dp_results", help="folder for the csv and png"
    )
    p.set_defaults(func=_run)
