"""Posterior of PrIsing's inverse temperature β given its private release (NumPyro, ArviZ).

Contract: :func:`score_reference` simulates, once per network ``J``, Gibbs draws of the local
fields under ``P_β`` on a grid of ``β``; :func:`prising_posterior` returns an ArviZ
``xarray.DataTree`` with the posterior of ``β`` (``posterior``), replicated releases
(``posterior_predictive``) and the release (``observed_data``), all under the site name
``"beta_priv"``; :func:`prising_model` is the NumPyro model.

The model (Chakraborty, Chatterjee & Dalal 2024, Algorithm 1). PrIsing releases
``t = inf{β' >= 0 : W(β') = 0}`` with ``W(β') = S_σ(β') + Δβ' + b``, ``S_σ(β') = n L_σ(β')
= Σ_i m_i (tanh(β' m_i) - σ_i)`` (Eq. 4-5), ``b ~ N(0, γ²)`` (``δ > 0``) or
``Laplace(2ζ/ε)`` (``δ = 0``). ``W`` increases in ``β'``, so ``t <= x`` iff ``W(x) >= 0``:
``P(t = 0) = P(S_σ(0) + b >= 0)`` (the boundary atom) and, for ``t > 0``, the density is
``p_{W(t)}(0) · |dW/dt|``. The noise ``b`` enters exactly (Gaussian, or the closed-form
normal-Laplace convolution). **Our approximation**: given ``β``, ``S_σ(t)`` is taken as
normal with the mean and variance of ``S_σ(t)`` under ``P_β`` and ``dW/dt`` as its mean
``E_β Σ_i m_i² sech²(t m_i) + Δ`` (the delta method on the perturbed estimating equation);
these moments are Monte Carlo averages over Gibbs draws at the grid points, linear in ``β``
between them. The paper proves only rates (Theorem 3.2, no limit law), and ``S_σ`` stays
symmetric under ``σ -> -σ``, so the two phases of the low-temperature regime do not split
it. Prior: ``β ~ Uniform`` over the grid (default ``[0, 2]``, the range of PrIsing Fig. 1).
Replicated releases run Algorithm 1 exactly on a stored Gibbs draw at the grid point next to
``β`` (root by bisection).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from arviz_base import from_dict
from jax.scipy.special import log_ndtr
from numpyro.distributions import constraints
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import log_density
from xarray import DataTree

from ..errors import DataValidationError, DomainError
from ..ising import PrIsingResult, check_coupling, gibbs_ising
from ..ising.prising import local_fields
from ..rng import as_generator
from .posterior import as_key

__all__ = [
    "ScoreArrays",
    "ScoreReference",
    "score_reference",
    "PrIsingRelease",
    "prising_model",
    "prising_posterior",
    "noise_log_density",
    "noise_log_survival",
]


@dataclass(frozen=True)
class ScoreReference:
    """Gibbs draws under ``P_β`` for each ``β`` in ``betas`` (increasing): ``fields``
    ``(K, R, n)`` the local fields ``m = J σ`` and ``energy`` ``(K, R)`` the values of
    ``σᵀ J σ = Σ_i m_i σ_i``."""

    betas: np.ndarray
    fields: np.ndarray
    energy: np.ndarray

    @property
    def n(self) -> int:
        """Number of nodes."""
        return int(self.fields.shape[-1])

    def arrays(self) -> ScoreArrays:
        """The reference as the model's arguments (JAX arrays)."""
        return ScoreArrays(*(jnp.asarray(a) for a in (self.betas, self.fields, self.energy)))


class ScoreArrays(NamedTuple):
    """A :class:`ScoreReference`'s arrays as JAX arrays (a pytree: arguments of the
    compiled model, not constants folded into it)."""

    betas: jax.Array
    fields: jax.Array
    energy: jax.Array


