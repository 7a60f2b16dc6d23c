"""``pgm-dp`` without a command: the main job on a built-in default.

A private fit of the shipped UCI Adult table (:func:`pgm_dp.load_adult`: 48,842 records x 14
attributes, public domain in ``adult-domain.json``), run exactly as

    pgm-dp fit --data ADULT.csv.gz --domain ADULT-DOMAIN.json --learner naive
               --out pgm_dp_results/adult_model.npz

would run it (:mod:`pgm_dp.cli.fit`, pure ε = 1): the table is prepared (its rare states
merged privately with a third of ε), AIM selects and measures marginals with the rest
(discrete Laplace), and Naive MLE fits every table measured. The fit prints its report: what
was selected, the budget of each step, the expected error and the check against the private
independent model; then where the model was written and what to run next.
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
        "fit",
        "--data",
        str(data),
        "--domain",
        str(domain),
        "--learner",
        MAIN_JOB_LEARNER,
        "--out",
        MAIN_JOB_OUT,
    ]


def _report(args) -> None:
    """Where the model was written, and what to run next."""
    from ._data import say

    say(f"Model written to {args.out}; evaluate: pgm-dp evaluate --model {args.out} --data FILE")
    say(
        "Your own data: pgm-dp fit --data FILE.csv (--prepare SPEC.json declares the columns; "
        "see pgm-dp fit --help)"
    )


def run_main_job(quiet: bool = False) -> int:
    """Run the main job; returns the exit status (errors: one line, status 2). ``quiet``:
    no progress lines (``pgm-dp --quiet``)."""
    from . import build_parser, run_command
    from ._data import say

    data_dir = resources.files("pgm_dp").joinpath("data")
    with (
        resources.as_file(data_dir.joinpath("adult.csv.gz")) as data,
        resources.as_file(data_dir.joinpath("adult-domain.json")) as domain,
    ):
        argv = _argv(data, domain)
        args = build_parser(["fit"]).parse_args(argv + ["--quiet"] * quiet)
        fit = args.func
        args.func = lambda a: (fit(a), _report(a))
        say(
            "pgm-dp: the main job, a private fit of the shipped UCI Adult table (public: "
            "48,842 records x 14 attributes, its documented size; the fit neither reads nor "
            "releases the exact count, it estimates N from its noisy tables), run as: pgm-dp "
            + " ".join(argv)
        )
        return run_command(args, "pgm-dp")
