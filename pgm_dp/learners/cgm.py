"""CGM-EM: EM for collective graphical models with non-linear BP (Bernstein et al. 2017).

The true sufficient statistics ``n`` are latent and the release ``y`` is observed through
the known noise mechanism ``p(y | n)``. The E-step solves the approximate MAP problem

    n* = argmax_{n in M_N}  theta^T n + H(n) + log p(y | n)                       (Eq. 6)

by non-linear belief propagation (NLBP, Alg. 1):
``theta' = theta + grad_n log p(y | n)``, ``n' = N * BP(theta')``,
``n <- (1 - alpha) n + alpha n'`` until ``max |n' - n| / N < tol``; the M-step is the MLE
``argmax_theta theta^T n - N A(theta)`` on the inferred statistics (Alg. 2).

``inference="junction_tree"`` runs exact BP (junction tree), so Problem (6) is solved
exactly; ``inference="loopy_bp"`` runs damped loopy BP (approximate, for models whose
junction tree is too large).

Noise model
-----------
Read from the release. Gaussian noise has the smooth gradient ``(y - n) / sigma^2``. The
Laplace log-density ``-|y - n| / b`` is not differentiable at ``n = y``; we use the
*pseudo-Huber* smoothing ``-sqrt((y - n)^2 + s^2) / b`` with ``s = smoothing * b`` (our
choice; the paper leaves it open). It is concave, within ``s / b`` of the Laplace
log-density everywhere, and its gradient tends to the subgradient ``sign(y - n) / b`` away
from the kink. Discrete Laplace / Gaussian releases use the same formulas with their scale.

What EM maximises, and our two choices
--------------------------------------
Alternating the E-step (6) and the M-step is coordinate ascent on

    F(theta) = max_mu [ log p(y | N mu) - N KL(mu || mu(theta)) ]  -  tau ||theta||^2,

the approximate marginal likelihood of Eq. (5) (``tau = 0`` in the paper). By the envelope
theorem ``grad F / N = mu* - mu(theta) - 2 (tau / N) theta``, with ``mu*`` the E-step
solution: the classical "EM gradient" (the M-step's gradient at the current ``theta``).

1. **A Gaussian prior** ``theta ~ N(0, 1 / (2 tau))`` per entry (MAP-EM; ``prior_precision
   = tau``; the paper has none). Without it the fixed point maximises ``log p(y | N mu)``
   alone (the Stirling approximation drops the volume of ``n``) and over-fits the noise: on
   the chain (T=10, k=10) at N=1e4, epsilon=1, plain EM reaches KL 1.19 after 30
   iterations and climbs to 2.24 after 100, while with ``tau = 1`` it converges to 1.25
   (naive MLE: 2.75). It is a prior on the *total* log-likelihood, independent of ``N``.
   The default ``tau = 3 / pi^2`` (:data:`DEFAULT_PRIOR_PRECISION`) gives each entry the
   variance ``pi^2 / 6`` of the log of an Exp(1) variable, i.e. of the log of one entry of
   a Dirichlet(1) table up to the table's constant (a gauge the MAP sets to least norm):
   the generative prior of Sec. 4.1. On the Fig. 2 grid (``pgm-dp fig2``, 25 releases per
   cell) it lowered CGM's median KL against ``tau = 1`` in 12 of 16 cells and put CGM at or
   below naive MLE in all 400 trials (``tau = 1``: 325; it lost at N=1e5, epsilon >= 0.5,
   e.g. chain, epsilon 0.5: 0.244 against naive 0.198, now 0.189). ``tau = 1`` is better
   only where noise dominates (N=1e4, epsilon = 0.1: chain 5.46 against 5.96, ER 3.92
   against 4.07; within 5% at epsilon = 0.01). On three chain releases at N=1e5, epsilon =
   0.5, ``tau`` = 0.01 / 0.03 / 0.1 / 0.3 / 1 gave KL 0.26-0.29 / 0.22-0.25 / 0.19-0.21 /
   0.18-0.20 / 0.24-0.25 (naive 0.19-0.21). A per-record ``lam = 1e-4`` as in naive MLE
   (``tau = 10`` at N=1e5) over-smooths (epsilon = 1: KL 0.55).
   ``prior_precision=0`` gives the paper's objective.
2. **Solver** ``solver="lbfgs"`` (default) maximises ``F`` by L-BFGS on the EM gradient
   (Jamshidian & Jennrich 1997's quasi-Newton acceleration of EM: same objective, same
   fixed points; each evaluation is one NLBP E-step warm-started from the last one's
   statistics and damping). ``solver="em"`` is Alg. 2 literally; its M-step is the shared
   MLE solver started from NLBP's final ``theta'``, which already solves it when ``tau = 0``
   (``N mu(theta') = n'`` within the NLBP tolerance). Plain EM moves ``theta`` by about
   ``1 / b`` per iteration, so at high noise it needs hundreds of iterations.
Alg. 2 initialises "arbitrarily": ``init="uniform"`` starts from all-zero potentials,
``init="naive"`` from the naive MLE on the projected release, and ``init="auto"`` (default,
our choice) picks naive when the E-step is stiff. The E-step is stiff when the noise is
small next to the counts, measured by the public ``N / b^2`` (``b`` the smallest noise scale:
Laplace ``b``, Gaussian ``sigma``): NLBP's damping must then be about ``b^2 / N`` and an
E-step far from its solution can exhaust ``nlbp_max_iters``, which stalls L-BFGS. On UCI
Adult at epsilon = 2 (``N / b^2`` = 3000) a uniform start stalls after 18 iterations
(held-out log-likelihood -9.10, naive MLE -8.43), a naive start reaches -8.425. ``"auto"``
uses the naive start when ``N / b^2 > 100`` (the uniform start converged in our grid up to
174). In the stiff regime the time goes into NLBP's many BP passes; inexact E-steps
(``nlbp_forcing``, see :class:`CGMEM`) spend them only near the optimum, and Anderson
acceleration of NLBP (``nlbp_anderson``) needs fewer of them per E-step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from .._config import jit_program
from ..inference.junction_tree import build_junction_tree, marginals_and_log_z
from ..inference.loopy_bp import loopy_bp_core
from ..models.mrf import MarkovRandomField
from ..privacy.noise_model import noise_curvature, noise_gradient, noise_log_density
from .anderson import anderson_init, anderson_reset, anderson_step
from .base import Fit, check_release_matches, concat_tables, flatten_tables, unflatten_tables
from .mle import fit_marginals
from .naive_mle import noisy_pseudo_marginals

__all__ = [
    "CGMEM",
    "DEFAULT_PRIOR_PRECISION",
    "nlbp",
    "noise_curvature",
    "noise_gradient",
    "noise_log_density",
]

#: ``tau = 3 / pi^2``: log-potential variance ``pi^2 / 6``, that of the log of an Exp(1) draw.
DEFAULT_PRIOR_PRECISION = 3.0 / np.pi**2
_STIFF = 100.0  # N / b^2 above which init="auto" starts from the naive MLE
_LOOPY_BP = (0.5, 1e-9, 500)  # damping, tolerance, iterations of the inner loopy BP
_LOOSEST = 1e-4  # loosest NLBP tolerance of an inexact E-step


@functools.lru_cache(maxsize=64)
def _programs(domain, cliques, max_cells, kinds, smoothing, damping, max_iters, inference, memory):
    """Jit-compiled NLBP (Alg. 1) and EM objective for one structure and noise family per
    clique (``kinds``). The noise scales and the NLBP tolerance are arguments, so releases
    at other budgets share the programs and an E-step's accuracy can change between calls."""
    jt = build_junction_tree(domain, cliques, max_cells) if inference == "junction_tree" else None
    shapes = tuple(domain.sizes(c) for c in cliques)

    def bp(tables):
        if jt is not None:
            return marginals_and_log_z(jt, cliques, tables)
        res = loopy_bp_core(domain, cliques, *_LOOPY_BP, tables)
        return res.factor_marginals, res.log_z

    def shift(theta, y, n, scales):
        return [
            t + noise_gradient(k, scales[i], smoothing, yc, nc)
            for i, (t, k, yc, nc) in enumerate(zip(theta, kinds, y, n, strict=True))
        ]

    def loop(theta, y, n0, total, tol, scales, alpha0=damping, acc0=None):
        def residual(x):  # F(n) - n on the flat statistics n
            new = bp(shift(theta, y, unflatten_tables(x, shapes), scales))[0]
            return total * concat_tables(new) - x

        def curvature(at):  # noise_curvature at the flat statistics `at`
            n = unflatten_tables(at, shapes)
            c = [
                noise_curvature(k, scales[i], smoothing, yc, nc)
                for i, (k, yc, nc) in enumerate(zip(kinds, y, n, strict=True))
            ]
            return concat_tables(c)

        def cond(state):  # state[2]: max |f| at the checked point
            return (state[2] / total > tol) & (state[4] < max_iters)

        def body(state):
            x, acc, prev, alpha, it, _ = state
            f = residual(x)
            resid = jnp.max(jnp.abs(f))
            # Growth is judged in the curvature-weighted norm sum_i c_i f_i^2, with weights
            # where the last step started: there the damped step is a descent direction.
            c = curvature(acc.x_prev)
            grew = acc.started & (jnp.sum(c * f * f) > jnp.sum(c * acc.f_prev * acc.f_prev))
            accelerated = acc.count > 0
            # Safeguards. A residual that grows after a plain damped step means alpha is too
            # large for the curvature of log p(y | n): halve it (never below 1e-9). One that
            # grows after an accelerated step sends the iteration back to where that step
            # started, with an empty Anderson history. While the residual shrinks, let alpha
            # grow back by 10% (never above the starting value).
            alpha = jnp.where(
                grew & ~accelerated,
                jnp.maximum(alpha / 2, 1e-9),
                jnp.where(grew, alpha, jnp.minimum(alpha * 1.1, damping)),
            )
            back = grew & accelerated
            x, f = jnp.where(back, acc.x_prev, x), jnp.where(back, acc.f_prev, f)
            resid = jnp.where(back, prev, resid)
            acc = anderson_reset(acc, when=grew)
            checked = x  # the point whose residual `delta` reports: the one returned
            x, acc = anderson_step(acc, x, f, alpha)
            return x, acc, resid, alpha, it + 1, checked

        x0 = concat_tables(n0)
        inf = jnp.asarray(jnp.inf)
        # A history carried over from the last E-step keeps its differences (the map has
        # changed little) but forms none across the two maps.
        acc0 = anderson_init(x0, memory) if acc0 is None else acc0._replace(started=False)
        init = (x0, acc0, inf, jnp.asarray(alpha0), 0, x0)
        _, acc, resid, alpha, iters, checked = jax.lax.while_loop(cond, body, init)
        return unflatten_tables(checked, shapes), resid / total, iters, alpha, acc

    def objective(flat_theta, y, n0, last_alpha, total, lam, tol, acc0, scales):  # lam = tau/N
        """``(report, n*, shifted theta', damping, Anderson state)``; ``report`` is
        ``-grad F / N`` followed by ``-F / N``, the NLBP delta and its iterations (one host
        copy for all that the optimiser reads). NLBP starts from ``n0`` and from the last
        E-step's damping regrown by a factor of 2 (the damping that was stable for nearby
        ``theta``)."""
        theta = unflatten_tables(flat_theta, shapes)
        alpha0 = jnp.minimum(2.0 * last_alpha, damping)
        n, delta, iters, alpha, acc = loop(theta, y, n0, total, tol, scales, alpha0, acc0)
        shifted = shift(theta, y, n, scales)
        mu_star, log_z_star = bp(shifted)
        mu, log_z = bp(theta)
        fit = sum(
            noise_log_density(k, scales[i], smoothing, yc, total * m)
            for i, (k, yc, m) in enumerate(zip(kinds, y, mu_star, strict=True))
        )
        kl = log_z - log_z_star
        for a, b, m in zip(shifted, theta, mu_star, strict=True):
            kl = kl + jnp.sum((a - b) * m)
        value = fit / total - kl - lam * jnp.dot(flat_theta, flat_theta)
        grad = concat_tables(mu_star) - concat_tables(mu) - 2.0 * lam * flat_theta
        report = jnp.concatenate([-grad, jnp.stack([-value, delta, iters.astype(grad.dtype)])])
        return report, n, shifted, alpha, acc

    return jit_program(loop), jit_program(objective)


