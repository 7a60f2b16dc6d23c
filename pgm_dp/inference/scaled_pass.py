"""Exact junction-tree marginals by Shafer–Shenoy message passing in probability space.

The fast pass behind :func:`pgm_dp.inference.junction_tree.clique_marginals`. Each factor is
exponentiated on its own small table, shifted by its maximum, so every product lies in
(0, 1] and no exponential is taken on a junction-tree-sized table. Queries are read from the
smallest table holding them: a separator (whose belief is the product of the two messages
across it) or a clique; queries read from equally shaped tables over the same axes are summed
as one stacked array, so the whole pass is a few dozen XLA kernels.

The pass reports whether it can be trusted (``ok``); where it cannot (potentials spanning
~600 nats against each other) the caller falls back to the log-space pass.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from ..domain import Clique
from .tables import broadcast_to, to_order

if TYPE_CHECKING:
    from .junction_tree import JunctionTree

__all__ = ["ReadPlan", "read_plan", "scaled_marginals", "scaled_pass"]

#: Unscaled messages are trusted while the scaled partition sum exceeds
#: ``exp(UNDERFLOW_MARGIN + 2 log|X|)``: no product they form can then have lost mass that
#: matters in float64; rescaled messages while no scale or read table's sum is below
#: ``exp(UNDERFLOW_MARGIN)``.
UNDERFLOW_MARGIN = -650.0
#: Domains with ``log|X|`` at least this rescale every message (unscaled sums reach ``|X|``).
RESCALE_LOG_CELLS = 325.0

Holder = tuple  # ("sep", i, j) or ("clique", i)


@dataclass(frozen=True)
class ReadPlan:
    """How each query is read: ``groups[g] = (axes, ((query index, holder), ...))`` sums
    every member's holder table over ``axes`` in one stacked reduction; ``kept[n]`` is query
    ``n``'s variables in its holder's (canonical) order, the axis order of its row."""

    groups: tuple[tuple[tuple[int, ...], tuple[tuple[int, Holder], ...]], ...]
    kept: tuple[Clique, ...]


def holder_vars(jt: JunctionTree, holder: Holder) -> Clique:
    return jt.separator(holder[1], holder[2]) if holder[0] == "sep" else jt.cliques[holder[1]]


def _holder(jt: JunctionTree, query: Clique) -> Holder:
    """The smallest separator or clique table that holds ``query`` (separators win ties)."""
    dom, want = jt.domain, set(query)
    options = [(dom.size(jt.separator(i, j)), 0, ("sep", i, j)) for i, j in jt.edges]
    options += [(dom.size(c), 1, ("clique", i)) for i, c in enumerate(jt.cliques)]
    fits = [o for o in options if want <= set(holder_vars(jt, o[2]))]
    if not fits:
        raise ValueError(f"query {query} is not inside any junction-tree clique")
    return min(fits, key=lambda o: o[:2])[2]


@functools.lru_cache(maxsize=256)
def read_plan(jt: JunctionTree, queries: tuple[Clique, ...]) -> ReadPlan:
    groups: dict[tuple, list] = {}
    kept = []
    for n, q in enumerate(queries):
        h = _holder(jt, q)
        have = holder_vars(jt, h)
        axes = tuple(a for a, v in enumerate(have) if v not in q)
        groups.setdefault((jt.domain.sizes(have), axes), []).append((n, h))
        kept.append(tuple(v for v in have if v in q))
    return ReadPlan(
        groups=tuple((axes, tuple(members)) for (_, axes), members in groups.items()),
        kept=tuple(kept),
    )


def _scaled_factors(jt: JunctionTree, log_potentials) -> tuple[list, jax.Array]:
    """``exp(table - max(table))`` for every factor and the sum of the maxima.

    Factors are grouped by table size, so each group takes one stacked max and one stacked
    exponential (a handful of kernels instead of two per factor)."""
    dom = jt.domain
    groups: dict[int, list[int]] = {}
    for f, fc in enumerate(jt.factor_cliques):
        groups.setdefault(dom.size(fc), []).append(f)
    scaled: list = [None] * len(jt.factor_cliques)
    shift = jnp.zeros(())
    for size, members in groups.items():
        stacked = jnp.stack([jnp.reshape(log_potentials[f], (size,)) for f in members])
        top = jax.lax.stop_gradient(jnp.max(stacked, axis=1))
        top = jnp.where(jnp.isfinite(top), top, 0.0)  # an all -inf table: zeros, not NaN
        shift = shift + jnp.sum(top)
        e = jnp.exp(stacked - top[:, None])
        for row, f in enumerate(members):
            scaled[f] = jnp.reshape(e[row], dom.sizes(jt.factor_cliques[f]))
    return scaled, shift


def scaled_pass(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """``(group_sums, log_z, ok)``: ``group_sums[g]`` stacks the (normalised) marginals of
    :func:`read_plan`'s group ``g``, one row per member, axes in ``kept`` order.

    Messages are left unscaled when ``log|X| < RESCALE_LOG_CELLS`` (no sum can overflow); ``ok``
    is then false when the scaled partition sum is below ``exp(UNDERFLOW_MARGIN + 2 log|X|)``,
    i.e. when products may have underflowed. On larger domains each message is rescaled to
    maximum 1 with its cumulative log-scale carried separately, and ``ok`` reports a scale or
    a read table's sum below ``exp(UNDERFLOW_MARGIN)``. Differentiable: the shifts are
    constants (``stop_gradient``), which leaves ``log Z`` and its gradient exact.
    """
    dom = jt.domain
    log_potentials = tuple(jnp.asarray(t, dtype=jnp.float64) for t in log_potentials)
    scaled, shift = _scaled_factors(jt, log_potentials)
    tables: list = [None] * len(jt.cliques)
    for f, fc in enumerate(jt.factor_cliques):
        i, canon = jt.assignment[f], dom.canonical(fc)
        e = broadcast_to(to_order(scaled[f], fc, canon), canon, jt.cliques[i], dom)
        tables[i] = e if tables[i] is None else tables[i] * e
    tables = [
        jnp.ones(dom.sizes(c)) if t is None else jnp.broadcast_to(t, dom.sizes(c))
        for t, c in zip(tables, jt.cliques, strict=True)
    ]
    log_cells = sum(math.log(n) for n in dom.shape)
    rescale = log_cells >= RESCALE_LOG_CELLS
    scales: list = []
    log_scale: dict[tuple[int, int], jax.Array] = {}
    msgs: dict[tuple[int, int], jax.Array] = {}
    incoming: list[list] = [[] for _ in jt.cliques]
    for i, j in jt.messages:
        ci, sep = jt.cliques[i], jt.separator(i, j)
        t = tables[i]
        for k, m in incoming[i]:
            if k != j:
                t = t * broadcast_to(m, jt.separator(k, i), ci, dom)
        axes = tuple(a for a, v in enumerate(ci) if v not in sep)
        m = jnp.sum(t, axis=axes) if axes else t
        if rescale:  # cumulative log-scale of the message: its own and those it absorbed
            c = jax.lax.stop_gradient(jnp.max(m))
            scales.append(c)
            c = jnp.where(c > 0, c, 1.0)  # a vanishing scale fails `ok`; keep NaN out
            m = m / c
            log_scale[(i, j)] = jnp.log(c) + sum(
                (log_scale[(k, i)] for k, _ in incoming[i] if k != j), jnp.zeros(())
            )
        msgs[(i, j)] = m
        incoming[j].append((i, m))

    beliefs: dict[Holder, jax.Array] = {}

    def belief(h: Holder) -> jax.Array:
        if h not in beliefs:
            if h[0] == "sep":
                beliefs[h] = msgs[(h[1], h[2])] * msgs[(h[2], h[1])]
            else:
                ci, b = jt.cliques[h[1]], tables[h[1]]
                for k, m in incoming[h[1]]:
                    b = b * broadcast_to(m, jt.separator(k, h[1]), ci, dom)
                beliefs[h] = b
        return beliefs[h]

    total = jnp.sum(belief(("sep", *jt.edges[0]) if jt.edges else ("clique", jt.root)))
    # Where `ok` is false the caller discards this pass; the guards keep NaN out of the
    # gradients that still flow through it under `lax.cond`.
    safe_total = jnp.where(total > 0, total, 1.0)
    if rescale and jt.edges:  # the separator belief's two messages carry these scales
        i, j = jt.edges[0]
        shift = shift + log_scale[(i, j)] + log_scale[(j, i)]
    log_z = shift + jnp.log(safe_total)
    group_sums, holder_sums = [], []
    for axes, members in read_plan(jt, queries).groups:
        if rescale:  # beliefs differ in scale from holder to holder: normalise each by its sum
            sums = [jnp.sum(belief(h)) for _, h in members]
            holder_sums += sums
            stacked = jnp.stack(
                [
                    belief(h) / jnp.where(z > 0, z, 1.0)
                    for (_, h), z in zip(members, sums, strict=True)
                ]
            )
        else:
            stacked = jnp.stack([belief(h) for _, h in members])
        sums = jnp.sum(stacked, axis=tuple(a + 1 for a in axes)) if axes else stacked
        group_sums.append(sums if rescale else sums / safe_total)
    ok = jnp.isfinite(log_z) & (total > 0)
    if rescale:
        c = jnp.stack(scales + holder_sums) if scales or holder_sums else jnp.ones(1)
        ok = ok & jnp.all(jnp.isfinite(c) & (c > math.exp(UNDERFLOW_MARGIN)))
    else:
        ok = ok & (jnp.log(safe_total) > UNDERFLOW_MARGIN + 2 * log_cells)
    return tuple(group_sums), log_z, ok


def scaled_marginals(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """``(marginals, log_z, ok)`` with one table per query, axes in the query's order."""
    group_sums, log_z, ok = scaled_pass(jt, queries, log_potentials)
    plan = read_plan(jt, queries)
    out: list = [None] * len(queries)
    for (_, members), sums in zip(plan.groups, group_sums, strict=True):
        for row, (n, _) in enumerate(members):
            out[n] = to_order(sums[row], plan.kept[n], queries[n])
    return tuple(out), log_z, ok
