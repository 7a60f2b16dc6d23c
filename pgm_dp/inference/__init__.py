"""Inference: pure functions of (domain, cliques, log-potentials).

* :mod:`.junction_tree` — exact marginals and ``log Z`` (jit-compiled, differentiable);
* :mod:`.loopy_bp` — damped sum-product BP with the Bethe free energy (or tree-reweighted,
  with :mod:`.counting`'s convex counting numbers);
* :mod:`.queries` — any marginal, and batches of them, from one NumPy calibration;
* :mod:`.sampling` — exact forward sampling through the junction tree;
* :mod:`.gibbs` — vectorised Gibbs samplers for Ising / pairwise models;
* :mod:`.backend` — the :class:`Backend` protocol the models and learners ask (exact
  junction tree, loopy BP, TRW, or a registered one).
"""

from .backend import (
    TRW,
    Backend,
    JunctionTreeBackend,
    LoopyBP,
    available_backends,
    get_backend,
    register_backend,
    unregister_backend,
)
from .junction_tree import JunctionTree, build_junction_tree, calibrate, clique_marginals
from .loopy_bp import BPResult, loopy_bp
from .queries import CalibratedTree, calibrated
from .sampling import sample_junction_tree

__all__ = [
    "Backend",
    "JunctionTreeBackend",
    "LoopyBP",
    "TRW",
    "available_backends",
    "get_backend",
    "register_backend",
    "unregister_backend",
    "JunctionTree",
    "build_junction_tree",
    "calibrate",
    "clique_marginals",
    "BPResult",
    "loopy_bp",
    "CalibratedTree",
    "calibrated",
    "sample_junction_tree",
]
