"""The dispatcher of ``python -m reproductions PAPER EXPERIMENT [options]``.

Only the chosen paper's argument modules are imported (so ``--help`` and a refused argument
are fast); errors are reported as ``pgm-dp``'s are: one line on stderr, exit status 2
(:func:`pgm_dp.cli.run_command`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pgm_dp.cli import OneLineParser, run_command

from . import PAPERS

__all__ = ["build_parser", "main"]

PROG = "python -m reproductions"


def build_parser(paper: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``paper``'s experiments are registered, the other papers listed only."""
    parser = OneLineParser(
        prog=PROG,
        description="Reproduce the papers' experiments (figures, tables) with pgm_dp.",
        epilog=f"'{PROG} PAPER --help' lists a paper's experiments.",
    )
    sub = parser.add_subparsers(dest="paper", metavar="PAPER", parser_class=OneLineParser)
    for name, doc in PAPERS.items():
        if name != paper:
            sub.add_parser(name, help=doc, add_help=False)
            continue
        p = sub.add_parser(name, help=doc, description=doc)
        experiments = p.add_subparsers(
            dest="experiment", metavar="EXPERIMENT", required=True, parser_class=OneLineParser
        )
        importlib.import_module(f"{__package__}.{name}").add_parsers(experiments)
        for q in experiments.choices.values():
            if q.formatter_class is argparse.HelpFormatter:
                q.formatter_class = argparse.ArgumentDefaultsHelpFormatter
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one experiment; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    paper = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(paper if paper in PAPERS else None)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return run_command(args, f"{PROG} {args.paper} {args.experiment}")
