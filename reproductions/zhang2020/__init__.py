"""Zhang, Kamath, Kulkarni & Wu (ICML 2020), "Privately learning Markov random fields".

``recovery | separation | pairwise | pmw | tmrf`` (:mod:`.experiments`, arguments in
:mod:`.cli`).
"""

__all__ = ["add_parsers"]


def add_parsers(subparsers) -> None:
    """Register the paper's experiments (argument modules only: nothing heavy imported)."""
    from .cli import add_parser

    add_parser(subparsers)
