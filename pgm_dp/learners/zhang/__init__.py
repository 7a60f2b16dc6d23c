"""Zhang, Kamath, Kulkarni & Wu (2020): private learning of ±1-spin and ``[k]``-valued MRFs.

* :mod:`.frank_wolfe` — private Frank-Wolfe (Alg. 1), batched over sub-problems;
* :mod:`.pairwise` — Alg. 2 (Ising) and Alg. 3 (pairwise over ``[k]``);
* :mod:`.logistic` — beside Alg. 2: per-node logistic regression with output perturbation;
* :mod:`.binary_mrf` — Alg. 4 and Alg. 5 (binary ``t``-wise MRFs);
* :mod:`.pmw` — private multiplicative weights on parities (Alg. 5's release);
* :mod:`.parities` — parities by PMW or per-query noise, whichever bound is smaller;
* :mod:`.structure` — structure learning by stability (Sec. 6).
"""

from .binary_mrf import BinaryMRFEstimate, ZhangBinaryMRF, learn_binary_mrf, monomials
from .frank_wolfe import private_frank_wolfe
from .logistic import LogisticEstimate, OutputPerturbationIsing, learn_ising_logistic
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
from .parities import ParityRelease, error_bounds, release_parities
from .pmw import PMW, PMWPlan, PMWResult, parity_queries, pmw_plan, pmw_release
from .structure import StabilityStructure, StructureResult, learn_structure

__all__ = [
    "BinaryMRFEstimate",
    "IsingEstimate",
    "LogisticEstimate",
    "OutputPerturbationIsing",
    "PMW",
    "PMWPlan",
    "PMWResult",
    "ParityRelease",
    "PairwiseEstimate",
    "StabilityStructure",
    "StructureResult",
    "ZhangBinaryMRF",
    "ZhangIsing",
    "ZhangPairwise",
    "check_spins",
    "learn_binary_mrf",
    "learn_ising",
    "learn_ising_logistic",
    "learn_pairwise",
    "learn_structure",
    "error_bounds",
    "model_from_tables",
    "monomials",
    "parity_queries",
    "pmw_plan",
    "pmw_release",
    "release_parities",
    "private_frank_wolfe",
    "zcdp_for_epsilon",
]
