"""NLBP on its own (Bernstein et al. 2017, Alg. 1): a release's E-step at fixed ``theta``.

:func:`nlbp` validates the release through :meth:`~.problem.EMProblem.build` (with
:class:`~.em.CGMEM`'s options) and runs the compiled E-step loop of :mod:`.nlbp` once.

>>> from pgm_dp.models import third_order_chain
>>> from pgm_dp.privacy import PureDP, release_marginals
>>> truth = third_order_chain(4, 2, rng=0)
>>> rel = release_marginals(truth.sample(2000, rng=1), truth, budget=PureDP(1.0), rng=2)
>>> stats, info = nlbp(truth, rel)
>>> info["converged"], round(float(stats[truth.cliques[0]].sum())) == round(rel.total)
(True, True)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...inference.backend import Backend, get_backend
from ...models.mrf import MarkovRandomField
from ...tables import flatten_tables
from .em import CGMEM
from .nlbp import clique_statistics, nlbp_programs, start_statistics
from .problem import EMProblem

__all__ = ["nlbp", "prepare"]


def prepare(mrf, release, damping, smoothing, max_iters, inference, anderson, estep="nlbp"):
    """Validate ``release`` against ``mrf`` and the NLBP settings (``inference``: a backend
    or its name) through :meth:`~.problem.EMProblem.build`; return the compiled E-step loop
    and the release per cell ``(y, b)`` (flat, on the device once): :func:`nlbp`'s
    arguments."""
    inference = get_backend(inference)
    options = CGMEM(
        inference=inference,
        damping=damping,
        smoothing=smoothing,
        nlbp_max_iters=max_iters,
        nlbp_anderson=anderson,
        estep=estep,
    )
    problem = EMProblem.build(release, mrf, options, inference)
    loop, _ = nlbp_programs(
        mrf.domain,
        mrf.cliques,
        mrf.max_cells,
        problem.kinds,
        float(smoothing),
        float(damping),
        int(max_iters),
        inference,
        int(anderson),
        problem.estep,
    )
    return loop, (problem.release.y, problem.release.scale)


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
    loop, cells = prepare(mrf, release, damping, smoothing, max_iters, inference, anderson)
    total = float(release.total)
    if init is None:
        n0 = start_statistics(mrf, total, inference)
    else:
        n0 = jnp.asarray(flatten_tables([init[c] for c in mrf.cliques]), dtype=jnp.float64)
    theta = jnp.asarray(flatten_tables(mrf.log_potentials))
    n, delta, iters, alpha, *_ = loop(theta, cells, n0, jnp.asarray(total), jnp.asarray(tol))
    n = clique_statistics(mrf, n)
    stats = {c: np.asarray(t) for c, t in zip(mrf.cliques, n, strict=True)}
    return stats, {
        "iterations": int(iters),
        "final_damping": float(alpha),
        "delta": float(delta),
        "converged": bool(float(delta) <= tol),
    }
