"""Anderson acceleration of a damped fixed-point iteration, as pure ``init``/``step``
functions on a NamedTuple state (usable inside ``jax.lax.while_loop``).

For a map ``F`` with residual ``f(x) = F(x) - x``, the damped iteration is
``x <- x + alpha f(x)``. Anderson acceleration (type II; Walker & Ni 2011, Eq. 2.2 with
mixing ``beta = alpha``) keeps the last ``memory`` differences ``dx_i``, ``df_i`` of iterates
and residuals, fits ``gamma = argmin ||f - dF gamma||_2`` and steps to

    x <- x + alpha f - (dX + alpha dF) gamma,

which is the damped step when the history is empty. It has the same fixed points as the
damped iteration and, on a linearised problem, behaves like GMRES rather than like
Richardson iteration. The least-squares problem is solved through its normal equations with
a relative Tikhonov term ``1e-10 (1 + trace(dF dF^T))`` (our choice) so that nearly
collinear differences cannot produce huge coefficients; the regularised system is positive
definite and solved by Cholesky.

Example
-------
>>> import jax.numpy as jnp
>>> A = jnp.array([[0.9, 0.05], [0.0, 0.95]]); b = jnp.array([1.0, 2.0])
>>> state, x = anderson_init(jnp.zeros(2), memory=3), jnp.zeros(2)
>>> for _ in range(12):
...     x, state = anderson_step(state, x, A @ x + b - x, alpha=1.0)
>>> bool(jnp.allclose(x, jnp.linalg.solve(jnp.eye(2) - A, b)))
True
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["AndersonState", "anderson_init", "anderson_reset", "anderson_step"]

_RIDGE = 1e-10  # relative Tikhonov term of the least-squares fit


class AndersonState(NamedTuple):
    """``dx``/``df``: ring buffers of the last ``memory`` differences (one row each) and a
    scratch row (last) that steps forming no difference write to; ``gram``: ``df df^T``,
    kept up to date one row per step; ``count``: rows in use (the last step was
    accelerated iff ``count > 0``); ``slot``: the next row to overwrite;
    ``x_prev``/``f_prev``: the iterate and residual the last step started from (valid
    once ``started``). The buffers are written in place inside a ``lax.while_loop``."""

    dx: jax.Array
    df: jax.Array
    gram: jax.Array
    count: jax.Array
    slot: jax.Array
    x_prev: jax.Array
    f_prev: jax.Array
    started: jax.Array


def anderson_init(x0: jax.Array, memory: int) -> AndersonState:
    """An empty history for iterates shaped like the flat vector ``x0``."""
    rows = (memory + 1, x0.size) if memory else (0, x0.size)  # + a scratch row (see step)
    return AndersonState(
        dx=jnp.zeros(rows, x0.dtype),
        df=jnp.zeros(rows, x0.dtype),
        gram=jnp.zeros((rows[0], rows[0]), x0.dtype),
        count=jnp.asarray(0),
        slot=jnp.asarray(0),
        x_prev=jnp.zeros_like(x0),
        f_prev=jnp.zeros_like(x0),
        started=jnp.asarray(False),
    )


def anderson_reset(state: AndersonState, when=True) -> AndersonState:
    """Forget the history (where ``when``, traceable): the next step is a plain damped one."""
    return state._replace(
        count=jnp.where(when, 0, state.count),
        slot=jnp.where(when, 0, state.slot),
        started=jnp.where(when, False, state.started),
    )


def _spd_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a^-1 b`` for a symmetric positive definite ``a`` (Cholesky: the same solution as
    ``jnp.linalg.solve``, whose LU traces ten times slower in a new process)."""
    low = jnp.linalg.cholesky(a)
    y = jax.lax.linalg.triangular_solve(low, b[:, None], left_side=True, lower=True)
    y = jax.lax.linalg.triangular_solve(low, y, left_side=True, lower=True, transpose_a=True)
    return y[:, 0]


def anderson_step(
    state: AndersonState, x: jax.Array, f: jax.Array, alpha
) -> tuple[jax.Array, AndersonState]:
    """The next iterate from ``x`` and its residual ``f = F(x) - x``, and the new state."""
    memory = max(state.dx.shape[0] - 1, 0)
    if memory == 0:
        return x + alpha * f, state._replace(x_prev=x, f_prev=f, started=jnp.asarray(True))
    # A step that forms no difference writes to the scratch row ``memory`` instead of
    # keeping ``slot``'s: no read of the old row, so the history is updated in place.
    slot, started = state.slot, state.started
    row = jnp.where(started, slot, memory)
    new_df = f - state.f_prev
    dx = state.dx.at[row].set(x - state.x_prev)
    df = state.df.at[row].set(new_df)
    # One pass over the history: the new row of df df^T and df f.
    prods = df @ jnp.stack([new_df, f], axis=1)
    kept = state.gram.at[row, :].set(prods[:, 0]).at[:, row].set(prods[:, 0])
    count = jnp.where(started, jnp.minimum(state.count + 1, memory), state.count)
    slot = jnp.where(started, (slot + 1) % memory, slot)
    used = (jnp.arange(memory + 1) < count).astype(x.dtype)  # never the scratch row
    # Rows not in use may hold stale (finite) values: mask the small system, not the rows.
    gram = kept * jnp.outer(used, used)
    gram = gram + _RIDGE * (1.0 + jnp.trace(gram)) * jnp.eye(memory + 1) + jnp.diag(1.0 - used)
    gamma = _spd_solve(gram, prods[:, 1] * used)  # unused rows: gamma = 0
    x_next = x + alpha * f - gamma @ dx - alpha * (gamma @ df)
    return x_next, AndersonState(dx, df, kept, count, slot, x, f, jnp.asarray(True))
