"""``pgm-dp bayes``: noise-aware posteriors, calibration and the example.

Arguments only; :mod:`pgm_dp.experiments.bayes` is imported when the command runs.
"""

from __future__ import annotations

from ._args import LazyModule

__all__ = ["add_parser"]


bayes = LazyModule("pgm_dp.experiments.bayes")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bayes", help="Bayesian posteriors: calibration, SBC and the example")
    p.add_argument("job", choices=["calibration", "sbc", "example"])
    p.add_argument("--mechanisms", nargs="+", default=["laplace", "gaussian"])
    p.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.5, 2.0])
    p.add_argument("--releases", type=int, default=100)
    p.add_argument(
        "--method", choices=["laplace", "nuts"], default="nuts",
        help="posterior of calibration / sbc: Laplace approximation or NUTS",
    )  # fmt: skip
    p.add_argument("--nuts-releases", type=int, default=3)
    p.add_argument(
        "--covariance", choices=["auto", "exact", "plugin"], default="auto",
        help="calibration: the posterior's covariance path (plugin: the large-model path)",
    )  # fmt: skip
    p.add_argument("--N", type=int, default=None)
    p.add_argument("--quick", action="store_true", help="a small, fast run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="pgm_dp_results")

    def run(a):
        if a.job in ("calibration", "sbc"):
            a.N = a.N or 1000
            return (bayes._calibrate_cli if a.job == "calibration" else bayes._sbc_cli)(a)
        a.N = a.N or 10_000
        a.eps = a.eps if a.eps != [0.1, 0.5, 2.0] else [1.0]
        a.mechanisms = a.mechanisms if a.mechanisms != ["laplace", "gaussian"] else ["gaussian"]
        return bayes._example_cli(a)

    p.set_defaults(func=run)
