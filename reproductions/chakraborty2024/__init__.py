"""Chakraborty, Chatterjee & Dalal (AISTATS 2024), "Differentially private inference for
network data" (PrIsing).

``fig1 | mse-n | mse-density | real`` (:mod:`.prising`) and ``coverage``
(:mod:`.prising_posterior`); arguments in :mod:`.cli`.
"""

__all__ = ["add_parsers"]


def add_parsers(subparsers) -> None:
    """Register the paper's experiments (argument modules only: nothing heavy imported)."""
    from .cli import add_parser

    add_parser(subparsers)
