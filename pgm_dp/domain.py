"""Domains of discrete variables and validation of data against them.

A :class:`Domain` is an ordered tuple of variable names with their sizes; a variable of size
``k`` takes the integer codes ``0, ..., k-1``. Every routine that reads data goes through
:func:`Domain.encode`, the single place where data are checked (unknown or missing variables,
NaN, non-integers, values outside the domain, wrong shapes, empty data) before anything else
happens — in particular before any privacy budget is spent. Inputs are never mutated.

Example
-------
>>> from pgm_dp import Domain
>>> dom = Domain(["A", "B", "C"], [2, 3, 4])
>>> dom.size(("A", "C"))
8
>>> dom.project(["C", "A"])
Domain(A: 2, C: 4)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from .errors import DataValidationError, DomainError, ModelTooLargeError

__all__ = ["Domain", "Clique", "normalize_cliques", "check_table_cells", "MAX_TABLE_CELLS"]

#: Most cells (summed over the tables) that one call may allocate for clique tables built from
#: a domain: 2^28 cells, 2 GiB as int64/float64. Larger requests raise ModelTooLargeError
#: before anything is allocated (sizes are computed with Python ints, so they never overflow).
MAX_TABLE_CELLS = 2**28

Clique = tuple[Hashable, ...]


@dataclass(frozen=True, init=False)
class Domain:
    """Ordered variables and their (finite) sizes.

    Parameters
    ----------
    attributes : sequence of hashable
        Variable names, in a fixed order (the column order of encoded data).
    shape : sequence of int
        Number of states of each variable (>= 1).
    """

    attributes: tuple[Hashable, ...]
    shape: tuple[int, ...]

    def __init__(self, attributes: Iterable[Hashable], shape: Iterable[int]):
        attrs = tuple(attributes)
        sizes = tuple(shape)
        if len(attrs) != len(sizes):
            raise DomainError(f"{len(attrs)} attributes but {len(sizes)} sizes")
        if not attrs:
            raise DomainError("a domain needs at least one variable")
        if len(set(attrs)) != len(attrs):
            raise DomainError(f"duplicate attribute names in {attrs}")
        clean = []
        for a, s in zip(attrs, sizes, strict=True):
            try:
                ok = not isinstance(s, bool) and int(s) == s and int(s) >= 1
            except (TypeError, ValueError, OverflowError):
                ok = False
            if not ok:
                raise DomainError(f"size of {a!r} must be a positive integer, got {s!r}")
            clean.append(int(s))
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "shape", tuple(clean))

    @classmethod
    def from_dict(cls, sizes: Mapping[Hashable, int]) -> Domain:
        """Build a domain from ``{name: size}`` (insertion order is kept)."""
        return cls(list(sizes.keys()), list(sizes.values()))

    # -- basic queries ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.attributes)

    def __contains__(self, name: object) -> bool:
        return name in self.attributes

    def __iter__(self):
        return iter(self.attributes)

    def __repr__(self) -> str:
        body = ", ".join(f"{a}: {s}" for a, s in zip(self.attributes, self.shape, strict=True))
        return f"Domain({body})"

    def to_dict(self) -> dict[Hashable, int]:
        return dict(zip(self.attributes, self.shape, strict=True))

    def index(self, name: Hashable) -> int:
        """Position of a variable; raises :class:`DomainError` if unknown."""
        try:
            return self.attributes.index(name)
        except ValueError:
            raise DomainError(
                f"unknown variable {name!r}; domain has {list(self.attributes)}"
            ) from None

    def sizes(self, names: Iterable[Hashable]) -> tuple[int, ...]:
        """Sizes of the given variables, in the given order."""
        return tuple(self.shape[self.index(n)] for n in names)

    def size(self, names: Iterable[Hashable] | None = None) -> int:
        """Number of cells of the joint table of ``names`` (all variables by default)."""
        return prod(self.shape if names is None else self.sizes(names))

    def project(self, names: Iterable[Hashable]) -> Domain:
        """Sub-domain on ``names``, kept in this domain's order."""
        wanted = set(names)
        for n in wanted:
            self.index(n)
        keep = [a for a in self.attributes if a in wanted]
        return Domain(keep, self.sizes(keep))

    def canonical(self, names: Iterable[Hashable]) -> Clique:
        """``names`` validated, de-duplicated and sorted in domain order."""
        names = list(names)
        if len(set(names)) != len(names):
            raise DomainError(f"repeated variable in {tuple(names)}")
        return tuple(sorted(names, key=self.index))

    # -- data --------------------------------------------------------------------------
    def encode(self, data: Any) -> np.ndarray:
        """Validate ``data`` against the domain and return an ``(n, d)`` int64 array.

        ``data`` is a pandas DataFrame (columns named by the variables; extra columns are
        ignored, columns are reordered to the domain order) or an integer array of shape
        ``(n, len(domain))`` in domain order. Raises :class:`DataValidationError` for empty
        data, a missing variable, NaN/inf, non-integer values, values outside ``0..k-1`` or a
        wrong shape. The input is never modified (a new array is returned).
        """
        if hasattr(data, "columns") and hasattr(data, "to_numpy"):  # pandas-like
            missing = [a for a in self.attributes if a not in data.columns]
            if missing:
                raise DataValidationError(
                    f"data lack variables {missing}; columns are {list(data.columns)}"
                )
            repeated = [a for a in self.attributes if list(data.columns).count(a) > 1]
            if repeated:
                raise DataValidationError(f"data have more than one column named {repeated}")
            arr = data[list(self.attributes)].to_numpy()
        else:
            try:
                arr = np.asarray(data)
            except ValueError as err:  # e.g. ragged rows
                raise DataValidationError(f"data are not a rectangular array: {err}") from None
            if arr.ndim == 1 and len(self) == 1:
                arr = arr[:, None]
            if arr.ndim != 2 or arr.shape[1] != len(self):
                raise DataValidationError(
                    f"data must have shape (n, {len(self)}) in domain order "
                    f"{list(self.attributes)}; got shape {arr.shape}"
                )
        if arr.shape[0] == 0:
            raise DataValidationError("data are empty (0 records)")
        return _to_codes(arr, self)


