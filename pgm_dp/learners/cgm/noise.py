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

import functools

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
    ``gradient(cells, n)``, ``curvature(cells, n)`` elementwise and ``log_density(cells,
    n)`` summed, with ``cells = (y, b)`` the release and its noise scale per cell
    (:class:`~pgm_dp.learners.cgm.problem.EMProblem`'s ``release.y`` and
    ``release.scale``) and ``kinds`` the noise kind of each clique of ``sizes`` cells: one
    fused kernel each instead of one
    per clique, :func:`noise_gradient`'s, :func:`noise_curvature`'s and
    :func:`noise_log_density`'s values (the same elementwise functions of
    :mod:`pgm_dp.privacy.noise`)."""
    laplace = np.repeat([k in LAPLACE_KINDS for k in kinds], np.asarray(sizes, dtype=np.int64))

    def per_kind(fn):
        def apply(cells, n):
            y, b = cells
            value = functools.partial(fn, scale=b, residual=y - n, smoothing=smoothing, xp=jnp)
            if laplace.all() or not laplace.any():  # one kind: no select
                return value("laplace" if laplace.all() else "gaussian")
            return jnp.where(laplace, value("laplace"), value("gaussian"))

        return apply

    kernel = per_kind(log_density_kernel)
    return (
        per_kind(log_density_gradient),
        per_kind(log_density_curvature),
        lambda cells, n: jnp.sum(kernel(cells, n)),
    )
