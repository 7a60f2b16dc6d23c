"""The direct solver's Gauss-Newton metric: the junction-tree entropy's Hessian, twice.

The direct objective's Hessian in ``theta`` is about ``J (N F + rho / mu) J`` per record
(:mod:`.direct`; ``J = d mu / d theta`` the model's covariance, ``F`` the noise's Fisher
information per count: ``1 / sigma^2`` Gaussian, ``1 / b^2`` Laplace, also for the
pseudo-Huber smoothed kind; ``rho / mu`` the diagonal of the conjugate prior's curvature in
``mu``). ``J`` enters twice, which a diagonal scaling cannot undo. On a junction tree
``J^{-1}`` on the tangent space of the marginal polytope is ``A = -d^2 H``, the negative
Hessian of the tree's entropy ``H(mu) = sum_C H(mu_C) - sum_S H(mu_S)``:

    (A v)_C = v_C / mu_C  -  sum over the separators S the clique C is marginalised to of
              (v_C marginalised to S) / mu_S, broadcast back to C,

elementwise (Wainwright & Jordan 2008, Sec. 4.1.2, for the tree's entropy; each separator
is marginalised from one clique of its edge, so ``A`` is symmetric). So the Gauss-Newton
inverse is ``M = A D^{-1} A`` with ``D = N F + rho / mu + 2 tau / (N mu^2)`` per cell, the natural-gradient
geometry of mirror descent with a per-cell Newton step. L-BFGS runs in the coordinates
``z`` of ``theta = theta_0 + P A D^{-1/2} z`` (``P`` the gauge projection), whose initial
inverse Hessian is then ``P M P``: positive semidefinite, so its directions descend, and
the line search is unchanged. ``mu`` is fixed at the start's marginals (our choice: the
start lies near the optimum, and L-BFGS's secant pairs correct the rest). The tree: a
maximum spanning tree of the cliques by the sizes of their intersections (the junction
tree where the cliques are one; elsewhere still a symmetric ``A``, so still a descent
metric). The Gaussian prior's curvature ``2 tau / N`` in ``theta`` is ``2 tau / (N mu^2)``
in ``mu`` where ``J`` is about ``diag(mu)`` (the small cells, where it dominates).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...domain import Domain
from ...models.tables import table_layout

__all__ = ["entropy_hessian", "metric_weights"]


def _tree_edges(cliques) -> list[tuple[int, tuple[int, ...]]]:
    """``(clique, kept axes)`` per edge of a maximum spanning tree of ``cliques`` by
    intersection size (Kruskal): the edge's separator, marginalised from the clique that
    is not the separator itself (the larger one)."""
    pairs = []
    for i, a in enumerate(cliques):
        for j in range(i + 1, len(cliques)):
            shared = set(a) & set(cliques[j])
            if shared:
                pairs.append((-len(shared), i, j, shared))
    parent = list(range(len(cliques)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    edges = []
    for _, i, j, shared in sorted(pairs, key=lambda p: p[:3]):
        if root(i) == root(j):
            continue
        parent[root(i)] = root(j)
        child = j if len(cliques[j]) > len(shared) else i
        axes = tuple(k for k, v in enumerate(cliques[child]) if v in shared)
        edges.append((child, axes))
    return edges


def entropy_hessian(domain: Domain, cliques):
    """The traceable ``apply(v, mu) -> A v`` of the module docstring (flat ``v`` and
    marginals ``mu``, the model's clique order, ``mu`` positive)."""
    cliques = tuple(cliques)
    layout = table_layout(domain, cliques)
    offsets, shapes = layout.offsets, layout.shapes
    edges = _tree_edges(cliques)

    def apply(v, mu):
        out = v / mu
        for child, axes in edges:
            lo, hi, shape = int(offsets[child]), int(offsets[child + 1]), shapes[child]
            rest = tuple(k for k in range(len(shape)) if k not in axes)
            vc, mc = v[lo:hi].reshape(shape), mu[lo:hi].reshape(shape)
            sep = vc.sum(axis=rest, keepdims=True) / mc.sum(axis=rest, keepdims=True)
            out = out.at[lo:hi].add(-jnp.broadcast_to(sep, shape).ravel())
        return out

    return apply


def metric_weights(mu, scales, total: float, lam, rho: float, y, laplace) -> np.ndarray:
    """``D^{-1/2}`` per cell (module docstring) at the flat, positive marginals ``mu``:
    ``scales`` the noise scale of each cell (``b`` Laplace, ``sigma`` Gaussian; their
    Fisher information per count is ``1 / scale^2`` for both), ``lam = tau / N`` and
    ``rho = beta / N`` the priors'."""
    mu = np.asarray(mu, dtype=np.float64)
    from ...privacy.noise import log_density_curvature
    import os
    b = np.asarray(scales, dtype=np.float64)
    sm = float(os.environ.get("SMOOTH", "0.1"))
    curv = np.where(laplace, log_density_curvature("laplace", b, y - total * mu, sm), 1 / b**2)
    curv = np.maximum(curv, float(os.environ.get("CLIP", "0.01")) / b**2)
    d = total * curv + rho / mu + 2.0 * lam / mu**2
    return 1.0 / np.sqrt(d)
