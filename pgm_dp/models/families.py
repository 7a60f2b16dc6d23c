"""Model families used in the papers' experiments.

* :func:`third_order_chain` and :func:`erdos_renyi`: pairwise models on ``T`` variables with
  ``k`` states whose edge potentials are drawn from a Dirichlet(1) distribution over the
  ``k*k`` cells (Bernstein et al. 2017, Sec. 4.1: "potentials on each edge are drawn from a
  Dirichlet distribution with concentration parameter of one"); the log-potential of an edge
  is the log of its Dirichlet draw.
* :func:`ising`: ``D(A, theta)`` on spins ``{-1, +1}`` (Zhang et al. 2020, Def. 2.1).
* :func:`pairwise`: ``D(W, Theta)`` over ``[k]`` (Zhang et al. 2020, Def. 2.2).

Variables are named ``"X0", "X1", ...``.
"""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx
import numpy as np

from ..domain import Domain
from ..rng import RngLike, as_generator
from .mrf import MarkovRandomField

__all__ = [
    "third_order_chain",
    "erdos_renyi",
    "random_tree",
    "ising",
    "pairwise",
    "dirichlet_pairwise",
]


def _names(p: int) -> list[str]:
    return [f"X{i}" for i in range(p)]


def _count(value, name: str) -> int:
    """``value`` as an int >= 1, or a clear ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def dirichlet_pairwise(
    edges, T: int, k: int, rng: RngLike = None, concentration: float = 1.0
) -> MarkovRandomField:
    """Pairwise MRF on ``T`` variables with ``k`` states and Dirichlet edge potentials."""
    T, k = _count(T, "T"), _count(k, "k")
    rng = as_generator(rng)
    names = _names(T)
    dom = Domain(names, [k] * T)
    cliques = [(names[i], names[j]) for i, j in sorted((min(e), max(e)) for e in edges)]
    alpha = np.full(k * k, float(concentration))
    tables = [np.log(rng.dirichlet(alpha)).reshape(k, k) for _ in cliques]
    return MarkovRandomField(dom, cliques, tables)


def third_order_chain(T: int = 10, k: int = 10, rng: RngLike = None) -> MarkovRandomField:
    """Third-order chain: edge ``i ~ j`` iff ``1 <= |i - j| <= 3`` (Bernstein et al. Sec. 4.1).

    >>> third_order_chain(10, 10, rng=0).cliques[:3]
    (('X0', 'X1'), ('X0', 'X2'), ('X0', 'X3'))
    """
    T = _count(T, "T")
    edges = [(i, j) for i in range(T) for j in range(i + 1, min(T, i + 4))]
    return dirichlet_pairwise(edges, T, k, rng)


def erdos_renyi(
    T: int = 10, k: int = 10, p: float = 0.3, rng: RngLike = None, max_tries: int = 10_000
) -> MarkovRandomField:
    """Connected Erdős–Rényi graph ``G(T, p)`` with Dirichlet(1) edge potentials.

    Bernstein et al. (Sec. 4.1) do not state the edge probability; ``p=0.3`` is our default.
    Graphs are redrawn until connected (rejection sampling, i.e. ``G(T, p)`` conditioned on
    connectivity); a ``ValueError`` is raised after ``max_tries`` disconnected draws.
    """
    if not 0.0 < p <= 1.0:
        raise ValueError(f"edge probability must be in (0, 1], got {p}")
    T = _count(T, "T")
    rng = as_generator(rng)
    for _ in range(max_tries):
        iu = np.triu_indices(T, 1)
        keep = rng.random(len(iu[0])) < p
        g = nx.Graph()
        g.add_nodes_from(range(T))
        g.add_edges_from(zip(iu[0][keep], iu[1][keep], strict=True))
        if nx.is_connected(g):
            return dirichlet_pairwise(list(g.edges()), T, k, rng)
    raise ValueError(f"no connected G({T}, {p}) in {max_tries} draws; increase p")


def random_tree(T: int = 10, k: int = 10, rng: RngLike = None) -> MarkovRandomField:
    """A uniformly random labelled tree on ``T`` variables (a uniform Prüfer sequence) with
    Dirichlet(1) edge potentials: the junction tree's cheapest case, beside the chain and
    Erdős–Rényi graphs of Bernstein et al. (2017, Sec. 4.1).

    >>> len(random_tree(6, 2, rng=0).cliques)
    5
    """
    T = _count(T, "T")
    rng = as_generator(rng)
    if T < 3:
        return dirichlet_pairwise([(i, i + 1) for i in range(T - 1)], T, k, rng)
    tree = nx.from_prufer_sequence(rng.integers(0, T, size=T - 2).tolist())
    return dirichlet_pairwise(list(tree.edges()), T, k, rng)


def ising(A, theta=None) -> MarkovRandomField:
    """Ising model ``Pr(z) ∝ exp(sum_{i<j} A_ij z_i z_j + sum_i theta_i z_i)`` on ``{-1,+1}^p``.

    Zhang et al. Def. 2.1 (``A`` symmetric with zero diagonal; each pair counted once). Code
    ``0`` is spin ``-1`` and code ``1`` is spin ``+1``. Edges are the non-zero ``A_ij``.
    """
    A = np.asarray(A, dtype=np.float64)
    p = A.shape[0] if A.ndim else 0
    if p < 1 or A.shape != (p, p) or not np.allclose(A, A.T) or np.any(np.diag(A) != 0):
        raise ValueError("A must be a square symmetric matrix with zero diagonal")
    theta = np.zeros(p) if theta is None else np.asarray(theta, dtype=np.float64)
    if theta.shape != (p,) or not np.all(np.isfinite(theta)) or not np.all(np.isfinite(A)):
        raise ValueError(f"theta must be a finite vector of length {p}; A must be finite")
    names = _names(p)
    spin = np.array([-1.0, 1.0])
    cliques, tables = [], []
    for i in range(p):
        cliques.append((names[i],))
        tables.append(theta[i] * spin)
    for i, j in zip(*np.nonzero(np.triu(A, 1)), strict=True):
        cliques.append((names[i], names[j]))
        tables.append(A[i, j] * np.outer(spin, spin))
    return MarkovRandomField(Domain(names, [2] * p), cliques, tables)


def pairwise(W, Theta) -> MarkovRandomField:
    """Pairwise model ``Pr(z) ∝ exp(sum_{i<j} W_ij(z_i, z_j) + sum_i theta_i(z_i))`` on ``[k]^p``.

    Zhang et al. Def. 2.2. ``W`` is an array of shape ``(p, p, k, k)`` with
    ``W[i, j] = W[j, i].T`` (the diagonal blocks are ignored) or a mapping
    ``{(i, j): k x k array}``; ``Theta`` has shape ``(p, k)``. Edges are the non-zero blocks.
    """
    Theta = np.asarray(Theta, dtype=np.float64)
    if Theta.ndim != 2:
        raise ValueError(f"Theta must have shape (p, k), got {Theta.shape}")
    p, k = Theta.shape
    if isinstance(W, Mapping):
        blocks = {}
        for (i, j), w in W.items():
            w = np.asarray(w, dtype=np.float64)
            inside = all(isinstance(a, int | np.integer) and 0 <= a < p for a in (i, j))
            if not inside or i == j or w.shape != (k, k):
                raise ValueError(f"W[{i},{j}] must be a {k}x{k} block with 0 <= i != j < {p}")
            edge = (i, j) if i < j else (j, i)
            if edge in blocks:
                raise ValueError(f"W gives the pair {edge} twice (as (i, j) and (j, i))")
            blocks[edge] = w if i < j else w.T
    else:
        W = np.asarray(W, dtype=np.float64)
        if W.shape != (p, p, k, k):
            raise ValueError(f"W must have shape {(p, p, k, k)}, got {W.shape}")
        for i in range(p):
            for j in range(i + 1, p):
                if not np.allclose(W[i, j], W[j, i].T):
                    raise ValueError(f"W[{i},{j}] must equal W[{j},{i}].T")
        blocks = {(i, j): W[i, j] for i in range(p) for j in range(i + 1, p) if np.any(W[i, j])}
    names = _names(p)
    cliques = [(n,) for n in names] + [(names[i], names[j]) for i, j in sorted(blocks)]
    tables = list(Theta) + [blocks[e] for e in sorted(blocks)]
    return MarkovRandomField(Domain(names, [k] * p), cliques, tables)
