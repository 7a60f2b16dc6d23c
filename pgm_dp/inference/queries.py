"""Any marginal of a model, and batches of them, from one calibration of its junction tree.

The junction tree is calibrated once (Shafer-Shenoy, NumPy, messages normalised in
probability space, in log space where that underflows; no compilation), giving the
normalised table ``β_i`` of every junction-tree clique. Then each query is answered from
the beliefs:

* inside a junction-tree clique: a sum of that clique's belief;
* otherwise: variable elimination on the smallest subtree joining cliques that hold the
  query's variables. On a calibrated junction tree ``p(x) = prod_i β_i / prod_(ij) β_ij``
  (Lauritzen & Spiegelhalter 1988), and so is the joint of any connected subtree over its
  variables; rooting that subtree at a clique holding the query's first variable, each
  other clique sends its parent ``sum (β_c / β_sep) prod(children's messages)`` over the
  variables that are neither in the separator nor queried (Koller & Friedman 2009,
  Sec. 10.3.3, out-of-clique queries).

The tables carried are the query's variables seen so far times one separator, so pairs and
triples of a model of moderate treewidth cost a few small products each: all 91 pairs of a
tree over UCI Adult's 14 attributes take a fraction of a second (``benchmarks/
bench_queries.py``). :meth:`pgm_dp.MarkovRandomField.marginal` and
``MarkovRandomField.marginals(queries)`` answer through here.

>>> import numpy as np
>>> from pgm_dp import Domain
>>> from pgm_dp.inference.junction_tree import build_junction_tree
>>> dom = Domain(["A", "B", "C"], [2, 2, 2])
>>> cliques = (("A", "B"), ("B", "C"))
>>> copy = np.array([[1.0, 0], [0, 1]])  # log-potentials: B copies A, C copies B (mostly)
>>> tree = calibrated(build_junction_tree(dom, cliques), (copy, copy))
>>> np.round(tree.marginal(("A", "C")), 3)  # e^2 + 1 : 2e
array([[0.303, 0.197],
       [0.197, 0.303]])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence

import numpy as np

from ..domain import Clique
from ..errors import DomainError
from .triangulation import JunctionTree

__all__ = ["CalibratedTree", "calibrate_tables", "calibrated", "batch_marginals"]

Table = tuple[tuple[Hashable, ...], np.ndarray]  # (axis names, array)


def _einsum(factors: Sequence[Table], keep: Sequence[Hashable]) -> np.ndarray:
    """``sum_{not keep} prod factors`` with axes named by variables; result in ``keep`` order."""
    ids: dict[Hashable, int] = {}
    args: list = []
    for vs, a in factors:
        args += [a, [ids.setdefault(v, len(ids)) for v in vs]]
    if len(factors) <= 2:
        return np.einsum(*args, [ids[v] for v in keep])
    return np.einsum(*args, [ids[v] for v in keep], optimize="greedy")


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
    if not all(math.isfinite(t) for t in tops):
        return None
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
    """Shafer-Shenoy in log space (robust to any potentials with ``Z > 0``)."""
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
        if not math.isfinite(top):
            raise DomainError("the model gives every state probability zero (log Z = -inf)")
        b = np.exp(b - top)
        mass = float(b.sum())
        log_z = top + math.log(mass) if i == jt.root else log_z
        beliefs.append(b / mass)
    return beliefs, log_z


def calibrate_tables(jt: JunctionTree, log_potentials) -> tuple[list[np.ndarray], float]:
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


@functools.lru_cache(maxsize=64)
def _adjacency(jt: JunctionTree) -> tuple[tuple[int, ...], ...]:
    adj: list[list[int]] = [[] for _ in jt.cliques]
    for a, b in jt.edges:
        adj[a].append(b)
        adj[b].append(a)
    return tuple(tuple(n) for n in adj)


@functools.lru_cache(maxsize=1024)
def _rooted(jt: JunctionTree, root: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(parent, order)`` of the tree rooted at ``root``: each clique's parent (``-1`` for
    the root) and the cliques in breadth-first order."""
    adj = _adjacency(jt)
    parent, order = [-2] * len(jt.cliques), [root]
    parent[root] = -1
    for node in order:  # ``order`` grows while it is read
        for nb in adj[node]:
            if parent[nb] == -2:
                parent[nb] = node
                order.append(nb)
    return tuple(parent), tuple(order)


