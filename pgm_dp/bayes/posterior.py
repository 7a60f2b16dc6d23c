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
the frozen model plus the prior precision) for the plug-in one (:func:`_plugin_fit`). On
the plug-in path NUTS keeps Laplace noise exact through latent counts
(:func:`_latent_counts`; Ju et al. 2022's data augmentation).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.optimize
from arviz_base import from_dict
from numpyro.infer import Predictive
from numpyro.infer.util import constrain_fn, potential_energy
from xarray import DataTree

from ..errors import DomainError
from ..models.mrf import MarkovRandomField
from .labels import posterior_dims
from .laplace import laplace_fits, stack
from .linear import (
    linear_marginals,
    linear_replicates,
    renormalise,
    split_sites,
    table_draws,
    table_offsets,
)
from .model import (
    MAX_STATES,
    PRIOR_SCALE,
    Problem,
    mean_map,
    prepare,
    release_model,
    site_name,
    touched_domain,
)
from .nuts import DENSE_LIMIT, gauge_split, nuts_draws, sigma_eigen
from .plugin import finite_covariance, plugin_start, preconditioned_map

__all__ = [
    "posterior",
    "as_key",
    "EXACT_LIMIT",
    "DENSE_LIMIT",
    "LATENT_LIMIT",
]

#: Largest number of cells for which ``covariance="auto"`` evaluates ``Sigma(theta)`` exactly.
EXACT_LIMIT = 64
#: Largest number of cells for which ``laplace_noise="auto"`` keeps Laplace noise exact on
#: the plug-in path (latent counts): above it NUTS's cost grows steeply (``docs/bayes.md``).
LATENT_LIMIT = 64
_LATENT = ("theta", "noise_var", "count_deviation")


def as_key(rng) -> jax.Array:
    """A JAX PRNG key from a seed, a numpy Generator or a key."""
    if isinstance(rng, np.random.Generator):
        return jax.random.PRNGKey(int(rng.integers(2**31)))
    if rng is None or isinstance(rng, int | np.integer):
        seed = 0 if rng is None else int(rng)
        return jax.random.PRNGKey(seed)
    return jnp.asarray(rng)


def _kwargs(problem: Problem, noise_aware: bool, prior_scale: float, covariance: str, sigma=None):
    """Model keyword arguments; for the plugin covariance, the Cholesky factor of the frozen
    ``N sigma + diag(v)`` and its inverse."""
    kw = {"noise_aware": noise_aware, "prior_scale": prior_scale, "covariance": covariance}
    if covariance == "plugin":
        v = problem.variance if noise_aware else np.zeros(problem.size)
        n = problem.total
        cov = n * sigma + np.diag(v) + 1e-6 * n * np.eye(problem.size)
        chol = np.linalg.cholesky(cov)
        precision = scipy.linalg.cho_solve((chol, True), np.eye(problem.size))
        kw["plugin_chol"], kw["plugin_precision"] = jnp.asarray(chol), jnp.asarray(precision)
    return kw


def _data(problem: Problem, kw: dict) -> tuple:
    """The per-release arrays the cached functions take (the rest is static), the noise
    kinds per cell included (:func:`_static`)."""
    empty = jnp.zeros((0, 0))
    chol = kw.get("plugin_chol", empty)
    precision = kw.get("plugin_precision", empty)
    factor = kw.get("plugin_factor", empty)
    aware = kw["noise_aware"]
    var = problem.variance if aware else np.zeros(problem.size)
    laplace = np.asarray(problem.laplace, dtype=bool) & aware
    y, var = jnp.asarray(problem.y), jnp.asarray(var)
    offset = jnp.zeros(problem.size) if problem.offset is None else jnp.asarray(problem.offset)
    return (
        y,
        jnp.float64(problem.total),
        var,
        chol,
        precision,
        factor,
        jnp.asarray(laplace),
        offset,
    )


def _static(kw: dict) -> tuple:
    """What a compiled program depends on besides the structure. The naive model is the
    noise-aware one with zero Gaussian noise (:func:`_data`'s variance), and the noise kinds
    per cell are data (on the exact path a latent noise variance for every cell, used where
    the cell is of a Laplace kind: :func:`~pgm_dp.bayes.model.release_model`): one compiled
    program serves the naive and noise-aware models of every release kind, so neither
    ``noise_aware`` nor the kinds are part of the key."""
    return (kw["prior_scale"], kw["covariance"], "plugin_factor" in kw)


@functools.lru_cache(maxsize=16)
def _cached(jt, cliques, shapes, static: tuple):
    """Jitted ``potential(flat, data)`` (unconstrained: ``theta`` then, on the exact path,
    ``log noise_var`` of every cell), ``constrain(flats, data) -> {site: values}`` and
    ``replicate(key, samples, data)``, compiled once per model structure and reused across
    releases of every kind."""
    prior_scale, covariance, latent_counts = static
    kw = {"noise_aware": True, "prior_scale": prior_scale, "covariance": covariance}
    d = int(sum(math.prod(s) for s in shapes))
    m = d if covariance == "exact" else 0
    latent = "noise_var" if m else "count_deviation" if latent_counts else None

    def model_args(data):
        y, total, variance, chol, precision, factor, laplace, offset = data
        problem = Problem(y, total, variance, laplace, jt, cliques, shapes, offset)
        extra = {}
        if latent_counts:
            extra = {"plugin_factor": factor}
        elif covariance == "plugin":
            extra = {"plugin_chol": chol, "plugin_precision": precision}
        return (problem, y), {**kw, **extra, "fast_mean": False}

    def params(flat):
        return {"theta": flat[:d], latent: flat[d:]} if latent else {"theta": flat}

    def potential(flat, data, fast_mean=None):
        args, kwargs = model_args(data)
        kwargs["fast_mean"] = fast_mean  # NUTS's: the fast pass (NaN rejected) by default
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

    return {
        "potential": jax.jit(potential),
        "value_and_grad": jax.jit(jax.value_and_grad(safe)),
        "hessian": jax.jit(jax.hessian(potential)),
        "constrain": jax.jit(jax.vmap(constrain, in_axes=(0, None))),
        "replicate": jax.jit(replicate),
        "size": d + m,
    }


def _functions(problem: Problem, kw: dict) -> dict:
    return _cached(problem.jt, problem.cliques, problem.shapes, _static(kw))


def _map_start(fns: dict, data: tuple) -> np.ndarray:
    """The MAP's start: ``theta = 0``; latent noise variances at their prior mean (the
    noise's variance on Laplace cells, 1 elsewhere)."""
    x0 = np.zeros(fns["size"])
    d = len(data[0])
    if fns["size"] > d:
        x0[d:] = np.log(np.where(np.asarray(data[6]), np.asarray(data[2]), 1.0))
    return x0


def _laplace_fits(problems: list, kw: dict) -> list[tuple]:
    """Per release of one structure: MAP (unconstrained, flat), ``H^-1`` there, the cached
    functions and the data; all releases in one compiled program
    (:func:`~pgm_dp.bayes.laplace.laplace_fits`)."""
    fns = _functions(problems[0], kw)
    datas = [_data(p, kw) for p in problems]
    fit = laplace_fits(fns, np.stack([_map_start(fns, d) for d in datas]), stack(datas))
    return [(jnp.asarray(fit.x[j]), fit.cov[j], fns, d) for j, d in enumerate(datas)]


def _laplace_fit(problem: Problem, kw: dict):
    """:func:`_laplace_fits` of one release."""
    return _laplace_fits([problem], kw)[0]


def _plugin_fit(problem: Problem, mrf, noise_aware: bool, prior_scale: float):
    """Plug-in covariance: ``Sigma`` frozen at a start
    (:func:`~pgm_dp.bayes.plugin.plugin_start`), the MAP, ``Sigma`` re-frozen there and the
    MAP again; the covariance is the inverse Gauss-Newton Hessian
    ``(N^2 Sigma C^-1 Sigma + I / s^2)^-1`` (``C = N Sigma + diag(v)``, the Fisher
    information of the frozen model plus the prior's precision)."""
    x = plugin_start(problem, mrf, prior_scale)
    for _ in range(2):
        x, sigma = finite_covariance(problem, x)
        kw = _kwargs(problem, noise_aware, prior_scale, "plugin", sigma)
        jac = problem.total * sigma
        fisher = jac @ np.asarray(kw["plugin_precision"]) @ jac
        r = np.linalg.cholesky(0.5 * (fisher + fisher.T) + np.eye(problem.size) / prior_scale**2)
        fns, data = _functions(problem, kw), _data(problem, kw)
        x = preconditioned_map(fns, data, x, r)
    inv_r = scipy.linalg.solve_triangular(r, np.eye(x.size), lower=True)
    return kw, jnp.asarray(x), inv_r.T @ inv_r, fns, data, sigma


def _latent_counts(problem: Problem, kw: dict, x, sigma: np.ndarray, eigen):
    """The plug-in model with Laplace noise kept exact (module :mod:`~pgm_dp.bayes.model`):
    latent counts ``n = N mu + A w``, ``A = sqrt(N) U sqrt(Lambda)`` from ``Sigma``'s
    eigenpairs off the gauge (``eigen``, :func:`~pgm_dp.bayes.nuts.sigma_eigen`). Returns
    the model kwargs, the start ``(theta, w)`` (``w`` its conditional mean given ``theta`` under the
    Gaussian stand-in), the stand-in's joint covariance of ``(theta, w)`` (the linearised
    model ``y = N mu(x) + J (theta - x) + A w + e``, ``e ~ N(0, diag(v))``, ``J = N Sigma``;
    NUTS's whitening), the cached functions and the data."""
    w, u, null = eigen
    keep = ~null
    n, d = problem.total, problem.size
    factor = math.sqrt(n) * u[:, keep] * np.sqrt(w[keep])
    scaled = np.concatenate([n * sigma, factor], axis=1) / np.sqrt(problem.variance)[:, None]
    prior = np.concatenate([np.full(d, 1.0 / kw["prior_scale"] ** 2), np.ones(factor.shape[1])])
    precision = scaled.T @ scaled + np.diag(prior)
    cov = scipy.linalg.cho_solve(scipy.linalg.cho_factor(precision), np.eye(len(prior)))
    resid = (problem.y - n * np.asarray(mean_map(problem)(jnp.asarray(x)))) / problem.variance
    block = precision[d:, d:]
    w0 = scipy.linalg.cho_solve(scipy.linalg.cho_factor(block), factor.T @ resid)
    kw = {k: v for k, v in kw.items() if k not in ("plugin_chol", "plugin_precision")}
    kw["plugin_factor"] = jnp.asarray(factor)
    start = jnp.concatenate([jnp.asarray(x), jnp.asarray(w0)])
    return kw, start, cov, _functions(problem, kw), _data(problem, kw)


def _covariance_path(problem: Problem, mrf, covariance: str) -> str:
    """``"exact"`` or ``"plugin"``: ``covariance``, with ``"auto"`` resolved."""
    if covariance == "auto":
        states = touched_domain(mrf.domain, mrf.cliques).size()
        small = problem.size <= EXACT_LIMIT and states <= MAX_STATES
        covariance = "exact" if small else "plugin"
    if covariance not in ("exact", "plugin"):
        raise DomainError(f"covariance must be 'auto', 'exact' or 'plugin', got {covariance!r}")
    return covariance


def _setup(release, mrf, noise_aware, prior_scale, covariance, laplace_noise, nuts, zeros):
    """The problem, model kwargs, Laplace fit (:func:`_plugin_fit` for large models; for
    Laplace noise kept exact on that path, then :func:`_latent_counts`), for ``nuts``
    ``Sigma``'s eigen-decomposition (:func:`~pgm_dp.bayes.nuts.sigma_eigen`; else ``None``)
    and ``Sigma = d mu / d theta`` at the fit (:mod:`~pgm_dp.bayes.linear`). ``zeros``: the
    structural zeros' threshold (:mod:`~pgm_dp.bayes.zeros`; ``None``: none)."""
    problem = prepare(release, mrf, zeros)
    exact_noise = nuts and (
        laplace_noise == "exact" or (laplace_noise == "auto" and problem.size <= LATENT_LIMIT)
    )
    covariance = _covariance_path(problem, mrf, covariance)
    if covariance == "plugin":
        kw, x, cov, fns, data, sigma = _plugin_fit(problem, mrf, noise_aware, prior_scale)
        eigen = sigma_eigen(sigma) if nuts else None
        if noise_aware and any(problem.laplace) and exact_noise:
            kw, x, cov, fns, data = _latent_counts(problem, kw, x, sigma, eigen)
        return problem, kw, x, cov, fns, data, eigen, sigma
    kw = _kwargs(problem, noise_aware, prior_scale, covariance)
    x, cov, fns, data = _laplace_fit(problem, kw)
    sigma = finite_covariance(problem, np.asarray(x[: problem.size]))[1]
    eigen = sigma_eigen(sigma) if nuts else None
    return problem, kw, x, cov, fns, data, eigen, sigma


def _draws(method: str, x, cov, fns: dict, data, eigen, run: tuple):
    """Flat unconstrained draws ``(chains, draws, size)`` and NUTS's sample stats (``None``
    for the Laplace method: ``N(x, cov)``), ``run = (num_warmup, num_samples, num_chains,
    key, prior_scale, pilot)``."""
    num_warmup, num_samples, num_chains, key, prior_scale, pilot = run
    if method == "laplace":
        chol = np.linalg.cholesky(cov + 1e-12 * np.eye(x.size))
        z = jax.random.normal(key, (num_chains, num_samples, x.size))
        return np.asarray(x + z @ jnp.asarray(chol).T), None
    split = gauge_split(eigen, x.size)
    return nuts_draws(fns, data, x, cov, split, *run)


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

    ``noise_aware=False`` ignores the privacy noise (the release is taken as the true counts),
    for contrast. ``covariance``: ``"exact"``, ``"plugin"`` or ``"auto"`` (exact up to
    :data:`EXACT_LIMIT` cells and :data:`~pgm_dp.bayes.model.MAX_STATES` joint states of the
    variables the cliques touch); see :mod:`pgm_dp.bayes.model`. ``laplace_noise``, on the
    plug-in path with NUTS (the exact path always keeps the scale mixture): ``"exact"``,
    latent counts and the Laplace density (:func:`_latent_counts`; NUTS needs many more
    leapfrog steps, ``docs/bayes.md``), ``"gaussian"``, a Gaussian of the noise's variance,
    or ``"auto"``, exact up to :data:`LATENT_LIMIT` cells. ``rng``: seed, Generator or
    JAX key. Chains run vectorised in one compiled program (no progress bar), compiled once per
    model structure and run length. ``pilot`` > 0: a pilot NUTS run of that many draws per
    chain first, whose spread widens the whitening per log-potential (the target is
    unchanged; :func:`~pgm_dp.bayes.nuts.nuts_draws`, ``docs/bayes.md``). ``zeros``: the
    threshold ``t`` of the structural zeros, in standard deviations of a cell's combined
    noisy count (:mod:`~pgm_dp.bayes.zeros`: a cell that every released table containing it
    shows empty gets probability zero; ``0`` flags a cell whose combined noisy count is at
    most 0); ``None`` (the default) models none: at ε <= 1 a flag costs more coverage on
    small cells than it gains on empty ones (``docs/bayes.md``).

    ::

        idata = posterior(release, mrf, method="nuts", rng=0)
        arviz_stats.summary(idata, var_names=["~theta"])
    """
    _check(method, laplace_noise, num_warmup, num_samples, num_chains, pilot, zeros)
    key_run, key_pred = jax.random.split(as_key(rng))
    nuts = method == "nuts"
    setup = _setup(release, mrf, noise_aware, prior_scale, covariance, laplace_noise, nuts, zeros)
    problem, kw, x, cov, fns, data, eigen, sigma = setup
    run = (num_warmup, num_samples, num_chains, key_run, prior_scale, pilot)
    flat, stats = _draws(method, x, cov, fns, data, eigen, run)
    out = fns["constrain"](jnp.asarray(flat.reshape(-1, x.size)), data)
    shape = (num_chains, num_samples)
    draws = {k: np.asarray(v).reshape(*shape, *v.shape[1:]) for k, v in out.items()}
    gen = np.random.default_rng(int(jax.random.randint(key_pred, (), 0, 2**31 - 1)))
    mu, mu_lin = _marginals(method, problem, draws, x, sigma, mrf)
    if nuts:
        samples = {k: v.reshape(-1, *v.shape[2:]) for k, v in draws.items() if k in _LATENT}
        pred = np.asarray(fns["replicate"](key_pred, samples, data)).reshape(*shape, -1)
    else:
        pred = linear_replicates(mu, problem.total, sigma, data[2], data[6], gen)
        pred = pred.reshape(*shape, -1)
    offsets = table_offsets(problem.shapes)
    tables = table_draws(
        mu_lin, problem.y, problem.total, sigma, data[2], offsets, gen, noise_aware
    )
    split_sites(draws, mu, tables, problem.cliques, problem.shapes, shape)
    _laplace_cells_only(draws, np.asarray(data[6]))
    groups = {"posterior": draws, "posterior_predictive": {"y": pred}}
    groups |= {"observed_data": {"y": problem.y}} | ({"sample_stats": stats} if stats else {})
    dims, coords = posterior_dims(mrf.domain, mrf.cliques, draws)
    idata = from_dict(groups, dims=dims, coords=coords)
    idata.posterior.attrs.update(
        method=method,
        covariance=kw["covariance"],
        noise_aware=int(noise_aware),
        cliques=[site_name(c) for c in mrf.cliques],
    )
    return idata


def _marginals(method: str, problem: Problem, draws: dict, x, sigma, mrf) -> tuple:
    """Flat marginal draws ``(chains * draws, d)`` twice: the model's (``mu(theta)`` of
    NUTS's draws; for the Laplace method their linearisation at the MAP,
    :func:`~pgm_dp.bayes.linear.linear_marginals`: the Gaussian in the marginals' geometry,
    clipped) and those the data's tables are drawn around (the same for NUTS; the
    linearisation unclipped for the Laplace method, :mod:`~pgm_dp.bayes.linear`)."""
    d = problem.size
    if method == "nuts":
        mu = np.concatenate(
            [
                draws[site_name(c)].reshape(-1, math.prod(s))
                for c, s in zip(mrf.cliques, problem.shapes, strict=True)
            ],
            axis=1,
        )
        return mu, mu
    theta = draws["theta"].reshape(-1, d)
    x = np.asarray(x)[:d]
    mu_hat = np.asarray(mean_map(problem)(jnp.asarray(x)))
    flat = linear_marginals(mu_hat, sigma, theta, x, table_offsets(problem.shapes), clip=False)
    return renormalise(flat, table_offsets(problem.shapes)), flat


def _laplace_cells_only(draws: dict, laplace: np.ndarray) -> None:
    """``noise_var`` (the exact path's, one per cell) kept for the Laplace cells only, the
    others (independent of the rest, :func:`_static`) dropped; the site too if none is."""
    if "noise_var" in draws:
        if laplace.any():
            draws["noise_var"] = draws["noise_var"][..., laplace]
        else:
            del draws["noise_var"]
