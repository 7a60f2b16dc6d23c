"""Benchmark: how many records private structure learning needs (Zhang et al. 2020, Sec. 6).

A random 16-node 4-regular Ising model (couplings ±0.3, seed 0); for each ``n`` in ``--n`` and
``--seeds`` fresh samples, :func:`pgm_dp.learners.learn_structure` at ``(--eps, --delta)`` with
``eta`` = the weakest coupling and ``lam`` = the model's width. Prints, per ``n``: the share of
runs that released the true graph, a wrong graph, or no answer; the median CPU seconds; and
the process's peak memory (the blocks are fitted in ``O(n p)`` memory).

Run: ``python benchmarks/bench_structure.py [--n 10000 20000 40000 60000 80000] [--seeds 10]``.
"""

from __future__ import annotations

import argparse
import resource
import time

import _repo  # noqa: F401  (the repository root on sys.path: reproductions)
import numpy as np
from tqdm import tqdm

from pgm_dp.learners import learn_structure
from reproductions.zhang2020.experiments import random_ising, sample_ising


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10000, 20000, 40000, 60000, 80000])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    args = ap.parse_args()
    A, theta = random_ising(16, degree=4, rng=0, low=0.3, high=0.3)
    truth = frozenset(zip(*np.nonzero(np.triu(A)), strict=True))
    width = float(np.max(np.abs(A).sum(axis=1)))
    print(f"eps={args.eps} delta={args.delta} edges={len(truth)} width={width:.2f}")
    print("| n | true graph | wrong graph | no answer | CPU s (median) |\n|---|---|---|---|---|")
    for n in args.n:
        outcomes, cpu = [], []
        for seed in tqdm(range(args.seeds), desc=f"n={n}", leave=False):
            z = sample_ising(A, theta, n, rng=1000 * seed + 1)
            start = time.process_time()
            res = learn_structure(z, args.eps, args.delta, eta=0.3, lam=width, rng=seed)
            cpu.append(time.process_time() - start)
            edges = None if res.edges is None else frozenset(res.edges)
            outcomes.append("none" if edges is None else "true" if edges == truth else "wrong")
        share = {k: outcomes.count(k) / len(outcomes) for k in ("true", "wrong", "none")}
        print(f"| {n} | {share['true']:.0%} | {share['wrong']:.0%} | {share['none']:.0%} "
              f"| {np.median(cpu):.1f} |", flush=True)  # fmt: skip
    print(f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
