"""A release's flat view: its noisy tables as one vector, with the noise of every cell.

The learners that model a release (CGM-EM's E-step, its conditioning, the Bayesian model)
read it cell by cell in the flat table layout (:mod:`pgm_dp.models.tables`) of a model's
cliques. :func:`flat_release` computes that view once per release and clique order and
keeps it with the release (read-only arrays).

>>> import numpy as np
>>> from pgm_dp import Domain
>>> from pgm_dp.privacy import PureDP, release_marginals
>>> dom = Domain(["A", "B"], [2, 3])
>>> data = np.array([[0, 1], [1, 2], [0, 0]])
>>> rel = release_marginals(data, [("A",), ("A", "B")], dom, budget=PureDP(1.0), rng=0)
>>> view = flat_release(rel)
>>> view.offsets.tolist(), view.scale.tolist()
([0, 2, 8], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
>>> bool(view.laplace.all()), flat_release(rel) is view
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..domain import Clique
from ..errors import DomainError
from ..models.tables import TableLayout, table_layout

__all__ = ["FlatRelease", "flat_release"]


class FlatRelease(NamedTuple):
    """A release in the flat layout of ``cliques``: ``y`` the noisy values (float64);
    per cell the noise ``scale`` (Laplace ``b`` or Gaussian ``sigma``), its ``variance`` and
    whether it is of a Laplace kind (``laplace``); per clique the noise ``kinds`` and
    ``scales``; ``total`` the release's ``N``."""

    cliques: tuple[Clique, ...]
    layout: TableLayout
    y: np.ndarray
    scale: np.ndarray
    variance: np.ndarray
    laplace: np.ndarray
    kinds: tuple[str, ...]
    scales: np.ndarray
    total: float

    @property
    def offsets(self) -> np.ndarray:
        """Where each clique's cells start (and the total last)."""
        return self.layout.offsets

    def tables(self) -> list[np.ndarray]:
        """``y`` as one table per clique (views)."""
        return self.layout.unflatten(self.y)


def flat_release(release, cliques: Sequence[Clique] | None = None) -> FlatRelease:
    """The :class:`FlatRelease` of ``release`` (a :class:`~pgm_dp.privacy.NoisyMarginals`)
    in the order of ``cliques`` (default the release's own; the same set, else a
    :class:`~pgm_dp.errors.DomainError`). Computed once per release and order: the view is
    kept in the release's ``__dict__`` (the frozen release's fields are unchanged)."""
    cliques = tuple(release.cliques) if cliques is None else tuple(map(tuple, cliques))
    cache = release.__dict__.setdefault("_flat_views", {})
    if cliques not in cache:
        if len(cliques) != len(release.cliques) or set(cliques) != set(release.cliques):
            raise DomainError("the cliques must be the release's, in any order")
        cache[cliques] = _flat(release, cliques)
    return cache[cliques]


def _flat(release, cliques: tuple[Clique, ...]) -> FlatRelease:
    layout = table_layout(release.domain, cliques)
    noise = [release.noise[c] for c in cliques]
    scales = np.array([float(m.scale) for m in noise])
    view = FlatRelease(
        cliques=cliques,
        layout=layout,
        y=layout.flatten(release.noisy[c] for c in cliques),
        scale=layout.per_cell(scales),
        variance=layout.per_cell([m.variance for m in noise]),
        laplace=layout.per_cell([m.is_laplace for m in noise]),
        kinds=tuple(m.kind for m in noise),
        scales=scales,
        total=float(release.total),
    )
    for a in (view.y, view.scale, view.variance, view.laplace, view.scales):
        a.flags.writeable = False
    return view
