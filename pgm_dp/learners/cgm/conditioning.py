"""Conditioning of CGM-EM's outer problem: gauge projection, diagonal scaling, Bethe start.

The gauge directions of the log-potentials (:mod:`pgm_dp.models.gauge`) change neither the
distribution nor the Bethe free energy, and carry only the prior ``tau ||theta||^2`` (the
conjugate prior ``beta (u^T theta - A(theta))`` is constant along them): curvature
``2 tau / N`` per record against the data's ``O(1)``, so L-BFGS crawls along them. The
objective's optimum lies in the gauge's orthogonal complement (there the gradient's gauge
part is the prior's, ``2 tau (I - P) theta``), so L-BFGS searches that complement alone
(:func:`~pgm_dp.models.gauge.gauge_projector`); no fixed point changes.

:func:`diagonal_scale` estimates the curvature of the per-record EM objective per cell,
``h = (K + beta / N) mu (1 - mu) + 2 tau / N`` with ``K = v_m / (v_m + v_n)`` the E-step's
shrinkage (``v_m = mu (1 - mu) / N`` the model's, ``v_n`` the noise's variance per record:
``2 b^2 / N^2`` Laplace, ``sigma^2 / N^2`` Gaussian) and ``beta`` the conjugate prior's
pseudo-records; L-BFGS then runs on ``z = sqrt(h) theta``. The direct objective
(:mod:`.direct`, no E-step) has no shrinkage: the diagonal of its Hessian ``J C J`` per
record (``J`` the model's covariance, ``C`` the noise log-density's curvature, taken as
``1 / v_n``: Gaussian noise's, and for the Laplace kinds that of a Gaussian of the same
variance) is about ``mu^2 (1 - mu)^2 / v_n``, so there ``h = var^2 / v_n`` plus the
priors' terms, ``var = mu (1 - mu)``: up to ``var / v_n`` times EM's on the large cells of a
precise release (fewer L-BFGS iterations where the noise is small: ``benchmarks/README.md``).

:func:`bethe_start`: the Bethe approximation's MLE in closed form (the BP reparametrisation
``p ~ prod_C mu_C / prod_v mu_v^(d_v - 1)``, Wainwright, Jaakkola & Willsky 2003): on
locally consistent ``mu`` loopy BP has a fixed point with beliefs ``mu``.
:func:`shrunk_marginals`: the release's tables plus one noise scale per cell, the targets
of CGM-EM's starts (their MLE, or :func:`bethe_naive` under loopy BP).
Measurements: ``docs/performance.md``, section "Scale".
"""

from __future__ import annotations

import numpy as np

from ...domain import Domain
from ...privacy.measurements import Measurements
from ...tables import flatten_tables, unflatten_tables
from ..naive_mle import project_to_simplex

__all__ = [
    "MIN_RELATIVE_CURVATURE",
    "bethe_naive",
    "bethe_start",
    "diagonal_scale",
    "shrunk_marginals",
    "shrunk_targets",
]

#: The smallest ``h / mean h`` of :func:`diagonal_scale`: a scaling spread of at most 1e4.
MIN_RELATIVE_CURVATURE = 1e-8


def diagonal_scale(
    mu: np.ndarray,
    scales: np.ndarray,
    laplace,
    total: float,
    lam: float,
    rho: float = 0.0,
    direct: bool = False,
):
    """Per-cell ``sqrt(h / mean h)`` of the module docstring; ``mu`` the model's flat
    marginals, ``scales`` the noise scale of each cell, ``laplace`` whether the noise is of
    a Laplace kind (one per cell or one); ``rho = beta / N`` adds the conjugate prior's
    curvature ``rho mu (1 - mu)``; ``direct``: the direct objective's ``h`` (no
    shrinkage). ``h / mean h`` is at least :data:`MIN_RELATIVE_CURVATURE`: without priors
    a cell the noise hides has almost no curvature, and a unit step in ``z`` would move its
    potential by millions (then BP returns no finite gradient); with the default priors
    (``h >= 2 tau / N``) the bound does not bind."""
    mu = np.clip(np.asarray(mu, dtype=np.float64), 0.0, 1.0)
    noise_var = np.where(laplace, 2.0, 1.0) * np.asarray(scales, dtype=np.float64) ** 2 / total
    var = mu * (1.0 - mu)
    shrink = noise_var if direct else var + noise_var
    h = var * var / np.maximum(shrink, 1e-300) + rho * var + 2.0 * lam
    h = np.maximum(h / np.mean(h), MIN_RELATIVE_CURVATURE)
    return np.sqrt(h)


