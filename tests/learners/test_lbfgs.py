"""The compact L-BFGS direction equals the two-loop recursion (Nocedal & Wright Alg. 7.4)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgm_dp.learners.lbfgs import _direction, lbfgs_loop

jax.config.update("jax_enable_x64", True)


def two_loop(grad, pairs):
    """``-H grad`` over ``pairs`` (oldest first), ``H_0 = gamma I`` of the newest pair."""
    q, alphas = grad.copy(), []
    for s, y in reversed(pairs):
        a = s @ q / (s @ y)
        alphas.append(a)
        q = q - a * y
    gamma = pairs[-1][0] @ pairs[-1][1] / (pairs[-1][1] @ pairs[-1][1]) if pairs else 1.0
    r = gamma * q
    for (s, y), a in zip(pairs, reversed(alphas), strict=True):
        r = r + s * (a - (y @ r) / (s @ y))
    return -r


def compact(grad, pairs, memory):
    """:func:`_direction` after writing ``pairs`` into a circular memory (wrapping)."""
    n = grad.shape[0]
    mem, head = np.zeros((2 * memory, n)), 0
    for s, y in pairs:
        mem[head], mem[memory + head] = s, y
        head = (head + 1) % memory
    s_mem, y_mem = mem[:memory], mem[memory:]
    out = _direction(
        jnp.asarray(grad), jnp.asarray(mem), jnp.asarray(s_mem @ y_mem.T),
        jnp.asarray(y_mem @ y_mem.T), jnp.asarray(mem @ grad), head, min(len(pairs), memory),
    )  # fmt: skip
    return np.asarray(out)


@pytest.mark.parametrize("n_pairs", [0, 1, 3, 5, 9])
def test_compact_direction_equals_the_two_loop_recursion(n_pairs):
    rng = np.random.default_rng(n_pairs)
    n, memory = 12, 5
    a = rng.normal(size=(n, n))
    hess = a @ a.T + n * np.eye(n)  # pairs of a convex quadratic: s^T y > 0
    pairs = [(s, hess @ s) for s in rng.normal(size=(n_pairs, n))]
    grad = rng.normal(size=n)
    want = two_loop(grad, pairs[-memory:])
    np.testing.assert_allclose(compact(grad, pairs, memory), want, rtol=1e-10, atol=1e-12)


def test_lbfgs_loop_minimises_a_quadratic_to_its_tolerance():
    rng = np.random.default_rng(0)
    d = jnp.asarray(rng.uniform(1.0, 100.0, 40))

    def value_and_grad(x):
        return 0.5 * jnp.sum(d * x * x) + jnp.sum(jnp.cos(x)), d * x - jnp.sin(x)

    res = jax.jit(lambda x0: lbfgs_loop(value_and_grad, x0, (), 1e-10, 500, memory=4))(jnp.ones(40))
    assert float(jnp.max(jnp.abs(res.grad))) <= 1e-10
    assert 0 < int(res.iterations) < 500


def test_a_point_without_a_finite_gradient_is_never_accepted():
    """Beyond ``x = 1.2`` the objective's value is finite but its gradient is not (as BP's
    at potentials of 1e15): the line search backtracks instead of accepting the step."""

    def value_and_grad(x):
        grad = jnp.where(x > 1.2, jnp.nan, 2.0 * (x - 5.0))
        return jnp.sum((x - 5.0) ** 2), grad

    res = jax.jit(lambda x0: lbfgs_loop(value_and_grad, x0, (), 1e-8, 50))(jnp.ones(1))
    assert np.all(np.isfinite(np.asarray(res.grad))) and float(res.x[0]) <= 1.2
    assert float(res.value) < 16.0  # it moved towards 5 from x = 1
