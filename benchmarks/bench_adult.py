"""Benchmark: compiled CGM-EM against mbi on the Adult chain (issue #21), interleaved.

The protocol of the Adult reproduction (:mod:`reproductions.bernstein2017.adult`): the
default 8-attribute chain, its seeded 75/25 split and, for each trial, its Laplace release
at ``epsilon``. On each release CGM-EM is fitted twice (the first fit compiles; the second
is timed) and mbi's mirror descent once (``fit_mbi``: compile excluded, checkpoints at
300 / 1,000 / 3,000 iterations). Prints per release the seconds and held-out
log-likelihood (nats per record) of each, then the medians and CGM's time as a multiple of
mbi's 3,000-iteration run.
Needs the ``bench`` extra (mbi).

Run: ``python benchmarks/bench_adult.py [--eps 1] [--trials 3] [--cgm key=value ...]
[--mbi-iters 300 1000 3000]`` (``--cgm`` passes options to ``CGMEM``, e.g. ``--cgm
prior_precision=0.1``; ``--mbi-iters``: mbi's checkpoints, multiples of 50).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import _repo  # the repository root on sys.path: reproductions

from pgm_dp import learners as registry
from pgm_dp.compare.graphs import budget_for
from pgm_dp.compare.metrics import log_likelihood
from pgm_dp.datasets import load_adult
from pgm_dp.learners import CGMEM
from pgm_dp.learners.mbi import MBI_ITERS, fit_mbi
from pgm_dp.privacy import release_marginals
from pgm_dp.rng import derived_generator
from reproductions.bernstein2017.adult import ADULT_CHAIN, chain_model, split_records


def release_row(train, test, mrf, eps: float, trial: int, options: dict, iters) -> dict:
    """Seconds and held-out log-likelihood of CGM-EM and mbi on one release."""
    budget = budget_for(registry.get("cgm"), eps, len(train))
    gen = derived_generator(0, "release", eps, trial)  # run_adult(seed=0)'s release
    release = release_marginals(train, mrf, budget=budget, rng=gen, total="public")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is reported below, not warned
        CGMEM(**options).fit(release, mrf)  # compiles
        start = time.perf_counter()
        fit = CGMEM(**options).fit(release, mrf)
        seconds = time.perf_counter() - start
    row = {
        "cgm_s": seconds,
        "cgm_ll": log_likelihood(fit.model, test),
        "cgm_it": fit.info["iterations"],
        "cgm_bp": fit.info["nlbp_iterations"],
        "cgm_conv": fit.info["converged"],
    }
    for f in fit_mbi(release, mrf, iters):
        row[f"mbi{f.iterations}_s"] = f.seconds
        row[f"mbi{f.iterations}_ll"] = log_likelihood(f.model, test)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--cgm", nargs="*", default=[], type=_repo.option)
    parser.add_argument("--mbi-iters", type=int, nargs="+", default=list(MBI_ITERS))
    args = parser.parse_args()
    data, domain = load_adult(ADULT_CHAIN)
    mrf = chain_model(domain)
    train, test = split_records(data, 0.25, derived_generator(0, "split"))
    rows = []
    for trial in range(args.trials):
        row = release_row(train, test, mrf, args.eps, trial, dict(args.cgm), args.mbi_iters)
        rows.append(row)
        cells = (f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
        print(f"trial {trial}: " + " ".join(cells), flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "cgm_conv"}
    print("medians:", {k: round(v, 4) for k, v in med.items()})
    last = f"mbi{max(args.mbi_iters)}"
    ratios = [r["cgm_s"] / r[f"{last}_s"] for r in rows]
    print(f"CGM / {last} time per release: {[round(x, 2) for x in ratios]}")


if __name__ == "__main__":
    main()
