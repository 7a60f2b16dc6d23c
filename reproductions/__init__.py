"""The papers' experiments: figures, tables and benchmark drivers, one sub-package per paper.

Not part of the installed package (the wheel holds ``pgm_dp`` only); run from the repository
root, with the ``test`` (or ``plot``) extra installed for matplotlib and tqdm::

    python -m reproductions PAPER EXPERIMENT [options]
    python -m reproductions bernstein2017 fig2 --help

Each paper's sub-package holds its experiments (functions returning tables and writing
plots) and their argument modules (``add_parser(subparsers)``, imported only for the paper
asked for, and importing nothing heavy). ``pgm_dp`` never imports this package.
"""

#: paper -> one-line description; ``reproductions.<paper>.add_parsers`` registers its
#: experiments (:mod:`reproductions._cli`).
PAPERS = {
    "bernstein2017": "Bernstein et al. (ICML 2017), CGM-EM: Fig. 1-3, UCI Adult, a wider grid",
    "zhang2020": "Zhang, Kamath, Kulkarni & Wu (ICML 2020): private Ising and MRF learning",
    "chakraborty2024": "Chakraborty, Chatterjee & Dalal (AISTATS 2024): PrIsing",
    "bayes": "noise-aware posteriors of releases: calibration, SBC, the example",
}
