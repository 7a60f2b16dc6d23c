"""The ``pgm-dp`` command.

``pgm-dp`` with no sub-command runs the main job on its built-in default: ``compare``, the
learner comparison on the third-order chain (``pgm-dp demo`` is the smaller tour).

Each sub-command is one module with ``add_parser(subparsers)``, listed in :data:`COMMANDS`
with its one-line help; only the chosen command's module is imported, and these modules hold
arguments only (the experiments are imported when they run), so every ``--help`` and every
refused argument needs neither JAX, pgmpy nor matplotlib. Errors in the
arguments or the data are one line on stderr and exit status 2, before any work.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main", "build_parser", "COMMANDS", "MAIN_JOB"]

#: name -> (module defining ``add_parser``, one-line help). Add a command: one module + a line.
COMMANDS = {
    "release": ("pgm_dp.cli.release", "release noisy marginals of a data file (JSON out)"),
    "fit": ("pgm_dp.cli.fit", "fit a model from a release or from data (cliques chosen privately)"),
    "evaluate": ("pgm_dp.cli.evaluate", "KL to a reference model and held-out log-likelihood"),
    "posterior": ("pgm_dp.cli.posterior", "noise-aware posterior of a release, diagnostics"),
    "demo": ("pgm_dp.cli.demo", "a ten-second tour: exact marginals vs sample frequencies"),
    "compare": ("pgm_dp.cli.compare", "compare learners on one budget (the main job)"),
    "fig2": ("pgm_dp.cli.fig2", "Bernstein et al. Fig. 2: KL vs N per epsilon"),
    "figures": ("pgm_dp.cli.figures", "Bernstein et al. Fig. 1(a)-(c), 3(a)"),
    "adult": ("pgm_dp.cli.adult", "held-out log-likelihood vs epsilon on UCI Adult"),
    "prising": ("pgm_dp.cli.prising", "PrIsing (AISTATS 2024): estimate beta, experiments"),
    "cgm-grid": ("pgm_dp.cli.cgm_grid", "CGM-EM vs naive MLE vs mbi on a wide grid"),
    "bayes": ("pgm_dp.cli.bayes", "noise-aware posteriors: calibration, example"),
    "zhang": ("pgm_dp.cli.zhang", "Zhang et al. (2020): recovery, separation, PMW"),
}
MAIN_JOB = "compare"


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and exit 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The parser; the modules of ``commands`` (default: all) are imported and their full
    parsers built, the others are listed only."""
    parser = OneLineParser(
        prog="pgm-dp",
        description="Learn discrete graphical models under differential privacy.",
        epilog=f"Without a command, runs '{MAIN_JOB}' on its defaults.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    wanted = COMMANDS if commands is None else commands
    for name, (module, doc) in COMMANDS.items():
        if name in wanted:
            importlib.import_module(module).add_parser(sub)
            sub.choices[name].formatter_class = argparse.ArgumentDefaultsHelpFormatter
        else:
            sub.add_parser(name, help=doc, add_help=False)
    return parser


def _command(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _cache_compiled_programs() -> None:
    """Keep compiled programs on disk for the next run (``enable_compilation_cache``)."""
    from .._config import enable_compilation_cache

    try:
        enable_compilation_cache()
    except OSError:  # no writable cache folder: compile as usual
        pass


def main(argv: list[str] | None = None) -> int:
    """Run ``pgm-dp``; returns the exit status."""
    from ..errors import PgmDpError

    argv = list(sys.argv[1:] if argv is None else argv) or [MAIN_JOB]
    name = _command(argv)
    parser = build_parser([name] if name in COMMANDS else [])
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    out = getattr(args, "out", None)
    if isinstance(out, str) and name in ("cgm-grid", "bayes", "zhang"):  # checked late
        from ._args import output_dir

        try:
            output_dir(out)
        except argparse.ArgumentTypeError as err:
            print(f"pgm-dp {name}: error: argument --out: {err}", file=sys.stderr)
            return 2
    _cache_compiled_programs()
    try:
        args.func(args)
    except (PgmDpError, ValueError, OSError) as err:
        print(f"pgm-dp {name}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pgm-dp: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
