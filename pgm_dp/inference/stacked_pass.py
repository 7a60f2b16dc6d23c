"""Exact junction-tree calibration as one ``lax.scan``: a program that does not grow with
the number of cliques.

The unrolled passes (:mod:`.junction_tree`, :mod:`.scaled_pass`) emit one kernel sequence per
message, so XLA's compile time grows faster than the tree. Here every junction-tree clique
is a row of one padded ``(n_cliques, max_cells)`` log-table and every message a row of one
``(n_messages + 1, max_separator_cells)`` array (the extra row is a zero message used as
padding). Which cell of a clique maps to which cell of a separator or factor is computed
in the program from per-clique strides (mixed-radix digits), so the index data is
``O(cliques x width)`` and no table of indices is stored. Shafer–Shenoy messages are then
the same step applied in schedule order by ``lax.scan``:

    m_{i->j} = segment_logsumexp over cells of clique i onto sep(i, j) of
               [psi_i + sum_{k in N(i) \\ j} m_{k->i}],

followed by one batched read of every clique belief and every query (a query is summed
out of the smallest junction-tree clique holding it). Everything is in log space, so no
fallback is needed; ``jax.grad`` of ``log Z`` differentiates through the scan.

Chosen by :func:`pgm_dp.inference.junction_tree.use_stacked` for trees with many cliques
of similar size; the per-clique unrolled pass stays faster to run on small trees.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from ..domain import Clique
from ..tables import table_layout
from .tables import concat_tables

if TYPE_CHECKING:
    from .triangulation import JunctionTree

__all__ = [
    "StackedPlan",
    "padding_ratio",
    "stacked_flat_marginals",
    "stacked_log_partition",
    "stacked_log_partition_flat",
    "stacked_marginals",
    "stacked_plan",
]


@dataclass(frozen=True, eq=False)
class StackedPlan:
    """Index data of the stacked pass (small integer arrays; see module docstring).

    ``radix``/``stride``: per clique and axis, the size and row-major stride of that axis
    (padded axes size 1); ``factor_stride[c, f]``: the stride of each clique axis in the
    ``f``-th factor held by clique ``c`` (0 where the factor lacks it) and ``factor_offset``
    its offset in the flat parameter vector (the padding factor points at a zero);
    ``sender``, ``send_stride``, ``recv_stride``: per message, its sender and the separator
    strides of the sender's and the receiver's axes; ``before[s]``: the messages into the
    sender but from the receiver (padding ``n_messages``); ``into[c]``: all messages into
    ``c``."""

    cells: int
    sep_cells: int
    sizes: np.ndarray
    radix: np.ndarray
    stride: np.ndarray
    factor_offset: np.ndarray
    factor_stride: np.ndarray
    sender: np.ndarray
    send_stride: np.ndarray
    recv_stride: np.ndarray
    before: np.ndarray
    into: np.ndarray
    root: int


def _strides(sizes) -> list[int]:
    return [math.prod(sizes[a + 1 :]) for a in range(len(sizes))]


def _var_strides(dom, variables, clique) -> list[int]:
    """For each axis of ``clique``, its stride in a row-major table on ``variables``."""
    st = dict(zip(variables, _strides(dom.sizes(variables)), strict=True))
    return [st.get(v, 0) for v in clique]


def padding_ratio(jt: JunctionTree) -> float:
    """Padded cells over real cells of the clique tables: the stacked pass's waste."""
    sizes = [jt.domain.size(c) for c in jt.cliques]
    return max(sizes) * len(sizes) / sum(sizes)


