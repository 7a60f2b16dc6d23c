"""``pgm-dp compare``: learners on one privacy budget (Bernstein et al. 2017, Sec. 4.1).

Only the arguments live here (every one checked while parsing, nothing heavy imported);
:mod:`pgm_dp.experiments.compare` is imported when the command runs.
"""

from __future__ import annotations

import argparse

from ._args import LEARNER_NAMES, int_at_least, learner_name, output_dir, positive_float

__all__ = ["add_parser", "add_common_arguments", "DEFAULT_LEARNERS"]

#: ``compare``'s default learners (equal to ``pgm_dp.experiments.compare.LEARNERS``).
DEFAULT_LEARNERS = ("random", "nonprivate", "naive", "cgm", "psgd")


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """``--learners`` (any registered name), ``--seed`` and ``--out``: shared with ``fig2``."""
    p.add_argument(
        "--learners",
        nargs="+",
        default=list(DEFAULT_LEARNERS),
        type=learner_name,
        metavar="LEARNER",
        help=f"learners to run, of {', '.join(LEARNER_NAMES)} ('mbi' needs the bench extra)",
    )
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
    p.add_argument(
        "--out", type=output_dir, default="pgm_dp_results", help="folder for the CSV and the plot"
    )


def add_graph_arguments(p: argparse.ArgumentParser, N: list[int] | int, eps: list[float]) -> None:
    """``--T``, ``--k``, ``--N``, ``--eps``, ``--populations`` (shared with ``fig2``)."""
    p.add_argument("--T", type=int_at_least(4), default=10, help="variables in the model")
    p.add_argument("--k", type=int_at_least(2), default=10, help="states per variable")
    many = isinstance(N, list)
    p.add_argument(
        "--N",
        type=int_at_least(1),
        nargs="+" if many else None,
        default=N,
        help="records per population" + (" (one run per value)" if many else ""),
    )
    p.add_argument(
        "--eps", type=positive_float, nargs="+", default=eps, help="privacy budgets epsilon"
    )


def _run(a: argparse.Namespace) -> None:
    from ..experiments import compare

    result = compare.run_compare(
        a.graph, a.T, a.k, a.N, a.eps, a.populations, a.replications, a.learners, a.seed,
        progress=True, out_dir=a.out,
    )  # fmt: skip
    compare.print_result(result)


def add_parser(subparsers) -> None:
    """Register ``compare``."""
    p = subparsers.add_parser(
        "compare", help="compare learners on one privacy budget (KL from the true model)"
    )
    p.add_argument("--graph", choices=["chain", "er"], default="chain", help="true model")
    add_graph_arguments(p, 100_000, [0.1, 1.0])
    p.add_argument(
        "--populations", type=int_at_least(1), default=1, help="data sets drawn from the truth"
    )
    p.add_argument("--replications", type=int_at_least(1), default=1, help="releases per data set")
    add_common_arguments(p)
    p.set_defaults(func=_run)
