"""CGM-EM's L-BFGS loop as one compiled program (``solver="lbfgs"``).

The loop of :class:`~pgm_dp.learners.cgm.em.CGMEM` — L-BFGS on the EM objective in the
gauge-projected, diagonally scaled coordinates of :mod:`.conditioning`, each evaluation an
E-step (NLBP, Alg. 1 of Bernstein et al. 2017, or the dual Newton E-step) warm-started from
the last one, the inexact E-steps' forcing rule and the stopping rule
(:meth:`~pgm_dp.learners.cgm.em.CGMEM.done`) — runs inside one ``jax.lax.while_loop``
(:func:`pgm_dp.learners.lbfgs.lbfgs_loop`, which carries the E-step's warm start from one
evaluation to the next). The program is keyed by structure (the compiled objective, i.e.
domain, cliques, backend and noise kinds, and the gauge projection); the release, noise
scales, priors, tolerances and caps are its arguments, so a second fit of the same
structure compiles nothing. The numerics of the objective stay in
:mod:`.nlbp` (``_em_objective``); this module only drives it.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..._config import jit_program
from ...domain import Domain
from ...models.gauge import projection_plan, shared_components, unflat_shared
from ...models.tables import concat_tables, table_layout
from ..lbfgs import lbfgs_loop

__all__ = ["em_lbfgs_program", "traced_gauge_projector"]

_LOOSEST = 1e-4  # loosest NLBP tolerance of an inexact E-step (as in .em)
_NEWTON_TOL = 1e-10  # E-step tolerance of the dual Newton E-step (as in .em)


def traced_gauge_projector(domain: Domain, cliques):
    """:func:`~pgm_dp.models.gauge.gauge_projector` in JAX operations (traceable): the
    same orthogonal projection off the gauge directions, for use inside the compiled
    loop."""
    cliques = tuple(cliques)
    s_cells, s_off, groups, inv_w = projection_plan(domain, cliques)
    layout = table_layout(domain, cliques)
    sizes = layout.sizes
    segment = np.repeat(np.arange(len(sizes)), sizes)
    divisor = np.repeat(inv_w, s_cells)
    components = shared_components

    def project(x):
        means = jax.ops.segment_sum(x, segment, num_segments=len(sizes)) / sizes
        out = x - means[segment]
        parts, total = [], jnp.zeros(int(s_off[-1]))
        for shape, axes, cells, ids in groups:
            comp = components(x, shape, axes, cells)
            rest = tuple(1 + a for a in range(len(shape)) if a not in axes)
            flat = jnp.transpose(comp, (0, *(1 + a for a in axes), *rest)).reshape(len(ids), -1)
            where = s_off[ids][:, None] + np.arange(flat.shape[1])
            total = total.at[where].add(flat)
            parts.append((comp, flat, where))
        lam = total / divisor if total.size else total
        for (shape, axes, cells, ids), (comp, flat, where) in zip(groups, parts, strict=True):
            g = flat - lam[where] / (math.prod(shape) / flat.shape[1])
            back = unflat_shared(g, comp.shape, axes, len(shape))
            back = jnp.broadcast_to(back, (len(ids), *shape)).reshape(len(ids), -1)
            out = out.at[cells].add(-back)
        return out

    return project


@functools.lru_cache(maxsize=32)
def em_lbfgs_program(objective, domain: Domain, cliques):
    """The compiled L-BFGS loop around ``objective`` (``nlbp_programs``' EM objective):
    ``(z0, aux0, y, scales, total, lam, rho, scale, tols, forcing, newton, max_iters,
    floor) -> (z, iterations, aux)`` with ``aux = (n, Anderson state, damping, max |grad|,
    projected grad, E-step passes, grad, (value, delta, its passes, BP ok, its tolerance))``
    of the last E-step, ``tols = (tol, estep_tol, count_tol)`` and ``floor`` the per-cell
    variance floor of the stopping rule in counts (``EMProblem.floor``; see the module
    docstring). With ``max_iters = 0`` and ``forcing = 0`` it is one exact E-step at
    ``z0``: the same program serves the fit's exact evaluations."""
    project = traced_gauge_projector(domain, cliques)

    def run(z0, aux0, y, scales, total, lam, rho, scale, tols, forcing, newton, max_iters, floor):
        tol, estep_tol, count_tol = tols

        def evaluate(z, aux):
            n, acc, alpha, last, _, passes, *_ = aux
            loose = jnp.maximum(estep_tol, jnp.minimum(_LOOSEST, forcing * last))
            exact = jnp.where(newton, jnp.minimum(estep_tol, _NEWTON_TOL), estep_tol)
            etol = jnp.where(forcing > 0, loose, exact)  # inexact E-steps: NLBP and Newton
            theta = project(z / scale)
            report, n, _, alpha, acc = objective(
                theta, y, n, alpha, total, lam, rho, etol, acc, scales
            )
            grad, value, iters = report[:-4], report[-4], report[-2]
            pg = project(grad)
            passes = passes + iters.astype(passes.dtype)
            tail = jnp.concatenate([report[-4:], etol[None]])
            aux = (n, acc, alpha, jnp.max(jnp.abs(grad)), pg, passes, grad, tail)
            return value, pg / scale, aux

        def done(_, aux):
            counts = jnp.maximum(concat_tables(aux[0]), 0.0)
            pg = jnp.abs(aux[4])
            in_counts = total * pg / jnp.sqrt(floor + counts)
            return (jnp.max(pg) <= tol) & (jnp.max(in_counts) <= count_tol)

        res = lbfgs_loop(evaluate, z0, (), None, max_iters, aux0=aux0, done=done)
        return res.x, res.iterations, res.aux

    return jit_program(run)
