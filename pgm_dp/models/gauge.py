"""The gauge of log-potentials and the orthogonal projection off it.

The log-potentials of an MRF are over-parametrised: adding a function of the variables
``S`` to one clique holding ``S`` and subtracting it from another (or a constant to any
table) leaves the distribution, its marginals, ``log Z`` up to the constant and the Bethe
free energy unchanged: these are the *gauge* directions. The gauge space is
``{d : sum_{C >= S} d_{C,S} = 0 for every S != {}}`` plus the table constants, where
``d_{C,S}`` is the ANOVA component of ``d_C`` on ``S`` (mean over ``C \\ S``, centred along
each axis of ``S``); the ANOVA components of different ``S`` are orthogonal, so the
orthogonal projection onto the gauge's complement (:func:`gauge_projector`) acts on each
shared ``S`` alone: it removes each table's mean and replaces the components ``c_C`` of the
cliques ``C`` holding ``S`` by ``c_C - g_C`` with
``g_C = c_C - (sum_D c_D) / (w_C sum_D 1 / w_D)``, ``w_C = |C| / |S|`` cells (the
weighted projection onto ``sum_C g_C = 0``).

:func:`gauge_projector` is CGM-EM's (:mod:`pgm_dp.learners.cgm.conditioning`) and the
Bayesian posterior's (:mod:`pgm_dp.bayes.posterior`) projection.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..domain import Clique, Domain
from ..tables import table_layout, table_offsets

__all__ = [
    "ProjectionSegments",
    "gauge_projector",
    "projection_groups",
    "projection_plan",
    "projection_segments",
    "shared_components",
    "shared_subsets",
    "unflat_shared",
]


def shared_subsets(domain: Domain, cliques) -> dict[tuple, list[int]]:
    """Every non-empty variable set held by two or more cliques, with its holders."""
    holders: dict[tuple, list[int]] = {}
    for i, c in enumerate(cliques):
        order = sorted(c, key=domain.index)
        for r in range(1, len(order) + 1):
            for s in itertools.combinations(order, r):
                holders.setdefault(s, []).append(i)
    return {s: h for s, h in holders.items() if len(h) > 1}


def projection_groups(domain: Domain, cliques, shared):
    """(clique, shared set) pairs grouped by (clique shape, axes of the set in the clique):
    per group the stacked cell indices, the set's ids and the axes' order."""
    offsets = table_layout(domain, tuple(cliques)).offsets
    s_ids = {s: n for n, s in enumerate(shared)}
    groups: dict[tuple, list] = {}
    for s, hs in shared.items():
        for i in hs:
            c = cliques[i]
            axes = tuple(c.index(v) for v in s)  # in the set's canonical order
            key = (domain.sizes(c), axes)
            groups.setdefault(key, []).append((int(offsets[i]), s_ids[s]))
    out = []
    for (shape, axes), rows in groups.items():
        starts = np.array([r[0] for r in rows])
        cells = starts[:, None] + np.arange(math.prod(shape))[None, :]
        out.append((shape, axes, cells, np.array([r[1] for r in rows])))
    return out


def projection_plan(domain: Domain, cliques) -> tuple[list[int], np.ndarray, list, np.ndarray]:
    """What the projector needs of the structure: each shared set's cell count and offset,
    the (clique, shared set) groups, and each set's summed inverse weight."""
    shared = shared_subsets(domain, cliques)
    s_cells = [math.prod(domain.sizes(s)) for s in shared]
    groups = projection_groups(domain, cliques, shared)
    inv_w = np.zeros(len(shared))
    for shape, _axes, _, ids in groups:
        np.add.at(inv_w, ids, s_cells[ids[0]] / math.prod(shape) if len(ids) else 0.0)
    return s_cells, table_offsets(s_cells), groups, inv_w


def shared_components(x, shape, axes, cells):
    """The component of each group's tables along its shared set's directions (NumPy or
    JAX ``x``: array methods only)."""
    t = x[cells].reshape(len(cells), *shape)
    other = tuple(1 + a for a in range(len(shape)) if a not in axes)
    comp = t.mean(axis=other, keepdims=True) if other else t
    for a in axes:
        comp = comp - comp.mean(axis=1 + a, keepdims=True)
    return comp


