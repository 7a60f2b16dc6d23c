"""The ``pgm-dp`` command: the user's workflow.

``pgm-dp`` with no sub-command runs the main job on a built-in default: a private fit of the
shipped UCI Adult table (:mod:`pgm_dp.cli.main_job`). The sub-commands: ``prepare`` (a
starting spec for a table), ``release`` → ``fit`` → ``sample`` (synthetic records) / ``evaluate`` /
``posterior``,
``compare`` (learners on one budget), ``prising`` (PrIsing's estimate of one network and its
posterior) and ``demo``. The papers'
experiments are not commands of the package: ``python -m reproductions`` in the repository.

Each sub-command is one module with ``add_parser(subparsers)``, listed in :data:`COMMANDS`
with its one-line help; only the chosen command's module is imported, and these modules hold
arguments only (the work is imported when it runs), so every ``--help`` and every refused
argument needs neither JAX, pgmpy nor matplotlib. Errors in the arguments are one line on
stderr and exit status 2, before any work; so are errors found when the command runs (bad
data, an unknown learner, a missing optional package): :func:`run_command`.

Progress goes to stderr while a command runs (:class:`pgm_dp._progress.Progress`: each long
step with its count and an estimate of the time left); ``--quiet`` (every command, and
``pgm-dp --quiet`` for the main job) turns it off. The results stay on stdout. XLA's own
C++ log lines (its "Very slow compile?" alarm while a large program compiles, which reads
as an error but is not one) are kept off stderr: :func:`main` sets ``TF_CPP_MIN_LOG_LEVEL``
to 3 (fatal only) before JAX is imported, unless the user set it (``TF_CPP_MIN_LOG_LEVEL=0``
shows them all). Python warnings are not affected.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

__all__ = [
    "main",
    "build_parser",
    "run_command",
    "plain",
    "COMMANDS",
    "MAIN_JOB",
    "OneLineParser",
    "HelpFormatter",
    "QUIET",
]

#: name -> (module defining ``add_parser``, one-line help). Add a command: one module + a line.
COMMANDS = {
    "release": ("pgm_dp.cli.release", "release noisy marginals of a data file (JSON out)"),
    "prepare": ("pgm_dp.cli.prepare", "write a starting spec for --prepare (read WITHOUT privacy)"),
    "fit": ("pgm_dp.cli.fit", "fit a model from a release or from data (cliques chosen privately)"),
    "sample": ("pgm_dp.cli.sample", "synthetic records of a fit (CSV or Parquet out)"),
    "evaluate": ("pgm_dp.cli.evaluate", "KL to a reference model and held-out log-likelihood"),
    "posterior": ("pgm_dp.cli.posterior", "noise-aware posterior of a release, diagnostics"),
    "compare": (
        "pgm_dp.cli.compare",
        "compare learners on one budget (KL from a true model; --data: held-out "
        "log-likelihood and 2-way error)",
    ),
    "prising": ("pgm_dp.cli.prising", "PrIsing (AISTATS 2024): private beta of one network"),
    "demo": ("pgm_dp.cli.demo", "a ten-second tour: exact marginals vs sample frequencies"),
}
#: What ``pgm-dp`` runs without a command (:mod:`pgm_dp.cli.main_job`).
MAIN_JOB = "fit"
#: The flags that turn progress off (every command, and the main job).
QUIET = ("-q", "--quiet")


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and exit 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


#: Sphinx markup of the modules' docstrings, as plain text in ``--help``.
_ROLE = re.compile(r":(?:func|mod|class|data|meth|attr|exc):`~?([^`]+)`")


def plain(text: str) -> str:
    """Docstring text as ``--help`` shows it: roles and double backticks dropped."""
    return _ROLE.sub(r"\1", text).replace("``", "")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions without Sphinx markup, paragraphs kept; ``(default: X)`` added to an
    argument's help where it says no default itself and the default is something."""

    def _fill_text(self, text, width, indent):
        paragraphs = plain(text).strip().split("\n\n")
        return "\n\n".join(
            argparse.HelpFormatter._fill_text(self, p, width, indent) for p in paragraphs
        )

    def _get_help_string(self, action):
        text = plain(action.help or "")
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return text + " (default: %(default)s)"
        return text


def build_parser(commands=None) -> argparse.ArgumentParser:
    """The parser; the modules of ``commands`` (default: all) are imported and their full
    parsers built, the others are listed only."""
    parser = OneLineParser(
        prog="pgm-dp",
        description="Learn discrete graphical models under differential privacy.",
        epilog="Without a command, runs the main job: a private fit of the shipped UCI Adult "
        "table ('pgm-dp fit' on it), printing what was chosen and spent at each step "
        "(pgm-dp --quiet: without progress lines). Every command writes progress on stderr; "
        "--quiet turns it off.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    wanted = COMMANDS if commands is None else commands
    for name, (module, doc) in COMMANDS.items():
        if name in wanted:
            importlib.import_module(module).add_parser(sub)
            sub.choices[name].formatter_class = HelpFormatter
            sub.choices[name].add_argument(
                *QUIET, action="store_true", help="no progress lines on stderr"
            )
        else:
            sub.add_parser(name, help=doc, add_help=False)
    return parser


def _command(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _message(err: BaseException) -> str:
    """An error's message for stderr: one line, unless the message is laid out over lines
    itself (the refusal that lists every undecided column), whose lines are kept."""
    lines = [line.rstrip() for line in str(err).splitlines() if line.strip()]
    if len(lines) > 1:
        return "\n".join(lines)
    return " ".join(str(err).split()) or type(err).__name__


def run_command(args: argparse.Namespace, prog: str) -> int:
    """Run a parsed command (``args.func(args)``) with progress on stderr unless
    ``--quiet``; returns the exit status. An error found while running (bad input, an
    unknown learner, a missing optional package, a file that cannot be read or written) is
    one line on stderr, ``prog: error: ...`` (a message laid out over lines keeps them),
    and status 2."""
    from .._progress import Progress, reporting
    from ..errors import PgmDpError

    try:
        with reporting(None if getattr(args, "quiet", False) else Progress()):
            args.func(args)
    except (PgmDpError, ValueError, OSError, ImportError) as err:
        print(f"{prog}: error: {_message(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``pgm-dp``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # XLA's C++ logs (module docstring)
    if all(a in QUIET for a in argv):
        from .main_job import run_main_job

        return run_main_job(quiet=bool(argv))
    name = _command(argv)
    parser = build_parser([name] if name in COMMANDS else [])
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return run_command(args, f"pgm-dp {name}")


if __name__ == "__main__":
    raise SystemExit(main())
