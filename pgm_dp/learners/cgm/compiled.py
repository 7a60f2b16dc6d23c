"""CGM-EM's compiled programs: one E-step, and the whole L-BFGS loop (``solver="lbfgs"``).

Both map ``(problem, state)`` to the next state (:class:`~.problem.EMProblem`,
:class:`~.problem.EMState`, pytrees). The loop of :class:`~pgm_dp.learners.cgm.em.CGMEM` —
L-BFGS on the EM objective in the gauge-projected, diagonally scaled coordinates of
:mod:`.conditioning`, each evaluation an E-step (NLBP, Alg. 1 of Bernstein et al. 2017, or
the dual Newton E-step) warm-started from the last one, the inexact E-steps' forcing rule
and the stopping rule (:meth:`~pgm_dp.learners.cgm.em.CGMEM.done`) — runs inside one
``jax.lax.while_loop`` (:func:`pgm_dp.learners.lbfgs.lbfgs_loop`, which carries the state
from one evaluation to the next). The programs are keyed by structure (the objective, i.e.
domain, cliques, backend and noise kinds, the E-step, and the gauge projection); the
release, priors, tolerances and caps are the problem's arrays, so a second fit of the same
structure compiles nothing. The numerics of the objective stay in :mod:`.nlbp`
(``_em_objective``); this module only drives it.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..._config import jit_program
from ...domain import Domain
from ...models.gauge import projection_segments
from ...tables import table_layout
from ..lbfgs import lbfgs_loop
from .problem import gradient_small

__all__ = ["EMPrograms", "direct_programs", "em_programs", "traced_gauge_projector"]

_LOOSEST = 1e-4  # loosest NLBP tolerance of an inexact E-step (as in .em)
_NEWTON_TOL = 1e-10  # E-step tolerance of the dual Newton E-step (as in .em)


class EMPrograms(NamedTuple):
    """The compiled ``(problem, state) -> state`` programs of one structure
    (:func:`em_programs`)."""

    evaluate: object
    run: object


def traced_gauge_projector(domain: Domain, cliques):
    """:func:`~pgm_dp.models.gauge.gauge_projector` in JAX operations (traceable): the
    same orthogonal projection off the gauge directions, for use inside the compiled loop,
    as five gathers and four segment sums over the whole flat vector
    (:func:`~pgm_dp.models.gauge.projection_segments`): a program of the same size for any
    number of cliques."""
    plan = projection_segments(domain, tuple(cliques))
    cells = table_layout(domain, tuple(cliques)).size
    segsum = jax.ops.segment_sum

    def project(x):
        if not plan.s_dst.size:  # nothing shared: the table means alone
            means = segsum(x[plan.m_src], plan.m_dst, len(plan.m_count)) / plan.m_count
            return x - means[plan.cell_mean]
        m = segsum(x[plan.m_src], plan.m_dst, len(plan.m_count)) / plan.m_count
        comp = segsum(plan.c_sign * m[plan.c_src], plan.c_dst, len(plan.s_dst))
        lam = segsum(comp, plan.s_dst, len(plan.divisor)) / plan.divisor
        g = comp - lam[plan.s_dst] * plan.inv_w
        return x - m[plan.cell_mean] - segsum(g[plan.b_src], plan.b_dst, cells)

    return project


@functools.lru_cache(maxsize=32)
def em_programs(objective, domain: Domain, cliques) -> EMPrograms:
    """The compiled ``evaluate`` and ``run`` around ``objective`` (``nlbp_programs``' EM
    objective) for one structure, both ``(problem, state) -> state``
    (:class:`~.problem.EMProblem`, :class:`~.problem.EMState`):

    * ``evaluate``: one E-step at ``state.x``, to the forcing rule's tolerance when
      ``problem.forcing > 0`` (``max(estep_tol, min(1e-4, forcing max |grad|))``, ``grad``
      the last EM gradient), exact otherwise (Newton's to ``min(estep_tol, 1e-10)``);
    * ``run``: L-BFGS (:func:`~pgm_dp.learners.lbfgs.lbfgs_loop`) on the EM objective from
      ``state.x`` in the gauge-projected coordinates scaled by ``problem.zscale``, with
      E-steps as ``evaluate``'s, each warm-started from the last, until the stopping rule
      (:func:`~.problem.gradient_small`) holds or ``problem.max_iters`` outer iterations
      are used in all; the state's E-step is that of the last evaluation (``at``)."""
    project = traced_gauge_projector(domain, cliques)

    def estep(problem, state, theta, projected):
        loose = jnp.maximum(problem.estep_tol, jnp.minimum(_LOOSEST, problem.forcing * state.last))
        newton = problem.estep == "newton"
        exact = jnp.minimum(problem.estep_tol, _NEWTON_TOL) if newton else problem.estep_tol
        etol = jnp.where(problem.forcing > 0, loose, exact)
        ev = objective(theta, problem, state.n, state.alpha, etol, state.acc)
        pgrad = project(ev.grad) if projected else ev.grad
        return state._replace(
            at=theta,
            n=ev.n,
            acc=ev.acc,
            alpha=ev.alpha,
            etol=etol,
            delta=ev.delta,
            ok=ev.ok,
            value=ev.value,
            grad=ev.grad,
            pgrad=pgrad,
            shifted=ev.shifted,
            last=jnp.max(jnp.abs(ev.grad)),
            passes=state.passes + ev.passes,
        )

    return _programs(estep, project)


@functools.lru_cache(maxsize=32)
def direct_programs(objective, domain: Domain, cliques) -> EMPrograms:
    """:func:`em_programs` for ``solver="direct"``: ``objective`` is
    :func:`.direct.direct_objective`'s (no E-step: its value and gradient come from one
    inference pass and its reverse), ``evaluate`` one evaluation at ``state.x`` and ``run``
    the same L-BFGS loop, conditioning and stopping rule
    (on the EM gradient the direct one implies, :func:`~.problem.gradient_small`);
    ``state.n`` is the model's counts ``N mu(theta)``, ``state.passes`` the evaluations."""
    project = traced_gauge_projector(domain, cliques)

    def evaluation(problem, state, theta, projected):
        value, grad, n, ok = objective(theta, problem)
        pgrad = project(grad) if projected else grad
        zero = jnp.zeros((), state.delta.dtype)
        return state._replace(
            at=theta,
            n=n,
            etol=zero,
            delta=zero,
            ok=ok,
            value=value,
            grad=grad,
            pgrad=pgrad,
            shifted=theta,
            last=jnp.max(jnp.abs(grad)),
            passes=state.passes + 1,
        )

    return _programs(evaluation, project, direct=True)


def _programs(evaluation, project, direct: bool = False) -> EMPrograms:
    """``evaluate`` and ``run`` (:func:`em_programs`) around ``evaluation(problem, state,
    theta, projected) -> state``, compiled; ``direct``: the stopping rule reads the direct
    objective's gradient (:func:`~.problem.gradient_small`)."""

    def evaluate(problem, state):
        return evaluation(problem, state, state.x, problem.zscale is not None)

    def run(problem, state):
        scale = problem.zscale

        def value_and_grad(z, st):
            st = evaluation(problem, st, project(z / scale), True)
            return st.value, st.pgrad / scale, st

        def done(_, st):
            return gradient_small(problem, st.n, st.pgrad, direct=direct)

        left = problem.max_iters - state.iterations
        res = lbfgs_loop(
            value_and_grad, scale * project(state.x), (), None, left, aux0=state, done=done
        )
        x = jnp.where(res.iterations > 0, project(res.x / scale), state.x)
        return res.aux._replace(x=x, iterations=state.iterations + res.iterations)

    return EMPrograms(jit_program(evaluate), jit_program(run))