def _setup(mrf, release, damping, smoothing, max_iters, inference, anderson):
    check_release_matches(release, mrf)
    if not 0 < damping <= 1:
        raise ValueError(f"damping (alpha) must be in (0, 1], got {damping}")
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0, got {smoothing}")
    if inference not in ("junction_tree", "loopy_bp"):
        raise ValueError(f"unknown inference {inference!r}")
    if int(anderson) != anderson or anderson < 0:
        raise ValueError(f"anderson (memory) must be an integer >= 0, got {anderson}")
    scales = np.array([float(release.noise[c].scale) for c in mrf.cliques])
    if np.any(scales <= 0):
        raise ValueError("NLBP needs a release with positive noise scale")
    programs = _programs(
        mrf.domain,
        mrf.cliques,
        mrf.max_cells,
        tuple(release.noise[c].kind for c in mrf.cliques),
        float(smoothing),
        float(damping),
        int(max_iters),
        inference,
        int(anderson),
    )
    y = [jnp.asarray(np.asarray(release.noisy[c], dtype=np.float64)) for c in mrf.cliques]
    return programs, y, jnp.asarray(scales)  # on the device once, like y


def _start(mrf, total, inference):
    margs = mrf.marginals() if inference == "junction_tree" else mrf.marginals("loopy_bp")
    return [jnp.asarray(total * np.asarray(margs[c])) for c in mrf.cliques]


