"""Zhang, Kamath, Kulkarni & Wu (2020): private parameter learning of Ising and pairwise MRFs.

* :func:`learn_ising` — Alg. 2: for every node ``i`` a sparse logistic regression of
  ``y = z_i`` on ``x = [z_-i, 1]`` by private Frank-Wolfe (Alg. 1) with ``rho' = rho / p`` and
  ``C = {||w||_1 <= 2 lambda}``; ``A_ij = w_j / 2``. The ``p`` problems run together (one
  ``jax.vmap`` of the per-node gradient, :func:`~.frank_wolfe.frank_wolfe_batch`).
  The paper outputs ``A`` only; we also read the field ``theta_i = w_bias / 2`` (Lemma 3.7).
* :func:`learn_pairwise` — Alg. 3 over ``[k]``: for every node ``i`` and ordered pair
  ``u != v`` the records ``S_uv`` with ``z_i in {u, v}``, ``x = OneHot([z_-i, 1])`` (the
  constant's row is ``e_1``), ``y = ±1``, ``rho' = rho / (k^2 p)``, ``C = {||w||_1 <= 2 lambda
  k}``; centering (Eq. 1) and ``W_ij(u, :) = (1/k) sum_v U_uv(j, :)`` (``U_uu = 0``). Our
  choices: ``Theta_i(u) = (1/k) sum_v U_uv(p, 1)`` (the same averaging on the constant's row);
  one ``T`` for all sub-problems, Lemma 3.3's with ``n`` replaced by the public ``2 n / k``
  (the size of every ``S_uv`` when the states are equally frequent; exactly ``|S_uv| = n``
  for ``k = 2``), because the true ``|S_uv|`` are data (module doc below).

Privacy: ``rho``-zCDP for neighbours that differ in one record, the number of records ``n``
being public (the paper's relation, Sec. 2; Lemma 3.3 and Lemma 2.15 over the runs). What a
fit exposes. Alg. 1's scale on the mean loss of ``S_uv`` is ``c / |S_uv|`` with ``c = L1
||C||_1 sqrt(T) / sqrt(rho')``: it would give every ``|S_uv|`` (the one-way counts) exactly.
The noisy arg-min is the same as report-noisy-min on the summed scores ``|S_uv| <s, grad L>``
(sensitivity at most ``2 ||C||_1`` when a record is replaced, whether or not it moves in or
out of ``S_uv``) with the data-independent scale ``c``, which is what runs; ``fit.info`` and
the accountant show ``c`` (``"sum_scale"``), and so do :class:`IsingEstimate` and
:class:`PairwiseEstimate`: no function returns the per-problem scales. The number of steps
``T`` (``fit.info["steps"]``; the iterates lie on a grid set by ``T``), unless given, is a
function of the public ``n``, ``p``, ``k``, ``lam`` and ``rho`` only, never of the
``|S_uv|`` (a sub-problem without records runs on noise alone; nothing is refused).

Both return estimates of the paper's parameters; the registered learners
(:class:`ZhangIsing`, :class:`ZhangPairwise`) turn them into a
:class:`~pgm_dp.models.MarkovRandomField` with the cliques of the model they are given (an edge
takes the average of its two node-wise estimates, ``(A_ij + A_ji) / 2``; estimates outside the
given structure are dropped and kept in ``fit.info``).

>>> from pgm_dp.ising import gibbs_ising
>>> A = np.array([[0.0, 0.8, 0.0], [0.8, 0.0, -0.5], [0.0, -0.5, 0.0]])
>>> z = gibbs_ising(A, n_chains=4000, n_sweeps=30, rng=0)
>>> est = learn_ising(z, lam=1.5, rho=None, max_steps=300)
>>> bool(np.max(np.abs(est.A - A)) < 0.2)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...domain import Domain
from ...errors import DataValidationError, DomainError
from ...models.mrf import MarkovRandomField
from ...privacy import ZCDP, Accountant, Budget
from ...privacy.budget import require_budget
from ...rng import RngLike
from ..base import Fit
from .frank_wolfe import frank_wolfe_batch

__all__ = [
    "IsingEstimate",
    "PairwiseEstimate",
    "ZhangIsing",
    "ZhangPairwise",
    "check_spins",
    "learn_ising",
    "learn_pairwise",
    "model_from_tables",
    "zcdp_for_epsilon",
]


@dataclass(frozen=True)
class IsingEstimate:
    """Alg. 2's ``A`` ``(p, p)`` (row ``i`` from node ``i``), fields, steps, cost and the
    data-independent ``sum_scale`` (module doc)."""

    A: np.ndarray
    theta: np.ndarray
    steps: int
    spent: ZCDP | None
    sum_scale: float = 0.0


@dataclass(frozen=True)
class PairwiseEstimate:
    """Alg. 3's ``W`` ``(p, p, k, k)`` (``W[i, j]`` from node ``i``), ``Theta`` ``(p, k)``,
    steps, cost and the data-independent ``sum_scale`` (module doc; no per-sub-problem
    scale, which would give every ``|S_uv|``)."""

    W: np.ndarray
    Theta: np.ndarray
    steps: int
    spent: ZCDP | None
    sum_scale: float = 0.0


def check_spins(samples: Any) -> np.ndarray:
    """A float64 copy of ``(n, p)`` ±1 spins, or a :class:`DataValidationError`."""
    z = np.array(samples, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] < 1 or z.shape[1] < 2:
        raise DataValidationError(f"samples must be (n, p) spins with p >= 2, got {z.shape}")
    if not np.all((z == 1.0) | (z == -1.0)):
        raise DataValidationError("samples must be spins in {-1, +1}")
    return z


def _check_lam(lam: float) -> float:
    if isinstance(lam, bool) or not math.isfinite(lam) or lam <= 0:
        raise DataValidationError(f"lam (the width bound lambda) must be finite and > 0: {lam!r}")
    return float(lam)


def _rho(rho: ZCDP | float | None) -> float | None:
    """The one conversion of a budget: a :class:`~pgm_dp.privacy.ZCDP` or the paper's bare
    ``rho``; ``None`` (or ``inf``) for the non-private reference."""
    rho = getattr(rho, "rho", rho)  # a ZCDP or the bare rho
    return None if rho is None or rho == math.inf else float(rho)


def learn_ising(
    samples: Any,
    lam: float,
    rho: ZCDP | float | None,
    *,
    steps: int | None = None,
    max_steps: int = 2000,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> IsingEstimate:
    """Alg. 2 (Thm. 3.8): ``rho``-zCDP estimate of an Ising model's ``A`` from ±1 spins.

    ``lam`` bounds the width ``lambda(A, theta)``; ``rho``: a ``ZCDP`` budget or its bare
    ``rho``, ``None`` (or ``inf``) for the non-private reference (exact Frank-Wolfe). Each
    node spends ``rho / p``.
    """
    z = check_spins(samples)
    lam = _check_lam(lam)
    n, p = z.shape
    features = np.hstack([z, np.ones((n, 1))])
    cols = ~np.eye(p, p + 1, dtype=bool)  # node i uses [z_-i, 1]
    r = _rho(rho)
    res = frank_wolfe_batch(
        features,
        z,
        radius=2 * lam,
        rho=None if r is None else r / p,
        cols=cols,
        steps=steps,
        max_steps=max_steps,
        rng=rng,
        accountant=accountant,
        what="Zhang et al. Alg. 2 (p private Frank-Wolfe runs)",
    )
    A = res.w[:, :p] / 2
    A[np.diag_indices(p)] = 0.0
    return IsingEstimate(A, res.w[:, p] / 2, res.steps, res.spent, res.sum_scale)


def _pairwise_problems(z: np.ndarray, k: int):
    """Alg. 3 lines 1-4 for all ``(i, u, v)``: features, labels, row and column masks."""
    n, p = z.shape
    onehot = np.zeros((n, (p + 1) * k))
    onehot[np.arange(n)[:, None], np.arange(p) * k + z] = 1.0
    onehot[:, p * k] = 1.0  # the constant 1, encoded as e_1
    triples = [(i, u, v) for i in range(p) for u in range(k) for v in range(k) if u != v]
    labels = np.stack([np.where(z[:, i] == u, 1.0, -1.0) for i, u, _ in triples], axis=1)
    rows = np.stack([np.isin(z[:, i], (u, v)) for i, u, v in triples], axis=1).astype(float)
    cols = np.ones((len(triples), (p + 1) * k), dtype=bool)
    for b, (i, _, _) in enumerate(triples):
        cols[b, i * k : (i + 1) * k] = False
    return onehot, labels, rows, cols, triples


def _center_and_average(w: np.ndarray, triples, p: int, k: int):
    """Eq. (1) centering, then Alg. 3 line 8's average over ``v`` (and ``Theta``, ours)."""
    W, Theta = np.zeros((p, p, k, k)), np.zeros((p, k))
    for b, (i, u, _) in enumerate(triples):
        rows = w[b].reshape(p + 1, k)
        others = [j for j in range(p) if j != i]
        wo = rows[others]
        U = wo - wo.mean(axis=1, keepdims=True)  # first p - 1 rows of Eq. (1)
        const = rows[p] + wo.sum() / k  # last row of Eq. (1)
        W[i, others, u, :] += U / k
        Theta[i, u] += const[0] / k
    return W, Theta


