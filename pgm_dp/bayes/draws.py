"""Draws from a fitted posterior: unconstrained points, the model's sites, the marginals.

Contract: :func:`unconstrained_draws` draws from a :class:`~pgm_dp.bayes.fit.PosteriorFit`
by the Laplace method (``N(x, H^-1)``) or NUTS (:func:`~pgm_dp.bayes.nuts.nuts_draws`);
:func:`site_draws` maps them to the model's sites; :func:`flat_marginals` gives the clique
marginals per draw (for the Laplace method, the linearisation at the MAP:
:mod:`~pgm_dp.bayes.linear`). :func:`~pgm_dp.bayes.posterior.posterior` and
:func:`~pgm_dp.bayes.batch.marginal_draws` are made of them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .fit import PosteriorFit
from .linear import linear_marginals, renormalise, table_offsets
from .model import mean_map, site_name
from .nuts import Draws, RunSettings, gauge_split, nuts_draws

__all__ = ["Marginals", "flat_marginals", "site_draws", "unconstrained_draws"]


class Marginals(NamedTuple):
    """Flat marginal draws ``(chains * draws, d)``.

    Args:
        model: the model's marginals (``mu(theta)`` of NUTS's draws; for the Laplace
            method their linearisation at the MAP, clipped and renormalised).
        for_tables: those the data's tables are drawn around (the same for NUTS; the
            linearisation unclipped for the Laplace method, :mod:`~pgm_dp.bayes.linear`).
    """

    model: np.ndarray
    for_tables: np.ndarray


def unconstrained_draws(method: str, fit: PosteriorFit, run: RunSettings) -> Draws:
    """Flat unconstrained draws ``(chains, draws, size)`` and NUTS's sample stats.

    Args:
        method: ``"laplace"`` (``N(x, H^-1)``; no stats) or ``"nuts"``.
        fit: the posterior's fit.
        run: the run's settings (the Laplace method reads its key, chains and draws).
    """
    x, cov = fit.x, fit.cov
    if method == "laplace":
        chol = np.linalg.cholesky(cov + 1e-12 * np.eye(x.size))
        z = jax.random.normal(run.key, (run.num_chains, run.num_samples, x.size))
        return Draws(np.asarray(x + z @ jnp.asarray(chol).T), None)
    split = gauge_split(fit.eigen, x.size)
    return nuts_draws(fit.functions, fit.data, x, cov, split, run)


def site_draws(fit: PosteriorFit, flat: np.ndarray, shape: tuple) -> dict:
    """``{site: draws}`` of the model's sites at the unconstrained draws ``flat``, each
    reshaped to ``shape`` (chains, draws) and the site's own shape."""
    out = fit.functions.constrain(jnp.asarray(flat.reshape(-1, fit.x.size)), fit.data)
    return {k: np.asarray(v).reshape(*shape, *v.shape[1:]) for k, v in out.items()}


def flat_marginals(method: str, fit: PosteriorFit, sites: dict) -> Marginals:
    """The :class:`Marginals` of the draws ``sites`` (:func:`site_draws`).

    Args:
        method: ``"laplace"`` or ``"nuts"``.
        fit: the posterior's fit (its mode and ``Sigma`` there).
        sites: the draws of the model's sites.
    """
    problem = fit.problem
    if method == "nuts":
        mu = np.concatenate(
            [
                sites[site_name(c)].reshape(-1, math.prod(s))
                for c, s in zip(problem.cliques, problem.shapes, strict=True)
            ],
            axis=1,
        )
        return Marginals(mu, mu)
    d = problem.size
    theta = sites["theta"].reshape(-1, d)
    x = np.asarray(fit.x)[:d]
    mu_hat = np.asarray(mean_map(problem)(jnp.asarray(x)))
    offsets = table_offsets(problem.shapes)
    flat = linear_marginals(mu_hat, fit.sigma, theta, x, offsets, clip=False)
    return Marginals(renormalise(flat, offsets), flat)
