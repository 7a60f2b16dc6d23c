"""Shared test helpers: brute-force enumeration is the oracle for small models."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pgm_dp
from pgm_dp import Domain, MarkovRandomField


def joint_log_table(mrf: MarkovRandomField) -> np.ndarray:
    """Unnormalised log-probability of every joint state, axes in domain order."""
    dom = mrf.domain
    table = np.zeros(dom.shape)
    for cl, pot in mrf.potentials.items():
        axes = [dom.index(v) for v in cl]
        shape = [1] * len(dom)
        order = np.argsort(axes)
        for a in axes:
            shape[a] = dom.shape[a]
        table = table + np.transpose(np.asarray(pot), order).reshape(shape)
    return table


def brute_marginal(mrf: MarkovRandomField, variables) -> np.ndarray:
    dom = mrf.domain
    logp = joint_log_table(mrf)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    axes = [dom.index(v) for v in variables]
    keep = sorted(axes)
    m = p.sum(axis=tuple(i for i in range(len(dom)) if i not in keep))
    return np.transpose(m, [keep.index(a) for a in axes])


def brute_log_z(mrf: MarkovRandomField) -> float:
    logp = joint_log_table(mrf)
    mx = logp.max()
    return float(mx + np.log(np.exp(logp - mx).sum()))


def random_model(
    rng: np.random.Generator, n_vars: int, n_cliques: int, max_size: int = 3, scale: float = 1.0
) -> MarkovRandomField:
    """A random MRF; sizes in 1..3 (size-1 domains included), cliques of size 1..max_size."""
    names = [f"V{i}" for i in range(n_vars)]
    dom = Domain(names, rng.integers(1, 4, size=n_vars))
    cliques = set()
    while len(cliques) < n_cliques:
        k = int(rng.integers(1, max_size + 1))
        cl = tuple(rng.choice(names, size=min(k, n_vars), replace=False).tolist())
        if frozenset(cl) not in {frozenset(c) for c in cliques}:
            cliques.add(cl)
    cliques = sorted(cliques)
    pots = [rng.normal(scale=scale, size=dom.sizes(c)) for c in cliques]
    return MarkovRandomField(dom, cliques, pots)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def all_states(domain: Domain) -> np.ndarray:
    return np.array(list(itertools.product(*[range(k) for k in domain.shape])))


__all__ = [
    "pgm_dp",
    "joint_log_table",
    "brute_marginal",
    "brute_log_z",
    "random_model",
    "all_states",
]
