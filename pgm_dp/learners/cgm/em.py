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
   compiled program per structure (:mod:`.compiled`); ``solver="em"`` is Alg. 2 as written.
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
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import polygamma

from ..._progress import tick
from ...inference.backend import Backend, get_backend
from ...models.mrf import MarkovRandomField
from ...models.tables import concat_tables, flatten_tables, unflatten_tables
from ...privacy.measurements import flat_release
from ..base import Fit
from ..mle import fit_marginals
from ..naive_mle import noisy_pseudo_marginals
from .anderson import AndersonState, anderson_init
from .compiled import em_lbfgs_program
from .conditioning import Reparam, bethe_naive, em_reparam, shrunk_marginals
from .nlbp import clique_statistics, nlbp, prepare, start_statistics
from .noise import noise_curvature, noise_gradient, noise_log_density

__all__ = [
    "CGMEM",
    "DEFAULT_PRIOR_PRECISION",
    "EMProblem",
    "EMState",
    "em_init",
    "em_step",
    "nlbp",
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
_LOOSEST = 1e-4  # loosest NLBP tolerance of an inexact E-step
_NEWTON_TOL = 1e-10  # E-step tolerance of the dual Newton E-step
_VERY_STIFF = 1e3  # largest released count / b^2 above which estep="auto" takes Newton


class EMProblem(NamedTuple):
    """What every E-step of one fit shares: the compiled objective, the release's tables
    and noise scales, ``N``, the per-record priors ``lam = tau / N`` (Gaussian) and
    ``rho = beta / N`` (conjugate, :meth:`CGMEM.pseudo_records`), whether the E-step
    is Newton's on the dual (:mod:`.newton`), the per-record tolerances of the EM
    gradient and of an exact E-step (:meth:`CGMEM.tolerances`), ``reparam``: L-BFGS's
    variable (:mod:`.conditioning`) and ``floor``: ``1 + v_i`` per cell, ``v_i`` the
    release's noise variance in counts (the stopping rule in counts, :meth:`CGMEM.done`)."""

    objective: object
    y: list
    scales: jax.Array
    total: float
    lam: float
    rho: float = 0.0
    newton: bool = False
    tol: float = 1e-5
    estep_tol: float = 1e-7
    reparam: Reparam | None = None
    floor: np.ndarray | float = 1.0


class EMState(NamedTuple):
    """The E-step's warm start and the last evaluation (``x`` ``None`` before the first).

    ``n``, ``acc``, ``alpha``: NLBP's statistics, Anderson history and damping to resume
    from; ``passes``: BP passes so far; ``tol``: the NLBP tolerance of the last E-step and
    ``capped`` whether it stopped before reaching it or a loopy BP run of the objective did
    not converge; ``value``, ``grad``, ``shifted``:
    ``-F / N``, ``-grad F / N`` and NLBP's final ``theta'`` at ``x``.
    """

    n: list
    acc: AndersonState
    alpha: jax.Array
    passes: int = 0
    x: np.ndarray | None = None
    tol: float = np.inf
    capped: bool = False
    value: float = np.nan
    grad: np.ndarray | None = None
    shifted: list | None = None


def em_init(n0: list, anderson: int, damping: float) -> EMState:
    """The state before the first E-step, from starting statistics ``n0``."""
    return EMState(n0, anderson_init(concat_tables(n0), anderson), jnp.asarray(damping))


def em_step(problem: EMProblem, state: EMState, flat: np.ndarray, tol: float) -> EMState:
    """One E-step at ``theta = flat`` with NLBP tolerance ``tol``, warm-started from
    ``state``; returns the new state (pure: ``state`` is not changed)."""
    report, n, shifted, alpha, acc = problem.objective(
        np.asarray(flat, dtype=np.float64),
        problem.y,
        state.n,
        state.alpha,
        np.float64(problem.total),
        np.asarray(problem.lam, dtype=np.float64),
        np.float64(problem.rho),
        np.float64(tol),
        state.acc,
        problem.scales,
    )
    report = np.asarray(report)
    grad, (value, delta, iters, bp_ok) = report[:-4], report[-4:]
    return EMState(
        n=n,
        acc=acc,
        alpha=alpha,
        passes=state.passes + int(iters),
        x=np.array(flat, dtype=np.float64),
        tol=tol,
        capped=bool(delta > tol) or not bp_ok,
        value=float(value),
        grad=grad,
        shifted=shifted,
    )


@dataclass(frozen=True)
class CGMEM:
    """EM for CGMs (Alg. 2) with NLBP E-steps (Alg. 1): a release learner.

    ``prior_precision``: ``tau`` of the Gaussian prior ``tau ||theta||^2``, spread over
    tables of more than ``prior_cells`` cells (:meth:`prior_precisions`; ``solver="em"``
    gives every cell the largest ``tau``); ``pseudo_count``:
    ``a`` of the conjugate prior ``beta (u^T theta - A(theta))``, ``beta = a`` times the
    cells of the largest clique, or ``"auto"``: ``a = 0.1 min(1, b^2 / N)``
    (:meth:`pseudo_records`; module docstring); ``solver``:
    ``"lbfgs"`` (quasi-Newton on the EM objective) or ``"em"`` (Alg. 2 as written);
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
    solver: Literal["lbfgs", "em"] = "lbfgs"
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

    def _check(self) -> None:
        get_backend(self.inference)  # a ValueError for an unknown name
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
        if self.solver not in ("lbfgs", "em"):
            raise ValueError(f"solver must be 'lbfgs' or 'em', got {self.solver!r}")
        if not 0 <= self.nlbp_forcing < 1:
            raise ValueError(f"nlbp_forcing must be in [0, 1), got {self.nlbp_forcing}")
        if self.init not in ("auto", "naive", "uniform"):
            raise ValueError(f"init must be 'auto', 'naive' or 'uniform', got {self.init!r}")
        if self.estep not in ("auto", "nlbp", "newton"):
            raise ValueError(f"estep must be 'auto', 'nlbp' or 'newton', got {self.estep!r}")

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

    def pseudo_records(self, mrf: MarkovRandomField, release=None) -> float:
        """``beta`` of the conjugate prior: ``a`` times the cells of ``mrf``'s largest
        clique, so that each cell of that table gets ``a`` records of the uniform
        distribution (smaller tables' cells more). ``a = pseudo_count``, or for ``"auto"``
        ``0.1 min(1, b^2 / N)`` (``b`` the release's largest noise scale, public): one tenth
        of a record per cell where one cell's noise exceeds the whole sample's standard
        deviation ``sqrt(N)``, vanishing as the noise shrinks below it (module docstring)."""
        a = self.pseudo_count
        if a == "auto":
            if release is None:
                raise ValueError('pseudo_count="auto" needs the release (its noise scales)')
            scale = max(float(release.noise[c].scale) for c in release.cliques)
            a = AUTO_PSEUDO_COUNT * min(1.0, scale**2 / float(release.total))
        return a * max(mrf.domain.size(c) for c in mrf.cliques)

    def tolerances(self, total: float) -> tuple[float, float]:
        """Per-record tolerances ``(EM gradient, exact E-step)`` for ``N = total`` records:
        ``tol``, and ``nlbp_tol`` tightened to ``count_tol / 10`` counts when ``N`` is large
        (see :meth:`done` for the gradient's tolerance in counts)."""
        return self.tol, min(self.nlbp_tol, self.count_tol / (10.0 * total))

    def done(self, problem: EMProblem, state: EMState, projected=None) -> bool:
        """Whether the EM gradient at ``state`` meets both criteria: per record below
        ``tol``, and in counts ``N |grad_i|`` below ``count_tol`` standard deviations
        ``sqrt(1 + n_i + v_i)`` of the cell's released count (``n`` the E-step's
        statistics, ``v_i`` the noise variance: ``2 b^2`` Laplace, ``sigma^2`` Gaussian;
        ``problem.floor`` is ``1 + v``): the count gradient is the gap between inferred and
        model counts, and 1 % of the count's own error is invisible in the estimate. The
        noise term spares noise-hidden cells a tolerance of hundredths of a record (fewer
        iterations, same 2-way error: ``docs/design/cgm_em_solver.md``);
        with little noise it is the sampling rule (a per-record ``1e-5`` is 10 counts at
        ``N = 1e6``). With a ``reparam`` the gradient is taken in the directions L-BFGS
        moves (``projected``: that gradient, when the caller has it already)."""
        rp = problem.reparam
        if projected is None:
            projected = state.grad if rp is None else rp.project(state.grad)
        grad = np.abs(projected)
        counts = np.maximum(flatten_tables(state.n), 0.0)
        in_counts = problem.total * grad / np.sqrt(problem.floor + counts)
        return bool(np.max(grad) <= problem.tol and np.max(in_counts) <= self.count_tol)

    def _estep(self, release) -> str:
        """The E-step method: ``"auto"`` takes Newton on the dual when the E-step is very
        stiff and BP is exact, NLBP otherwise. Stiff: the public ``max_C max(y_C) / b_C^2 >
        1e3``, the largest released count over the squared noise scale, where NLBP's damping
        must be smallest (it slows down and then fails). Both E-steps inexact far from the
        optimum, Newton was faster than NLBP above that stiffness and not below it (the
        timings: ``docs/design/cgm_em_solver.md``)."""
        if self.estep != "auto":
            return self.estep
        stiff = max(
            float(np.max(release.noisy[c])) / float(release.noise[c].scale) ** 2
            for c in release.cliques
        )
        return "newton" if stiff > _VERY_STIFF and get_backend(self.inference).exact else "nlbp"

    def _start(self, release, mrf: MarkovRandomField) -> MarkovRandomField:
        """The first ``theta`` (``init``, module docstring). ``"auto"``'s shrunk tables have no
        zeros, so their MLE is smooth and cheap (a naive MLE chases the release's zeros), and
        lies near CGM's optimum where the noise hides many cells: far fewer L-BFGS
        iterations than a uniform start there (``docs/design/cgm_em_solver.md``)."""
        if self.init == "uniform":
            return mrf.replace(None)
        backend = get_backend(self.inference)
        if not backend.exact:  # closed form, any size
            rho = backend.counting_numbers(mrf.domain, mrf.cliques)
            return mrf.replace(bethe_naive(release, mrf, rho))
        if self.init == "naive":
            targets = noisy_pseudo_marginals(release, project=True)
            return fit_marginals(mrf.replace(None), targets, l2=1e-4).model
        targets = shrunk_marginals(release)
        return fit_marginals(mrf.replace(None), targets, l2=1e-4, tol=_START_TOL).model

    def _evaluate(self, problem, state, flat, forcing, exact=False) -> EMState:
        """The state after an E-step at ``flat`` (inexact unless ``exact``), reusing the
        last one when it is at the same point and accurate enough."""
        if state.x is not None and np.array_equal(flat, state.x):
            if not exact or state.tol <= problem.estep_tol:
                return state
        tol = problem.estep_tol
        if not exact and forcing > 0:  # NLBP and Newton alike (class docstring)
            last = np.inf if state.grad is None else float(np.max(np.abs(state.grad)))
            tol = max(tol, min(_LOOSEST, forcing * last))
        elif problem.newton:  # quadratic convergence: an exact Newton E-step is cheap
            tol = min(tol, _NEWTON_TOL)
        return em_step(problem, state, flat, tol)

    def _lbfgs(self, problem, state, x, history, mrf):
        """L-BFGS on ``F`` in ``problem.reparam``'s coordinates, as one compiled loop
        (:mod:`.compiled`): inexact E-steps first; if it stops early on their gradients
        (seen on very stiff E-steps), on from there with exact E-steps (the same program,
        which also makes the exact E-steps in between). Returns
        ``(theta, state at theta after an exact E-step, iterations)``."""
        used = 0
        for forcing in dict.fromkeys((self.nlbp_forcing, 0.0)):
            x, state, iters = self._compiled(problem, mrf, state, x, forcing, self.max_iters - used)
            used += iters
            history.append({"iteration": used, "nlbp_iterations": state.passes})
            tick("cgm", iters)
            if used < self.max_iters:
                state = self._compiled(problem, mrf, state, x, 0.0, 0)[1]  # exact E-step at x
            if used >= self.max_iters or self.done(problem, state):
                break
        return x, state, used

    def _compiled(self, problem, mrf, state, x, forcing, max_iters):
        """``(theta, state, iterations)`` after the compiled loop from ``x``
        (:func:`.compiled.em_lbfgs_program`); ``state`` holds the last E-step."""
        rp = problem.reparam
        program = em_lbfgs_program(problem.objective, mrf.domain, mrf.cliques)
        last = np.inf if state.grad is None else float(np.max(np.abs(state.grad)))
        aux0 = (state.n, state.acc, state.alpha, last, np.zeros(x.size), 0, np.zeros(x.size))
        z, iters, aux = program(
            jnp.asarray(rp.to_z(x)),
            jax.tree_util.tree_map(jnp.asarray, (*aux0, np.zeros(5))),
            problem.y,
            problem.scales,
            np.float64(problem.total),
            np.asarray(problem.lam, dtype=np.float64),
            np.float64(problem.rho),
            jnp.asarray(rp.scale),
            tuple(np.float64(t) for t in (problem.tol, problem.estep_tol, self.count_tol)),
            np.float64(forcing),
            np.bool_(problem.newton),
            np.int64(max_iters),
            np.broadcast_to(np.asarray(problem.floor, dtype=np.float64), x.shape),
        )
        n, acc, alpha, _, _, passes, grad, tail = aux
        value, delta, _, bp_ok, tol = np.asarray(tail)
        x = rp.to_theta(np.asarray(z)) if int(iters) else x
        state = EMState(
            n, acc, alpha, state.passes + int(passes), x, float(tol),
            bool(delta > tol) or not bp_ok, float(value), np.asarray(grad),
        )  # fmt: skip
        return x, state, int(iters)

    def _em(self, problem, state, x, history, mrf):
        """Alg. 2 as written; each M-step is the shared MLE solver started from NLBP's
        ``theta'`` (which already solves it when ``tau = 0`` and ``beta = 0``); the
        conjugate prior enters it as ``beta`` uniform pseudo-records added to the targets."""
        for it in range(self.max_iters):
            state = self._evaluate(problem, state, x, self.nlbp_forcing)
            history.append({"iteration": it, "objective": -state.value, "nlbp": state.passes})
            tick("cgm")
            if self.done(problem, state):
                break
            beta = problem.rho * problem.total  # pseudo-records, spread uniformly
            stats = clique_statistics(mrf, state.n)
            targets = {
                c: (np.asarray(t) + beta / t.size) / (problem.total + beta)
                for c, t in zip(mrf.cliques, stats, strict=True)
            }
            start = mrf.replace(clique_statistics(mrf, state.shifted))
            l2 = problem.lam * problem.total / (problem.total + beta)
            fit = fit_marginals(mrf, targets, l2=l2, init=start)
            x = flatten_tables(fit.model.log_potentials)
        return x, state, len(history)

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        """Fit ``mrf``'s potentials to ``release`` (see the class docstring)."""
        self._check()
        estep = self._estep(release)
        (_, objective), y, scales = prepare(  # validates the release before anything else
            mrf,
            release,
            self.damping,
            self.smoothing,
            self.nlbp_max_iters,
            self.inference,
            self.nlbp_anderson,
            estep,
        )
        total = float(release.total)
        rho = self.pseudo_records(mrf, release) / total
        lam = self.prior_precisions(mrf) / total
        if self.solver == "em":  # its M-step's solver takes one l2: the largest (see class)
            lam = float(np.max(lam))
        floor = 1.0 + flat_release(release, mrf.cliques).variance
        problem = EMProblem(
            objective, y, scales, total, lam, rho, estep == "newton", *self.tolerances(total),
            floor=floor,
        )  # fmt: skip
        start = self._start(release, mrf)
        state = em_init(
            start_statistics(start, total, self.inference), self.nlbp_anderson, self.damping
        )
        if self.solver == "lbfgs":  # L-BFGS's coordinates: gauge projection and scaling
            mu = np.asarray(concat_tables(state.n)) / total
            problem = problem._replace(reparam=em_reparam(release, mrf, mu, lam, rho))
        x, history = flatten_tables(start.log_potentials), []
        driver = self._lbfgs if self.solver == "lbfgs" else self._em
        x, state, iterations = driver(problem, state, x, history, mrf)
        state = self._evaluate(problem, state, x, 0.0, exact=True)
        max_grad = float(np.max(np.abs(state.grad)))
        shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
        return Fit(
            model=mrf.replace(unflatten_tables(x, shapes)),
            history=history,
            info={
                "converged": self.done(problem, state) and not state.capped,
                "objective": -state.value,
                "max_gradient": max_grad,
                "iterations": iterations,
                "nlbp_iterations": state.passes,
                "inferred_statistics": {
                    c: np.asarray(t)
                    for c, t in zip(mrf.cliques, clique_statistics(mrf, state.n), strict=True)
                },
                "budget": release.budget,
            },
        ).warn_unless_converged("CGMEM")
