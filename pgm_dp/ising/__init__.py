"""Ising models on one observed network: couplings, Gibbs sampling and PrIsing.

A single network of ``n`` nodes with ±1 outcomes is one draw from
``P_β(σ) ∝ exp(β/2 · σᵀ J σ)``; this layer holds the network scalings ``J`` of
Chakraborty et al. (2024, Sec. 4), the blocked Gibbs sampler and PrIsing's private
estimator of ``β`` (Algorithm 1). It sits beside the MRF learners, not under them: it takes
one network and returns a scalar, not a :class:`~pgm_dp.MarkovRandomField`.

>>> from pgm_dp.ising import erdos_renyi_graph, scale_erdos_renyi, gibbs_ising, mple
>>> A = erdos_renyi_graph(200, 0.1, rng=0)
>>> J = scale_erdos_renyi(A, 0.1)
>>> sigma = gibbs_ising(J, beta=0.3, n_chains=1, n_sweeps=50, rng=1)[0]
>>> 0.0 <= mple(sigma, J) < 2.0
True
"""

from .gibbs import gibbs_ising
from .networks import (
    Coupling,
    check_coupling,
    erdos_renyi_graph,
    karate_club,
    load_polblogs,
    scale_erdos_renyi,
    scale_regular,
    scale_symmetric,
)
from .prising import (
    PrIsingCalibration,
    PrIsingResult,
    mple,
    prising,
    prising_batch,
    prising_calibration,
    pseudo_likelihood_score,
)

__all__ = [
    "Coupling",
    "PrIsingCalibration",
    "PrIsingResult",
    "check_coupling",
    "erdos_renyi_graph",
    "gibbs_ising",
    "karate_club",
    "load_polblogs",
    "mple",
    "prising",
    "prising_batch",
    "prising_calibration",
    "pseudo_likelihood_score",
    "scale_erdos_renyi",
    "scale_regular",
    "scale_symmetric",
]
