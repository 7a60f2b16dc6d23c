"""Exact inference by junction tree (Shafer–Shenoy message passing).

The structure (elimination order, maximal cliques, tree, message schedule) depends only on
the domain and the clique set, is computed once by :func:`build_junction_tree` and cached.
Calibration, :func:`calibrate`, is a pure, jit-compiled JAX function of the log-potentials,
so it is differentiable: ``jax.grad`` of ``log Z`` gives the model marginals, which is what
the learners' MLE solver and the NumPyro models use. Marginals come from a faster
probability-space pass (:mod:`.scaled_pass`), with the log-space calibration as its fallback.

Triangulation uses the greedy *min-fill* heuristic with ties broken by *min-weight* (the size
of the table the elimination would create). Before anything is allocated the largest clique
table is compared with ``max_cells``, and :class:`~pgm_dp.errors.ModelTooLargeError` is raised
if it is larger (loopy BP or Gibbs sampling are the alternatives then).

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
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np

from ..domain import Clique, Domain, normalize_cliques
from ..errors import DomainError, ModelTooLargeError
from .scaled_pass import read_plan, scaled_marginals, scaled_pass
from .tables import any_traced, broadcast_to, logsumexp_to, to_order

__all__ = [
    "DEFAULT_MAX_CELLS",
    "JunctionTree",
    "build_junction_tree",
    "calibrate",
    "clique_marginals",
    "elimination_order",
    "jit_program",
    "marginals_and_log_z",
]

#: Largest clique table (cells) exact inference will build by default (2**26 float64 = 512 MiB).
DEFAULT_MAX_CELLS = 2**26


@dataclass(frozen=True, eq=False)
class JunctionTree:
    """The static structure of a junction tree over ``domain`` for ``factor_cliques``.

    ``cliques`` are the maximal cliques of the triangulated graph (canonical order),
    ``messages`` the directed edges ``(sender, receiver)`` in schedule order (the upward
    pass toward ``root`` then the downward pass), ``assignment[f]`` the junction-tree clique
    that holds input factor ``f``.
    """

    domain: Domain
    factor_cliques: tuple[Clique, ...]
    cliques: tuple[Clique, ...]
    edges: tuple[tuple[int, int], ...]
    messages: tuple[tuple[int, int], ...]
    assignment: tuple[int, ...]
    root: int

    def separator(self, i: int, j: int) -> Clique:
        return tuple(v for v in self.cliques[i] if v in self.cliques[j])

    def containing(self, variables: Sequence[Hashable]) -> int | None:
        """Index of the smallest junction-tree clique containing ``variables``, if any."""
        want = set(variables)
        best = [i for i, c in enumerate(self.cliques) if want <= set(c)]
        return min(best, key=lambda i: self.domain.size(self.cliques[i])) if best else None


def elimination_order(domain: Domain, cliques: Sequence[Clique]) -> tuple[list, list[set]]:
    """Greedy min-fill elimination (ties: min-weight); returns the order and the cliques it
    forms (variable + its neighbours at elimination time)."""
    adj: dict[Hashable, set] = {v: set() for v in domain.attributes}
    for cl in cliques:
        for u in cl:
            adj[u].update(w for w in cl if w != u)
    order, formed = [], []
    remaining = set(domain.attributes)

    # Variable names may not be mutually orderable; compare positions instead.
    pos = {v: i for i, v in enumerate(domain.attributes)}

    def fill_in(v):
        nb = sorted(adj[v], key=pos.__getitem__)
        return sum(1 for i, a in enumerate(nb) for b in nb[i + 1 :] if b not in adj[a])

    while remaining:
        v = min(remaining, key=lambda u: (fill_in(u), domain.size(adj[u] | {u}), pos[u]))
        nb = adj[v]
        formed.append(nb | {v})
        for a in nb:
            adj[a].update(nb - {a})
            adj[a].discard(v)
        order.append(v)
        remaining.discard(v)
        del adj[v]
    return order, formed


@functools.lru_cache(maxsize=256)
def _build(domain: Domain, factor_cliques: tuple[Clique, ...], max_cells: int) -> JunctionTree:
    _, formed = elimination_order(domain, factor_cliques)
    # Keep maximal cliques only (a formed clique contained in another is redundant).
    maximal: list[frozenset] = []
    for c in sorted((frozenset(c) for c in formed), key=len, reverse=True):
        if not any(c <= m for m in maximal):
            maximal.append(c)
    cliques = tuple(domain.canonical(c) for c in maximal)
    biggest = max(cliques, key=domain.size)
    if domain.size(biggest) > max_cells:
        raise ModelTooLargeError(
            f"exact inference needs a clique table on {biggest} with {domain.size(biggest):,} "
            f"cells, above max_cells={max_cells:,}; use method='loopy_bp' (or Gibbs sampling) "
            f"or raise max_cells"
        )
    # Maximum-weight spanning tree on separator sizes (zero-weight edges join components).
    g = nx.Graph()
    g.add_nodes_from(range(len(cliques)))
    for i in range(len(cliques)):
        for j in range(i + 1, len(cliques)):
            g.add_edge(i, j, weight=len(set(cliques[i]) & set(cliques[j])))
    tree = nx.maximum_spanning_tree(g, algorithm="kruskal")
    root = max(range(len(cliques)), key=lambda i: (domain.size(cliques[i]), -i))
    bfs = list(nx.bfs_edges(tree, root))  # (parent, child) in breadth-first order
    upward = [(child, parent) for parent, child in reversed(bfs)]
    messages = tuple(upward + [(parent, child) for parent, child in bfs])
    assignment = []
    for fc in factor_cliques:
        s = set(fc)
        holders = [i for i, c in enumerate(cliques) if s <= set(c)]
        assignment.append(min(holders, key=lambda i: domain.size(cliques[i])))
    return JunctionTree(
        domain=domain,
        factor_cliques=factor_cliques,
        cliques=cliques,
        edges=tuple(sorted((min(a, b), max(a, b)) for a, b in tree.edges())),
        messages=messages,
        assignment=tuple(assignment),
        root=root,
    )


def build_junction_tree(
    domain: Domain,
    cliques: Sequence[Sequence[Hashable]],
    max_cells: int = DEFAULT_MAX_CELLS,
    *,
    validated: bool = False,
) -> JunctionTree:
    """Triangulate and build (or fetch from cache) the junction tree for ``cliques``.

    Raises :class:`~pgm_dp.errors.ModelTooLargeError` before allocating anything when the
    largest clique table would exceed ``max_cells``. ``validated=True`` skips re-checking
    cliques that are already a tuple of validated tuples (a model's own cliques).
    """
    if not validated:
        cliques = normalize_cliques(domain, cliques)
    return _build(domain, tuple(cliques), int(max_cells))


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
    """
    log_potentials = tuple(jnp.asarray(t, dtype=jnp.float64) for t in log_potentials)
    margs, log_z, ok = scaled_marginals(jt, queries, log_potentials)
    return jax.lax.cond(
        ok,
        lambda fast, pots: fast,
        lambda fast, pots: _log_space_marginals(jt, queries, pots),
        (margs, log_z),
        log_potentials,
    )


#: XLA:CPU compile options for the programs that run junction-tree passes. YNNPACK reduction
#: fusions split each fused product-and-sum of a message into two kernels, and Eigen's
#: multi-threaded matrix products synchronise a thread pool for every one of a pass's small
#: products; without them the all-clique marginals of the third-order chain (T=10, k=10)
#: take ~1.4x and another ~1.35x less time, and single-threaded products were no slower on
#: that chain with k = 20 or 40 nor on an Erdős–Rényi graph (``benchmarks/bench_inference.py``).
_CPU_COMPILER_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "",
    "xla_cpu_multi_thread_eigen": False,
}


