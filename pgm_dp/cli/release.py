"""``pgm-dp release``: noisy clique tables of a data file, written as JSON.

Bernstein et al. (2017, Sec. 3.1): one Laplace (or Gaussian) release of all clique tables.
The number of records is estimated from the noisy tables unless ``--total`` says otherwise;
``--total public`` (the paper's convention) writes and prints the exact ``N``, which the
privacy guarantee does not cover.
"""

from __future__ import annotations

from . import _args
from ._data import describe_total, domain_of, read_data, read_structure, say

__all__ = ["add_parser", "add_budget_arguments", "budget_of", "TOTALS"]


TOTALS = ("estimate", "private", "public")


def add_budget_arguments(p) -> None:
    """``--epsilon``, ``--delta``, ``--seed``, ``--total`` (shared with ``fit``)."""
    p.add_argument("--epsilon", type=_args.positive_float, default=1.0, help="privacy budget")
    p.add_argument(
        "--delta", type=_args.probability, default=None, help="delta: Gaussian noise if given"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="seed of the noise (experiments only; unset: OS)"
    )
    p.add_argument(
        "--total",
        choices=TOTALS,
        default="estimate",
        help="the number of records N: estimated from the noisy tables (no extra cost), a "
        "noisy count (private; part of epsilon), or public: released exactly, outside the "
        "guarantee (the papers' convention)",
    )


def budget_of(args):
    """``PureDP(epsilon)`` with the exact discrete Laplace (the release default), or
    ``ApproxDP(epsilon, delta)`` with the exact discrete Gaussian."""
    from ..privacy import ApproxDP, PureDP

    if args.delta is None:
        return PureDP(args.epsilon), "discrete_laplace"
    return ApproxDP(args.epsilon, args.delta), "discrete_gaussian"


def _run(args) -> None:
    from ..privacy import release_marginals
    from ..privacy.budget import budget_text

    data = read_data(args.data)
    domain = domain_of(data, args.domain)
    if args.model is not None:
        cliques = read_structure(args.model, domain).cliques
    else:
        cliques = args.cliques
    budget, mechanism = budget_of(args)
    rel = release_marginals(
        data, cliques, domain, budget=budget, mechanism=mechanism, rng=args.seed, total=args.total
    )
    with open(args.out, "w") as fh:
        fh.write(rel.to_json())
    say(f"released {len(rel.cliques)} tables at {budget_text(budget)}; {describe_total(rel)}")
    say(f"written: {args.out}")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "release", help="release noisy marginals of a data file (JSON out)", description=__doc__
    )
    p.add_argument("--data", type=_args.existing_file, required=True, help="CSV or Parquet file")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--cliques", type=_args.clique, nargs="+", help="cliques such as A,B B,C")
    which.add_argument(
        "--model", type=_args.existing_file, help="a structure: pgmpy .bif/.xmlbif/.uai or .npz"
    )
    p.add_argument(
        "--domain", type=_args.domain_file, default=None, help="JSON {name: size or [labels]}"
    )
    add_budget_arguments(p)
    p.add_argument("--out", type=_args.output_file, default="release.json", help="JSON file")
    p.set_defaults(func=_run)
