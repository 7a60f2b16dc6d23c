"""Posterior marginal draws of many releases of one model structure at once.

Contract: :func:`marginal_draws` returns, per release, the draws of the clique marginals that
:func:`~pgm_dp.bayes.posterior` gives for it with the same ``rng`` (equal to the Laplace
fit's tolerance), without the ArviZ tree and the posterior predictive: what calibration and
simulation-based calibration need. On the exact-covariance path the Laplace fits of all the
releases are one compiled program (:func:`~pgm_dp.bayes.laplace.laplace_fits`, ``lax.map``
over releases); the Laplace method's draws and the marginals follow per release from programs
compiled once per structure, and NUTS runs per release from those fits (its program too is
compiled once per structure and run length). The plug-in path fits release by release.
The Laplace method's marginals are the linearisation at the MAP, as :func:`posterior`'s
(:mod:`~pgm_dp.bayes.linear`).

>>> from pgm_dp import Domain, MarkovRandomField
>>> from pgm_dp.privacy import ZCDP, release_marginals
>>> mrf = MarkovRandomField(Domain(["A", "B"], [2, 2]), [("A", "B")])
>>> rels = [release_marginals(mrf.sample(200, s), mrf, budget=ZCDP(0.5), mechanism="gaussian",
...                           rng=s) for s in (1, 2)]
>>> out = marginal_draws(rels, mrf, method="laplace", num_samples=50)
>>> out[1][("A", "B")].shape
(50, 2, 2)
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from ..errors import DomainError
from ..models.mrf import MarkovRandomField
from .draws import flat_marginals, site_draws, unconstrained_draws
from .fit import FitOptions, covariance_path, exact_fits, fit_posterior
from .linear import table_offsets
from .model import PRIOR_SCALE, prepare
from .nuts import RunSettings
from .posterior import _check, as_key
from .problem import ModelOptions

__all__ = ["marginal_draws"]


def marginal_draws(
    releases: Sequence,
    mrf: MarkovRandomField,
    *,
    method: str = "laplace",
    num_warmup: int = 500,
    num_samples: int = 1000,
    num_chains: int = 1,
    rngs: Sequence | None = None,
    noise_aware: bool = True,
    covariance: str = "auto",
    prior_scale: float = PRIOR_SCALE,
    laplace_noise: str = "auto",
) -> list[dict]:
    """Per release, ``{clique: draws (num_chains * num_samples, *table shape)}`` of
    ``mrf``'s clique marginals under the posterior given that release; the arguments as
    :func:`~pgm_dp.bayes.posterior`'s, ``rngs`` one per release (default ``0, 1, ...``).
    See the module docstring."""
    _check(method, laplace_noise, num_warmup, num_samples, num_chains)
    rngs = list(range(len(releases))) if rngs is None else list(rngs)
    if len(rngs) != len(releases):
        raise DomainError(f"{len(releases)} releases but {len(rngs)} rngs")
    problems = [prepare(r, mrf) for r in releases]
    if not problems:
        return []
    options = ModelOptions(noise_aware, prior_scale)
    nuts = method == "nuts"
    if covariance_path(problems[0], mrf, covariance) == "exact":
        fits = exact_fits(problems, options, nuts)
    else:
        how = FitOptions("plugin", laplace_noise, nuts)
        fits = [fit_posterior(p, mrf, options, how) for p in problems]
    out = []
    for fit, rng in zip(fits, rngs, strict=True):
        key_run, _ = jax.random.split(as_key(rng))
        run = RunSettings(num_warmup, num_samples, num_chains, key_run, prior_scale)
        flat = unconstrained_draws(method, fit, run).unconstrained
        mu = flat_marginals(method, fit, site_draws(fit, flat, (num_chains, num_samples))).model
        p = fit.problem
        offsets = table_offsets(p.shapes)
        out.append(
            {
                c: mu[:, a:b].reshape(-1, *s)
                for c, s, a, b in zip(mrf.cliques, p.shapes, offsets[:-1], offsets[1:], strict=True)
            }
        )
    return out
