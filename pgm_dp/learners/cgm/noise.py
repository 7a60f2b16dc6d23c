"""The release's noise model ``p(y | n)`` as CGM-EM's E-step sees it (Bernstein et al. 2017).

Gaussian noise is used as it is. The Laplace log-density ``-|y - n| / b`` is not
differentiable at ``n = y``; we use the *pseudo-Huber* smoothing
``-sqrt((y - n)^2 + s^2) / b`` with ``s = smoothing * b`` (our choice; the paper leaves it
open): concave, within ``s / b`` of the Laplace log-density everywhere, with a gradient that
tends to the subgradient ``sign(y - n) / b`` away from the kink. Discrete Laplace / Gaussian
releases use the same formulas with their scale. The densities are the release's own
(:func:`pgm_dp.privacy.noise.log_density_kernel` and its derivatives, what
:class:`~pgm_dp.privacy.NoiseModel` evaluates), traced by JAX here. The functions take one
clique's table (``noise_log_density`` returns its sum, the others act elementwise);
``scale`` may also be an array of the table's shape (one scale per cell).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...privacy.noise import (
    LAPLACE_KINDS,
    log_density_curvature,
    log_density_gradient,
    log_density_kernel,
)

__all__ = ["flat_noise", "noise_curvature", "noise_gradient", "noise_log_density"]


def noise_gradient(kind: str, scale: float, smoothing: float, y, n):
    """``d/dn log p(y | n)`` elementwise (Laplace kinds: pseudo-Huber smoothed, see module)."""
    return log_density_gradient(kind, scale, y - n, smoothing, jnp)


def noise_curvature(kind: str, scale: float, smoothing: float, y, n):
    """``-d^2/dn^2 log p(y | n) > 0`` elementwise (Laplace kinds: of the pseudo-Huber
    smoothing, at most ``1 / (scale * s)``)."""
    return log_density_curvature(kind, scale, y - n, smoothing, jnp)


def noise_log_density(kind: str, scale: float, smoothing: float, y, n):
    """``log p(y | n)`` summed over cells, up to a constant; the antiderivative of
    :func:`noise_gradient` (Laplace kinds pseudo-Huber smoothed)."""
    return jnp.sum(log_density_kernel(kind, scale, y - n, smoothing, jnp))


def flat_noise(kinds, smoothing: float, sizes):
    """The noise model on the flat vector of all cliques' cells (the E-step's layout):
    ``cells(y_tables, scales) -> (y, b, s)`` per cell, built once per E-step (``scales``:
    one per clique, or one row of one per cell), then ``gradient(cells, n)`` and
    ``curvature(cells, n)`` elementwise on the flat statistics: one fused kernel each
    instead of one per clique. The values are :func:`noise_gradient`'s and
    :func:`noise_curvature`'s (the latter's ``q^1.5`` as ``q sqrt(q)``, equal to rounding)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    laplace = np.repeat([k in LAPLACE_KINDS for k in kinds], sizes)
    mixed = bool(laplace.any() and not laplace.all())
    all_laplace = bool(laplace.all())
    segment = np.repeat(np.arange(sizes.size), sizes)  # a gather, not a traced repeat

    def cells(y, scales):
        y = jnp.concatenate([jnp.ravel(t) for t in y])
        scales = jnp.asarray(scales)
        if scales.ndim == 2:  # one row of one scale per cell (flat backends)
            b = scales[0]
        else:
            b = scales[segment]
        return y, b, smoothing * b

    def pick(lap, gauss):
        if mixed:
            return jnp.where(laplace, lap, gauss)
        return lap if all_laplace else gauss

    def gradient(cells, n):
        y, b, s = cells
        r = y - n
        if not smoothing:
            return pick(jnp.sign(r) / b, r / (b * b))
        return pick(r / (b * jnp.sqrt(r * r + s * s)), r / (b * b))

    def curvature(cells, n):
        y, b, s = cells
        if not smoothing:
            return pick(jnp.zeros_like(n), jnp.broadcast_to(1.0 / (b * b), n.shape))
        t = (y - n) / s
        q = 1.0 + t * t
        return pick(1.0 / (b * s * (q * jnp.sqrt(q))), jnp.broadcast_to(1.0 / (b * b), n.shape))

    return cells, gradient, curvature
