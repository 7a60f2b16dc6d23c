"""Reading what the workflow commands are given: data files, domains, pgmpy structures."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["read_data", "domain_of", "read_structure", "say", "streams", "describe_total"]


def say(message: str) -> None:
    """A result line on stdout, flushed at once (a progress line on a terminal is ended
    first)."""
    from .._progress import end_line

    end_line()
    print(message, flush=True)


def read_data(path: str):
    """A CSV (optionally compressed) or Parquet file as a pandas DataFrame."""
    from ..encoding import read_table

    return read_table(path)


def domain_of(data: Any, declared: dict | None, columns=None):
    """The declared domain (``{name: size or labels}``), or one read from ``data`` (with a
    warning: categories read from the data are not private)."""
    from ..domain import Domain

    if declared is not None:
        return Domain.from_dict(declared)
    print(
        "note: the domain (categories, sizes) is read from the data and is not private; "
        "declare it with --domain for a private release",
        file=sys.stderr,
    )
    return Domain.from_dataframe(data, columns)


def read_structure(path: str, domain):
    """A model of the structure saved in a pgmpy file (BIF, XMLBIF, UAI) or a pgm_dp model."""
    from ..models import MarkovRandomField

    if path.endswith(".npz"):
        from ..io import load_model

        return load_model(path)
    from ..errors import require_extra

    require_extra("pgmpy", "pgmpy", "reading a .bif, .xmlbif or .uai file")
    from pgmpy.readwrite import BIFReader, UAIReader, XMLBIFReader

    reader = {"bif": BIFReader, "xml": XMLBIFReader, "xmlbif": XMLBIFReader, "uai": UAIReader}
    ext = path.rsplit(".", 1)[-1].lower()
    if ext not in reader:
        raise ValueError(f"unknown model file type .{ext}; use .bif, .xmlbif, .uai or .npz")
    return MarkovRandomField.from_pgmpy(reader[ext](path).get_model(), domain=domain)


def streams(seed: int | None, count: int) -> list:
    """``count`` independent generators from ``seed`` (``SeedSequence.spawn``), one per step of
    a run that draws noise more than once, or ``None`` each (the OS's randomness) unless a
    seed is given: two steps seeded alike would draw the same noise."""
    if seed is None:
        return [None] * count
    import numpy as np

    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(count)]


def describe_total(release) -> str:
    """What a release says about ``N``: exact only when it was declared public."""
    how = {
        "public": "public, outside the guarantee",
        "given": "given",
        "estimate": "estimated from the noisy tables",
        "private": "a noisy count",
    }[release.total_source]
    if release.total_is_public:
        return f"N = {release.total:,.0f} ({how})"
    return f"N about {release.total:,.0f} ({how})"
