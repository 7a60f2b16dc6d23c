"""Non-linear belief propagation (Bernstein et al. 2017, Alg. 1): CGM-EM's E-step.

Given log-potentials ``theta`` and a release ``y`` of the true clique counts ``n`` through
the noise model ``p(y | n)`` (:mod:`pgm_dp.learners.cgm.noise`), NLBP solves the
approximate MAP problem (Eq. 6)

    n* = argmax_{n in M_N}  theta^T n + H(n) + log p(y | n)

by the damped fixed-point iteration ``theta' = theta + grad_n log p(y | n)``,
``n' = N * BP(theta')``, ``n <- (1 - alpha) n + alpha n'``. BP is an inference backend
(:mod:`pgm_dp.inference.backend`): the exact junction tree (``inference="junction_tree"``),
damped loopy BP (``"loopy_bp"``) or its convex, tree-reweighted variant (``"trw_bp"``: a
unique BP fixed point, a smooth EM objective). A backend whose program reads one flat vector
(``Backend.flat``) gets the release and the statistics in that layout, and carries its warm
state (loopy BP's messages) from one call to the next.
Design choices and their measurements: ``docs/cgm_em.md``.

>>> from pgm_dp.models import third_order_chain
>>> from pgm_dp.privacy import PureDP, release_marginals
>>> truth = third_order_chain(4, 2, rng=0)
>>> rel = release_marginals(truth.sample(2000, rng=1), truth, budget=PureDP(1.0), rng=2)
>>> stats, info = nlbp(truth, rel)
>>> info["converged"], round(float(stats[truth.cliques[0]].sum())) == round(rel.total)
(True, True)
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..._config import jit_program
from ...inference.backend import Backend, get_backend
from ...models.mrf import MarkovRandomField
from ...models.tables import concat_tables, flatten_tables, unflatten_tables
from ...privacy.measurements import flat_release
from ..base import check_release_matches
from .anderson import anderson_init, anderson_reset, anderson_step
from .newton import newton_loop
from .noise import flat_noise, noise_log_density

__all__ = ["clique_statistics", "nlbp", "nlbp_programs", "prepare", "start_statistics"]


def clique_statistics(mrf: MarkovRandomField, n) -> list:
    """E-step statistics (per clique, or one flat vector: ``Backend.flat``) as clique
    tables."""
    return unflatten_tables(concat_tables(n), tuple(mrf.domain.sizes(c) for c in mrf.cliques))


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


def _nlbp_loop(bp, noise, shapes, damping, max_iters, memory, warm0=()):
    """Alg. 1 as a ``lax.while_loop``: ``(theta, y, n0, N, tol, scales, alpha0, acc0) ->
    (n, delta, iterations, alpha, Anderson state, *warm)``. ``noise``: :func:`.noise.flat_noise`
    of the structure. The iterate is the flat vector of all cliques' statistics
    (:mod:`pgm_dp.models.tables`): the noise model's gradient and curvature are one
    elementwise kernel each on it, and only BP sees clique tables. The map is Alg. 1's
    (``theta' = theta + grad_n log p(y | n)``, ``n' = N BP(theta')``) cell for cell, so
    its fixed point, the solution of Problem (6), is unchanged. ``warm0``: what ``bp``
    carries from one call to the next (loopy BP: its messages, so each BP starts where the
    last one ended, a few sweeps instead of a cold start's ~100 as ``theta'`` moves little;
    nothing for the junction tree)."""
    cells_of, gradient, curvature = noise

    def loop(theta, y, n0, total, tol, scales, alpha0=damping, acc0=None):
        cells = cells_of(y, scales)  # per-cell release and scales, once per E-step
        flat_theta = concat_tables(theta)

        def body(state):
            inner, warm = state
            shifted = flat_theta + gradient(cells, inner[0])
            new, _, _, *warm = bp(unflatten_tables(shifted, shapes), *warm)
            c = functools.partial(curvature, cells)
            f = total * concat_tables(new) - inner[0]  # F(n) - n on the flat statistics
            return _safeguarded_step(inner, f, c, damping), tuple(warm)

        def cond(state):  # state[0][2]: max |f| at the checked point
            return (state[0][2] / total > tol) & (state[0][4] < max_iters)

        x0 = concat_tables(n0)
        # A history carried over from the last E-step keeps its differences (the map has
        # changed little) but forms none across the two maps.
        acc0 = anderson_init(x0, memory) if acc0 is None else acc0._replace(started=False)
        init = (x0, acc0, jnp.asarray(jnp.inf), jnp.asarray(alpha0), 0, x0)
        inner, warm = jax.lax.while_loop(cond, body, (init, tuple(warm0)))
        _, acc, resid, alpha, iters, checked = inner
        return unflatten_tables(checked, shapes), resid / total, iters, alpha, acc, *warm

    return loop


def _em_objective(bp, noise, loop, kinds, smoothing, shapes, damping, uniform):
    """The EM objective of ``pgm_dp.learners.cgm.em`` around one NLBP E-step (see there);
    ``uniform``: the flat marginals of the uniform distribution (the conjugate prior's)."""

    def objective(flat_theta, y, n0, last_alpha, total, lam, rho, tol, acc0, scales):
        """``(report, n*, shifted theta', damping, Anderson state)``; ``report`` is
        ``-grad F / N`` followed by ``-F / N``, the NLBP delta, its iterations and whether
        both BP runs of ``F`` converged (one host copy). NLBP starts from ``n0`` and the
        last E-step's damping regrown by 2. Priors per record: ``lam = tau / N`` (Gaussian;
        one per cell, or one for all) and ``rho = beta / N`` (conjugate)."""
        theta = unflatten_tables(flat_theta, shapes)
        alpha0 = jnp.minimum(2.0 * last_alpha, damping)
        n, delta, iters, alpha, acc, *warm = loop(theta, y, n0, total, tol, scales, alpha0, acc0)
        grad_n = noise[1](noise[0](y, scales), concat_tables(n))
        shifted = unflatten_tables(flat_theta + grad_n, shapes)
        mu_star, log_z_star, ok, *warm = bp(shifted, *warm)  # loopy: the E-step's messages
        mu, log_z, ok_theta, *_ = bp(theta, *warm)
        fit = sum(
            noise_log_density(k, scales[i], smoothing, yc, total * m)
            for i, (k, yc, m) in enumerate(zip(kinds, y, mu_star, strict=True))
        )
        kl = log_z - log_z_star
        for a, b, m in zip(shifted, theta, mu_star, strict=True):
            kl = kl + jnp.sum((a - b) * m)
        value = fit / total - kl - jnp.dot(flat_theta, lam * flat_theta)
        value = value + rho * (jnp.dot(uniform, flat_theta) - log_z)
        mu = concat_tables(mu)
        grad = concat_tables(mu_star) - mu - 2.0 * lam * flat_theta + rho * (uniform - mu)
        ok = (ok & ok_theta).astype(grad.dtype)
        tail = jnp.stack([-value, delta, iters.astype(grad.dtype), ok])
        report = jnp.concatenate([-grad, tail])
        return report, n, shifted, alpha, acc

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
    """Jit-compiled E-step loop and EM objective for one structure, inference backend
    (``inference``, a :class:`~pgm_dp.inference.backend.Backend`) and noise family per clique
    (``kinds``). Noise scales and the E-step tolerance are arguments, so releases at other
    budgets share the programs and an E-step's accuracy can change between calls.
    ``estep``: ``"nlbp"`` (Alg. 1) or ``"newton"`` (:mod:`.newton`, exact backends only)."""
    bp = inference.program(domain, cliques, max_cells)
    shapes = tuple(domain.sizes(c) for c in cliques)
    uniform = jnp.concatenate([jnp.full(domain.size(c), 1.0 / domain.size(c)) for c in cliques])
    if inference.flat:  # one table of all cells; scales come one per cell
        shapes, kinds = ((sum(domain.size(c) for c in cliques),),), kinds[:1]

    noise = flat_noise(kinds, smoothing, [math.prod(sh) for sh in shapes])
    if estep == "newton":
        loop = newton_loop(bp, kinds, smoothing, shapes, max_iters)
    else:  # warm-started from the last BP's state (loopy BP: messages) within the E-step
        warm0 = inference.warm_start(domain, cliques)
        loop = _nlbp_loop(bp, noise, shapes, damping, max_iters, memory, warm0)
    objective = _em_objective(bp, noise, loop, kinds, smoothing, shapes, damping, uniform)
    return jit_program(loop), jit_program(objective)


def prepare(mrf, release, damping, smoothing, max_iters, inference, anderson, estep="nlbp"):
    """Validate ``release`` against ``mrf`` and the NLBP settings (``inference``: a backend
    or its name); return the compiled programs, the noisy tables and the noise scales (both
    on the device once)."""
    check_release_matches(release, mrf)
    if not 0 < damping <= 1:
        raise ValueError(f"damping (alpha) must be in (0, 1], got {damping}")
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0, got {smoothing}")
    inference = get_backend(inference)
    if int(anderson) != anderson or anderson < 0:
        raise ValueError(f"anderson (memory) must be an integer >= 0, got {anderson}")
    if estep not in ("nlbp", "newton") or (estep == "newton" and not inference.exact):
        raise ValueError(f"estep must be 'nlbp', or 'newton' with exact BP, got {estep!r}")
    view = flat_release(release, mrf.cliques)
    if np.any(view.scales <= 0):
        raise ValueError("NLBP needs a release with positive noise scale")
    kinds = view.kinds
    if inference.flat and len(set(kinds)) > 1:
        raise ValueError(f"NLBP with {inference.name} needs one noise kind for all cliques")
    programs = nlbp_programs(
        mrf.domain,
        mrf.cliques,
        mrf.max_cells,
        kinds,
        float(smoothing),
        float(damping),
        int(max_iters),
        inference,
        int(anderson),
        estep,
    )
    if inference.flat:  # one vector of all cells, and a noise scale per cell
        y, scales = [view.y], view.scale[None, :]
    else:
        y, scales = view.tables(), view.scales
    return programs, [jnp.asarray(t) for t in y], jnp.asarray(scales)


def start_statistics(mrf: MarkovRandomField, total: float, inference: str | Backend) -> list:
    """``N`` times the model's clique marginals: NLBP's default starting statistics (in the
    backend's layout)."""
    inference = get_backend(inference)
    margs = mrf.marginals(inference)
    tables = [total * np.asarray(margs[c]) for c in mrf.cliques]
    if inference.flat:
        return [jnp.asarray(flatten_tables(tables))]
    return [jnp.asarray(t) for t in tables]


def nlbp(
    mrf: MarkovRandomField,
    release,
    *,
    init=None,
    damping: float = 0.5,
    smoothing: float = 1.0,
    tol: float = 1e-7,
    max_iters: int = 2000,
    inference: str | Backend = "junction_tree",
    anderson: int = 5,
):
    """Non-linear BP (Alg. 1): approximate MAP sufficient statistics ``n`` given ``y``.

    Returns ``({clique: n_C}, info)`` with ``n_C`` summing to ``N = release.total``;
    converged when ``max |n' - n| / N <= tol``. ``init``: the starting statistics (default
    ``N`` times the model's marginals). ``damping`` is the paper's ``alpha``, its starting
    value; the paper leaves the schedule open and we choose: halve ``alpha`` whenever the
    residual ``f = n' - n`` grows in the norm ``sum_i c_i f_i^2`` (``c = -d^2 log p(y | n) /
    dn^2``, :func:`~pgm_dp.learners.cgm.noise.noise_curvature`, at the step's start — with
    exact BP the map's Jacobian is ``-N Cov(theta') diag(c)``, so in that norm a small
    enough damped step always shrinks ``f``), and regrow it by 10% per shrinking step.
    ``anderson`` (our choice): memory of the Anderson acceleration of the damped map
    (:mod:`pgm_dp.learners.cgm.anderson`); ``0`` is Alg. 1 literally. Same fixed point; an
    accelerated step after which the residual grows is undone and the history dropped.
    When the noise is far below one count (``N / b^2`` of 1e6 and more) neither iteration
    is reliable: see ``docs/cgm_em.md``.
    """
    inference = get_backend(inference)
    (loop, _), y, scales = prepare(mrf, release, damping, smoothing, max_iters, inference, anderson)
    total = float(release.total)
    if init is None:
        n0 = start_statistics(mrf, total, inference)
    else:
        n0 = [jnp.asarray(init[c], dtype=jnp.float64) for c in mrf.cliques]
        n0 = [concat_tables(n0)] if inference.flat else n0
    theta = list(mrf.log_potentials)
    theta = [concat_tables(theta)] if inference.flat else theta
    n, delta, iters, alpha, *_ = loop(
        theta, y, n0, jnp.asarray(total), jnp.asarray(float(tol)), scales
    )
    n = clique_statistics(mrf, n)
    stats = {c: np.asarray(t) for c, t in zip(mrf.cliques, n, strict=True)}
    return stats, {
        "iterations": int(iters),
        "final_damping": float(alpha),
        "delta": float(delta),
        "converged": bool(float(delta) <= tol),
    }
