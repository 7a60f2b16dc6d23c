"""A fitted model as a calibrated junction tree, for scoring any model the same way.

A model of any tool (pgm_dp's fits, Private-PGM's MST and AIM in :mod:`pgm_dp.compare.peers`, the
benchmarks' contenders) is exported as its junction tree: the maximal cliques, their
normalised marginal tables and the tree's edges. Then (Lauritzen & Spiegelhalter 1988;
Koller & Friedman 2009, Sec. 10.3) the joint is ``p(x) = prod_C mu_C(x_C) / prod_S
mu_S(x_S)`` over the cliques ``C`` and separators ``S``, and so is the joint of any
connected subtree over its variables.
From that, exactly and without the full joint:

* :meth:`CalibratedTree.marginal` of any variable set: messages over the smallest subtree
  holding the set, each carrying only its separator and the query variables below it;
* :meth:`CalibratedTree.log_prob` of records (held-out log-likelihood);
* :meth:`CalibratedTree.sample`: i.i.d. records by forward sampling from the root.

Only NumPy and networkx (no JAX): the benchmarks' peer driver writes this format from its
own environment with :func:`save_tree`. :meth:`CalibratedTree.to_model` gives the same
distribution as a :class:`~pgm_dp.MarkovRandomField`.
"""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import numpy as np

__all__ = ["CalibratedTree", "save_tree", "load_tree", "data_marginal", "mean_tvd"]


def _sum_to(table: np.ndarray, have: tuple, keep: tuple) -> np.ndarray:
    """``table`` (axes ``have``) summed onto ``keep`` (axes in ``keep``'s order)."""
    ids = {v: i for i, v in enumerate(have)}
    return np.einsum(table, list(range(len(have))), [ids[v] for v in keep])


