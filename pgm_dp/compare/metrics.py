"""Evaluation metrics: exact KL divergence, held-out log-likelihood, marginal errors.

All computed in float64 through the junction tree (no enumeration of the joint).

>>> from pgm_dp.models import third_order_chain
>>> p = third_order_chain(5, 3, rng=0)
>>> abs(kl_divergence(p, p)) < 1e-12
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..domain import Clique
from ..errors import DomainError
from ..inference.junction_tree import clique_marginals
from ..models.mrf import MarkovRandomField

__all__ = ["kl_divergence", "log_likelihood", "marginal_l1_error", "marginal_mse"]


def kl_divergence(p: MarkovRandomField, q: MarkovRandomField) -> float:
    """Exact ``KL(p || q)`` between two MRFs on the same domain (any clique sets).

    ``KL = E_p[sum_C theta^p_C] - log Z_p - E_p[sum_D theta^q_D] + log Z_q``; the
    expectations need ``p``'s marginals on ``q``'s cliques, read from one junction tree
    built on the union of both clique sets.
    """
    if p.domain != q.domain:
        raise DomainError(f"KL needs models on one domain: {p.domain} vs {q.domain}")
    extra = tuple(c for c in q.cliques if c not in p.cliques)
    jt = p.junction_tree(extra=extra)
    pots = p.log_potentials + tuple(jnp.zeros(p.domain.sizes(c)) for c in extra)
    margs, log_zp = clique_marginals(jt, pots, p.cliques + q.cliques)
    log_zq = q.log_partition()
    n = len(p.cliques)
    e_p = sum(_expect(m, t) for m, t in zip(margs[:n], p.log_potentials, strict=True))
    e_q = sum(_expect(m, t) for m, t in zip(margs[n:], q.log_potentials, strict=True))
    return float(e_p - log_zp - e_q + log_zq)


def _expect(marginal, log_potential) -> jax.Array:
    """``sum marginal * log_potential`` with ``0 * -inf = 0`` (impossible cells carry no
    mass); a ``-inf`` cell with mass gives ``-inf`` (so ``KL(p || q) = inf``)."""
    t = jnp.asarray(log_potential)
    return jnp.sum(jnp.where(marginal > 0, marginal * t, 0.0))


def log_likelihood(mrf: MarkovRandomField, data: Any) -> float:
    """Mean per-record log-likelihood ``(1/n) sum_i log p(x_i)`` (held-out evaluation)."""
    return float(np.mean(mrf.log_prob(data)))


def _paired(estimate: Mapping[Clique, Any], truth: Mapping[Clique, Any]):
    if set(estimate) != set(truth):
        raise DomainError(f"marginal sets differ: {set(estimate) ^ set(truth)}")
    return [(np.asarray(estimate[c], float), np.asarray(truth[c], float)) for c in truth]


def marginal_l1_error(estimate: Mapping[Clique, Any], truth: Mapping[Clique, Any]) -> float:
    """Average over cliques of ``||mu_hat_C - mu_C||_1`` (marginals as probabilities)."""
    return float(np.mean([np.abs(a - b).sum() for a, b in _paired(estimate, truth)]))


def marginal_mse(estimate: Mapping[Clique, Any], truth: Mapping[Clique, Any]) -> float:
    """Mean squared error over all cells of all clique marginals (Bernstein et al. Fig. 1a)."""
    pairs = _paired(estimate, truth)
    return float(np.mean(np.concatenate([(a - b).ravel() ** 2 for a, b in pairs])))
