"""Clique tables over a domain: their flat layout, and records counted into one.

The flat layout is a model's (or a release's) clique tables as one vector: every clique's
table is raveled (C order, axes in the clique's order) and the tables are concatenated in
clique order. It is the optimisers' parameter vector (the learners'
log-potentials), the layout of stacked loopy BP and of the stacked junction-tree pass
(:mod:`pgm_dp.inference`), and that of a release's flat view
(:class:`pgm_dp.privacy.Measurements`, ``release.in_order(cliques)``). Table ``i`` holds the
cells ``offsets[i]:offsets[i + 1]``. :func:`contingency_table` counts records into one table,
its cells in the same C order (Bernstein et al. 2017, Sec. 2: a clique's sufficient statistic).

NumPy only, beside :mod:`pgm_dp.domain` in the layers (``pgm_dp.LAYERS``): inference, models,
the privacy layer, learners and the Bayesian layer share it. The traced concatenation of
tables is :func:`pgm_dp.inference.tables.concat_tables`.

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

import numpy as np

from .domain import MAX_TABLE_CELLS, Clique, Domain
from .errors import ModelTooLargeError

__all__ = [
    "TableLayout",
    "contingency_table",
    "flatten_tables",
    "table_layout",
    "table_offsets",
    "unflatten_tables",
]


def flatten_tables(tables) -> np.ndarray:
    """Concatenate clique tables into one float64 NumPy vector (host data)."""
    return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])


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

    def unflatten(self, flat) -> list:
        """:func:`unflatten_tables` into this layout's shapes."""
        return unflatten_tables(flat, self.shapes)

    def per_cell(self, values) -> np.ndarray:
        """One value per table repeated over its cells (e.g. a noise scale per cell)."""
        return np.repeat(np.asarray(values), self.sizes)


def contingency_table(
    codes: np.ndarray, axes: Sequence[int], shape: Sequence[int], weights: np.ndarray | None = None
) -> np.ndarray:
    """Count table of the columns ``axes`` of an already-validated code array.

    Returns an int64 array of ``shape`` (float64 when ``weights`` are given); raises
    :class:`~pgm_dp.errors.ModelTooLargeError` before allocating when the table would have more
    than ``MAX_TABLE_CELLS`` cells.
    """
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) > MAX_TABLE_CELLS:
        raise ModelTooLargeError(
            f"a table of shape {shape} has {math.prod(shape):,} cells, above "
            f"MAX_TABLE_CELLS={MAX_TABLE_CELLS:,}"
        )
    if len(axes) == 0:
        total = codes.shape[0] if weights is None else weights.sum()
        return np.asarray(total)
    flat = np.zeros(codes.shape[0], dtype=np.int64)
    for ax, size in zip(axes, shape, strict=True):
        flat *= size
        flat += codes[:, ax]
    counts = np.bincount(flat, weights=weights, minlength=math.prod(shape))
    if weights is None:
        counts = counts.astype(np.int64, copy=False)
    return counts.reshape(shape)


@functools.lru_cache(maxsize=256)
def table_layout(domain: Domain, cliques: tuple[Clique, ...]) -> TableLayout:
    """The :class:`TableLayout` of ``cliques``' tables over ``domain`` (cached)."""
    return TableLayout(tuple(domain.sizes(c) for c in cliques))
