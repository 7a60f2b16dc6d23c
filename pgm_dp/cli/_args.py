"""Argument types and checks shared by the sub-commands: each runs while the command line
is parsed, before any work (and imports nothing heavy)."""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from pathlib import Path

__all__ = [
    "positive_float",
    "probability",
    "positive_int",
    "existing_file",
    "output_file",
    "output_dir",
    "clique",
    "domain_file",
    "release_file",
    "int_at_least",
    "learner_name",
    "add_person_arguments",
]


def positive_float(text: str) -> float:
    """A finite number > 0 (epsilon, ...)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive and finite, got {text}")
    return value


def probability(text: str) -> float:
    """A number in ``(0, 1)`` (delta, fractions)."""
    value = positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def existing_file(text: str) -> str:
    """A readable file or folder (a Parquet data set may be a folder)."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {text}")
    return text


def output_dir(text: str) -> str:
    """A writable folder: created now if missing, and a probe file written and removed, so
    an unwritable place is refused before any work."""
    try:
        Path(text).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=text):
            pass
    except OSError as err:
        raise argparse.ArgumentTypeError(f"cannot write to {text}: {err.strerror}") from None
    return text


def output_file(text: str) -> str:
    """A file path whose folder is writable (the file is written at the end)."""
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    output_dir(str(Path(text).parent))
    return text


def clique(text: str) -> tuple[str, ...]:
    """A clique written ``A,B,C``."""
    names = tuple(n.strip() for n in text.split(","))
    if not all(names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a clique is distinct names joined by ',': {text!r}")
    return names


def domain_file(text: str) -> dict:
    """A JSON file ``{name: size or [labels]}`` (a public domain declaration)."""
    existing_file(text)
    try:
        doc = json.loads(Path(text).read_text())
    except RecursionError:
        raise argparse.ArgumentTypeError(f"{text} is nested too deeply to be a spec") from None
    except (ValueError, OSError) as err:
        raise argparse.ArgumentTypeError(f"{text} is not JSON: {err}") from None
    if not isinstance(doc, dict) or not doc:
        raise argparse.ArgumentTypeError(f"{text} must hold a JSON object {{column: ...}}")
    return doc


def int_at_least(least: int):
    """An argument type: an integer ``>= least``."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be an integer >= {least}, got {text}")
        return value

    check.__name__ = f"integer >= {least}"
    return check


def learner_name(text: str) -> str:
    """A learner's name as written (an identifier). Whether it is registered is checked
    against the registry, the one list of learners (plugins included), when the command
    runs and before any work: importing the registry here would cost every ``--help`` and
    every refused argument the import of JAX."""
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"not a learner name: {text!r}")
    return text


def release_file(text: str) -> str:
    """A release: a JSON object written by ``pgm-dp release`` (a data file given by mistake
    is refused here, with a message that says so)."""
    existing_file(text)
    try:
        doc = json.loads(Path(text).read_text(encoding="utf-8"))
    except (ValueError, OSError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or "cliques" not in doc:
        raise argparse.ArgumentTypeError(
            f"{text} is not a release (the JSON file written by 'pgm-dp release')"
        )
    return text


class LazyModule:
    """A module imported on first attribute access: what a command runs, not its parser."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


def add_person_arguments(p: argparse.ArgumentParser, context: str = "") -> None:
    """``--person COLUMN`` and ``--max-records-per-person K`` (:mod:`pgm_dp.prepare.persons`);
    ``context`` starts their help (``"with --data: "``)."""
    p.add_argument(
        "--person",
        default=None,
        metavar="COLUMN",
        help=f'{context}the column that identifies a person (a spec entry "COLUMN": '
        '"person" says the same): the budget then protects each person, not each record; '
        "the column is never modelled nor written",
    )
    p.add_argument(
        "--max-records-per-person",
        type=positive_int,
        default=1,
        metavar="K",
        help=f"{context}with a person column: at most K records of each person are kept "
        "(drawn at random) and every sensitivity is K times one record's (default 1)",
    )
