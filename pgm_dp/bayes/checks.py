"""Posterior predictive checks of any fitted model against the observed private release.

Contract: :func:`predictive_check` takes the release and a fitted model — a
:class:`~pgm_dp.models.MarkovRandomField` (naive MLE, CGM-EM, PSGD, ...: replicated releases
are simulated through the release's own mechanism: ``N`` records from the model, their clique
tables, the release's noise kind and scale) or the ArviZ ``xarray.DataTree`` from
:func:`~pgm_dp.bayes.posterior` — and returns a :class:`PredictiveCheck`: per clique the
discrepancy ``D_C(y) = sum (y - E y)^2 / Var y`` (moments from the replicates; Gelman, Meng
& Stern 1996, Eq. 2.6) of the observed and the replicated releases, and the predictive
p-value ``P(D_C(y_rep) >= D_C(y_obs))``. :func:`plot_check` draws the replicated
discrepancies with the observed one per clique.

A posterior is checked by the *sampled posterior p-value* (Gosselin 2011; Johnson 2004
for the χ² case): one draw ``theta~`` of the posterior (chosen by ``rng``), and the
replicates ``y_rep ~ p(y | theta~)``: per table, ``Multinomial(N, mu_C(theta~))`` counts
(the model's law of the records' table, exact) plus the release's own noise. Where the
release comes from the model, ``(theta~, y)`` has the law of ``(theta, y)``, so the p-value
is uniform: calibrated, unlike the posterior predictive p-value over all draws, which uses
the release twice and piles up near 1 (a multi-way table the model fits gets ``p = 1``
whatever the fit), so it has little power. The Laplace method's draws are its
approximation's, so its p-values are calibrated up to that approximation.

>>> import numpy as np
>>> from pgm_dp import Domain, MarkovRandomField
>>> from pgm_dp.privacy import PureDP, release_marginals
>>> dom = Domain(["A", "B", "C"], [2, 2, 2])
>>> mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], [np.eye(2), np.eye(2)])
>>> rel = release_marginals(mrf.sample(500, 0), mrf, budget=PureDP(1.0), rng=1)
>>> check = predictive_check(rel, mrf, replicates=50, rng=2)
>>> bool(check.p_values[("A", "B")] > 0.01)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..domain import Clique
from ..errors import DomainError
from ..privacy.samplers import (
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)
from ..rng import RngLike, as_generator
from ..tables import contingency_table
from .labels import dim_name
from .model import site_name

__all__ = [
    "PredictiveCheck",
    "predictive_check",
    "replicate_releases",
    "sampled_replicates",
    "plot_check",
]


@dataclass(frozen=True)
class PredictiveCheck:
    """``observed[c]``: ``D_C`` of the release; ``replicated[c]``: ``D_C`` of each
    replicate; ``p_values[c]``: the predictive p-value; ``min_p``: the smallest of them."""

    observed: dict
    replicated: dict
    p_values: dict

    @property
    def min_p(self) -> float:
        return float(min(self.p_values.values()))

    def flagged(self, level: float = 0.01) -> list:
        """The cliques whose p-value is below ``level``."""
        return [c for c, p in self.p_values.items() if p < level]

    def __repr__(self) -> str:
        """Short: the number of tables, the smallest p-value and the tables below 0.01 (the
        replicated discrepancies, hundreds of numbers per table, are left out)."""
        low = self.flagged()
        flagged = ", ".join(",".join(map(str, c)) for c in low[:5])
        more = "" if len(low) <= 5 else ", ..."
        return (
            f"PredictiveCheck({len(self.p_values)} tables, min_p={self.min_p:.3g}, "
            f"p<0.01: [{flagged}{more}])"
        )


def _noise(model, size: int, gen: np.random.Generator) -> np.ndarray:
    if model.scale == 0:
        return np.zeros(size)
    sampler = {
        "laplace": sample_laplace,
        "gaussian": sample_gaussian,
        "discrete_laplace": sample_discrete_laplace,
        "discrete_gaussian": sample_discrete_gaussian,
    }[model.kind]
    return np.asarray(sampler(model.scale, size, gen), dtype=np.float64)


def replicate_releases(release, model, replicates: int, rng: RngLike = None) -> dict:
    """``{clique: (replicates, *table shape)}``: releases simulated from ``model`` through
    ``release``'s mechanism (``N`` records sampled exactly, then the same noise)."""
    if model.domain != release.domain:
        raise DomainError("the model's domain differs from the release's")
    if int(replicates) != replicates or replicates < 2:
        raise DomainError(f"replicates must be an integer >= 2, got {replicates!r}")
    gen = as_generator(rng)
    n = int(round(release.total))
    dom = release.domain
    out = {c: [] for c in release.cliques}
    for _ in range(int(replicates)):
        codes = model.sample(n, gen).to_numpy()
        for c in release.cliques:
            t = contingency_table(codes, [dom.index(v) for v in c], dom.sizes(c)).astype(float)
            out[c].append(t + _noise(release.noise[c], t.size, gen).reshape(t.shape))
    return {c: np.stack(v) for c, v in out.items()}


