"""Zhang, Kamath, Kulkarni & Wu (2020): private learning of ±1-spin and ``[k]``-valued MRFs.

* :mod:`.frank_wolfe` — private Frank-Wolfe (Alg. 1), batched over sub-problems;
* :mod:`.pairwise` — Alg. 2 (Ising) and Alg. 3 (pairwise over ``[k]``);
* :mod:`.binary_mrf` — Alg. 4 and Alg. 5 (binary ``t``-wise MRFs);
* :mod:`.pmw` — private multiplicative weights on parities (Alg. 5's release);
* :mod:`.structure` — structure learning by stability (Sec. 6).
"""

from .binary_mrf import BinaryMRFEstimate, ZhangBinaryMRF, learn_binary_mrf, monomials
from .frank_wolfe import private_frank_wolfe
from .pairwise import (
    IsingEstimate,
    PairwiseEstimate,
    ZhangIsing,
    ZhangPairwise,
    check_spins,
    learn_ising,
    learn_pairwise,
    model_from_tables,
    zcdp_for_epsilon,
)
from .pmw import PMW, PMWResult, parity_queries, pmw_release
from .structure import StabilityStructure, StructureResult, learn_structure

__all__ = [
    "BinaryMRFEstimate",
    "IsingEstimate",
    "PMW",
    "PMWResult",
    "PairwiseEstimate",
    "StabilityStructure",
    "StructureResult",
    "ZhangBinaryMRF",
    "ZhangIsing",
    "ZhangPairwise",
    "check_spins",
    "learn_binary_mrf",
    "learn_ising",
    "learn_pairwise",
    "learn_structure",
    "model_from_tables",
    "monomials",
    "parity_queries",
    "pmw_release",
    "private_frank_wolfe",
    "zcdp_for_epsilon",
]
