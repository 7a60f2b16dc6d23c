"""Vectorised Gibbs sampling for discrete MRFs with cliques of size <= 2, and its scan blocks.

Both samplers run many independent chains at once: the state is stored site-major
(``p x n_chains`` spins, or ``Σk x n_chains`` one-hot codes) so one update of a set of sites
is one sparse-matrix × dense-matrix product for all chains.

Scan order. ``scan="blocked"`` (default) greedily colours the interaction graph (largest degree
first) and updates one colour class at a time; sites of one class share no edge, so they are
conditionally independent given the rest and updating them together is an exact Gibbs step (a
systematic scan in colour order). ``scan="sequential"`` updates sites ``0, 1, ..., p-1`` one at a
time. Both leave the target distribution invariant. Plain numpy/scipy: a jitted JAX sweep was
not faster (``docs/performance.md``).

The Ising sampler built on the same blocks is :func:`pgm_dp.ising.gibbs_ising`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import scipy.sparse as sp

from .._progress import tqdm
from ..errors import DataValidationError, DomainError
from ..rng import RngLike, as_generator

__all__ = ["gibbs_pairwise", "greedy_colouring", "gibbs_blocks", "check_spins", "check_count"]

Scan = Literal["blocked", "sequential"]


def check_count(x, name: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < minimum:
        raise DomainError(f"{name} must be an integer >= {minimum}, got {x!r}")
    return int(x)


def greedy_colouring(pattern) -> list[np.ndarray]:
    """Colour classes of a greedy (largest-degree-first) colouring of a symmetric pattern.

    ``pattern`` is a square matrix (dense or sparse) whose non-zero off-diagonal entries are
    the edges. Returns a list of sorted index arrays; no two indices of a class are adjacent.

    >>> [c.tolist() for c in greedy_colouring(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))]
    [[1], [0, 2]]
    """
    P = sp.csr_array(pattern)
    P.eliminate_zeros()
    p = P.shape[0]
    deg = np.diff(P.indptr)
    colour = np.full(p, -1, dtype=np.int64)
    for v in np.argsort(-deg, kind="stable"):
        nb = colour[P.indices[P.indptr[v] : P.indptr[v + 1]]]
        k = nb.size  # some colour in 0..k is free
        used = np.zeros(k + 1, dtype=bool)
        used[nb[(nb >= 0) & (nb <= k)]] = True
        colour[v] = int(np.argmin(used))
    return [np.flatnonzero(colour == c) for c in range(int(colour.max()) + 1)]


def gibbs_blocks(pattern, p: int, scan: str) -> list[np.ndarray]:
    if scan == "blocked":
        return greedy_colouring(pattern)
    if scan == "sequential":
        return [np.array([i]) for i in range(p)]
    raise DomainError(f"scan must be 'blocked' or 'sequential', got {scan!r}")


def check_spins(x, p: int, n_chains: int, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValidationError(f"{name} must be a numeric array of -1/+1") from None
    if arr.ndim == 1:
        arr = np.broadcast_to(arr, (n_chains, arr.shape[0]))
    if arr.shape != (n_chains, p):
        raise DataValidationError(f"{name} must have shape ({p},) or ({n_chains}, {p})")
    if not np.all((arr == 1.0) | (arr == -1.0)):
        raise DataValidationError(f"{name} must contain only -1 and +1")
    return arr


# -- pairwise discrete MRFs ------------------------------------------------------------------


def _check_pairwise(sizes, cliques, log_potentials):
    try:
        sz = tuple(int(k) for k in sizes)
    except (TypeError, ValueError):
        raise DomainError(f"sizes must be a sequence of positive integers, got {sizes!r}") from None
    if not sz or any(k < 1 for k in sz) or any(isinstance(k, bool) for k in sizes):
        raise DomainError(f"sizes must be a non-empty sequence of positive integers, got {sizes}")
    cl = [tuple(c) for c in cliques]
    tabs = list(log_potentials)
    if len(cl) != len(tabs):
        raise DomainError(f"{len(cl)} cliques but {len(tabs)} log-potential tables")
    p = len(sz)
    out = []
    for c, t in zip(cl, tabs, strict=True):
        if len(c) > 2:
            raise DomainError(
                f"gibbs_pairwise supports cliques of size <= 2, got {c} of size {len(c)}; "
                "use the junction-tree sampler for higher-order models"
            )
        for v in c:
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < p:
                raise DomainError(f"clique {c} has an invalid variable index {v!r} (p = {p})")
        if len(set(c)) != len(c):
            raise DomainError(f"clique {c} repeats a variable")
        arr = np.array(t, dtype=np.float64)
        shape = tuple(sz[v] for v in c)
        if arr.shape != shape:
            raise DomainError(f"log-potential of clique {c} has shape {arr.shape}, want {shape}")
        if np.any(np.isnan(arr)) or np.any(arr == np.inf):
            raise DataValidationError(f"log-potential of clique {c} has NaN or +inf entries")
        out.append((tuple(int(v) for v in c), arr))
    return sz, out


def gibbs_pairwise(
    sizes: Sequence[int],
    cliques: Sequence[Sequence[int]],
    log_potentials: Sequence,
    *,
    n_chains: int,
    n_sweeps: int,
    rng: RngLike,
    burn_in: int | None = None,
    thin: int = 1,
    n_samples: int | None = None,
    init=None,
    scan: Scan = "blocked",
    progress: bool = False,
) -> np.ndarray:
    """Gibbs samples of ``P(x) ∝ exp(Σ_C log_potentials[C][x_C])`` with all ``|C| <= 2``.

    ``sizes[v]`` is the number of states of variable ``v`` (codes ``0..k-1``); ``cliques`` are
    tuples of variable *indices* (size 0 — a constant — 1 or 2; larger raises
    :class:`~pgm_dp.errors.DomainError`); ``log_potentials[c]`` has shape
    ``(sizes[v] for v in cliques[c])`` and may hold ``-inf`` (structural zeros; then the
    initial state must have positive probability).

    Each chain keeps a one-hot state; a site update computes the conditional log-probabilities
    of all its states from one sparse row-block product plus the unary terms and draws the new
    code by inverse CDF of a uniform (exact categorical draw).

    Collection: every chain runs ``n_sweeps`` sweeps; after sweep ``t`` with ``t > burn_in``
    (default ``n_sweeps // 2``) and ``(t - burn_in) % thin == 0`` the states of all chains are
    recorded. Rows are ordered record by record (all chains of the first record, then of the
    next, ...), giving ``n_chains * ((n_sweeps - burn_in) // thin)`` rows; with ``n_samples``
    only the first ``n_samples`` of them are returned (it must not exceed that number).
    Returns an int64 array ``(rows, len(sizes))``.

    >>> x = gibbs_pairwise((2, 3), [(0,), (0, 1)], [np.zeros(2), np.zeros((2, 3))],
    ...                    n_chains=10, n_sweeps=4, rng=0)
    >>> x.shape, x.dtype
    ((20, 2), dtype('int64'))
    """
    sz, cl = _check_pairwise(sizes, cliques, log_potentials)
    p = len(sz)
    n_chains = check_count(n_chains, "n_chains", 1)
    burn, thin, n_records, n_samples = _check_schedule(n_chains, n_sweeps, burn_in, thin, n_samples)
    if scan not in ("blocked", "sequential"):
        raise DomainError(f"scan must be 'blocked' or 'sequential', got {scan!r}")
    gen = as_generator(rng)
    codes0 = None if init is None else _check_init(init, n_chains, sz)
    off, groups = _update_groups(sz, cl, scan)
    if codes0 is None:
        codes = np.stack([gen.integers(0, k, size=n_chains) for k in sz])
    else:
        codes = np.ascontiguousarray(codes0.T)
    X = np.zeros((int(off[-1]), n_chains))
    X[off[:-1, None] + codes, np.arange(n_chains)[None, :]] = 1.0

    out = np.empty((n_records, n_chains, p), dtype=np.int64)
    rec = 0
    for t in tqdm(range(1, n_sweeps + 1), disable=not progress, desc="Gibbs sweeps", leave=False):
        _sweep(groups, off, X, codes, gen)
        if t > burn and (t - burn) % thin == 0:
            out[rec] = codes.T
            rec += 1
    flat = out.reshape(n_records * n_chains, p)
    return flat if n_samples is None else flat[:n_samples].copy()


def _check_schedule(n_chains, n_sweeps, burn_in, thin, n_samples):
    """``(burn_in, thin, records, n_samples)`` checked against one another."""
    n_sweeps = check_count(n_sweeps, "n_sweeps", 1)
    burn = n_sweeps // 2 if burn_in is None else check_count(burn_in, "burn_in", 0)
    thin = check_count(thin, "thin", 1)
    if burn >= n_sweeps:
        raise DomainError(f"burn_in ({burn}) must be smaller than n_sweeps ({n_sweeps})")
    n_records = (n_sweeps - burn) // thin
    if n_records == 0:
        raise DomainError("no sweep is recorded: increase n_sweeps or decrease burn_in/thin")
    total = n_records * n_chains
    if n_samples is not None:
        n_samples = check_count(n_samples, "n_samples", 1)
        if n_samples > total:
            raise DomainError(f"n_samples={n_samples} exceeds the {total} recorded states")
    return burn, thin, n_records, n_samples


def _check_init(init, n_chains: int, sz) -> np.ndarray:
    """``init`` as ``(n_chains, p)`` int64 codes within the domains."""
    p = len(sz)
    codes0 = np.asarray(init)
    if codes0.ndim == 1:
        codes0 = np.broadcast_to(codes0, (n_chains, codes0.shape[0]))
    if codes0.shape != (n_chains, p):
        raise DataValidationError(f"init must have shape ({p},) or ({n_chains}, {p})")
    if not np.issubdtype(codes0.dtype, np.integer) and not np.all(codes0 == np.round(codes0)):
        raise DataValidationError("init must hold integer codes")
    codes0 = codes0.astype(np.int64)
    if np.any(codes0 < 0) or np.any(codes0 >= np.array(sz)):
        raise DataValidationError("init has codes outside the variables' domains")
    return codes0


def _cat(xs: list, dt) -> np.ndarray:
    return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)


def _update_groups(sz, cl, scan):
    """One-hot offsets and, per scan block and domain size, the sites updated together with
    their rows of the coupling matrix ``W``, of the structural-zero pattern ``Z`` (or
    ``None``) and of the unary potentials."""
    p = len(sz)
    off = np.concatenate([[0], np.cumsum(sz)])
    n_one_hot = int(off[-1])
    unary = np.zeros(n_one_hot)
    r_f, c_f, v_f, r_z, c_z = [], [], [], [], []
    adj_r, adj_c = [], []
    for c, t in cl:
        if len(c) == 1:
            unary[off[c[0]] : off[c[0] + 1]] += t
        elif len(c) == 2:
            a, b = c
            rr, cc = np.meshgrid(
                off[a] + np.arange(sz[a]), off[b] + np.arange(sz[b]), indexing="ij"
            )
            zero = np.isneginf(t)
            for src_r, src_c in ((rr, cc), (cc, rr)):
                r_f.append(src_r[~zero])
                c_f.append(src_c[~zero])
                v_f.append(t[~zero])
                r_z.append(src_r[zero])
                c_z.append(src_c[zero])
            adj_r += [a, b]
            adj_c += [b, a]
    shape = (n_one_hot, n_one_hot)
    W = sp.csr_array((_cat(v_f, np.float64), (_cat(r_f, np.int64), _cat(c_f, np.int64))), shape)
    rz = _cat(r_z, np.int64)
    Z = sp.csr_array((np.ones(rz.size), (rz, _cat(c_z, np.int64))), shape) if rz.size else None
    graph = sp.csr_array(
        (np.ones(len(adj_r)), (np.array(adj_r, dtype=np.int64), np.array(adj_c, dtype=np.int64))),
        shape=(p, p),
    )
    groups = []
    for block in gibbs_blocks(graph, p, scan):
        for k in sorted({sz[v] for v in block}):
            vs = block[np.array([sz[v] == k for v in block])]
            R = (off[vs][:, None] + np.arange(k)[None, :]).ravel()
            groups.append((vs, k, W[R], None if Z is None else Z[R], unary[R].reshape(-1, k)))
    return off, groups


def _sweep(groups, off, X, codes, gen) -> None:
    """One Gibbs sweep over every group, updating the codes and one-hot states in place."""
    n_chains = X.shape[1]
    for vs, k, Wg, Zg, ug in groups:
        g = vs.size
        logits = (Wg @ X).reshape(g, k, n_chains) + ug[:, :, None]
        if Zg is not None:
            forbidden = (Zg @ X).reshape(g, k, n_chains) > 0
            logits = np.where(forbidden, -np.inf, logits)
        top = logits.max(axis=1, keepdims=True)
        if not np.all(np.isfinite(top)):
            raise DataValidationError(
                "a chain reached a state of zero probability (check init and -inf entries)"
            )
        cdf = np.cumsum(np.exp(logits - top), axis=1)
        u = gen.random((g, n_chains)) * cdf[:, -1, :]
        new = np.minimum((cdf <= u[:, None, :]).sum(axis=1), k - 1)
        codes[vs] = new
        onehot = new[:, None, :] == np.arange(k)[None, :, None]
        X[(off[vs][:, None] + np.arange(k)[None, :]).ravel()] = onehot.reshape(g * k, -1)
