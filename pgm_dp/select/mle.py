"""The MLE from clique marginals, solved with a NumPy junction tree (nothing to compile).

The objective is that of :func:`pgm_dp.learners.mle.fit_marginals`, the per-record
regularised negative log-likelihood

    ``L(θ) = log Z(θ) - sum_C <μ̄_C, θ_C> + λ ||θ||²``,  gradient ``μ(θ) - μ̄ + 2λθ``,

minimised by L-BFGS. That solver compiles a JAX program per junction tree; AIM changes the
tree every round, and the compilation (seconds) then outweighs the solve. Here ``log Z``
and the marginals ``μ(θ)`` come from the NumPy calibration of
:func:`pgm_dp.inference.queries.calibrate_tables`.

Conditioning (our choice, as CGM-EM's, :mod:`pgm_dp.learners.cgm.conditioning`): L-BFGS runs
on ``z = s · Pθ``, ``P`` the orthogonal projection onto the complement of the gauge
directions (functions moved between cliques sharing variables, table constants) and
``s = sqrt(μ̄ (1 - μ̄) + 2λ)`` a diagonal estimate of the curvature per cell. Along the
gauge ``log Z`` is constant and the objective is ``-<μ̄, g> + λ ||g||²`` apart from the
rest (``P`` is orthogonal), so the distribution at the optimum is that of the full
problem: noisy targets that disagree on a shared margin only push the gauge part, slowly
(curvature ``2λ``), to a place that changes no probability (fewer iterations:
``docs/design/cgm_em_solver.md``). Convergence: the largest entry of ``P`` times the
gradient (the marginal mismatch outside the gauge) is at most ``tol``.

>>> from pgm_dp import Domain
>>> import numpy as np
>>> dom = Domain(["A", "B"], [2, 2])
>>> tables, info = fit_tables(dom, [("A", "B")], [np.array([[0.4, 0.1], [0.2, 0.3]])])
>>> info["converged"], np.round(np.exp(tables[0]) / np.exp(tables[0]).sum(), 6).tolist()
(True, [[0.4, 0.1], [0.2, 0.3]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.optimize

from .._config import one_blas_thread
from ..domain import Clique, Domain
from ..inference.junction_tree import DEFAULT_MAX_CELLS, build_junction_tree
from ..inference.queries import calibrate_tables
from ..tables import flatten_tables, table_layout

__all__ = ["fit_tables", "mirror_descent"]


def _read_plan(jt, cliques: tuple[Clique, ...]) -> list[tuple[int, int, tuple, tuple]]:
    """How to read the cliques' marginals from the calibrated tree: steps ``(clique index,
    source, axes summed, permutation)`` in reading order, ``source`` indexing the beliefs
    followed by the marginals read so far. Larger cliques are read first and each from the
    smallest table that holds it, so a one-way table is summed from a pair, not from a big
    junction-tree clique."""
    dom = jt.domain
    names = [tuple(c) for c in jt.cliques]  # variables of each readable table
    steps = []
    for n in sorted(range(len(cliques)), key=lambda m: -dom.size(cliques[m])):
        c = cliques[n]
        source = min(
            (k for k, have in enumerate(names) if set(c) <= set(have)),
            key=lambda k: dom.size(names[k]),
        )
        have = names[source]
        kept = tuple(v for v in have if v in c)
        axes = tuple(a for a, v in enumerate(have) if v not in c)
        steps.append((n, source, axes, tuple(kept.index(v) for v in c)))
        names.append(kept)
    return steps


def _marginals(jt, reads, tables) -> tuple[list[np.ndarray], float]:
    """The measured cliques' probability tables (by the plan ``reads`` of :func:`_read_plan`)
    of the model with log-potential ``tables``, and its ``log Z``."""
    beliefs, log_z = calibrate_tables(jt, tables)
    done, mu = list(beliefs), [None] * len(reads)
    for n, source, axes, perm in reads:
        t = done[source].sum(axis=axes) if axes else done[source]
        done.append(t)  # in the source's axis order, as ``names`` in the plan
        mu[n] = np.transpose(t, perm)
    return mu, log_z


def _conditioning(domain, cliques, target, l2, conditioned):
    """The projection ``P`` and the scale ``s`` (module docstring), or identity and ones."""
    if not conditioned:
        return (lambda v: v), np.ones_like(target)
    from ..models.gauge import gauge_projector

    mu = np.clip(target, 0.0, 1.0)
    return gauge_projector(domain, cliques), np.sqrt(mu * (1 - mu) + 2 * l2 + 1e-12)


def fit_tables(
    domain: Domain,
    cliques: Sequence[Clique],
    targets: Sequence[np.ndarray],
    *,
    l2: float = 0.0,
    tol: float = 1e-8,
    max_iters: int = 2000,
    init: Sequence[np.ndarray] | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    conditioned: bool = True,
) -> tuple[list[np.ndarray], dict]:
    """Log-potential tables of ``cliques`` whose model matches the ``targets`` marginals
    (module docstring); ``init``: starting tables (default zeros); ``conditioned=False``
    runs L-BFGS on ``θ`` itself. Returns the tables (gauge-projected when conditioned) and
    ``{"iterations", "max_gradient", "converged", "objective"}``."""
    cliques = tuple(tuple(c) for c in cliques)
    jt = build_junction_tree(domain, cliques, max_cells)
    layout = table_layout(domain, cliques)
    target = flatten_tables(targets)
    reads = _read_plan(jt, cliques)

    def value_and_grad(x):
        mu, log_z = _marginals(jt, reads, layout.unflatten(x))
        mu = flatten_tables(mu)
        value = log_z - target @ x + l2 * (x @ x)
        return value, mu - target + 2.0 * l2 * x

    x0 = np.zeros(layout.size) if init is None else flatten_tables(init)
    project, scale = _conditioning(domain, cliques, target, l2, conditioned)

    def objective(z):
        v, g = value_and_grad(project(z / scale))
        return v, project(g) / scale

    z0 = scale * project(x0)
    with one_blas_thread():  # BLAS threads cost more than L-BFGS-B's small vector work
        res = scipy.optimize.minimize(
            objective,
            z0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(max_iters), "gtol": float(tol), "ftol": 0.0, "maxcor": 20},
        )
    x = project(res.x / scale)
    max_grad = float(np.max(np.abs(objective(res.x)[1] * scale)))
    info = {
        "iterations": int(res.nit),
        "max_gradient": max_grad,
        "converged": max_grad <= tol,
        "objective": float(res.fun),
    }
    return layout.unflatten(x), info


def mirror_descent(
    domain: Domain,
    cliques: Sequence[Clique],
    noisy: Sequence[np.ndarray],
    stddevs: Sequence[float],
    total: float,
    *,
    init: Sequence[np.ndarray] | None = None,
    iters: int = 1000,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> tuple[list[np.ndarray], dict]:
    """Private-PGM's estimate (McKenna, Sheldon & Miklau 2019, Alg. 1): mirror descent over
    the marginal polytope on the noise-weighted L2 loss
    ``L(μ) = sum_C ||(μ_C - y_C) / s_C||² / 2`` (``μ_C = N p_C`` the model's counts of clique
    ``C``, ``y_C`` its noisy table, ``s_C`` the noise's standard deviation): the Gaussian
    negative log-likelihood of the measurements, so cliques measured with less noise count
    more (the naive MLE weighs every table alike). Each step ``θ ← θ - α ∇L(μ(θ))``, ``α``
    by the reference implementation's Armijo rule (mbi ``MirrorDescent``: start
    ``2 / (L N)``, ``L = max_C 1 / s_C²``; times 1.01 after a sufficient decrease, else
    halved and the step refused). ``init``: starting log-potentials (a warm start, e.g. the
    naive MLE). Returns the tables and ``{"iterations", "loss", "initial_loss"}``."""
    cliques = tuple(tuple(c) for c in cliques)
    jt = build_junction_tree(domain, cliques, max_cells)
    reads = _read_plan(jt, cliques)
    ys = [np.asarray(y, dtype=np.float64) for y in noisy]
    w = [1.0 / max(float(sd), 1e-12) ** 2 for sd in stddevs]
    theta = [np.zeros(domain.sizes(c)) for c in cliques] if init is None else list(init)

    def loss_grad(th):
        mu = [total * m for m in _marginals(jt, reads, th)[0]]
        diff = [m - y for m, y in zip(mu, ys, strict=True)]
        loss = 0.5 * math.fsum(wc * float(np.vdot(d, d)) for wc, d in zip(w, diff, strict=True))
        return loss, mu, [wc * d for wc, d in zip(w, diff, strict=True)]

    alpha = 2.0 / (max(w) * total)
    loss, mu, grad = loss_grad(theta)
    first = loss
    for _ in range(int(iters)):
        trial = [t - alpha * g for t, g in zip(theta, grad, strict=True)]
        loss2, mu2, grad2 = loss_grad(trial)
        decrease = math.fsum(
            float(np.vdot(g, a - b)) for g, a, b in zip(grad, mu, mu2, strict=True)
        )
        if loss - loss2 >= 0.5 * alpha * decrease:
            theta, loss, mu, grad, alpha = trial, loss2, mu2, grad2, 1.01 * alpha
        else:
            alpha *= 0.5
    return theta, {"iterations": int(iters), "loss": loss, "initial_loss": first}
