"""``pgm-dp fit``: a model from a release, or from a data file end to end.

From ``--data`` (the default workflow, :func:`pgm_dp.table.fit.fit_table`): the table is
prepared (identifier-like columns refused, or dropped with ``--drop-identifiers``; numeric
columns binned with declared bins or bounds, or private quantiles; missing values a state of
their own, folded away where its noisy count is rare; rare categories merged privately with
a third of the budget, MST's share, at least 0.15 of a pure ε up to half of it, and expanded
back on output); AIM (McKenna et al.
2022) then selects and measures marginals against ``--workload`` with the rest, starting
from those one-way tables, and the learner fits every table measured. ``--epsilon`` alone is
pure ε-DP (AIM's pure variant, discrete Laplace); with ``--delta`` everything runs in zCDP
with discrete Gaussian noise, converted to (ε, δ). What is read from the data without
privacy (categories with ``--categories-from-data``, bounds with ``--bounds-from-data``) is
printed as a note with the way to declare it instead (``--domain``, ``--prepare
SPEC.json``). A report follows: what was selected, the budget per step, the expected error,
and a warning when the model explains the measurements worse than the private independent
model (:mod:`pgm_dp.table.report`). The saved fit keeps its preparation: it decodes back to
the original categories (``pgm-dp sample``, :func:`pgm_dp.table.synth.sample_table`).

With ``--cliques``: no preparation or selection; all of ``--epsilon`` goes to the release of
those cliques over ``--domain`` (or, for a record learner such as psgd, to the learner).
From ``--release``: a release learner fits the release's cliques; nothing more is spent.
``--total``: the release's ``N`` (default estimated from its noisy tables).
``--person COLUMN`` (or ``"COLUMN": "person"`` in ``--prepare``) makes the budget protect each
person of the table rather than each record: at most ``--max-records-per-person`` records of
each are kept before anything is read, every sensitivity is scaled by it, and the column is
never modelled (:mod:`pgm_dp.prepare.persons`); without it, the budget protects one record.
One accountant records everything spent; the fit (model, history, info with the ``budget``
spent and the report) is saved as ``.npz``. ``--seed`` seeds the noise (experiments only).
"""

from __future__ import annotations

from . import _args
from ._data import domain_of, read_data, say, streams
from .release import add_budget_arguments, budget_of

__all__ = ["add_parser", "DEFAULT_LEARNER", "SELECTION_FRACTION"]

#: The default learner of each source. From ``--data`` naive MLE: after AIM's measurements its
#: models were about as accurate as CGM-EM's in a fraction of the time (the real tables of
#: ``benchmarks/README.md``, ``benchmarks/bench_realdata.py``); CGM-EM's held-out likelihood
#: was a little better (``--learner cgm``). From ``--release`` CGM-EM, whose advantage is
#: largest on a release's few noisy tables (Bernstein et al. 2017, Fig. 2).
DEFAULT_LEARNER = {"data": "naive", "release": "cgm"}
#: Default share, with ``--selection mst``, of what the preparation leaves for MST's tree
#: (the rest measures it): MST's equal thirds.
SELECTION_FRACTION = 0.5


def _record_options(spec, args) -> dict:
    """A record learner's options from the command line: ``--total`` for one that takes it
    (PSGD, whose sampling rate needs ``N``: ``estimate`` means its noisy count)."""
    if "total" not in getattr(spec.factory, "__dataclass_fields__", {}):
        return {}
    return {"total": "private" if args.total == "estimate" else args.total}


def _check_budget_kind(spec, budget) -> None:
    """Refuse, before the data are read, a record learner whose budget notion (that of its
    registry entry) is not the one ``--epsilon``/``--delta`` give."""
    from ..privacy import budget as budgets

    if spec.kind != "records" or not spec.private:
        return
    hint = "; give --delta" if spec.budget == "ApproxDP" else ""
    msg = f"learner {spec.name!r} needs a {spec.budget} budget, got {budget!r}{hint}"
    budgets.require_budget(budget, getattr(budgets, spec.budget), msg)


def _with_cliques(args, spec, data, budget, mechanism):
    """``--cliques``: the whole budget on those cliques (release learner) or the learner."""
    from dataclasses import replace

    from ..models import MarkovRandomField
    from ..privacy import Accountant, release_marginals

    domain = domain_of(data, args.domain)
    accountant = Accountant(budget)
    (rng,) = streams(args.seed, 1)
    mrf = MarkovRandomField(domain, args.cliques)
    if spec.kind == "records":
        learner = spec.make(**_record_options(spec, args))
        fit = learner.fit(data, mrf, budget=budget, rng=rng, accountant=accountant)
    else:
        rel = release_marginals(
            data,
            mrf,
            budget=budget,
            mechanism=mechanism,
            rng=rng,
            accountant=accountant,
            total=args.total,
        )
        fit = spec.make().fit(rel, mrf)
    return replace(fit, info={**fit.info, "budget": accountant.spent})


