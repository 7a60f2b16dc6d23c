"""``python -m reproductions bernstein2017 adult``: held-out log-likelihood vs epsilon on UCI
Adult (Bernstein et al. 2017, Sec. 4.2).

Arguments only (checked while parsing: the columns against the shipped domain file);
:mod:`reproductions.bernstein2017.adult` is imported to run.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources

from pgm_dp.cli._args import int_at_least, output_dir, positive_float, probability

__all__ = ["add_parser", "ADULT_CHAIN", "ADULT_LEARNERS"]

#: Defaults, equal to ``reproductions.bernstein2017.adult.ADULT_CHAIN`` / ``LEARNERS`` (tested).
ADULT_CHAIN = (
    "workclass", "occupation", "education-num", "income>50K", "marital-status",
    "relationship", "sex", "race",
)  # fmt: skip
ADULT_LEARNERS = ("nonprivate", "naive", "cgm", "psgd")


def adult_columns() -> list[str]:
    """The shipped UCI Adult attributes, read from its domain file (no pandas needed)."""
    text = resources.files("pgm_dp").joinpath("data", "adult-domain.json").read_text()
    return list(json.loads(text))


def _run(a: argparse.Namespace) -> None:
    from . import adult

    if len(set(a.columns)) != len(a.columns):
        raise ValueError(f"repeated column in {a.columns}")
    result = adult.run_adult(
        a.columns, a.eps, a.trials, a.learners, a.test_fraction, a.seed,
        progress=True, out_dir=a.out,
    )  # fmt: skip
    adult.print_result(result)


def add_parser(subparsers) -> None:
    """Register ``adult``."""
    p = subparsers.add_parser(
        "adult", help="held-out log-likelihood vs epsilon on UCI Adult (paper Sec. 4.2)"
    )
    p.add_argument(
        "--columns", nargs="+", default=list(ADULT_CHAIN), choices=adult_columns(),
        metavar="COLUMN", help="the chain's attributes, in order",
    )  # fmt: skip
    p.add_argument(
        "--eps", type=positive_float, nargs="+", default=[0.05, 0.1, 0.5, 1.0, 2.0],
        help="privacy budgets epsilon",
    )  # fmt: skip
    p.add_argument("--trials", type=int_at_least(1), default=3, help="releases per epsilon")
    p.add_argument(
        "--learners", nargs="+", default=list(ADULT_LEARNERS), choices=ADULT_LEARNERS,
        help="learners to run",
    )  # fmt: skip
    p.add_argument(
        "--test-fraction", type=probability, default=0.25, help="share of records held out"
    )
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
    p.add_argument(
        "--out", type=output_dir, default="pgm_dp_results", help="folder for the CSV and plot"
    )
    p.set_defaults(func=_run)
