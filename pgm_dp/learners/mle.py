"""Maximum likelihood from clique marginals: the one MLE solver of pgm_dp.

Given target clique marginals ``mu_bar`` (true ``n/N``, noisy ``y/N``, projected, or CGM's
inferred statistics), the log-likelihood of ``N`` records is
``f(theta) = sum_C <n_C, theta_C> - N log Z(theta)`` (Bernstein et al. 2017, Sec. 2). We
minimise the per-record, regularised negative log-likelihood

    L(theta) = log Z(theta) - sum_C <mu_bar_C, theta_C> + lam * ||theta||_2^2,

whose gradient is ``mu(theta) - mu_bar + 2 lam theta`` (model marginals from the exact
junction tree, through ``jax.grad`` of ``log Z``). ``lam`` is the paper's ``λ`` of Sec. 3.1 /
Fig. 1(c) on this per-record scale (our choice of normalisation: it makes ``λ`` independent
of ``N``). ``L`` is convex; we minimise it with L-BFGS until the largest gradient entry —
the largest marginal mismatch — is below ``tol``: a convergence criterion, not a fixed
number of epochs. The whole fit (start, L-BFGS with its line search, stopping rule) is one
compiled program per structure (:mod:`pgm_dp.learners.lbfgs`, float64): a second fit of the
same cliques and domain compiles nothing, and :func:`fit_many` fits many target sets of one
structure as one vectorised program.

The same solver is the non-private reference, the naive-MLE learner and CGM-EM's M-step.

Example
-------
>>> from pgm_dp.models import third_order_chain
>>> truth = third_order_chain(5, 3, rng=0)
>>> fit = fit_marginals(truth.replace(None), truth.marginals())
>>> fit.converged and fit.max_gradient <= 1e-8
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._config import jit_program
from .._progress import tick
from ..domain import Clique
from ..errors import DomainError
from ..inference.junction_tree import JunctionTree, marginals_and_log_z, use_stacked
from ..inference.stacked_pass import stacked_flat_marginals
from ..inference.tables import concat_tables
from ..models.mrf import MarkovRandomField
from ..tables import flatten_tables, unflatten_tables
from .lbfgs import lbfgs_loop

__all__ = ["MLEResult", "fit_marginals", "fit_many", "check_marginals"]


class MLEResult(NamedTuple):
    """Result of :func:`fit_marginals`. ``marginals``: the model's clique marginals at the
    result (flat, clique order), read from the final gradient ``mu - target + 2 l2 theta``
    without another inference pass (``None`` from :func:`fit_many`)."""

    model: MarkovRandomField
    objective: float
    iterations: int
    max_gradient: float
    converged: bool
    marginals: np.ndarray | None = None


def check_marginals(
    mrf: MarkovRandomField, marginals: Mapping[Clique, np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Target tables aligned with ``mrf.cliques``; a clear error when cliques or shapes differ."""
    if set(marginals) != set(mrf.cliques):
        missing = set(mrf.cliques) - set(marginals)
        extra = set(marginals) - set(mrf.cliques)
        raise DomainError(
            f"marginals do not match the model's cliques (missing {sorted(missing, key=str)}, "
            f"extra {sorted(extra, key=str)})"
        )
    out = []
    for cl in mrf.cliques:
        t = np.asarray(marginals[cl], dtype=np.float64)
        if t.shape != mrf.domain.sizes(cl):
            raise DomainError(f"table of {cl} has shape {t.shape}, expected {mrf.domain.sizes(cl)}")
        if not np.all(np.isfinite(t)):
            raise DomainError(f"table of {cl} is not finite")
        out.append(t)
    return tuple(out)


def _value_and_grad(jt: JunctionTree, shapes: tuple[tuple[int, ...], ...]):
    """Traceable ``(flat theta, flat target, lam) -> (L, grad L)``; the gradient of
    ``log Z`` is read off the calibrated tree as the model marginals (one forward pass, no
    reverse-mode sweep). On trees the stacked pass takes, the flat vector is read as is (no
    per-clique tables), so the program does not grow with the clique count."""
    stacked = use_stacked(jt)

    def value_and_grad(flat_theta, flat_target, lam):
        if stacked:
            mu, log_z = stacked_flat_marginals(jt, flat_theta)
        else:
            tables = unflatten_tables(flat_theta, shapes)
            margs, log_z = marginals_and_log_z(jt, jt.factor_cliques, tables)
            mu = concat_tables(margs)
        value = log_z - jnp.dot(flat_target, flat_theta) + lam * jnp.dot(flat_theta, flat_theta)
        grad = mu - flat_target + 2.0 * lam * flat_theta
        return value, grad

    return value_and_grad


