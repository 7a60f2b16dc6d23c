"""``pgm-dp fit``: a model from a release, or from data end to end.

From ``--release``: a release learner (naive, cgm, ...) fits the release's cliques; nothing
more is spent. From ``--data``: without ``--cliques`` the cliques are chosen privately
(MST, McKenna et al. 2021) with ``--selection-fraction`` of ``--epsilon`` (half on one-way
marginals, half on the selection), the chosen tables are released with the rest and the
learner fits them together with the one-way tables (already paid for, as MST does); with
``--cliques`` all of ``--epsilon`` goes to the release (or, for a record learner
such as psgd, to the learner). The fit (model, history, budget) is saved as ``.npz``.
"""

from __future__ import annotations

from . import _args
from ._data import domain_of, read_data, say
from .release import add_budget_arguments, budget_of

__all__ = ["add_parser", "SELECTION_FRACTION"]

#: Default share of ε for the private MST selection (``benchmarks/bench_selection.py``).
SELECTION_FRACTION = 0.2


def _from_data(args, spec):
    from ..models import MarkovRandomField
    from ..privacy import PureDP, release_marginals
    from ..selection import select_cliques, with_one_way

    data = read_data(args.data)
    domain = domain_of(data, args.domain)
    budget, mechanism = budget_of(args)
    cliques = args.cliques
    if cliques is None:
        if spec.kind != "release" or args.delta is not None:
            raise ValueError("clique selection needs a release learner and pure epsilon")
        eps = args.epsilon * args.selection_fraction
        say(f"selecting cliques (MST) with epsilon {eps:.4g} ...")
        sel = select_cliques(data, PureDP(eps), domain, rng=args.seed)
        cliques, budget = sel.cliques, PureDP(args.epsilon - eps)
        say(f"chosen: {' '.join(','.join(c) for c in cliques)}")
    mrf = MarkovRandomField(domain, cliques)
    if spec.kind == "records":
        return spec.make().fit(data, mrf, budget=budget, rng=args.seed)
    rel = release_marginals(data, mrf, budget=budget, mechanism=mechanism, rng=args.seed)
    if args.cliques is None:
        rel = with_one_way(sel, rel)
        mrf = MarkovRandomField(domain, rel.cliques)
    return spec.make().fit(rel, mrf)


def _run(args) -> None:
    from .. import learners
    from ..io import save_fit

    spec = learners.get(args.learner)
    if args.release is not None:
        from ..models import MarkovRandomField
        from ..privacy import NoisyMarginals

        if spec.kind != "release":
            raise ValueError(f"learner {args.learner!r} needs records (--data), not a release")
        with open(args.release) as fh:
            rel = NoisyMarginals.from_json(fh.read())
        say(f"fitting {spec.label} to {len(rel.cliques)} released tables ...")
        fit = spec.make().fit(rel, MarkovRandomField(rel.domain, rel.cliques))
    else:
        fit = _from_data(args, spec)
    save_fit(fit, args.out)
    say(f"written: {args.out}")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("fit", help="fit a model from a release or data", description=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--release", type=_args.release_file, help="a release JSON file")
    src.add_argument("--data", type=_args.existing_file, help="CSV or Parquet file")
    p.add_argument("--cliques", type=_args.clique, nargs="+", help="cliques (default: MST)")
    p.add_argument("--learner", default="cgm", help="a registered learner (naive, cgm, psgd, ...)")
    p.add_argument(
        "--domain", type=_args.domain_file, default=None, help="JSON {name: size or [labels]}"
    )
    add_budget_arguments(p)
    p.add_argument(
        "--selection-fraction",
        type=_args.probability,
        default=SELECTION_FRACTION,
        help="share of --epsilon spent choosing the cliques (without --cliques)",
    )
    p.add_argument("--out", type=_args.output_file, default="model.npz", help="fit file (.npz)")
    p.set_defaults(func=_run)
