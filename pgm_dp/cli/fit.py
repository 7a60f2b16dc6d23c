"""``pgm-dp fit``: a model from a release, or from data end to end.

From ``--release``: a release learner (naive, cgm, ...) fits the release's cliques; nothing
more is spent. From ``--data``: without ``--cliques`` the cliques are chosen privately
(MST, McKenna et al. 2021) with ``--selection-fraction`` of ``--epsilon`` (half on one-way
marginals, half on the selection), the chosen tables are released with the rest and the
learner fits them together with the one-way tables (already paid for, as MST does); with
``--cliques`` all of ``--epsilon`` goes to the release (or, for a record learner
such as psgd, to the learner). ``--total``: the release's ``N`` (default estimated from its
noisy tables), for psgd the ``N`` of its sampling rate (default a noisy count). One
accountant records everything spent; the fit (model, history, and as ``budget`` that total)
is saved as ``.npz``. ``--seed`` seeds each step from its own stream.
"""

from __future__ import annotations

from . import _args
from ._data import domain_of, read_data, say, streams
from .release import add_budget_arguments, budget_of

__all__ = ["add_parser", "SELECTION_FRACTION"]

#: Default share of ε for the private MST selection (``benchmarks/bench_selection.py``).
SELECTION_FRACTION = 0.2


def _record_options(spec, args) -> dict:
    """A record learner's options from the command line: ``--total`` for one that takes it
    (PSGD, whose sampling rate needs ``N``: ``estimate`` means its noisy count)."""
    if "total" not in getattr(spec.factory, "__dataclass_fields__", {}):
        return {}
    return {"total": "private" if args.total == "estimate" else args.total}


def _check_budget_kind(spec, budget) -> None:
    """Refuse, before the data are read, a record learner whose budget notion (that of its
    registry entry) is not the one ``--epsilon``/``--delta`` give."""
    from ..compare import budget_for
    from ..errors import PrivacyParameterError

    if spec.kind != "records" or not spec.private:
        return
    wanted = type(budget_for(spec, 1.0, 2))
    if not isinstance(budget, wanted):
        hint = "; give --delta" if wanted.__name__ == "ApproxDP" else ""
        raise PrivacyParameterError(
            f"learner {spec.name!r} needs a {wanted.__name__} budget, got {budget!r}{hint}"
        )


def _from_data(args, spec):
    """The fit of ``--data``; one accountant holds everything spent (selection, release or
    learner) and its total is the fit's recorded ``budget``."""
    from dataclasses import replace

    from ..models import MarkovRandomField
    from ..privacy import Accountant, PureDP, release_marginals
    from ..privacy.select import select_cliques, with_one_way

    budget, mechanism = budget_of(args)
    cliques = args.cliques
    if cliques is None and (spec.kind != "release" or args.delta is not None):
        raise ValueError("clique selection needs a release learner and pure epsilon")
    _check_budget_kind(spec, budget)
    data = read_data(args.data)
    domain = domain_of(data, args.domain)
    accountant = Accountant(budget)
    select_rng, rng = streams(args.seed, 2)  # independent noise for each step
    if cliques is None:
        eps = args.epsilon * args.selection_fraction
        say(f"selecting cliques (MST) with epsilon {eps:.4g} ...")
        sel = select_cliques(data, PureDP(eps), domain, rng=select_rng, accountant=accountant)
        cliques, budget = sel.cliques, PureDP(args.epsilon - eps)
        say(f"chosen: {' '.join(','.join(c) for c in cliques)}")
    mrf = MarkovRandomField(domain, cliques)
    if spec.kind == "records":
        learner = spec.make(**_record_options(spec, args))
        fit = learner.fit(data, mrf, budget=budget, rng=rng, accountant=accountant)
    else:
        rel = release_marginals(data, mrf, budget=budget, mechanism=mechanism, rng=rng,
                                accountant=accountant, total=args.total)  # fmt: skip
        if args.cliques is None:
            rel = with_one_way(sel, rel)
            mrf = MarkovRandomField(domain, rel.cliques)
        fit = spec.make().fit(rel, mrf)
    return replace(fit, info={**fit.info, "budget": accountant.spent})


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
