"""CGM-EM: EM for collective graphical models with non-linear BP (Bernstein et al. 2017).

The true sufficient statistics ``n`` are latent and the release ``y`` is observed through
the known noise mechanism ``p(y | n)``. The E-step solves the approximate MAP problem

    n* = argmax_{n in M_N}  theta^T n + H(n) + log p(y | n)                       (Eq. 6)

by non-linear belief propagation (NLBP, Alg. 1):
``theta' = theta + grad_n log p(y | n)``, ``n' = N * BP(theta')``,
``n <- (1 - alpha) n + alpha n'`` until ``max |n' - n| / N < tol``; the M-step is the MLE
``argmax_theta theta^T n - N A(theta)`` on the inferred statistics, by the shared solver
:func:`pgm_dp.learners.mle.fit_marginals` (Alg. 2).

``inference="junction_tree"`` runs exact BP (junction tree): for the model's clique family
the variational problem (6) is then solved exactly (the E-step is exact for any model whose
junction tree fits in memory). ``inference="loopy_bp"`` runs damped loopy BP (approximate,
for models whose junction tree is too large).

The noise model is read from the release: Gaussian noise has the smooth gradient
``(y - n) / sigma^2``. The Laplace log-density ``-|y - n| / b`` is not differentiable at
``n = y``; we use the *pseudo-Huber* smoothing ``-sqrt((y - n)^2 + s^2) / b`` with
``s = smoothing * b`` (our choice; the paper leaves it open): it is concave, agrees with the
Laplace log-density up to ``s / b`` everywhere, and its gradient
``(y - n) / (b sqrt((y - n)^2 + s^2))`` tends to the subgradient ``sign(y - n) / b`` away
from the kink. The discrete Laplace / Gaussian releases use the same formulas with their
scale (their log-pmf has the same shape on the integers).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from ..inference.junction_tree import build_junction_tree, marginals_and_log_z
from ..inference.loopy_bp import loopy_bp_core
from ..models.mrf import MarkovRandomField
from .base import Fit, check_release_matches
from .mle import fit_marginals
from .naive_mle import noisy_pseudo_marginals

__all__ = ["CGMEM", "nlbp", "noise_gradient"]


def noise_gradient(kind: str, scale: float, smoothing: float, y, n):
    """``d/dn log p(y | n)`` elementwise (Laplace kinds: pseudo-Huber smoothed, see module)."""
    r = y - n
    if kind in ("laplace", "discrete_laplace"):
        s = smoothing * scale
        return r / (scale * jnp.sqrt(r * r + s * s))
    return r / (scale * scale)


@functools.lru_cache(maxsize=64)
def _nlbp_fn(
    domain, cliques, max_cells, noise, smoothing, damping, tol, max_iters, inference, bp_options
):
    """Jit-compiled NLBP for one structure and noise model (Alg. 1), as a while loop."""
    jt = build_junction_tree(domain, cliques, max_cells) if inference == "junction_tree" else None

    def bp_marginals(tables):
        if jt is not None:
            margs, _ = marginals_and_log_z(jt, cliques, tables)
            return margs
        return loopy_bp_core(domain, cliques, *bp_options, tables).factor_marginals

    def run(theta, y, n0, total):
        def step(n):
            shifted = [
                t + noise_gradient(k, s, smoothing, yc, nc)
                for t, (k, s), yc, nc in zip(theta, noise, y, n, strict=True)
            ]
            return [total * m for m in bp_marginals(shifted)]

        def cond(state):
            _, delta, _, _, it = state
            return (delta > tol) & (it < max_iters)

        def body(state):
            n, _, prev, alpha, it = state
            new = step(n)
            resid = jnp.max(
                jnp.stack([jnp.max(jnp.abs(a - b)) for a, b in zip(new, n, strict=True)])
            )
            # Safeguard: a growing fixed-point residual means alpha is too large for the
            # curvature of log p(y | n): halve it (never below 1e-9); while the residual
            # shrinks, let it grow back by 10% (never above the starting value).
            alpha = jnp.where(
                resid > prev, jnp.maximum(alpha / 2, 1e-9), jnp.minimum(alpha * 1.1, damping)
            )
            n = [(1 - alpha) * a + alpha * b for a, b in zip(n, new, strict=True)]
            return n, resid / total, resid, alpha, it + 1

        init = (list(n0), jnp.asarray(jnp.inf), jnp.asarray(jnp.inf), jnp.asarray(damping), 0)
        n, delta, _, alpha, iters = jax.lax.while_loop(cond, body, init)
        return n, delta, iters, alpha

    return jax.jit(run)


def nlbp(
    mrf: MarkovRandomField,
    release,
    *,
    init=None,
    damping: float = 0.5,
    smoothing: float = 0.1,
    tol: float = 1e-7,
    max_iters: int = 2000,
    inference: Literal["junction_tree", "loopy_bp"] = "junction_tree",
    bp_damping: float = 0.5,
    bp_tol: float = 1e-9,
    bp_max_iters: int = 500,
):
    """Non-linear BP (Alg. 1): approximate MAP sufficient statistics ``n`` given ``y``.

    Returns ``({clique: n_C}, info)`` with ``n_C`` summing to ``N = release.total``.
    ``damping`` is the paper's ``alpha`` (weight of the new BP solution), its starting value:
    the paper leaves the schedule open; we halve ``alpha`` whenever the fixed-point residual
    ``max |n' - n|`` grows and let it regrow by 10% per shrinking step (a safeguard that
    makes the iteration converge when the noise is small relative to ``N`` and
    ``log p(y | n)`` is sharply curved). ``init`` is the starting
    statistics (default: ``N`` times the model's marginals). Converged when
    ``max |n' - n| / N <= tol``.
    """
    check_release_matches(release, mrf)
    if not 0 < damping <= 1:
        raise ValueError(f"damping (alpha) must be in (0, 1], got {damping}")
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0, got {smoothing}")
    if inference not in ("junction_tree", "loopy_bp"):
        raise ValueError(f"unknown inference {inference!r}")
    noise = tuple((release.noise[c].kind, float(release.noise[c].scale)) for c in mrf.cliques)
    if any(s <= 0 for _, s in noise):
        raise ValueError("NLBP needs a release with positive noise scale")
    bp_options = (float(bp_damping), float(bp_tol), int(bp_max_iters))
    fn = _nlbp_fn(
        mrf.domain,
        mrf.cliques,
        mrf.max_cells,
        noise,
        float(smoothing),
        float(damping),
        float(tol),
        int(max_iters),
        inference,
        bp_options,
    )
    total = float(release.total)
    if init is None:
        margs = mrf.marginals() if inference == "junction_tree" else mrf.marginals("loopy_bp")
        init = {c: total * np.asarray(margs[c]) for c in mrf.cliques}
    y = [jnp.asarray(np.asarray(release.noisy[c], dtype=np.float64)) for c in mrf.cliques]
    n0 = [jnp.asarray(init[c], dtype=jnp.float64) for c in mrf.cliques]
    n, delta, iters, alpha = fn(list(mrf.log_potentials), y, n0, jnp.asarray(total))
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

    ``em_tol``: stop when the inferred marginals ``n / N`` change by less than this (max
    abs) between EM maps; ``em_max_iters`` bounds the number of EM maps.
    ``init="uniform"`` (default; Alg. 2 initialises "arbitrarily") starts from all-zero
    potentials, ``init="naive"`` from naive MLE on the projected noisy marginals. ``l2`` is
    passed to the M-step solver.
    """

    inference: Literal["junction_tree", "loopy_bp"] = "junction_tree"
    damping: float = 0.5
    smoothing: float = 0.1
    nlbp_tol: float = 1e-7
    nlbp_max_iters: int = 2000
    em_tol: float = 1e-5
    em_max_iters: int = 50
    l2: float = 0.0
    mle_tol: float = 1e-8
    init: Literal["naive", "uniform"] = "uniform"

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        check_release_matches(release, mrf)
        total = float(release.total)
        if self.init == "naive":
            targets = noisy_pseudo_marginals(release, project=True)
            model = fit_marginals(
                mrf.replace(None), targets, l2=max(self.l2, 1e-4), tol=self.mle_tol
            ).model
        else:
            model = mrf.replace(None)
        history: list[dict] = []
        state = {"stats": None}

        def em_map(current: MarkovRandomField) -> tuple[MarkovRandomField, float]:
            new_stats, info = nlbp(
                current,
                release,
                init=state["stats"],
                damping=self.damping,
                smoothing=self.smoothing,
                tol=self.nlbp_tol,
                max_iters=self.nlbp_max_iters,
                inference=self.inference,
            )
            old = state["stats"]
            # An E-step that hit its iteration cap may have barely moved: never count it as
            # evidence of convergence.
            change = (
                np.inf
                if old is None or not info["converged"]
                else max(float(np.max(np.abs(new_stats[c] - old[c]))) for c in mrf.cliques) / total
            )
            state["stats"] = new_stats
            res = fit_marginals(
                current,
                {c: new_stats[c] / total for c in mrf.cliques},
                l2=self.l2,
                tol=self.mle_tol,
                init=current,
            )
            history.append(
                {
                    "iteration": len(history),
                    "marginal_change": change,
                    "nlbp_iterations": info["iterations"],
                    "mle_objective": res.objective,
                }
            )
            return res.model, change

        converged = False
        while len(history) < self.em_max_iters and not converged:
            model, change = em_map(model)
            converged = change < self.em_tol
        return Fit(
            model=model,
            history=history,
            info={
                "converged": converged,
                "em_iterations": len(history),
                "inferred_statistics": state["stats"],
                "budget": release.budget,
            },
        )