@functools.cache
def _compiler_options() -> dict | None:
    """Those of :data:`_CPU_COMPILER_OPTIONS` that this XLA knows, on the CPU backend."""
    if jax.default_backend() != "cpu":
        return None
    known = {}
    for name, value in _CPU_COMPILER_OPTIONS.items():
        try:
            jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(1.0).compile()
        except Exception:  # an XLA without the option: keep its default
            continue
        known[name] = value
    return known or None


def jit_program(fn):
    """``jax.jit(fn)`` with :data:`_CPU_COMPILER_OPTIONS` where the backend takes them, for
    programs that run junction-tree passes (the eager marginals, the learners' objectives
    and loops). JAX accepts compiler options only on a top-level ``jit``: called with traced
    arguments (inside another ``jit``/``grad``) the plain ``jax.jit(fn)`` runs instead."""
    options = _compiler_options()
    top = jax.jit(fn, compiler_options=options)
    if options is None:
        return top
    nested = jax.jit(fn)

    @functools.wraps(fn)
    def call(*args):
        return (nested if any_traced(jax.tree_util.tree_leaves(args)) else top)(*args)

    return call


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
    arrays and the same choice is made by ``lax.cond``.
    """
    queries = jt.factor_cliques if queries is None else tuple(tuple(q) for q in queries)
    pots = tuple(log_potentials)
    if any_traced(pots):
        return _compiled_marginals(jt, queries, "auto")(pots)
    flat = np.asarray(_compiled_marginals(jt, queries, "packed-fast")(pots))
    margs, log_z, ok = _unpack(flat, jt, queries)
    if not ok:
        flat = np.asarray(_compiled_marginals(jt, queries, "packed-log")(pots))
        margs, log_z, _ = _unpack(flat, jt, queries)
        if log_z == -np.inf:
            raise DomainError("the model gives every state probability zero (log Z = -inf)")
    return margs, log_z
