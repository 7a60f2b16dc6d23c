"""Convex counting numbers for reweighted BP: tree-reweighted edge appearance probabilities.

Reweighted BP (:func:`.loopy_bp.loopy_bp`, ``counting=``) gives each factor ``a`` a counting
number ``rho_a`` and each variable ``v`` the number ``c_v = 1 - sum_{a ni v} rho_a``; its
free energy's entropy is ``sum_a rho_a H(b_a) + sum_v c_v H(b_v)``. ``rho = 1`` is the
Bethe entropy. :func:`trw_counting_numbers` picks ``rho`` so that this entropy is concave
on the local polytope, hence the approximate ``log Z`` convex in the log-potentials and
BP's fixed point unique:

* pairwise models (every clique of at most two variables): the tree-reweighted entropy of
  Wainwright, Jaakkola & Willsky (2005, IEEE Trans. Inf. Theory 51(7)), with
  ``rho_e`` the edge appearance probabilities of the *uniform* distribution over spanning
  trees (forests: per connected component), which by Kirchhoff's theorem are the edges'
  effective resistances ``(e_s - e_t)^T L^+ (e_s - e_t)`` (``L`` the graph Laplacian). On a
  tree every ``rho_e = 1`` (BP exact); on a grid ``sum_e rho_e = |V| - 1``;
* single-variable cliques ``rho = 1`` (they are node potentials);
* with larger cliques, an acyclic factor graph keeps ``rho = 1`` (exact); otherwise
  ``rho_a = 1 / max_{v in a} d_v`` (``d_v`` the variable's cliques of two or more
  variables), so that every ``c_v >= 0`` besides the cancelling unary terms: a non-negative
  sum of entropies, concave (Heskes 2006, JAIR 26: his convexity condition, trivially).

>>> from pgm_dp import Domain
>>> dom = Domain(["A", "B", "C"], [2, 2, 2])
>>> trw_counting_numbers(dom, (("A", "B"), ("B", "C"), ("A", "C"))).round(4).tolist()
[0.6667, 0.6667, 0.6667]
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph

from ..domain import Clique, Domain

__all__ = ["trw_counting_numbers"]

_DENSE_LIMIT = 4000  # variables up to which L^+ is formed densely
_FORESTS = 64  # random spanning forests averaged beyond it


@functools.lru_cache(maxsize=32)
def trw_counting_numbers(domain: Domain, cliques: tuple[Clique, ...]) -> np.ndarray:
    """Counting numbers ``rho`` (one per clique, in order; read-only, cached per structure)
    that make reweighted BP's free energy convex; see the module docstring for the rule."""
    rho = _counting_numbers(domain, tuple(cliques))
    rho.setflags(write=False)
    return rho


def _counting_numbers(domain: Domain, cliques: tuple[Clique, ...]) -> np.ndarray:
    sizes = np.array([len(c) for c in cliques])
    rho = np.ones(len(cliques))
    pair = sizes == 2
    if np.all(sizes <= 2):
        ends = np.array([[domain.index(v) for v in c] for c in cliques if len(c) == 2])
        if len(ends):
            rho[pair] = _edge_appearance(len(domain.attributes), ends.reshape(-1, 2))
        return rho
    if _acyclic(domain, cliques):
        return rho
    multi = sizes >= 2
    degree = np.zeros(len(domain.attributes))
    for c in np.asarray(cliques, dtype=object)[multi]:
        degree[[domain.index(v) for v in c]] += 1
    for i, c in enumerate(cliques):
        if len(c) >= 2:
            rho[i] = 1.0 / max(degree[domain.index(v)] for v in c)
    return rho


def _laplacian(n: int, ends: np.ndarray, weights=None) -> scipy.sparse.csr_matrix:
    w = np.ones(len(ends)) if weights is None else weights
    adj = scipy.sparse.coo_matrix((w, (ends[:, 0], ends[:, 1])), shape=(n, n))
    adj = (adj + adj.T).tocsr()
    return scipy.sparse.diags(np.asarray(adj.sum(axis=1)).ravel()) - adj


def _edge_appearance(n: int, ends: np.ndarray) -> np.ndarray:
    """``P(e in T)`` for ``T`` a uniform spanning forest: effective resistances (exact,
    ``L^+`` by a dense Cholesky factorisation) up to ``_DENSE_LIMIT`` variables; beyond,
    the fraction of ``_FORESTS`` random minimum spanning forests (random weights, fixed
    seed) holding each edge (a distribution over spanning forests too: a valid TRW
    choice)."""
    if n <= _DENSE_LIMIT:  # (L + P)^-1 = L^+ + P, P the projector onto L's kernel
        lap = _laplacian(n, ends).toarray()
        _, labels = scipy.sparse.csgraph.connected_components(lap != 0, directed=False)
        same = labels[:, None] == labels[None, :]
        lap += same / np.bincount(labels)[labels][:, None]
        inv = scipy.linalg.cho_solve(scipy.linalg.cho_factor(lap), np.eye(n))
        s, t = ends[:, 0], ends[:, 1]
        r = inv[s, s] + inv[t, t] - 2.0 * inv[s, t]
        return np.clip(r, 1e-12, 1.0)
    rng = np.random.default_rng(0)
    hits = np.zeros(len(ends))
    for _ in range(_FORESTS):
        w = rng.random(len(ends)) + 1e-9
        graph = scipy.sparse.coo_matrix((w, (ends[:, 0], ends[:, 1])), shape=(n, n)).tocsr()
        tree = scipy.sparse.csgraph.minimum_spanning_tree(graph).tocoo()
        chosen = {(min(a, b), max(a, b)) for a, b in zip(tree.row, tree.col, strict=True)}
        hits += [(min(a, b), max(a, b)) in chosen for a, b in ends]
    return np.maximum(hits / _FORESTS, 1.0 / _FORESTS)


def _acyclic(domain: Domain, cliques: tuple[Clique, ...]) -> bool:
    """Whether the bipartite factor graph (variables and cliques as nodes) is a forest."""
    n_vars = len(domain.attributes)
    rows = [n_vars + f for f, c in enumerate(cliques) for _ in c]
    cols = [domain.index(v) for c in cliques for v in c]
    n = n_vars + len(cliques)
    graph = scipy.sparse.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    used = np.zeros(n, bool)
    used[rows], used[cols] = True, True
    _, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
    components = len(np.unique(labels[used]))
    return len(rows) == int(used.sum()) - components
