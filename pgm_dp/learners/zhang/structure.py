"""``(epsilon, delta)``-DP structure learning by stability (Zhang et al. 2020, Sec. 6).

Lemma 6.1: a non-private learner that outputs a fixed answer ``Y`` with probability ``>= 2/3``
on ``n`` samples gives an ``(eps, delta)``-DP one on ``O(n log(1/delta) / eps)`` samples.
Cor. 6.3 / 6.5 apply it to structure learners (Wu, Sanghavi & Dimakis 2019; Klivans & Meka
2017). We implement it by subsample-and-aggregate with propose-test-release on the mode
(Vadhan 2017, Prop. 3.4):

1. the records are split at random into ``m`` disjoint blocks;
2. on every block the non-private learner runs: Alg. 2 without noise (sparse logistic
   regression per node by Frank-Wolfe, all blocks and nodes in one vmapped batch), then the
   edges ``{i, j}`` with ``(|A_ij| + |A_ji|) / 2 > eta / 2`` (``eta`` = the smallest edge weight
   to detect; the threshold ``eta / 2`` is ours, as in Wu et al.'s analysis);
3. the graphs are counted; ``c_1 >= c_2`` are the two largest counts. One record changes one
   block, hence one vote, so ``d = ceil((c_1 - c_2) / 2)`` — the number of records to change
   before another graph can tie the mode — has sensitivity 1;
4. the mode is released iff ``d + Lap(1/eps) > log(1/delta) / eps`` (the Laplace draw through
   :func:`~pgm_dp.privacy.laplace_mechanism`), else the explicit "no answer" (``None``).

This is ``(eps, delta)``-DP and is charged as ``ApproxDP(eps, delta)`` before any noise. The
number of blocks defaults to ``ceil(8 log(1/delta) / eps)`` (ours: with a per-block success
probability of 2/3 the expected gap is ``m / 3``, so ``d`` clears the threshold by a margin).

>>> from pgm_dp.ising import gibbs_ising
>>> A = np.zeros((4, 4)); A[0, 1] = A[1, 0] = 1.0
>>> z = gibbs_ising(A, n_chains=3000, n_sweeps=20, rng=0)
>>> learn_structure(z, 4.0, 1e-3, eta=1.0, lam=1.5, steps=50, rng=1).edges
frozenset({(0, 1)})
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...errors import DataValidationError
from ...models.mrf import MarkovRandomField
from ...privacy import Accountant, ApproxDP, PureDP, laplace_mechanism
from ...rng import RngLike, as_generator
from ..base import Fit
from .frank_wolfe import frank_wolfe_batch
from .pairwise import _spins, as_model, check_spins

__all__ = ["StabilityStructure", "StructureResult", "block_graphs", "learn_structure"]

Edges = frozenset[tuple[int, int]]


@dataclass(frozen=True)
class StructureResult:
    """``edges`` (``None``: no answer), the vote counts, the noisy distance, the cost."""

    edges: Edges | None
    votes: dict
    distance: int
    noisy_distance: float
    threshold: float
    spent: ApproxDP


def block_graphs(
    z: np.ndarray, blocks: np.ndarray, m: int, *, eta: float, lam: float, steps: int
) -> list[Edges]:
    """The non-private learner on every block: Alg. 2 without noise, then thresholding."""
    n, p = z.shape
    features = np.hstack([z, np.ones((n, 1))])
    labels = np.tile(z, (1, m))  # problem b * p + i: block b, node i
    rows = np.repeat((blocks[:, None] == np.arange(m)[None, :]).astype(float), p, axis=1)
    cols = np.tile(~np.eye(p, p + 1, dtype=bool), (m, 1))
    w = frank_wolfe_batch(features, labels, radius=2 * lam, rho=None, rows=rows, cols=cols,
                          steps=steps).w  # fmt: skip
    graphs = []
    for b in range(m):
        A = np.abs(w[b * p : (b + 1) * p, :p]) / 2
        score = (A + A.T) / 2
        graphs.append(frozenset((i, j) for i in range(p) for j in range(i + 1, p)
                                if score[i, j] > eta / 2))  # fmt: skip
    return graphs


def learn_structure(
    samples: Any,
    epsilon: float,
    delta: float,
    *,
    eta: float = 0.5,
    lam: float = 1.0,
    blocks: int | None = None,
    steps: int = 300,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> StructureResult:
    """The Ising graph from ±1 ``samples`` under ``(epsilon, delta)``-DP, or ``edges=None``
    when the vote is not stable (Lemma 6.1, Cor. 6.3)."""
    z = check_spins(samples)
    budget = ApproxDP(epsilon, delta)
    if not 0 < delta < 1 or epsilon <= 0:
        raise DataValidationError("need epsilon > 0 and 0 < delta < 1 for structure learning")
    if not (math.isfinite(eta) and eta > 0 and math.isfinite(lam) and lam > 0):
        raise DataValidationError("eta and lam must be finite and > 0")
    m = math.ceil(8 * math.log(1 / delta) / epsilon) if blocks is None else int(blocks)
    if m < 2 or z.shape[0] < 2 * m:
        raise DataValidationError(f"need at least 2 blocks of 2 records: {z.shape[0]} for {m}")
    gen = as_generator(rng)
    if accountant is not None:
        accountant.charge(budget, what="stable structure (PTR)", mechanism="laplace",
                          scale=1 / epsilon)  # fmt: skip
    assignment = gen.permutation(z.shape[0]) % m
    votes = Counter(block_graphs(z, assignment, m, eta=eta, lam=lam, steps=steps))
    ranked = votes.most_common(2) + [(None, 0)]
    distance = math.ceil((ranked[0][1] - ranked[1][1]) / 2)
    noisy = float(laplace_mechanism(float(distance), l1_sensitivity=1.0, budget=PureDP(epsilon),
                                    rng=gen))  # fmt: skip
    threshold = math.log(1 / delta) / epsilon
    edges = ranked[0][0] if noisy > threshold else None
    return StructureResult(edges, dict(votes), distance, noisy, threshold, budget)


@dataclass(frozen=True)
class StabilityStructure:
    """:func:`learn_structure` as a :class:`~pgm_dp.learners.RecordLearner`: ``budget`` an
    ``ApproxDP``; the model is an Ising MRF on the learned edges (plus a unary clique per
    variable) with zero parameters — structure only — or, on "no answer", the empty graph
    (``fit.info["edges"] is None``)."""

    selects_structure: ClassVar[bool] = True  # the learned edges, not mrf's cliques
    eta: float = 0.5
    lam: float = 1.0
    blocks: int | None = None
    steps: int = 300

    def fit(self, data, mrf, *, budget, rng=None, accountant=None) -> Fit:
        mrf = as_model(mrf)
        if not isinstance(budget, ApproxDP):
            raise TypeError(f"StabilityStructure needs an ApproxDP budget, got {budget!r}")
        z = _spins(data, mrf)
        res = learn_structure(z, budget.epsilon, budget.delta, eta=self.eta, lam=self.lam,
                              blocks=self.blocks, steps=self.steps, rng=rng,
                              accountant=accountant)  # fmt: skip
        names = list(mrf.domain.attributes)
        edges = [(names[i], names[j]) for i, j in sorted(res.edges or ())]
        model = MarkovRandomField(mrf.domain, [(a,) for a in names] + edges)
        info = {"edges": res.edges, "votes": res.votes, "distance": res.distance}
        return Fit(model, info=info | {"spent": res.spent, "budget": budget})