def bethe_start(domain: Domain, cliques, marginals, pseudo_counts, rho=None) -> list[np.ndarray]:
    """Log-potentials whose Bethe approximation has beliefs ``marginals`` (made positive by
    adding ``pseudo_counts[C]`` per cell and renormalising; variable marginals: the mean
    over the cliques holding the variable): ``theta_C = log mu_C - sum_{v in C}
    (d_v - 1) / d_v log mu_v`` (module docstring). With counting numbers ``rho`` (one per
    clique; reweighted BP, :mod:`pgm_dp.inference.loopy_bp`) the same for its free energy:
    ``theta_C = rho_C (log mu_C - sum_{v in C} (1 - 1 / D_v) log mu_v)``, ``D_v = sum_{C ni
    v} rho_C``; at messages ``m_{C->v} = mu_v^(1 / D_v)`` its beliefs are ``mu``."""
    rho = np.ones(len(cliques)) if rho is None else np.asarray(rho, dtype=np.float64)
    mu = []
    for c, a in zip(cliques, pseudo_counts, strict=True):
        t = np.asarray(marginals[c], dtype=np.float64)
        mu.append((t + a) / (t.sum() + a * t.size))
    deg: dict = {}
    var: dict = {}
    for c, t, r in zip(cliques, mu, rho, strict=True):
        for i, v in enumerate(c):
            deg[v] = deg.get(v, (0, 0.0))
            deg[v] = (deg[v][0] + 1, deg[v][1] + r)
            var[v] = var.get(v, 0.0) + t.sum(axis=tuple(j for j in range(t.ndim) if j != i))
    tables = []
    for c, t, r in zip(cliques, mu, rho, strict=True):
        out = np.log(t)
        for i, v in enumerate(c):
            shape = [1] * t.ndim
            shape[i] = -1
            out = out - (1.0 - 1.0 / deg[v][1]) * np.log(var[v] / deg[v][0]).reshape(shape)
        tables.append(r * out)
    return tables


def shrunk_marginals(view: Measurements, shrink: bool = True) -> dict:
    """The release's tables (``view``: its :meth:`~pgm_dp.privacy.Measurements.in_order`)
    projected onto the simplex, plus a pseudo-count of one noise scale per cell (``b_C /
    N``, our choice), renormalised: positive everywhere, so their MLE exists (the projection
    zeroes the cells the noise hides, and an MLE chases zeros without end, Bernstein et al.
    2017 Sec. 3.1). ``shrink=False``: the projected tables alone (naive MLE's targets)."""
    total = float(view.total)
    out = {}
    for c, y, b in zip(view.cliques, view.tables(), view.scales, strict=True):
        t = project_to_simplex(np.asarray(y, dtype=np.float64) / total)
        a = float(b) / total if shrink else 0.0
        out[c] = (t + a) / (t.sum() + a * t.size)
    return out


def shrunk_targets(view: Measurements, shrink: bool = True) -> np.ndarray:
    """:func:`shrunk_marginals` as one flat vector (the view's clique order)."""
    return flatten_tables(list(shrunk_marginals(view, shrink).values()))


def bethe_naive(view: Measurements, mrf, rho=None, targets=None) -> list[np.ndarray]:
    """:func:`bethe_start` on :func:`shrunk_marginals` (or on the flat ``targets``): the
    loopy-BP counterpart of the naive MLE, in closed form (``rho``: reweighted BP's)."""
    if targets is None:
        targets = shrunk_marginals(view)
    else:
        targets = dict(zip(mrf.cliques, unflatten_tables(targets, _shapes(mrf)), strict=True))
    return bethe_start(mrf.domain, mrf.cliques, targets, [0.0] * len(mrf.cliques), rho)


def _shapes(mrf) -> tuple:
    return tuple(mrf.domain.sizes(c) for c in mrf.cliques)