def nlbp(
    mrf: MarkovRandomField,
    release,
    *,
    init=None,
    damping: float = 0.5,
    smoothing: float = 1.0,
    tol: float = 1e-7,
    max_iters: int = 2000,
    inference: Literal["junction_tree", "loopy_bp"] = "junction_tree",
    anderson: int = 5,
):
    """Non-linear BP (Alg. 1): approximate MAP sufficient statistics ``n`` given ``y``.

    Returns ``({clique: n_C}, info)`` with ``n_C`` summing to ``N = release.total``.
    ``damping`` is the paper's ``alpha`` (weight of the new BP solution), its starting value:
    the paper leaves the schedule open; we halve ``alpha`` whenever the fixed-point residual
    ``f = n' - n`` grows and let it regrow by 10% per shrinking step (this makes the
    iteration converge when ``log p(y | n)`` is sharply curved, i.e. small noise relative to
    ``N``). Growth is measured in the norm ``sum_i c_i f_i^2`` with ``c = -d^2 log p(y | n) /
    dn^2`` (:func:`noise_curvature`) at the step's starting point: the map's Jacobian is
    ``-N Cov(theta') diag(c)`` with exact BP, so in that norm a small enough damped step
    always shrinks ``f`` (tested; with ``inference="loopy_bp"`` this holds only as far as
    loopy BP's pseudo-marginals behave like marginals). In the max norm it need not: on a
    Fig. 2 chain release at N=1e5, epsilon=1, ``alpha`` fell to its floor, E-steps ran into
    ``max_iters`` and a CGM fit took 50,738 BP passes without converging (with the weighted
    norm: 5,902, converged). The price is more passes where the max norm did not stall:
    over 12 Fig. 2 releases at N=1e5 (chain and ER, epsilon 0.1 / 0.5 / 1) whole fits took
    60,662 BP passes against 104,540 with the max norm, or 53,802 leaving out its one
    stalled fit. ``init`` is the starting statistics (default: ``N`` times the model's
    marginals). Converged when ``max |n' - n| / N <= tol``.

    ``anderson`` (our choice; the paper iterates the damped map as written): the memory of
    the Anderson acceleration of the damped map (:mod:`pgm_dp.learners.anderson`); ``0``
    is Alg. 1 literally. The fixed point is the same, the solution of Problem (6); an
    accelerated step after which the residual grows is undone and the history dropped (a
    plain step's growth halves ``alpha`` as above). The statistics returned are the last
    point whose residual was checked, the one ``delta`` describes. On the chain (T=10,
    k=10), N=1e5, from the naive MLE, memory 5 took 63 / 23 / 6 BP passes against
    188 / 52 / 10 at epsilon = 1 / 0.5 / 0.1 (memory 3: 73 / 27 / 6; 10: 52 / 27 / 6;
    measured with the earlier max-norm safeguard and prior 1). It is not reliably faster
    when the E-step is very stiff: on a three-variable tree with N=4000 (tests'
    ``_tree_release``, three populations), whole CGM fits took 0.07-0.56x the plain passes at
    ``N / b^2`` = 10 and 1,000, but 1.57 / 0.49 / 1.14x at 100,000. Beyond that neither
    iteration is reliable: over 12 populations of that tree, whole fits did not converge
    (``CGMEM`` then warns) in 0 / 1 / 11 of 12 with memory 5 and 0 / 3 / 8 with the plain
    iteration at ``N / b^2`` = 1e5 / 9e5 / 1e7 (noise far below one count).
    """
    (loop, _), y, scales = _setup(mrf, release, damping, smoothing, max_iters, inference, anderson)
    total = float(release.total)
    if init is None:
        n0 = _start(mrf, total, inference)
    else:
        n0 = [jnp.asarray(init[c], dtype=jnp.float64) for c in mrf.cliques]
    n, delta, iters, alpha, _ = loop(
        list(mrf.log_potentials), y, n0, jnp.asarray(total), jnp.asarray(float(tol)), scales
    )
    stats = {c: np.asarray(t) for c, t in zip(mrf.cliques, n, strict=True)}
    return stats, {
        "iterations": int(iters),
        "final_damping": float(alpha),
        "delta": float(delta),
        "converged": bool(float(delta) <= tol),
    }