def score_reference(J, *, betas=None, draws: int = 200, sweeps: int = 200, rng=0) -> ScoreReference:
    """Simulate the :class:`ScoreReference` of ``J`` (``draws`` Gibbs chains of ``sweeps``
    sweeps per grid point; ``betas`` default ``linspace(0, 2, 41)``). Costs
    ``len(betas) * draws * sweeps`` site updates; memory ``len(betas) * draws * n`` floats."""
    Jc = check_coupling(J, nonnegative=True)
    grid = np.linspace(0.0, 2.0, 41) if betas is None else np.asarray(betas, dtype=np.float64)
    if grid.ndim != 1 or grid.size < 2 or grid[0] < 0 or np.any(np.diff(grid) <= 0):
        raise DomainError("betas must be >= 0, strictly increasing, at least two points")
    if not np.all(np.isfinite(grid)):
        raise DomainError("betas must be finite")
    for name, v in (("draws", draws), ("sweeps", sweeps)):
        if isinstance(v, bool) or int(v) != v or v < 2:
            raise DomainError(f"{name} must be an integer >= 2, got {v!r}")
    gen = as_generator(rng)
    fields, energy = [], []
    for beta in grid:
        sig = gibbs_ising(Jc, beta=float(beta), n_chains=int(draws), n_sweeps=int(sweeps), rng=gen)
        m = local_fields(Jc, sig)
        fields.append(m)
        energy.append(np.sum(m * sig, axis=1))
    return ScoreReference(grid, np.stack(fields), np.stack(energy))


def noise_log_density(x, var, kind: str, scale):
    """``log`` density at ``x`` of ``X + b``, ``X ~ N(0, var)``, ``b`` PrIsing's noise:
    ``N(0, scale²)`` (``kind="gaussian"``) or ``Laplace(scale)`` (normal-Laplace
    convolution, closed form in log space)."""
    if kind == "gaussian":
        return dist.Normal(0.0, jnp.sqrt(var + scale**2)).log_prob(x)
    s = jnp.sqrt(var)
    z1 = (s / scale - x / s) / math.sqrt(2.0)
    z2 = (s / scale + x / s) / math.sqrt(2.0)
    log_erfc1 = math.log(2.0) + log_ndtr(-math.sqrt(2.0) * z1)
    log_erfc2 = math.log(2.0) + log_ndtr(-math.sqrt(2.0) * z2)
    both = jnp.logaddexp(z1**2 + log_erfc1, z2**2 + log_erfc2)
    return -jnp.log(4.0 * scale) - x**2 / (2.0 * var) + both


def noise_log_survival(x, var, kind: str, scale):
    """``log P(X + b >= x)`` for the ``X + b`` of :func:`noise_log_density`."""
    if kind == "gaussian":
        return log_ndtr(-x / jnp.sqrt(var + scale**2))
    s = jnp.sqrt(var)
    a0 = s**2 / (2.0 * scale**2)
    t0 = log_ndtr(-x / s)
    t1 = math.log(0.5) + a0 - x / scale + log_ndtr(x / s - s / scale)
    t2 = math.log(0.5) + a0 + x / scale + log_ndtr(-x / s - s / scale)
    head = jnp.logaddexp(t0, t1)
    return head + jnp.log1p(-jnp.exp(jnp.minimum(t2 - head, 0.0)))


def _moments(fields, energy, t):
    """Per grid point: mean and variance of ``S_σ(t)`` and the mean of ``dS_σ/dt``."""
    th = jnp.tanh(t * fields)
    s = jnp.sum(fields * th, axis=-1) - energy
    slope = jnp.sum(fields**2 * (1.0 - th**2), axis=-1)
    return jnp.mean(s, axis=-1), jnp.var(s, axis=-1, ddof=1), jnp.mean(slope, axis=-1)