def _pad(rows: list[list[int]], width: int, fill: int) -> np.ndarray:
    return np.array([r + [fill] * (width - len(r)) for r in rows], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def stacked_plan(jt: JunctionTree) -> StackedPlan:
    dom, cl = jt.domain, jt.cliques
    width = max(len(c) for c in cl)
    offsets = table_layout(dom, jt.factor_cliques).offsets
    held = [[f for f, a in enumerate(jt.assignment) if a == c] for c in range(len(cl))]
    n_f = max(1, max(len(h) for h in held))
    f_off = [[int(offsets[f]) for f in h] for h in held]
    f_str = [
        [_var_strides(dom, jt.factor_cliques[f], c) + [0] * (width - len(c)) for f in h]
        for h, c in zip(held, cl, strict=True)
    ]
    f_str = [s + [[0] * width] * (n_f - len(s)) for s in f_str]
    msgs = jt.messages
    index = {m: s for s, m in enumerate(msgs)}
    degree = max(1, max(sum(1 for m in msgs if m[1] == c) for c in range(len(cl))))
    before = [[index[(k, i)] for k, r in msgs if r == i and k != j] for i, j in msgs]
    into = [[index[(k, c)] for k, r in msgs if r == c] for c in range(len(cl))]
    seps = [dom.canonical(jt.separator(i, j)) for i, j in msgs]
    return StackedPlan(
        cells=max(dom.size(c) for c in cl),
        sep_cells=max([dom.size(s) for s in seps] + [1]),
        sizes=np.array([dom.size(c) for c in cl], dtype=np.int64),
        radix=_pad([list(dom.sizes(c)) for c in cl], width, 1),
        stride=_pad([_strides(dom.sizes(c)) for c in cl], width, 1),
        factor_offset=_pad(f_off, n_f, int(offsets[-1])),
        factor_stride=np.array(f_str, dtype=np.int64).reshape(len(cl), n_f, width),
        sender=np.array([i for i, _ in msgs], dtype=np.int64),
        send_stride=_pad(
            [_var_strides(dom, s, cl[i]) for s, (i, _) in zip(seps, msgs, strict=True)], width, 0
        ),
        recv_stride=_pad(
            [_var_strides(dom, s, cl[j]) for s, (_, j) in zip(seps, msgs, strict=True)]
            + [[0] * width],
            width,
            0,
        ),
        before=_pad(before, degree, len(msgs)),
        into=_pad(into, degree, len(msgs)),
        root=jt.root,
    )


def _digits(plan: StackedPlan, c) -> jax.Array:
    """``(cells, width)`` mixed-radix digits of every cell of clique ``c`` (traced index)."""
    x = jnp.arange(plan.cells)[:, None]
    return (x // jnp.asarray(plan.stride)[c]) % jnp.asarray(plan.radix)[c]


def _segment_logsumexp(values, segments, n: int) -> jax.Array:
    top = jax.lax.stop_gradient(jax.ops.segment_max(values, segments, num_segments=n))
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    total = jax.ops.segment_sum(jnp.exp(values - top[segments]), segments, num_segments=n)
    return jnp.log(total) + top


def _potentials(plan: StackedPlan, flat_theta) -> jax.Array:
    """``(n_cliques, cells)`` clique log-potentials (``-inf`` in padded cells)."""
    theta = jnp.concatenate([flat_theta, jnp.zeros(1, flat_theta.dtype)])

    def one(c):
        d = _digits(plan, c)
        idx = jnp.asarray(plan.factor_offset)[c][:, None] + jnp.asarray(plan.factor_stride)[c] @ d.T
        psi = jnp.sum(theta[idx], axis=0)
        return jnp.where(jnp.arange(plan.cells) < jnp.asarray(plan.sizes)[c], psi, -jnp.inf)

    return jax.lax.map(one, jnp.arange(plan.radix.shape[0]))


def _incoming(plan: StackedPlan, msgs, ids, d) -> jax.Array:
    """Sum of messages ``ids`` (into one clique with digits ``d``) on that clique's cells."""
    idx = d @ jnp.asarray(plan.recv_stride)[ids].T  # (cells, len(ids))
    return jnp.sum(jnp.take_along_axis(msgs[ids].T, idx, axis=0), axis=1)


def calibrate_stacked(plan: StackedPlan, flat_theta):
    """``(log beliefs (n_cliques, cells), log Z)`` by the scanned Shafer–Shenoy pass."""
    psi = _potentials(plan, jnp.asarray(flat_theta, dtype=jnp.float64))
    n_msgs = plan.sender.shape[0]
    msgs0 = jnp.zeros((n_msgs + 1, plan.sep_cells))

    def step(msgs, s):
        i = jnp.asarray(plan.sender)[s]
        d = _digits(plan, i)
        total = psi[i] + _incoming(plan, msgs, jnp.asarray(plan.before)[s], d)
        seg = d @ jnp.asarray(plan.send_stride)[s]
        seg = jnp.where(jnp.arange(plan.cells) < jnp.asarray(plan.sizes)[i], seg, plan.sep_cells)
        m = _segment_logsumexp(total, seg, plan.sep_cells + 1)[: plan.sep_cells]
        return msgs.at[s].set(m), None

    msgs = jax.lax.scan(step, msgs0, jnp.arange(n_msgs))[0] if n_msgs else msgs0

    def belief(c):
        return psi[c] + _incoming(plan, msgs, jnp.asarray(plan.into)[c], _digits(plan, c))

    beliefs = jax.lax.map(belief, jnp.arange(plan.radix.shape[0]))
    return beliefs, jax.nn.logsumexp(beliefs[plan.root])


def _flat_marginals(plan: StackedPlan, beliefs, log_z, n_params: int) -> jax.Array:
    """``d log Z / d flat_theta``: each clique's probabilities added onto the parameters
    they read (the transpose of :func:`_potentials`' gather), one clique per scan step."""

    def add(acc, c):
        d = _digits(plan, c)
        idx = jnp.asarray(plan.factor_offset)[c][:, None] + jnp.asarray(plan.factor_stride)[c] @ d.T
        valid = jnp.arange(plan.cells) < jnp.asarray(plan.sizes)[c]
        idx = jnp.where(valid[None, :], jnp.minimum(idx, n_params), n_params)
        p = jnp.exp(beliefs[c] - log_z)
        return acc.at[idx].add(jnp.broadcast_to(p, idx.shape)), None

    acc = jnp.zeros(n_params + 1, dtype=beliefs.dtype)
    return jax.lax.scan(add, acc, jnp.arange(plan.radix.shape[0]))[0][:n_params]


def _pieces(flat, offsets) -> list:
    """``flat[a:b]`` for consecutive ``offsets``, read by gathers: XLA:CPU compiles a hundred
    slices of one buffer in seconds, the same gathers in a fraction of one."""
    return [flat[np.arange(a, b)] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


@functools.lru_cache(maxsize=64)
def _log_z(jt: JunctionTree, tables: bool):
    """``log Z`` of the factor tables (``tables``) or of the flat vector, with a
    ``custom_jvp`` whose derivative is the model marginals: reverse mode transposes one dot
    product per input, not the scan, and splits the marginals by gathers (:func:`_pieces`)."""
    plan = stacked_plan(jt)
    offsets = table_layout(jt.domain, jt.factor_cliques).offsets

    def flat_of(x):
        if not tables:
            return jnp.asarray(x, dtype=jnp.float64)
        return concat_tables(x)

    @jax.custom_jvp
    def log_z(x):
        return calibrate_stacked(plan, flat_of(x))[1]

    @log_z.defjvp
    def _jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        mu, value = stacked_flat_marginals(jt, flat_of(x))
        if not tables:
            return value, jnp.vdot(mu, dx)
        pieces = zip(_pieces(mu, offsets), dx, strict=True)
        return value, sum(jnp.vdot(m, jnp.ravel(d)) for m, d in pieces)

    return log_z


def stacked_flat_marginals(jt: JunctionTree, flat_theta) -> tuple[jax.Array, jax.Array]:
    """``(marginals, log Z)`` with the factor marginals as one flat vector in the layout of
    ``flat_theta`` (the factor tables raveled in ``jt.factor_cliques`` order): no table is
    split or joined, so the program does not grow with the number of factors."""
    plan = stacked_plan(jt)
    flat_theta = jnp.asarray(flat_theta, dtype=jnp.float64)
    beliefs, log_z = calibrate_stacked(plan, flat_theta)
    return _flat_marginals(plan, beliefs, log_z, flat_theta.shape[0]), log_z


def stacked_log_partition(jt: JunctionTree, log_potentials) -> jax.Array:
    """``log Z`` by the stacked pass; its gradient is the marginals read in one scan
    (:func:`_flat_marginals`), so ``jax.grad`` compiles no reversed scan."""
    return _log_z(jt, True)(tuple(log_potentials))


def stacked_log_partition_flat(jt: JunctionTree, flat_theta) -> jax.Array:
    """:func:`stacked_log_partition` of one flat vector (the factor tables raveled in
    ``jt.factor_cliques`` order): its gradient is one vector, the program's interface one
    array whatever the number of factors."""
    return _log_z(jt, False)(flat_theta)


def stacked_marginals(jt: JunctionTree, queries: tuple[Clique, ...], log_potentials):
    """``(marginals, log_z)``: normalised tables on ``queries`` (axes in each query's
    order) and ``log Z``, exact, from :func:`calibrate_stacked`."""
    if not queries:  # log Z alone: its derivative is read off the marginals
        return (), stacked_log_partition(jt, log_potentials)
    plan = stacked_plan(jt)
    flat = concat_tables(log_potentials)
    beliefs, log_z = calibrate_stacked(plan, flat)
    holders, q_str, q_cells = _query_plan(jt, queries)
    probs = jnp.exp(beliefs - log_z)

    def read(h, strides):
        d = _digits(plan, h)
        seg = jnp.where(jnp.arange(plan.cells) < jnp.asarray(plan.sizes)[h], d @ strides, q_cells)
        return jax.ops.segment_sum(probs[h], seg, num_segments=q_cells + 1)[:q_cells]

    rows = jax.vmap(read)(jnp.asarray(holders), jnp.asarray(q_str))
    dom = jt.domain
    return tuple(
        jnp.reshape(rows[n, : dom.size(q)], dom.sizes(q)) for n, q in enumerate(queries)
    ), log_z


@functools.lru_cache(maxsize=256)
def _query_plan(jt: JunctionTree, queries: tuple[Clique, ...]):
    """Per query: the holding clique, the strides of its axes in the query's own order
    (row-major, 0 for summed-out axes) and the largest query's cell count."""
    dom, holders, strides = jt.domain, [], []
    width = max(len(c) for c in jt.cliques)
    for q in queries:
        h = jt.containing(q)
        if h is None:
            raise ValueError(f"query {q} is not inside any junction-tree clique")
        holders.append(h)
        strides.append(_var_strides(dom, tuple(q), jt.cliques[h]))
    cells = max([dom.size(q) for q in queries] + [1])
    return np.array(holders, dtype=np.int64), _pad(strides, width, 0), cells
