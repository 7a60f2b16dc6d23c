"""L-BFGS as one traced loop: the outer optimiser of the compiled learners.

The learners' objectives are smooth and (for the MLE) convex, and their gradients come out
of the same junction-tree pass as their values (``grad log Z`` is the model's marginals). So
each fit is one JAX program: the start, L-BFGS (Nocedal & Wright 2006, Alg. 7.4/7.5: the
two-loop recursion with memory ``m``) with a backtracking line search (Armijo's condition,
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


def _direction(grad, s_mem, y_mem, rho, head, count):
    """``-H grad`` by the two-loop recursion (Nocedal & Wright Alg. 7.4) over the ``count``
    newest pairs of the circular memory (newest at ``head - 1``), ``H_0 = gamma I`` with
    ``gamma = s^T y / y^T y`` of the newest pair (Eq. 7.20; ``1`` with no pair)."""
    memory = s_mem.shape[0]

    def newest_first(i, carry):
        q, alpha = carry
        j = (head - 1 - i) % memory
        a = jnp.where(i < count, rho[j] * jnp.dot(s_mem[j], q), 0.0)
        return q - a * y_mem[j], alpha.at[j].set(a)

    q, alpha = jax.lax.fori_loop(0, memory, newest_first, (grad, jnp.zeros(memory)))
    last = (head - 1) % memory
    yy = jnp.dot(y_mem[last], y_mem[last])
    gamma = jnp.where(count > 0, jnp.dot(s_mem[last], y_mem[last]) / jnp.maximum(yy, 1e-300), 1.0)

    def oldest_first(i, r):
        j = (head - count + i) % memory
        b = rho[j] * jnp.dot(y_mem[j], r)
        return jnp.where(i < count, r + s_mem[j] * (alpha[j] - b), r)

    return -jax.lax.fori_loop(0, memory, oldest_first, gamma * q)


class _State(NamedTuple):
    x: jax.Array
    value: jax.Array
    grad: jax.Array
    direction: jax.Array
    step: jax.Array
    s_mem: jax.Array
    y_mem: jax.Array
    rho: jax.Array
    head: jax.Array
    count: jax.Array
    iterations: jax.Array
    backtracks: jax.Array
    started: jax.Array


def _accepts(state, value, slope, new_value, new_slope):
    """Armijo's sufficient decrease (Nocedal & Wright Eq. 3.6a), or where rounding hides
    the decrease, Hager & Zhang's (2005) approximate Wolfe conditions: the value within
    ``APPROX_RTOL`` of the last and ``sigma phi'(0) <= phi'(t) <= (2 delta - 1) phi'(0)``."""
    armijo = new_value <= value + ARMIJO * state.step * slope
    approx = (
        (new_value <= value + APPROX_RTOL * jnp.abs(value))
        & (new_slope >= CURVATURE * slope)
        & (new_slope <= (2.0 * ARMIJO - 1.0) * slope)
    )
    return jnp.isfinite(new_value) & (armijo | approx)


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
        s_mem=jnp.zeros((memory, n), x0.dtype),
        y_mem=jnp.zeros((memory, n), x0.dtype),
        rho=jnp.zeros(memory, x0.dtype),
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

        def rejected(st, *_):
            step = _backtrack(st.step, st.value, slope, new_value)
            return st._replace(step=step, backtracks=st.backtracks + 1)

        branch = jnp.where(st.started, jnp.where(ok, 1, 2), 0)
        new = jax.lax.switch(branch, (_first, _accept, rejected), st, trial, new_value, new_grad)
        return new, aux, (ok | ~st.started) & done(new_grad, aux)

    st, aux, _ = jax.lax.while_loop(cond, body, (init, aux0, jnp.asarray(False)))
    return LBFGSResult(st.x, st.value, st.grad, st.iterations, aux if carry else None)


def _first(st: _State, x0, value, grad) -> _State:
    """The state at the start ``x0``: steepest descent, first step ``min(1, 1 / |grad|)``
    (as L-BFGS-B)."""
    step = jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.linalg.norm(grad), 1e-300))
    return st._replace(
        x=x0, value=value, grad=grad, direction=-grad, step=step, started=jnp.asarray(True)
    )


def _accept(st: _State, trial, new_value, new_grad) -> _State:
    """The state after accepting ``trial``: the pair ``(s, y)`` enters the memory when
    ``s^T y > 0`` (curvature; skipped otherwise), then the new direction, unit step."""
    s, y = trial - st.x, new_grad - st.grad
    sy = jnp.dot(s, y)
    good = sy > 1e-12 * jnp.dot(y, y)
    memory = st.s_mem.shape[0]
    s_mem = st.s_mem.at[st.head].set(jnp.where(good, s, st.s_mem[st.head]))
    y_mem = st.y_mem.at[st.head].set(jnp.where(good, y, st.y_mem[st.head]))
    rho = st.rho.at[st.head].set(jnp.where(good, 1.0 / jnp.where(good, sy, 1.0), st.rho[st.head]))
    head = jnp.where(good, (st.head + 1) % memory, st.head)
    count = jnp.where(good, jnp.minimum(st.count + 1, memory), st.count)
    direction = _direction(new_grad, s_mem, y_mem, rho, head, count)
    return _State(
        trial, new_value, new_grad, direction, jnp.ones_like(st.step),
        s_mem, y_mem, rho, head, count, st.iterations + 1, jnp.zeros_like(st.backtracks),
        st.started,
    )  # fmt: skip
