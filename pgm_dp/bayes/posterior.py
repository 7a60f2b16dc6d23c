"""Posterior of an MRF given a private release: NUTS or a Laplace approximation, as ArviZ.

Contract: :func:`posterior` returns an ArviZ ``xarray.DataTree`` (``arviz_base.from_dict``;
diagnostics with ``arviz_stats``) with groups ``posterior`` (``theta``, ``noise_var`` for
Laplace-kind releases under the exact covariance, one ``marginal:A,B`` table per clique: the
model's probabilities, and one ``table:A,B``: the data's own table, the proportions of the
released records, :func:`~pgm_dp.bayes.linear.table_draws`; for a marginal that no
clique holds, the intervals of the data's table are those of
:func:`~pgm_dp.bayes.intervals.workload_intervals`: the model's marginal covers the
model's quantity only),
``posterior_predictive`` (replicated noisy releases ``y``), ``observed_data`` and, for NUTS,
``sample_stats`` (divergences, tree depth, ...).
:class:`~.mean.PosteriorMean` (in :mod:`.mean`) is the registered release learner (name
``"bayes"``).

Method (Räisä et al. 2023, Sec. 3.3: Laplace approximation and NUTS whitened by it):
``"laplace"`` finds the MAP in unconstrained coordinates (L-BFGS) and draws from
``N(MAP, H^-1)``, whose marginals are the linearisation at the MAP (a Gaussian in the
marginals, not ``mu`` of a Gaussian in ``theta``: :mod:`~pgm_dp.bayes.linear`);
``"nuts"`` runs every chain from the MAP in coordinates ``z`` whitened by
``H^-1`` on the identifiable log-potentials (the mass matrix then starts at the identity and
is adapted, dense up to :data:`DENSE_LIMIT` dimensions and diagonal above) and draws the
gauge, on which no marginal depends, from its exact posterior, the prior. ``H`` is the
exact Hessian for the exact covariance and the Gauss-Newton Hessian (Fisher information of
the frozen model plus the prior precision) for the plug-in one (:mod:`~pgm_dp.bayes.fit`).
On the plug-in path NUTS keeps Laplace noise exact through latent counts (Ju et al. 2022's
data augmentation).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from arviz_base import from_dict
from xarray import DataTree

from ..errors import DomainError
from ..models.mrf import MarkovRandomField
from .draws import Marginals, flat_marginals, site_draws, unconstrained_draws
from .fit import EXACT_LIMIT, LATENT_LIMIT, FitOptions, PosteriorFit, fit_posterior
from .labels import posterior_dims
from .linear import linear_replicates, split_sites, table_draws, table_offsets
from .model import PRIOR_SCALE, prepare, site_name
from .nuts import DENSE_LIMIT, RunSettings
from .problem import ModelOptions

__all__ = [
    "posterior",
    "as_key",
    "EXACT_LIMIT",
    "DENSE_LIMIT",
    "LATENT_LIMIT",
]

_LATENT = ("theta", "noise_var", "count_deviation")


def as_key(rng) -> jax.Array:
    """A JAX PRNG key from a seed, a numpy Generator or a key."""
    if isinstance(rng, np.random.Generator):
        return jax.random.PRNGKey(int(rng.integers(2**31)))
    if rng is None or isinstance(rng, int | np.integer):
        seed = 0 if rng is None else int(rng)
        return jax.random.PRNGKey(seed)
    return jnp.asarray(rng)


def _check(method, laplace_noise, num_warmup, num_samples, num_chains, pilot=0, zeros=None):
    """A :class:`~pgm_dp.errors.DomainError` for any bad argument of :func:`posterior`."""
    if zeros is not None and (isinstance(zeros, bool | str) or not math.isfinite(zeros)):
        raise DomainError(f"zeros must be a finite number or None, got {zeros!r}")
    if isinstance(pilot, bool | str) or int(pilot) != pilot or pilot < 0:
        raise DomainError(f"pilot must be an integer >= 0, got {pilot!r}")
    if method not in ("nuts", "laplace"):
        raise DomainError(f"method must be 'nuts' or 'laplace', got {method!r}")
    if laplace_noise not in ("auto", "exact", "gaussian"):
        raise DomainError(
            f"laplace_noise must be 'auto', 'exact' or 'gaussian', got {laplace_noise!r}"
        )
    for name, v in (("num_samples", num_samples), ("num_chains", num_chains)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise DomainError(f"{name} must be an integer >= 1, got {v!r}")
    if isinstance(num_warmup, bool) or int(num_warmup) != num_warmup or num_warmup < 0:
        raise DomainError(f"num_warmup must be an integer >= 0, got {num_warmup!r}")


def posterior(
    release,
    mrf: MarkovRandomField,
    *,
    num_warmup: int = 500,
    num_samples: int = 1000,
    num_chains: int = 4,
    rng=0,
    noise_aware: bool = True,
    method: str = "nuts",
    covariance: str = "auto",
    prior_scale: float = PRIOR_SCALE,
    laplace_noise: str = "auto",
    pilot: int = 0,
    zeros: float | None = None,
) -> DataTree:
    """Posterior of ``mrf``'s log-potentials given ``release`` (see the module docstring).

    Chains run vectorised in one compiled program, compiled once per model structure and
    run length; NUTS reports its progress on stderr (:mod:`pgm_dp._progress`).

    Args:
        release: the noisy marginals (:class:`~pgm_dp.privacy.NoisyMarginals`) with the
            mechanism that made them.
        mrf: the model; its cliques must contain the release's.
        num_warmup: NUTS warm-up steps per chain.
        num_samples: draws per chain (NUTS, or the Laplace approximation's draws).
        num_chains: chains.
        rng: seed, Generator or JAX key.
        noise_aware: ``False`` takes the release as the true counts, for contrast.
        method: ``"nuts"`` or ``"laplace"`` (a Gaussian at the mode).
        covariance: ``"exact"``, ``"plugin"`` or ``"auto"`` (exact up to
            :data:`EXACT_LIMIT` cells and :data:`~pgm_dp.bayes.model.MAX_STATES` joint
            states; :mod:`pgm_dp.bayes.model`).
        prior_scale: the scale of the Gaussian prior on the log-potentials.
        laplace_noise: plug-in path with NUTS: ``"exact"`` (latent counts,
            :mod:`~pgm_dp.bayes.fit`), ``"gaussian"`` or ``"auto"`` (exact up to
            :data:`LATENT_LIMIT` cells); ``docs/bayes.md``.
        pilot: > 0: a pilot NUTS run of that many draws per chain widens the whitening
            (:func:`~pgm_dp.bayes.nuts.nuts_draws`).
        zeros: the structural zeros' threshold ``t`` in standard deviations of a cell's
            combined noisy count (:mod:`~pgm_dp.bayes.zeros`); ``None`` (default): none,
            since at ε <= 1 a flag costs more coverage than it gains (``docs/bayes.md``).

    Returns:
        An ArviZ ``DataTree`` (posterior, predictive draws, sample statistics), e.g. for
        ``arviz_stats.summary(idata, var_names=["~theta"])``.
    """
    _check(method, laplace_noise, num_warmup, num_samples, num_chains, pilot, zeros)
    key_run, key_pred = jax.random.split(as_key(rng))
    problem = prepare(release, mrf, zeros)
    how = FitOptions(covariance, laplace_noise, nuts=method == "nuts")
    fit = fit_posterior(problem, mrf, ModelOptions(noise_aware, prior_scale), how)
    run = RunSettings(num_warmup, num_samples, num_chains, key_run, prior_scale, pilot)
    result = unconstrained_draws(method, fit, run)
    shape = (num_chains, num_samples)
    draws = site_draws(fit, result.unconstrained, shape)
    gen = np.random.default_rng(int(jax.random.randint(key_pred, (), 0, 2**31 - 1)))
    mu = flat_marginals(method, fit, draws)
    pred = _replicates(method, fit, draws, mu, key_pred, gen).reshape(*shape, -1)
    offsets = table_offsets(problem.shapes)
    variance = fit.data.variance
    tables = table_draws(
        mu.for_tables, problem.y, problem.total, fit.sigma, variance, offsets, gen, noise_aware
    )
    split_sites(draws, mu.model, tables, problem.cliques, problem.shapes, shape)
    _laplace_cells_only(draws, np.asarray(fit.data.laplace))
    groups = {"posterior": draws, "posterior_predictive": {"y": pred}}
    groups |= {"observed_data": {"y": problem.y}}
    if result.stats is not None:
        groups["sample_stats"] = result.stats._asdict()
    dims, coords = posterior_dims(mrf.domain, mrf.cliques, draws)
    idata = from_dict(groups, dims=dims, coords=coords)
    idata.posterior.attrs.update(
        method=method,
        covariance=fit.data.covariance.kind,
        noise_aware=int(noise_aware),
        cliques=[site_name(c) for c in mrf.cliques],
    )
    return idata


def _replicates(method: str, fit: PosteriorFit, sites: dict, mu: Marginals, key, gen):
    """Replicated releases, one per draw ``(chains * draws, d)``: NUTS's from the model
    (its latent sites), the Laplace method's from its marginals
    (:func:`~pgm_dp.bayes.linear.linear_replicates`)."""
    if method == "nuts":
        samples = {k: v.reshape(-1, *v.shape[2:]) for k, v in sites.items() if k in _LATENT}
        return np.asarray(fit.functions.replicate(key, samples, fit.data))
    data = fit.data
    total = fit.problem.total
    return linear_replicates(mu.model, total, fit.sigma, data.variance, data.laplace, gen)


def _laplace_cells_only(draws: dict, laplace: np.ndarray) -> None:
    """``noise_var`` (the exact path's, one per cell) kept for the Laplace cells only, the
    others (independent of the rest, :mod:`~pgm_dp.bayes.compiled`) dropped; the site too if
    none is."""
    if "noise_var" in draws:
        if laplace.any():
            draws["noise_var"] = draws["noise_var"][..., laplace]
        else:
            del draws["noise_var"]
