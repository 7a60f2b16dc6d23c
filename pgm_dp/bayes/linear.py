"""The Laplace method's marginals in the mean geometry, and the data's own tables.

Contract: :func:`linear_marginals` maps draws of the log-potentials from the Laplace
approximation ``N(MAP, H^-1)`` to clique marginals by the linearisation ``mu(MAP) + Sigma
(theta - MAP)`` (``Sigma = d mu / d theta`` at the MAP): a Gaussian in the marginals (the
mean parameters) instead of ``mu(theta)`` of a Gaussian in ``theta``. :func:`table_draws`
draws the data's own clique tables (proportions ``n / N`` of the records that were
released), given draws of the model's marginals. :func:`linear_replicates` simulates
releases from marginal draws.

Why the mean geometry (our choice; Räisä et al. 2023, Sec. 3.3 approximate in ``theta``):
a cell whose count the noise hides has a likelihood that is flat in ``theta`` below the
MAP and rises steeply above it, while its curvature at the MAP is little more than the
prior's. A Gaussian in ``theta`` then sends draws far above the MAP along every such cell
at once, and ``mu(theta)`` (a log-sum-exp over the joint states) turns them into mass the
release rules out: on a release of Adult, states with a noisy count near 0 got 6-18 % of the
mass (sd 0.12-0.22). In the marginals the likelihood of the release is Gaussian (the noise
is added to the counts), so there the Laplace approximation is the accurate one; negative
values of the linearisation are clipped at zero and each table renormalised.

The data's tables (:func:`table_draws`): the counts ``n`` of the released tables are
``N mu + u`` with ``u ~ N(0, N Sigma)`` (the CLT of :mod:`~pgm_dp.bayes.model`) and the
release ``y = n + e``, ``e ~ N(0, V)`` (the noise's variance; Laplace noise by a Gaussian of
its variance). Given ``mu``, ``u | y`` is Gaussian with mean ``(I - V C^-1) r`` and
covariance ``V - V C^-1 V`` (``C = N Sigma + V``, ``r = y - N mu``), ``Sigma`` frozen at the
MAP. These are the quantities a user's table has: its intervals cover the data's marginals,
not the super-population's ``mu``, which also carries the records' sampling variance.

The data's table draws are left unclipped (our choice): each sums to 1 per table exactly,
and a cell the noise hides may draw below zero. Clipping each cell at zero and renormalising
biases every sum of cells upwards: a marginal read from a larger table (a pair summed out
of a measured triple) then sums the clipped noise of all the cells it spans, and its
interval excluded 0 on impossible cells and missed their neighbours. Clipping belongs to the
interval of the quantity asked for (quantiles commute with the clip), as
:func:`~pgm_dp.bayes.intervals.workload_intervals` does. For the same reason the
linearised marginals that feed the tables are the unclipped ones (:func:`linear_marginals`'s
``clip``).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .model import site_name, table_name

__all__ = [
    "linear_marginals",
    "table_draws",
    "linear_replicates",
    "renormalise",
    "split_sites",
    "table_offsets",
]

_JITTER = 1e-6  # relative diagonal jitter of C (numerical only, as the model's)


def renormalise(flat: np.ndarray, offsets) -> np.ndarray:
    """``flat`` (draws x cells) clipped at zero, each table (``offsets``) scaled to sum 1."""
    out = np.clip(flat, 0.0, None)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        out[:, a:b] /= np.maximum(out[:, a:b].sum(1, keepdims=True), 1e-300)
    return out


def linear_marginals(mu_hat, sigma, theta, theta_hat, offsets, clip: bool = True) -> np.ndarray:
    """Marginal draws ``mu_hat + (theta - theta_hat) Sigma`` (``theta``: draws x cells),
    clipped at zero and renormalised per table (:func:`renormalise`) unless ``clip`` is
    false (each table then sums to 1 already: ``Sigma``'s rows sum to zero per table).

    Args:
        mu_hat: the stacked clique marginals at the MAP, ``(d,)``.
        sigma: ``d mu / d theta`` at the MAP, ``(d, d)`` (symmetric).
        theta: draws of the log-potentials, ``(draws, d)``.
        theta_hat: the MAP, ``(d,)``.
        offsets: where each clique's cells start, and ``d`` last.
    """
    flat = np.asarray(mu_hat)[None, :] + (np.asarray(theta) - np.asarray(theta_hat)) @ sigma
    return renormalise(flat, offsets) if clip else flat


def _psd_factor(matrix: np.ndarray) -> np.ndarray:
    """``F`` with ``F F^T = matrix`` (symmetric PSD; negative rounding clipped)."""
    w, u = np.linalg.eigh(0.5 * (matrix + matrix.T))
    return u * np.sqrt(np.clip(w, 0.0, None))


def _conditional(sigma, total, variance):
    """``(gain, factor)``: ``u | r ~ N(gain r, factor factor^T)`` (module docstring)."""
    d = len(variance)
    cov = total * sigma + np.diag(variance) + _JITTER * total * np.eye(d)
    c_inv_v = scipy.linalg.cho_solve(scipy.linalg.cho_factor(cov), np.diag(variance))
    gain = np.eye(d) - c_inv_v.T  # I - V C^-1
    return gain, _psd_factor(np.diag(variance) - np.diag(variance) @ c_inv_v)


def table_draws(mu, y, total, sigma, variance, offsets, gen: np.random.Generator, aware=True):
    """Draws of the data's tables ``n / N`` (draws x cells), one per marginal draw ``mu``
    (module docstring): unclipped, each table summing to 1 (the naive posterior's: the
    release clipped at zero and renormalised).

    Args:
        mu: draws of the stacked model marginals, ``(draws, d)``.
        y: the release, flat ``(d,)``; ``total``: its ``N``.
        sigma: ``d mu / d theta`` at the MAP (``Cov`` of one record's indicators).
        variance: the noise variance per cell.
        offsets: where each clique's cells start, and ``d`` last.
        gen: the generator of the conditional draws.
        aware: ``False`` (the naive posterior): the release is taken as the counts.
    """
    mu = np.asarray(mu, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if not aware:
        return renormalise(np.repeat(y[None, :], len(mu), 0) / total, offsets)
    gain, factor = _conditional(np.asarray(sigma), total, np.asarray(variance))
    resid = y[None, :] - total * mu
    z = gen.standard_normal((len(mu), factor.shape[1]))
    counts = total * mu + resid @ gain.T + z @ factor.T
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):  # the jitter's drift of the sums
        counts[:, a:b] /= counts[:, a:b].sum(1, keepdims=True)
    return counts


def linear_replicates(mu, total, sigma, variance, laplace, gen: np.random.Generator):
    """Releases simulated from marginal draws ``mu`` (draws x cells): counts ``N mu + u``,
    ``u ~ N(0, N Sigma)``, plus the release's noise per cell (Laplace of that variance where
    ``laplace``, Gaussian elsewhere)."""
    mu = np.asarray(mu, dtype=np.float64)
    factor = _psd_factor(total * np.asarray(sigma))
    counts = total * mu + gen.standard_normal((len(mu), factor.shape[1])) @ factor.T
    var = np.asarray(variance, dtype=np.float64)
    lap = gen.laplace(0.0, np.sqrt(var / 2.0), size=counts.shape)
    gau = gen.normal(0.0, np.sqrt(var), size=counts.shape)
    return counts + np.where(np.asarray(laplace, dtype=bool), lap, gau)


def table_offsets(shapes) -> np.ndarray:
    """Where each table of ``shapes`` starts in the flat layout, and the total last."""
    return np.cumsum([0, *(math.prod(s) for s in shapes)])


def split_sites(draws: dict, mu, tables, cliques, shapes, shape: tuple) -> None:
    """Set ``draws``' ``marginal:`` sites from ``mu`` and ``table:`` sites from ``tables``
    (both ``(chains * draws, d)``), reshaped to ``shape`` (chains, draws) and each table's."""
    offsets = table_offsets(shapes)
    for c, s, a, b in zip(cliques, shapes, offsets[:-1], offsets[1:], strict=True):
        draws[site_name(c)] = mu[:, a:b].reshape(*shape, *s)
        draws[table_name(c)] = tables[:, a:b].reshape(*shape, *s)
