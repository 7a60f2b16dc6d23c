"""The plug-in path's numerics (:func:`pgm_dp.bayes.posterior.posterior`,
``covariance="plugin"``): a starting ``theta`` moment matched to the release
(:func:`plugin_start`), the plug-in covariance ``Sigma`` at a point where it is finite
(:func:`finite_covariance`), and the MAP by L-BFGS in coordinates whitened by the
Gauss-Newton Hessian (:func:`preconditioned_map`)."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.optimize

from ..errors import DomainError
from ..learners.mle import fit_marginals
from ..models.gauge import gauge_projector
from ..models.mrf import MarkovRandomField
from ..tables import flatten_tables
from .model import Problem, plugin_covariance

__all__ = [
    "START_L2",
    "SHRINK_STEPS",
    "FiniteCovariance",
    "plugin_start",
    "finite_covariance",
    "preconditioned_map",
]

#: Smallest ridge of the start's moment matching (naive MLE's default, per record): the
#: noisy tables disagree, and with the prior's ridge alone (``1 / (2 s^2 N)``) the start ran
#: to log-potentials in the hundreds, from which the MAP search stopped far from the mode.
START_L2 = 1e-4
#: Halvings of the log-potentials :func:`finite_covariance` tries.
SHRINK_STEPS = 20


def plugin_start(problem: Problem, mrf: MarkovRandomField, prior_scale: float) -> np.ndarray:
    """A starting ``theta``: moment matched to the release clipped at zero plus one
    pseudo-count per cell, the prior or :data:`START_L2` as the ridge (the larger),
    then projected off the gauge (:func:`~pgm_dp.models.gauge.gauge_projector`: no
    marginal changes, and the prior's mode along the gauge is zero). Only a start; the
    pseudo-count keeps the cells the noise hides away from extreme log-potentials, where
    ``Sigma`` vanishes and the Gauss-Newton preconditioner fails (``docs/bayes.md``)."""
    means, at = {}, 0
    for c, shape in zip(problem.cliques, problem.shapes, strict=True):
        size = math.prod(shape)
        pseudo = 1.0
        table = np.clip(problem.y[at : at + size], 0.0, None) + pseudo
        means[c], at = (table / table.sum()).reshape(shape), at + size
    l2 = max(1.0 / (2.0 * prior_scale**2 * problem.total), START_L2)
    fit = fit_marginals(mrf.replace(None), means, l2=l2, tol=1e-6, max_iters=500)
    flat = flatten_tables(fit.model.log_potentials)
    return gauge_projector(mrf.domain, mrf.cliques)(flat)


class FiniteCovariance(NamedTuple):
    """A point ``x`` and the plug-in covariance ``sigma = Sigma(x)`` there."""

    x: np.ndarray
    sigma: np.ndarray


def finite_covariance(problem: Problem, x: np.ndarray) -> FiniteCovariance:
    """``(x', Sigma(x'))``: the plug-in covariance at ``x``, or, where it is not finite
    there (log-potentials so large that the junction tree's passes overflow), at the first
    of ``x / 2, x / 4, ...`` (:data:`SHRINK_STEPS` at most) where it is. Our rule: the
    point moves towards the prior's mode along the segment to it; ``Sigma`` is a plug-in
    (frozen at a start and at the MAP), so any point near the mode serves, and the MAP
    search that follows starts from ``x'``. A :class:`~pgm_dp.errors.DomainError` if no
    point is finite."""
    x = np.asarray(x, dtype=np.float64)
    for k in range(SHRINK_STEPS):
        try:
            return FiniteCovariance(x / 2.0**k, plugin_covariance(problem, x / 2.0**k))
        except DomainError:
            continue
    x = x / 2.0**SHRINK_STEPS
    return FiniteCovariance(x, plugin_covariance(problem, x))


def preconditioned_map(value_and_grad, problem, x0: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The MAP by L-BFGS in the coordinates ``z`` whitened by ``H = R R^T``
    (``theta = x0 + R^-T z``), where the problem is well conditioned.

    Args:
        value_and_grad: ``(theta, problem) -> (potential, gradient)`` (the structure's
            :class:`~pgm_dp.bayes.compiled.CompiledFunctions`).
        problem: the release's :class:`~pgm_dp.bayes.problem.PosteriorProblem`.
        x0: the start.
        r: the lower Cholesky factor ``R``.
    """

    def theta(z):
        return x0 + scipy.linalg.solve_triangular(r, z, lower=True, trans="T")

    def fun(z):
        val, grad = value_and_grad(jnp.asarray(theta(z)), problem)
        grad = np.asarray(grad, dtype=np.float64)
        if not (np.isfinite(val) and np.all(np.isfinite(grad))):  # a wild trial step:
            return 1e30, np.zeros_like(z)  # the line search backtracks
        return float(val), scipy.linalg.solve_triangular(r, grad, lower=True)

    res = scipy.optimize.minimize(
        fun, np.zeros(x0.size), jac=True, method="L-BFGS-B", options={"maxiter": 2000}
    )
    return theta(res.x)
