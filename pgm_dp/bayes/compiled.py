"""The compiled functions of a model structure, and the problems they take.

Contract: :func:`compiled_functions` returns the :class:`CompiledFunctions` of a prepared
release's structure (junction tree, cliques, table shapes), its prior scale and the type of
its covariance: the potential, its gradient and Hessian, the map to the model's sites and
the replicated releases (the parts of NumPyro's ``ModelInfo`` the posterior uses), and the
Laplace fit's program. They are compiled once per structure and reused across releases of
every kind: each takes the release as a :class:`~pgm_dp.bayes.problem.PosteriorProblem`
(:func:`posterior_problem`), whose arrays are arguments, not constants. The naive model is
the noise-aware one with zero noise variance, and the noise kinds per cell are data, so
neither is part of the key.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from numpyro.infer import Predictive
from numpyro.infer.util import constrain_fn, potential_energy

from .laplace import fit_program
from .model import Problem, release_model
from .problem import Covariance, ExactCovariance, FrozenCovariance, LatentCounts, PosteriorProblem

__all__ = [
    "CompiledFunctions",
    "compiled_functions",
    "frozen_covariance",
    "posterior_problem",
]


class CompiledFunctions(NamedTuple):
    """The jitted functions of one model structure (module docstring); ``flat`` is the
    unconstrained point: ``theta``, then the latent variables (``log noise_var`` of every
    cell on the exact path, the count deviations ``w`` with latent counts).

    Args:
        potential: ``(flat, problem) -> -log p(flat | y)`` (up to a constant), the fast
            junction-tree pass where the covariance is a plug-in (``NaN`` where unsound,
            which NUTS rejects).
        value_and_grad: ``(flat, problem) -> (potential, gradient)``, the log-space pass
            (the optimiser's).
        hessian: ``(flat, problem) -> d^2 potential``.
        constrain: ``(flats, problem) -> {site: values}`` over a leading axis of points.
        replicate: ``(key, samples, problem) -> y``: one replicated release per sample.
        laplace_fit: the Laplace fit's program over releases
            (:func:`~pgm_dp.bayes.laplace.fit_program`).
        size: ``d`` (the log-potentials), plus ``d`` on the exact path (the noise
            variances); the count deviations' number is their factor's.
    """

    potential: Callable
    value_and_grad: Callable
    hessian: Callable
    constrain: Callable
    replicate: Callable
    laplace_fit: Callable
    size: int


def compiled_functions(problem: Problem, prior_scale: float, covariance) -> CompiledFunctions:
    """The :class:`CompiledFunctions` of ``problem``'s structure (cached).

    Args:
        problem: a prepared release (its junction tree, cliques and shapes are used).
        prior_scale: the prior standard deviation of each log-potential.
        covariance: the covariance (its type is used).
    """
    return _compiled(problem.jt, problem.cliques, problem.shapes, prior_scale, type(covariance))


@functools.lru_cache(maxsize=16)
def _compiled(jt, cliques, shapes, prior_scale: float, kind: type) -> CompiledFunctions:
    """:func:`compiled_functions` by the structure, prior scale and covariance type."""
    d = int(sum(math.prod(s) for s in shapes))
    m = d if kind is ExactCovariance else 0
    latent = "noise_var" if m else "count_deviation" if kind is LatentCounts else None

    def model_args(data: PosteriorProblem, fast_mean=False):
        problem = Problem(
            data.y, data.total, data.variance, data.laplace, jt, cliques, shapes, data.offset
        )
        kwargs = {"prior_scale": prior_scale, "covariance": data.covariance}
        return (problem, data.y), kwargs | {"noise_aware": True, "fast_mean": fast_mean}

    def params(flat):
        return {"theta": flat[:d], latent: flat[d:]} if latent else {"theta": flat}

    def potential(flat, data, fast_mean=None):  # NUTS's: the fast pass (NaN rejected)
        args, kwargs = model_args(data, fast_mean)
        return potential_energy(release_model, args, kwargs, params(flat))

    def safe(flat, data):  # the optimiser's: the junction tree's log-space fallback kept
        return potential(flat, data, fast_mean=False)

    def constrain(flat, data):
        args, kwargs = model_args(data)
        return constrain_fn(release_model, args, kwargs, params(flat), return_deterministic=True)

    def replicate(key, samples, data):
        (problem, _), kwargs = model_args(data)
        pred = Predictive(release_model, samples, return_sites=["y"])
        return pred(key, problem, None, **kwargs)["y"]

    value_and_grad = jax.jit(jax.value_and_grad(safe))
    hessian = jax.jit(jax.hessian(potential))
    return CompiledFunctions(
        potential=jax.jit(potential),
        value_and_grad=value_and_grad,
        hessian=hessian,
        constrain=jax.jit(jax.vmap(constrain, in_axes=(0, None))),
        replicate=jax.jit(replicate),
        laplace_fit=fit_program(value_and_grad, hessian),
        size=d + m,
    )


def frozen_covariance(problem: Problem, noise_aware: bool, sigma: np.ndarray) -> FrozenCovariance:
    """The plug-in covariance ``C = N Sigma + diag(v)`` (a relative jitter of ``1e-6 N``;
    ``v = 0`` for the naive model) as its Cholesky factor and inverse.

    Args:
        problem: the prepared release (``N``, the noise variances).
        noise_aware: model the noise.
        sigma: ``Sigma = d mu / d theta`` at the reference point.
    """
    v = problem.variance if noise_aware else np.zeros(problem.size)
    n = problem.total
    cov = n * sigma + np.diag(v) + 1e-6 * n * np.eye(problem.size)
    chol = np.linalg.cholesky(cov)
    precision = scipy.linalg.cho_solve((chol, True), np.eye(problem.size))
    return FrozenCovariance(jnp.asarray(chol), jnp.asarray(precision))


def posterior_problem(problem: Problem, noise_aware: bool, covariance: Covariance):
    """The :class:`~pgm_dp.bayes.problem.PosteriorProblem` of a prepared release.

    Args:
        problem: the prepared release.
        noise_aware: model the noise (``False``: zero variance, no Laplace cell).
        covariance: the covariance of the counts.
    """
    var = problem.variance if noise_aware else np.zeros(problem.size)
    laplace = np.asarray(problem.laplace, dtype=bool) & noise_aware
    offset = jnp.zeros(problem.size) if problem.offset is None else jnp.asarray(problem.offset)
    return PosteriorProblem(
        y=jnp.asarray(problem.y),
        total=jnp.float64(problem.total),
        variance=jnp.asarray(var),
        laplace=jnp.asarray(laplace),
        offset=offset,
        covariance=covariance,
    )
