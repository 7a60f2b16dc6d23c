"""Benchmark: time per fit of each Bernstein et al. learner as a ratio to naive MLE.

Third-order chain (T=10, k=10), one population of N records, one Laplace release per
epsilon; every learner is run once to compile, then timed on ``--repeats`` fits (median).
Paper (Sec. 4.1): CGM 4-8x and PSGD 27-40x naive MLE; issue targets CGM <= 2x, PSGD <= 5x.
With ``--mbi`` (needs the ``bench`` extra) mbi's mirror descent at 3000 iterations is timed
too (its ``seconds`` exclude compilation).

Run: ``python benchmarks/bench_learners.py [--N 100000] [--eps 0.1 1] [--repeats 3] [--mbi]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners import CGMEM, PSGD, NaiveMLE
from pgm_dp.models import third_order_chain
from pgm_dp.privacy import ApproxDP, PureDP, release_marginals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--N", type=int, default=100_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mbi", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    truth = third_order_chain(10, 10, rng)
    data = truth.sample(args.N, rng)
    for eps in args.eps:
        release = release_marginals(data, truth, budget=PureDP(eps), rng=rng, total="public")
        learners = {
            "naive": lambda r=release: NaiveMLE().fit(r, truth).model,
            "cgm": lambda r=release: CGMEM().fit(r, truth).model,
            "psgd": lambda e=eps: (
                PSGD(total="public").fit(data, truth, budget=ApproxDP(e, 1 / args.N), rng=1).model
            ),
        }
        if args.mbi:
            from pgm_dp.learners.mbi import fit_mbi

            learners["mbi3000"] = lambda r=release: fit_mbi(r, truth, (3000,))[-1]
        times, kls = {}, {}
        for name, fit in learners.items():
            fit()  # compile
            runs = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                result = fit()
                runs.append(getattr(result, "seconds", time.perf_counter() - t0))
            model = getattr(result, "model", result)
            times[name], kls[name] = statistics.median(runs), kl_divergence(truth, model)
        print(f"epsilon = {eps:g}, N = {args.N:,}")
        for name in learners:
            print(
                f"  {name:8s} {times[name]:8.2f} s  {times[name] / times['naive']:6.1f}x naive"
                f"  KL {kls[name]:.4g}"
            )


if __name__ == "__main__":
    main()
