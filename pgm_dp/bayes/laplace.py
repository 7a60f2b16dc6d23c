"""The Laplace fit of the exact-covariance posterior as one compiled program, over releases.

Räisä et al. 2023, Sec. 3.3: the posterior is approximated by ``N(MAP, H^-1)`` in the
unconstrained coordinates (``theta``, then ``log noise_var`` per cell on the exact path),
``H`` the Hessian of the potential ``-log p(theta, v | y)`` at the MAP. :func:`laplace_fits`
runs the whole fit as one JAX program per model structure: the MAP by L-BFGS
(:func:`~pgm_dp.learners.lbfgs.lbfgs_loop`: Nocedal & Wright 2006, Alg. 7.5, its line search
and the stopping rule inside one ``lax.while_loop``), then ``H`` there (forward over
reverse differentiation) and ``H^-1`` from its eigen-decomposition, eigenvalues floored at
:data:`EIGEN_FLOOR`. ``lax.map`` over a leading release axis fits many releases of one
structure in one call (a calibration's 100 releases per setting), one release after the
other inside the program: each L-BFGS loop stops at its own iteration, and the LAPACK calls
stay unbatched (vmapped, XLA's CPU runtime stalled in batched LAPACK calls on some runs).
Tolerances and iteration cap are arguments of the program, the releases' arrays too: a new
release or tolerance compiles nothing; a new number of releases compiles once.

Stopping rule: scipy's L-BFGS-B's defaults, which the fit it replaces used: the largest
gradient entry at most :data:`GTOL`, or a relative decrease of the objective at most
:data:`FTOL` (``(f_k - f_k+1) / max(|f_k|, |f_k+1|, 1)``; the naive model, ``Cov y = N
Sigma``, is so ill-conditioned on cells with small counts that the gradient test alone
takes thousands of iterations), after :data:`MAX_ITERS` iterations, or when the line search
finds no acceptable step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._config import jit_program, one_blas_thread
from ..learners.lbfgs import lbfgs_loop

__all__ = ["FTOL", "GTOL", "LaplaceFit", "MAX_ITERS", "fit_program", "laplace_fits"]

#: Gradient tolerance (largest entry; scipy's L-BFGS-B ``gtol``).
GTOL = 1e-5
#: Relative decrease of the objective below which the fit stops (scipy's ``ftol``,
#: ``factr = 1e7`` times the float64 epsilon).
FTOL = 1e7 * float(np.finfo(np.float64).eps)
#: Iteration cap.
MAX_ITERS = 15_000
#: Floor of ``H``'s eigenvalues before inversion.
EIGEN_FLOOR = 1e-8


class LaplaceFit(NamedTuple):
    """Per release (leading axis): the MAP ``x``, ``cov = H^-1`` there, L-BFGS's iterations
    and the largest gradient entry at ``x`` (NumPy arrays; JAX's inside the program)."""

    x: np.ndarray
    cov: np.ndarray
    iterations: np.ndarray
    grad_max: np.ndarray


class Lowest(NamedTuple):
    """What the fit's objective carries: the lowest value so far and the one before it."""

    low: jax.Array
    before: jax.Array


def fit_program(value_and_grad, hessian):
    """``fit(x0, problems, gtol, ftol, max_iters) -> LaplaceFit``, each field with a
    leading release axis (``problems``: stacked
    :class:`~pgm_dp.bayes.problem.PosteriorProblem` s); compiled on its first call, once per
    model structure (a field of its :class:`~pgm_dp.bayes.compiled.CompiledFunctions`).

    Args:
        value_and_grad: ``(x, problem) -> (potential, gradient)``.
        hessian: ``(x, problem) -> d^2 potential``.
    """

    def evaluate(x, best, data):
        """The objective, carrying ``(lowest value so far, the one before)``: at an
        accepted point, its decrease over the last accepted one (rejected trials lie
        above it)."""
        f, g = value_and_grad(x, data)
        return f, g, Lowest(jnp.minimum(best.low, f), best.low)

    def one(x0, data, gtol, ftol, max_iters):
        def done(grad, best):
            low, before = best.low, best.before
            scale = jnp.maximum(jnp.maximum(jnp.abs(low), jnp.abs(before)), 1.0)
            flat = jnp.isfinite(before) & (before - low <= ftol * scale)
            return (jnp.max(jnp.abs(grad)) <= gtol) | flat

        inf = jnp.asarray(jnp.inf, x0.dtype)
        res = lbfgs_loop(evaluate, x0, (data,), gtol, max_iters, aux0=Lowest(inf, inf), done=done)
        hess = hessian(res.x, data)
        w, u = jnp.linalg.eigh(0.5 * (hess + hess.T))
        cov = (u / jnp.maximum(w, EIGEN_FLOOR)) @ u.T
        return LaplaceFit(res.x, cov, res.iterations, jnp.max(jnp.abs(res.grad)))

    def batch(x0, data, gtol, ftol, max_iters):
        return jax.lax.map(lambda a: one(*a, gtol, ftol, max_iters), (x0, data))

    return jit_program(batch)


def laplace_fits(functions, x0, problems, gtol=GTOL, ftol=FTOL, max_iters=MAX_ITERS) -> LaplaceFit:
    """The Laplace fits of a batch of releases of one structure, one compiled program
    (module docstring).

    Args:
        functions: the structure's :class:`~pgm_dp.bayes.compiled.CompiledFunctions`.
        x0: the starts, ``(releases, size)``.
        problems: the releases' :class:`~pgm_dp.bayes.problem.PosteriorProblem` s stacked
            (:func:`~pgm_dp.bayes.problem.stack`).
        gtol, ftol, max_iters: the stopping rule (module docstring).
    """
    x0 = jnp.asarray(x0, dtype=jnp.float64)
    tols = jnp.float64(gtol), jnp.float64(ftol), jnp.asarray(int(max_iters))
    with one_blas_thread():  # LAPACK (Cholesky, eigh) inside XLA's threads: one BLAS thread
        fit = jax.tree.map(np.asarray, functions.laplace_fit(x0, problems, *tols))
    return fit._replace(cov=0.5 * (fit.cov + np.swapaxes(fit.cov, -1, -2)))
