"""The ``pgm-dp`` command: thin wrappers over :mod:`pgm_dp.experiments`.

``pgm-dp`` with no sub-command runs the main job on its built-in default: ``compare``, the
learner comparison on the third-order chain (``pgm-dp demo`` is the smaller tour).
"""

from __future__ import annotations

import argparse
import sys

from .experiments import adult, bernstein_figures, compare, demo, fig2, prising, zhang

__all__ = ["main", "build_parser"]

_EXPERIMENTS = [demo, compare, fig2, bernstein_figures, adult, prising, zhang]
MAIN_JOB = "compare"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgm-dp",
        description="Learn discrete graphical models under differential privacy.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _EXPERIMENTS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv or [MAIN_JOB])
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    args.func(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
