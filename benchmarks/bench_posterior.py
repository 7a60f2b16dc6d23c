"""Benchmark: the noise-aware posterior of a ``pgm-dp fit --data`` release of UCI Adult.

Per seed: :func:`pgm_dp.workflow.fit_table` on 10 columns of Adult (the categorical columns
with their public codes, age and hours-per-week in fixed public bins; AIM's selection, pure
ε, naive MLE), then :func:`pgm_dp.bayes.posterior` of the release. Reports:

* **coverage** of the 90 % equal-tailed intervals of every cell of every 2-way marginal of
  the workload (all pairs of the 10 columns) for the *data's own table* (the proportions of
  Adult's records, not a super-population's): a measured pair from its ``table:`` site, an
  unmeasured pair from the model's marginal (linearised at the MAP for the Laplace method,
  ``mu(theta)`` per draw for NUTS; ``--draws-unmeasured`` draws per seed), the two pooled
  apart;
* the largest R-hat and smallest bulk / tail ESS of the ``marginal:`` and ``table:`` sites;
* the posterior predictive check (:func:`pgm_dp.bayes.predictive_check` of the posterior):
  the smallest p-value and the tables below 0.01;
* **absent states**: per one-way table, states no record has: their posterior mean count
  against ``max(y, 0) + 2 sd`` (``y`` the noisy count, ``sd`` the noise's standard deviation);
* the median width of a measured pair's interval over the noise's own 90 % interval of a
  count (``width_over_noise``; the error a measured query has without a model);
* CPU seconds of the posterior (compilation included) against the fit's (the learner's
  CPU seconds, as ``fit_table`` reports them).

Run: ``python benchmarks/bench_posterior.py [--eps 1.0] [--seeds 0 1 2] [--method laplace]
[--draws 500] [--chains 2]``.
"""

from __future__ import annotations

import argparse
import itertools
import time

import arviz_stats
import numpy as np

from pgm_dp import load_adult
from pgm_dp.bayes import posterior, predictive_check
from pgm_dp.bayes.model import table_name
from pgm_dp.models import MarkovRandomField
from pgm_dp.privacy import PureDP
from pgm_dp.workflow import fit_table

COLUMNS = ["age", "workclass", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "hours-per-week", "income>50K"]  # fmt: skip
BINS = {"age": [10, 25, 35, 45, 55, 65], "hours-per-week": [20, 35, 41, 50]}


def adult_release(eps: float, seed: int, columns=COLUMNS):
    """The Adult frame of ``columns`` and ``fit_table``'s result at pure ``eps``."""
    df, dom = load_adult(columns)
    spec = {c: {"categories": list(range(dom.size([c])))} for c in columns}
    spec |= {c: {"bins": b} for c, b in BINS.items() if c in columns}
    return df, fit_table(df, spec, budget=PureDP(eps), rng=seed)


def true_table(codes: np.ndarray, pair, dom) -> np.ndarray:
    t = np.zeros(dom.sizes(pair))
    np.add.at(t, tuple(codes[:, dom.index(v)] for v in pair), 1.0)
    return t / len(codes)


def unmeasured_draws(idata, mrf, pairs, method: str, draws: int) -> dict:
    """``{pair: (draws, cells)}`` of the model's marginals of pairs in no clique: NUTS's
    ``mu(theta)`` per draw; for the Laplace method the linearisation at the MAP (the draws'
    mean), by central differences along each draw."""
    every = idata.posterior["theta"].values.reshape(-1, idata.posterior["theta"].shape[-1])
    theta = every[np.linspace(0, len(every) - 1, draws).astype(int)]
    shapes = [mrf.domain.sizes(c) for c in mrf.cliques]

    def marg(flat):
        tables, at = [], 0
        for s in shapes:
            tables.append(flat[at : at + int(np.prod(s))].reshape(s))
            at += int(np.prod(s))
        m = mrf.replace(tables).marginals(pairs)
        return np.concatenate([np.ravel(m[p]) for p in pairs])

    out = []
    if method == "nuts":
        out = [marg(t) for t in theta]
    else:
        hat = every.mean(0)  # the Laplace approximation's centre, the MAP
        base, eps = marg(hat), 1e-4
        out = [base + (marg(hat + eps * (t - hat)) - marg(hat - eps * (t - hat))) / (2 * eps)
               for t in theta]  # fmt: skip
    flat = np.clip(np.array(out), 0.0, None)
    res, at = {}, 0
    for p in pairs:
        size = int(np.prod(mrf.domain.sizes(p)))
        res[p] = flat[:, at : at + size]
        at += size
    return res


