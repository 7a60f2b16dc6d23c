"""Small helpers for log-space tables whose axes are named by variables.

Every table in :mod:`pgm_dp.inference` has one axis per variable. Inside the junction tree and
loopy BP, tables are kept in *canonical* order (variables sorted by their position in the
domain), so that a sub-table can be broadcast into a larger one by a reshape alone.
:func:`concat_tables` is the traced form of :func:`pgm_dp.tables.flatten_tables` (the flat
table layout). These helpers are traced by JAX and work inside ``jax.jit``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import jax
import jax.numpy as jnp

from ..domain import Clique, Domain

__all__ = ["to_order", "broadcast_to", "concat_tables", "logsumexp_to"]


def concat_tables(tables) -> jax.Array:
    """Concatenate tables into one flat float64 JAX vector (traceable; the inverse of
    :func:`pgm_dp.tables.unflatten_tables`)."""
    return jnp.concatenate([jnp.ravel(jnp.asarray(t, dtype=jnp.float64)) for t in tables])


def to_order(table: jax.Array, have: Sequence[Hashable], want: Sequence[Hashable]) -> jax.Array:
    """Transpose ``table`` (axes named ``have``) so that its axes are named ``want``."""
    if tuple(have) == tuple(want):
        return table
    return jnp.transpose(table, [list(have).index(v) for v in want])


def broadcast_to(table: jax.Array, have: Clique, target: Clique, domain: Domain) -> jax.Array:
    """View a table on ``have`` (a subset of ``target``, both canonical) as broadcastable to
    a table on ``target``: a reshape that inserts singleton axes, no data movement."""
    if have == target:
        return table
    shape = [domain.shape[domain.index(v)] if v in have else 1 for v in target]
    return jnp.reshape(table, shape)


def logsumexp_to(table: jax.Array, have: Clique, keep: Clique) -> jax.Array:
    """Sum out (in log space) every axis of ``table`` not in ``keep``; axes stay in order."""
    axes = tuple(i for i, v in enumerate(have) if v not in keep)
    if not axes:
        return table
    return jax.nn.logsumexp(table, axis=axes)
