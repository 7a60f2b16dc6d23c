"""``(epsilon, delta)``-DP structure learning by stability (Zhang et al. 2020, Sec. 6).

Lemma 6.1: a non-private learner that outputs a fixed answer ``Y`` with probability ``>= 2/3``
on ``n`` samples gives an ``(eps, delta)``-DP one on ``O(n log(1/delta) / eps)`` samples.
Cor. 6.3 / 6.5 apply it to structure learners (Wu, Sanghavi & Dimakis 2019; Klivans & Meka
2017). We implement it by subsample-and-aggregate with propose-test-release on the mode
(Vadhan 2017, Prop. 3.4; Thakurta & Smith 2013):

1. the records are split at random into ``m`` disjoint blocks;
2. on every block the non-private learner runs: Alg. 2 without noise (sparse logistic
   regression per node by Frank-Wolfe, all blocks and nodes in one compiled loop, in
   ``O(n p)`` memory), then the
   edges ``{i, j}`` with ``(|A_ij| + |A_ji|) / 2 > eta / 2`` (``eta`` = the smallest edge weight
   to detect; the threshold ``eta / 2`` is ours, as in Wu et al.'s analysis);
3. the block graphs are the votes; :func:`stable_mode` releases their mode or "no answer"
   (``None``) — see there for the test and the lemma it rests on.

Neighbouring data sets differ in one record replaced (as in Zhang et al.): the partition is
drawn independently of the data, so for every partition one record changes one block, hence
at most one vote, and the lemma gives ``(eps, delta)``-DP. It is charged as
``ApproxDP(eps, delta)`` before any noise. Only the graph (or ``None``), the noisy distance,
the threshold and the cost are returned — never the vote counts. The number of blocks
defaults to ``ceil(8 log(1/delta) / eps)`` (ours: with a per-block success probability of 2/3
the expected gap is ``m / 3``, so the distance clears the threshold by a margin).

>>> from pgm_dp.ising import gibbs_ising
>>> A = np.zeros((4, 4)); A[0, 1] = A[1, 0] = 1.0
>>> z = gibbs_ising(A, n_chains=3000, n_sweeps=20, rng=0)
>>> learn_structure(z, 4.0, 1e-3, eta=1.0, lam=1.5, steps=50, rng=1).edges
frozenset({(0, 1)})
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import DataValidationError
from ...models.mrf import MarkovRandomField
from ...privacy import Accountant, ApproxDP, PureDP, laplace_mechanism
from ...privacy.budget import require_budget
from ...rng import RngLike, as_generator
from ..base import Fit
from .frank_wolfe import LOGISTIC
from .pairwise import _spins, as_model, check_spins

__all__ = [
    "StabilityStructure",
    "StableMode",
    "StructureResult",
    "block_graphs",
    "learn_structure",
    "stability_distance",
    "stable_mode",
]

Edges = frozenset[tuple[int, int]]


@dataclass(frozen=True)
class StructureResult:
    """``edges`` (``None``: no answer), the noisy distance and the threshold it was tested
    against, the cost. The vote counts and the exact distance are not released."""

    edges: Edges | None
    noisy_distance: float
    threshold: float
    spent: ApproxDP


@dataclass(frozen=True)
class StableMode:
    """What :func:`stable_mode` releases: the mode (``None``: no answer), the noisy distance
    and the threshold ``log(1/delta) / epsilon``."""

    answer: Hashable | None
    noisy_distance: float
    threshold: float


def stability_distance(votes: Sequence[Hashable]) -> int:
    """``max(ceil((c1 - c2) / 2) - 1, 0)``: the number of votes to change before the mode
    of ``votes`` may change under one more change (``c1 >= c2`` the two largest counts,
    ``c2 = 0`` when all votes agree). It is 0 on ties and on gaps 1 and 2.

    >>> [stability_distance("A" * a + "B" * b) for a, b in [(3, 3), (4, 3), (5, 3), (6, 3), (3, 0)]]
    [0, 0, 0, 1, 1]
    """
    counts = sorted(Counter(votes).values(), reverse=True) + [0]
    return max(math.ceil((counts[0] - counts[1]) / 2) - 1, 0)


def stable_mode(
    votes: Sequence[Hashable], epsilon: float, delta: float, *, rng: RngLike = None
) -> StableMode:
    """The mode of ``votes`` if ``d + Lap(1/epsilon) > log(1/delta) / epsilon``, else ``None``,
    with ``d`` = :func:`stability_distance` (propose-test-release on the stable mode). It is
    ``(epsilon, delta / 2)``-DP when neighbouring inputs differ in one vote. Draws the noise
    (through :func:`~pgm_dp.privacy.laplace_mechanism`) and charges nothing.

    **Lemma** (stable mode; Vadhan 2017, Prop. 3.4; Thakurta & Smith 2013). Let ``f(v)`` be
    the mode of the vote vector ``v`` (ties broken by any fixed rule) and ``d(v)`` an integer
    with (i) ``|d(v) - d(v')| <= 1`` and (ii) ``d(v) >= 1`` implies ``f(v') = f(v)``, for all
    ``v'`` differing from ``v`` in one vote. Then releasing ``(f(v), d̂)`` if
    ``d̂ = d(v) + Lap(1/eps) > log(1/delta)/eps`` and ``(None, d̂)`` otherwise is
    ``(eps, delta/2)``-DP. Proof: if ``d(v) >= 1`` or ``d(v') >= 1`` then ``f(v) = f(v')`` by
    (ii), and the output is a function of ``d̂``, an ``eps``-DP Laplace release of a
    sensitivity-1 quantity by (i). Otherwise ``d(v) = d(v') = 0``; the mode is released with
    probability ``P[Lap(1/eps) > log(1/delta)/eps] = delta/2`` on each input, and the rest of
    the output, ``(None, d̂)``, is again a function of ``d̂``.

    ``d = max(ceil(g/2) - 1, 0)`` with the gap ``g = c1 - c2`` meets both conditions: one
    changed vote lowers one count by 1 and raises another by 1, so each order statistic moves
    by at most 1, ``g`` by at most 2 and ``ceil(g/2)`` by at most 1 (i); ``d >= 1`` means
    ``g >= 3``, and after one change the old mode still leads every other answer by
    ``g - 2 >= 1`` (ii). It is the exact distance to the nearest vote vector with a gap
    ``<= 2`` (each change lowers the gap by at most 2, and moving a vote from the mode to the
    runner-up lowers it by 2), i.e. to one whose mode one more change can alter, so no larger
    distance satisfies (ii). ``ceil(g/2)`` alone is wrong: at ``g = 1`` it is 1, yet moving
    one vote from the mode to the runner-up makes the runner-up the mode. Keeping
    ``ceil(g/2)`` with the threshold ``1 + log(1/delta)/eps`` is the same test except at a
    tie (``g = 0``), where it is stricter.

    >>> stable_mode(["A"] * 30 + ["B"] * 2, 1.0, 1e-3, rng=0).answer
    'A'
    >>> stable_mode(["A"] * 16 + ["B"] * 15, 1.0, 1e-3, rng=0).answer is None
    True
    """
    if not (math.isfinite(epsilon) and epsilon > 0 and 0 < delta < 1):
        raise DataValidationError("need epsilon > 0 and 0 < delta < 1 for the stable mode")
    votes = list(votes)
    if not votes or any(v is None for v in votes):
        raise DataValidationError("the stable mode needs at least one vote and no None vote")
    mode = Counter(votes).most_common(1)[0][0]
    distance = stability_distance(votes)
    noisy = float(
        laplace_mechanism(float(distance), l1_sensitivity=1.0, budget=PureDP(epsilon), rng=rng)
    )
    threshold = math.log(1 / delta) / epsilon
    return StableMode(mode if noisy > threshold else None, noisy, threshold)


@functools.partial(jax.jit, static_argnames=("steps",))
def _block_weights(F: jax.Array, Y: jax.Array, R: jax.Array, radius: float, steps: int):
    """Alg. 1 without noise on every (block, node) problem at once: ``F`` ``(m, nb, p + 1)``
    (spins and a bias column), ``Y`` ``(m, nb, p)`` labels, ``R`` ``(m, nb)`` 0/1 rows (blocks
    padded to one length). Node ``i`` regresses on every column but its own; the same steps
    as :func:`~.frank_wolfe.frank_wolfe_batch` (``mu = 2 / (t + 2)``, ``t = 1 .. steps - 1``,
    ties to the first vertex), in ``O(n p)`` memory. Returns ``w`` ``(m, p, p + 1)``."""
    m, nb, d = F.shape
    p = Y.shape[2]
    allowed = jnp.tile(~jnp.eye(p, d, dtype=bool), (1, 2))  # (p, 2d): +C e_j, then -C e_j
    count = R.sum(axis=1)[:, None, None]
    slope = jax.vmap(jax.grad(LOGISTIC.value))

    def body(t, state):
        w, margins = state  # (m, p, d), (m, nb, p)
        dl = slope(margins.ravel(), Y.ravel()).reshape(margins.shape) * R[:, :, None]
        g = jnp.einsum("bnd,bnp->bpd", F, dl) / count
        score = jnp.where(allowed, radius * jnp.concatenate([g, -g], axis=2), jnp.inf)
        k = jnp.argmin(score, axis=2)  # (m, p)
        col, sign = k % d, jnp.where(k < d, radius, -radius)
        mu = 2.0 / (t + 2)
        vertex = jax.nn.one_hot(col, d) * sign[..., None]
        picked = jnp.take_along_axis(F, jnp.broadcast_to(col[:, None, :], (m, nb, p)), axis=2)
        return (1 - mu) * w + mu * vertex, (1 - mu) * margins + mu * picked * sign[:, None, :]

    init = (jnp.zeros((m, p, d)), jnp.zeros((m, nb, p)))
    return jax.lax.fori_loop(1, steps, body, init)[0]


def block_graphs(
    z: np.ndarray, blocks: np.ndarray, m: int, *, eta: float, lam: float, steps: int
) -> list[Edges]:
    """The non-private learner on every block: Alg. 2 without noise, then thresholding."""
    n, p = z.shape
    order = np.argsort(blocks, kind="stable")
    sizes = np.bincount(blocks, minlength=m)
    nb = int(sizes.max())
    slot = np.arange(n) - np.repeat(np.cumsum(sizes) - sizes, sizes)  # place within its block
    F = np.zeros((m, nb, p + 1))
    Y = np.ones((m, nb, p))
    R = np.zeros((m, nb))
    where = (blocks[order], slot)
    F[where] = np.hstack([z[order], np.ones((n, 1))])
    Y[where] = z[order]
    R[where] = 1.0
    w = np.asarray(_block_weights(jnp.asarray(F), jnp.asarray(Y), jnp.asarray(R), 2 * lam, steps))
    graphs = []
    for b in range(m):
        A = np.abs(w[b, :, :p]) / 2
        score = (A + A.T) / 2
        graphs.append(
            frozenset((i, j) for i in range(p) for j in range(i + 1, p) if score[i, j] > eta / 2)
        )
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
        accountant.charge(
            budget, what="stable structure (PTR)", mechanism="laplace", scale=1 / epsilon
        )
    assignment = gen.permutation(z.shape[0]) % m
    votes = block_graphs(z, assignment, m, eta=eta, lam=lam, steps=steps)
    out = stable_mode(votes, epsilon, delta, rng=gen)
    return StructureResult(out.answer, out.noisy_distance, out.threshold, budget)


@dataclass(frozen=True)
class StabilityStructure:
    """:func:`learn_structure` as a :class:`~pgm_dp.learners.RecordLearner`: ``budget`` an
    ``ApproxDP``; the model is an Ising MRF on the learned edges (plus a unary clique per
    variable) with zero parameters — structure only — or, on "no answer", the empty graph
    (``fit.info["edges"] is None``). ``fit.info`` holds only what is released: ``edges``,
    ``noisy_distance``, ``threshold``, ``spent`` and ``budget``."""

    selects_structure: ClassVar[bool] = True  # the learned edges, not mrf's cliques
    eta: float = 0.5
    lam: float = 1.0
    blocks: int | None = None
    steps: int = 300

    def fit(self, data, mrf, *, budget, rng=None, accountant=None) -> Fit:
        mrf = as_model(mrf)
        msg = f"StabilityStructure needs an ApproxDP budget, got {budget!r}"
        require_budget(budget, ApproxDP, msg, TypeError)
        z = _spins(data, mrf)
        res = learn_structure(
            z,
            budget.epsilon,
            budget.delta,
            eta=self.eta,
            lam=self.lam,
            blocks=self.blocks,
            steps=self.steps,
            rng=rng,
            accountant=accountant,
        )
        names = list(mrf.domain.attributes)
        edges = [(names[i], names[j]) for i, j in sorted(res.edges or ())]
        model = MarkovRandomField(mrf.domain, [(a,) for a in names] + edges)
        info = {
            "edges": res.edges,
            "noisy_distance": res.noisy_distance,
            "threshold": res.threshold,
        }
        return Fit(model, info=info | {"spent": res.spent, "budget": budget})