class PrIsingRelease(dist.Distribution):
    """The law of PrIsing's release ``t >= 0`` given ``β`` (module docstring): an atom at 0
    plus a density on ``(0, ∞)``; ``log_prob`` is with respect to that base measure."""

    support = constraints.nonnegative
    arg_constraints = {}

    def __init__(self, beta, ref: ScoreArrays, Delta: float, kind: str, scale: float):
        self.beta, self.ref, self.Delta, self.kind, self.scale = beta, ref, Delta, kind, scale
        super().__init__(batch_shape=jnp.shape(beta))

    def log_prob(self, value):
        ref = self.ref
        value = jnp.asarray(value, dtype=jnp.float64)
        mean, var, slope = (
            jnp.interp(self.beta, ref.betas, a) for a in _moments(ref.fields, ref.energy, value)
        )
        var = jnp.maximum(var, 1e-12)
        dens = noise_log_density(-(mean + self.Delta * value), var, self.kind, self.scale)
        dens = dens + jnp.log(slope + self.Delta)
        atom = noise_log_survival(-mean, var, self.kind, self.scale)
        return jnp.where(value <= 0.0, atom, dens)

    def sample(self, key, sample_shape=()):
        betas, fields, energy = self.ref.betas, self.ref.fields, self.ref.energy
        shape = tuple(sample_shape) + tuple(self.batch_shape)
        k_row, k_noise = jax.random.split(key)
        grid = jnp.clip(jnp.searchsorted(betas, self.beta), 0, betas.size - 1)
        lower = jnp.clip(grid - 1, 0, betas.size - 1)
        near = jnp.where(
            jnp.abs(betas[lower] - self.beta) < jnp.abs(betas[grid] - self.beta), lower, grid
        )
        near = jnp.broadcast_to(near, shape)
        row = jax.random.randint(k_row, shape, 0, fields.shape[1])
        if self.kind == "gaussian":
            b = self.scale * jax.random.normal(k_noise, shape)
        else:
            b = self.scale * jax.random.laplace(k_noise, shape)
        return _root(fields[near, row], energy[near, row], self.Delta, b)


