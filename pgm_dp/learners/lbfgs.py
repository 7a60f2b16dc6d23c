"""L-BFGS as one traced loop: the outer optimiser of the compiled learners.

The learners' objectives are smooth and (for the MLE) convex, and their gradients come out
of the same junction-tree pass as their values (``grad log Z`` is the model's marginals). So
each fit is one JAX program: the start, L-BFGS (Nocedal & Wright 2006, Alg. 7.4/7.5: the
two-loop recursion with memory ``m``, here optax's :func:`optax.lbfgs`) with the zoom line
search of Nocedal & Wright Alg. 3.5/3.6 (strong Wolfe conditions; Hager & Zhang's
approximate Wolfe test near the precision limit), and the stopping rule, all inside
``jax.lax.while_loop``. Tolerances and iteration caps are arguments, not constants of the
program, so a second fit of the same structure compiles nothing; ``jax.vmap`` of the loop
fits many problems of one structure at once.

The stopping rule is that of the scipy driver it replaces (L-BFGS-B with ``gtol = tol``,
``ftol = 0``): stop when the largest gradient entry is at most ``tol``, after ``max_iters``
iterations, or when the line search can no longer decrease the objective
(:data:`STALL_ITERS` iterations in a row without a decrease: the float64 precision limit).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

__all__ = ["LBFGSResult", "MEMORY", "STALL_ITERS", "lbfgs_loop", "with_gradient"]

#: L-BFGS memory (``maxcor`` of the scipy driver it replaces).
MEMORY = 20
#: Line-search steps per iteration at most.
LINESEARCH_STEPS = 30
#: Iterations in a row without a decrease of the objective after which the loop stops.
STALL_ITERS = 3


class LBFGSResult(NamedTuple):
    """Final point, objective, gradient and iterations of :func:`lbfgs_loop` (traced)."""

    x: jax.Array
    value: jax.Array
    grad: jax.Array
    iterations: jax.Array


def with_gradient(value_and_grad):
    """The scalar ``f(x, args)`` of ``value_and_grad(x, *args) -> (f, grad f)``, whose
    derivative in ``x`` is that ``grad`` (a ``jax.custom_vjp``): the line search asks
    ``jax.value_and_grad`` and gets the objective's own gradient (for ``log Z``: the
    marginals of one calibration) instead of a reverse-mode sweep. ``args`` get no
    cotangent (zero)."""

    @jax.custom_vjp
    def f(x, args):
        return value_and_grad(x, *args)[0]

    def forward(x, args):
        value, grad = value_and_grad(x, *args)
        return value, (grad, args)

    def backward(res, ct):
        grad, args = res
        return ct * grad, jax.tree_util.tree_map(jnp.zeros_like, args)

    f.defvjp(forward, backward)
    return f


def lbfgs_loop(value_and_grad, x0, args, tol, max_iters, memory: int = MEMORY) -> LBFGSResult:
    """Minimise ``x -> value_and_grad(x, *args)[0]`` from ``x0`` (traceable; see the module
    docstring for the method and the stopping rule). ``tol`` and ``max_iters`` may be
    traced; ``memory`` is the program's."""
    fun = with_gradient(value_and_grad)

    def value_fn(x):
        return fun(x, args)

    opt = optax.lbfgs(
        memory_size=memory,
        linesearch=optax.scale_by_zoom_linesearch(
            max_linesearch_steps=LINESEARCH_STEPS, initial_guess_strategy="one"
        ),
    )
    value0, grad0 = value_and_grad(x0, *args)

    def cond(carry):
        _, _, _, grad, it, stall = carry
        return (jnp.max(jnp.abs(grad)) > tol) & (it < max_iters) & (stall < STALL_ITERS)

    def body(carry):
        x, state, value, grad, it, stall = carry
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=value_fn)
        new_x = x + updates
        new_value = optax.tree_utils.tree_get(state, "value")
        new_grad = optax.tree_utils.tree_get(state, "grad")
        stall = jnp.where(new_value < value, 0, stall + 1)
        return new_x, state, new_value, new_grad, it + 1, stall

    init = (x0, opt.init(x0), value0, grad0, jnp.asarray(0), jnp.asarray(0))
    x, _, value, grad, it, _ = jax.lax.while_loop(cond, body, init)
    return LBFGSResult(x, value, grad, it)
