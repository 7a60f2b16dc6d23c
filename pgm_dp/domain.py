"""Domains of discrete variables, their labels, and validation of data against them.

A :class:`Domain` is an ordered tuple of variable names with their sizes; a variable of size
``k`` takes the integer codes ``0, ..., k-1``. A variable may also carry **labels**: a tuple
of ``k`` distinct values (strings, integers, floats or booleans), label ``i`` being code
``i``. Every routine that reads data goes through :meth:`Domain.encode`, the single place
where data are checked (unknown or missing variables, NaN, non-integers, values outside the
domain, labels not in the domain, wrong shapes, empty data) before anything else happens —
in particular before any privacy budget is spent. Inputs are never mutated.

Labelled columns are encoded **by label** — never by pandas' category order, which depends on
how the frame was built (pgmpy's sampler sorts categories, its CPDs need not) — so a label
not in the domain is an error, not a silent code.

Records once encoded are a :class:`Codes` value (an ``(n, d)`` code array and the domain it is
coded on; :meth:`pgm_dp.prepare.Preparation.encode` returns one). Codes are not labels:
:meth:`Domain.encode` passes them through (after checking that they are on this domain) and
never reads them by label, so a variable whose labels are numbers (``[1984, 1985]``,
``[2, 1, 0]``) keeps its codes wherever the codes travel.

Example
-------
>>> import pandas as pd
>>> from pgm_dp import Domain
>>> dom = Domain(["A", "B", "C"], [2, 3, 4])
>>> dom.size(("A", "C"))
8
>>> dom.project(["C", "A"])
Domain(A: 2, C: 4)
>>> lab = Domain.from_dict({"smoker": ["yes", "no"], "age": 3})
>>> lab.encode(pd.DataFrame({"age": [2, 0], "smoker": ["no", "yes"]})).tolist()
[[1, 2], [0, 0]]
>>> lab.decode([[1, 2]]).smoker.tolist()
['no']
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from .encoding import column_domain, encode_column, split_columns
from .errors import DataValidationError, DomainError, ModelTooLargeError

__all__ = [
    "Domain",
    "Codes",
    "Clique",
    "Labels",
    "normalize_cliques",
    "check_table_cells",
    "MAX_TABLE_CELLS",
]

#: Most cells (summed over the tables) that one call may allocate for clique tables built from
#: a domain: 2^28 cells, 2 GiB as int64/float64. Larger requests raise ModelTooLargeError
#: before anything is allocated (sizes are computed with Python ints, so they never overflow).
MAX_TABLE_CELLS = 2**28

Clique = tuple[Hashable, ...]
Labels = tuple[Any, ...]


def _clean_label(value: Any, name: Hashable) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        raise DomainError(f"labels of {name!r} contain NaN")
    if not isinstance(value, str | int | float | bool):
        raise DomainError(
            f"labels of {name!r} must be str, int, float or bool, got {type(value).__name__}"
        )
    return value


def _clean_labels(labels: Any, name: Hashable, size: int) -> Labels | None:
    if labels is None:
        return None
    if isinstance(labels, str) or not isinstance(labels, Iterable):
        raise DomainError(f"labels of {name!r} must be a sequence, got {labels!r}")
    out = tuple(_clean_label(v, name) for v in labels)
    if len(out) != size:
        raise DomainError(f"{name!r} has size {size} but {len(out)} labels {out}")
    if len(set(out)) != len(out) or len({(type(v) is str, v) for v in out}) != len(out):
        raise DomainError(f"labels of {name!r} are not distinct: {out}")
    return out


@dataclass(frozen=True, init=False)
class Domain:
    """Ordered variables, their (finite) sizes and optional labels.

    Args:
        attributes (sequence of hashable): Variable names, in a fixed order (the column order of
            encoded data).
        shape (sequence of int): Number of states of each variable (>= 1).
        labels (mapping name → sequence, or sequence aligned with ``attributes``, optional): The
            states' labels of some variables (``None`` for an unlabelled variable); label ``i`` is
            code ``i``. Two domains are equal only if their labels are equal too.
    """

    attributes: tuple[Hashable, ...]
    shape: tuple[int, ...]
    labels: tuple[Labels | None, ...]

    def __init__(self, attributes: Iterable[Hashable], shape: Iterable[int], labels: Any = None):
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
        if labels is None:
            raw = [None] * len(attrs)
        elif isinstance(labels, Mapping):
            unknown = set(labels) - set(attrs)
            if unknown:
                raise DomainError(f"labels given for unknown variables {sorted(map(str, unknown))}")
            raw = [labels.get(a) for a in attrs]
        else:
            raw = list(labels)
            if len(raw) != len(attrs):
                raise DomainError(f"{len(raw)} label tuples for {len(attrs)} variables")
        labs = tuple(_clean_labels(lb, a, s) for lb, a, s in zip(raw, attrs, clean, strict=True))
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "shape", tuple(clean))
        object.__setattr__(self, "labels", labs)

    @classmethod
    def from_dict(cls, sizes: Mapping[Hashable, int | Sequence[Any]]) -> Domain:
        """Build a domain from ``{name: size or labels}`` (insertion order is kept)."""
        shape, labels = [], {}
        for name, v in sizes.items():
            if isinstance(v, Iterable) and not isinstance(v, str):
                labels[name] = tuple(v)
                shape.append(len(labels[name]))
            else:
                shape.append(v)
        return cls(list(sizes.keys()), shape, labels or None)

    @classmethod
    def from_dataframe(cls, df: Any, columns: Sequence[Hashable] | None = None) -> Domain:
        """The domain of a DataFrame's columns (all, or ``columns`` in that order).

        A ``category`` column keeps its categories as labels (in their declared order), a
        bool column gets ``(False, True)``, a string / object column its sorted distinct
        values; an integer column (or integer-valued float) is taken as codes ``0..max``.

        **Privacy:** the labels and sizes are read from the data, so they disclose which
        values occur. For a private release declare the domain from public knowledge
        (``Domain.from_dict({"smoker": ["no", "yes"], ...})``) instead.
        """

        names = list(df.columns) if columns is None else list(columns)
        missing = [c for c in names if c not in df.columns]
        if missing:
            raise DataValidationError(f"data lack columns {missing}")
        shape, labels = [], []
        for name in names:
            k, lab = column_domain(df[name], name)
            shape.append(k)
            labels.append(lab)
        return cls(names, shape, labels)

    # -- basic queries ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.attributes)

    def __contains__(self, name: object) -> bool:
        return name in self.attributes

    def __iter__(self):
        return iter(self.attributes)

    def __repr__(self) -> str:
        body = ", ".join(
            f"{a}: {s if lb is None else list(lb)}"
            for a, s, lb in zip(self.attributes, self.shape, self.labels, strict=True)
        )
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

    def labels_of(self, name: Hashable) -> Labels | None:
        """The labels of one variable (``None`` when it has none)."""
        return self.labels[self.index(name)]

    @property
    def has_labels(self) -> bool:
        """Whether any variable carries labels."""
        return any(lb is not None for lb in self.labels)

    def sizes(self, names: Iterable[Hashable]) -> tuple[int, ...]:
        """Sizes of the given variables, in the given order."""
        return tuple(self.shape[self.index(n)] for n in names)

    def size(self, names: Iterable[Hashable] | None = None) -> int:
        """Number of cells of the joint table of ``names`` (all variables by default)."""
        return prod(self.shape if names is None else self.sizes(names))

    def project(self, names: Iterable[Hashable]) -> Domain:
        """Sub-domain on ``names``, kept in this domain's order (labels kept)."""
        wanted = set(names)
        for n in wanted:
            self.index(n)
        keep = [a for a in self.attributes if a in wanted]
        return Domain(keep, self.sizes(keep), [self.labels_of(a) for a in keep])

    def canonical(self, names: Iterable[Hashable]) -> Clique:
        """``names`` validated, de-duplicated and sorted in domain order."""
        names = list(names)
        if len(set(names)) != len(names):
            raise DomainError(f"repeated variable in {tuple(names)}")
        return tuple(sorted(names, key=self.index))

    # -- JSON --------------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        """``{"attributes", "shape", "labels"}`` with JSON types (str / int names only)."""
        for a in self.attributes:
            if isinstance(a, bool) or not isinstance(a, str | int):
                raise DomainError(f"saving needs str or int variable names, got {a!r}")
        return {
            "attributes": list(self.attributes),
            "shape": list(self.shape),
            "labels": [None if lb is None else list(lb) for lb in self.labels],
        }

    @classmethod
    def from_json_dict(cls, d: Mapping) -> Domain:
        """Inverse of :meth:`to_json_dict` (``labels`` optional)."""
        return cls(d["attributes"], d["shape"], d.get("labels"))

    # -- data --------------------------------------------------------------------------
    def encode(self, data: Any) -> np.ndarray:
        """Validate ``data`` against the domain and return an ``(n, d)`` int64 array.

        ``data`` is a pandas DataFrame (columns named by the variables; extra columns are
        ignored, columns are reordered to the domain order), a Dask DataFrame (computed), an
        array of shape ``(n, len(domain))`` in domain order, or :class:`Codes` (passed
        through, never read by label: :meth:`Codes.on`). A labelled variable's column
        is encoded by label: strings, categories, booleans and labels of any type map to
        their label's position; an integer column of a variable whose labels are not numbers
        is read as codes. An unlabelled variable needs integer codes ``0..k-1``. Raises
        :class:`DataValidationError` for empty data, a missing variable, NaN/inf,
        non-integer values, values outside ``0..k-1``, a label not in the domain or a wrong
        shape. The input is never modified; columns are validated one at a time, so no
        copy of the whole input is made besides the returned codes.
        """
        if isinstance(data, Codes):
            return data.on(self)
        columns = split_columns(data, self)
        n = len(columns[0])
        if n == 0:
            raise DataValidationError("data are empty (0 records)")
        out = np.empty((n, len(self)), dtype=np.int64, order="F")
        for j, col in enumerate(columns):
            out[:, j] = encode_column(col, self.attributes[j], self.shape[j], self.labels[j])
        return out

    def codes(self, data: Any) -> Codes:
        """:meth:`encode`'s codes of ``data`` as :class:`Codes` on this domain: what to hand
        on to a step that reads records again (no step then reads them by label)."""
        return Codes(self.encode(data), self, data.index if isinstance(data, Codes) else None)

    def decode(self, codes: Any, labels: bool = True):
        """A DataFrame of an ``(n, d)`` code array: labelled variables as pandas
        ``category`` columns whose categories are the labels in domain order (so
        ``.cat.codes`` are the codes), others as int64 codes."""
        import pandas as pd

        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] != len(self):
            raise DataValidationError(f"codes must have shape (n, {len(self)}), got {arr.shape}")
        cols = {}
        for j, (a, lab) in enumerate(zip(self.attributes, self.labels, strict=True)):
            col = arr[:, j].astype(np.int64)
            if labels and lab is not None:
                cols[a] = pd.Categorical.from_codes(col, categories=pd.Index(lab, dtype=object))
            else:
                cols[a] = col
        return pd.DataFrame(cols, columns=list(self.attributes))


