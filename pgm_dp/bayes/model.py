"""The NumPyro model of a private release: ``theta -> mu(theta) -> n (integrated out) -> y``.

Contract: :func:`prepare` turns a :class:`~pgm_dp.privacy.NoisyMarginals` and a model
structure into a :class:`Problem` (flat observed vector, per-cell noise, the junction tree);
:func:`release_model` is the NumPyro model with the release as the observed site ``"y"``.

The model (our notation; Bernstein et al. 2017, Eq. 3-5; Räisä et al. 2023, Eq. 6):

* ``theta ~ N(0, s^2 I)``: one log-potential per clique cell. Our choice ``s = pi / sqrt(6)``
  (:data:`PRIOR_SCALE`): the variance of the log of an Exp(1) draw, the Dirichlet(1)
  generative prior of Bernstein et al. Sec. 4.1 and CGM-EM's default prior.
* ``n = sum_i phi(x_i)``, ``x_i ~ p_theta`` i.i.d., ``phi`` the stacked clique indicators:
  mean ``N mu(theta)`` (the junction-tree marginals) and covariance ``N Sigma(theta)`` with
  ``Sigma = d mu / d theta`` the Hessian of ``log Z`` (the CGM's CLT, Sheldon & Dietterich
  2011; Räisä et al. Eq. 6). ``n`` is integrated out: ``y | theta, v ~ N(N mu, N Sigma +
  diag(v))``.
* Gaussian kinds: ``v`` is the release's noise variance (exact for Gaussian noise; the
  discrete Gaussian uses its exact variance). Laplace kinds: ``v_j ~ Exponential(mean
  2 b^2)`` is latent, one per cell, since ``Laplace(b)`` is the scale mixture ``N(0, v)``
  with that mixing law (Andrews & Mallows 1974; Bernstein & Sheldon 2018, Sec. 4). The
  discrete Laplace uses the mixture with the same variance (moment matching; exact on the
  lattice up to ``O(1/b^2)``).

``covariance="exact"`` evaluates ``Sigma(theta)`` at every step (by enumerating the joint,
:func:`enumerated_covariance`, plus a ``d x d`` Cholesky, ``d`` the number of cells: small
models); ``"plugin"`` freezes it at a reference ``theta`` (:func:`plugin_covariance`). With
the frozen ``Sigma`` Gaussian noise is still integrated out exactly (one Cholesky factor per
run). Laplace noise is either kept exact by data augmentation (Ju et al. 2022's latent
statistics, with the CLT as their law): ``n = N mu + A w``, ``w ~ N(0, I_r)``, ``A A^T = N
Sigma`` (``r`` the rank of ``Sigma``), and ``y_j | n_j`` follows the release's own noise
(:class:`ReleaseNoise`: Laplace or Gaussian per cell); or replaced by a Gaussian of its
variance, which is much cheaper for NUTS on large models (``posterior``'s
``laplace_noise``; ``docs/bayes.md``).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..domain import Clique
from ..errors import DomainError, ModelTooLargeError
from ..inference.junction_tree import JunctionTree, marginals_and_log_z
from ..inference.scaled_pass import scaled_marginals
from ..inference.tables import concat_tables
from ..models.mrf import MarkovRandomField
from ..privacy.measurements import flat_release
from ..tables import unflatten_tables
from .problem import Covariance, ExactCovariance, FrozenCovariance, LatentCounts
from .zeros import zero_offsets

__all__ = [
    "CellNoiseVariance",
    "FrozenGaussian",
    "ReleaseNoise",
    "half_quadratic",
    "matvec",
    "PRIOR_SCALE",
    "Problem",
    "prepare",
    "mean_map",
    "joint_features",
    "touched_domain",
    "effective",
    "enumerated_covariance",
    "MAX_STATES",
    "plugin_covariance",
    "release_model",
    "site_name",
    "table_name",
    "name_text",
]

#: Prior standard deviation of each log-potential: ``pi / sqrt(6)`` (see module docstring).
PRIOR_SCALE = math.pi / math.sqrt(6.0)
_JITTER = 1e-6  # relative diagonal jitter of the covariance (numerical only)
#: Largest joint state space :func:`enumerated_covariance` enumerates.
MAX_STATES = 4096
_LOG_2PI = math.log(2 * math.pi)


class Problem(NamedTuple):
    """A release prepared for the model: ``y`` (flat, float64), ``total`` ``N``,
    ``variance`` (per cell noise variance), ``laplace`` (per cell: Laplace kind; a tuple, or
    an array where the kinds are data of a compiled program), the junction tree, cliques
    and table shapes of the model, and ``offset``: per cell, a fixed log-potential added to
    ``theta`` (the structural zeros, :mod:`~pgm_dp.bayes.zeros`; ``None``: none)."""

    y: np.ndarray
    total: float
    variance: np.ndarray
    laplace: tuple[bool, ...] | np.ndarray
    jt: JunctionTree
    cliques: tuple[Clique, ...]
    shapes: tuple[tuple[int, ...], ...]
    offset: np.ndarray | None = None

    @property
    def size(self) -> int:
        """Number of cells ``d`` (the dimension of ``theta`` and ``y``)."""
        return int(self.y.size)


def name_text(variable) -> str:
    """A variable's name as the posterior's sites and dims spell it: its text, with ``/``
    (a group separator in netCDF and HDF5) written ``∕`` (U+2215), and a name that xarray
    or HDF5 would take for something else (``self``, an argument of xarray's methods;
    ``""``, ``"."``, ``".."``, paths) followed by ``_``. Distinct names stay distinct
    unless one is another's spelling."""
    text = str(variable).replace("/", "\u2215")
    return text + "_" if text in ("self", "", ".", "..") else text


