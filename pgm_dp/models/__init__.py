"""Models: the :class:`MarkovRandomField` pytree, the papers' model families, pgmpy in/out."""

from .families import (
    dirichlet_pairwise,
    erdos_renyi,
    ising,
    pairwise,
    random_tree,
    third_order_chain,
)
from .mrf import MarkovRandomField

__all__ = [
    "MarkovRandomField",
    "third_order_chain",
    "erdos_renyi",
    "random_tree",
    "ising",
    "pairwise",
    "dirichlet_pairwise",
]
