"""Real data sets shipped with pgm_dp (for the real-data experiment of Bernstein et al. 2017,
Sec. 4.2, run on UCI Adult in place of the private wifi data).

:func:`load_adult` reads ``pgm_dp/data/adult.csv.gz`` and ``adult-domain.json`` (UCI Adult,
48,842 records x 14 attributes, already discretised to integer codes; source and licence in
``pgm_dp/data/README.md``) and validates every value against the domain.

Example
-------
>>> df, dom = load_adult(["sex", "income>50K"])
>>> df.shape
(48842, 2)
>>> dom
Domain(sex: 2, income>50K: 2)
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Sequence
from importlib import resources

import pandas as pd

from .domain import Domain
from .errors import DataValidationError, DomainError

__all__ = ["load_adult", "ADULT_ATTRIBUTES"]

ADULT_ATTRIBUTES = (
    "age",
    "workclass",
    "fnlwgt",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income>50K",
)


def _read_text(name: str) -> str:
    with resources.files("pgm_dp").joinpath("data", name).open("rb") as fh:
        raw = fh.read()
    return (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")


def load_adult(columns: Sequence[str] | None = None) -> tuple[pd.DataFrame, Domain]:
    """The UCI Adult data as integer codes and their :class:`~pgm_dp.Domain`.

    Args:
        columns: The attributes to keep, in this order (the domain and the frame follow it;
            default: all 14 in file order).

    Returns:
        ``(frame, domain)``. Every record is checked by :meth:`Domain.encode`; the
    returned frame holds ``int64`` codes ``0..k-1``. Raises :class:`~pgm_dp.errors.DomainError`
    for an unknown or repeated column name.
    """
    full = Domain.from_dict(json.loads(_read_text("adult-domain.json")))
    if columns is None:
        names = list(full.attributes)
    else:
        names = [columns] if isinstance(columns, str) else list(columns)
        if not names:
            raise DomainError("columns must name at least one attribute")
        if len(set(names)) != len(names):
            raise DomainError(f"repeated column in {names}")
        for n in names:
            full.index(n)  # unknown name -> DomainError listing the attributes
    domain = Domain(names, full.sizes(names))
    frame = pd.read_csv(io.StringIO(_read_text("adult.csv.gz")))
    if list(frame.columns) != list(full.attributes):
        raise DataValidationError(
            f"shipped adult.csv columns {list(frame.columns)} differ from its domain "
            f"{list(full.attributes)}"
        )
    codes = domain.encode(frame)
    return pd.DataFrame(codes, columns=names), domain
