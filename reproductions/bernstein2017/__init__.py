"""Bernstein, McKenna, Sheldon, Sun & Miklau (ICML 2017), "Differentially private learning
of undirected graphical models using collective graphical models".

* ``fig2`` (:mod:`.fig2`): Fig. 2, KL vs N per epsilon, chain and Erdos-Renyi (resumable);
* ``figures fig1a | fig1b | fig1c | fig3a`` (:mod:`.figures`): Fig. 1(a)-(c) and 3(a);
* ``adult`` (:mod:`.adult`): Sec. 4.2's held-out log-likelihood, on UCI Adult;
* ``cgm-grid`` (:mod:`.cgm_grid`): CGM-EM against naive MLE and mbi on a wider grid.
"""

__all__ = ["add_parsers"]


def add_parsers(subparsers) -> None:
    """Register the paper's experiments (argument modules only: nothing heavy imported)."""
    from . import cli_adult, cli_cgm_grid, cli_fig2, cli_figures

    for module in (cli_fig2, cli_figures, cli_adult, cli_cgm_grid):
        module.add_parser(subparsers)
