"""Private-PGM (``mbi``) mirror descent as a peer release learner (needs the ``bench`` extra).

McKenna, Sheldon & Miklau (2019), "Graphical-model based estimation and inference for
differential privacy", Alg. 1: mirror descent over the marginal polytope on the L2 loss
``sum_C ||(N mu_C - y_C) / s_C||^2 / 2``, with ``s_C`` the noise standard deviation
(Laplace ``b`` gives ``s = sqrt(2) b``). The L2 loss is the Gaussian likelihood: on Laplace
noise at small ``epsilon`` it over-fits the noise, so the KL of the fitted model can *grow*
with the iteration count, while without noise convergence takes ~10^4 iterations. We
therefore report the model at several iteration counts (default 300 / 1000 / 3000).

One run serves all counts: ``MirrorDescent.estimate`` calls ``callback_fn`` after every block
of ``mbi.estimation.CALLBACK_EVERY`` (50) fused steps; a subclass hands the callback the
current potentials (mbi's own documented hook ``_callback_value``) instead of the marginals,
and the potentials are copied out at each requested count. Everything else is mbi's default
(Armijo line search, initial step ``2 / (L N)``, default marginal oracle); ``known_total`` is
the release's ``N``. A warm-up run of 50 steps compiles everything before the clock starts, so
``seconds`` excludes compilation (the warm-up is reported as ``compile_seconds``).

mbi is an optional dependency (``pip install pgm-dp[bench]``); it is imported on use.

Example (not run as a doctest: needs mbi)::

    fit = MirrorDescentMBI().fit(release_marginals(data, truth, budget=PureDP(0.1)), truth)
    fit.model                   # after 3,000 iterations
    fit.info["snapshots"]       # {300: model, 1000: model, 3000: model}
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ..models.mrf import MarkovRandomField
from .base import Fit, check_release_matches

__all__ = [
    "MBI_COLUMNS",
    "MBI_ITERS",
    "MbiFit",
    "MirrorDescentMBI",
    "fit_mbi",
    "to_mbi_measurements",
    "from_mbi_potentials",
]

#: Iteration counts at which mbi is reported (the issue's 300 / 1000 / 3000).
MBI_ITERS = (300, 1000, 3000)
#: The learner names of those fits in the experiments' run tables.
MBI_COLUMNS = tuple(f"mbi{i}" for i in MBI_ITERS)


@dataclass(frozen=True)
class MbiFit:
    """mbi's model after ``iterations`` mirror-descent steps, converted to ours.

    ``seconds``: wall time from the start of the (compiled) run to this checkpoint, excluding
    the time spent copying earlier checkpoints out; ``compile_seconds``: the one-off build of
    the loss and compiled step, shared by all checkpoints of a run; ``potentials``: mbi's own
    ``CliqueVector`` of log-potentials (for checking the conversion).
    """

    iterations: int
    model: MarkovRandomField
    seconds: float
    compile_seconds: float
    potentials: Any = dataclasses.field(repr=False, compare=False)


def _mbi():
    try:
        import mbi
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the Private-PGM baseline needs mbi: pip install 'pgm-dp[bench]'"
        ) from err
    return mbi


def to_mbi_measurements(release) -> tuple[Any, list[Any]]:
    """mbi ``Domain`` and one identity ``LinearMeasurement`` per released clique table.

    Tables are flattened in the clique's own variable order (mbi's ``Factor.datavector``
    order for ``domain.project(clique)``); ``stddev = sqrt(Var)`` of the release's noise.
    """
    mbi = _mbi()
    dom = mbi.Domain(tuple(release.domain.attributes), tuple(release.domain.shape))
    measurements = [
        mbi.LinearMeasurement(
            np.asarray(release.noisy[c], dtype=np.float64).ravel(),
            tuple(c),
            stddev=math.sqrt(release.noise[c].variance),
        )
        for c in release.cliques
    ]
    return dom, measurements


def from_mbi_potentials(potentials, mrf: MarkovRandomField) -> MarkovRandomField:
    """Our model with mbi's log-potentials (``mrf``'s domain and cliques).

    mbi keeps only the maximal measured cliques, each with its own variable order; every mbi
    table is transposed into the order of the model clique with the same variables, and
    model cliques mbi dropped (nested in a larger one) get zero tables. Exact.
    """
    by_set = {frozenset(c): c for c in mrf.cliques}
    tables = {}
    for cl in potentials.cliques:
        ours = by_set.get(frozenset(cl))
        if ours is None:
            raise ValueError(f"mbi clique {cl} is not a clique of the model")
        tables[ours] = np.asarray(potentials[cl].transpose(ours).values, dtype=np.float64)
    return mrf.replace(tables)


@functools.cache
def _potentials_estimator(mbi):
    """``MirrorDescent`` whose callback receives the current potentials."""

    @dataclasses.dataclass(frozen=True)
    class _MirrorDescentPotentials(mbi.estimation.MirrorDescent):
        def _callback_value(self, state, known_total, constraints=()):
            return state.potentials

    return _MirrorDescentPotentials


def fit_mbi(
    release,
    mrf: MarkovRandomField,
    iters: Sequence[int] = MBI_ITERS,
    *,
    stepsize: float | None = None,
) -> list[MbiFit]:
    """Fit mbi's ``MirrorDescent`` to ``release``; one :class:`MbiFit` per count in ``iters``.

    A single run of ``max(iters)`` steps; each count must be a multiple of
    ``mbi.estimation.CALLBACK_EVERY`` (50), where mbi calls back. ``stepsize=None`` is mbi's
    default (line search). See the module docstring.
    """
    check_release_matches(release, mrf)
    mbi = _mbi()
    every = mbi.estimation.CALLBACK_EVERY
    counts = sorted({int(i) for i in iters})
    if not counts or counts[0] < every or any(i % every for i in counts):
        raise ValueError(f"iters must be positive multiples of {every}, got {list(iters)}")
    estimator = _potentials_estimator(mbi)(stepsize=stepsize)
    total = float(release.total)

    start = time.perf_counter()
    dom, measurements = to_mbi_measurements(release)
    estimator.estimate(dom, measurements, known_total=total, iters=every)  # compiles
    compile_seconds = time.perf_counter() - start

    snapshots: list[tuple[int, Any, float]] = []
    step = 0
    excluded = 0.0

    def callback(potentials) -> None:
        nonlocal step, excluded
        step += every
        if step in counts:
            jax.block_until_ready(potentials)
            now = time.perf_counter()
            copied = jax.tree.map(lambda a: np.array(a, copy=True), potentials)
            snapshots.append((step, copied, now - start - excluded))
            excluded += time.perf_counter() - now

    start = time.perf_counter()
    estimator.estimate(dom, measurements, known_total=total, iters=counts[-1], callback_fn=callback)
    return [
        MbiFit(n, from_mbi_potentials(pots, mrf), seconds, compile_seconds, pots)
        for n, pots, seconds in snapshots
    ]


@dataclass(frozen=True)
class MirrorDescentMBI:
    """mbi's ``MirrorDescent`` behind the release-learner contract: ``fit(release, mrf)``.

    One run of ``max(iters)`` steps (:func:`fit_mbi`); ``Fit.model`` is the last checkpoint,
    ``info["snapshots"]`` maps each count in ``iters`` to its model and
    ``info["seconds"]`` maps each column ``mbi<count>`` to the compiled run's time up to
    that checkpoint (the time ``compare`` reports for it).
    """

    iters: tuple[int, ...] = MBI_ITERS
    stepsize: float | None = None

    def __post_init__(self) -> None:
        _mbi()  # without the bench extra: refused when built, before any release or fit

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        fits = fit_mbi(release, mrf, self.iters, stepsize=self.stepsize)
        return Fit(
            model=fits[-1].model,
            history=[{"iteration": f.iterations, "seconds": f.seconds} for f in fits],
            info={
                "snapshots": {f.iterations: f.model for f in fits},
                "seconds": {f"mbi{f.iterations}": f.seconds for f in fits},
                "compile_seconds": fits[-1].compile_seconds,
                "budget": release.budget,
            },
        )
