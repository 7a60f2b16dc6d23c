"""Binary ``t``-wise MRFs on ``{±1}^p`` (Zhang et al. 2020, Sec. 4): Alg. 4 and Alg. 5.

The model is ``Pr(z) ∝ exp(h(z))`` with ``h = sum_I h_bar(I) prod_{j in I} z_j`` over sets of
at most ``t`` variables; Lemma 4.1: ``Pr(z_i = 1 | z_-i) = sigma(2 d_i h(z))``.

* Alg. 4 (``norm="l1"``): per node ``i``, sparse logistic regression of ``z_i`` on all
  monomials ``prod_{j in I} z_j``, ``I ⊂ [p] \\ {i}``, ``|I| <= t - 1`` (``I = {}`` is the
  constant) by private Frank-Wolfe, ``rho' = rho / p``, ``C = {||w||_1 <= 2 lambda}``; then
  ``u(I ∪ {i}) = w(I) / 2`` when ``i = min(I ∪ {i})``.
* Alg. 5 (``norm="linf"``): the records are split (``n_1`` for the regressions, ``n_2`` for the
  parities; the split is open in the paper, ours is half and half); all parities
  ``Q(I)``, ``|I| <= t``, of the second part are released by PMW
  (:func:`~.pmw.pmw_release`) with ``rho / 2``; the regressions spend
  ``rho / (2p)`` each; with ``v_i(J) = w(J) / 2``, line 9's derivative correction is
  ``u(I ∪ {i}) = sum_{J ⊇ I} v_i(J) Q_hat(J \\ I)`` (``d_I v_i`` has coefficient
  ``v_i(I' ∪ I)`` at ``I'``; ``Q_hat({}) = 1``). PMW limits Alg. 5 to ``p <=`` 20.

Both vectorise the ``p`` regressions (:func:`~.frank_wolfe.frank_wolfe_batch`).

>>> z = np.where(np.random.default_rng(0).random((3000, 3)) < 0.5, 1.0, -1.0)
>>> u = learn_binary_mrf(z, 3, lam=1.0, rho=None, max_steps=100).coefficients
>>> sorted(u)[:4], bool(max(abs(v) for v in u.values()) < 0.1)
([(0,), (0, 1), (0, 1, 2), (0, 2)], True)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...errors import DataValidationError, DomainError
from ...privacy import ZCDP, Accountant, compose
from ...rng import RngLike, as_generator
from ..base import Fit
from .frank_wolfe import check_steps, frank_wolfe_batch
from .pairwise import _budget_rho, _check_lam, _rho, _spins, as_model, check_spins
from .pmw import pmw_release

__all__ = ["BinaryMRFEstimate", "ZhangBinaryMRF", "learn_binary_mrf", "monomials"]

Set = tuple[int, ...]


@dataclass(frozen=True)
class BinaryMRFEstimate:
    """``coefficients`` ``{I: u(I)}`` for ``1 <= |I| <= t``, the steps and the cost."""

    coefficients: dict[Set, float]
    steps: int
    spent: ZCDP | None


def monomials(p: int, order: int) -> list[Set]:
    """All sets ``I ⊂ range(p)`` with ``|I| <= order`` (the empty set first).

    >>> monomials(3, 1)
    [(), (0,), (1,), (2,)]
    """
    return [c for r in range(order + 1) for c in itertools.combinations(range(p), r)]


def _features(z: np.ndarray, sets: list[Set]) -> np.ndarray:
    return np.stack([np.prod(z[:, list(s)], axis=1) for s in sets], axis=1)


def _regressions(z, t, lam, rho_each, *, steps, max_steps, rng, accountant):
    """Alg. 4 lines 1-3 / Alg. 5 lines 4-6 for all nodes: ``{node: {I: w(I) / 2}}``."""
    p = z.shape[1]
    sets = monomials(p, t - 1)
    cols = np.array([[i not in s for s in sets] for i in range(p)])
    res = frank_wolfe_batch(
        _features(z, sets),
        z,
        radius=2 * lam,
        rho=rho_each,
        cols=cols,
        steps=steps,
        max_steps=max_steps,
        rng=rng,
        accountant=accountant,
        what="Zhang et al. Alg. 4/5 regressions",
    )
    v = {i: {s: res.w[i, c] / 2 for c, s in enumerate(sets) if i not in s} for i in range(p)}
    return v, res


def _derivative_correction(v: dict, q_hat: dict, t: int) -> dict[Set, float]:
    """Alg. 5 line 9: ``u(I ∪ {i}) = sum_{J ⊇ I} v_i(J) Q_hat(J \\ I)``, ``i = min``."""
    u = {}
    for i, vi in v.items():
        for S in vi:
            if S and min(S) < i:
                continue
            total = sum(
                w * q_hat[tuple(sorted(set(J) - set(S)))] for J, w in vi.items() if set(S) <= set(J)
            )
            u[tuple(sorted((*S, i)))] = float(total)
    return u


def learn_binary_mrf(
    samples: Any,
    t: int,
    lam: float,
    rho: ZCDP | float | None,
    *,
    norm: Literal["l1", "linf"] = "l1",
    steps: int | None = None,
    max_steps: int = 2000,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> BinaryMRFEstimate:
    """Alg. 4 (``norm="l1"``, Thm. 4.2) or Alg. 5 (``"linf"``, Thm. 4.7): a ``rho``-zCDP
    estimate of a binary ``t``-wise MRF's coefficients from ±1 ``samples``."""
    z = check_spins(samples)
    lam, r = _check_lam(lam), _rho(rho)
    if isinstance(t, bool) or int(t) != t or t < 2:
        raise DataValidationError(f"t must be an integer >= 2, got {t!r}")
    if norm not in ("l1", "linf"):
        raise DataValidationError(f"norm must be 'l1' or 'linf', got {norm!r}")
    check_steps(steps, max_steps)  # Alg. 5 charges PMW before the regressions run
    t, p = int(t), z.shape[1]
    opts = {"steps": steps, "max_steps": max_steps, "accountant": accountant}
    gen = as_generator(rng)
    if norm == "l1":
        v, res = _regressions(z, t, lam, None if r is None else r / p, rng=gen, **opts)
        u = {
            tuple(sorted((*S, i))): w
            for i, vi in v.items()
            for S, w in vi.items()
            if not S or min(S) > i
        }
        return BinaryMRFEstimate(u, res.steps, res.spent)
    n1 = z.shape[0] // 2
    if n1 < 1 or z.shape[0] - n1 < 1:
        raise DataValidationError("Alg. 5 splits the records: need at least 2")
    sets = [s for s in monomials(p, t) if s]
    if r is None:
        q = _features(z[n1:], sets).mean(axis=0)
        pmw_cost = None
    else:  # PMW checks p before any charge; the whole cost must fit before any noise
        if accountant is not None:
            accountant.check(ZCDP(r), what="Zhang et al. Alg. 5")
        out = pmw_release(z[n1:], sets, ZCDP(r / 2), rng=gen, accountant=accountant)
        q, pmw_cost = out.answers, out.spent
    q_hat = {(): 1.0} | dict(zip(sets, map(float, q), strict=True))
    v, res = _regressions(z[:n1], t, lam, None if r is None else r / (2 * p), rng=gen, **opts)
    spent = None if r is None else compose(pmw_cost, res.spent)
    return BinaryMRFEstimate(_derivative_correction(v, q_hat, t), res.steps, spent)


