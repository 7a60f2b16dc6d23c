"""L-BFGS as one traced loop: the outer optimiser of the compiled learners.

The learners' objectives are smooth and (for the MLE) convex, and their gradients come out
of the same junction-tree pass as their values (``grad log Z`` is the model's marginals). So
each fit is one JAX program: the start, L-BFGS (Nocedal & Wright 2006, Alg. 7.5, memory
``m``; the direction ``-H grad`` by the compact representation of Byrd, Nocedal & Schnabel
1994, which equals Alg. 7.4's two-loop recursion in exact arithmetic but reads the
``2 m x n`` memory in two matrix products instead of ``2 m`` dependent vector updates, and
the loop's state is updated without branches, so no pass copies the memory) with a
backtracking line search (Armijo's condition,
quadratic interpolation, Nocedal & Wright Sec. 3.5; Hager & Zhang's approximate Wolfe test
where float64 rounding hides the decrease), and the stopping rule, all inside one
``jax.lax.while_loop`` whose every pass evaluates the objective once: the program holds a
single copy of the junction-tree pass, which keeps its compile time near that of the
objective alone. Tolerances and iteration caps are arguments, not constants of the program,
so a second fit of the same structure compiles nothing; ``jax.vmap`` of the loop fits many
problems of one structure at once.

The stopping rule is that of scipy's L-BFGS-B with ``gtol = tol`` and ``ftol = 0``:
stop when the largest gradient entry is at most ``tol``, after ``max_iters`` iterations,
or when the line search finds no acceptable step in :data:`LINESEARCH_STEPS` trials (the
float64 precision limit).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["LBFGSResult", "LINESEARCH_STEPS", "MEMORY", "lbfgs_loop"]

#: L-BFGS memory (the number of ``(s, y)`` pairs kept).
MEMORY = 20
#: Trial steps of one line search at most.
LINESEARCH_STEPS = 30
#: Sufficient-decrease and curvature constants (``c1``, ``c2`` of Nocedal & Wright Eq. 3.6).
ARMIJO, CURVATURE = 1e-4, 0.9
#: Relative change of the objective below which Hager & Zhang's approximate test applies.
APPROX_RTOL = 1e-10


class LBFGSResult(NamedTuple):
    """Final point, objective, gradient, iterations and carried state of
    :func:`lbfgs_loop` (traced)."""

    x: jax.Array
    value: jax.Array
    grad: jax.Array
    iterations: jax.Array
    aux: object = None


def _direction(grad, mem, sty, yty, products, head, count):
    """``-H grad`` by the compact representation of the L-BFGS matrix (Byrd, Nocedal &
    Schnabel 1994, Eq. 3.1; Nocedal & Wright Sec. 7.2) over the ``count`` newest pairs of
    the circular memory ``mem = [S; Y]`` (newest at ``head - 1``), ``H_0 = gamma I`` with
    ``gamma = s^T y / y^T y`` of the newest pair (Eq. 7.20; ``1`` with no pair):

        H g = gamma (g - Y w) + S p,   R w = S^T g,   R^T p = (D + gamma Y^T Y) w - gamma Y^T g,

    with ``R`` the upper triangle of ``S^T Y`` in the pairs' chronological order and ``D``
    its diagonal. Equal to the two-loop recursion (Alg. 7.4) in exact arithmetic; it reads
    the memory twice as two matrix products (``products = [S; Y] grad``, then one product
    back) instead of ``2 m`` dependent vector updates. ``sty``, ``yty``: ``S^T Y`` and
    ``Y^T Y`` in memory order."""
    memory = sty.shape[0]
    order = (head - count + jnp.arange(memory)) % memory  # oldest first
    valid = jnp.arange(memory) < count
    both = valid[:, None] & valid[None, :]
    sty_c = sty[order][:, order]
    eye = jnp.eye(memory, dtype=mem.dtype)
    r = jnp.where(both, jnp.triu(sty_c), eye)
    d = jnp.where(valid, jnp.diagonal(sty_c), 0.0)
    u = jnp.where(valid, products[:memory][order], 0.0)
    v = jnp.where(valid, products[memory:][order], 0.0)
    last = (head - 1) % memory
    gamma = jnp.where(count > 0, sty[last, last] / jnp.maximum(yty[last, last], 1e-300), 1.0)
    w = jax.scipy.linalg.solve_triangular(r, u, lower=False)
    rhs = d * w + gamma * (jnp.where(both, yty[order][:, order], 0.0) @ w) - gamma * v
    p = jax.scipy.linalg.solve_triangular(r, rhs, trans="T", lower=False)
    coef = jnp.zeros(2 * memory, mem.dtype).at[order].set(p).at[memory + order].set(-gamma * w)
    return -(gamma * grad + coef @ mem)


class _State(NamedTuple):
    x: jax.Array
    value: jax.Array
    grad: jax.Array
    direction: jax.Array
    step: jax.Array
    mem: jax.Array
    sty: jax.Array
    yty: jax.Array
    head: jax.Array
    count: jax.Array
    iterations: jax.Array
    backtracks: jax.Array
    started: jax.Array


def _accepts(state, value, slope, new_value, new_slope):
    """Armijo's sufficient decrease (Nocedal & Wright Eq. 3.6a), or where rounding hides
    the decrease, Hager & Zhang's (2005) approximate Wolfe conditions: the value within
    ``APPROX_RTOL`` of the last and ``sigma phi'(0) <= phi'(t) <= (2 delta - 1) phi'(0)``.
    A point whose value or gradient is not finite (its slope ``phi'(t)``, a dot product
    with every entry) is never accepted: the step is backtracked."""
    armijo = new_value <= value + ARMIJO * state.step * slope
    approx = (
        (new_value <= value + APPROX_RTOL * jnp.abs(value))
        & (new_slope >= CURVATURE * slope)
        & (new_slope <= (2.0 * ARMIJO - 1.0) * slope)
    )
    return jnp.isfinite(new_value) & jnp.isfinite(new_slope) & (armijo | approx)


def _backtrack(step, value, slope, new_value):
    """The next trial step after a rejected one: the minimiser of the quadratic through
    ``phi(0)``, ``phi'(0)`` and ``phi(t)`` (Nocedal & Wright Eq. 3.57), kept in
    ``[0.1 t, 0.5 t]``; ``0.1 t`` after a non-finite value."""
    curv = new_value - value - slope * step
    quad = -slope * step * step / (2.0 * jnp.maximum(curv, 1e-300))
    quad = jnp.where(jnp.isfinite(new_value) & (curv > 0), quad, 0.1 * step)
    return jnp.clip(quad, 0.1 * step, 0.5 * step)


def lbfgs_loop(
    value_and_grad, x0, args, tol, max_iters, memory: int = MEMORY, *, aux0=None, done=None
) -> LBFGSResult:
    """Minimise ``x -> value_and_grad(x, *args)[0]`` from ``x0`` (traceable; see the module
    docstring for the method and the stopping rule). ``tol`` and ``max_iters`` may be
    traced; ``memory`` is the program's. Each pass of the loop evaluates the objective once
    (a trial step of the line search), so the program holds one copy of it.

    With ``aux0``, the objective carries a state from one evaluation to the next (an inner
    solver's warm start): ``value_and_grad(x, aux, *args) -> (value, grad, aux)``, and
    ``done(grad, aux)`` (default ``max |grad| <= tol``) is the stopping test at each
    accepted point; the result's ``aux`` is that of the last evaluation."""
    carry = aux0 is not None
    evaluate = value_and_grad if carry else (lambda x, _, *a: (*value_and_grad(x, *a), None))
    if done is None:
        done = lambda grad, _: jnp.max(jnp.abs(grad)) <= tol  # noqa: E731
    n = x0.shape[0]
    init = _State(  # the first pass of the loop evaluates x0 (one copy of the objective)
        x=x0,
        value=jnp.asarray(jnp.inf, x0.dtype),
        grad=jnp.zeros_like(x0),
        direction=jnp.zeros_like(x0),
        step=jnp.asarray(0.0, x0.dtype),
        mem=jnp.zeros((2 * memory, n), x0.dtype),
        sty=jnp.zeros((memory, memory), x0.dtype),
        yty=jnp.zeros((memory, memory), x0.dtype),
        head=jnp.asarray(0),
        count=jnp.asarray(0),
        iterations=jnp.asarray(0),
        backtracks=jnp.asarray(0),
        started=jnp.asarray(False),
    )

    def cond(loop):
        st, _, converged = loop
        running = (st.iterations < max_iters) & (st.backtracks <= LINESEARCH_STEPS)
        return ~st.started | (~converged & running)

    def body(loop):
        st, aux, _ = loop
        slope = jnp.dot(st.grad, st.direction)
        trial = st.x + st.step * st.direction
        new_value, new_grad, aux = evaluate(trial, aux, *args)
        ok = _accepts(st, st.value, slope, new_value, jnp.dot(new_grad, st.direction))
        new = _advance(st, trial, new_value, new_grad, ok, slope)
        return new, aux, (ok | ~st.started) & done(new_grad, aux)

    st, aux, _ = jax.lax.while_loop(cond, body, (init, aux0, jnp.asarray(False)))
    return LBFGSResult(st.x, st.value, st.grad, st.iterations, aux if carry else None)


def _advance(st: _State, trial, new_value, new_grad, ok, slope) -> _State:
    """The state after one evaluation, without branches on the memory (a ``lax.switch``
    over the whole state copies the memory every pass). At the start ``x0``: steepest
    descent, first step ``min(1, 1 / |grad|)`` (as L-BFGS-B). After an accepted ``trial``:
    the pair ``(s, y)`` enters the memory when ``s^T y > 0`` (curvature; skipped
    otherwise), then the new direction, unit step. After a rejected one: the backtracked
    step (:func:`_backtrack`)."""
    first = ~st.started
    accepted = st.started & ok
    s, y = trial - st.x, new_grad - st.grad
    good = accepted & (jnp.dot(s, y) > 1e-12 * jnp.dot(y, y))
    memory, h = st.sty.shape[0], st.head
    mem = st.mem.at[h].set(jnp.where(good, s, st.mem[h]))  # rows written in place
    mem = mem.at[memory + h].set(jnp.where(good, y, mem[memory + h]))
    prod = mem @ jnp.stack([s, y, new_grad], axis=1)  # one pass over the memory
    s_y, y_s, y_y = prod[:memory, 1], prod[memory:, 0], prod[memory:, 1]
    sty = jnp.where(good, st.sty.at[:, h].set(s_y).at[h, :].set(y_s), st.sty)
    yty = jnp.where(good, st.yty.at[:, h].set(y_y).at[h, :].set(y_y), st.yty)
    head = jnp.where(good, (h + 1) % memory, h)
    count = jnp.where(good, jnp.minimum(st.count + 1, memory), st.count)
    direction = _direction(new_grad, mem, sty, yty, prod[:, 2], head, count)
    norm = jnp.maximum(jnp.linalg.norm(new_grad), 1e-300)
    step = jnp.where(
        first,
        jnp.minimum(1.0, 1.0 / norm),
        jnp.where(ok, 1.0, _backtrack(st.step, st.value, slope, new_value)),
    ).astype(st.step.dtype)
    moved = first | accepted
    return _State(
        x=jnp.where(moved, trial, st.x),
        value=jnp.where(moved, new_value, st.value),
        grad=jnp.where(moved, new_grad, st.grad),
        direction=jnp.where(first, -new_grad, jnp.where(accepted, direction, st.direction)),
        step=step,
        mem=mem,
        sty=sty,
        yty=yty,
        head=head,
        count=count,
        iterations=st.iterations + accepted.astype(st.iterations.dtype),
        backtracks=jnp.where(moved, 0, st.backtracks + 1).astype(st.backtracks.dtype),
        started=jnp.asarray(True),
    )
