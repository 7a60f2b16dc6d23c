"""Non-linear belief propagation (Bernstein et al. 2017, Alg. 1): CGM-EM's E-step.

Given log-potentials ``theta`` and a release ``y`` of the true clique counts ``n`` through
the noise model ``p(y | n)`` (:mod:`pgm_dp.learners.cgm.noise`), NLBP solves the
approximate MAP problem (Eq. 6)

    n* = argmax_{n in M_N}  theta^T n + H(n) + log p(y | n)

by the damped fixed-point iteration ``theta' = theta + grad_n log p(y | n)``,
``n' = N * BP(theta')``, ``n <- (1 - alpha) n + alpha n'``. BP is an inference backend
(:mod:`pgm_dp.inference.backend`): the exact junction tree (``inference="junction_tree"``),
damped loopy BP (``"loopy_bp"``) or its convex, tree-reweighted variant (``"trw_bp"``: a
unique BP fixed point, a smooth EM objective). Every backend program reads and returns the
flat vector of all cliques' cells (:mod:`pgm_dp.tables`), the E-step's one layout,
and carries its warm state (loopy BP's messages) from one call to the next.
Design choices and their measurements: ``docs/cgm_em.md``.
The standalone E-step at fixed ``theta``, :func:`~.estep.nlbp`, is in :mod:`.estep`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..._config import jit_program
from ...inference.backend import Backend
from ...models.mrf import MarkovRandomField
from ...privacy.noise import LAPLACE_KINDS
from ...tables import flatten_tables, unflatten_tables
from .anderson import anderson_init, anderson_reset, anderson_step
from .newton import newton_loop
from .noise import flat_noise

__all__ = [
    "Evaluation",
    "clique_statistics",
    "nlbp_programs",
    "start_statistics",
]


def clique_statistics(mrf: MarkovRandomField, n) -> list:
    """E-step statistics (the flat vector) as clique tables."""
    return unflatten_tables(n, tuple(mrf.domain.sizes(c) for c in mrf.cliques))


def _safeguarded_step(state, f, curvature, damping):
    """One Anderson-accelerated damped step with the safeguards of :func:`nlbp`.

    A residual that grows (in the curvature-weighted norm, weights where the last step
    started) after a plain damped step halves ``alpha`` (floor 1e-9); after an accelerated
    step it sends the iterate back to where that step started, with an empty history. While
    the residual shrinks, ``alpha`` regrows by 10% up to ``damping``.
    """
    x, acc, prev, alpha, it, _ = state
    resid = jnp.max(jnp.abs(f))
    c = curvature(acc.x_prev)
    grew = acc.started & (jnp.sum(c * f * f) > jnp.sum(c * acc.f_prev * acc.f_prev))
    accelerated = acc.count > 0
    alpha = jnp.where(
        grew & ~accelerated,
        jnp.maximum(alpha / 2, 1e-9),
        jnp.where(grew, alpha, jnp.minimum(alpha * 1.1, damping)),
    )
    back = grew & accelerated
    x, f = jnp.where(back, acc.x_prev, x), jnp.where(back, acc.f_prev, f)
    resid = jnp.where(back, prev, resid)
    acc = anderson_reset(acc, when=grew)
    checked = x  # the point whose residual `resid` reports: the one returned
    x, acc = anderson_step(acc, x, f, alpha)
    return x, acc, resid, alpha, it + 1, checked


def _nlbp_loop(bp, noise, damping, max_iters, memory, warm0=()):
    """Alg. 1 as a ``lax.while_loop``: ``(theta, cells, n0, N, tol, alpha0, acc0) ->
    (n, delta, iterations, alpha, Anderson state, *warm)``, all on the flat layout
    (:mod:`pgm_dp.tables`; ``cells = (y, b)``: the release and its noise scale per
    cell). ``noise``: :func:`.noise.flat_noise` of the structure: the noise model's gradient
    and curvature are one elementwise kernel each on the flat statistics. The map is Alg.
    1's (``theta' = theta + grad_n log p(y | n)``, ``n' = N BP(theta')``) cell for cell, so
    its fixed point, the solution of Problem (6), is unchanged. ``warm0``: what ``bp``
    carries from one call to the next (loopy BP: its messages, so each BP starts where the
    last one ended, a few sweeps instead of a cold start's ~100 as ``theta'`` moves little;
    nothing for the junction tree)."""
    gradient, curvature, _ = noise

    def loop(theta, cells, n0, total, tol, alpha0=damping, acc0=None):
        def body(state):
            inner, warm = state
            new, _, _, *warm = bp(theta + gradient(cells, inner[0]), *warm)
            c = functools.partial(curvature, cells)
            f = total * new - inner[0]  # F(n) - n on the flat statistics
            return _safeguarded_step(inner, f, c, damping), tuple(warm)

        def cond(state):  # state[0][2]: max |f| at the checked point
            return (state[0][2] / total > tol) & (state[0][4] < max_iters)

        # A history carried over from the last E-step keeps its differences (the map has
        # changed little) but forms none across the two maps.
        acc0 = anderson_init(n0, memory) if acc0 is None else acc0._replace(started=False)
        init = (n0, acc0, jnp.asarray(jnp.inf), jnp.asarray(alpha0), 0, n0)
        inner, warm = jax.lax.while_loop(cond, body, (init, tuple(warm0)))
        _, acc, resid, alpha, iters, checked = inner
        return checked, resid / total, iters, alpha, acc, *warm

    return loop


class Evaluation(NamedTuple):
    """One evaluation of the EM objective (flat vectors, traced): ``value``, ``grad``:
    ``-F / N`` and ``-grad F / N``; ``n``, ``shifted``: the E-step's statistics and
    ``theta'``; ``alpha``, ``acc``: NLBP's damping and Anderson state to resume from;
    ``delta``, ``passes``: the E-step's residual per record and BP passes; ``ok``: whether
    both BP runs of ``F`` converged."""

    value: jax.Array
    grad: jax.Array
    n: jax.Array
    shifted: jax.Array
    alpha: jax.Array
    acc: object
    delta: jax.Array
    passes: jax.Array
    ok: jax.Array


def _em_objective(bp, noise, loop, damping, uniform):
    """The EM objective of ``pgm_dp.learners.cgm.em`` around one E-step (see there);
    ``uniform``: the flat marginals of the uniform distribution (the conjugate prior's)."""
    gradient, _, log_density = noise

    def objective(theta, problem, n0, last_alpha, tol, acc0) -> Evaluation:
        """The :class:`Evaluation` at ``theta`` (flat) of ``problem``
        (:class:`~pgm_dp.learners.cgm.problem.EMProblem`: the release per cell, ``N`` and
        the per-record priors ``lam = tau / N``, one per cell or one for all, and ``rho =
        beta / N``); the E-step starts from ``n0``, the last damping regrown by 2 and
        ``acc0`` and stops at ``tol``."""
        cells, total = (problem.release.y, problem.release.scale), problem.total
        alpha0 = jnp.minimum(2.0 * last_alpha, damping)
        n, delta, iters, alpha, acc, *warm = loop(theta, cells, n0, total, tol, alpha0, acc0)
        shifted = theta + gradient(cells, n)
        mu_star, log_z_star, ok, *warm = bp(shifted, *warm)  # loopy: the E-step's messages
        mu, log_z, ok_theta, *_ = bp(theta, *warm)
        kl = log_z - log_z_star + jnp.dot(shifted - theta, mu_star)
        lam, rho = problem.lam, problem.rho
        value = log_density(cells, total * mu_star) / total - kl - jnp.dot(theta, lam * theta)
        value = value + rho * (jnp.dot(uniform, theta) - log_z)
        grad = mu_star - mu - 2.0 * lam * theta + rho * (uniform - mu)
        return Evaluation(-value, -grad, n, shifted, alpha, acc, delta, iters, ok & ok_theta)

    return objective


@functools.lru_cache(maxsize=64)
def nlbp_programs(
    domain,
    cliques,
    max_cells,
    kinds,
    smoothing,
    damping,
    max_iters,
    inference,
    memory,
    estep="nlbp",
):
    """The E-step loop (jit-compiled) and the EM objective (traceable, for the compiled
    programs of :mod:`.compiled`) for one structure, inference backend (``inference``, a
    :class:`~pgm_dp.inference.backend.Backend`) and noise family per clique (``kinds``).
    Noise scales and the E-step tolerance are arguments, so releases at other budgets share
    the programs and an E-step's accuracy can change between calls. ``estep``: ``"nlbp"``
    (Alg. 1) or ``"newton"`` (:mod:`.newton`, exact backends only)."""
    bp = inference.program(domain, cliques, max_cells)
    sizes = [domain.size(c) for c in cliques]
    uniform = np.repeat([1.0 / k for k in sizes], sizes)  # a constant: no eager op per size
    noise = flat_noise(kinds, smoothing, sizes)
    if estep == "newton":
        laplace = np.repeat([k in LAPLACE_KINDS for k in kinds], sizes)
        loop = newton_loop(bp, laplace, smoothing, max_iters)
    else:  # warm-started from the last BP's state (loopy BP: messages) within the E-step
        warm0 = inference.warm_start(domain, cliques)
        loop = _nlbp_loop(bp, noise, damping, max_iters, memory, warm0)
    return jit_program(loop), _em_objective(bp, noise, loop, damping, uniform)


def start_statistics(mrf: MarkovRandomField, total: float, inference: Backend) -> jax.Array:
    """``N`` times the model's clique marginals (flat): NLBP's default starting
    statistics."""
    margs = mrf.marginals(inference)
    return jnp.asarray(total * flatten_tables([margs[c] for c in mrf.cliques]))