def _from_data(args, spec, table):
    """The fit of ``--data``: with ``--cliques`` as given, else the whole workflow on
    ``table`` (the data and their checked preparation spec, :func:`_table_first`)."""
    from ..errors import PrivacyParameterError
    from ._table import fit_from_table

    budget, mechanism = budget_of(args)
    _check_budget_kind(spec, budget)
    if args.cliques is not None and (args.person is not None or args.max_records_per_person > 1):
        raise PrivacyParameterError(
            "--person and --max-records-per-person need the whole workflow: leave out --cliques"
        )
    if args.cliques is None and spec.kind != "release":
        raise PrivacyParameterError(
            f"learner {spec.name!r} fits records: give --cliques (selection needs a release "
            "learner)"
        )
    if args.cliques is not None:
        return _with_cliques(args, spec, read_data(args.data), budget, mechanism)
    return fit_from_table(args, *table, budget)


def _table_first(args):
    """``(data, spec)`` of the whole workflow, every undecided column refused in one
    message before JAX is imported; ``None`` for the other sources."""
    if args.release is not None or args.cliques is not None:
        return None
    from ._table import check_table, table_spec

    data = read_data(args.data)
    spec = table_spec(data, args)
    check_table(data, spec, args)
    return data, spec


def _run(args) -> None:
    table = _table_first(args)
    from .. import learners
    from ..io import save_fit

    if args.learner is None:
        args.learner = DEFAULT_LEARNER["release" if args.release is not None else "data"]
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
        fit = _from_data(args, spec, table)
    save_fit(fit, args.out)
    say(f"written: {args.out}")


def _add_check_argument(p) -> None:
    p.add_argument(
        "--check-share",
        type=float,
        default=None,
        help="budget share held out to check the model against the private "
        "independent model on the workload, which replaces a worse model; "
        "default 0.02, 0: no check (pgm_dp.table.check)",
    )


def _add_table_arguments(p) -> None:
    """The preparation and selection flags of ``--data`` without ``--cliques``."""
    out = _args.output_file
    p.add_argument(
        "--prepare",
        type=_args.domain_file,
        default=None,
        metavar="SPEC.json",
        help='column declarations (docs/data.md): {column: [categories] | {"bins": [...]} | '
        '{"bounds": [lo, hi]} | "drop"}, or a plan written by --plan-out; pgm-dp prepare '
        "writes a starting one",
    )
    p.add_argument(
        "--prepare-share",
        type=_args.probability,
        default=None,
        help="share of the budget for the one-way tables that decide the "
        "compression (and private quantiles); default MST's third, at least 0.15 of a "
        "pure epsilon up to half of it (pgm_dp.select.plan.one_way_share)",
    )
    p.add_argument(
        "--drop-identifiers",
        action="store_true",
        help="drop identifier-like columns (row numbers, ids) instead of refusing",
    )
    p.add_argument(
        "--missing",
        choices=["state", "refuse", "data"],
        default="state",
        help="missing values: a state of every column (folded away privately where its noisy "
        "count is rare), refused, or a state where the data have some (read without privacy)",
    )
    p.add_argument(
        "--no-compress", action="store_true", help="keep rare categories (no private merging)"
    )
    p.add_argument(
        "--categories-from-data",
        action="store_true",
        help="read undeclared categories from the data (NOT private; said)",
    )
    p.add_argument(
        "--bounds-from-data",
        action="store_true",
        help="read undeclared numeric bounds from the data (NOT private; said)",
    )
    p.add_argument(
        "--plan-out",
        type=out,
        default=None,
        help="write the preparation (JSON; --prepare reads it back as a spec)",
    )
    _add_selection_arguments(p)


def _add_selection_arguments(p) -> None:
    """The selection flags of ``--data`` (AIM's or MST's) and the files a fit writes."""
    out = _args.output_file
    p.add_argument(
        "--selection",
        choices=["aim", "mst"],
        default="aim",
        help="marginal selection: AIM (workload-aware) or MST (pure epsilon only)",
    )
    p.add_argument(
        "--workload",
        default=None,
        help="AIM's workload: 2way, 3way or a JSON list of cliques (default: "
        "pgm_dp.select.plan.default_workload)",
    )
    p.add_argument(
        "--max-model-size",
        type=_args.positive_float,
        default=80.0,
        help="AIM's model-size limit (MB of junction-tree tables)",
    )
    p.add_argument(
        "--max-rounds",
        type=_args.positive_int,
        default=None,
        help="AIM's rounds T (default: from N, the domain and epsilon)",
    )
    p.add_argument("--release-out", type=out, default=None, help="write every measured table")
    p.add_argument("--report", type=out, default=None, help="write the fit's report (JSON)")
    p.add_argument(
        "--selection-fraction",
        type=_args.probability,
        default=SELECTION_FRACTION,
        help="with --selection mst: share of the rest spent choosing the tree",
    )


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("fit", help="fit a model from a release or data", description=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--release", type=_args.release_file, help="a release JSON file")
    src.add_argument("--data", type=_args.existing_file, help="CSV or Parquet file")
    p.add_argument(
        "--cliques",
        type=_args.clique,
        nargs="+",
        help="cliques to release with the whole budget (default: AIM selects)",
    )
    p.add_argument(
        "--learner",
        default=None,
        help="a registered learner: naive, cgm, psgd, ... (default: naive from --data, cgm "
        "from --release)",
    )
    p.add_argument(
        "--domain", type=_args.domain_file, default=None, help="JSON {name: size or [labels]}"
    )
    add_budget_arguments(p)
    _args.add_person_arguments(p, "with --data: ")
    _add_table_arguments(p)
    _add_check_argument(p)
    p.add_argument("--out", type=_args.output_file, default="model.npz", help="fit file (.npz)")
    p.set_defaults(func=_run)
