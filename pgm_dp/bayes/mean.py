"""The posterior's means as a model: :class:`PosteriorMean`, the registered release learner
(name ``"bayes"``), and the helpers it is made of."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xarray import DataTree

from ..learners.base import Fit
from ..learners.mle import fit_marginals
from ..models.mrf import MarkovRandomField
from .labels import dim_name, site_name
from .posterior import posterior

__all__ = ["PosteriorMean", "posterior_marginals", "posterior_mean_model"]


def posterior_marginals(idata: DataTree, mrf: MarkovRandomField) -> dict:
    """``{clique: posterior mean table}`` from ``idata``'s ``marginal:...`` sites (axes in
    the clique's order)."""
    post = idata.posterior
    out = {}
    for c in mrf.cliques:
        site = post[site_name(c)].mean(("chain", "draw"))
        out[c] = np.asarray(site.transpose(*[dim_name(v) for v in c]))
    return out


@dataclass(frozen=True)
class PosteriorMean:
    """Release learner: the model whose marginals are the posterior means (moment matched by
    :func:`~pgm_dp.learners.fit_marginals`). Defaults: NUTS, one chain of 300 warm-up steps
    and 300 draws (its KL on the Bernstein chain: ``docs/bayes.md``); ``info["idata"]``
    keeps the posterior."""

    method: str = "nuts"
    num_warmup: int = 300
    num_samples: int = 300
    num_chains: int = 1
    noise_aware: bool = True
    seed: int = 0

    def fit(self, release, mrf: MarkovRandomField) -> Fit:
        idata = posterior(
            release,
            mrf,
            num_warmup=self.num_warmup,
            num_samples=self.num_samples,
            num_chains=self.num_chains,
            rng=self.seed,
            noise_aware=self.noise_aware,
            method=self.method,
        )
        model = posterior_mean_model(idata, mrf)
        return Fit(model, info={"idata": idata, "budget": release.budget})


def posterior_mean_model(idata: DataTree, mrf: MarkovRandomField) -> MarkovRandomField:
    """The model of ``mrf``'s structure whose marginals are ``idata``'s posterior means
    (moment matched by :func:`~pgm_dp.learners.fit_marginals`)."""
    means = posterior_marginals(idata, mrf)
    return fit_marginals(mrf.replace(None), means, l2=1e-8, tol=1e-7).model