def _root(m, energy, Delta: float, b):
    """Algorithm 1's ``inf{t >= 0 : Σ m (tanh(t m)) - energy + Δ t + b = 0}`` (bisection)."""

    def w(t):
        return jnp.sum(m * jnp.tanh(t[..., None] * m), axis=-1) - energy + Delta * t + b

    hi = (jnp.sum(jnp.abs(m), axis=-1) + energy - b) / Delta + 1.0
    lo = jnp.zeros_like(hi)

    def step(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        pos = w(mid) > 0
        return jnp.where(pos, lo, mid), jnp.where(pos, mid, hi)

    lo, hi = jax.lax.fori_loop(0, 80, step, (lo, jnp.maximum(hi, 1e-12)))
    return jnp.where(w(jnp.zeros_like(hi)) >= 0, 0.0, 0.5 * (lo + hi))


class ReleaseLaw(NamedTuple):
    """The arguments of :func:`prising_model` besides ``t``: the reference's arrays and the
    release's calibration (``Δ``, the noise's kind and scale)."""

    ref: ScoreArrays
    Delta: float
    kind: str
    scale: float


def prising_model(ref: ScoreArrays, Delta: float, kind: str, scale: float, t=None) -> None:
    """NumPyro model: ``beta ~ Uniform(grid)``, observed site ``"beta_priv"`` (``t``).

    Args:
        ref: the arrays of a :class:`ScoreReference` (:meth:`ScoreReference.arrays`).
        Delta: PrIsing's ``Δ``.
        kind: the noise, ``"gaussian"`` or ``"laplace"``.
        scale: the noise's scale.
        t: the released value (``None``: simulate).
    """
    betas = ref.betas
    beta = numpyro.sample("beta", dist.Uniform(betas[0], betas[-1]))
    numpyro.sample("beta_priv", PrIsingRelease(beta, ref, Delta, kind, scale), obs=t)


@jax.jit(static_argnums=(3,))
def _grid_log_joint(grid, ref, Delta, kind, scale, t):
    """``log p(beta, t)`` at every ``beta`` in ``grid`` (the moments at ``t`` once)."""

    def one(beta):
        law = ReleaseLaw(ref, Delta, kind, scale)
        return log_density(prising_model, law, {"t": t}, {"beta": beta})[0]

    return jax.vmap(one)(grid)


def _grid_draws(law: ReleaseLaw, t: float, points: int, key, shape: tuple) -> np.ndarray:
    """Draws from the exact posterior on ``points`` equal cells (midpoint rule)."""
    betas = law.ref.betas
    edges = jnp.linspace(betas[0], betas[-1], points + 1)
    mids = 0.5 * (edges[1:] + edges[:-1])
    lp = _grid_log_joint(mids, *law, jnp.float64(t))
    k_cell, k_jit = jax.random.split(key)
    cell = jax.random.categorical(k_cell, lp, shape=shape)
    u = jax.random.uniform(k_jit, shape)
    return np.asarray(edges[cell] + u * (edges[1] - edges[0]))


def _observed(release, reference) -> float:
    """The released value (boundary -> 0), after checking ``release`` and ``reference``."""
    if not isinstance(release, PrIsingResult):
        raise DataValidationError(f"release must be a PrIsingResult, got {type(release)!r}")
    if not isinstance(reference, ScoreReference):
        raise DataValidationError("reference must be a ScoreReference (score_reference(J))")
    if reference.n != release.calibration.n:
        raise DomainError(
            f"the reference has {reference.n} nodes but the release {release.calibration.n}"
        )
    t = 0.0 if release.boundary else float(release.estimate)
    if not math.isfinite(t) or t < 0:
        raise DataValidationError(f"the released estimate must be finite and >= 0, got {t}")
    return t


def prising_posterior(
    release: PrIsingResult,
    reference: ScoreReference,
    *,
    method: str = "grid",
    num_samples: int = 1000,
    num_chains: int = 4,
    num_warmup: int = 500,
    grid_points: int = 2000,
    rng=0,
) -> DataTree:
    """Posterior of ``β`` given PrIsing's ``release`` (module docstring), ``reference`` from
    :func:`score_reference` on the same ``J``.

    ``method="grid"`` (default): the 1-D posterior on ``grid_points`` cells of the prior's
    range, sampled exactly; ``"nuts"``: NumPyro NUTS. ``rng``: seed, Generator or JAX key.
    """
    if method not in ("grid", "nuts"):
        raise DomainError(f"method must be 'grid' or 'nuts', got {method!r}")
    for name, v in (("num_samples", num_samples), ("num_chains", num_chains)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise DomainError(f"{name} must be an integer >= 1, got {v!r}")
    t = _observed(release, reference)
    cal = release.calibration
    law = ReleaseLaw(reference.arrays(), float(cal.Delta), cal.mechanism, float(cal.noise_scale))
    key_run, key_pred = jax.random.split(as_key(rng))
    shape, stats = (int(num_chains), int(num_samples)), None
    if method == "grid":
        draws = _grid_draws(law, t, int(grid_points), key_run, shape)
    else:
        model = functools.partial(prising_model, kind=cal.mechanism)  # arrays stay arguments
        mcmc = MCMC(
            NUTS(model),
            num_warmup=int(num_warmup),
            num_samples=shape[1],
            num_chains=shape[0],
            chain_method="vectorized",
            progress_bar=False,
            jit_model_args=True,
        )
        mcmc.run(key_run, law.ref, law.Delta, scale=law.scale, t=t, extra_fields=("diverging",))
        draws = np.asarray(mcmc.get_samples(group_by_chain=True)["beta"])
        stats = {"diverging": np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])}
    pred = PrIsingRelease(jnp.asarray(draws), *law).sample(key_pred)
    groups = {"posterior": {"beta": draws}, "posterior_predictive": {"beta_priv": np.asarray(pred)}}
    groups |= {"observed_data": {"beta_priv": np.asarray([t])}}
    idata = from_dict(groups | ({"sample_stats": stats} if stats else {}))
    idata.posterior.attrs.update(method=method, mechanism=cal.mechanism, boundary=int(t == 0))
    return idata
