"""``pgm-dp compare``: learners on one privacy budget (Bernstein et al. 2017, Sec. 4.1).

Without ``--data`` the learners fit releases of data drawn from a known true model (KL from
it). With ``--data FILE`` they fit the user's own table (:mod:`pgm_dp.compare.table`): split
by ``--seed``, prepared, selected and measured once per ``--eps`` as ``pgm-dp fit --data``
does, then every learner on the same noisy tables; held-out log-likelihood and 2-way TVD
per learner, a table, a CSV and a plot (when matplotlib is present). The preparation flags
are those of ``fit`` (``--prepare``, ``--drop-identifiers``, ...); every registered learner
runs, a record learner such as psgd on the same prepared records with what the
preparation left of each ε. With ``--person COLUMN`` the split is by person (no person on both
sides) and the fits protect persons (``fit``'s ``--max-records-per-person``); release learners
only, and no ``--peers``, which protect records.
``--peers`` adds Private-PGM's MST and AIM (:mod:`pgm_dp.compare.peers`, where mbi is
installed) on the same split.

Only the arguments live here (each checked while parsing, nothing heavy imported); the
comparison is :func:`pgm_dp.compare.graphs.run_compare`, imported when the command runs, which
checks the learners against the registry (any registered learner, plugins included) before
any work.
"""

from __future__ import annotations

import argparse
import warnings

from ._args import (
    add_person_arguments,
    domain_file,
    existing_file,
    int_at_least,
    learner_name,
    output_dir,
    positive_float,
    probability,
)

__all__ = ["add_parser", "add_common_arguments", "add_graph_arguments", "DEFAULT_LEARNERS"]

#: ``compare``'s default learners (equal to ``pgm_dp.compare.graphs.LEARNERS``, tested).
DEFAULT_LEARNERS = ("random", "nonprivate", "naive", "cgm", "psgd")
#: ``compare --data``'s default learners (any registered learner may be named).
DATA_LEARNERS = ("naive", "cgm")


#: ``compare --help``'s description: both modes.
_DESCRIPTION = f"""Learners on one privacy budget (Bernstein et al. 2017, Sec. 4.1), in one of two
modes.

Model mode (without --data): data are drawn from a known true model (--graph, --T, --k,
--N); each learner fits noisy releases of them; the report is the median KL(true ||
learned) per epsilon (lower is better), a CSV of every fit and a plot in --out.
Learners: {" ".join(DEFAULT_LEARNERS)} by default.

Data mode (--data FILE): your own table is split by --seed (--test-fraction held out),
prepared, selected and measured once per --eps as 'pgm-dp fit --data' does, then every
learner fits the same noisy tables; the report is the held-out log-likelihood per record
(higher is better) and the mean 2-way total variation error against the held-out records
(lower is better) per learner and epsilon, a CSV and a plot in --out.
Learners: {" ".join(DATA_LEARNERS)} by default; --peers adds Private-PGM's MST and AIM."""
_LEARNERS_DEFAULT = (
    f" (default: {' '.join(DEFAULT_LEARNERS)} without --data; {' '.join(DATA_LEARNERS)} with "
    "--data)"
)


def add_common_arguments(p: argparse.ArgumentParser, default_help: str | None = None) -> None:
    """``--learners`` (any registered name), ``--seed`` and ``--out`` (shared with the
    reproductions of Fig. 2 and the CGM grid). ``default_help``: the text that states
    ``--learners``' default when it depends on the mode (the default is then ``None``)."""
    p.add_argument(
        "--learners",
        nargs="+",
        default=list(DEFAULT_LEARNERS) if default_help is None else None,
        type=learner_name,
        metavar="LEARNER",
        help="learners to run: any registered learner, those of installed plugins ('pgm_dp."
        "learners' entry points) included; an unknown name is refused with the list of "
        "registered ones. 'mbi' needs the bench extra" + (default_help or ""),
    )
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
    p.add_argument(
        "--out", type=output_dir, default="pgm_dp_results", help="folder for the CSV and the plot"
    )


def add_graph_arguments(p: argparse.ArgumentParser, N: list[int] | int, eps: list[float]) -> None:
    """``--T``, ``--k``, ``--N``, ``--eps`` (shared with the Fig. 2 reproduction)."""
    p.add_argument("--T", type=int_at_least(4), default=10, help="variables in the true model")
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


def _run_data(a: argparse.Namespace) -> None:
    from ..compare import table as compare_data
    from ..plotting import MISSING_MATPLOTLIB
    from ._data import read_data, say
    from ._table import _prepare_options, _say_warnings, check_table, table_spec

    learners = DATA_LEARNERS if a.learners is None else a.learners
    data = read_data(a.data)
    spec = table_spec(data, a)
    check_table(data, spec, a)
    peers = _peers_check(a)
    options = {**_prepare_options(a), "max_records_per_person": a.max_records_per_person}
    if a.prepare_share is not None:
        options["prepare_share"] = a.prepare_share
    say(f"comparing {', '.join(learners)} on {a.data} (held out: {a.test_fraction:g}) ...")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compare_data.compare_on_table(
            data,
            spec,
            epsilons=a.eps,
            learners=learners,
            delta=a.delta,
            seed=a.seed,
            test_fraction=a.test_fraction,
            out_dir=a.out,
            plot=a.plot,
            **options,
        )
        if peers:
            result = _with_peers(a, result, data, spec, peers)
    _say_warnings(caught)
    say(compare_data.print_table(result))
    say(f"written: {result.csv}")
    if result.plot is not None:
        say(f"Plot written to {result.plot}")
    elif a.plot is None:
        say(f"note: no plot written ({MISSING_MATPLOTLIB})")


