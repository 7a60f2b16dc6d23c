"""Coverage of the posterior of PrIsing's β (:func:`pgm_dp.bayes.prising_posterior`).

``β`` is drawn from the prior (uniform on the reference grid, default ``[0, 2]``) for every
release, so central credible intervals cover it at their nominal rate in expectation (Cook,
Gelman & Rubin 2006) when the model is right. Network: Erdős–Rényi ``G(n, p)``,
``J = A / (n p)`` (PrIsing Sec. 4.1); outcomes: one Gibbs chain of ``sweeps`` sweeps; release:
Algorithm 1 at ``(ε, δ)``.

>>> res = prising_coverage(n=30, p=0.3, epsilon=20.0, delta=1e-3, releases=2, draws=20,
...                        sweeps=20, grid=5, num_samples=100)
>>> sorted(res.summary)
['cov50', 'cov80', 'cov90', 'cov95', 'releases']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from pgm_dp.bayes.ising import prising_posterior, score_reference
from pgm_dp.ising import erdos_renyi_graph, gibbs_ising, prising, scale_erdos_renyi
from pgm_dp.rng import derived_generator

__all__ = ["CoverageResult", "prising_coverage"]

LEVELS = (0.5, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class CoverageResult:
    """``runs``: one row per release (true ``beta``, ``estimate``, ``boundary``, posterior
    ``mean``/``sd``, the truth's posterior ``rank`` in [0, 1], ``cov50`` ... ``cov95``);
    ``summary``: mean coverage per level and the number of releases."""

    runs: pd.DataFrame
    summary: dict


def prising_coverage(
    n: int = 100,
    p: float = 0.1,
    epsilon: float = 20.0,
    delta: float = 1e-3,
    releases: int = 200,
    *,
    beta_max: float = 2.0,
    grid: int = 21,
    draws: int = 200,
    sweeps: int = 100,
    num_samples: int = 500,
    seed: int = 0,
    progress: bool = False,
) -> CoverageResult:
    """Coverage of the 50/80/90/95 % central intervals over ``releases`` (module docstring);
    the reference has ``grid`` points on ``[0, beta_max]``, ``draws`` chains each."""
    if releases < 1 or n < 2:
        raise ValueError("releases must be >= 1 and n >= 2")
    J = scale_erdos_renyi(erdos_renyi_graph(n, p, rng=derived_generator(seed, "graph")), p)
    betas = np.linspace(0.0, beta_max, grid)
    ref = score_reference(J, betas=betas, draws=draws, sweeps=sweeps, rng=seed + 1)
    gen = derived_generator(seed, "releases")
    rows = []
    for r in tqdm(range(releases), disable=not progress, desc="releases"):
        beta = float(gen.uniform(0.0, beta_max))
        sigma = gibbs_ising(J, beta=beta, n_chains=1, n_sweeps=sweeps, rng=gen)[0]
        rel = prising(sigma, J, epsilon, delta, rng=gen)
        idata = prising_posterior(rel, ref, num_samples=num_samples, num_chains=2, rng=r)
        d = np.asarray(idata.posterior.beta).ravel()
        row = {"beta": beta, "estimate": rel.estimate, "boundary": rel.boundary}
        row.update(mean=float(d.mean()), sd=float(d.std()), rank=float(np.mean(d < beta)))
        for lv in LEVELS:
            lo, hi = np.quantile(d, [(1 - lv) / 2, (1 + lv) / 2])
            row[f"cov{round(100 * lv)}"] = bool(lo <= beta <= hi)
        rows.append(row)
    runs = pd.DataFrame(rows)
    summary = {
        f"cov{round(100 * lv)}": float(runs[f"cov{round(100 * lv)}"].mean()) for lv in LEVELS
    }
    summary["releases"] = len(runs)
    return CoverageResult(runs, summary)