class CalibratedTree:
    """Maximal cliques (attribute-name tuples), their probability tables (axes in clique
    order) and tree edges ``(i, j)`` between clique indices. A forest is joined into one
    tree by edges with empty separators."""

    def __init__(self, attrs, shape, cliques, tables, edges):
        self.attrs = list(attrs)
        self.shape = dict(zip(self.attrs, (int(s) for s in shape), strict=True))
        self.cliques = [tuple(c) for c in cliques]
        self.tables = []
        for c, t in zip(self.cliques, tables, strict=True):
            t = np.clip(np.asarray(t, dtype=np.float64), 0, None)
            if t.shape != tuple(self.shape[v] for v in c):
                raise ValueError(f"table of {c} has shape {t.shape}")
            self.tables.append(t / t.sum())
        missing = set(self.attrs) - set(itertools.chain(*self.cliques))
        for v in sorted(missing, key=self.attrs.index):  # a variable in no clique: uniform
            self.cliques.append((v,))
            self.tables.append(np.full(self.shape[v], 1.0 / self.shape[v]))
        g = nx.Graph()
        g.add_nodes_from(range(len(self.cliques)))
        g.add_edges_from((int(i), int(j)) for i, j in edges)
        comps = [min(c) for c in nx.connected_components(g)]
        g.add_edges_from(itertools.pairwise(comps))
        if not nx.is_tree(g):
            raise ValueError("the edges do not form a tree over the cliques")
        self.graph = g
        self.root = 0
        self._home = {}
        for i, c in enumerate(self.cliques):
            for v in c:
                self._home.setdefault(v, []).append(i)

    def separator(self, i: int, j: int) -> tuple:
        return tuple(v for v in self.cliques[i] if v in self.cliques[j])

    # -- marginals ---------------------------------------------------------------------
    def marginal(self, query) -> np.ndarray:
        """Exact marginal table of ``query`` (attribute names; axes in that order)."""
        query = tuple(query)
        for i, c in enumerate(self.cliques):
            if set(query) <= set(c):
                return _sum_to(self.tables[i], c, query)
        root = self._home[query[0]][0]
        dist = nx.single_source_shortest_path(self.graph, root)
        keep = {root}
        for v in query[1:]:
            target = min(self._home[v], key=lambda i: len(dist[i]))
            keep.update(dist[target])
        out = self._upward(root, None, keep, set(query))
        vars_, table = out
        return _sum_to(table, vars_, query)

    def _upward(self, node, parent, keep, query):
        """``(vars, table)``: clique ``node``'s table times its subtree's messages, summed
        onto its separator with ``parent`` and the query variables below it, and divided
        by the separator's marginal (a conditional table given the separator)."""
        ops = [self.tables[node], list(self.cliques[node])]
        below = set(self.cliques[node]) & query
        for child in self.graph.neighbors(node):
            if child == parent or child not in keep:
                continue
            cv, ct = self._upward(child, node, keep, query)
            ops += [ct, list(cv)]
            below |= set(cv) & query
        sep = () if parent is None else self.separator(node, parent)
        out = tuple(sep) + tuple(v for v in sorted(below, key=self.attrs.index) if v not in sep)
        ids = {v: k for k, v in enumerate(self.attrs)}
        args = []
        for k in range(0, len(ops), 2):
            args += [ops[k], [ids[v] for v in ops[k + 1]]]
        table = np.einsum(*args, [ids[v] for v in out], optimize="greedy")
        if sep:
            mu_s = _sum_to(self.tables[node], self.cliques[node], sep)
            mu_s = mu_s.reshape(mu_s.shape + (1,) * (len(out) - len(sep)))
            table = np.divide(table, mu_s, out=np.zeros_like(table), where=mu_s > 0)
        return out, table

    def to_model(self):
        """The same distribution as a :class:`~pgm_dp.MarkovRandomField` over the cliques:
        the root clique's log-marginal plus, for every other clique, its log-conditional
        given its separator with its parent (``log mu_C - log mu_S``; ``-inf`` where
        ``mu_C`` is zero)."""
        from ..domain import Domain
        from ..models import MarkovRandomField

        tables = [None] * len(self.cliques)
        with np.errstate(divide="ignore", invalid="ignore"):
            tables[self.root] = np.log(self.tables[self.root])
            for parent, node in self._edges_from_root():
                c, t = self.cliques[node], self.tables[node]
                sep = self.separator(parent, node)
                mu = _sum_to(t, c, sep)
                shape = [self.shape[v] if v in sep else 1 for v in c]
                order = [v for v in c if v in sep]
                mu = np.transpose(mu, [sep.index(v) for v in order]).reshape(shape)
                tables[node] = np.where(t > 0, np.log(t) - np.log(np.where(mu > 0, mu, 1)), -np.inf)
        domain = Domain(self.attrs, [self.shape[v] for v in self.attrs])
        return MarkovRandomField(domain, self.cliques, tables)

    # -- likelihood and sampling -------------------------------------------------------
    def _edges_from_root(self):
        return list(nx.bfs_edges(self.graph, self.root))

    def log_prob(self, codes: np.ndarray) -> np.ndarray:
        """``log p(x)`` of each row of an ``(n, d)`` code array (columns in ``attrs``)."""
        col = {v: codes[:, k] for k, v in enumerate(self.attrs)}
        with np.errstate(divide="ignore"):
            total = np.zeros(codes.shape[0])
            for c, t in zip(self.cliques, self.tables, strict=True):
                total += np.log(t[tuple(col[v] for v in c)])
            for i, j in self._edges_from_root():
                sep = self.separator(i, j)
                if sep:
                    mu = _sum_to(self.tables[j], self.cliques[j], sep)
                    total -= np.log(mu[tuple(col[v] for v in sep)])
        return total

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. records (an ``(n, d)`` code array, columns in ``attrs``)."""
        out = np.full((n, len(self.attrs)), -1, dtype=np.int64)
        pos = {v: k for k, v in enumerate(self.attrs)}
        c, t = self.cliques[self.root], self.tables[self.root]
        flat = rng.choice(t.size, size=n, p=t.ravel())
        for v, x in zip(c, np.unravel_index(flat, t.shape), strict=True):
            out[:, pos[v]] = x
        for parent, node in self._edges_from_root():
            sep = self.separator(parent, node)
            rest = tuple(v for v in self.cliques[node] if v not in sep)
            if not rest:
                continue
            cond = _sum_to(self.tables[node], self.cliques[node], sep + rest)
            cond = cond.reshape(math.prod(self.shape[v] for v in sep), -1)
            sizes = tuple(self.shape[v] for v in sep)
            key = np.ravel_multi_index(tuple(out[:, pos[v]] for v in sep), sizes) if sep else 0
            key = np.broadcast_to(key, (n,))
            order = np.argsort(key, kind="stable")
            groups, starts = np.unique(key[order], return_index=True)
            draw = np.empty(n, dtype=np.int64)
            for k, rows in zip(groups, np.split(order, starts[1:]), strict=True):
                p = cond[k]
                p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
                draw[rows] = rng.choice(p.size, size=rows.size, p=p)
            for v, x in zip(
                rest, np.unravel_index(draw, [self.shape[v] for v in rest]), strict=True
            ):
                out[:, pos[v]] = x
        return out


def save_tree(path, attrs, shape, cliques, tables, edges) -> None:
    """Write a calibrated junction tree as ``.npz`` (read back by :func:`load_tree`)."""
    meta = {
        "attrs": list(attrs),
        "shape": [int(s) for s in shape],
        "cliques": [list(c) for c in cliques],
        "edges": [list(map(int, e)) for e in edges],
    }
    arrays = {f"t{i}": np.asarray(t, dtype=np.float64) for i, t in enumerate(tables)}
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)


def load_tree(path) -> CalibratedTree:
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        tables = [z[f"t{i}"] for i in range(len(meta["cliques"]))]
    return CalibratedTree(meta["attrs"], meta["shape"], meta["cliques"], tables, meta["edges"])


def data_marginal(codes: np.ndarray, cols: tuple[int, ...], shape) -> np.ndarray:
    """Normalised contingency table of columns ``cols`` of a code array."""
    sizes = [int(shape[c]) for c in cols]
    flat = np.ravel_multi_index(tuple(codes[:, c] for c in cols), sizes)
    t = np.bincount(flat, minlength=math.prod(sizes)).reshape(sizes)
    return t / t.sum()


def mean_tvd(codes: np.ndarray, shape, subsets, marginal) -> float:
    """Mean total variation distance ``0.5 * |p - q|_1`` between the data's marginals and
    ``marginal(subset)`` over ``subsets`` (tuples of column indices)."""
    tvd = [0.5 * np.abs(data_marginal(codes, s, shape) - marginal(s)).sum() for s in subsets]
    return float(np.mean(tvd))