def site_name(clique: Clique) -> str:
    """The deterministic site of a clique's marginal table, e.g. ``"marginal:A,B"``."""
    return "marginal:" + ",".join(name_text(v) for v in clique)


def table_name(clique: Clique) -> str:
    """The site of the data's own table of a clique (proportions ``n / N`` of the records
    released; :mod:`~pgm_dp.bayes.linear`), e.g. ``"table:A,B"``."""
    return "table:" + ",".join(name_text(v) for v in clique)


def prepare(release, mrf: MarkovRandomField, zeros: float | None = None) -> Problem:
    """The :class:`Problem` of ``release`` under ``mrf``'s structure (cliques in ``mrf``'s
    order); a :class:`~pgm_dp.errors.DomainError` if they do not match. ``zeros``: the
    threshold of :func:`~pgm_dp.bayes.zeros.structural_zeros` (``None``: no structural
    zeros, ``offset`` zero)."""
    if release.domain != mrf.domain or set(release.cliques) != set(mrf.cliques):
        raise DomainError("the release's domain and cliques must match the model's")
    if not np.isfinite(release.total) or release.total <= 0:
        raise DomainError(f"release total N must be positive, got {release.total}")
    view = flat_release(release, mrf.cliques)
    problem = Problem(
        np.array(view.y),
        view.total,
        np.array(view.variance),
        tuple(bool(b) for b in view.laplace),
        mrf.junction_tree(),
        mrf.cliques,
        view.layout.shapes,
    )
    return problem._replace(offset=zero_offsets(problem, zeros))


def effective(problem: Problem, theta):
    """The log-potentials the model uses: ``theta`` plus the fixed ``offset`` (if any)."""
    return theta if problem.offset is None else theta + problem.offset


def mean_map(problem: Problem, fast: bool = False):
    """``theta (flat) -> mu(theta) (flat)``: the stacked clique marginals (traceable).

    ``fast``: the probability-space pass alone, ``NaN`` where it reports itself unsound
    (instead of a ``lax.cond`` to the log-space pass, which ``vmap`` turns into running
    both passes); NUTS rejects a ``NaN`` potential as a divergence."""

    def mu(theta):
        tables = unflatten_tables(effective(problem, theta), problem.shapes)
        if fast:
            margs, _, ok = scaled_marginals(problem.jt, problem.cliques, tuple(tables))
            return jnp.where(ok, concat_tables(margs), jnp.nan)
        margs, _ = marginals_and_log_z(problem.jt, problem.cliques, tuple(tables))
        return concat_tables(margs)

    return mu


