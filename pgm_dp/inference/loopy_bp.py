"""Loopy belief propagation (sum-product) on the factor graph, in log space.

Each clique is a factor node, each variable a variable node. All messages are updated in
parallel ("flooding") and damped in the probability domain,
``m <- (1 - damping) * m_new + damping * m_old``, until the largest change of a normalised
log-message is below ``tol`` or ``max_iters`` is reached. The factor-to-variable message
uses the exact identity

    m_{a->v}(x_v) = logsumexp_{x_a \\ x_v} [psi_a + sum_{u in a} m_{u->a}] - m_{v->a}(x_v),

so each factor needs one belief table per iteration. The result holds factor and variable
pseudo-marginals and the Bethe free energy
``F = sum_a sum b_a (log b_a - psi_a) - sum_v (d_v - 1) sum b_v log b_v``; ``-F`` is the
Bethe approximation of ``log Z``. On tree-structured factor graphs BP is exact: the
pseudo-marginals are the marginals and ``-F = log Z`` (tested against the junction tree).

This is the "standard BP" that NLBP (Bernstein et al. 2017, Alg. 1) runs on modified
potentials for loopy models.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..domain import Clique, Domain, normalize_cliques
from .tables import broadcast_to, logsumexp_to, to_order

__all__ = ["BPResult", "loopy_bp", "loopy_bp_core"]


class BPResult(NamedTuple):
    """Pseudo-marginals from loopy BP.

    ``factor_marginals[f]`` is the belief of ``cliques[f]`` (axes in that clique's order),
    ``variable_marginals[v]`` of ``domain.attributes[v]``; ``log_z`` is ``-F_Bethe``.
    """

    factor_marginals: tuple[jax.Array, ...]
    variable_marginals: tuple[jax.Array, ...]
    log_z: jax.Array
    iterations: jax.Array
    converged: jax.Array


def _normalize(log_m):
    return log_m - jax.nn.logsumexp(log_m)


def loopy_bp_core(
    domain: Domain, cliques: tuple[Clique, ...], damping, tol, max_iters, log_potentials
):
    """Traceable (un-jitted) core of :func:`loopy_bp` for use inside other jitted code."""
    canon = [domain.canonical(c) for c in cliques]
    psi = [
        to_order(jnp.asarray(t, dtype=jnp.float64), c, k)
        for t, c, k in zip(log_potentials, cliques, canon, strict=True)
    ]
    edges = [(a, v) for a, c in enumerate(canon) for v in c]  # factor a -- variable v
    var_edges = {v: [e for e, (_, u) in enumerate(edges) if u == v] for v in domain.attributes}

    def var_to_factor(f2v):
        totals = {
            v: sum((f2v[e] for e in es), jnp.zeros(domain.sizes([v])))
            for v, es in var_edges.items()
        }
        return tuple(totals[v] - f2v[e] for e, (_, v) in enumerate(edges)), totals

    def factor_beliefs(v2f):
        beliefs = []
        for a, c in enumerate(canon):
            b = psi[a]
            for e, (a2, v) in enumerate(edges):
                if a2 == a:
                    b = b + broadcast_to(v2f[e], (v,), c, domain)
            beliefs.append(b)
        return beliefs

    def update(f2v):
        v2f, _ = var_to_factor(f2v)
        v2f = tuple(_normalize(m) for m in v2f)
        beliefs = factor_beliefs(v2f)
        new = tuple(
            _normalize(logsumexp_to(beliefs[a], canon[a], (v,)) - v2f[e])
            for e, (a, v) in enumerate(edges)
        )
        if damping > 0:
            new = tuple(
                jnp.logaddexp(jnp.log1p(-damping) + n, jnp.log(damping) + o)
                for n, o in zip(new, f2v, strict=True)
            )
        return new

    init = tuple(jnp.full(domain.sizes([v]), -jnp.log(domain.sizes([v])[0])) for _, v in edges)

    def cond(state):
        _, delta, it = state
        return (delta > tol) & (it < max_iters)

    def body(state):
        f2v, _, it = state
        new = update(f2v)
        diffs = [jnp.max(jnp.abs(n - o)) for n, o in zip(new, f2v, strict=True)]
        delta = jnp.max(jnp.stack(diffs)) if diffs else jnp.asarray(0.0)
        return new, delta.astype(jnp.float64), it + 1

    f2v, delta, iters = jax.lax.while_loop(cond, body, (init, jnp.asarray(jnp.inf), jnp.asarray(0)))
    v2f, totals = var_to_factor(f2v)
    v2f = tuple(_normalize(m) for m in v2f)
    log_b = [b - jax.nn.logsumexp(b) for b in factor_beliefs(v2f)]
    log_bv = {v: _normalize(t) for v, t in totals.items()}
    degree = {v: len(es) for v, es in var_edges.items()}
    energy = sum(_b_log_ratio(lb, p) for lb, p in zip(log_b, psi, strict=True))
    energy = energy - sum((degree[v] - 1) * _b_log_ratio(lb, 0.0) for v, lb in log_bv.items())
    factor_marginals = tuple(
        jnp.exp(to_order(lb, k, c)) for lb, k, c in zip(log_b, canon, cliques, strict=True)
    )
    variable_marginals = tuple(jnp.exp(log_bv[v]) for v in domain.attributes)
    return BPResult(factor_marginals, variable_marginals, -energy, iters, delta <= tol)


def _b_log_ratio(log_b, log_psi) -> jax.Array:
    """``sum b (log b - log psi)`` with ``0 log 0 = 0`` and ``0 * -inf = 0``: cells of
    belief zero (``-inf`` potentials) add nothing to the Bethe free energy."""
    return jnp.sum(jnp.where(jnp.isneginf(log_b), 0.0, jnp.exp(log_b) * (log_b - log_psi)))


@functools.lru_cache(maxsize=128)
def _compiled(domain, cliques, damping, tol, max_iters):
    return jax.jit(functools.partial(loopy_bp_core, domain, cliques, damping, tol, max_iters))


def loopy_bp(
    domain: Domain,
    cliques: Sequence[Sequence[Hashable]],
    log_potentials: Sequence[jax.Array],
    *,
    damping: float = 0.5,
    tol: float = 1e-10,
    max_iters: int = 1000,
) -> BPResult:
    """Run damped sum-product loopy BP; see the module docstring.

    ``damping`` in [0, 1) is the weight of the old message (0 = undamped). Jit-compiled
    once per (domain, cliques, damping, tol, max_iters). (Not reverse-differentiable: the
    loop runs to convergence; use the junction tree where gradients are needed.)
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if tol <= 0 or max_iters < 1:
        raise ValueError("tol must be > 0 and max_iters >= 1")
    cliques = normalize_cliques(domain, cliques)
    fn = _compiled(domain, cliques, float(damping), float(tol), int(max_iters))
    return fn(tuple(log_potentials))