def learn_pairwise(
    samples: Any,
    k: int,
    lam: float,
    rho: ZCDP | float | None,
    *,
    steps: int | None = None,
    max_steps: int = 2000,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> PairwiseEstimate:
    """Alg. 3 (Thm. 3.11): ``rho``-zCDP estimate of a pairwise model over ``[k]``.

    ``samples``: ``(n, p)`` integer codes in ``0..k-1``; ``lam`` bounds the width. Each of the
    ``k (k - 1) p`` sub-problems spends ``rho / (k^2 p)``. ``T`` (unless ``steps``) is Lemma
    3.3's for ``2 n / k`` records, a public number (module doc).
    """
    z = np.array(samples)
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise DataValidationError(f"k must be an integer >= 2, got {k!r}")
    k = int(k)
    if z.ndim != 2 or z.shape[1] < 2 or not np.all(np.isin(z, np.arange(k))):
        raise DataValidationError(f"samples must be (n, p >= 2) codes in 0..{k - 1}")
    z = z.astype(np.int64)
    lam = _check_lam(lam)
    p = z.shape[1]
    features, labels, rows, cols, triples = _pairwise_problems(z, k)
    r = _rho(rho)
    res = frank_wolfe_batch(
        features,
        labels,
        radius=2 * lam * k,
        rho=None if r is None else r / (k * k * p),
        rows=rows,
        cols=cols,
        steps=steps,
        max_steps=max_steps,
        size=2 * z.shape[0] / k,  # public: T never reads the |S_uv| (module doc)
        rng=rng,
        accountant=accountant,
        what="Zhang et al. Alg. 3 (k(k-1)p private Frank-Wolfe runs)",
    )
    W, Theta = _center_and_average(res.w, triples, p, k)
    return PairwiseEstimate(W, Theta, res.steps, res.spent, res.sum_scale)


def zcdp_for_epsilon(epsilon: float, n: int) -> ZCDP:
    """The largest ``rho`` whose Lemma 2.14 (2) conversion is ``(epsilon, 1/n)``-DP:
    ``rho + 2 sqrt(rho log n) = epsilon``, i.e. ``sqrt(rho) = sqrt(log n + eps) - sqrt(log n)``.

    >>> round(zcdp_for_epsilon(1.0, 1000).rho, 4)
    0.0338
    """
    log_n = math.log(max(n, 2))
    return ZCDP((math.sqrt(log_n + epsilon) - math.sqrt(log_n)) ** 2)


def _budget_rho(budget: Budget | None, learner: str) -> float | None:
    if budget is None:
        return None
    require_budget(budget, ZCDP, f"{learner} needs a ZCDP budget (or None), got {budget!r}")
    return budget.rho


def model_from_tables(mrf: MarkovRandomField, unary, pair) -> MarkovRandomField:
    """``mrf``'s structure with tables ``unary(i)`` and ``pair(i, j)`` (variable indices).

    A field of a node without a unary clique is added to its first edge. Cliques of more than
    two variables are refused (:class:`~pgm_dp.errors.DomainError`).
    """
    if any(len(c) > 2 for c in mrf.cliques):
        raise DomainError("this learner fits pairwise models: the model has cliques of size > 2")
    index = mrf.domain.index
    tables, covered = {}, set()
    for c in mrf.cliques:
        if len(c) == 1:
            tables[c] = unary(index(c[0]))
            covered.add(c[0])
    for c in mrf.cliques:
        if len(c) == 2:
            i, j = index(c[0]), index(c[1])
            t = np.array(pair(i, j))
            for end, axis in ((c[0], 1), (c[1], 0)):
                if end not in covered:
                    t = t + np.expand_dims(unary(index(end)), axis)
                    covered.add(end)
            tables[c] = t
    return mrf.replace(tables)


def _check_binary(mrf: MarkovRandomField) -> None:
    if any(size != 2 for size in mrf.domain.shape):
        raise DomainError("an Ising learner needs 2-state variables (code 0 = -1, 1 = +1)")


def _spins(data: Any, mrf: MarkovRandomField) -> np.ndarray:
    _check_binary(mrf)
    return 2.0 * mrf.domain.encode(data) - 1.0


def as_model(structure: MarkovRandomField | Domain) -> MarkovRandomField:
    """``structure`` itself, or the complete pairwise graph with fields over a domain."""
    if isinstance(structure, MarkovRandomField):
        return structure
    if isinstance(structure, Domain):
        names = list(structure.attributes)
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        return MarkovRandomField(structure, [(a,) for a in names] + pairs)
    raise DomainError(f"expected a MarkovRandomField or a Domain, got {type(structure).__name__}")


@dataclass(frozen=True)
class _FrankWolfeLearner:
    """The fit Alg. 2 and Alg. 3 share: check the model (pairwise, ``k`` states each) and the
    budget before any charge, learn, then fill the model's tables from the estimate
    (``_states`` and ``_learn``: each algorithm's own)."""

    lam: float = 1.0
    steps: int | None = None
    max_steps: int = 2000

    def fit(self, data, mrf, *, budget=None, rng=None, accountant=None) -> Fit:
        mrf = as_model(mrf)
        k = self._states(mrf)
        model_from_tables(mrf, lambda i: np.zeros(k), lambda i, j: np.zeros((k, k)))  # checks
        rho = _budget_rho(budget, type(self).__name__)
        run = {"steps": self.steps, "max_steps": self.max_steps, "rng": rng}
        est, unary, pair, info = self._learn(mrf.domain.encode(data), k, rho, run, accountant)
        info |= {"steps": est.steps, "sum_scale": est.sum_scale, "spent": est.spent}
        return Fit(model_from_tables(mrf, unary, pair), info=info | {"budget": budget})


@dataclass(frozen=True)
class ZhangIsing(_FrankWolfeLearner):
    """Alg. 2 as a :class:`~pgm_dp.learners.RecordLearner` (``budget``: ``ZCDP`` or None)."""

    def _states(self, mrf: MarkovRandomField) -> int:
        _check_binary(mrf)
        return 2

    def _learn(self, codes, k, rho, run, accountant):
        est = learn_ising(2.0 * codes - 1.0, self.lam, rho, accountant=accountant, **run)
        spin = np.array([-1.0, 1.0])
        A = (est.A + est.A.T) / 2
        unary, pair = lambda i: est.theta[i] * spin, lambda i, j: A[i, j] * np.outer(spin, spin)
        return est, unary, pair, {"A": est.A, "theta": est.theta}


@dataclass(frozen=True)
class ZhangPairwise(_FrankWolfeLearner):
    """Alg. 3 as a :class:`~pgm_dp.learners.RecordLearner` (``budget``: ``ZCDP`` or None)."""

    def _states(self, mrf: MarkovRandomField) -> int:
        k = mrf.domain.shape[0]
        if any(size != k for size in mrf.domain.shape):
            raise DomainError("Alg. 3 needs every variable over the same [k]")
        return k

    def _learn(self, codes, k, rho, run, accountant):
        est = learn_pairwise(codes, k, self.lam, rho, accountant=accountant, **run)
        W = (est.W + est.W.transpose(1, 0, 3, 2)) / 2
        unary, pair = lambda i: est.Theta[i], lambda i, j: W[i, j]
        return est, unary, pair, {"W": est.W, "Theta": est.Theta}