def _peers_check(a: argparse.Namespace) -> tuple:
    """``--peers``: the peers asked for, mbi checked before any work
    (:mod:`pgm_dp.compare.peers`)."""
    if a.peers is None:
        return ()
    from ..compare.peers import check_peers
    from ..errors import PrivacyParameterError

    if a.person is not None:
        raise PrivacyParameterError(
            "--peers protect records, not persons: leave out --peers or --person"
        )

    return check_peers(a.peers)


def _with_peers(a: argparse.Namespace, result, data, spec, peers):
    from ..compare.peers import add_peers
    from ..prepare.derived import split_derived
    from ._data import say
    from ._table import _prepare_options

    spec, derived = split_derived(data, spec)  # the peers model the columns the fits model
    data = data.drop(columns=[d.name for d in derived])

    say(f"fitting the peers ({', '.join(peers)}, Private-PGM on mbi) on the same split ...")
    return add_peers(
        result,
        data,
        spec,
        epsilons=a.eps,
        delta=a.delta,
        seed=a.seed,
        test_fraction=a.test_fraction,
        methods=peers,
        out_dir=a.out,
        plot=a.plot,
        **_prepare_options(a),
    )


def _run(a: argparse.Namespace) -> None:
    if a.data is not None:
        return _run_data(a)
    from ..compare import graphs as compare

    learners = DEFAULT_LEARNERS if a.learners is None else a.learners
    result = compare.run_compare(
        a.graph,
        a.T,
        a.k,
        a.N,
        a.eps,
        a.populations,
        a.replications,
        learners,
        a.seed,
        progress=False,
        out_dir=a.out,
        plot=a.plot,
    )
    compare.print_result(result)
    if result.plot is None and a.plot is None:
        from ..plotting import MISSING_MATPLOTLIB

        print(f"note: no plot written ({MISSING_MATPLOTLIB})")


def _add_data_arguments(p: argparse.ArgumentParser) -> None:
    """``--data`` and the flags of a comparison on the user's own table."""
    p.add_argument(
        "--data",
        type=existing_file,
        default=None,
        help="compare on this CSV/Parquet table instead of a simulated one",
    )
    p.add_argument(
        "--test-fraction",
        type=probability,
        default=0.2,
        help="with --data: share of the records (of the persons, with --person) held out "
        "(split by --seed)",
    )
    add_person_arguments(p, "with --data: ")
    p.add_argument(
        "--delta",
        type=probability,
        default=None,
        help="with --data: (epsilon, delta) through zCDP instead of pure epsilon",
    )
    p.add_argument(
        "--domain",
        type=domain_file,
        default=None,
        help="with --data: JSON {name: size or [labels]}",
    )
    p.add_argument(
        "--drop-identifiers",
        action="store_true",
        help="with --data: drop identifier-like columns instead of refusing",
    )
    p.add_argument(
        "--categories-from-data",
        action="store_true",
        help="with --data: read undeclared categories from the data (NOT private)",
    )
    p.add_argument(
        "--bounds-from-data",
        action="store_true",
        help="with --data: read undeclared numeric bounds from the data (NOT private)",
    )
    p.add_argument(
        "--missing",
        choices=["state", "refuse", "data"],
        default="state",
        help="with --data: missing values as a state, refused, or where present",
    )
    p.add_argument(
        "--prepare",
        type=domain_file,
        default=None,
        metavar="SPEC.json",
        help="with --data: column declarations, as pgm-dp fit --prepare reads them (a spec, "
        "or a plan written by --plan-out)",
    )
    p.add_argument(
        "--prepare-share",
        type=probability,
        default=None,
        help="with --data: share of the budget for the one-way tables (as pgm-dp fit)",
    )
    p.add_argument(
        "--no-compress",
        action="store_true",
        help="with --data: keep rare categories (no private merging)",
    )
    p.add_argument(
        "--peers",
        nargs="*",
        choices=["mst", "aim"],
        default=None,
        help="with --data: also Private-PGM's MST and AIM (needs mbi 2.x; no name: both), at "
        "(epsilon, delta or 1e-9), scored the same way, with their CPU seconds",
    )


def add_parser(subparsers) -> None:
    """Register ``compare``."""
    p = subparsers.add_parser(
        "compare",
        help="compare learners on one budget: KL from a true model, or on --data held-out "
        "log-likelihood and 2-way error",
        description=_DESCRIPTION,
    )
    p.add_argument(
        "--graph",
        choices=["chain", "er"],
        default="chain",
        help="true model: third-order chain or connected Erdos-Renyi graph",
    )
    add_graph_arguments(p, 100_000, [0.1, 1.0])
    p.add_argument(
        "--populations",
        type=int_at_least(1),
        default=1,
        help="data sets drawn from the true model (references fitted once per data set)",
    )
    p.add_argument(
        "--replications",
        type=int_at_least(1),
        default=1,
        help="noisy releases (private fits) per data set and epsilon",
    )
    add_common_arguments(p, _LEARNERS_DEFAULT)
    _add_data_arguments(p)
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write the PNG (unset: where matplotlib, the plot extra, is installed)",
    )
    p.set_defaults(func=_run)