@functools.lru_cache(maxsize=64)
def _program(jt: JunctionTree, shapes: tuple[tuple[int, ...], ...], batched: bool = False):
    """The whole fit as one compiled program, keyed by structure (junction tree and table
    shapes), not by data: ``(x0, target, lam, tol, max_iters) -> (x, L, grad L, iterations)``
    (:func:`~pgm_dp.learners.lbfgs.lbfgs_loop`). ``batched``: ``x0`` and ``target`` carry a
    leading axis of problems (``jax.vmap``; ``lam``, ``tol``, ``max_iters`` shared)."""
    value_and_grad = _value_and_grad(jt, shapes)

    def run(x0, flat_target, lam, tol, max_iters):
        return tuple(lbfgs_loop(value_and_grad, x0, (flat_target, lam), tol, max_iters))[:4]

    if batched:
        run = jax.vmap(run, in_axes=(0, 0, None, None, None))
    return jit_program(run)


def _check_options(l2: float, tol: float, max_iters: int) -> None:
    if l2 < 0 or not np.isfinite(l2):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2}")
    if not tol >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol}")
    if int(max_iters) != max_iters or max_iters < 0:
        raise ValueError(f"max_iters must be an integer >= 0, got {max_iters}")


def fit_marginals(
    mrf: MarkovRandomField,
    marginals: Mapping[Clique, np.ndarray],
    *,
    l2: float = 0.0,
    tol: float = 1e-8,
    max_iters: int = 2000,
    init: MarkovRandomField | None = None,
) -> MLEResult:
    """Fit the log-potentials of ``mrf``'s cliques to target ``marginals`` (see module doc).

    Args:
        mrf (MarkovRandomField): Structure (domain and cliques); its potentials are the starting
            point unless ``init`` is given.
        marginals (mapping clique → table): Target marginals, each summing to one (not checked:
            pseudo-marginals are allowed).
        l2 (float): ``λ >= 0`` of ``λ ||θ||²`` (per record). With ``λ = 0`` and a zero in the
            targets the MLE does not exist (Bernstein et al. Sec. 3.1) and the solver stops at
            ``max_iters``.
        tol (float): Convergence when ``max |∇L| <= tol``.
    """
    _check_options(l2, tol, max_iters)
    targets = check_marginals(mrf, marginals)
    start = init if init is not None else mrf
    jt = mrf.junction_tree()
    shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
    out = _program(jt, shapes)(
        jnp.asarray(flatten_tables(start.log_potentials)),
        jnp.asarray(flatten_tables(targets)),
        np.float64(l2),
        np.float64(tol),
        np.int64(max_iters),
    )
    x, value, grad, iters = (np.asarray(a) for a in out)
    tick("mle", int(iters))
    mu = np.clip(grad + flatten_tables(targets) - 2.0 * l2 * x, 0.0, None)
    return _result(mrf, shapes, x, value, grad, iters, tol)._replace(marginals=mu)


def _result(mrf, shapes, x, value, grad, iters, tol) -> MLEResult:
    max_grad = float(np.max(np.abs(grad)))
    return MLEResult(
        model=mrf.replace(unflatten_tables(x, shapes)),
        objective=float(value),
        iterations=int(iters),
        max_gradient=max_grad,
        converged=bool(max_grad <= tol),
    )


def fit_many(
    mrf: MarkovRandomField,
    marginals: Sequence[Mapping[Clique, np.ndarray]],
    *,
    l2: float = 0.0,
    tol: float = 1e-8,
    max_iters: int = 2000,
    init: MarkovRandomField | None = None,
) -> list[MLEResult]:
    """:func:`fit_marginals` of each target set of ``marginals`` (all on ``mrf``'s
    cliques), as one program vectorised over them (``jax.vmap`` of the L-BFGS loop; it runs
    until the last problem stops, each problem frozen at its own stopping point). Equal to
    the fits one by one, to rounding."""
    _check_options(l2, tol, max_iters)
    if len(marginals) == 0:
        return []
    targets = np.stack([flatten_tables(check_marginals(mrf, m)) for m in marginals])
    start = init if init is not None else mrf
    x0 = np.broadcast_to(flatten_tables(start.log_potentials), targets.shape)
    jt = mrf.junction_tree()
    shapes = tuple(mrf.domain.sizes(c) for c in mrf.cliques)
    out = _program(jt, shapes, batched=True)(
        jnp.asarray(x0), jnp.asarray(targets), np.float64(l2), np.float64(tol), np.int64(max_iters)
    )
    xs, values, grads, iters = (np.asarray(a) for a in out)
    tick("mle", int(np.max(iters)))
    return [
        _result(mrf, shapes, xs[i], values[i], grads[i], iters[i], tol)
        for i in range(len(marginals))
    ]
