import jax
import jax.numpy as jnp
import numpy as np

from pgm_dp.learners.cgm.anderson import anderson_init, anderson_reset, anderson_step


def _linear_problem(d=30, seed=0):
    # F(x) = A x + b with spectral radius 0.99: damped iteration needs ~1000s of steps.
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    a = q @ np.diag(np.linspace(0.0, 0.99, d)) @ q.T
    b = rng.standard_normal(d)
    return jnp.asarray(a), jnp.asarray(b), np.linalg.solve(np.eye(d) - a, b)


@jax.jit
def _step(state, x, a, b, alpha):
    f = a @ x + b - x
    nxt, state = anderson_step(state, x, f, alpha)
    return nxt, state, jnp.max(jnp.abs(f))


def _iterate(memory, a, b, steps, alpha=1.0):
    x = jnp.zeros(b.shape)
    state = anderson_init(x, memory)
    for k in range(steps):
        nxt, new, residual = _step(state, x, a, b, alpha)
        if float(residual) < 1e-10:
            return x, k
        x, state = nxt, new
    return x, steps


def _damped_steps(a, b, steps):
    """Steps of the plain iteration ``x + F(x)`` to ``|F| < 1e-10`` (NumPy: no dispatch)."""
    x = np.zeros(b.shape)
    for k in range(steps):
        f = a @ x + b - x
        if np.max(np.abs(f)) < 1e-10:
            return k
        x = x + f
    return steps


def test_memory_zero_is_the_damped_iteration():
    a, b, _ = _linear_problem()
    x = jnp.zeros(b.shape)
    state = anderson_init(x, 0)
    for _ in range(5):
        f = a @ x + b - x
        nxt, state = anderson_step(state, x, f, 0.3)
        np.testing.assert_allclose(nxt, x + 0.3 * f)
        x = nxt


def test_full_memory_behaves_like_gmres_and_short_memory_still_helps():
    # On a linear map Anderson acceleration with memory >= d is GMRES in disguise: it
    # converges in O(d) steps where the damped iteration needs thousands.
    a, b, exact = _linear_problem(d=30)
    k_plain = _damped_steps(np.asarray(a), np.asarray(b), 5000)  # memory 0 (test above)
    x_full, k_full = _iterate(30, a, b, 5000)
    x_short, k_short = _iterate(5, a, b, 5000)
    np.testing.assert_allclose(x_full, exact, atol=1e-8)
    np.testing.assert_allclose(x_short, exact, atol=1e-8)
    assert k_full <= 3 * 30 < k_plain / 10
    assert k_short < k_plain / 1.5


def test_reset_forgets_the_history():
    a, b, _ = _linear_problem()
    x = jnp.zeros(b.shape)
    state = anderson_init(x, 3)
    for _ in range(4):
        x, state = anderson_step(state, x, a @ x + b - x, 1.0)
    assert int(state.count) == 3
    kept = anderson_reset(state, when=False)
    assert int(kept.count) == 3 and bool(kept.started)
    state = anderson_reset(state)
    f = a @ x + b - x
    nxt, state = anderson_step(state, x, f, 0.5)
    np.testing.assert_allclose(nxt, x + 0.5 * f)  # a plain damped step
    assert int(state.count) == 0


def test_carried_history_is_used_but_forms_no_difference_across_maps():
    # CGM-EM carries the history from one E-step to the next with started=False: the first
    # step of the new map uses the old differences but adds none between the two maps.
    a, b, exact = _linear_problem(d=30)
    x = jnp.zeros(b.shape)
    state = anderson_init(x, 5)
    for _ in range(8):
        x, state = anderson_step(state, x, a @ x + b - x, 1.0)
    carried = state._replace(started=False)
    f = a @ x + b - x
    nxt, after = anderson_step(carried, x, f, 1.0)
    assert int(after.count) == int(state.count) == 5
    np.testing.assert_array_equal(after.dx[:5], state.dx[:5])  # no new row (the 6th: scratch)
    assert not np.allclose(nxt, x + f)  # not the plain step: the history was used
    assert np.linalg.norm(nxt - exact) < np.linalg.norm(x + f - exact)


def test_kept_gram_matrix_is_that_of_the_history():
    # The Gram matrix df df^T is updated one row per step (through resets and a carried
    # history): it must stay equal to the one formed from the rows.
    a, b, _ = _linear_problem(d=30, seed=1)
    x = jnp.zeros(b.shape)
    state = anderson_init(x, 4)
    for k in range(11):
        if k in (5, 8):
            state = anderson_reset(state) if k == 5 else state._replace(started=False)
        x, state = anderson_step(state, x, a @ x + b - x, 0.7)
        df = np.asarray(state.df)
        np.testing.assert_allclose(state.gram, df @ df.T, rtol=1e-12, atol=1e-14)
