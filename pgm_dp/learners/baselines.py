"""Reference learners for comparisons (Bernstein et al. 2017, Sec. 4.1).

Both follow the record-learner contract with ``budget=None`` (they spend nothing):

* :class:`NonPrivateMLE`: the MLE on the true sufficient statistics (no privacy).
* :class:`RandomMarginals`: "randomly generating marginals and then learning potentials via
  MLE": each clique marginal is drawn from a flat Dirichlet (our choice of distribution; the
  paper does not name one) and the MLE is fitted to these (inconsistent) marginals. It never
  reads the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PrivacyParameterError
from ..models.mrf import MarkovRandomField
from ..rng import RngLike, as_generator
from ..stats import sufficient_statistics
from .base import Fit
from .mle import fit_marginals

__all__ = ["NonPrivateMLE", "RandomMarginals"]


def _fit_targets(learner, mrf: MarkovRandomField, targets) -> Fit:
    """The MLE of ``mrf``'s structure on ``targets`` with ``learner``'s solver settings."""
    res = fit_marginals(
        mrf.replace(None), targets, l2=learner.l2, tol=learner.tol, max_iters=learner.max_iters
    )
    return Fit(
        res.model,
        [{"objective": res.objective}],
        {"iterations": res.iterations, "converged": res.converged},
    ).warn_unless_converged(type(learner).__name__, cap=learner.max_iters)


def _no_budget(budget, name: str) -> None:
    if budget is not None:
        raise PrivacyParameterError(f"{name} is a non-private reference: pass budget=None")


@dataclass(frozen=True)
class NonPrivateMLE:
    """MLE on the exact clique tables of ``data`` (``l2`` keeps it finite when a table has
    an empty cell, where the unregularised MLE does not exist). ``tol = 1e-5`` is a marginal
    mismatch of one record in 1e5, far below the sampling error; on the third-order chain
    at N = 1e5 the KL from the truth is then within 1% of the converged value."""

    l2: float = 1e-6
    tol: float = 1e-5
    max_iters: int = 2000

    def fit(
        self,
        data: Any,
        mrf: MarkovRandomField,
        *,
        budget: None = None,
        rng: RngLike = None,
        accountant: Any = None,
    ) -> Fit:
        _no_budget(budget, type(self).__name__)
        tables = sufficient_statistics(data, mrf.cliques, mrf.domain)
        n = next(iter(tables.values())).sum()
        return _fit_targets(self, mrf, {c: t / n for c, t in tables.items()})


@dataclass(frozen=True)
class RandomMarginals:
    """MLE on random Dirichlet(1) clique marginals: the floor any learner should beat."""

    l2: float = 1e-4
    tol: float = 1e-5
    max_iters: int = 2000

    def fit(
        self,
        data: Any,
        mrf: MarkovRandomField,
        *,
        budget: None = None,
        rng: RngLike = None,
        accountant: Any = None,
    ) -> Fit:
        _no_budget(budget, type(self).__name__)
        gen = as_generator(rng)
        targets = {
            c: gen.dirichlet(np.ones(mrf.domain.size(c))).reshape(mrf.domain.sizes(c))
            for c in mrf.cliques
        }
        return _fit_targets(self, mrf, targets)