@dataclass(frozen=True)
class ZhangBinaryMRF:
    """Alg. 4 / 5 as a :class:`~pgm_dp.learners.RecordLearner` (``budget``: ``ZCDP`` or
    None). Each coefficient goes to the first clique of the given model containing its set;
    coefficients outside every clique are dropped (all are in ``fit.info``)."""

    t: int = 3
    lam: float = 1.0
    norm: Literal["l1", "linf"] = "l1"
    steps: int | None = None
    max_steps: int = 2000

    def fit(self, data, mrf, *, budget=None, rng=None, accountant=None) -> Fit:
        mrf = as_model(mrf)
        z, rho = _spins(data, mrf), _budget_rho(budget, "ZhangBinaryMRF")
        if any(len(c) > self.t for c in mrf.cliques):
            raise DomainError(f"the model has cliques larger than t = {self.t}")
        est = learn_binary_mrf(
            z,
            self.t,
            self.lam,
            rho,
            norm=self.norm,
            steps=self.steps,
            max_steps=self.max_steps,
            rng=rng,
            accountant=accountant,
        )
        index = [tuple(mrf.domain.index(v) for v in c) for c in mrf.cliques]
        tables = [np.zeros((2,) * len(c)) for c in index]
        spins = np.array([-1.0, 1.0])
        for S, coef in est.coefficients.items():
            home = next((k for k, c in enumerate(index) if set(S) <= set(c)), None)
            if home is None:
                continue
            axes = [index[home].index(j) for j in S]
            grids = np.meshgrid(*([spins] * len(index[home])), indexing="ij")
            tables[home] = tables[home] + coef * math.prod(grids[a] for a in axes)
        info = {"coefficients": est.coefficients, "steps": est.steps}
        return Fit(mrf.replace(tables), info=info | {"spent": est.spent, "budget": budget})
