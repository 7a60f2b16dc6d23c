"""Conversion to and from pgmpy models.

pgmpy factors hold non-negative *values*; pgm_dp holds log-potentials, so conversion takes
logs (zero values become ``-inf``: structural zeros) and exponentiates back (each table is
shifted by its maximum first, which changes only the normaliser). Several pgmpy factors on
the same variables are merged by adding their log-values. State ``s`` of a pgmpy variable
becomes the integer code ``s`` (pgmpy's state order).
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..domain import Domain
from ..errors import DomainError

__all__ = ["read_pgmpy", "write_pgmpy"]


def _factors_of(model):
    name = type(model).__name__
    if hasattr(model, "get_cpds") and "Bayesian" in name:
        return [cpd.to_factor() for cpd in model.get_cpds()], list(model.nodes())
    if hasattr(model, "get_factors"):
        if "FactorGraph" in name:
            return list(model.get_factors()), list(model.get_variable_nodes())
        return list(model.get_factors()), list(model.nodes())
    raise TypeError(
        f"expected a pgmpy DiscreteMarkovNetwork, FactorGraph or DiscreteBayesianNetwork, "
        f"got {type(model).__name__}"
    )


def read_pgmpy(model) -> tuple[Domain, list[tuple], list[np.ndarray]]:
    """The domain, cliques and log-potential tables of a pgmpy discrete model (see module
    doc); :meth:`pgm_dp.MarkovRandomField.from_pgmpy` builds the model from them."""
    factors, nodes = _factors_of(model)
    if not factors:
        raise DomainError("the pgmpy model has no factors / CPDs")
    sizes: dict[Hashable, int] = {}
    for f in factors:
        for v, k in zip(f.scope(), f.cardinality, strict=True):
            if sizes.setdefault(v, int(k)) != int(k):
                raise DomainError(f"variable {v!r} has inconsistent cardinalities in pgmpy factors")
    missing = [v for v in nodes if v not in sizes]
    if missing:
        raise DomainError(f"pgmpy variables {missing} appear in no factor; their sizes are unknown")
    domain = Domain([v for v in nodes if v in sizes], [sizes[v] for v in nodes if v in sizes])
    tables: dict[tuple, np.ndarray] = {}
    keys: dict[frozenset, tuple] = {}
    with np.errstate(divide="ignore"):
        for f in factors:
            scope = tuple(f.scope())
            logv = np.log(np.asarray(f.values, dtype=np.float64))
            key = keys.setdefault(frozenset(scope), scope)
            logv = np.transpose(logv, [scope.index(v) for v in key])
            tables[key] = tables[key] + logv if key in tables else logv
    cliques = list(tables)
    return domain, cliques, [tables[c] for c in cliques]


def write_pgmpy(domain: Domain, cliques, log_potentials):
    """A pgmpy ``DiscreteMarkovNetwork`` with a ``DiscreteFactor`` per clique."""
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.models import DiscreteMarkovNetwork

    net = DiscreteMarkovNetwork()
    net.add_nodes_from(domain.attributes)
    for cl in cliques:
        net.add_edges_from((a, b) for i, a in enumerate(cl) for b in cl[i + 1 :])
    for cl, table in zip(cliques, log_potentials, strict=True):
        t = np.asarray(table)
        finite = t[np.isfinite(t)]
        shift = finite.max() if finite.size else 0.0
        net.add_factors(DiscreteFactor(list(cl), list(domain.sizes(cl)), np.exp(t - shift).ravel()))
    return net
