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
models); ``"plugin"`` freezes it at a
reference ``theta`` (:func:`plugin_covariance`) and, to keep one Cholesky per run, replaces
the Laplace mixture by its variance ``2 b^2`` (a Gaussian stand-in: see ``docs/bayes.md``).
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
from ..models.mrf import MarkovRandomField

__all__ = [
    "PRIOR_SCALE",
    "Problem",
    "prepare",
    "mean_map",
    "joint_features",
    "enumerated_covariance",
    "MAX_STATES",
    "plugin_covariance",
    "release_model",
    "site_name",
]

#: Prior standard deviation of each log-potential: ``pi / sqrt(6)`` (see module docstring).
PRIOR_SCALE = math.pi / math.sqrt(6.0)
_LAPLACE = ("laplace", "discrete_laplace")
_JITTER = 1e-6  # relative diagonal jitter of the covariance (numerical only)
#: Largest joint state space :func:`enumerated_covariance` enumerates.
MAX_STATES = 4096


class Problem(NamedTuple):
    """A release prepared for the model: ``y`` (flat, float64), ``total`` ``N``,
    ``variance`` (per cell noise variance), ``laplace`` (per cell: Laplace kind), the
    junction tree, cliques and table shapes of the model."""

    y: np.ndarray
    total: float
    variance: np.ndarray
    laplace: tuple[bool, ...]
    jt: JunctionTree
    cliques: tuple[Clique, ...]
    shapes: tuple[tuple[int, ...], ...]

    @property
    def size(self) -> int:
        """Number of cells ``d`` (the dimension of ``theta`` and ``y``)."""
        return int(self.y.size)


def site_name(clique: Clique) -> str:
    """The deterministic site of a clique's marginal table, e.g. ``"marginal:A,B"``."""
    return "marginal:" + ",".join(str(v) for v in clique)


def prepare(release, mrf: MarkovRandomField) -> Problem:
    """The :class:`Problem` of ``release`` under ``mrf``'s structure (cliques in ``mrf``'s
    order); a :class:`~pgm_dp.errors.DomainError` if they do not match."""
    if release.domain != mrf.domain or set(release.cliques) != set(mrf.cliques):
        raise DomainError("the release's domain and cliques must match the model's")
    if not np.isfinite(release.total) or release.total <= 0:
        raise DomainError(f"release total N must be positive, got {release.total}")
    ys, var, lap = [], [], []
    for c in mrf.cliques:
        table = np.asarray(release.noisy[c], dtype=np.float64).ravel()
        noise = release.noise[c]
        ys.append(table)
        var.append(np.full(table.size, noise.variance))
        lap.append(np.full(table.size, noise.kind in _LAPLACE))
    shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
    return Problem(
        np.concatenate(ys),
        float(release.total),
        np.concatenate(var),
        tuple(bool(b) for b in np.concatenate(lap)),
        mrf.junction_tree(),
        mrf.cliques,
        shapes,
    )


def mean_map(problem: Problem):
    """``theta (flat) -> mu(theta) (flat)``: the stacked clique marginals (traceable)."""
    sizes = [math.prod(s) for s in problem.shapes]
    starts = np.cumsum([0, *sizes])

    def mu(theta):
        tables = [
            theta[a:b].reshape(s)
            for a, b, s in zip(starts, starts[1:], problem.shapes, strict=False)
        ]
        margs, _ = marginals_and_log_z(problem.jt, problem.cliques, tuple(tables))
        return jnp.concatenate([jnp.ravel(m) for m in margs])

    return mu


def plugin_covariance(problem: Problem, theta, chunk: int = 64) -> np.ndarray:
    """``Sigma(theta) = d mu / d theta`` (``d x d``), by JVPs in chunks of ``chunk``."""
    mu = mean_map(problem)
    theta = jnp.asarray(theta, dtype=jnp.float64)
    d = problem.size

    @jax.jit
    def columns(basis):
        return jax.vmap(lambda e: jax.jvp(mu, (theta,), (e,))[1])(basis)

    eye = np.eye(d)
    blocks = [np.asarray(columns(eye[i : i + chunk])) for i in range(0, d, chunk)]
    sigma = np.concatenate(blocks, axis=0)
    return 0.5 * (sigma + sigma.T)


@functools.lru_cache(maxsize=32)
def joint_features(jt: JunctionTree, cliques: tuple[Clique, ...]) -> np.ndarray:
    """``Phi``: one row per joint state (domain order), the stacked clique indicators."""
    dom = jt.domain
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
    p = jax.nn.softmax(phi @ theta)
    mu = phi.T @ p
    return (phi.T * p) @ phi - jnp.outer(mu, mu)


def _noise_variance(problem: Problem, noise_aware: bool, mixture: bool):
    """Per-cell noise variance: constant, or latent ``Exponential`` for Laplace cells."""
    if not noise_aware:
        return jnp.zeros(problem.size)
    var = jnp.asarray(problem.variance)
    if not mixture or not any(problem.laplace):
        return var
    idx = np.flatnonzero(problem.laplace)
    mean = var[idx]
    w = numpyro.sample("noise_var", dist.Exponential(1.0 / mean).to_event(1))
    return var.at[idx].set(w)


def release_model(
    problem: Problem,
    y=None,
    *,
    noise_aware: bool = True,
    prior_scale: float = PRIOR_SCALE,
    covariance: str = "exact",
    plugin_chol=None,
) -> None:
    """NumPyro model of ``y`` (observed site ``"y"``; ``None`` simulates). Sites: ``theta``,
    ``noise_var`` (Laplace cells, exact covariance only), ``marginal:...`` (deterministic).

    ``plugin_chol``: with ``covariance="plugin"``, the lower Cholesky factor of the frozen
    ``N Sigma + diag(v)`` (from :func:`plugin_covariance`).
    """
    d = problem.size
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    mu_fn = mean_map(problem)
    mu = mu_fn(theta)
    start = 0
    for c, s in zip(problem.cliques, problem.shapes, strict=True):
        size = math.prod(s)
        numpyro.deterministic(site_name(c), mu[start : start + size].reshape(s))
        start += size
    n = problem.total
    if covariance == "plugin":
        numpyro.sample("y", dist.MultivariateNormal(n * mu, scale_tril=plugin_chol), obs=y)
        return
    if covariance != "exact":
        raise ValueError(f"covariance must be 'exact' or 'plugin', got {covariance!r}")
    sigma = enumerated_covariance(problem, theta)
    v = _noise_variance(problem, noise_aware, mixture=True)
    cov = n * 0.5 * (sigma + sigma.T) + jnp.diag(v) + _JITTER * n * jnp.eye(d)
    numpyro.sample("y", dist.MultivariateNormal(n * mu, covariance_matrix=cov), obs=y)
