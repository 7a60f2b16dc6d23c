"""AIM's release from its measurements, and the estimators AIM refits after each round.

AIM may measure a marginal more than once (and a marginal and its subsets). Its
measurements are one :class:`~pgm_dp.privacy.Measurements` value, appended to each round
(repeated cliques kept apart); :func:`merged_release` is its
:meth:`~pgm_dp.privacy.Measurements.merged` view, one table per clique: for a clique
measured several times the inverse-variance weighted mean of its noisy tables (a
sufficient statistic of the Gaussian measurements; for Laplace ones the best linear
unbiased combination), with the variance ``1 / sum(1 / v_i)`` recorded as a Gaussian (or
Laplace) :class:`~pgm_dp.privacy.NoiseModel` of that variance. The total ``N`` is never
read from the data: it is the inverse-variance weighted mean of the noisy tables' sums
(:meth:`~pgm_dp.privacy.Measurements.estimated_total`, post-processing), or a public
number the caller gives.

An *estimator* is a callable ``(release, cliques, domain) -> model`` where the model has
``.marginal(q)`` (a :class:`~pgm_dp.models.MarkovRandomField` is also read in one batch,
:mod:`pgm_dp.inference.queries`). It may accept the keywords
``previous`` (the last round's model, for a warm start) and ``final`` (the last fit, after
the loop). :class:`NaiveMLEEstimator` (the default) and :class:`LearnerEstimator` (any
release learner, e.g. CGM-EM) are provided. AIM itself estimates with Private-PGM (mirror
descent on the noise-weighted L2 loss); ours is the naive MLE of Bernstein et al. 2017,
Sec. 3.1, on the merged tables, which weighs each clique's table alike whatever its noise.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain import Domain
from ..privacy.budget import Budget
from ..privacy.measurements import Measurements
from .mle import fit_tables

__all__ = [
    "merged_release",
    "NaiveMLEEstimator",
    "LearnerEstimator",
    "call_estimator",
    "refine_noise_weighted",
    "iteration_limit",
]


def merged_release(
    measurements: Measurements,
    *,
    budget: Budget,
    mechanism: str,
    total: float | None = None,
    sensitivity: float = 1.0,
) -> Measurements:
    """All ``measurements`` as one release (module docstring): cliques in the order first
    measured, repeated ones merged (:meth:`~pgm_dp.privacy.Measurements.merged`); ``N``
    estimated unless a public ``total`` is given; ``budget`` is recorded as the release's
    cost and ``sensitivity`` that of each table, measured on its own (1, or ``K`` when one
    person owns up to ``K`` records)."""
    given = total is not None
    return measurements.merged(
        budget=budget,
        mechanism=mechanism,
        sensitivity=float(sensitivity),
        total=float(total) if given else measurements.estimated_total(),
        total_source="given" if given else "estimate",
        total_noise=None,
    )


def call_estimator(estimator: Callable, release, domain: Domain, previous, final: bool):
    """``estimator(release, release.cliques, domain)`` with ``previous=``/``final=`` passed
    when its signature takes them."""
    try:
        params = inspect.signature(estimator).parameters
    except (TypeError, ValueError):
        params = {}
    any_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {}
    if any_kw or "previous" in params:
        kwargs["previous"] = previous
    if any_kw or "final" in params:
        kwargs["final"] = final
    return estimator(release, release.cliques, domain, **kwargs)


#: The fewest iterations :func:`iteration_limit` allows a fit.
MIN_ITERS = 10


def iteration_limit(
    mrf, max_iters: int, max_cells_iters: float | None, least: int = MIN_ITERS
) -> int:
    """``max_iters``, or fewer on a large model: ``max(least, max_cells_iters // S)`` for a
    junction tree of ``S`` cells (``None``: no limit), so that the cost of ``S``-cell
    calibrations is bounded. ``S`` depends on the model's cliques and the public domain only.

    Args:
        mrf: the :class:`~pgm_dp.models.MarkovRandomField` to fit.
        max_iters: the solver's own limit.
        max_cells_iters: cells calibrated in all (``None``: ``max_iters``).
        least: the fewest iterations allowed (:data:`MIN_ITERS`).
    """
    if max_cells_iters is None:
        return int(max_iters)
    cells = sum(mrf.domain.size(c) for c in mrf.junction_tree().cliques)
    return int(min(max_iters, max(least, max_cells_iters // max(cells, 1))))


@dataclass(frozen=True)
class NaiveMLEEstimator:
    """Naive MLE (Bernstein et al. 2017, Sec. 3.1): the clique tables ``y_C / N``, projected
    onto the simplex, as target marginals of an MRF on the measured cliques, with the
    ``λ ||θ||²`` ridge ``l2``. Warm-started from the previous round's potentials; inside
    the loop the solver stops at ``loop_tol`` (the largest marginal mismatch), the final
    fit at ``tol``. ``backend="numpy"`` (default) solves with a NumPy junction tree
    (:func:`~.mle.fit_tables`, nothing to compile); ``"jax"`` with the package's solver
    :func:`~pgm_dp.learners.mle.fit_marginals` (one compilation per junction tree).
    ``max_cells_iters``: when given, a fit on a junction tree of ``S`` cells stops after at
    most ``max(MIN_ITERS, max_cells_iters // S)`` iterations (each calibrates the tree), so
    that a round's cost is bounded whatever the model's size (:func:`iteration_limit`)."""

    l2: float = 1e-4
    tol: float = 1e-8
    loop_tol: float = 1e-5
    max_iters: int = 2000
    backend: str = "numpy"
    max_cells_iters: float | None = None

    def __post_init__(self) -> None:
        if self.backend not in ("numpy", "jax"):
            raise ValueError(f"backend must be 'numpy' or 'jax', got {self.backend!r}")
        if self.max_cells_iters is not None and not self.max_cells_iters > 0:
            raise ValueError(f"max_cells_iters must be positive, got {self.max_cells_iters!r}")

    def __call__(self, release, cliques, domain, *, previous=None, final=False):
        from ..learners.mle import fit_marginals
        from ..learners.naive_mle import noisy_pseudo_marginals
        from ..models.mrf import MarkovRandomField

        mrf = MarkovRandomField(domain, cliques)
        init = None
        if isinstance(previous, MarkovRandomField) and previous.domain == domain:
            old = previous.potentials
            init = mrf.replace({c: old[c] for c in mrf.cliques if c in old})
        targets = noisy_pseudo_marginals(release, project=True)
        iters = iteration_limit(mrf, self.max_iters, self.max_cells_iters)
        opts = dict(l2=self.l2, tol=self.tol if final else self.loop_tol, max_iters=iters)
        if self.backend == "jax":
            return fit_marginals(mrf, targets, init=init, **opts).model
        start = None if init is None else [np.asarray(t) for t in init.log_potentials]
        tables, _ = fit_tables(
            domain, mrf.cliques, [targets[c] for c in mrf.cliques], init=start, **opts
        )
        return mrf.replace(tables)


@dataclass(frozen=True)
class LearnerEstimator:
    """Any release learner (``fit(release, mrf) -> Fit``, e.g. ``CGMEM()``) as an AIM
    estimator: the model of ``learner.fit(release, MarkovRandomField(domain, cliques))``."""

    learner: Any

    def __call__(self, release, cliques, domain):
        from ..models.mrf import MarkovRandomField

        return self.learner.fit(release, MarkovRandomField(domain, cliques)).model


def refine_noise_weighted(model, release, iters: int):
    """``model`` (an MRF on the release's cliques, e.g. the naive MLE) refined by ``iters``
    steps of Private-PGM's mirror descent on the noise-weighted L2 loss
    (:func:`~.mle.mirror_descent`, McKenna et al. 2019, Alg. 1), warm-started from it: the
    estimate AIM itself makes. Post-processing of ``release``. Returns ``(model, info)``."""
    from .mle import mirror_descent

    cliques = [tuple(c) for c in model.cliques]
    tables, info = mirror_descent(
        model.domain,
        cliques,
        [release.noisy[c] for c in cliques],
        [math.sqrt(release.noise[c].variance) for c in cliques],
        float(release.total),
        init=[np.asarray(t, dtype=np.float64) for t in model.log_potentials],
        iters=iters,
    )
    return model.replace(tables), info