@dataclass(frozen=True)
class CGMEM:
    """EM for CGMs (Alg. 2) with NLBP E-steps (Alg. 1); see the module docstring.

    ``prior_precision``: ``tau`` of the MAP prior ``tau ||theta||^2``; ``solver``:
    ``"lbfgs"`` (quasi-Newton on the EM objective) or ``"em"`` (Alg. 2 as written);
    ``tol``: stop when the largest entry of the per-record EM gradient
    ``mu* - mu(theta) - 2 (tau / N) theta`` is below it; ``max_iters``: L-BFGS iterations
    or EM maps. ``damping``, ``smoothing``, ``nlbp_tol``, ``nlbp_max_iters``: the E-step's
    (:func:`nlbp`).

    ``nlbp_forcing`` (our choice; the paper runs every E-step to convergence): *inexact
    E-steps*. Far from the optimum the EM gradient is large and an exact E-step is wasted,
    so each E-step stops at ``max(nlbp_tol, min(1e-4, nlbp_forcing * g))``, ``g`` the
    largest entry of the last EM gradient (the forcing-term rule of inexact Newton
    methods); the final point is always re-evaluated at ``nlbp_tol`` and ``converged`` and
    the reported statistics come from that exact E-step. ``0`` gives exact E-steps
    throughout. On ``pgm-dp compare``'s releases (chain, T=10, k=10, N=1e5) ``0.1`` cut the
    BP passes of a whole fit from 17,392 to 5,714 at epsilon = 1 and from 2,671 to 1,478 at
    epsilon = 0.1, at the same optimum (with prior 1 and the max-norm safeguard: 68,035 to
    8,887 at epsilon = 1); ``0.3`` stopped L-BFGS before convergence. If L-BFGS stops early
    on inexact gradients, the fit goes on from there with exact E-steps (on UCI Adult at
    epsilon = 2, ``N / b^2`` = 3000, this cost 15% more BP passes than exact E-steps
    throughout, with prior 1).

    ``nlbp_anderson``: memory of the Anderson acceleration of NLBP (see :func:`nlbp`; ``0``
    iterates Alg. 1's damped map as written). Its history is carried from one E-step to the
    next (the map changes little between nearby ``theta``). On ``pgm-dp compare``'s releases
    (chain, N=1e5) it cut the BP passes of a whole fit from 12,925 to 5,714 at epsilon = 1
    and from 2,206 to 1,478 at epsilon = 0.1, to the same optimum (the counts depend on
    rounding; see the README).

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

    inference: Literal["junction_tree", "loopy_bp"] = "junction_tree"
    prior_precision: float = DEFAULT_PRIOR_PRECISION
    solver: Literal["lbfgs", "em"] = "lbfgs"
    tol: float = 1e-5
    max_iters: int = 1000
    init: Literal["auto", "naive", "uniform"] = "auto"
    damping: float = 0.5
    smoothing: float = 1.0
    nlbp_tol: float = 1e-7
    nlbp_max_iters: int = 5000
    nlbp_forcing: float = 0.1
    nlbp_anderson: int = 5

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        if self.prior_precision < 0 or not np.isfinite(self.prior_precision):
            raise ValueError(
                f"prior_precision must be a finite number >= 0, got {self.prior_precision}"
            )
        if self.solver not in ("lbfgs", "em"):
            raise ValueError(f"solver must be 'lbfgs' or 'em', got {self.solver!r}")
        if not 0 <= self.nlbp_forcing < 1:
            raise ValueError(f"nlbp_forcing must be in [0, 1), got {self.nlbp_forcing}")
        if self.init not in ("auto", "naive", "uniform"):
            raise ValueError(f"init must be 'auto', 'naive' or 'uniform', got {self.init!r}")
        (_, objective), y, scales = _setup(  # validates the release before anything else
            mrf,
            release,
            self.damping,
            self.smoothing,
            self.nlbp_max_iters,
            self.inference,
            self.nlbp_anderson,
        )
        total = float(release.total)
        lam = self.prior_precision / total  # the per-record penalty of the shared MLE solver
        stiff = total / float(np.min(scales)) ** 2 > _STIFF
        if self.init == "naive" or (self.init == "auto" and stiff):
            targets = noisy_pseudo_marginals(release, project=True)
            start = fit_marginals(mrf.replace(None), targets, l2=1e-4).model
        else:
            start = mrf.replace(None)
        shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
        n0 = _start(start, total, self.inference)
        state = {
            "n": n0,
            "acc": anderson_init(concat_tables(n0), self.nlbp_anderson),
            "alpha": jnp.asarray(self.damping),
            "nlbp": 0,
            "capped": False,
            "grad": np.inf,
            "forcing": self.nlbp_forcing,
            "x": None,
        }
        history: list[dict] = []

        def evaluate(flat, exact=False):
            if state["x"] is not None and np.array_equal(flat, state["x"]):
                if not exact or state["tol"] <= self.nlbp_tol:
                    return state["last"]  # the final report re-asks for the last point
            tol = self.nlbp_tol
            if not exact:  # inexact E-step, see the class docstring
                tol = max(tol, min(_LOOSEST, state["forcing"] * state["grad"]))
            # Warm start: the previous E-step's statistics, damping and Anderson history.
            report, n, shifted, alpha, acc = objective(
                np.asarray(flat, dtype=np.float64),
                y,
                state["n"],
                state["alpha"],
                np.float64(total),
                np.float64(lam),
                np.float64(tol),
                state["acc"],
                scales,
            )
            report = np.asarray(report)
            grad, (value, delta, iters) = report[:-3], report[-3:]
            state["acc"], state["n"], state["alpha"] = acc, n, alpha
            state["tol"], state["grad"] = tol, float(np.max(np.abs(grad)))
            state["nlbp"] += int(iters)
            state["capped"] = bool(delta > tol)
            state["x"] = np.array(flat, dtype=np.float64)
            state["last"] = (float(value), grad, shifted)
            return state["last"]

        x = flatten_tables(start.log_potentials)
        if self.solver == "lbfgs":

            def callback(xk):
                history.append({"iteration": len(history), "nlbp_iterations": state["nlbp"]})

            # Inexact E-steps first; if L-BFGS stops early on their gradients (seen on very
            # stiff E-steps), go on from there with exact E-steps.
            for forcing in dict.fromkeys((self.nlbp_forcing, 0.0)):
                state["forcing"] = forcing
                res = scipy.optimize.minimize(
                    lambda v: evaluate(v)[:2],
                    x,
                    jac=True,
                    method="L-BFGS-B",
                    callback=callback,
                    options={
                        "maxiter": self.max_iters - len(history),
                        "gtol": self.tol,
                        "ftol": 0.0,
                        "maxcor": 20,
                    },
                )
                x = res.x
                if len(history) >= self.max_iters:
                    break
                if np.max(np.abs(evaluate(x, exact=True)[1])) <= self.tol:
                    break
        else:
            for it in range(self.max_iters):
                value, grad, shifted = evaluate(x)
                history.append({"iteration": it, "objective": -value, "nlbp": state["nlbp"]})
                if np.max(np.abs(grad)) <= self.tol:
                    break
                # M-step started from NLBP's theta' (exact already when tau = 0).
                targets = {
                    c: np.asarray(t) / total for c, t in zip(mrf.cliques, state["n"], strict=True)
                }
                x = flatten_tables(
                    fit_marginals(
                        mrf, targets, l2=lam, init=mrf.replace(list(shifted))
                    ).model.log_potentials
                )
        value, grad, _ = evaluate(x, exact=True)
        max_grad = float(np.max(np.abs(grad)))
        return Fit(
            model=mrf.replace(unflatten_tables(x, shapes)),
            history=history,
            info={
                "converged": max_grad <= self.tol and not state["capped"],
                "objective": -value,
                "max_gradient": max_grad,
                "iterations": len(history),
                "nlbp_iterations": state["nlbp"],
                "inferred_statistics": {
                    c: np.asarray(t) for c, t in zip(mrf.cliques, state["n"], strict=True)
                },
                "budget": release.budget,
            },
        ).warn_unless_converged("CGMEM")
