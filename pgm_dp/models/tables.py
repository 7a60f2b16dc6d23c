"""The flat table layout: a model's clique tables as one vector.

Every clique's table is raveled (C order, axes in the clique's order) and the tables are
concatenated in clique order. It is the optimisers' parameter vector (the learners'
log-potentials), the layout of stacked loopy BP and of the stacked junction-tree pass
(:mod:`pgm_dp.inference`), and that of a release's flat view
(:func:`pgm_dp.privacy.measurements.flat_release`). Table ``i`` holds the cells
``offsets[i]:offsets[i + 1]``.

This module sits below :mod:`pgm_dp.inference` in the layers (``pgm_dp.LAYERS``): it needs
only the domain, so inference, models, learners and the Bayesian layer share it.

>>> import numpy as np
>>> layout = TableLayout(((2, 3), (3,)))
>>> layout.offsets.tolist(), layout.size
([0, 6, 9], 9)
>>> flat = flatten_tables([np.ones((2, 3)), np.arange(3)])
>>> [t.shape for t in layout.unflatten(flat)]
[(2, 3), (3,)]
>>> layout.per_cell([10.0, 20.0]).tolist()
[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 20.0, 20.0, 20.0]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..domain import Clique, Domain

__all__ = [
    "TableLayout",
    "concat_tables",
    "flatten_tables",
    "table_layout",
    "table_offsets",
    "unflatten_tables",
]


def flatten_tables(tables) -> np.ndarray:
    """Concatenate clique tables into one float64 NumPy vector (host data)."""
    return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])


def concat_tables(tables) -> jax.Array:
    """Concatenate tables into one flat float64 JAX vector (traceable; the inverse of
    :func:`unflatten_tables`)."""
    return jnp.concatenate([jnp.ravel(jnp.asarray(t, dtype=jnp.float64)) for t in tables])


def unflatten_tables(flat, shapes) -> list:
    """Split a flat vector (NumPy or JAX, traceable) back into tables of ``shapes``."""
    out, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(flat[start : start + size].reshape(shape))
        start += size
    return out


def table_offsets(sizes: Sequence[int]) -> np.ndarray:
    """``[0, s_0, s_0 + s_1, ...]``: where each table of ``sizes`` cells starts, and the
    total last (int64)."""
    return np.cumsum([0, *(int(s) for s in sizes)], dtype=np.int64)


@dataclass(frozen=True)
class TableLayout:
    """The flat layout of tables of ``shapes`` (one per clique, in clique order)."""

    shapes: tuple[tuple[int, ...], ...]

    @functools.cached_property
    def sizes(self) -> np.ndarray:
        """Cells per table (int64)."""
        return np.array([math.prod(s) for s in self.shapes], dtype=np.int64)

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        """:func:`table_offsets` of the tables: table ``i`` is ``offsets[i]:offsets[i+1]``."""
        return table_offsets(self.sizes)

    @property
    def size(self) -> int:
        """Total number of cells."""
        return int(self.offsets[-1])

    def flatten(self, tables) -> np.ndarray:
        """:func:`flatten_tables` (host float64)."""
        return flatten_tables(tables)

    def concat(self, tables) -> jax.Array:
        """:func:`concat_tables` (traceable)."""
        return concat_tables(tables)

    def unflatten(self, flat) -> list:
        """:func:`unflatten_tables` into this layout's shapes."""
        return unflatten_tables(flat, self.shapes)

    def per_cell(self, values) -> np.ndarray:
        """One value per table repeated over its cells (e.g. a noise scale per cell)."""
        return np.repeat(np.asarray(values), self.sizes)


@functools.lru_cache(maxsize=256)
def table_layout(domain: Domain, cliques: tuple[Clique, ...]) -> TableLayout:
    """The :class:`TableLayout` of ``cliques``' tables over ``domain`` (cached)."""
    return TableLayout(tuple(domain.sizes(c) for c in cliques))
