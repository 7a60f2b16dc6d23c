"""``pgm-dp demo``: a ten-second tour (arguments only; the run imports :mod:`._demo`)."""

from __future__ import annotations

import argparse

from ._args import int_at_least

__all__ = ["add_parser"]


def _run(a: argparse.Namespace) -> None:
    from ._demo import run_demo

    run_demo(a.T, a.k, a.n, a.seed)


def add_parser(subparsers) -> None:
    """Register ``demo``."""
    p = subparsers.add_parser("demo", help="sample from the third-order chain, print marginals")
    p.add_argument("--T", type=int_at_least(4), default=10, help="number of variables")
    p.add_argument("--k", type=int_at_least(2), default=10, help="states per variable")
    p.add_argument("--n", type=int_at_least(1), default=100_000, help="records to sample")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
    p.set_defaults(func=_run)
