"""``python -m reproductions bayes``: noise-aware posteriors, calibration, SBC and the example.

Arguments only; :mod:`reproductions.bayes.experiments` is imported when the command runs.
"""

from __future__ import annotations

from pgm_dp.cli._args import LazyModule, output_dir

__all__ = ["add_parser"]


bayes = LazyModule("reproductions.bayes.experiments")


JOBS = {
    "calibration": "coverage of the posterior's credible intervals over many releases",
    "sbc": "simulation-based calibration of the posterior",
    "example": "NUTS on the third-order chain, with diagnostics",
}


def _add_options(p) -> None:
    """The options every job takes (every ``python -m reproductions bayes JOB``)."""
    p.add_argument(
        "--mechanisms", nargs="+", default=["laplace", "gaussian"],
        help="release mechanisms (example: gaussian unless given)",
    )  # fmt: skip
    p.add_argument(
        "--eps", type=float, nargs="+", default=[0.1, 0.5, 2.0],
        help="privacy budgets epsilon (example: 1 unless given)",
    )  # fmt: skip
    p.add_argument("--releases", type=int, default=100, help="releases per setting")
    p.add_argument(
        "--method", choices=["laplace", "nuts"], default="nuts",
        help="posterior of calibration / sbc: Laplace approximation or NUTS",
    )  # fmt: skip
    p.add_argument("--nuts-releases", type=int, default=3, help="releases checked with NUTS")
    p.add_argument(
        "--covariance", choices=["auto", "exact", "plugin"], default="auto",
        help="calibration: the posterior's covariance path (plugin: the large-model path)",
    )  # fmt: skip
    p.add_argument("--N", type=int, default=None, help="records (unset: 1000; example: 10000)")
    p.add_argument(
        "--quick", action="store_true",
        help="a small, fast run. calibration: a smoke-level check on the 12-cell chain, at "
        "most 2 releases per (mechanism, epsilon), each fitted noise-aware and naive by NUTS "
        "(1 chain, 100 warm-up steps, 200 draws), no extra NUTS releases; all settings share "
        "one compiled program per step; coverage is rough at this size",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of every draw")
    p.add_argument(
        "--out", type=output_dir, default="pgm_dp_results", help="folder for CSV and plots"
    )


def _run(a):
    if a.job in ("calibration", "sbc"):
        a.N = a.N or 1000
        return (bayes._calibrate_cli if a.job == "calibration" else bayes._sbc_cli)(a)
    a.N = a.N or 10_000
    a.eps = a.eps if a.eps != [0.1, 0.5, 2.0] else [1.0]
    a.mechanisms = a.mechanisms if a.mechanisms != ["laplace", "gaussian"] else ["gaussian"]
    return bayes._example_cli(a)


def add_parser(subparsers) -> None:
    """``{calibration, sbc, example}`` (the sub-parsers of the ``bayes`` reproductions)."""
    for job, doc in JOBS.items():
        p = subparsers.add_parser(job, help=doc, description=doc)
        _add_options(p)
        p.set_defaults(func=_run, job=job)
