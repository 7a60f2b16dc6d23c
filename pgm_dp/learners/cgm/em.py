"""CGM-EM: EM for collective graphical models (Bernstein et al. 2017, Alg. 2).

The true sufficient statistics ``n`` are latent and the release ``y`` is observed through
the known noise mechanism ``p(y | n)``. The E-step is NLBP (Alg. 1,
:mod:`pgm_dp.learners.cgm.nlbp`), solving the approximate MAP problem (Eq. 6); the M-step is the
MLE ``argmax_theta theta^T n - N A(theta)`` on the inferred statistics. Alternating them is
coordinate ascent on

    F(theta) = max_mu [ log p(y | N mu) - N KL(mu || mu(theta)) ]  -  tau ||theta||^2
               + beta (u^T theta - A(theta)),

the approximate marginal likelihood of Eq. (5) (``tau = beta = 0`` in the paper) plus a
log-prior, whose gradient is ``N (mu* - mu(theta)) - 2 tau theta + beta (u - mu(theta))``
(envelope theorem; ``mu*`` the E-step solution, ``u`` the uniform distribution's marginals).

Our choices where the paper leaves them open (measurements: ``docs/cgm_em.md``):

1. **A prior** (MAP-EM; without one the fixed point over-fits the noise): the Gaussian
   ``tau ||theta||^2`` (``prior_precision``; ``tau = 3 / pi^2`` gives each log-potential the
   variance ``pi^2 / 6`` of the log of an Exp(1) draw, i.e. of a Dirichlet(1) entry up to
   the table's constant: the generative prior of Sec. 4.1) and/or the conjugate prior
   ``beta (u^T theta - A(theta))`` of the exponential family (Diaconis & Ylvisaker 1979;
   ``pseudo_count``): ``beta`` pseudo-records of the uniform distribution, the hyper-Dirichlet
   of decomposable models. Its pull is bounded in counts: at the fixed point
   ``N mu(theta) - n* = beta (u - mu(theta))``, at most ``beta u_i`` in any cell, where the
   Gaussian prior's ``-2 tau theta_i`` grows without bound as a cell's potential falls.
   By default both: the Gaussian for every release and the conjugate one only where the
   noise swamps the counts (``pseudo_count="auto"``, :meth:`CGMEM.pseudo_records`). There
   the likelihood is nearly flat, and with the Gaussian prior alone the MAP piles the
   records onto the few joint states whose cells drew positive noise, ending worse than the
   uniform model: the Gaussian prices each log-potential, while a collapse adds up
   moderate potentials along the cliques. The conjugate prior prices the model's distance
   ``KL(u || p_theta)`` itself. On tables of more than ``prior_cells`` (100) cells the
   Gaussian prior's pseudo-records are spread as in BDeu (:meth:`CGMEM.prior_precisions`):
   one per cell fills a large sparse table's empty cells with mass the data do not have.
   ``prior_precision=0, pseudo_count=0`` is the paper's objective.
2. **L-BFGS on the EM gradient** (``solver="lbfgs"``, Jamshidian & Jennrich 1997: same
   objective and fixed points), the whole loop with its E-steps and stopping rule one
   compiled program per structure (:mod:`.compiled`), mapping the problem the release is
   read into once (:meth:`.problem.EMProblem.build`) and the solver's state to the next
   state; ``solver="em"`` is Alg. 2 as written. ``solver="direct"``
   (:mod:`.direct`, exact inference only) drops the E-step: without priors EM's fixed
   point maximises ``G(theta) = log p(y | N mu(theta))`` (the same optimum, tested), so it
   maximises ``G`` plus the same log-prior by the same L-BFGS loop, each evaluation one
   inference pass and its reverse. With a prior its optimum differs from ``F``'s: ``G``
   has no KL term, the model's counts carry no sampling error (fits and timings:
   ``docs/design/cgm_em_solver.md``).
3. **The start**: ``init="uniform"`` (zero potentials), ``"naive"`` (the naive MLE) or
   ``"auto"``: the MLE of the release's tables shrunk by one noise scale per cell
   (:func:`.conditioning.shrunk_marginals`), solved loosely. With loopy BP, ``"naive"`` and
   ``"auto"`` start from the Bethe MLE of those tables in closed form. L-BFGS runs on
   gauge-projected, diagonally scaled potentials (:mod:`.conditioning`; same fixed points,
   fewer iterations: ``docs/design/cgm_em_solver.md``).
4. **Inexact E-steps** far from the optimum (``nlbp_forcing``, the forcing-term rule of
   inexact Newton methods); the final point always gets an exact E-step.
5. **Stopping in counts** as well as per record (:meth:`CGMEM.done`): every cell's EM
   gradient within ``count_tol`` standard deviations of its released count (sampling and
   noise), so that large-``N`` fits are not stopped many counts from the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax.numpy as jnp
import numpy as np
from scipy.special import polygamma

from ..._progress import tick
from ...inference.backend import Backend, get_backend
from ...models.mrf import MarkovRandomField
from ...tables import unflatten_tables
from ..base import Fit
from ..mle import fit_marginals
from .compiled import direct_programs, em_programs
from .conditioning import bethe_naive
from .direct import direct_objective
from .nlbp import clique_statistics, nlbp_programs, start_statistics
from .noise import noise_curvature, noise_gradient, noise_log_density
from .problem import EMProblem, EMState, em_init, gradient_small

__all__ = [
    "CGMEM",
    "DEFAULT_PRIOR_PRECISION",
    "EMProblem",
    "EMState",
    "em_init",
    "noise_curvature",
    "noise_gradient",
    "noise_log_density",
]

#: ``tau = 3 / pi^2``: log-potential variance ``pi^2 / 6``, that of the log of an Exp(1) draw.
DEFAULT_PRIOR_PRECISION = 3.0 / np.pi**2
#: Tables with more cells than this get a Dirichlet prior of this many pseudo-records in all
#: (``prior_cells``; :meth:`CGMEM.prior_precisions`): the papers' largest tables (k = 10
#: pairs) keep the generative Dirichlet(1) prior.
DEFAULT_PRIOR_CELLS = 100.0
#: The smallest ``tau`` the spreading gives a cell (unless ``prior_precision`` is smaller):
#: the prior keeps every cell's curvature, which bounds L-BFGS's iterations on large tables.
MIN_SPREAD_PRECISION = 0.01
#: ``a`` of ``pseudo_count="auto"`` where the noise swamps the counts (``b^2 >= N``).
AUTO_PSEUDO_COUNT = 0.1
_START_TOL = 1e-4  # gradient tolerance of init="auto"'s MLE (a start: optimum unchanged)


@dataclass(frozen=True)
class CGMEM:
    """EM for CGMs (Alg. 2) with NLBP E-steps (Alg. 1): a release learner.

    ``prior_precision``: ``tau`` of the Gaussian prior ``tau ||theta||^2``, spread over
    tables of more than ``prior_cells`` cells (:meth:`prior_precisions`; ``solver="em"``
    gives every cell the largest ``tau``); ``pseudo_count``:
    ``a`` of the conjugate prior ``beta (u^T theta - A(theta))``, ``beta = a`` times the
    cells of the largest clique, or ``"auto"``: ``a = 0.1 min(1, b^2 / N)``
    (:meth:`pseudo_records`; module docstring); ``solver``:
    ``"lbfgs"`` (quasi-Newton on the EM objective), ``"em"`` (Alg. 2 as written) or
    ``"direct"`` (quasi-Newton on the noise likelihood at the model's counts, no E-steps;
    module docstring; ``info["inferred_statistics"]`` are then ``N mu(theta)``);
    ``tol``, ``count_tol``: stop when the per-record EM gradient is below ``tol`` and, in
    counts, below ``count_tol`` standard deviations of each cell's released count
    (sampling and noise, :meth:`done`);
    ``max_iters``: L-BFGS iterations or EM maps; ``init``: see the module docstring.
    ``inference``, ``damping``, ``smoothing``, ``nlbp_tol``, ``nlbp_max_iters``,
    ``nlbp_anderson``: the E-step's (:func:`~pgm_dp.learners.cgm.nlbp.nlbp`; ``inference``
    an inference backend or its name, :mod:`pgm_dp.inference.backend`).
    ``nlbp_forcing``: each E-step (NLBP's or Newton's) stops at
    ``max(nlbp_tol, min(1e-4, nlbp_forcing * g))``, ``g`` the largest entry of the last EM
    gradient; ``0`` gives exact E-steps throughout. ``info["converged"]`` is false (and a
    :class:`~pgm_dp.ConvergenceWarning` raised) unless the final, exact E-step converged
    and the EM gradient is below ``tol``.

    Example
    -------
    >>> from pgm_dp.models import third_order_chain
    >>> from pgm_dp.privacy import PureDP, release_marginals
    >>> truth = third_order_chain(4, 2, rng=0)
    >>> release = release_marginals(truth.sample(2000, rng=1), truth, budget=PureDP(1.0), rng=2)
    >>> fit = CGMEM().fit(release, truth)
    >>> fit.info["converged"]
    True
    """

    inference: str | Backend = "junction_tree"
    prior_precision: float = DEFAULT_PRIOR_PRECISION
    prior_cells: float | None = DEFAULT_PRIOR_CELLS
    pseudo_count: float | Literal["auto"] = "auto"
    solver: Literal["direct", "lbfgs", "em"] = "lbfgs"
    tol: float = 1e-5
    count_tol: float = 0.01
    max_iters: int = 3000
    init: Literal["auto", "naive", "uniform"] = "auto"
    damping: float = 0.5
    smoothing: float = 1.0
    nlbp_tol: float = 1e-7
    nlbp_max_iters: int = 5000
    nlbp_forcing: float = 0.1
    nlbp_anderson: int = 5
    estep: Literal["auto", "nlbp", "newton"] = "auto"

    def _check(self) -> Backend:
        """Validate the options; return the inference backend (resolved once per fit: a
        ``ValueError`` for an unknown name)."""
        backend = get_backend(self.inference)
        if self.prior_precision < 0 or not np.isfinite(self.prior_precision):
            raise ValueError(
                f"prior_precision must be a finite number >= 0, got {self.prior_precision}"
            )
        c = self.prior_cells
        if c is not None and (isinstance(c, str) or not c > 0 or not np.isfinite(c)):
            raise ValueError(f"prior_cells must be None or a finite number > 0, got {c!r}")
        a = self.pseudo_count
        if a != "auto" and (isinstance(a, str) or a < 0 or not np.isfinite(a)):
            raise ValueError(f"pseudo_count must be 'auto' or a finite number >= 0, got {a!r}")
        if not self.count_tol > 0:
            raise ValueError(f"count_tol must be > 0, got {self.count_tol}")
        if self.solver not in ("direct", "lbfgs", "em"):
            raise ValueError(f"solver must be 'direct', 'lbfgs' or 'em', got {self.solver!r}")
        if self.solver == "direct" and not backend.exact:
            raise ValueError('solver="direct" needs exact inference (the junction tree)')
        if not 0 <= self.nlbp_forcing < 1:
            raise ValueError(f"nlbp_forcing must be in [0, 1), got {self.nlbp_forcing}")
        if self.init not in ("auto", "naive", "uniform"):
            raise ValueError(f"init must be 'auto', 'naive' or 'uniform', got {self.init!r}")
        if self.estep not in ("auto", "nlbp", "newton"):
            raise ValueError(f"estep must be 'auto', 'nlbp' or 'newton', got {self.estep!r}")
        return backend

    def prior_precisions(self, mrf: MarkovRandomField) -> np.ndarray:
        """``tau`` of each cell (flat, clique by clique) of the Gaussian prior. The default
        ``tau = 3 / pi^2`` is the variance ``psi'(1) = pi^2 / 6`` of the log of a
        Dirichlet(1) entry (module docstring): one pseudo-record per cell. On a table of
        ``K > prior_cells`` cells that prior holds more pseudo-records than a real table's
        cells hold records, and its pull on the many empty cells of a sparse table (about
        ``2 tau |theta_i|`` records each, growing as ``theta_i`` falls) fills them with
        mass the data do not have. There the ``prior_cells`` pseudo-records are spread over
        the table as in BDeu (Heckerman, Geiger & Chickering 1995): Dirichlet(``alpha``),
        ``alpha = prior_cells / K``, whose log-entries have variance ``psi'(alpha)``, so
        ``tau_C = prior_precision * psi'(1) / psi'(alpha)``, at least
        :data:`MIN_SPREAD_PRECISION` (the largest tables' cells would otherwise have almost
        no curvature, and L-BFGS runs into its cap). ``prior_cells=None`` gives every cell
        ``prior_precision``."""
        out = []
        for c in mrf.cliques:
            cells = mrf.domain.size(c)
            tau = self.prior_precision
            if self.prior_cells is not None and cells > self.prior_cells:
                alpha = self.prior_cells / cells
                spread = tau * float(polygamma(1, 1.0) / polygamma(1, alpha))
                tau = max(spread, min(tau, MIN_SPREAD_PRECISION))
            out.append(np.full(cells, tau))
        return np.concatenate(out)

    def pseudo_records(self, mrf: MarkovRandomField, view=None) -> float:
        """``beta`` of the conjugate prior: ``a`` times the cells of ``mrf``'s largest
        clique, so that each cell of that table gets ``a`` records of the uniform
        distribution (smaller tables' cells more). ``a = pseudo_count``, or for ``"auto"``
        ``0.1 min(1, b^2 / N)`` (``b`` the largest noise scale of the release's flat view
        ``view``, :meth:`~pgm_dp.privacy.Measurements.in_order`, public): one tenth of
        a record per cell where one cell's noise exceeds the whole sample's standard
        deviation ``sqrt(N)``, vanishing as the noise shrinks below it (module docstring)."""
        a = self.pseudo_count
        if a == "auto":
            if view is None:
                raise ValueError('pseudo_count="auto" needs the release (its noise scales)')
            scale = float(np.max(view.scales))
            a = AUTO_PSEUDO_COUNT * min(1.0, scale**2 / float(view.total))
        return a * max(mrf.domain.size(c) for c in mrf.cliques)

    def tolerances(self, total: float) -> tuple[float, float]:
        """Per-record tolerances ``(EM gradient, exact E-step)`` for ``N = total`` records:
        ``tol``, and ``nlbp_tol`` tightened to ``count_tol / 10`` counts when ``N`` is large
        (see :meth:`done` for the gradient's tolerance in counts)."""
        return self.tol, min(self.nlbp_tol, self.count_tol / (10.0 * total))

    def done(self, problem: EMProblem, state: EMState) -> bool:
        """Whether the EM gradient at ``state`` meets both criteria
        (:func:`~.problem.gradient_small`): per record below ``tol``, and in counts ``N
        |grad_i|`` below ``count_tol`` standard deviations ``sqrt(1 + n_i + v_i)`` of the
        cell's released count (``n`` the E-step's statistics, ``v_i`` the noise variance:
        ``2 b^2`` Laplace, ``sigma^2`` Gaussian: ``problem.release.variance``): the count
        gradient is the gap between inferred and model counts, and 1 % of the count's own
        error is invisible in the estimate. The noise term spares noise-hidden cells a
        tolerance of hundredths of a record (fewer iterations, same 2-way error:
        ``docs/design/cgm_em_solver.md``); with little noise it is the sampling rule (a
        per-record ``1e-5`` is 10 counts at ``N = 1e6``). Where L-BFGS runs the gradient is
        taken in the directions it moves (gauge-projected, ``state.pgrad``)."""
        direct = self.solver == "direct"
        return bool(gradient_small(problem, state.n, state.pgrad, np, direct))

    def _start(self, problem: EMProblem, mrf: MarkovRandomField, backend):
        """The first ``theta`` (``init``, module docstring), from ``problem.targets``: a
        model, or on the junction tree for ``"naive"`` and ``"auto"`` the MLE's
        :class:`~pgm_dp.learners.mle.MLEResult`, whose marginals at the start come with it
        (no inference program of their own to compile).
        ``"auto"``'s shrunk tables have no zeros, so their MLE is smooth and cheap (a naive
        MLE chases the release's zeros), and lies near CGM's optimum where the noise hides
        many cells: far fewer L-BFGS iterations than a uniform start there
        (``docs/design/cgm_em_solver.md``)."""
        if self.init == "uniform":
            return mrf.replace(None)
        if not backend.exact:  # closed form, any size
            rho = backend.counting_numbers(mrf.domain, mrf.cliques)
            return mrf.replace(bethe_naive(None, mrf, rho, targets=problem.targets))
        shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
        targets = dict(zip(mrf.cliques, unflatten_tables(problem.targets, shapes), strict=True))
        tol = 1e-8 if self.init == "naive" else _START_TOL
        return fit_marginals(mrf.replace(None), targets, l2=1e-4, tol=tol)

    def _initial(self, problem: EMProblem, mrf: MarkovRandomField, backend):
        """The start (:meth:`_start`) and ``N`` times its marginals (flat): NLBP's first
        statistics, read from the start's MLE where there is one."""
        start = self._start(problem, mrf, backend)
        if isinstance(start, MarkovRandomField):
            return start, start_statistics(start, float(problem.total), backend)
        return start.model, jnp.asarray(float(problem.total) * start.marginals)

    def _evaluate(self, programs, problem, state, exact=False) -> EMState:
        """The state after an E-step at ``state.x`` (inexact unless ``exact``), reusing the
        last one when it is at the same point and accurate enough. Where L-BFGS runs, the
        E-step is at the gauge projection of ``x`` (the point itself after any iteration)."""
        if np.array_equal(np.asarray(state.at), np.asarray(state.x)):
            if not exact or float(state.etol) <= float(problem.estep_tol):
                return state
        problem = problem.replace(forcing=jnp.float64(0.0) if exact else problem.forcing)
        if problem.zscale is None:
            return programs.evaluate(problem, state)
        # L-BFGS's program with no iteration left is one E-step at (the projection of) x:
        # the fit compiles one program, not two
        return programs.run(problem.replace(max_iters=state.iterations), state)._replace(at=state.x)

    def _lbfgs(self, programs, problem, state, history):
        """L-BFGS on ``F`` in the conditioned coordinates (:mod:`.conditioning`), as one
        compiled loop (:func:`.compiled.em_programs`): inexact E-steps first; if it stops
        early on their gradients (seen on very stiff E-steps), on from there with exact
        E-steps. Returns the state at the last iterate after an exact E-step there."""
        for forcing in dict.fromkeys((self.nlbp_forcing, 0.0)):
            used = int(state.iterations)
            state = programs.run(problem.replace(forcing=jnp.float64(forcing)), state)
            history.append(
                {"iteration": int(state.iterations), "nlbp_iterations": int(state.passes)}
            )
            tick("cgm", int(state.iterations) - used)
            if int(state.iterations) < self.max_iters:
                state = self._evaluate(programs, problem, state, exact=True)
            if int(state.iterations) >= self.max_iters or self.done(problem, state):
                break
        return state

    def _em(self, programs, problem, state, history, mrf):
        """Alg. 2 as written; each M-step is the shared MLE solver started from NLBP's
        ``theta'`` (which already solves it when ``tau = 0`` and ``beta = 0``); the
        conjugate prior enters it as ``beta`` uniform pseudo-records added to the targets."""
        total, beta = float(problem.total), float(problem.rho * problem.total)
        l2 = float(problem.lam) * total / (total + beta)
        for it in range(self.max_iters):
            state = self._evaluate(programs, problem, state)
            history.append(
                {"iteration": it, "objective": -float(state.value), "nlbp": int(state.passes)}
            )
            tick("cgm")
            if self.done(problem, state):
                break
            stats = clique_statistics(mrf, np.asarray(state.n))
            targets = {  # pseudo-records, spread uniformly
                c: (t + beta / t.size) / (total + beta)
                for c, t in zip(mrf.cliques, stats, strict=True)
            }
            start = mrf.replace(clique_statistics(mrf, np.asarray(state.shifted)))
            fit = fit_marginals(mrf, targets, l2=l2, init=start)
            x = jnp.asarray(np.concatenate([np.ravel(t) for t in fit.model.log_potentials]))
            state = state._replace(x=x)
        return state._replace(iterations=jnp.asarray(len(history)))

    def programs(self, problem: EMProblem, mrf: MarkovRandomField, backend: Backend):
        """The compiled programs of ``problem``'s structure (:func:`.compiled.em_programs`,
        or :func:`.compiled.direct_programs` for ``solver="direct"``)."""
        if self.solver == "direct":
            objective = direct_objective(
                mrf.domain,
                mrf.cliques,
                mrf.max_cells,
                problem.kinds,
                float(self.smoothing),
                backend,
            )
            return direct_programs(objective, mrf.domain, mrf.cliques)
        _, objective = nlbp_programs(
            mrf.domain,
            mrf.cliques,
            mrf.max_cells,
            problem.kinds,
            float(self.smoothing),
            float(self.damping),
            int(self.nlbp_max_iters),
            backend,
            int(self.nlbp_anderson),
            problem.estep,
        )
        return em_programs(objective, mrf.domain, mrf.cliques)

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        """Fit ``mrf``'s potentials to ``release`` (see the class docstring)."""
        backend = self._check()
        budget = release.budget  # what the fit reports; the release is read once, by build
        problem = EMProblem.build(release, mrf, self, backend)
        programs = self.programs(problem, mrf, backend)
        start, n0 = self._initial(problem, mrf, backend)
        theta = np.concatenate([np.ravel(t) for t in start.log_potentials])
        state = em_init(theta, n0, self.nlbp_anderson, self.damping)
        history: list = []
        if self.solver != "em":  # L-BFGS's coordinates: gauge projection and scaling
            mu0 = np.asarray(n0) / float(problem.total)
            problem = problem.conditioned(mu0, direct=self.solver == "direct")
            state = self._lbfgs(programs, problem, state, history)
        else:
            state = self._em(programs, problem, state, history, mrf)
        state = self._evaluate(programs, problem, state, exact=True)
        shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
        stats = clique_statistics(mrf, np.asarray(state.n))
        return Fit(
            model=mrf.replace(unflatten_tables(np.asarray(state.x), shapes)),
            history=history,
            info={
                "converged": self.done(problem, state)
                and bool(state.ok)
                and float(state.delta) <= float(state.etol),
                "objective": -float(state.value),
                "max_gradient": float(state.last),
                "iterations": int(state.iterations),
                "nlbp_iterations": int(state.passes),
                "inferred_statistics": dict(zip(mrf.cliques, stats, strict=True)),
                "budget": budget,
            },
        ).warn_unless_converged("CGMEM")
