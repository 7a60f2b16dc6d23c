"""``pgm-dp`` without a command: the main job on a built-in default.

A private fit of the shipped UCI Adult table (:func:`pgm_dp.load_adult`: 48,842 records x 14
attributes, public domain in ``adult-domain.json``), run exactly as

    pgm-dp fit --data ADULT.csv.gz --domain ADULT-DOMAIN.json --learner naive
               --out pgm_dp_results/adult_model.npz

would run it (:mod:`pgm_dp.cli.fit`, pure ε = 1): the cliques are chosen privately (MST),
their tables released with the discrete Laplace mechanism, and the model fitted to them and
to the selection's one-way tables. The learner is Naive MLE because it fits all 14
attributes in seconds; CGM-EM (``--learner cgm``, the ``fit`` default) takes minutes on
Adult's widest tables (age x hours-per-week: 8,415 cells). A short report follows: what
was chosen, the budget of each step, where the model was written.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["run_main_job", "MAIN_JOB_LEARNER", "MAIN_JOB_OUT"]

#: The main job's learner and output file (see the module docstring).
MAIN_JOB_LEARNER = "naive"
MAIN_JOB_OUT = str(Path("pgm_dp_results") / "adult_model.npz")


def _argv(data: Path, domain: Path) -> list[str]:
    return [
        "fit", "--data", str(data), "--domain", str(domain),
        "--learner", MAIN_JOB_LEARNER, "--out", MAIN_JOB_OUT,
    ]  # fmt: skip


def _report(args) -> None:
    """What was chosen, the budget of each step, where the model was written."""
    from ..io import load_model
    from ._data import say

    model = load_model(args.out)
    chosen = [c for c in model.cliques if len(c) > 1]
    eps_select = args.epsilon * args.selection_fraction
    say(f"Budget: pure epsilon-DP, epsilon = {args.epsilon:g} in all (discrete Laplace noise)")
    say(
        f"  1. choose the cliques (MST: the {len(model.domain)} one-way tables, then "
        f"{len(chosen)} exponential-mechanism choices): epsilon {eps_select:g}"
    )
    say(f"  2. release the {len(chosen)} chosen tables: epsilon {args.epsilon - eps_select:g}")
    say(
        f"  3. fit {MAIN_JOB_LEARNER!r} to them and to step 1's one-way tables "
        f"({len(model.cliques)} in all): nothing more spent"
    )
    say(f"Model written to {args.out}; evaluate: pgm-dp evaluate --model {args.out} --data FILE")
    say("Your own data: pgm-dp fit --data FILE.csv --domain DOMAIN.json (see pgm-dp fit --help)")


def run_main_job() -> int:
    """Run the main job; returns the exit status (errors: one line, status 2)."""
    from . import build_parser, run_command
    from ._data import say

    data_dir = resources.files("pgm_dp").joinpath("data")
    with (
        resources.as_file(data_dir.joinpath("adult.csv.gz")) as data,
        resources.as_file(data_dir.joinpath("adult-domain.json")) as domain,
    ):
        argv = _argv(data, domain)
        args = build_parser(["fit"]).parse_args(argv)
        fit = args.func
        args.func = lambda a: (fit(a), _report(a))
        say(
            "pgm-dp: the main job, a private fit of the shipped UCI Adult table "
            "(48,842 records x 14 attributes), run as: pgm-dp " + " ".join(argv)
        )
        return run_command(args, "pgm-dp")
