"""Conversion to and from pgmpy models.

pgmpy factors hold non-negative *values*; pgm_dp holds log-potentials, so conversion takes
logs (zero values become ``-inf``: structural zeros) and exponentiates back (each table is
shifted by its maximum first, which changes only the normaliser). Several pgmpy factors on
the same variables are merged by adding their log-values. A variable's pgmpy state names
become its labels in the :class:`~pgm_dp.Domain` (the order of the first factor naming it;
other factors are permuted to that order), so data with those labels encode correctly
whatever order a frame's categories have; default state names ``0..k-1`` mean no labels.

A pgmpy model without factors / CPDs is a **structure**: pass ``domain=`` (sizes and labels)
and it becomes a model with zero log-potentials on the maximal cliques of a Markov network,
or on each variable's family (itself and its parents) of a Bayesian network.
"""

from __future__ import annotations

from collections.abc import Hashable

import networkx as nx
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


def _structure(model, nodes, domain: Domain | None):
    """Cliques of a factor-less pgmpy model (see module doc), with zero tables."""
    if domain is None:
        raise DomainError(
            "the pgmpy model has no factors / CPDs: pass domain= (sizes and labels of its "
            "variables) to use it as a structure"
        )
    for v in nodes:
        domain.index(v)
    if hasattr(model, "get_parents"):  # Bayesian network: families
        cliques = [tuple([v, *model.get_parents(v)]) for v in nodes]
    else:
        graph = nx.Graph()
        graph.add_nodes_from(nodes)
        graph.add_edges_from(model.edges())
        cliques = [tuple(sorted(c, key=domain.index)) for c in nx.find_cliques(graph)]
    cliques = sorted(cliques, key=lambda c: [domain.index(v) for v in c])
    return domain, cliques, [np.zeros(domain.sizes(c)) for c in cliques]


def _state_labels(factor) -> dict:
    names = getattr(factor, "state_names", None) or {}
    out = {}
    for v, k in zip(factor.scope(), factor.cardinality, strict=True):
        states = list(names.get(v, range(int(k))))
        out[v] = None if states == list(range(int(k))) else tuple(states)
    return out


def read_pgmpy(model, domain: Domain | None = None) -> tuple[Domain, list[tuple], list[np.ndarray]]:
    """The domain, cliques and log-potential tables of a pgmpy discrete model (see module
    doc); :meth:`pgm_dp.MarkovRandomField.from_pgmpy` builds the model from them. ``domain``
    is needed for a model without factors and, if given, must match the factors' sizes and
    state names."""
    factors, nodes = _factors_of(model)
    if not factors:
        return _structure(model, nodes, domain)
    sizes: dict[Hashable, int] = {}
    labels: dict[Hashable, tuple | None] = {}
    for f in factors:
        for v, k in zip(f.scope(), f.cardinality, strict=True):
            if sizes.setdefault(v, int(k)) != int(k):
                raise DomainError(f"variable {v!r} has inconsistent cardinalities in pgmpy factors")
        for v, lab in _state_labels(f).items():
            labels.setdefault(v, lab)
    missing = [v for v in nodes if v not in sizes]
    if missing:
        raise DomainError(f"pgmpy variables {missing} appear in no factor; their sizes are unknown")
    names = [v for v in nodes if v in sizes]
    found = Domain(names, [sizes[v] for v in names], [labels[v] for v in names])
    if domain is not None and domain.project(names) != found:
        raise DomainError(f"domain {domain} does not match the pgmpy model's {found}")
    tables: dict[tuple, np.ndarray] = {}
    keys: dict[frozenset, tuple] = {}
    with np.errstate(divide="ignore"):
        for f in factors:
            scope = tuple(f.scope())
            logv = _aligned(f, labels, np.log(np.asarray(f.values, dtype=np.float64)))
            key = keys.setdefault(frozenset(scope), scope)
            logv = np.transpose(logv, [scope.index(v) for v in key])
            tables[key] = tables[key] + logv if key in tables else logv
    cliques = list(tables)
    return found, cliques, [tables[c] for c in cliques]


def _aligned(factor, labels: dict, values: np.ndarray) -> np.ndarray:
    """``values`` with each axis permuted from the factor's state order to ``labels``'."""
    for axis, (v, lab) in enumerate(_state_labels(factor).items()):
        want = labels[v]
        if lab == want:
            continue
        if want is None or lab is None or set(lab) != set(want):
            raise DomainError(f"variable {v!r} has different state names in pgmpy factors")
        values = np.take(values, [lab.index(s) for s in want], axis=axis)
    return values


def write_pgmpy(domain: Domain, cliques, log_potentials):
    """A pgmpy ``DiscreteMarkovNetwork`` with a ``DiscreteFactor`` per clique (the
    domain's labels as state names)."""
    from ..errors import require_extra

    require_extra("pgmpy", "pgmpy", "to_pgmpy")
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
        states = {v: list(domain.labels_of(v)) for v in cl if domain.labels_of(v) is not None}
        values = np.exp(t - shift).ravel()
        net.add_factors(DiscreteFactor(list(cl), list(domain.sizes(cl)), values, states))
    return net
