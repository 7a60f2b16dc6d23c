"""``python -m reproductions bernstein2017 cgm-grid``: CGM-EM vs naive MLE vs mbi on a wide grid.

Arguments only; :mod:`reproductions.bernstein2017.cgm_grid` is imported when the command runs.
"""

from __future__ import annotations

from pgm_dp.cli._args import LazyModule
from pgm_dp.cli.compare import add_common_arguments

__all__ = ["add_parser"]

#: ``pgm_dp.compare.graphs.MECHANISMS`` (tested equal).
_MECHANISMS = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian")


cgm_grid = LazyModule("reproductions.bernstein2017.cgm_grid")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("cgm-grid", help="CGM-EM vs naive MLE vs mbi on a wide grid")
    p.add_argument(
        "--graphs", nargs="+", default=["chain", "er", "tree"], choices=["chain", "er", "tree"]
    )
    p.add_argument("--k", type=int, nargs="+", default=[2, 4, 6, 10], help="domain sizes")
    p.add_argument("--N", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.5, 1.0, 5.0])
    p.add_argument("--mechanisms", nargs="+", default=["laplace", "gaussian"], choices=_MECHANISMS)
    p.add_argument("--populations", type=int, default=3)
    p.add_argument("--replications", type=int, default=3)
    p.add_argument("--T", type=int, default=10, help="variables")
    add_common_arguments(p)
    p.set_defaults(
        learners=["nonprivate", "naive", "cgm", "mbi"],
        func=lambda a: cgm_grid._print(
            cgm_grid.run_grid(
                a.graphs,
                a.k,
                a.N,
                a.eps,
                a.mechanisms,
                a.populations,
                a.replications,
                a.learners,
                a.T,
                a.seed,
                out_dir=a.out,
            )
        ),
    )
