"""Exact sampling from a calibrated junction tree (forward sampling down the tree).

The root clique's configuration is drawn from its marginal; every other clique, visited
breadth-first, draws its new variables from the conditional given its separator with its
parent, ``p(x_C \\ S | x_S) = b_C / b_S``. Draws are vectorised over samples (inverse-CDF on
uniforms from a numpy Generator, one ``searchsorted`` per clique). For models whose junction
tree is too large, see :mod:`pgm_dp.inference.gibbs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from ..errors import DomainError
from .junction_tree import JunctionTree, calibrate

__all__ = ["sample_junction_tree", "draw_from_rows"]


def draw_from_rows(log_table: np.ndarray, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """For each ``(row, u)`` pair, the column drawn from row ``row`` of ``exp(log_table)``
    (rows normalised) by inverse CDF at ``u`` in ``[0, 1)``.

    The per-row CDFs are offset by the row index and flattened, so a single
    ``np.searchsorted`` serves every sample: ``O(n log cells)``; zero-probability cells are
    never drawn.
    """
    n_rows, n_cols = log_table.shape
    top = np.max(log_table, axis=1, keepdims=True)
    # A row of probability zero (an impossible separator state, all -inf) is never asked
    # for; its CDF is set to all ones, which keeps the flattened CDFs sorted.
    possible = np.isfinite(top)
    probs = np.exp(log_table - np.where(possible, top, 0.0))
    cdf = np.cumsum(probs, axis=1)
    cdf = np.where(possible, cdf / np.where(possible, cdf[:, -1:], 1.0), 1.0)
    cdf[:, -1] = 1.0
    flat = (cdf + np.arange(n_rows)[:, None]).ravel()
    idx = np.searchsorted(flat, rows + uniforms, side="right") - rows * n_cols
    return np.clip(idx, 0, n_cols - 1)


def sample_junction_tree(
    jt: JunctionTree, log_potentials: Sequence, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` exact samples, an ``(n, d)`` int64 array of codes in domain order."""
    dom = jt.domain
    log_beliefs, log_z = calibrate(jt, log_potentials)
    if not np.isfinite(float(log_z)):
        raise DomainError("the model gives every state probability zero (log Z = -inf)")
    beliefs = [np.asarray(b) for b in log_beliefs]
    out = np.zeros((n, len(dom)), dtype=np.int64)
    tree = nx.Graph(list(jt.edges))
    tree.add_nodes_from(range(len(jt.cliques)))
    root_vars = jt.cliques[jt.root]
    _draw(out, root_vars, (), beliefs[jt.root].reshape(1, -1), dom, rng)
    for parent, child in nx.bfs_edges(tree, jt.root):
        cl = jt.cliques[child]
        sep = jt.separator(parent, child)
        new = tuple(v for v in cl if v not in sep)
        if not new:
            continue
        axes = [cl.index(v) for v in sep + new]
        table = np.transpose(beliefs[child], axes).reshape(dom.size(sep), dom.size(new))
        _draw(out, new, sep, table, dom, rng)
    return out


def _draw(out, new, sep, log_table, dom, rng):
    """Fill columns ``new`` of ``out`` from rows of ``log_table`` indexed by columns ``sep``."""
    n = out.shape[0]
    if sep:
        rows = np.ravel_multi_index(tuple(out[:, dom.index(v)] for v in sep), dom.sizes(sep))
    else:
        rows = np.zeros(n, dtype=np.int64)
    flat = draw_from_rows(log_table, rows, rng.random(n))
    for v, vals in zip(new, np.unravel_index(flat, dom.sizes(new)), strict=True):
        out[:, dom.index(v)] = vals
