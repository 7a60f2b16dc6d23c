"""CGM's objective maximised directly in ``theta``, without E-steps (``solver="direct"``).

Without priors, the fixed point of EM (Bernstein et al. 2017, Alg. 2) has ``mu(theta) =
mu*``: the E-step (Eq. 6) is stationary at ``n = N mu(theta)``, where ``theta + grad
H(mu(theta))`` is normal to the marginal polytope, so ``grad_n log p(y | n)`` is normal to
it too, and ``theta`` is a stationary point of

    G(theta) = log p(y | N mu(theta)),

the noise log-likelihood of the release at the model's counts, maximised over the marginal
polytope (the estimator of McKenna et al. 2019 with the release's own noise density in
place of their L2 loss). Its gradient is ``J^T N grad_n log p(y | N mu)`` with ``J = d mu /
d theta`` the model's covariance: one inference pass and its reverse (``jax.vjp``), no
inner fixed-point solve. :func:`direct_objective` is ``G`` plus the same log-prior as EM's
objective (:mod:`.em`), per record:

    G(theta) / N  -  theta^T diag(lam) theta  +  rho (u^T theta - A(theta)).

With a prior the maximiser differs from EM's: ``G <= F`` drops the KL term through which
EM's latent counts may leave ``N mu(theta)`` by their sampling error, so ``G`` fits the
sample's tables rather than the population's (our choice: the target of a release's
tables is the sample's; accuracy against EM's: ``docs/design/cgm_em_solver.md``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .noise import flat_noise

__all__ = ["direct_objective"]


@functools.lru_cache(maxsize=64)
def direct_objective(domain, cliques, max_cells, kinds, smoothing, inference):
    """The traceable ``objective(theta, problem) -> (-value, -grad, N mu, ok)`` of the
    module docstring (per record) for one structure, exact inference backend ``inference``
    and noise kind per clique ``kinds`` (Laplace kinds pseudo-Huber smoothed by
    ``smoothing``, :mod:`.noise`); ``problem``: an :class:`~.problem.EMProblem` (the
    release per cell, ``N``, ``lam = tau / N`` and ``rho = beta / N``)."""
    if not inference.exact:
        raise ValueError('solver="direct" needs exact inference (the junction tree)')
    bp = inference.program(domain, cliques, max_cells)
    sizes = [domain.size(c) for c in cliques]
    uniform = np.repeat([1.0 / k for k in sizes], sizes)  # a constant: no eager op per size
    gradient, _, log_density = flat_noise(kinds, smoothing, sizes)

    def marginals(theta):
        mu, log_z, ok, *_ = bp(theta)
        return mu, (log_z, ok)

    def objective(theta, problem):
        cells, total = (problem.release.y, problem.release.scale), problem.total
        mu, back, (log_z, ok) = jax.vjp(marginals, theta, has_aux=True)
        (cov_g,) = back(gradient(cells, total * mu))  # J^T grad_n log p, J symmetric
        lam, rho = problem.lam, problem.rho
        value = log_density(cells, total * mu) / total - jnp.dot(theta, lam * theta)
        value = value + rho * (jnp.dot(uniform, theta) - log_z)
        grad = cov_g - 2.0 * lam * theta + rho * (uniform - mu)
        return -value, -grad, total * mu, ok

    return objective