@functools.lru_cache(maxsize=16)
def _jvp_columns(problem_key):
    """Jitted ``(theta, basis) -> d mu / d theta @ basis.T`` (rows), one per structure. The
    log-space pass: the fast pass's derivative is silently zero where it reports itself
    unsound (large log-potentials, e.g. a start far along the gauge)."""
    mu = mean_map(Problem(None, 1.0, None, (), *problem_key), fast=False)
    return jax.jit(lambda theta, basis: jax.vmap(lambda e: jax.jvp(mu, (theta,), (e,))[1])(basis))


def plugin_covariance(problem: Problem, theta, chunk: int = 100) -> np.ndarray:
    """``Sigma(theta) = d mu / d theta`` (``d x d``), by JVPs in chunks of ``chunk``
    (``theta`` without the problem's ``offset``, which is added here)."""
    columns = _jvp_columns((problem.jt, problem.cliques, problem.shapes))
    theta = jnp.asarray(effective(problem, np.asarray(theta)), dtype=jnp.float64)
    d = problem.size
    eye = np.eye(d)
    blocks = [np.asarray(columns(theta, eye[i : i + chunk])) for i in range(0, d, chunk)]
    sigma = np.concatenate(blocks, axis=0)
    if not np.all(np.isfinite(sigma)):
        raise DomainError("the plug-in covariance is not finite at this theta")
    return 0.5 * (sigma + sigma.T)


def touched_domain(domain, cliques):
    """``domain`` restricted to the variables of ``cliques``."""
    return domain.project({v for c in cliques for v in c})


@functools.lru_cache(maxsize=32)
def joint_features(jt: JunctionTree, cliques: tuple[Clique, ...]) -> np.ndarray:
    """``Phi``: one row per joint state of the variables the cliques touch (domain order),
    the stacked clique indicators. A variable in no clique is independent of the rest and
    uniform under the model, so leaving it out changes neither ``mu`` nor ``Sigma``."""
    dom = touched_domain(jt.domain, cliques)
    if math.prod(dom.shape) > MAX_STATES:
        raise ModelTooLargeError(
            f"the exact covariance enumerates {math.prod(dom.shape)} joint states "
            f"(> {MAX_STATES}); use covariance='plugin'"
        )
    states = np.indices(dom.shape).reshape(len(dom.shape), -1).T
    cols = []
    for c in cliques:
        idx = np.ravel_multi_index(tuple(states[:, dom.index(v)] for v in c), dom.sizes(c))
        cols.append(np.eye(math.prod(dom.sizes(c)))[idx])
    return np.concatenate(cols, axis=1)


def enumerated_covariance(problem: Problem, theta):
    """``Sigma(theta) = Phi^T diag(p) Phi - mu mu^T`` by enumerating the joint (small
    domains only: at most :data:`MAX_STATES` states); traceable."""
    phi = jnp.asarray(joint_features(problem.jt, problem.cliques))
    p = jax.nn.softmax(phi @ effective(problem, theta))
    mu = phi.T @ p
    return (phi.T * p) @ phi - jnp.outer(mu, mu)


def _noise_variance(problem: Problem, noise_aware: bool):
    """Per-cell noise variance: constant, or latent ``Exponential`` for Laplace cells.

    ``problem.laplace`` a tuple (the kinds fixed when traced): a latent for each Laplace cell
    only. An array (the kinds as data, so that one compiled program serves every release
    kind of a structure, :func:`~pgm_dp.bayes.posterior.posterior`): a latent for every
    cell (:class:`CellNoiseVariance`), used only where the cell is of a Laplace kind;
    elsewhere it has its prior as posterior, independent of the rest, and the model of
    ``theta`` is the same."""
    if not noise_aware:
        return jnp.zeros(problem.size)
    var = jnp.asarray(problem.variance)
    if isinstance(problem.laplace, tuple):
        if not any(problem.laplace):
            return var
        idx = np.flatnonzero(problem.laplace)
        w = numpyro.sample("noise_var", dist.Exponential(1.0 / var[idx]).to_event(1))
        return var.at[idx].set(w)
    mask = jnp.asarray(problem.laplace, dtype=bool)
    w = numpyro.sample("noise_var", CellNoiseVariance(1.0 / jnp.where(mask, var, 1.0), mask))
    return jnp.where(mask, w, var)