def gauge_projector(domain: Domain, cliques: tuple[Clique, ...]) -> Callable:
    """The orthogonal projection of flat log-potentials (clique order, each table raveled)
    onto the complement of the gauge directions (module docstring); vectorised per group of
    equally shaped (clique, shared set) pairs."""
    s_cells, s_off, groups, inv_w = projection_plan(domain, cliques)
    layout = table_layout(domain, tuple(cliques))
    sizes, starts = layout.sizes, layout.offsets[:-1]
    components = shared_components

    def project(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        out = x - layout.per_cell(np.add.reduceat(x, starts) / sizes) if x.size else x.copy()
        comps, total = [], np.zeros(int(s_off[-1]))
        for shape, axes, cells, ids in groups:
            comp = components(x, shape, axes, cells)
            flat = np.transpose(
                comp,
                (0, *(1 + a for a in axes), *(1 + a for a in range(len(shape)) if a not in axes)),
            ).reshape(len(ids), -1)
            np.add.at(total, s_off[ids][:, None] + np.arange(flat.shape[1]), flat)
            comps.append((comp, flat))
        lam = total / np.repeat(inv_w, s_cells) if total.size else total
        for (shape, axes, cells, ids), (comp, flat) in zip(groups, comps, strict=True):
            w = math.prod(shape) / flat.shape[1]
            g = flat - lam[s_off[ids][:, None] + np.arange(flat.shape[1])] / w
            back = unflat_shared(g, comp.shape, axes, len(shape))
            np.subtract.at(
                out, cells, np.broadcast_to(back, (len(ids), *shape)).reshape(len(ids), -1)
            )
        return out

    return project


def unflat_shared(g, comp_shape, axes, ndim):
    """``g`` (rows, cells of the set in canonical order) back to ``comp_shape``; a NumPy or
    a JAX array (array methods only, so the traced projector shares it)."""
    canon = g.reshape(comp_shape[0], *(comp_shape[1 + a] for a in axes))
    rest = [1 + a for a in range(ndim) if a not in axes]
    perm = (0, *(1 + a for a in axes), *rest)
    full = canon.reshape(canon.shape + (1,) * len(rest))
    return full.transpose(tuple(int(i) for i in np.argsort(perm)))


class ProjectionSegments(NamedTuple):
    """The projection of :func:`gauge_projector` as a fixed sequence of gathers and
    segment sums over index arrays (:func:`projection_segments`), one of each step for
    the whole model, however many cliques: ``m`` the table means over ``C \\ T`` for every
    clique ``C`` and every ``T`` contained in a set ``C`` shares (``T = {}`` the table's
    mean), from ``m_src`` (cells), ``m_dst`` (mean's entry) and ``m_count``; ``comp`` the
    ANOVA components ``c_{C,S} = sum_{T <= S} (-1)^|S \\ T| m_{C,T}`` (Moebius
    inclusion-exclusion: the centring along each axis of ``S``) from ``c_src`` (entries of
    ``m``), ``c_sign`` and ``c_dst``; ``s_dst`` the shared set's cell of each component
    entry, ``divisor`` per set cell ``sum_D 1 / w_D`` and ``inv_w`` per entry ``1 / w_C``;
    ``cell_mean`` each cell's table-mean entry of ``m``; ``b_src`` (component entries) and
    ``b_dst`` (cells) broadcast the corrections back."""

    m_src: np.ndarray
    m_dst: np.ndarray
    m_count: np.ndarray
    c_src: np.ndarray
    c_sign: np.ndarray
    c_dst: np.ndarray
    s_dst: np.ndarray
    divisor: np.ndarray
    inv_w: np.ndarray
    cell_mean: np.ndarray
    b_src: np.ndarray
    b_dst: np.ndarray


def projection_segments(domain: Domain, cliques) -> ProjectionSegments:
    """The index arrays of :class:`ProjectionSegments` for ``cliques`` (flat layout)."""
    cliques = tuple(tuple(c) for c in cliques)
    offsets = table_layout(domain, cliques).offsets
    shared = shared_subsets(domain, cliques)
    s_start = dict(zip(shared, table_offsets([domain.size(s) for s in shared])[:-1], strict=True))
    lists: dict[str, list] = {k: [] for k in ProjectionSegments._fields}
    m_at: dict[tuple, int] = {}  # (clique, T) -> first entry of m
    c_at = 0  # component entries so far
    divisor = np.zeros(sum(domain.size(s) for s in shared))
    for i, c in enumerate(cliques):
        cells = offsets[i] + np.arange(domain.size(c))
        grid = np.indices(domain.sizes(c)).reshape(len(c), -1)  # each cell's coordinates
        held = [s for s, hs in shared.items() if i in hs]
        subsets = {(): None} | {t: None for s in held for t in _subsets(s)}
        for t in subsets:
            m_at[i, t] = sum(len(x) for x in lists["m_count"])
            dst = _cell_index(grid, [c.index(v) for v in t], domain.sizes(t))
            lists["m_src"].append(cells)
            lists["m_dst"].append(m_at[i, t] + dst)
            lists["m_count"].append(np.full(domain.size(t), domain.size(c) / domain.size(t)))
        lists["cell_mean"].append(np.full(len(cells), m_at[i, ()]))
        for s in held:
            s_grid = np.indices(domain.sizes(s)).reshape(len(s), -1)
            for t in _subsets(s) + [()]:
                sub = _cell_index(s_grid, [s.index(v) for v in t], domain.sizes(t))
                lists["c_src"].append(m_at[i, t] + sub)
                lists["c_sign"].append(np.full(sub.size, (-1.0) ** (len(s) - len(t))))
                lists["c_dst"].append(c_at + np.arange(sub.size))
            w = domain.size(c) / domain.size(s)
            lists["s_dst"].append(s_start[s] + np.arange(domain.size(s)))
            lists["inv_w"].append(np.full(domain.size(s), 1.0 / w))
            divisor[s_start[s] : s_start[s] + domain.size(s)] += 1.0 / w
            own = _cell_index(grid, [c.index(v) for v in s], domain.sizes(s))
            lists["b_src"].append(c_at + own)
            lists["b_dst"].append(cells)
            c_at += domain.size(s)
    arrays = {k: np.concatenate(v) if v else np.zeros(0) for k, v in lists.items()}
    ints = ("m_src", "m_dst", "c_src", "c_dst", "s_dst", "cell_mean", "b_src", "b_dst")
    arrays |= {k: arrays[k].astype(np.int64) for k in ints}
    return ProjectionSegments(**(arrays | {"divisor": divisor}))


def _subsets(s: tuple) -> list[tuple]:
    """The non-empty subsets of ``s``, each in ``s``'s order."""
    return [t for r in range(1, len(s) + 1) for t in itertools.combinations(s, r)]


def _cell_index(grid: np.ndarray, axes: list[int], sizes: tuple[int, ...]) -> np.ndarray:
    """Each cell's (``grid``: coordinates per axis) index in the table of ``axes``."""
    if not axes:
        return np.zeros(grid.shape[1], dtype=np.int64)
    return np.ravel_multi_index(tuple(grid[axes]), sizes)
