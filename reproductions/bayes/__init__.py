"""Noise-aware posteriors of private releases (:mod:`pgm_dp.bayes`): ``calibration``,
``sbc`` and ``example`` (:mod:`.experiments`, arguments in :mod:`.cli`).
"""

__all__ = ["add_parsers"]


def add_parsers(subparsers) -> None:
    """Register the experiments (argument modules only: nothing heavy imported)."""
    from .cli import add_parser

    add_parser(subparsers)
