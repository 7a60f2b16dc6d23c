"""Exact inference by junction tree (Shafer–Shenoy message passing).

The structure (elimination order, maximal cliques, tree, message schedule) comes from
:mod:`.triangulation`. Calibration, :func:`calibrate`, is a pure, jit-compiled JAX
function of the log-potentials, so it is differentiable: ``jax.grad`` of ``log Z`` gives the
model marginals, which is what the learners' MLE solver uses. Marginals come from a faster
probability-space pass (:mod:`.scaled_pass`), with the log-space calibration as its fallback.

Example
-------
>>> import numpy as np
>>> from pgm_dp import Domain
>>> from pgm_dp.inference.junction_tree import build_junction_tree, calibrate
>>> dom = Domain(["A", "B", "C"], [2, 2, 2])
>>> cliques = (("A", "B"), ("B", "C"))
>>> jt = build_junction_tree(dom, cliques)
>>> beliefs, log_z = calibrate(jt, (np.zeros((2, 2)), np.zeros((2, 2))))
>>> round(float(log_z), 6) == round(float(np.log(8)), 6)
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._config import any_traced, jit_program
from ..domain import Clique
from ..errors import DomainError
from .scaled_pass import read_plan, scaled_marginals, scaled_pass
from .stacked_pass import padding_ratio, stacked_log_partition, stacked_marginals
from .tables import broadcast_to, logsumexp_to, to_order
from .triangulation import (
    DEFAULT_MAX_CELLS,
    JunctionTree,
    build_junction_tree,
    elimination_order,
)

__all__ = [
    "DEFAULT_MAX_CELLS",
    "JunctionTree",
    "build_junction_tree",
    "calibrate",
    "clique_marginals",
    "elimination_order",
    "marginals_and_log_z",
    "use_stacked",
]

#: Trees with at least this many cliques are calibrated by the scanned, stacked pass
#: (:mod:`.stacked_pass`), whose program does not grow with the tree; smaller ones by the
#: per-clique unrolled passes, faster to run. Measurements: ``docs/performance.md``.
STACKED_MIN_CLIQUES = 16
#: ... provided padding every clique to the largest wastes at most this factor of cells.
STACKED_MAX_PADDING = 4.0


def use_stacked(jt: JunctionTree) -> bool:
    """Whether :func:`marginals_and_log_z` and :func:`clique_marginals` take the stacked
    pass on ``jt`` (many cliques of similar size)."""
    return len(jt.cliques) >= STACKED_MIN_CLIQUES and padding_ratio(jt) <= STACKED_MAX_PADDING


def _calibrate(jt: JunctionTree, log_potentials: tuple[jax.Array, ...]):
    dom = jt.domain
    psi = [jnp.zeros(dom.sizes(c), dtype=jnp.float64) for c in jt.cliques]
    for f, (fc, table) in enumerate(zip(jt.factor_cliques, log_potentials, strict=True)):
        target = jt.cliques[jt.assignment[f]]
        canon = dom.canonical(fc)
        t = to_order(jnp.asarray(table, dtype=jnp.float64), fc, canon)
        psi[jt.assignment[f]] = psi[jt.assignment[f]] + broadcast_to(t, canon, target, dom)
    msgs: dict[tuple[int, int], jax.Array] = {}
    incoming: list[list[tuple[int, jax.Array]]] = [[] for _ in jt.cliques]
    for i, j in jt.messages:
        ci, sep = jt.cliques[i], jt.separator(i, j)
        total = psi[i]
        for k, m in incoming[i]:
            if k != j:
                total = total + broadcast_to(m, jt.separator(k, i), ci, dom)
        msgs[(i, j)] = logsumexp_to(total, ci, sep)
        incoming[j].append((i, msgs[(i, j)]))
    beliefs = []
    for i, ci in enumerate(jt.cliques):
        b = psi[i]
        for k, m in incoming[i]:
            b = b + broadcast_to(m, jt.separator(k, i), ci, dom)
        beliefs.append(b)
    log_z = jax.nn.logsumexp(beliefs[jt.root])
    return tuple(beliefs), log_z


@functools.lru_cache(maxsize=256)
def _compiled(jt: JunctionTree):
    return jax.jit(functools.partial(_calibrate, jt))


def calibrate(jt: JunctionTree, log_potentials: Sequence[jax.Array]):
    """Calibrate the junction tree: ``(log_beliefs, log_z)``.

    ``log_potentials[f]`` is the table of ``jt.factor_cliques[f]`` (axes in that clique's
    order). ``log_beliefs[i]`` is the unnormalised log-marginal of ``jt.cliques[i]``
    (canonical order); ``exp(log_beliefs[i] - log_z)`` sums to one. Jit-compiled once per
    junction tree; differentiable.
    """
    return _compiled(jt)(tuple(log_potentials))


def _log_space_marginals(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """Marginals from the log-space Shafer–Shenoy calibration (robust to any potentials)."""
    beliefs, log_z = _calibrate(jt, log_potentials)
    holders = [jt.containing(q) for q in queries]
    probs = {i: jnp.exp(beliefs[i] - log_z) for i in set(holders)}
    return _read_marginals(jt, queries, holders, probs), log_z


def _read_marginals(jt, queries, holders, probs):
    out = []
    for q, i in zip(queries, holders, strict=True):
        canon = jt.domain.canonical(q)
        axes = tuple(a for a, v in enumerate(jt.cliques[i]) if v not in canon)
        m = jnp.sum(probs[i], axis=axes) if axes else probs[i]
        out.append(to_order(m, canon, q))
    return tuple(out)


def marginals_and_log_z(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """Traceable (un-jitted) core of :func:`clique_marginals`, for use inside other jitted
    functions: normalised marginals on ``queries`` and ``log Z``.

    The fast probability-space pass (:mod:`.scaled_pass`) is used when it is numerically
    sound; otherwise (an underflowing product, ``-inf`` tables) the log-space pass is run.
    On trees with many cliques (:func:`use_stacked`) the scanned log-space pass runs instead.
    """
    log_potentials = tuple(jnp.asarray(t, dtype=jnp.float64) for t in log_potentials)
    if use_stacked(jt):
        return stacked_marginals(jt, queries, log_potentials)
    margs, log_z, ok = scaled_marginals(jt, queries, log_potentials)
    return jax.lax.cond(
        ok,
        lambda fast, pots: fast,
        lambda fast, pots: _log_space_marginals(jt, queries, pots),
        (margs, log_z),
        log_potentials,
    )


def _packed_fast(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """The fast pass's group sums, ``log Z`` and flag as one flat vector (one output buffer
    and one host copy instead of one per query); :func:`_layout` reads it."""
    group_sums, log_z, ok = scaled_pass(jt, queries, log_potentials)
    tail = jnp.stack([log_z, ok.astype(jnp.float64)])
    return jnp.concatenate([jnp.ravel(g) for g in group_sums] + [tail])


def _packed_log(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """The log-space pass packed in the same layout as :func:`_packed_fast`."""
    margs, log_z = _log_space_marginals(jt, queries, log_potentials)
    plan = read_plan(jt, queries)
    rows = [
        jnp.ravel(to_order(margs[n], queries[n], plan.kept[n]))
        for _, members in plan.groups
        for n, _ in members
    ]
    return jnp.concatenate(rows + [jnp.stack([log_z, jnp.ones(())])])


@functools.lru_cache(maxsize=256)
def _compiled_marginals(jt: JunctionTree, queries: tuple[Clique, ...], path: str):
    fn = {
        "auto": marginals_and_log_z,
        "fast": scaled_marginals,
        "log": _log_space_marginals,
        "packed-fast": _packed_fast,
        "packed-log": _packed_log,
        "stacked": stacked_marginals,
    }[path]
    return jit_program(functools.partial(fn, jt, queries))  # options only at top level


@functools.lru_cache(maxsize=256)
def _layout(jt: JunctionTree, queries: tuple[Clique, ...]) -> tuple:
    """Where a packed vector keeps each group: ``(start, stop, block shape, members)`` with
    ``members = ((query index, axes permutation to the query's order or None), ...)``."""
    plan, out, start = read_plan(jt, queries), [], 0
    for _, members in plan.groups:
        shape = jt.domain.sizes(plan.kept[members[0][0]])
        stop = start + len(members) * math.prod(shape)
        perms = []
        for n, _ in members:
            perm = tuple(plan.kept[n].index(v) for v in queries[n])
            perms.append((n, None if perm == tuple(range(len(perm))) else perm))
        out.append((start, stop, (len(members), *shape), tuple(perms)))
        start = stop
    return tuple(out)


def _unpack(flat: np.ndarray, jt: JunctionTree, queries: tuple[Clique, ...]):
    """Split a packed vector into NumPy marginals (views), ``log Z`` and the flag."""
    margs: list = [None] * len(queries)
    for start, stop, shape, members in _layout(jt, queries):
        block = flat[start:stop].reshape(shape)
        for row, (n, perm) in enumerate(members):
            margs[n] = block[row] if perm is None else block[row].transpose(perm)
    return tuple(margs), flat[-2], bool(flat[-1])


def clique_marginals(
    jt: JunctionTree, log_potentials: Sequence[jax.Array], queries: Sequence[Clique] | None = None
):
    """Normalised marginals on ``queries`` (default: the factor cliques) and ``log Z``.

    Each query must be contained in some junction-tree clique (every factor clique is);
    axes follow the query's variable order. One jit-compiled program per (tree, queries).
    Called with concrete arrays it returns NumPy arrays: the fast probability-space pass runs,
    all its outputs come back in one host copy, and its soundness flag is checked in Python
    (the log-space pass runs only if it fails). Under a JAX transformation it returns traced
    arrays and the same choice is made by ``lax.cond``; ``log Z`` alone (no ``queries``)
    then comes from :func:`~.stacked_pass.stacked_log_partition` on any tree whose padding
    allows it (its derivative is one scan: ``jit(grad(log Z))`` compiles in seconds).
    """
    queries = jt.factor_cliques if queries is None else tuple(tuple(q) for q in queries)
    pots = tuple(log_potentials)
    stacked = use_stacked(jt)
    if any_traced(pots):
        if not queries and padding_ratio(jt) <= STACKED_MAX_PADDING:  # log Z alone
            return (), stacked_log_partition(jt, pots)
        return _compiled_marginals(jt, queries, "stacked" if stacked else "auto")(pots)
    if stacked:
        margs, log_z = _compiled_marginals(jt, queries, "stacked")(pots)
        log_z = float(log_z)
        if log_z == -np.inf:
            raise DomainError("the model gives every state probability zero (log Z = -inf)")
        return tuple(np.asarray(m) for m in margs), np.float64(log_z)
    flat = np.asarray(_compiled_marginals(jt, queries, "packed-fast")(pots))
    margs, log_z, ok = _unpack(flat, jt, queries)
    if not ok:
        flat = np.asarray(_compiled_marginals(jt, queries, "packed-log")(pots))
        margs, log_z, _ = _unpack(flat, jt, queries)
        if log_z == -np.inf:
            raise DomainError("the model gives every state probability zero (log Z = -inf)")
    return margs, log_z
