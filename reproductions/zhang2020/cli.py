"""``python -m reproductions zhang2020``: Zhang et al. (2020) experiments.

Arguments only; :mod:`reproductions.zhang2020.experiments` is imported when the command runs.
"""

from __future__ import annotations

import argparse

from pgm_dp.cli._args import LazyModule, int_at_least, output_dir, positive_float

__all__ = ["add_parser"]


zhang = LazyModule("reproductions.zhang2020.experiments")


def add_parser(subparsers) -> None:
    """``{recovery, separation, pairwise, pmw, tmrf}`` (the paper's sub-parsers)."""
    sub = subparsers
    rec = sub.add_parser("recovery", help="max |A - A_hat| vs n (Alg. 2)")
    rec.add_argument("--p", type=int_at_least(2), nargs="+", default=[10, 20, 50], help="nodes")
    rec.add_argument(
        "--n", type=int_at_least(1), nargs="+", default=[2000, 8000, 32000], help="samples"
    )
    rec.add_argument(
        "--rho", type=positive_float, nargs="+", default=[0.1, 1.0], help="zCDP budgets"
    )
    sep = sub.add_parser("separation", help="n for fixed accuracy vs p (Table 1)")
    sep.add_argument("--p", type=int_at_least(2), nargs="+", default=[8, 16, 32], help="nodes")
    sep.add_argument(
        "--n-param", type=int_at_least(1), nargs="+", default=[2000, 4000, 8000, 16000, 32000],
        help="sample sizes tried for parameter learning",
    )  # fmt: skip
    sep.add_argument(
        "--n-struct", type=int_at_least(1), nargs="+", default=[4000, 8000, 16000, 32000],
        help="sample sizes tried for structure learning",
    )  # fmt: skip
    sep.add_argument("--rho", type=positive_float, default=0.05, help="zCDP budget of Alg. 2")
    sep.add_argument("--eps", type=positive_float, default=2.0, help="structure learning epsilon")
    sep.add_argument("--trials", type=int_at_least(1), default=3, help="repetitions per n")
    pw = sub.add_parser("pairwise", help="Alg. 3 over [3]")
    pm = sub.add_parser("pmw", help="PMW on parities")
    tm = sub.add_parser("tmrf", help="Alg. 4 / 5 on a t = 3 binary MRF")
    for s in (rec, sep, pw, pm, tm):
        s.formatter_class = argparse.ArgumentDefaultsHelpFormatter
        s.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
        s.add_argument(
            "--out", type=output_dir, default="pgm_dp_results", help="folder for CSV and plot"
        )
    rec.set_defaults(func=lambda a: print(zhang.run_recovery(a.p, a.n, a.rho, seed=a.seed,
                                                       progress=True, out_dir=a.out)))  # fmt: skip
    sep.set_defaults(
        func=lambda a: print(
            zhang.run_separation(
                a.p,
                a.n_param,
                a.n_struct,
                rho=a.rho,
                eps=a.eps,
                trials=a.trials,
                seed=a.seed,
                progress=True,
                out_dir=a.out,
            )  # fmt: skip
        )
    )
    pw.set_defaults(
        func=lambda a: print(zhang.run_pairwise(seed=a.seed, progress=True, out_dir=a.out))
    )
    pm.set_defaults(func=lambda a: print(zhang.run_pmw(seed=a.seed, out_dir=a.out)))
    tm.set_defaults(func=lambda a: print(zhang.run_tmrf(seed=a.seed, progress=True, out_dir=a.out)))
