"""Benchmark: the backends beside what a user would otherwise pick, in one run.

Runs, one after the other, and prints each table as it comes:

1. ``bench_pmw.py``: PMW against per-query Laplace and Gaussian noise over (n, m, rho), and
   what :func:`pgm_dp.learners.zhang.release_parities` chooses;
2. ``bench_zhang.py``: ``learn_ising`` and ``ising_logistic`` against diffprivlib (in its own
   environment, ``--peer-python``) and scikit-learn at n in {1e4, 3e4, 1e5, 3e5};
3. ``bench_bayes.py``: the 2,400-cell posterior (third-order chain T = 10, k = 10): R-hat,
   ESS, CPU time.

Run: ``python benchmarks/bench_backends.py [--peer-python DPL/bin/python] [--skip bayes]``
(``--skip`` leaves out any of ``pmw``, ``ising``, ``bayes``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer-python", default=None, help="a Python with diffprivlib")
    ap.add_argument("--skip", nargs="+", default=[], choices=["pmw", "ising", "bayes"])
    args = ap.parse_args()
    peer = ["--peer-python", args.peer_python] if args.peer_python else []
    parts = {
        "pmw": ["bench_pmw.py"],
        "ising": ["bench_zhang.py", *peer],
        "bayes": ["bench_bayes.py", "--T", "10", "--k", "10"],
    }
    for name, argv in parts.items():
        if name in args.skip:
            continue
        print(f"\n## {name}: {' '.join(argv)}", flush=True)
        subprocess.run([sys.executable, str(HERE / argv[0]), *argv[1:]], check=True)


if __name__ == "__main__":
    main()
