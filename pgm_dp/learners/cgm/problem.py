"""CGM-EM's problem and state: what one fit's compiled programs read and carry.

:meth:`EMProblem.build` is the only reader of the release: it validates it against the
model and the learner's options and takes the release's own arrays in the model's order
(:attr:`~pgm_dp.privacy.Measurements.arrays`: noisy values, noise scales and variances per
cell of the flat layout, :mod:`pgm_dp.tables`) with, per cell, the priors
(Bernstein et al. 2017's objective plus ours, :mod:`.em`), tolerances and the start's
targets. From there only the problem travels: :class:`EMState` is the solver's state (the
iterate, the E-step's warm start and the last evaluation), and the compiled programs of
:mod:`.compiled` map ``(problem, state)`` to the next state, as ``init``/``step`` functions
over pytrees (the style of numpyro's ``SVI.update`` and blackjax's kernels).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...inference.backend import Backend
from ...models.mrf import MarkovRandomField
from ...privacy.measurements import ReleaseArrays
from .anderson import AndersonState, anderson_init
from .conditioning import diagonal_scale, shrunk_targets

__all__ = ["EMProblem", "EMState", "check_nlbp_options", "em_init", "gradient_small"]

_VERY_STIFF = 1e3  # largest released count / b^2 above which estep="auto" takes Newton


@dataclasses.dataclass(frozen=True)
class EMProblem:
    """One fit's data, a pytree of arrays (``kinds``, ``estep``: static, the compiled
    programs' key). ``release``: the release's own arrays in the model's clique order
    (:attr:`~pgm_dp.privacy.Measurements.arrays`, not copies; no budget or other static
    field of the release, so a fit at another budget compiles nothing): per cell ``y`` the
    noisy value, ``scale`` the noise scale (Laplace ``b``, Gaussian ``sigma``) and
    ``variance`` ``v`` (the stopping rule in counts,
    :meth:`~pgm_dp.learners.cgm.em.CGMEM.done`). Per cell: ``laplace`` whether of a
    Laplace kind, ``lam = tau / N`` the Gaussian prior per
    record (or one for all), ``targets`` the start's tables (:meth:`build`); ``total``
    ``N``, ``rho = beta / N`` the conjugate prior; ``tol``, ``estep_tol``: the per-record
    tolerances of the EM gradient and of an exact E-step, ``count_tol`` that in counts,
    ``forcing`` the inexact E-steps' forcing term, ``max_iters`` the outer iterations;
    ``zscale``: L-BFGS's diagonal scaling (:mod:`.conditioning`; ``None`` for EM's maps).
    ``kinds``: the noise kind per clique; ``estep``: ``"nlbp"`` or ``"newton"``."""

    release: ReleaseArrays
    laplace: np.ndarray
    lam: jax.Array
    targets: np.ndarray
    total: jax.Array
    rho: jax.Array
    tol: jax.Array
    estep_tol: jax.Array
    count_tol: jax.Array
    forcing: jax.Array
    max_iters: jax.Array
    zscale: jax.Array | None = None
    kinds: tuple[str, ...] = ()
    estep: str = "nlbp"

    @classmethod
    def build(cls, release, mrf: MarkovRandomField, options, backend: Backend) -> EMProblem:
        """The problem of fitting ``mrf`` to ``release`` with the learner's ``options`` (a
        :class:`~pgm_dp.learners.cgm.em.CGMEM`) on ``backend`` (resolved once by the
        learner): validates the release before anything else is computed.

        ``estep="auto"`` takes Newton on the dual when the E-step is very stiff and BP is
        exact, NLBP otherwise. Stiff: the public ``max_C max(y_C) / b_C^2 > 1e3``, the
        largest released count over the squared noise scale, where NLBP's damping must be
        smallest (it slows down and then fails). Both E-steps inexact far from the optimum,
        Newton was faster than NLBP above that stiffness and not below it (the timings:
        ``docs/design/cgm_em_solver.md``)."""
        view = release.in_order(mrf.cliques, mrf.domain)
        estep = "nlbp" if options.solver == "direct" else options.estep  # direct: no E-step
        if estep == "auto":  # CGMEM._estep: the stiffness is public (release and scales)
            stiff = float(np.max(view.y / view.scale**2))
            estep = "newton" if stiff > _VERY_STIFF and backend.exact else "nlbp"
        o = options
        check_nlbp_options(o.damping, o.smoothing, o.nlbp_anderson, estep, backend)
        if np.any(view.scales <= 0):
            raise ValueError("NLBP needs a release with positive noise scale")
        total = float(view.total)
        lam = options.prior_precisions(mrf) / total
        if options.solver == "em":  # its M-step's solver takes one l2: the largest
            lam = np.float64(np.max(lam))
        tol, estep_tol = options.tolerances(total)
        return cls(
            release=view.arrays,
            laplace=np.asarray(view.laplace),
            lam=jnp.asarray(lam),
            targets=shrunk_targets(view, shrink=options.init == "auto"),
            total=jnp.float64(total),
            rho=jnp.float64(options.pseudo_records(mrf, view) / total),
            tol=jnp.float64(tol),
            estep_tol=jnp.float64(estep_tol),
            count_tol=jnp.float64(options.count_tol),
            forcing=jnp.float64(options.nlbp_forcing),
            max_iters=jnp.asarray(options.max_iters, dtype=jnp.int64),
            kinds=view.kinds,
            estep=estep,
        )

    def replace(self, **changes) -> EMProblem:
        return dataclasses.replace(self, **changes)

    def conditioned(self, mu: np.ndarray, direct: bool = False) -> EMProblem:
        """The problem with L-BFGS's diagonal scaling at the start marginals ``mu`` (flat;
        :func:`~pgm_dp.learners.cgm.conditioning.diagonal_scale`; ``direct``: that of the
        direct objective)."""
        scale = diagonal_scale(
            mu,
            np.asarray(self.release.scale),
            self.laplace,
            float(self.total),
            np.asarray(self.lam),
            float(self.rho),
            direct,
        )
        return self.replace(zscale=jnp.asarray(scale))


jax.tree_util.register_dataclass(
    EMProblem,
    data_fields=[f.name for f in dataclasses.fields(EMProblem) if f.name not in ("kinds", "estep")],
    meta_fields=["kinds", "estep"],
)


class EMState(NamedTuple):
    """The solver's state (a pytree): ``x`` the iterate ``theta`` (flat) and ``at`` where
    the last E-step ran; that E-step's statistics ``n``, Anderson history ``acc`` and
    damping ``alpha`` (the next E-step's warm start), tolerance ``etol``, residual per
    record ``delta`` and whether its BP runs converged (``ok``); ``value``, ``grad``,
    ``pgrad``, ``shifted``: ``-F / N``, ``-grad F / N`` (``pgrad`` gauge-projected where
    L-BFGS runs) and NLBP's ``theta'`` there; ``last``: ``max |grad|`` (``inf`` before the
    first E-step; the forcing rule); ``passes``, ``iterations``: E-step passes and outer
    iterations so far."""

    x: jax.Array
    at: jax.Array
    n: jax.Array
    acc: AndersonState
    alpha: jax.Array
    etol: jax.Array
    delta: jax.Array
    ok: jax.Array
    value: jax.Array
    grad: jax.Array
    pgrad: jax.Array
    shifted: jax.Array
    last: jax.Array
    passes: jax.Array
    iterations: jax.Array


def em_init(theta, n0, anderson: int, damping: float) -> EMState:
    """The state before the first E-step at ``theta`` (flat), from statistics ``n0``."""
    x = jnp.asarray(theta, dtype=jnp.float64)
    nan = jnp.full_like(x, jnp.nan)
    return EMState(
        x=x,
        at=nan,
        n=jnp.asarray(n0, dtype=jnp.float64),
        acc=anderson_init(x, anderson),
        alpha=jnp.float64(damping),
        etol=jnp.float64(jnp.inf),
        delta=jnp.float64(jnp.inf),
        ok=jnp.asarray(False),
        value=jnp.float64(jnp.nan),
        grad=nan,
        pgrad=nan,
        shifted=x,
        last=jnp.float64(jnp.inf),
        passes=jnp.zeros((), jnp.int64),
        iterations=jnp.zeros((), jnp.int64),
    )


def gradient_small(problem: EMProblem, n, pgrad, xp=jnp, direct: bool = False):
    """Both stopping criteria: the per-record EM gradient ``pgrad`` below ``tol`` and, in
    counts, ``N |grad_i|`` below ``count_tol`` standard deviations ``sqrt(floor_i + n_i)``
    of the cell's released count (:meth:`~pgm_dp.learners.cgm.em.CGMEM.done`). ``xp``: the
    array module (``jax.numpy`` traced, NumPy on the host). ``direct``: ``pgrad`` is the
    direct objective's gradient (:mod:`.direct`, ``n = N mu``), taken to the EM gradient it
    implies to first order: times ``v / (n (1 - n / N) + v)`` per cell (``v`` the noise
    variance), the shrinkage of the E-step's posterior mean towards the model's count."""
    total, tol, count_tol = problem.total, problem.tol, problem.count_tol
    if xp is np:  # host scalars: no device operation
        total, tol, count_tol = float(total), float(tol), float(count_tol)
    grad = xp.abs(xp.asarray(pgrad))
    counts = xp.maximum(xp.asarray(n), 0.0)
    noise = xp.asarray(problem.release.variance)
    if direct:
        grad = grad * noise / (counts * xp.maximum(1.0 - counts / total, 0.0) + noise)
    floor = 1.0 + noise + counts
    in_counts = total * grad / xp.sqrt(floor)
    return (xp.max(grad) <= tol) & (xp.max(in_counts) <= count_tol)


def check_nlbp_options(damping, smoothing, anderson, estep, inference: Backend) -> None:
    """A ``ValueError`` for NLBP settings out of range (``inference``: a backend)."""
    if not 0 < damping <= 1:
        raise ValueError(f"damping (alpha) must be in (0, 1], got {damping}")
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0, got {smoothing}")
    if int(anderson) != anderson or anderson < 0:
        raise ValueError(f"anderson (memory) must be an integer >= 0, got {anderson}")
    if estep not in ("nlbp", "newton") or (estep == "newton" and not inference.exact):
        raise ValueError(f"estep must be 'nlbp', or 'newton' with exact BP, got {estep!r}")