def noise_halfwidth(noise) -> float:
    """Half-width of the noise's own 90 % interval of one count (the error of a measured
    query alone, as AIM's per-query bound of a measured marginal): ``b ln 10`` for Laplace
    kinds, ``1.645 sigma`` for Gaussian ones."""
    return noise.scale * (np.log(10.0) if noise.is_laplace else 1.6449)


def covered(draws: np.ndarray, truth: np.ndarray) -> np.ndarray:
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
    return (lo - 1e-12 <= truth) & (truth <= hi + 1e-12)


def one_seed(eps: float, seed: int, a) -> dict:
    df, tf = adult_release(eps, seed, a.columns)
    rel, dom = tf.release, tf.release.domain
    codes = np.asarray(tf.plan.encode(df))
    mrf = MarkovRandomField(dom, rel.cliques)
    cpu = time.process_time()
    idata = posterior(rel, mrf, method=a.method, num_warmup=a.warmup, num_samples=a.draws,
                      num_chains=a.chains, rng=seed)  # fmt: skip
    post_cpu = time.process_time() - cpu
    measured = {tuple(sorted(c, key=a.columns.index)): c for c in rel.cliques if len(c) == 2}
    hits_m, pairs_u, widths = [], [], []
    for pair in itertools.combinations(a.columns, 2):
        c = measured.get(pair)
        if c is None:
            pairs_u.append(pair)
            continue
        d = idata.posterior[table_name(c)].values.reshape(-1, dom.size(c))
        hits_m.append(covered(d, true_table(codes, c, dom).ravel()))
        lo, hi = np.quantile(d, [0.05, 0.95], axis=0)
        widths.append((hi - lo) * rel.total / (2 * noise_halfwidth(rel.noise[c])))
    hits_u = []
    if pairs_u and a.draws_unmeasured:
        for p, d in unmeasured_draws(idata, mrf, pairs_u, a.method, a.draws_unmeasured).items():
            hits_u.append(covered(d, true_table(codes, p, dom).ravel()))
    sites = [v for v in idata.posterior.data_vars if v.startswith(("marginal:", "table:"))]
    summ = arviz_stats.summary(idata, var_names=sites, round_to="none")
    check = predictive_check(rel, idata)
    worst = 0.0
    for c in rel.cliques:
        if len(c) != 1:
            continue
        t = true_table(codes, c, dom) * len(codes)
        sd = np.sqrt(rel.noise[c].variance)
        mean = idata.posterior[table_name(c)].values.reshape(-1, t.size).mean(0) * rel.total
        for j in np.flatnonzero(t == 0):
            worst = max(worst, mean[j] / (max(float(rel.noisy[c][j]), 0.0) + 2 * sd))
    return {
        "seed": seed,
        "tables": len(rel.cliques),
        "cells": int(sum(dom.size(c) for c in rel.cliques)),
        "cover_measured": float(np.concatenate(hits_m).mean()),
        "cells_measured": int(sum(h.size for h in hits_m)),
        "width_over_noise": float(np.median(np.concatenate(widths))),
        "cover_unmeasured": float(np.concatenate(hits_u).mean()) if hits_u else float("nan"),
        "cells_unmeasured": int(sum(h.size for h in hits_u)),
        "max_rhat": float(summ["r_hat"].max()),
        "min_ess_bulk": float(summ["ess_bulk"].min()),
        "min_ess_tail": float(summ["ess_tail"].min()),
        "min_ppc_p": check.min_p,
        "ppc_below_0.01": len(check.flagged()),
        "absent_mean_over_bound": worst,
        "fit_cpu_s": float(tf.report["fit_cpu_s"]),
        "posterior_cpu_s": post_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--method", choices=["laplace", "nuts"], default="laplace")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws-unmeasured", type=int, default=200)
    parser.add_argument("--columns", nargs="+", default=COLUMNS, help="Adult's columns")
    a = parser.parse_args()
    rows = []
    for seed in a.seeds:
        rows.append(one_seed(a.eps, seed, a))
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in rows[-1].items()), flush=True)  # fmt: skip
    cm = sum(r["cover_measured"] * r["cells_measured"] for r in rows)
    cu = sum(np.nan_to_num(r["cover_unmeasured"]) * r["cells_unmeasured"] for r in rows)
    nm, nu = sum(r["cells_measured"] for r in rows), sum(r["cells_unmeasured"] for r in rows)
    print(
        f"pooled coverage (90 % intervals): measured pairs {cm / nm:.3f} over {nm} cells, "
        f"unmeasured pairs {cu / max(nu, 1):.3f} over {nu} cells, all {(cm + cu) / (nm + nu):.3f}"
    )


if __name__ == "__main__":
    main()
