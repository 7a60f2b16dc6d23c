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
    "LEARNER_NAMES",
    "int_at_least",
    "adult_columns",
    "learner_name",
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
    except (ValueError, OSError) as err:
        raise argparse.ArgumentTypeError(f"{text} is not JSON: {err}") from None
    if not isinstance(doc, dict) or not doc:
        raise argparse.ArgumentTypeError(f"{text} must hold {{name: size or [labels]}}")
    return doc


#: The registered learners' names, kept here so that parsers need not import the registry
#: (JAX); ``tests/test_cli.py`` checks it equals :func:`pgm_dp.learners.available`, and the
#: experiments look every name up in the registry again when they run.
LEARNER_NAMES = (
    "random",
    "nonprivate",
    "naive",
    "cgm",
    "psgd",
    "mbi",
    "zhang_ising",
    "zhang_ising_np",
    "zhang_pairwise",
    "zhang_pairwise_np",
    "zhang_tmrf",
    "zhang_tmrf_np",
    "pmw",
    "zhang_structure",
    "bayes",  # registered by pgm_dp.bayes, loaded by name (pgm_dp.experiments.compare.PLUGINS)
)


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


def adult_columns() -> list[str]:
    """The shipped UCI Adult attributes, read from its domain file (no pandas needed)."""
    from importlib import resources

    text = resources.files("pgm_dp").joinpath("data", "adult-domain.json").read_text()
    return list(json.loads(text))


def learner_name(text: str) -> str:
    """A registered learner: one of :data:`LEARNER_NAMES`, or of the registry itself when it
    is already imported (learners registered at run time by a program using ``pgm_dp``)."""
    import sys

    names = LEARNER_NAMES
    registry = sys.modules.get("pgm_dp.learners.registry")
    if registry is not None:
        names = tuple(dict.fromkeys(names + tuple(registry.available())))
    if text not in names:
        raise argparse.ArgumentTypeError(f"unknown learner {text!r}; choose from {list(names)}")
    return text


class LazyModule:
    """A module imported on first attribute access: what a command runs, not its parser."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)