@dataclass(frozen=True, eq=False)
class Codes:
    """Records encoded on a domain: codes, never labels (module docstring).

    Args:
        array (array of shape (n, d)): Integer codes, column ``j`` those of
            ``domain.attributes[j]``, each in ``0..k-1``. Kept as a read-only int64 copy.
        domain (Domain): The domain the codes are on (its labels say what each code means;
            they are never used to read the codes).
        index (pandas Index, optional): The records' index in the table they were encoded
            from (kept by :meth:`to_frame`).

    Raises :class:`DataValidationError` for a wrong shape, non-integer codes or a code
    outside its variable's ``0..k-1``.

    >>> codes = Codes([[0, 2], [1, 0]], Domain.from_dict({"d": [2, 1], "e": [0, 1, 5]}))
    >>> Domain.from_dict({"e": [0, 1, 5]}).encode(codes).tolist()  # codes, not labels
    [[2], [0]]
    """

    array: np.ndarray
    domain: Domain
    index: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise DomainError(f"codes need a Domain, got {type(self.domain).__name__}")
        arr = np.asarray(self.array)
        if arr.ndim != 2 or arr.shape[1] != len(self.domain):
            raise DataValidationError(
                f"codes must have shape (n, {len(self.domain)}), got {arr.shape}"
            )
        if arr.dtype.kind not in "iu":
            raise DataValidationError(f"codes must be integers, got dtype {arr.dtype}")
        if arr.size and ((arr < 0).any() or (arr >= np.asarray(self.domain.shape)).any()):
            raise DataValidationError("codes outside their variables' domains 0..k-1")
        arr = np.array(arr, dtype=np.int64, order="F")
        arr.flags.writeable = False
        if self.index is not None and len(self.index) != arr.shape[0]:
            raise DataValidationError(f"{len(self.index)} index labels for {arr.shape[0]} records")
        object.__setattr__(self, "array", arr)

    def __len__(self) -> int:
        return self.array.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, d)``."""
        return self.array.shape

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy or dtype is not None:
            return np.array(self.array, dtype=dtype)
        return self.array

    def __repr__(self) -> str:
        return f"Codes({len(self)} records on {self.domain!r})"

    def column(self, name: Hashable) -> np.ndarray:
        """The codes of one variable (read-only)."""
        return self.array[:, self.domain.index(name)]

    def take(self, rows: Any) -> Codes:
        """The records at positions (or a boolean mask) ``rows``, on the same domain."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        index = None if self.index is None else self.index[rows]
        return Codes(self.array[rows], self.domain, index)

    def to_frame(self):
        """A pandas DataFrame of the codes (int64 columns named by the variables)."""
        import pandas as pd

        return pd.DataFrame(self.array, index=self.index, columns=list(self.domain.attributes))

    def on(self, domain: Domain) -> np.ndarray:
        """A new ``(n, len(domain))`` int64 array of the codes of ``domain``'s variables, in
        its order: what :meth:`Domain.encode` returns for codes. ``domain`` must name
        variables of these codes with the same sizes and, where both have labels, the same
        labels (else :class:`DataValidationError`: codes on another domain mean something
        else). The labels never decode or re-encode the codes."""
        cols = []
        for name, size, labels in zip(domain.attributes, domain.shape, domain.labels, strict=True):
            if name not in self.domain:
                raise DataValidationError(
                    f"codes lack variable {name!r}; they have {list(self.domain.attributes)}"
                )
            j = self.domain.index(name)
            own = self.domain.labels[j]
            if self.domain.shape[j] != size or (
                labels is not None and own is not None and own != labels
            ):
                raise DataValidationError(
                    f"codes of {name!r} are on another domain ({self.domain.shape[j]} states "
                    f"{list(own) if own else ''}, not {size} {list(labels) if labels else ''})"
                )
            cols.append(j)
        if len(self) == 0:
            raise DataValidationError("data are empty (0 records)")
        return np.array(self.array[:, cols], dtype=np.int64, order="F")


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
