"""Benchmark: the noise-aware posterior's default example (NUTS whitened by the Laplace fit).

Third-order chain (T, k), one release of N records at epsilon; 4 chains, vectorised, on the
CPU. Reports wall and CPU time (compilation included), mean leapfrog steps, max R-hat, min
bulk/tail ESS of the marginal tables, divergences and min bulk ESS per second.

Run: ``python benchmarks/bench_bayes.py [--T 10] [--k 10] [--warmup 300] [--samples 300]
[--pilot 0]``.

``--calibration R``: instead, the Laplace method's calibration on the 12-cell model (R
releases of one setting, Gaussian at epsilon ``--eps``, noise-aware and naive; one compiled
Laplace fit for all R releases): CPU and wall seconds, compilation included, and coverage.
"""

from __future__ import annotations

import argparse
import time

import _repo  # noqa: F401  (the repository root on sys.path: reproductions)

from reproductions.bayes.experiments import run_calibration, run_example


def calibration(releases: int, eps: float) -> None:
    """The Laplace method's calibration of ``releases`` releases, timed."""
    start, cpu = time.perf_counter(), time.process_time()
    res = run_calibration(
        ("gaussian",), (eps,), releases, method="laplace", progress=False, out_dir=None
    )
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    print(f"{releases} releases: {cpu:.1f} CPU s, {wall:.1f} wall s")
    print(res.summary.to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=10)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--N", type=int, default=10_000)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--mechanism", default="gaussian")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--calibration", type=int, default=0, metavar="R")
    parser.add_argument("--pilot", type=int, default=0, help="pilot draws per chain (0: none)")
    a = parser.parse_args()
    if a.calibration:
        return calibration(a.calibration, a.eps)
    res = run_example(
        a.T, a.k, a.N, a.eps, a.mechanism, num_warmup=a.warmup, num_samples=a.samples,
        out_dir=None, pilot=a.pilot,
    )  # fmt: skip
    for key, value in res.items():
        print(f"{key}: {value:.4g}")


if __name__ == "__main__":
    main()