class CellNoiseVariance(dist.Distribution):
    """Per cell, independent: ``Exponential(rate)`` where ``laplace`` (the Laplace scale
    mixture's law, as :class:`numpyro.distributions.Exponential`), ``LogNormal(0, 1)``
    elsewhere: a placeholder the model does not use, whose unconstrained coordinate
    ``log v`` is a standard normal (the easiest coordinate for NUTS to carry)."""

    arg_constraints = {"rate": dist.constraints.positive}
    support = dist.constraints.positive

    def __init__(self, rate, laplace, validate_args=None):
        self.rate, self.laplace = rate, jnp.asarray(laplace, dtype=bool)
        super().__init__((), jnp.shape(rate)[-1:], validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = sample_shape + self.event_shape
        k1, k2 = jax.random.split(key)
        exponential = jax.random.exponential(k1, shape) / self.rate
        return jnp.where(self.laplace, exponential, jnp.exp(jax.random.normal(k2, shape)))

    def log_prob(self, value):
        log_v = jnp.log(value)
        lognormal = -0.5 * log_v**2 - log_v - 0.5 * _LOG_2PI
        exponential = jnp.log(self.rate) - self.rate * value
        return jnp.sum(jnp.where(self.laplace, exponential, lognormal), -1)


def matvec(v, matrix):
    """``v @ matrix`` in ``matrix``'s precision, returned in ``v``'s: a ``float32`` matrix
    halves the memory read that bounds these products (NUTS passes its ``d x d`` matrices
    so; ``docs/bayes.md``)."""
    return (v.astype(matrix.dtype) @ matrix).astype(v.dtype)


@jax.custom_jvp
def half_quadratic(r, precision):
    """``0.5 r^T P r`` over the last axis of ``r`` (``P`` symmetric), with one read of ``P``
    for value and derivative: the tangent is ``(P r) . dr`` (``P`` is treated as data: no
    derivative with respect to it; products in ``P``'s precision, :func:`matvec`)."""
    return 0.5 * jnp.sum(r * matvec(r, precision), -1)


@half_quadratic.defjvp
def _half_quadratic_jvp(primals, tangents):
    r, precision = primals
    u = matvec(r, precision)
    return 0.5 * jnp.sum(r * u, -1), jnp.sum(u * tangents[0], -1)


class FrozenGaussian(dist.Distribution):
    """``N(loc, L L^T)`` with ``L`` lower triangular and the precision ``P = (L L^T)^-1``
    given: the log density and its gradient by one product with ``P``
    (:func:`half_quadratic`; XLA's triangular solve on the CPU is much slower
    (``docs/design/bayes.md``), and ``|L^-1 r|^2`` reads the ``d x d`` factor twice)."""

    arg_constraints = {"loc": dist.constraints.real_vector}
    support = dist.constraints.real_vector

    def __init__(self, loc, scale_tril, precision, validate_args=None):
        self.loc, self.scale_tril, self.precision = loc, scale_tril, precision
        super().__init__(jnp.shape(loc)[:-1], jnp.shape(loc)[-1:], validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        z = jax.random.normal(key, sample_shape + self.batch_shape + self.event_shape)
        return self.loc + z @ self.scale_tril.T

    def log_prob(self, value):
        half_log_det = jnp.sum(jnp.log(jnp.diagonal(self.scale_tril)))
        d = jnp.shape(value)[-1]
        return -half_quadratic(value - self.loc, self.precision) - half_log_det - 0.5 * d * _LOG_2PI


class ReleaseNoise(dist.Distribution):
    """Independent release noise around ``loc`` (the latent counts): per cell Laplace of
    variance ``noise_variance`` (scale ``sqrt(noise_variance / 2)``) where ``laplace`` is
    true, Normal of that variance elsewhere. The discrete kinds are taken with their exact
    variance, as in the exact-covariance path."""

    arg_constraints = {"loc": dist.constraints.real_vector}
    support = dist.constraints.real_vector

    def __init__(self, loc, noise_variance, laplace, validate_args=None):
        self.loc, self.noise_variance = loc, noise_variance
        self.laplace = jnp.asarray(laplace, dtype=bool)
        super().__init__(jnp.shape(loc)[:-1], jnp.shape(loc)[-1:], validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = sample_shape + self.batch_shape + self.event_shape
        k1, k2 = jax.random.split(key)
        lap = jax.random.laplace(k1, shape) * jnp.sqrt(self.noise_variance / 2.0)
        gauss = jax.random.normal(k2, shape) * jnp.sqrt(self.noise_variance)
        return self.loc + jnp.where(self.laplace, lap, gauss)

    def log_prob(self, value):
        r = value - self.loc
        var = self.noise_variance
        b = jnp.sqrt(var / 2.0)
        lap = -jnp.abs(r) / b - jnp.log(2.0 * b)
        gauss = -0.5 * r**2 / var - 0.5 * (jnp.log(var) + _LOG_2PI)
        return jnp.sum(jnp.where(self.laplace, lap, gauss), -1)


def release_model(
    problem: Problem,
    y=None,
    *,
    noise_aware: bool = True,
    prior_scale: float = PRIOR_SCALE,
    covariance: Covariance | None = None,
    fast_mean: bool | None = None,
) -> None:
    """NumPyro model of ``y`` (observed site ``"y"``; ``None`` simulates). Sites: ``theta``,
    ``noise_var`` (Laplace cells, exact covariance only; every cell where ``problem.laplace``
    is an array, :func:`_noise_variance`), ``marginal:...`` (deterministic).

    Args:
        problem: the prepared release (:func:`prepare`).
        y: the observed release (flat), or ``None`` to simulate one.
        noise_aware: model the noise (``False``: none, the release taken as the counts).
        prior_scale: the prior standard deviation of each log-potential.
        covariance: :class:`~pgm_dp.bayes.problem.ExactCovariance` (``Sigma(theta)`` at
            every step; ``None``: that), :class:`~pgm_dp.bayes.problem.FrozenCovariance`
            (the plug-in ``C = N Sigma + diag(v)``: its Cholesky factor and ``C^-1``) or
            :class:`~pgm_dp.bayes.problem.LatentCounts` (the latent counts ``n = N mu + A
            w``, site ``"count_deviation"``: ``w``, and ``y | n`` the release's own noise).
        fast_mean: :func:`mean_map`'s ``fast`` (default: with the plug-in covariance, whose
            potential runs vectorised over chains and draws).
    """
    d = problem.size
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    covariance = ExactCovariance() if covariance is None else covariance
    exact = isinstance(covariance, ExactCovariance)
    mu = mean_map(problem, fast=not exact if fast_mean is None else fast_mean)(theta)
    start = 0
    for c, s in zip(problem.cliques, problem.shapes, strict=True):
        size = math.prod(s)
        numpyro.deterministic(site_name(c), mu[start : start + size].reshape(s))
        start += size
    n = problem.total
    if isinstance(covariance, LatentCounts):
        factor = covariance.factor
        w = numpyro.sample(
            "count_deviation", dist.Normal(0.0, 1.0).expand([factor.shape[1]]).to_event(1)
        )
        noise = ReleaseNoise(
            n * mu + matvec(w, factor.T), jnp.asarray(problem.variance), problem.laplace
        )
        numpyro.sample("y", noise, obs=y)
        return
    if isinstance(covariance, FrozenCovariance):
        frozen = FrozenGaussian(n * mu, covariance.chol, covariance.precision)
        numpyro.sample("y", frozen, obs=y)
        return
    if not exact:
        raise ValueError(f"covariance must be a covariance type, got {covariance!r}")
    sigma = enumerated_covariance(problem, theta)
    v = _noise_variance(problem, noise_aware)
    cov = n * 0.5 * (sigma + sigma.T) + jnp.diag(v) + _JITTER * n * jnp.eye(d)
    numpyro.sample("y", dist.MultivariateNormal(n * mu, covariance_matrix=cov), obs=y)
