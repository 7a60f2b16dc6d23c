"""Many marginals of one model at once, from its calibrated junction tree (NumPy).

AIM scores every candidate marginal against the current model each round, most of them
not inside any clique of the model. :meth:`MarkovRandomField.marginal` builds and compiles
a junction tree per such query; here the model's junction tree is calibrated once
(Shafer-Shenoy in log space, NumPy, no compilation) and each query is answered from the
clique beliefs ``β``:

* inside a junction-tree clique: a sum of that clique's belief;
* otherwise: variable elimination restricted to the smallest subtree joining cliques that
  hold the query's variables. On a junction tree ``p(x) = prod_i β_i / prod_(ij) β_ij``, so
  rooting that subtree at one of its cliques, each clique sends its parent
  ``sum (β_c / β_sep) prod(children's messages)`` over the variables that are neither in
  the separator nor queried (Koller & Friedman 2009, Sec. 10.3.3, out-of-clique queries).

The tables carried are the query's variables seen so far times one separator, so pairs and
triples of a model of moderate treewidth cost a few small products each.

>>> from pgm_dp import Domain, MarkovRandomField
>>> import numpy as np
>>> dom = Domain(["A", "B", "C"], [2, 2, 2])
>>> pots = {("A", "B"): np.array([[1.0, 0], [0, 1]]), ("B", "C"): np.array([[1.0, 0], [0, 1]])}
>>> mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], pots)
>>> m = batch_marginals(mrf, [("A", "C")])[0]
>>> bool(np.allclose(m, mrf.marginal(("A", "C"))))
True
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Hashable, Sequence

import numpy as np

from ...domain import Clique
from ...inference.junction_tree import JunctionTree

__all__ = ["calibrate", "calibrated_beliefs", "clique_tables", "batch_marginals"]

Table = tuple[tuple[Hashable, ...], np.ndarray]  # (axis names, array)


def _einsum(factors: Sequence[Table], keep: Sequence[Hashable]) -> np.ndarray:
    """``sum_{not keep} prod factors`` with axes named by variables; result in ``keep`` order."""
    names: dict[Hashable, str] = {}
    letters = iter(string.ascii_letters)
    for vs, _ in factors:
        for v in vs:
            if v not in names:
                names[v] = next(letters)
    spec = ",".join("".join(names[v] for v in vs) for vs, _ in factors)
    out = "".join(names[v] for v in keep)
    return np.einsum(f"{spec}->{out}", *(a for _, a in factors), optimize=True)


def _logsumexp_to(table: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if not axes:
        return table
    top = np.max(table, axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(table - top), axis=axes, keepdims=True)) + top
    return np.squeeze(out, axis=axes)


@functools.lru_cache(maxsize=64)
def _plan(jt: JunctionTree) -> tuple:
    """Index work of a calibration, once per tree: where each factor goes (target clique,
    axis permutation, broadcast shape), the axes each message sums out and the shape that
    broadcasts a separator table into a clique."""
    dom = jt.domain
    sizes = dict(zip(dom.attributes, dom.shape, strict=True))

    def shape(have, target):
        return tuple(sizes[v] if v in have else 1 for v in target)

    factors = []
    for f, fc in enumerate(jt.factor_cliques):
        i, canon = jt.assignment[f], dom.canonical(fc)
        factors.append((i, tuple(fc.index(v) for v in canon), shape(canon, jt.cliques[i])))
    summed, expand = {}, {}
    for i, j in jt.messages:
        sep = jt.separator(i, j)
        summed[(i, j)] = tuple(a for a, v in enumerate(jt.cliques[i]) if v not in sep)
        expand[(i, j)] = shape(sep, jt.cliques[j])
    return tuple(factors), summed, expand


def _probability_pass(jt, plan, log_psi):
    """Shafer-Shenoy in probability space with normalised messages; ``None`` when a table
    underflows (the log-space pass is then used)."""
    _, summed, expand = plan
    tops = [float(np.max(t)) for t in log_psi]
    psi = [np.exp(t - top) for t, top in zip(log_psi, tops, strict=True)]
    log_z = math.fsum(tops)
    upward = len(jt.cliques) - 1  # the schedule's first messages go toward the root
    msgs: dict[tuple[int, int], np.ndarray] = {}
    incoming: list[list[int]] = [[] for _ in jt.cliques]
    for n, (i, j) in enumerate(jt.messages):
        total = psi[i]
        for k in incoming[i]:
            if k != j:
                total = total * msgs[(k, i)].reshape(expand[(k, i)])
        m = total.sum(axis=summed[(i, j)]) if summed[(i, j)] else np.array(total)
        mass = float(m.sum())
        if not (math.isfinite(mass) and mass > 0):
            return None
        msgs[(i, j)] = m / mass
        log_z += math.log(mass) if n < upward else 0.0
        incoming[j].append(i)
    beliefs = []
    for i in range(len(jt.cliques)):
        b = psi[i]
        for k in incoming[i]:
            b = b * msgs[(k, i)].reshape(expand[(k, i)])
        mass = float(b.sum())
        if not (math.isfinite(mass) and mass > 0):
            return None
        log_z += math.log(mass) if i == jt.root else 0.0
        beliefs.append(b / mass)
    return beliefs, log_z


def _log_pass(jt, plan, log_psi):
    """Shafer-Shenoy in log space (robust to any potentials)."""
    _, summed, expand = plan
    msgs: dict[tuple[int, int], np.ndarray] = {}
    incoming: list[list[int]] = [[] for _ in jt.cliques]
    for i, j in jt.messages:
        total = log_psi[i]
        for k in incoming[i]:
            if k != j:
                total = total + msgs[(k, i)].reshape(expand[(k, i)])
        msgs[(i, j)] = _logsumexp_to(total, summed[(i, j)])
        incoming[j].append(i)
    beliefs, log_z = [], 0.0
    for i in range(len(jt.cliques)):
        b = log_psi[i]
        for k in incoming[i]:
            b = b + msgs[(k, i)].reshape(expand[(k, i)])
        top = float(np.max(b))
        b = np.exp(b - top)
        mass = float(b.sum())
        log_z = top + math.log(mass) if i == jt.root else log_z
        beliefs.append(b / mass)
    return beliefs, log_z


def calibrate(jt: JunctionTree, log_potentials) -> tuple[list[np.ndarray], float]:
    """Shafer-Shenoy calibration (NumPy): the normalised probability table of each
    junction-tree clique (canonical axis order) and ``log Z``. ``log_potentials[f]`` is
    the table of ``jt.factor_cliques[f]``, axes in that clique's order. Messages are passed
    in probability space, normalised, and in log space where that underflows."""
    plan = _plan(jt)
    log_psi = [np.zeros(jt.domain.sizes(c)) for c in jt.cliques]
    for (i, perm, shape), table in zip(plan[0], log_potentials, strict=True):
        t = np.transpose(np.asarray(table, dtype=np.float64), perm)
        log_psi[i] = log_psi[i] + t.reshape(shape)
    out = _probability_pass(jt, plan, log_psi)
    return out if out is not None else _log_pass(jt, plan, log_psi)


def calibrated_beliefs(mrf) -> tuple[JunctionTree, list[np.ndarray]]:
    """``(jt, beliefs)``: the model's junction tree and the normalised probability table of
    each of its cliques (axes in the junction tree's canonical clique order)."""
    jt = mrf.junction_tree()
    return jt, calibrate(jt, mrf.log_potentials)[0]


def clique_tables(jt: JunctionTree, beliefs: Sequence[np.ndarray], query) -> np.ndarray:
    """The marginal of ``query`` (inside a junction-tree clique), axes in its order."""
    holder = jt.containing(query)
    clique = jt.cliques[holder]
    axes = tuple(a for a, v in enumerate(clique) if v not in query)
    m = beliefs[holder].sum(axis=axes) if axes else beliefs[holder]
    kept = tuple(v for v in clique if v in query)
    return np.transpose(m, [kept.index(v) for v in query])


def _tree(jt: JunctionTree) -> dict[int, list[int]]:
    adj: dict[int, list[int]] = {i: [] for i in range(len(jt.cliques))}
    for a, b in jt.edges:
        adj[a].append(b)
        adj[b].append(a)
    return adj


def _steiner(jt: JunctionTree, adj, query: Clique) -> tuple[int, dict[int, int]]:
    """A root clique and ``{node: parent}`` of a subtree joining cliques that hold every
    query variable (for each variable the holder nearest the root)."""
    root = next(i for i, c in enumerate(jt.cliques) if query[0] in c)
    parent, order = {root: -1}, [root]
    for node in order:  # breadth-first: ``order`` grows while it is read
        for nb in adj[node]:
            if nb not in parent:
                parent[nb] = node
                order.append(nb)
    keep = {root}
    for v in query[1:]:
        node = next(i for i in order if v in jt.cliques[i])  # nearest holder
        while node not in keep:
            keep.add(node)
            node = parent[node]
    return root, {n: parent[n] for n in keep}


def _out_of_clique(jt, beliefs, adj, query: Clique) -> np.ndarray:
    """The marginal of ``query`` (no clique holds it) by elimination on a Steiner subtree."""
    root, parent = _steiner(jt, adj, query)
    children: dict[int, list[int]] = {n: [] for n in parent}
    for n, p in parent.items():
        if p >= 0:
            children[p].append(n)
    wanted = set(query)

    def message(node: int) -> Table:
        clique = jt.cliques[node]
        factors: list[Table] = [(clique, beliefs[node])]
        for ch in children[node]:
            factors.append(message(ch))
        if node == root:
            return query, _einsum(factors, query)
        sep = jt.separator(node, parent[node])
        sep_axes = tuple(a for a, v in enumerate(clique) if v not in sep)
        marg = beliefs[node].sum(axis=sep_axes) if sep_axes else beliefs[node]
        factors.append((sep, np.divide(1.0, marg, out=np.zeros_like(marg), where=marg > 0)))
        present = {v for vs, _ in factors for v in vs}
        keep = tuple(v for v in present if v in wanted or v in sep)
        return keep, _einsum(factors, keep)

    return message(root)[1]


def batch_marginals(mrf, queries: Sequence[Sequence[Hashable]]) -> list[np.ndarray]:
    """The model's probability tables on ``queries`` (axes in each query's order), from one
    NumPy calibration of its junction tree (module docstring)."""
    jt, beliefs = calibrated_beliefs(mrf)
    adj = _tree(jt)
    out = []
    for q in queries:
        q = tuple(q)
        if jt.containing(q) is None:
            out.append(_out_of_clique(jt, beliefs, adj, q))
        else:
            out.append(clique_tables(jt, beliefs, q))
    return out
