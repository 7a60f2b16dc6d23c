"""Benchmark: the release learners on the same noisy tables of a fixed tree on UCI Adult.

The tree: private MST selection over Adult's 14 attributes (ε = 1, seed 1; the same tree
for every run). For each ε and seed, its 13 pair tables are released once with discrete
Laplace noise (pure ε, ``N`` estimated from the noisy tables as ``pgm-dp fit`` does) and
every estimator is fitted to that same release: naive MLE, CGM-EM (defaults, or ``--cgm
key=value`` options), and mbi 2.0's mirror descent (Private-PGM's estimator, the ``bench``
extra) at ``--mbi-iters``. Score: the mean total variation distance between the model's and
the data's marginals over all 91 pairs (``model.marginals(pairs)``, exact), and over the 13
measured pairs. Prints one row per (ε, seed, estimator) and the means per ε.

Run: ``python benchmarks/bench_estimators.py [--eps 0.3 1 3] [--seeds 3]
[--learners naive cgm mbi] [--cgm key=value ...] [--variant NAME key=value ...]``.
``--variant`` adds a CGM-EM column with other options (repeatable).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
import warnings

import _repo  # the repository root on sys.path
import numpy as np

from pgm_dp import MarkovRandomField, PureDP
from pgm_dp.datasets import load_adult
from pgm_dp.learners import CGMEM, NaiveMLE
from pgm_dp.privacy import release_marginals
from pgm_dp.rng import derived_generator
from pgm_dp.select import select_cliques
from pgm_dp.tables import contingency_table


def data_tables(codes, domain, cliques) -> dict:
    """``{clique: the records' frequency table}`` of the encoded records ``codes``."""
    n = len(codes)
    return {
        q: contingency_table(codes, [domain.index(v) for v in q], domain.sizes(q)) / n
        for q in cliques
    }


def mean_tvd(model: MarkovRandomField, truth: dict) -> float:
    got = model.marginals(list(truth))
    return float(np.mean([0.5 * np.abs(got[q] - t).sum() for q, t in truth.items()]))


def learners(args) -> dict:
    out = {}
    if "naive" in args.learners:
        out["naive"] = NaiveMLE()
    if "cgm" in args.learners:
        out["cgm"] = CGMEM(**dict(args.cgm))
    for name, *opts in args.variant:
        out[name] = CGMEM(**dict(_repo.option(o) for o in opts))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--learners", nargs="+", default=["naive", "cgm", "mbi"])
    parser.add_argument("--cgm", nargs="*", default=[], type=_repo.option)
    parser.add_argument("--variant", nargs="+", action="append", default=[])
    parser.add_argument("--mbi-iters", type=int, nargs="+", default=[1000, 3000])
    args = parser.parse_args()
    data, domain = load_adult()
    tree = select_cliques(data, PureDP(1.0), domain, rng=1).cliques
    mrf = MarkovRandomField(domain, tree)
    pairs = list(itertools.combinations(domain.attributes, 2))
    codes = domain.encode(data)
    truth, measured = data_tables(codes, domain, pairs), data_tables(codes, domain, tree)
    print(f"tree: {list(tree)}", flush=True)
    rows = []
    for eps, seed in itertools.product(args.eps, range(args.seeds)):
        release = release_marginals(
            data, mrf, budget=PureDP(eps), rng=derived_generator(seed, "release", eps)
        )
        fits = {}
        for name, learner in learners(args).items():
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = learner.fit(release, mrf)
            fits[name] = (fit.model, time.perf_counter() - start)
        if "mbi" in args.learners:
            from pgm_dp.learners.mbi import fit_mbi

            for f in fit_mbi(release, mrf, args.mbi_iters):
                fits[f"mbi{f.iterations}"] = (f.model, f.seconds)
        for name, (model, seconds) in fits.items():
            row = {"eps": eps, "seed": seed, "learner": name, "seconds": seconds}
            row["tvd2"], row["tvd_measured"] = mean_tvd(model, truth), mean_tvd(model, measured)
            rows.append(row)
            print(
                f"eps {eps} seed {seed} {name:>10}: 2-way TVD {row['tvd2']:.4f} "
                f"(measured pairs {row['tvd_measured']:.4f}) {seconds:.1f} s",
                flush=True,
            )
    names = list(dict.fromkeys(r["learner"] for r in rows))
    print("\nmean 2-way TVD over seeds (all 91 pairs)")
    print("| ε | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for eps in args.eps:
        cells = [
            statistics.mean(r["tvd2"] for r in rows if r["eps"] == eps and r["learner"] == m)
            for m in names
        ]
        print(f"| {eps:g} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