@functools.lru_cache(maxsize=4096)
def _steiner(jt: JunctionTree, query: frozenset, first: Hashable) -> tuple[int, tuple]:
    """A root clique (a holder of ``first``) and ``((node, parent), ...)`` of a subtree
    joining cliques that hold every query variable (for each the holder nearest the root),
    children before parents. Keyed by structure: computed once per tree and variable set."""
    root = min(
        (i for i, c in enumerate(jt.cliques) if first in c),
        key=lambda i: jt.domain.size(jt.cliques[i]),
    )
    parent, order = _rooted(jt, root)
    keep = {root}
    for v in query - {first}:
        node = next(i for i in order if v in jt.cliques[i])  # nearest holder
        while node not in keep:
            keep.add(node)
            node = parent[node]
    return root, tuple((n, parent[n]) for n in reversed(order) if n in keep)


class CalibratedTree:
    """A calibrated junction tree: ``jt``, the normalised belief of each of its cliques
    (axes in the clique's canonical order) and ``log Z``. Answers any marginal
    (:meth:`marginal`, :meth:`marginals`; module docstring). Each clique's table given a
    separator is computed once and kept, so a batch of queries shares them."""

    __slots__ = ("jt", "beliefs", "log_z", "_conditionals")

    def __init__(self, jt: JunctionTree, beliefs: Sequence[np.ndarray], log_z: float):
        self.jt = jt
        self.beliefs = tuple(beliefs)
        self.log_z = float(log_z)
        self._conditionals: dict[tuple[int, int], np.ndarray] = {}

    def _in_clique(self, holder: int, query: Clique) -> np.ndarray:
        clique = self.jt.cliques[holder]
        axes = tuple(a for a, v in enumerate(clique) if v not in query)
        m = self.beliefs[holder].sum(axis=axes) if axes else self.beliefs[holder]
        kept = tuple(v for v in clique if v in query)
        perm = [kept.index(v) for v in query]
        return m if perm == sorted(perm) else np.transpose(m, perm)

    def _conditional(self, node: int, parent: int) -> np.ndarray:
        """``β_node / β_sep`` of the edge ``(node, parent)``: the clique's table given the
        separator (0 where ``β_sep = 0``, the numerator being 0 there too). At most 1, so
        no overflow however small ``β_sep`` is."""
        key = (node, parent)
        if key not in self._conditionals:
            clique, sep = self.jt.cliques[node], self.jt.separator(node, parent)
            axes = tuple(a for a, v in enumerate(clique) if v not in sep)
            belief = self.beliefs[node]
            marg = belief.sum(axis=axes, keepdims=True) if axes else belief
            cond = np.divide(belief, marg, out=np.zeros_like(belief), where=marg > 0)
            self._conditionals[key] = cond
        return self._conditionals[key]

    def _out_of_clique(self, query: Clique) -> np.ndarray:
        jt, wanted = self.jt, set(query)
        root, edges = _steiner(jt, frozenset(query), query[0])
        messages: dict[int, list[Table]] = {}
        for node, parent in edges:  # children first
            table = self.beliefs[node] if node == root else self._conditional(node, parent)
            factors = [(jt.cliques[node], table), *messages.pop(node, [])]
            if node == root:
                return _einsum(factors, query)
            sep = jt.separator(node, parent)
            present = {v for vs, _ in factors for v in vs}
            keep = tuple(v for v in present if v in wanted or v in sep)
            messages.setdefault(parent, []).append((keep, _einsum(factors, keep)))
        raise AssertionError("the subtree's root sends no message")  # pragma: no cover

    def marginal(self, query: Sequence[Hashable]) -> np.ndarray:
        """The probability table of ``query`` (distinct variables of the domain, axes in
        that order), exact."""
        query = tuple(query)
        holder = self.jt.containing(query)
        if holder is not None:
            return self._in_clique(holder, query)
        return self._out_of_clique(query)

    def marginals(self, queries: Sequence[Sequence[Hashable]]) -> list[np.ndarray]:
        """:meth:`marginal` of each query, in order."""
        return [self.marginal(q) for q in queries]


def calibrated(jt: JunctionTree, log_potentials) -> CalibratedTree:
    """The :class:`CalibratedTree` of ``jt`` for ``log_potentials`` (one table per
    ``jt.factor_cliques``, axes in that clique's order; concrete arrays)."""
    beliefs, log_z = calibrate_tables(jt, log_potentials)
    return CalibratedTree(jt, beliefs, log_z)


def batch_marginals(
    jt: JunctionTree, log_potentials, queries: Sequence[Sequence[Hashable]]
) -> list[np.ndarray]:
    """The probability tables of ``queries`` (axes in each query's order) from one
    calibration of ``jt`` (module docstring)."""
    return calibrated(jt, log_potentials).marginals(queries)
