"""The posterior's fit: the mode and covariance its draws start from, as one named state.

Contract: :func:`fit_posterior` returns a :class:`PosteriorFit` of a prepared release: the
Laplace approximation ``N(x, H^-1)`` in the unconstrained coordinates (Räisä et al. 2023,
Sec. 3.3), ``Sigma = d mu / d theta`` at ``x`` and, for NUTS, its eigen-decomposition,
with the release's :class:`~pgm_dp.bayes.problem.PosteriorProblem` and the structure's
:class:`~pgm_dp.bayes.compiled.CompiledFunctions`. The exact-covariance path fits many
releases of one structure in one compiled program (:func:`exact_fits`,
:func:`~pgm_dp.bayes.laplace.laplace_fits`); the plug-in path freezes ``Sigma``
(:func:`_plugin_fit`) and, for NUTS with Laplace noise kept exact, adds the latent counts
(:func:`_latent_counts`; Ju et al. 2022's data augmentation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from ..errors import DomainError
from .compiled import CompiledFunctions, compiled_functions, frozen_covariance, posterior_problem
from .laplace import laplace_fits
from .model import MAX_STATES, Problem, mean_map, touched_domain
from .nuts import SigmaEigen, sigma_eigen
from .plugin import finite_covariance, plugin_start, preconditioned_map
from .problem import ExactCovariance, LatentCounts, ModelOptions, PosteriorProblem, stack

__all__ = [
    "EXACT_LIMIT",
    "FitOptions",
    "LATENT_LIMIT",
    "PosteriorFit",
    "covariance_path",
    "exact_fits",
    "fit_posterior",
]

#: Largest number of cells for which ``covariance="auto"`` evaluates ``Sigma(theta)`` exactly.
EXACT_LIMIT = 64
#: Largest number of cells for which ``laplace_noise="auto"`` keeps Laplace noise exact on
#: the plug-in path (latent counts): above it NUTS's cost grows steeply (``docs/bayes.md``).
LATENT_LIMIT = 64


@dataclass(frozen=True)
class FitOptions:
    """How the posterior is fitted (the arguments of
    :func:`~pgm_dp.bayes.posterior.posterior` of the same names).

    Args:
        covariance: ``"auto"``, ``"exact"`` or ``"plugin"``.
        laplace_noise: ``"auto"``, ``"exact"`` or ``"gaussian"`` (the plug-in path, NUTS).
        nuts: the draws are NUTS's (``Sigma``'s eigen-decomposition is needed).
    """

    covariance: str = "auto"
    laplace_noise: str = "auto"
    nuts: bool = False


class PosteriorFit(NamedTuple):
    """The Laplace fit of one release, and what the draws from it need.

    Args:
        problem: the prepared release.
        options: the model's options.
        data: the release as the compiled functions take it.
        functions: the structure's compiled functions.
        x: the mode, unconstrained and flat (then the start of the latent counts' ``w``).
        cov: ``H^-1`` at ``x`` (the Gauss-Newton Hessian's on the plug-in path).
        sigma: ``Sigma = d mu / d theta`` at ``x`` (``None`` until computed).
        eigen: ``Sigma``'s eigen-decomposition, for NUTS (``None`` otherwise).
    """

    problem: Problem
    options: ModelOptions
    data: PosteriorProblem
    functions: CompiledFunctions
    x: jax.Array
    cov: np.ndarray
    sigma: np.ndarray | None = None
    eigen: SigmaEigen | None = None


def _map_start(functions: CompiledFunctions, data: PosteriorProblem) -> np.ndarray:
    """The MAP's start: ``theta = 0``; latent noise variances at their prior mean (the
    noise's variance on Laplace cells, 1 elsewhere)."""
    x0 = np.zeros(functions.size)
    d = len(data.y)
    if functions.size > d:
        x0[d:] = np.log(np.where(np.asarray(data.laplace), np.asarray(data.variance), 1.0))
    return x0


def _with_sigma(fit: PosteriorFit, nuts: bool) -> PosteriorFit:
    """``fit`` with ``Sigma`` at its mode (:func:`~pgm_dp.bayes.plugin.finite_covariance`)
    and, for ``nuts``, its eigen-decomposition."""
    sigma = finite_covariance(fit.problem, np.asarray(fit.x[: fit.problem.size])).sigma
    return fit._replace(sigma=sigma, eigen=sigma_eigen(sigma) if nuts else None)


def exact_fits(problems: list, options: ModelOptions, nuts: bool) -> list[PosteriorFit]:
    """The exact-covariance fits of releases of one structure, all in one compiled program
    (:func:`~pgm_dp.bayes.laplace.laplace_fits`: the noise kinds are data).

    Args:
        problems: the prepared releases (one structure).
        options: the model's options.
        nuts: compute ``Sigma``'s eigen-decomposition too.
    """
    covariance = ExactCovariance()
    functions = compiled_functions(problems[0], options.prior_scale, covariance)
    datas = [posterior_problem(p, options.noise_aware, covariance) for p in problems]
    x0 = np.stack([_map_start(functions, d) for d in datas])
    fit = laplace_fits(functions, x0, stack(datas))
    return [
        _with_sigma(PosteriorFit(p, options, d, functions, jnp.asarray(fit.x[j]), fit.cov[j]), nuts)
        for j, (p, d) in enumerate(zip(problems, datas, strict=True))
    ]


def _plugin_fit(problem: Problem, mrf, options: ModelOptions) -> PosteriorFit:
    """Plug-in covariance: ``Sigma`` frozen at a start
    (:func:`~pgm_dp.bayes.plugin.plugin_start`), the MAP, ``Sigma`` re-frozen there and the
    MAP again; the covariance is the inverse Gauss-Newton Hessian
    ``(N^2 Sigma C^-1 Sigma + I / s^2)^-1`` (``C = N Sigma + diag(v)``, the Fisher
    information of the frozen model plus the prior's precision)."""
    x = plugin_start(problem, mrf, options.prior_scale)
    for _ in range(2):
        x, sigma = finite_covariance(problem, x)
        covariance = frozen_covariance(problem, options.noise_aware, sigma)
        jac = problem.total * sigma
        fisher = jac @ np.asarray(covariance.precision) @ jac
        prior = np.eye(problem.size) / options.prior_scale**2
        r = np.linalg.cholesky(0.5 * (fisher + fisher.T) + prior)
        functions = compiled_functions(problem, options.prior_scale, covariance)
        data = posterior_problem(problem, options.noise_aware, covariance)
        x = preconditioned_map(functions.value_and_grad, data, x, r)
    inv_r = scipy.linalg.solve_triangular(r, np.eye(x.size), lower=True)
    return PosteriorFit(problem, options, data, functions, jnp.asarray(x), inv_r.T @ inv_r, sigma)


def _latent_counts(fit: PosteriorFit) -> PosteriorFit:
    """The plug-in model with Laplace noise kept exact (module :mod:`~pgm_dp.bayes.model`):
    latent counts ``n = N mu + A w``, ``A = sqrt(N) U sqrt(Lambda)`` from ``Sigma``'s
    eigenpairs off the gauge (``fit.eigen``). The fit's mode becomes ``(theta, w)``, ``w``
    its conditional mean given ``theta`` under the Gaussian stand-in, and its covariance the
    stand-in's joint covariance of ``(theta, w)`` (the linearised model ``y = N mu(x) + J
    (theta - x) + A w + e``, ``e ~ N(0, diag(v))``, ``J = N Sigma``; NUTS's whitening)."""
    problem, eigen = fit.problem, fit.eigen
    keep = ~eigen.gauge
    n, d = problem.total, problem.size
    factor = math.sqrt(n) * eigen.vectors[:, keep] * np.sqrt(eigen.values[keep])
    scaled = np.concatenate([n * fit.sigma, factor], axis=1) / np.sqrt(problem.variance)[:, None]
    prior_precision = 1.0 / fit.options.prior_scale**2
    prior = np.concatenate([np.full(d, prior_precision), np.ones(factor.shape[1])])
    precision = scaled.T @ scaled + np.diag(prior)
    cov = scipy.linalg.cho_solve(scipy.linalg.cho_factor(precision), np.eye(len(prior)))
    resid = (problem.y - n * np.asarray(mean_map(problem)(jnp.asarray(fit.x)))) / problem.variance
    block = precision[d:, d:]
    w0 = scipy.linalg.cho_solve(scipy.linalg.cho_factor(block), factor.T @ resid)
    covariance = LatentCounts(jnp.asarray(factor))
    return fit._replace(
        data=posterior_problem(problem, fit.options.noise_aware, covariance),
        functions=compiled_functions(problem, fit.options.prior_scale, covariance),
        x=jnp.concatenate([jnp.asarray(fit.x), jnp.asarray(w0)]),
        cov=cov,
    )


def covariance_path(problem: Problem, mrf, covariance: str) -> str:
    """``"exact"`` or ``"plugin"``: ``covariance``, with ``"auto"`` resolved (exact up to
    :data:`EXACT_LIMIT` cells and :data:`~pgm_dp.bayes.model.MAX_STATES` joint states)."""
    if covariance == "auto":
        states = touched_domain(mrf.domain, mrf.cliques).size()
        small = problem.size <= EXACT_LIMIT and states <= MAX_STATES
        covariance = "exact" if small else "plugin"
    if covariance not in ("exact", "plugin"):
        raise DomainError(f"covariance must be 'auto', 'exact' or 'plugin', got {covariance!r}")
    return covariance


def fit_posterior(problem: Problem, mrf, options: ModelOptions, how: FitOptions) -> PosteriorFit:
    """The :class:`PosteriorFit` of a prepared release: the exact path's Laplace fit, or
    the plug-in path's (:func:`_plugin_fit`; for NUTS with Laplace noise kept exact, then
    :func:`_latent_counts`).

    Args:
        problem: the prepared release (:func:`~pgm_dp.bayes.model.prepare`).
        mrf: the model structure.
        options: the model's options.
        how: the path and sampler (:class:`FitOptions`).
    """
    if covariance_path(problem, mrf, how.covariance) == "exact":
        return exact_fits([problem], options, how.nuts)[0]
    fit = _plugin_fit(problem, mrf, options)
    fit = fit._replace(eigen=sigma_eigen(fit.sigma) if how.nuts else None)
    exact_noise = how.nuts and (
        how.laplace_noise == "exact"
        or (how.laplace_noise == "auto" and problem.size <= LATENT_LIMIT)
    )
    if options.noise_aware and any(problem.laplace) and exact_noise:
        return _latent_counts(fit)
    return fit
