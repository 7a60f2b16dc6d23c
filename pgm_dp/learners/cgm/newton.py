"""CGM-EM's E-step by truncated Newton-CG on the convex dual of Problem (6).

Bernstein et al. (2017, Eq. 6) ask for ``n* = argmax_{n in M_N} theta^T n + H(n) +
log p(y | n)``. With ``g(n) = -log p(y | n)`` (convex) and exact BP, Fenchel duality turns it
into the unconstrained convex problem

    min_lambda  D(lambda) = N A(theta + lambda) + sum_i phi_i(lambda_i),
    phi(l) = -l y - (s / b) sqrt(1 - b^2 l^2)   (pseudo-Huber-smoothed Laplace, |l| < 1/b)
    phi(l) = -l y + sigma^2 l^2 / 2              (Gaussian),

whose gradient ``N mu(theta + lambda) - n_lambda`` is NLBP's residual ``n' - n`` at
``n_lambda = -phi'(lambda)`` and whose Hessian ``N Cov(theta + lambda) + diag(phi'')`` is
positive definite. Each Newton step solves ``H d = -grad D`` by conjugate gradients on
Hessian-vector products (one forward-mode pass of the junction tree each, ``jax.jvp``),
Jacobi-preconditioned by ``N mu (1 - mu) + phi''``, then backtracks (Armijo) inside the
domain ``|lambda| < 1/b``. Unlike NLBP's damped fixed-point iteration it converges by
construction however sharply ``log p(y | n)`` is curved (noise far below one count); it
needs exact BP (the Bethe free energy is not convex), so loopy BP keeps NLBP. Our choices:
CG forcing ``min(0.5, sqrt(|grad|_inf / N))``, 100 CG and 40 Newton iterations at most,
fraction-to-boundary 0.99.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

__all__ = ["dual_terms", "newton_loop"]

_CG_ITERS = 100
_BACKTRACKS = 40


def dual_terms(laplace, b, s, y, lam):
    """``(phi, n_lambda, phi'', bound)`` elementwise on the flat ``lam`` (see module), with
    per-cell ``laplace`` flags, noise scales ``b``, smoothings ``s`` and releases ``y``;
    ``bound`` is ``1/b`` in Laplace cells and ``inf`` in Gaussian ones."""
    root = jnp.sqrt(jnp.maximum(1.0 - (b * lam) ** 2, 1e-300))
    phi = jnp.where(laplace, -lam * y - (s / b) * root, -lam * y + 0.5 * b * b * lam * lam)
    n = jnp.where(laplace, y - s * b * lam / root, y - b * b * lam)
    curv = jnp.where(laplace, s * b / root**3, b * b)
    bound = jnp.where(laplace, 1.0 / b, jnp.inf)
    return phi, n, curv, bound


def _cg(hvp, g, precond, tol):
    """Preconditioned CG for ``H d = -g`` to relative residual ``tol``; ``(d, iterations)``."""
    r = -g
    z = r / precond
    state = (jnp.zeros_like(g), r, z, z, jnp.vdot(r, z), 0)
    stop = (tol * jnp.linalg.norm(g)) ** 2

    def cond(s):
        return (jnp.vdot(s[1], s[1]) > stop) & (s[5] < _CG_ITERS)

    def body(s):
        d, r, z, p, rz, it = s
        hp = hvp(p)
        a = rz / jnp.vdot(p, hp)
        d, r = d + a * p, r - a * hp
        z = r / precond
        rz_new = jnp.vdot(r, z)
        return d, r, z, z + (rz_new / rz) * p, rz_new, it + 1

    d, *_, it = jax.lax.while_loop(cond, body, state)
    return d, it


def newton_loop(bp, laplace, smoothing, max_iters):
    """The dual Newton E-step with NLBP's loop signature and outputs: ``(theta, cells, n0,
    N, tol, alpha0, acc0) -> (n, delta, bp_passes, alpha0, acc0)`` on the flat layout
    (``cells = (y, b)`` per cell; ``laplace``: whether each cell's noise is of a Laplace
    kind). ``n`` is the primal
    point ``n_lambda`` of the final ``lambda``, so that ``theta + grad_n log p(y | n) = theta
    + lambda`` exactly (NLBP's ``theta'``; ``N mu(theta + lambda)`` differs from it by the
    residual, ``delta = |grad D|_inf / N``). Started from the better (lower ``D``) of
    ``lambda = grad log p(y | n0)`` and ``lambda = 0`` (far from ``y`` the first is huge and
    Newton stalled)."""

    def loop(theta, cells, n0, total, tol, alpha0=0.5, acc0=None):
        y, b = cells
        cells = (jnp.asarray(laplace), b, smoothing * b, y)

        def margs(lam):
            m, log_z, _ = bp(theta + lam)
            return m, log_z

        def dual(lam):
            mu, log_z = margs(lam)
            phi, n_lam, curv, _ = dual_terms(*cells, lam)
            return total * log_z + jnp.sum(phi), total * mu - n_lam, mu, curv

        lam0 = _start(*cells, n0)
        value, grad, mu, curv = dual(lam0)
        zero = jnp.zeros_like(lam0)  # lambda = 0: theta's own marginals, n_0 = y
        v0, g0, mu0, c0 = dual(zero)
        lam0, value, grad, mu, curv = jax.tree_util.tree_map(
            functools.partial(jnp.where, v0 < value),
            (zero, v0, g0, mu0, c0),
            (lam0, value, grad, mu, curv),
        )

        def cond(s):
            return (jnp.max(jnp.abs(s[2])) / total > tol) & (s[5] < max_iters)

        def body(s):
            step = _newton_step(dual, margs, s, total, cells)
            return step[:5] + (jnp.where(step[7], step[5], max_iters), step[6])

        state = (lam0, value, grad, mu, curv, 0, 1)
        lam, _, grad, _, _, _, passes = jax.lax.while_loop(cond, body, state)
        n = dual_terms(*cells, lam)[1]
        return n, jnp.max(jnp.abs(grad)) / total, passes, alpha0, acc0

    return loop


def _start(laplace, b, s, y, n0):
    """``lambda = d/dn log p(y | n0)``: the dual point of the statistics ``n0`` (inside the
    domain: the smoothed Laplace gradient is below ``1/b`` in magnitude)."""
    r = y - n0
    return jnp.where(laplace, r / (b * jnp.sqrt(r * r + s * s)), r / (b * b))


def _newton_step(dual, margs, s, total, cells):
    """One damped Newton step: CG direction, fraction to the boundary, backtracking; the
    last entry says whether a step was taken (none: the loop stops)."""
    lam, value, grad, mu, curv, it, passes = s

    def hvp(v):
        return total * jax.jvp(lambda x: margs(x)[0], (lam,), (v,))[1] + curv * v

    forcing = jnp.minimum(0.5, jnp.sqrt(jnp.max(jnp.abs(grad)) / total))
    d, cg_iters = _cg(hvp, grad, total * mu * (1.0 - mu) + curv, forcing)
    bound = dual_terms(*cells, lam)[3]
    room = jnp.where(d > 0, bound - lam, jnp.where(d < 0, bound + lam, jnp.inf))
    t0 = jnp.minimum(1.0, 0.99 * jnp.min(room / jnp.maximum(jnp.abs(d), 1e-300)))
    slope = jnp.vdot(grad, d)

    def accepted(ls):  # Armijo on D, or (where rounding hides D's decrease) on |grad D|
        t, new_value, new_grad = ls[0], ls[1], ls[2]
        smaller = jnp.linalg.norm(new_grad) <= (1.0 - 1e-4 * t) * jnp.linalg.norm(grad)
        return (new_value <= value + 1e-4 * t * slope) | smaller

    def cond(ls):
        return ~accepted(ls) & (ls[-1] < _BACKTRACKS)

    def body(ls):
        t = ls[0] / 2
        return (t, *dual(lam + t * d), ls[-1] + 1)

    ls = jax.lax.while_loop(cond, body, (t0, *dual(lam + t0 * d), 0))
    t, new_value, new_grad, new_mu, new_curv, k = ls
    moved = accepted(ls)
    keep = lambda a, b: jnp.where(moved, a, b)  # noqa: E731
    passes = passes + 2 * cg_iters + k + 1
    return (
        keep(lam + t * d, lam),
        keep(new_value, value),
        keep(new_grad, grad),
        keep(new_mu, mu),
        keep(new_curv, curv),
        it + 1,
        passes,
        moved,
    )