def sampled_replicates(release, idata, replicates: int, rng: RngLike = None) -> dict:
    """``{clique: (replicates, *table shape)}``: releases simulated from one posterior draw
    (module docstring: the sampled posterior p-value's replicates), the draw chosen by
    ``rng``; the marginals read from the posterior's ``marginal:`` sites."""
    if int(replicates) != replicates or replicates < 2:
        raise DomainError(f"replicates must be an integer >= 2, got {replicates!r}")
    gen = as_generator(rng)
    post = idata.posterior
    draws = post.sizes["chain"] * post.sizes["draw"]
    pick = int(gen.integers(draws))
    n = int(round(release.total))
    out = {}
    for c in release.cliques:
        site = post[site_name(c)].transpose("chain", "draw", *[dim_name(v) for v in c]).values
        mu = np.clip(np.asarray(site, dtype=float).reshape(draws, -1)[pick], 0.0, None)
        counts = gen.multinomial(n, mu / mu.sum(), size=int(replicates)).astype(float)
        noise = _noise(release.noise[c], counts.size, gen).reshape(counts.shape)
        out[c] = (counts + noise).reshape(int(replicates), *release.domain.sizes(c))
    return out


def predictive_check(release, fitted, *, replicates: int = 100, rng: RngLike = None):
    """The :class:`PredictiveCheck` of ``fitted`` (an MRF: replicates through the release's
    mechanism; or a posterior DataTree: the sampled posterior p-value, module docstring),
    ``replicates`` releases simulated, ``rng`` their seed (and the posterior draw's)."""
    if hasattr(fitted, "posterior"):
        reps = sampled_replicates(release, fitted, replicates, rng)
    else:
        reps = replicate_releases(release, fitted, replicates, rng)
    observed, replicated, p_values = {}, {}, {}
    for c in release.cliques:
        r = reps[c].reshape(reps[c].shape[0], -1)
        mean, var = r.mean(0), np.maximum(r.var(0), 1e-12)
        d_rep = np.sum((r - mean) ** 2 / var, axis=1)
        d_obs = float(np.sum((np.ravel(release.noisy[c]) - mean) ** 2 / var))
        observed[c], replicated[c] = d_obs, d_rep
        p_values[c] = float(np.mean(d_rep >= d_obs))
    return PredictiveCheck(observed, replicated, p_values)


def plot_check(check: PredictiveCheck, path: str | Path, title: str = "") -> Path:
    """Histogram of the replicated discrepancies per clique with the observed one (PNG;
    needs matplotlib, the ``plot`` extra)."""
    from ..plotting import pyplot

    plt = pyplot()

    cliques: list[Clique] = list(check.observed)
    cols = min(4, len(cliques))
    rows = -(-len(cliques) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 2.4 * rows), squeeze=False)
    for ax, c in zip(axes.ravel(), cliques, strict=False):
        ax.hist(check.replicated[c], bins=30, color="0.7")
        ax.axvline(check.observed[c], color="C3")
        ax.set_title(f"{','.join(map(str, c))}: p={check.p_values[c]:.2f}", fontsize=8)
    for ax in axes.ravel()[len(cliques) :]:
        ax.axis("off")
    fig.suptitle(title or "posterior predictive check (red: observed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
