"""Naive MLE on noisy sufficient statistics (Bernstein et al. 2017, Sec. 3.1).

The noisy tables ``y`` are used in place of the true counts ``n``: pseudo-marginals
``mu_bar = y / N``, optionally projected clique by clique onto the probability simplex
(Euclidean projection, Duchi et al. 2008, Fig. 1), then the MLE with the ``λ ||θ||²``
regulariser of Sec. 3.1 / Fig. 1(c) is computed by the shared solver
:func:`pgm_dp.learners.mle.fit_marginals`.

Example
-------
>>> import numpy as np
>>> project_to_simplex(np.array([0.5, -0.2, 0.9]))
array([0.3, 0. , 0.7])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..models.mrf import MarkovRandomField
from .base import Fit, check_release_matches
from .mle import fit_many, fit_marginals

__all__ = ["project_to_simplex", "NaiveMLE", "noisy_pseudo_marginals"]


def project_to_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` (any shape, flattened) onto the probability simplex.

    Duchi, Shalev-Shwartz, Singer, Chandra (2008), Fig. 1: sort, find the largest ``rho``
    with ``u_rho - (sum_{j<=rho} u_j - 1) / rho > 0``, shift by ``tau`` and clip at zero.
    """
    v = np.asarray(v, dtype=np.float64)
    flat = v.ravel()
    u = np.sort(flat)[::-1]
    css = np.cumsum(u) - 1.0
    ks = np.arange(1, flat.size + 1)
    rho = np.nonzero(u - css / ks > 0)[0][-1]
    tau = css[rho] / (rho + 1)
    return np.maximum(flat - tau, 0.0).reshape(v.shape)


def noisy_pseudo_marginals(release, project: bool = True) -> dict:
    """``y_C / N`` for each clique, projected onto the simplex when ``project``."""
    out = {}
    for cl in release.cliques:
        mu = np.asarray(release.noisy[cl], dtype=np.float64) / float(release.total)
        out[cl] = project_to_simplex(mu) if project else mu
    return out


@dataclass(frozen=True)
class NaiveMLE:
    """Naive MLE: fit as if the noisy tables were the true ones (Sec. 3.1).

    ``project``: project each clique's pseudo-marginal onto the simplex first (Fig. 1b);
    ``l2``: ``λ`` of ``λ ||θ||²`` on the per-record scale (Fig. 1c); ``tol``/``max_iters``:
    the solver's convergence criterion (max marginal mismatch) and iteration cap.
    :meth:`fit_many` fits many releases of one structure as one vectorised program.
    """

    project: bool = True
    l2: float = 1e-4
    tol: float = 1e-8
    max_iters: int = 2000

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        check_release_matches(release, mrf)
        targets = noisy_pseudo_marginals(release, self.project)
        res = fit_marginals(
            mrf.replace(None), targets, l2=self.l2, tol=self.tol, max_iters=self.max_iters
        )
        return self._fit(res, release)

    def fit_many(self, releases: Sequence, mrf: MarkovRandomField) -> list[Fit]:
        """:meth:`fit` of each release of ``mrf``'s structure (seeds, budgets, calibration
        runs), as one program vectorised over the releases
        (:func:`~pgm_dp.learners.mle.fit_many`): equal to the fits one by one, to
        rounding."""
        for release in releases:
            check_release_matches(release, mrf)
        targets = [noisy_pseudo_marginals(r, self.project) for r in releases]
        results = fit_many(
            mrf.replace(None), targets, l2=self.l2, tol=self.tol, max_iters=self.max_iters
        )
        return [self._fit(res, r) for res, r in zip(results, releases, strict=True)]

    def _fit(self, res, release) -> Fit:
        return Fit(
            model=res.model,
            history=[{"objective": res.objective}],
            info={
                "iterations": res.iterations,
                "converged": res.converged,
                "max_gradient": res.max_gradient,
                "budget": release.budget,
            },
        ).warn_unless_converged("NaiveMLE", cap=self.max_iters)
