"""Exact junction-tree marginals by Shafer–Shenoy message passing in probability space.

The fast pass behind :func:`pgm_dp.inference.junction_tree.clique_marginals`. Each factor is
exponentiated on its own small table, shifted by its maximum, so every product lies in
(0, 1] and no exponential is taken on a junction-tree-sized table. A clique's factors are
never multiplied out into a clique table: each message, and each query read from a clique,
is one contraction of the clique's factors and incoming messages in a greedy pairwise order
(variable elimination inside the clique, as matrix products). Queries are read from the
smallest table holding them: a separator (whose belief is the product of the two messages
across it) or a clique; equal separator reads are summed as one stacked array.

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
from .tables import to_order

if TYPE_CHECKING:
    from .triangulation import JunctionTree

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
    """How each query is read: ``groups[g] = (axes, ((query index, holder), ...))`` gathers
    queries read alike (holders of one kind and shape, the same ``axes`` summed out): a
    separator group as one stacked product and sum, a clique group one contraction per
    member; ``kept[n]`` is query ``n``'s variables in its holder's (canonical) order, the
    axis order of its row."""

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
        groups.setdefault((h[0], jt.domain.sizes(have), axes), []).append((n, h))
        kept.append(tuple(v for v in have if v in q))
    return ReadPlan(
        groups=tuple((axes, tuple(members)) for (*_, axes), members in groups.items()),
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


def _contract(dom, operands: list, scope: Clique, keep: Clique) -> jax.Array:
    """Sum over ``scope`` minus ``keep`` of the product of ``operands`` (``(table, vars)``
    pairs, each table's axes in its variables' order), axes of the result in ``keep``'s order.

    One ``einsum`` whose pairwise contraction order is chosen greedily (opt_einsum), so the
    product of a clique's factors is never formed on the whole clique when a cheaper order
    exists: on the third-order chain a message is a (100 x 10) @ (10 x 10) product instead of
    a sum over a 10^4-cell table. A variable of ``scope`` that no operand covers enters as a
    vector of ones (it counts with its multiplicity)."""
    ids: dict = {}
    args: list = []
    for table, variables in operands:
        args += [table, [ids.setdefault(v, len(ids)) for v in variables]]
    for v in scope:
        if v not in ids:
            args += [jnp.ones(dom.sizes((v,))), [ids.setdefault(v, len(ids))]]
    return jnp.einsum(*args, [ids[v] for v in keep], optimize="greedy")


def scaled_pass(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """``(group_sums, log_z, ok)``: ``group_sums[g]`` stacks the (normalised) marginals of
    :func:`read_plan`'s group ``g``, one row per member, axes in ``kept`` order.

    Each junction-tree clique keeps its factors as a list, never multiplied out: a message
    is the contraction (:func:`_contract`) of the sender's factors and its other incoming
    messages onto the separator, and a query read from a clique is the same contraction onto
    the query. A query read from a separator is the product of the two messages across it,
    summed (equal reads as one stack).

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
    held: list[list] = [[] for _ in jt.cliques]
    for f, fc in enumerate(jt.factor_cliques):
        held[jt.assignment[f]].append((scaled[f], fc))
    log_cells = sum(math.log(n) for n in dom.shape)
    rescale = log_cells >= RESCALE_LOG_CELLS
    scales: list = []
    log_scale: dict[tuple[int, int], jax.Array] = {}
    msgs: dict[tuple[int, int], jax.Array] = {}
    incoming: list[list] = [[] for _ in jt.cliques]

    def operands(i: int, skip: int | None = None) -> list:
        """Clique ``i``'s factors and its incoming messages (but the one from ``skip``)."""
        return held[i] + [(m, jt.separator(k, i)) for k, m in incoming[i] if k != skip]

    for i, j in jt.messages:
        m = _contract(dom, operands(i, skip=j), jt.cliques[i], jt.separator(i, j))
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

    def separator_belief(h: Holder) -> jax.Array:
        return msgs[(h[1], h[2])] * msgs[(h[2], h[1])]

    if jt.edges:
        total = jnp.sum(separator_belief(("sep", *jt.edges[0])))
    else:
        total = _contract(dom, operands(jt.root), jt.cliques[jt.root], ())
    # Where `ok` is false the caller discards this pass; the guards keep NaN out of the
    # gradients that still flow through it under `lax.cond`.
    safe_total = jnp.where(total > 0, total, 1.0)
    if rescale and jt.edges:  # the separator belief's two messages carry these scales
        i, j = jt.edges[0]
        shift = shift + log_scale[(i, j)] + log_scale[(j, i)]
    log_z = shift + jnp.log(safe_total)
    read = functools.partial(_contract, dom)
    group_sums, holder_sums = _read_groups(
        jt, queries, read, operands, separator_belief, safe_total, rescale
    )
    ok = jnp.isfinite(log_z) & (total > 0)
    if rescale:
        c = jnp.concatenate([jnp.stack(scales + [jnp.ones(())]), *holder_sums])
        ok = ok & jnp.all(jnp.isfinite(c) & (c > math.exp(UNDERFLOW_MARGIN)))
    else:
        ok = ok & (jnp.log(safe_total) > UNDERFLOW_MARGIN + 2 * log_cells)
    return tuple(group_sums), log_z, ok


def _read_groups(jt, queries, read, operands, separator_belief, total, rescale):
    """The group sums of :func:`scaled_pass` (normalised by ``total``, or each row by its
    own sum when messages are rescaled) and, when rescaled, those per-row sums."""
    group_sums, holder_sums = [], []
    plan = read_plan(jt, queries)
    for axes, members in plan.groups:
        if members[0][1][0] == "sep":  # equal separator reads: one stacked product and sum
            stacked = jnp.stack([separator_belief(h) for _, h in members])
            rows = jnp.sum(stacked, axis=tuple(a + 1 for a in axes)) if axes else stacked
        else:
            rows = jnp.stack(
                [read(operands(h[1]), jt.cliques[h[1]], plan.kept[n]) for n, h in members]
            )
        if rescale:  # reads differ in scale from holder to holder: normalise each by its sum
            sums = jnp.sum(rows, axis=tuple(range(1, rows.ndim)))
            holder_sums.append(sums)
            rows = rows / jnp.where(sums > 0, sums, 1.0).reshape((-1,) + (1,) * (rows.ndim - 1))
            group_sums.append(rows)
        else:
            group_sums.append(rows / total)
    return group_sums, holder_sums


def scaled_marginals(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """``(marginals, log_z, ok)`` with one table per query, axes in the query's order."""
    group_sums, log_z, ok = scaled_pass(jt, queries, log_potentials)
    plan = read_plan(jt, queries)
    out: list = [None] * len(queries)
    for (_, members), sums in zip(plan.groups, group_sums, strict=True):
        for row, (n, _) in enumerate(members):
            out[n] = to_order(sums[row], plan.kept[n], queries[n])
    return tuple(out), log_z, ok
