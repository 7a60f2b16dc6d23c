"""Loopy belief propagation (sum-product) on the factor graph, in log space, vectorised.

Each clique is a factor node, each variable a variable node. All messages are updated in
parallel ("flooding") and damped in the probability domain,
``m <- (1 - damping) * m_new + damping * m_old``, until the largest change of a normalised
log-message is below ``tol`` or ``max_iters`` is reached (``converged`` reports which).
The factor-to-variable message excludes the receiver's own message directly,

    m_{a->v}(x_v) = logsumexp_{x_a \\ x_v} [psi_a + sum_{u in a, u != v} m_{u->a}],

(no subtraction, so ``-inf`` potentials give no ``inf - inf``). The result holds factor and
variable pseudo-marginals and the Bethe free energy
``F = sum_a sum b_a (log b_a - psi_a) - sum_v (d_v - 1) sum b_v log b_v``; ``-F`` is the
Bethe approximation of ``log Z``. On tree-structured factor graphs BP is exact: the
pseudo-marginals are the marginals and ``-F = log Z`` (tested against the junction tree).

The program does not grow with the number of factors or edges: factors are stacked by
shape and messages by edge (:mod:`.factor_graph`), one iteration is a few batched
``logsumexp`` per group shape and one ``segment_sum`` over the edges, inside one
``lax.while_loop``; a 30x30 grid compiles as fast as a 3x3 one.

This is the "standard BP" that NLBP (Bernstein et al. 2017, Alg. 1) runs on modified
potentials for loopy models.

*Reweighted BP* (``counting=``): with a counting number ``rho_a`` per factor (``c_v = 1 -
sum_{a ni v} rho_a`` per variable) the free energy's entropy becomes ``sum_a rho_a H(b_a) +
sum_v c_v H(b_v)`` and its stationary points are the fixed points of

    m_{a->v}(x_v) = logsumexp_{x_a \\ x_v} [psi_a / rho_a + sum_{u in a, u != v} n_{u->a}],
    n_{u->a} = sum_{a' ni u} rho_{a'} m_{a'->u} - m_{a->u},

beliefs ``b_a ~ exp(psi_a / rho_a + sum_u n_{u->a})``, ``b_v ~ exp(sum_a rho_a m_{a->v})``:
the tree-reweighted message update of Wainwright, Jaakkola & Willsky (2005) written on
the factor graph (fractional BP, Wiegerinck & Heskes 2003); ``rho = 1`` is the standard BP
above. With ``counting="trw"`` (:mod:`.counting`) the entropy is concave, ``-F`` a convex
upper bound on ``log Z`` in the log-potentials and the fixed point unique.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._config import any_traced
from ..domain import Clique, Domain, normalize_cliques
from ..tables import flatten_tables, table_layout, unflatten_tables
from .counting import trw_counting_numbers
from .factor_graph import FactorGraph, factor_graph
from .tables import concat_tables

__all__ = [
    "BPResult",
    "FlatBP",
    "counting_numbers",
    "loopy_bp",
    "loopy_bp_core",
    "loopy_bp_flat",
    "uniform_messages",
]


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


class FlatBP(NamedTuple):
    """Loopy BP on the flat layout: ``marginals`` as one vector in the flat parameter
    layout (:mod:`.factor_graph`), ``variable_marginals`` as ``(n_vars, width)`` (padded
    states 0); ``messages``: the final factor-to-variable log-messages ``(n_edges, width)``,
    a warm start for a nearby model."""

    marginals: jax.Array
    variable_marginals: jax.Array
    log_z: jax.Array
    iterations: jax.Array
    converged: jax.Array
    messages: jax.Array


def _normalize_rows(log_m: jax.Array) -> jax.Array:
    top = jax.nn.logsumexp(log_m, axis=-1, keepdims=True)
    return log_m - jnp.where(jnp.isfinite(top), top, 0.0)


def _slot_view(msgs: jax.Array, size: int, arity: int, slot: int) -> jax.Array:
    """``(n, width)`` messages of one slot as ``(n, 1, .., size, .., 1)``."""
    shape = [msgs.shape[0]] + [1] * arity
    shape[1 + slot] = size
    return jnp.reshape(msgs[:, :size], shape)


def _incoming(graph: FactorGraph, v2f: jax.Array) -> list[list[jax.Array]]:
    return [
        [_slot_view(v2f[g.rows(j)], s, len(g.shape), j) for j, s in enumerate(g.shape)]
        for g in graph.groups
    ]


def _factor_to_variable(graph: FactorGraph, psis, v2f: jax.Array) -> jax.Array:
    """New factor-to-variable messages ``(n_edges, width)``, one batched ``logsumexp`` per
    group and slot (``psis``: the groups' log-potentials already divided by ``rho``)."""
    out = []
    for g, psi, ins in zip(graph.groups, psis, _incoming(graph, v2f), strict=True):
        for j, size in enumerate(g.shape):
            t = psi
            for k, m in enumerate(ins):
                if k != j:
                    t = t + m
            axes = tuple(1 + a for a in range(len(g.shape)) if a != j)
            m = jax.nn.logsumexp(t, axis=axes) if axes else t
            out.append(jnp.pad(m, ((0, 0), (0, graph.width - size)), constant_values=-jnp.inf))
    if not out:
        return jnp.zeros((0, graph.width))
    return _normalize_rows(jnp.concatenate(out))


def _variable_side(graph: FactorGraph, f2v: jax.Array, edge_rho: jax.Array):
    """``(variable-to-factor messages, unnormalised log variable beliefs)``: each variable
    sums its incoming messages, weighted by their factors' ``rho``, once (``segment_sum``);
    an edge's message is that total less its own, unweighted (``-inf`` where its own is:
    the state is impossible there)."""
    valid = jnp.asarray(graph.edge_valid)
    f = jnp.where(valid, f2v, 0.0)
    totals = jax.ops.segment_sum(
        edge_rho[:, None] * f, jnp.asarray(graph.edge_var), num_segments=graph.n_vars
    )
    totals = jnp.where(jnp.asarray(graph.var_valid), totals, -jnp.inf)
    v2f = jnp.where(valid & ~jnp.isneginf(f2v), totals[graph.edge_var] - f, -jnp.inf)
    return _normalize_rows(v2f), totals


def _b_log_ratio(log_b, log_psi) -> jax.Array:
    """Per row (factor), ``sum b (log b - log psi)`` with ``0 log 0 = 0`` and ``0 * -inf =
    0``: cells of belief zero (``-inf`` potentials) add nothing to the free energy."""
    terms = jnp.where(jnp.isneginf(log_b), 0.0, jnp.exp(log_b) * (log_b - log_psi))
    return jnp.sum(jnp.reshape(terms, (terms.shape[0], -1)), axis=1)


def _finish(graph: FactorGraph, psis, f2v: jax.Array, rhos, edge_rho):
    """Beliefs and the free energy from converged messages (``psis`` divided by ``rho``):
    ``F = sum_a rho_a sum b_a (log b_a - psi_a / rho_a) + sum_v c_v sum b_v log b_v``."""
    v2f, totals = _variable_side(graph, f2v, edge_rho)
    energy, flat = jnp.zeros(()), []
    for psi, ins, rho in zip(psis, _incoming(graph, v2f), rhos, strict=True):
        b = psi + sum(ins, jnp.zeros(()))
        axes = tuple(range(1, b.ndim))
        log_b = b - jax.nn.logsumexp(b, axis=axes, keepdims=True)
        energy = energy + jnp.dot(rho, _b_log_ratio(log_b, psi))
        flat.append(jnp.ravel(jnp.exp(log_b)))
    log_bv = _normalize_rows(totals)
    neg_h = jnp.sum(jnp.where(jnp.isneginf(log_bv), 0.0, jnp.exp(log_bv) * log_bv), axis=1)
    c_v = 1.0 - jax.ops.segment_sum(edge_rho, graph.edge_var, num_segments=graph.n_vars)
    energy = energy + jnp.dot(c_v, neg_h)
    marginals = jnp.concatenate(flat)[graph.scatter] if flat else jnp.zeros(0)
    return marginals, jnp.exp(log_bv), -energy


def _weights(graph: FactorGraph, rho):
    """Per group ``rho`` of its factors and, per edge, its factor's ``rho`` (``None``: 1)."""
    rho = jnp.ones(len(graph.cliques)) if rho is None else jnp.asarray(rho, dtype=jnp.float64)
    rhos = [rho[g.members] for g in graph.groups]
    edges = [r for g, r in zip(graph.groups, rhos, strict=True) for _ in g.shape]
    return rhos, jnp.concatenate(edges) if edges else jnp.zeros(0)


def uniform_messages(graph: FactorGraph) -> jax.Array:
    """BP's usual start: uniform factor-to-variable messages (``-inf`` on padded states)."""
    return jnp.where(
        jnp.asarray(graph.edge_valid),
        -jnp.log(jnp.asarray(graph.domain.shape, dtype=jnp.float64)[graph.edge_var])[:, None],
        -jnp.inf,
    )


def loopy_bp_flat(
    graph: FactorGraph,
    damping: float,
    tol,
    max_iters,
    flat_theta,
    init=None,
    rho=None,
    adaptive: bool = False,
) -> FlatBP:
    """Traceable loopy BP on the flat parameter layout (one vector of all log-potentials,
    :mod:`pgm_dp.tables`); ``tol`` and ``max_iters`` may be
    traced, ``damping`` is a Python float. ``init``: starting messages (``messages`` of an
    earlier result; default :func:`uniform_messages`); ``rho``: counting numbers, one per
    clique (may be traced; ``None``: Bethe, all 1). ``adaptive`` (our schedule): start at
    ``damping`` and, after every sweep whose largest change exceeds the last one's, raise
    it to ``min(0.9, (1 + d) / 2)`` (0 -> 0.5 -> 0.75 -> 0.875 -> 0.9): undamped where
    that converges, damped where messages oscillate."""
    flat_theta = jnp.asarray(flat_theta, dtype=jnp.float64)
    rhos, edge_rho = _weights(graph, rho)
    psis = [
        jnp.reshape(flat_theta[g.gather], (g.size, *g.shape))
        / jnp.reshape(r, (g.size,) + (1,) * len(g.shape))
        for g, r in zip(graph.groups, rhos, strict=True)
    ]
    init = uniform_messages(graph) if init is None else init

    def body(state):
        f2v, last, it, d = state
        new = _factor_to_variable(graph, psis, _variable_side(graph, f2v, edge_rho)[0])
        if adaptive:
            new = jnp.logaddexp(jnp.log1p(-d) + new, jnp.log(d) + f2v)
        elif damping > 0:
            new = jnp.logaddexp(np.log1p(-damping) + new, np.log(damping) + f2v)
        change = jnp.where(new == f2v, 0.0, jnp.abs(new - f2v))
        delta = jnp.max(change, initial=0.0)
        delta = jnp.where(jnp.isnan(delta), jnp.inf, delta)
        d = jnp.where(delta > last, jnp.minimum(0.9, 0.5 * (1.0 + d)), d)
        return new, delta, it + 1, d

    def cond(state):
        _, delta, it, _ = state
        return (delta > tol) & (it < max_iters)

    start = (init, jnp.asarray(jnp.inf), jnp.asarray(0), jnp.asarray(float(damping)))
    f2v, delta, iters, _ = jax.lax.while_loop(cond, body, start)
    marginals, var_marginals, log_z = _finish(graph, psis, f2v, rhos, edge_rho)
    return FlatBP(marginals, var_marginals, log_z, iters, delta <= tol, f2v)


def _unflatten(graph: FactorGraph, res: FlatBP, xp) -> BPResult:
    """Per-clique tables (and per-variable vectors) from a :class:`FlatBP`."""
    dom = graph.domain
    factor = unflatten_tables(xp.asarray(res.marginals), table_layout(dom, graph.cliques).shapes)
    variables = tuple(res.variable_marginals[i, :n] for i, n in enumerate(dom.shape))
    return BPResult(tuple(factor), variables, res.log_z, res.iterations, res.converged)


def loopy_bp_core(
    domain: Domain, cliques: tuple[Clique, ...], damping, tol, max_iters, log_potentials
) -> BPResult:
    """Traceable (un-jitted) per-clique form of :func:`loopy_bp_flat`."""
    graph = factor_graph(domain, cliques)
    flat = concat_tables(log_potentials)
    res = loopy_bp_flat(graph, damping, tol, max_iters, flat)
    return _unflatten(graph, res, jnp)


@functools.lru_cache(maxsize=128)
def _compiled(graph: FactorGraph, damping: float):
    return jax.jit(functools.partial(loopy_bp_flat, graph, damping))


def counting_numbers(graph: FactorGraph, counting) -> np.ndarray | None:
    """``rho`` per clique for ``counting``: ``"bethe"`` (``None``: all 1), ``"trw"``
    (:func:`.counting.trw_counting_numbers`, convex) or an array of positive numbers."""
    if isinstance(counting, str):
        if counting not in ("bethe", "trw"):
            raise ValueError(f"counting must be 'bethe', 'trw' or an array, got {counting!r}")
        return None if counting == "bethe" else trw_counting_numbers(graph.domain, graph.cliques)
    rho = np.asarray(counting, dtype=np.float64)
    if rho.shape != (len(graph.cliques),) or not np.all((rho > 0) & np.isfinite(rho)):
        raise ValueError("counting numbers must be one finite positive number per clique")
    return rho


def loopy_bp(
    domain: Domain,
    cliques: Sequence[Sequence[Hashable]],
    log_potentials: Sequence[jax.Array],
    *,
    damping: float = 0.5,
    tol: float = 1e-10,
    max_iters: int = 1000,
    counting="bethe",
) -> BPResult:
    """Run damped sum-product loopy BP; see the module docstring.

    ``damping`` in [0, 1) is the weight of the old message (0 = undamped). ``counting``:
    the factors' counting numbers, ``"bethe"`` (standard BP), ``"trw"`` (tree-reweighted,
    convex: a unique fixed point; :mod:`.counting`) or one positive number per clique.
    Jit-compiled once per (domain, cliques, damping); ``tol`` and ``max_iters`` are
    arguments. Called eagerly the tables are NumPy arrays. (Not reverse-differentiable: the
    loop runs to convergence; use the junction tree where gradients are needed.)
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if tol <= 0 or max_iters < 1:
        raise ValueError("tol must be > 0 and max_iters >= 1")
    cliques = normalize_cliques(domain, cliques)
    graph = factor_graph(domain, cliques)
    rho = counting_numbers(graph, counting)
    fn = _compiled(graph, float(damping))
    pots = tuple(log_potentials)
    if any_traced(pots):
        flat = concat_tables(pots)
        return _unflatten(graph, fn(float(tol), int(max_iters), flat, None, rho), jnp)
    flat = flatten_tables(pots)
    res = fn(np.float64(tol), np.int64(max_iters), flat, None, rho)
    res = FlatBP(*(np.asarray(a) for a in res))
    return _unflatten(graph, res, np)
