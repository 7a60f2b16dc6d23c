"""Exact sampling from a calibrated junction tree (forward sampling down the tree).

The root clique's configuration is drawn from its marginal; every other clique, visited
breadth-first, draws its new variables from the conditional given its separator with its
parent, ``p(x_C \\ S | x_S) = b_C / b_S``. Draws are vectorised over samples (inverse-CDF on
uniforms, one ``searchsorted`` per clique). :class:`ForwardSampler` calibrates once and keeps
the conditional CDFs, so records can be drawn in chunks (:mod:`pgm_dp.table.synth` streams them);
:func:`sample_junction_tree` is one call of it. For models whose junction tree is too large,
see :mod:`pgm_dp.inference.gibbs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from ..errors import DomainError
from .junction_tree import JunctionTree, calibrate

__all__ = ["sample_junction_tree", "draw_from_rows", "ForwardSampler"]


def _flat_cdf(log_table: np.ndarray) -> np.ndarray:
    """The row-normalised CDFs of ``exp(log_table)``, each offset by its row index and
    flattened (sorted), as :func:`draw_from_rows` searches them."""
    n_rows = log_table.shape[0]
    top = np.max(log_table, axis=1, keepdims=True)
    # A row of probability zero (an impossible separator state, all -inf) is never asked
    # for; its CDF is set to all ones, which keeps the flattened CDFs sorted.
    possible = np.isfinite(top)
    probs = np.exp(log_table - np.where(possible, top, 0.0))
    cdf = np.cumsum(probs, axis=1)
    cdf = np.where(possible, cdf / np.where(possible, cdf[:, -1:], 1.0), 1.0)
    cdf[:, -1] = 1.0
    return (cdf + np.arange(n_rows)[:, None]).ravel()


def _search(flat: np.ndarray, n_cols: int, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(flat, rows + uniforms, side="right") - rows * n_cols
    return np.clip(idx, 0, n_cols - 1)


def draw_from_rows(log_table: np.ndarray, rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """For each ``(row, u)`` pair, the column drawn from row ``row`` of ``exp(log_table)``
    (rows normalised) by inverse CDF at ``u`` in ``[0, 1)``.

    The per-row CDFs are offset by the row index and flattened, so a single
    ``np.searchsorted`` serves every sample: ``O(n log cells)``; zero-probability cells are
    never drawn.
    """
    return _search(_flat_cdf(log_table), log_table.shape[1], rows, uniforms)


class ForwardSampler:
    """Forward sampling from a junction tree, calibrated once (module docstring).

    Args:
        jt: the junction tree of the model's cliques.
        log_potentials: the model's log-potential tables, one per ``jt.factor_cliques``.

    :attr:`n_draws` uniforms per record drive :meth:`draw`: the same uniforms give the same
    records, whatever the number of records drawn at once.
    """

    def __init__(self, jt: JunctionTree, log_potentials: Sequence) -> None:
        dom = jt.domain
        log_beliefs, log_z = calibrate(jt, log_potentials)
        if not np.isfinite(float(log_z)):
            raise DomainError("the model gives every state probability zero (log Z = -inf)")
        beliefs = [np.asarray(b, dtype=np.float64) for b in log_beliefs]
        tree = nx.Graph(list(jt.edges))
        tree.add_nodes_from(range(len(jt.cliques)))
        root = jt.cliques[jt.root]
        steps = [((), tuple(root), beliefs[jt.root].reshape(1, -1))]
        for parent, child in nx.bfs_edges(tree, jt.root):
            cl = jt.cliques[child]
            sep = jt.separator(parent, child)
            new = tuple(v for v in cl if v not in sep)
            if new:
                axes = [cl.index(v) for v in sep + new]
                table = np.transpose(beliefs[child], axes).reshape(dom.size(sep), dom.size(new))
                steps.append((tuple(sep), new, table))
        self.domain = dom
        self._steps = [
            (
                [dom.index(v) for v in sep],
                dom.sizes(sep),
                [dom.index(v) for v in new],
                dom.sizes(new),
                _flat_cdf(t),
                t.shape[1],
            )
            for sep, new, t in steps
        ]

    @property
    def n_draws(self) -> int:
        """Uniforms each record takes (one per clique that adds variables)."""
        return len(self._steps)

    def draw(self, uniforms: np.ndarray) -> np.ndarray:
        """Records from ``uniforms`` of shape ``(n_draws, n)`` in ``[0, 1)``: an ``(n, d)``
        int64 array of codes in domain order."""
        n = uniforms.shape[1]
        out = np.zeros((n, len(self.domain)), dtype=np.int64)
        for k, (sep, sep_sizes, new, new_sizes, flat, n_cols) in enumerate(self._steps):
            if sep:
                rows = np.ravel_multi_index(tuple(out[:, j] for j in sep), sep_sizes)
            else:
                rows = np.zeros(n, dtype=np.int64)
            cells = _search(flat, n_cols, rows, uniforms[k])
            if len(new) == 1:
                out[:, new[0]] = cells
            else:
                for j, vals in zip(new, np.unravel_index(cells, new_sizes), strict=True):
                    out[:, j] = vals
        return out


def sample_junction_tree(
    jt: JunctionTree, log_potentials: Sequence, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` exact samples, an ``(n, d)`` int64 array of codes in domain order."""
    sampler = ForwardSampler(jt, log_potentials)
    return sampler.draw(rng.random((sampler.n_draws, n)))