def _to_codes(arr: np.ndarray, domain: Domain) -> np.ndarray:
    if arr.dtype == object:
        if any(isinstance(x, str | bytes) for x in arr.flat):
            raise DataValidationError("data must be numeric integer codes, not strings")
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise DataValidationError(f"data must be numeric integer codes: {err}") from None
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(arr))[0]
            raise DataValidationError(
                f"data contain NaN or inf (record {bad[0]}, variable {domain.attributes[bad[1]]!r})"
            )
        if np.any(arr != np.round(arr)):
            raise DataValidationError("data contain non-integer values; expected integer codes")
    elif arr.dtype.kind not in "iu":
        raise DataValidationError(f"data must be integer codes, got dtype {arr.dtype}")
    upper = np.asarray(domain.shape, dtype=np.int64)
    bad = (arr < 0) | (arr >= upper)  # in the data's own dtype: no wrap-around first
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataValidationError(
            f"value {arr[r, c]} of variable {domain.attributes[c]!r} (record {r}) is outside "
            f"its domain 0..{upper[c] - 1}"
        )
    return arr.astype(np.int64, copy=True)


def normalize_cliques(domain: Domain, cliques: Iterable[Sequence[Hashable]]) -> tuple[Clique, ...]:
    """Validate cliques against ``domain``: tuples of known, distinct variables.

    The order of variables inside each clique is kept (it is the axis order of that clique's
    table); a single name (string) is accepted as a one-variable clique.
    """
    out = []
    for cl in cliques:
        if isinstance(cl, str) or not isinstance(cl, Iterable):
            cl = (cl,)
        cl = tuple(cl)
        if len(cl) == 0:
            raise DomainError("empty clique")
        if len(set(cl)) != len(cl):
            raise DomainError(f"repeated variable in clique {cl}")
        for v in cl:
            domain.index(v)
        out.append(cl)
    return tuple(out)


def check_table_cells(
    domain: Domain, cliques: Iterable[Sequence[Hashable]], max_cells: int = MAX_TABLE_CELLS
) -> int:
    """Total number of cells of the tables of ``cliques`` (exact Python int), or
    :class:`~pgm_dp.errors.ModelTooLargeError` when it exceeds ``max_cells`` (nothing is
    allocated either way).

    >>> check_table_cells(Domain(["A", "B"], [2, 3]), [("A", "B"), ("B",)])
    9
    """
    total = 0
    for cl in cliques:
        cells = prod(int(s) for s in domain.sizes(cl))
        total += cells
        if total > max_cells:
            raise ModelTooLargeError(
                f"the table of {tuple(cl)} has {cells:,} cells ({total:,} in all so far), above "
                f"the limit of {max_cells:,} cells (pgm_dp.domain.MAX_TABLE_CELLS); nothing was "
                "allocated"
            )
    return total
