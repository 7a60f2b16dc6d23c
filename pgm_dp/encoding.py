"""Column access and per-column encoding behind :meth:`pgm_dp.Domain.encode`, at the
domain's layer (it imports nothing of the package but its errors).

Data arrive as a pandas DataFrame, a Dask DataFrame, a CSV / Parquet path or an array; each
variable's column is taken without copying the whole input and encoded on its own: by label
for labelled variables (each distinct value is looked up among the domain's labels, so a
frame's own category order never matters), as integer codes otherwise. Records already
encoded (:class:`pgm_dp.domain.Codes`) never come here: codes are not labels, and
:meth:`pgm_dp.Domain.encode` passes them through.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataValidationError

__all__ = ["split_columns", "encode_column", "column_domain", "read_table", "is_dask"]


def is_dask(data: Any) -> bool:
    """Whether ``data`` is a Dask collection (duck-typed: no Dask import)."""
    return type(data).__module__.startswith("dask") and hasattr(data, "compute")


def read_table(path: str | os.PathLike, columns: list | None = None) -> pd.DataFrame:
    """A CSV (optionally compressed) or Parquet file as a DataFrame."""
    p = os.fspath(path)
    if not os.path.exists(p):
        raise DataValidationError(f"no such data file: {p}")
    if p.endswith((".parquet", ".pq")) or os.path.isdir(p):
        return pd.read_parquet(p, columns=columns)
    return pd.read_csv(p, usecols=columns)


def split_columns(data: Any, domain) -> list:
    """One 1-D column (a pandas Series or NumPy view) per variable, in domain order."""
    attrs = list(domain.attributes)
    if isinstance(data, str | os.PathLike):
        data = read_table(data)
    if is_dask(data):
        data = data[attrs].compute() if hasattr(data, "columns") else data.compute()
    if hasattr(data, "columns") and hasattr(data, "to_numpy"):  # pandas-like
        missing = [a for a in attrs if a not in data.columns]
        if missing:
            raise DataValidationError(
                f"data lack variables {missing}; columns are {list(data.columns)}"
            )
        cols = list(data.columns)
        repeated = [a for a in attrs if cols.count(a) > 1]
        if repeated:
            raise DataValidationError(f"data have more than one column named {repeated}")
        return [data[a] for a in attrs]
    try:
        arr = np.asarray(data)
    except ValueError as err:  # e.g. ragged rows
        raise DataValidationError(f"data are not a rectangular array: {err}") from None
    if arr.ndim == 1 and len(attrs) == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != len(attrs):
        raise DataValidationError(
            f"data must have shape (n, {len(attrs)}) in domain order {attrs}; got shape {arr.shape}"
        )
    return [arr[:, j] for j in range(arr.shape[1])]


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _by_label(col: Any, labels: tuple) -> bool:
    """Labelled variable: is this column read by label (else as codes)?"""
    dtype = getattr(col, "dtype", None)
    if isinstance(dtype, pd.CategoricalDtype) or dtype is None:
        return True
    kind = np.dtype(dtype).kind if not isinstance(dtype, pd.api.extensions.ExtensionDtype) else "O"
    if kind in "OSUb":
        return True
    return all(_is_number(v) for v in labels)  # numeric column: by label if labels are numbers


def _encode_labels(col: Any, name: Hashable, labels: tuple) -> np.ndarray:
    found, uniques = pd.factorize(col)  # -1 marks missing values
    pos = pd.Index(list(labels), dtype=object).get_indexer(np.asarray(uniques, dtype=object))
    codes = np.where(found >= 0, pos[found], -1)
    if codes.size and codes.min() < 0:
        if (found < 0).any():
            raise DataValidationError(f"variable {name!r} has missing values in the data")
        raise DataValidationError(
            f"variable {name!r} has values in the data that are not one of its labels "
            f"{list(labels)}"
        )
    return codes


def encode_column(
    col: Any, name: Hashable, size: int, labels: tuple | None, offset: int = 0
) -> np.ndarray:
    """Codes ``0..size-1`` of one column (see the module docstring); a new array.

    A refusal names the variable and what was expected, never the offending value nor its
    record (either would disclose a record of private data in a log or traceback);
    ``offset`` (the record number of a chunk's first row) is accepted for the callers and
    not shown."""
    if labels is not None and _by_label(col, labels):
        return _encode_labels(col, name, labels)
    arr = np.asarray(col)
    if arr.dtype == object:
        if any(isinstance(x, str | bytes) for x in arr):
            raise DataValidationError(
                f"data must be numeric integer codes, not strings: variable {name!r} has no "
                "labels in the domain (declare them, e.g. with Domain.from_dataframe)"
            )
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise DataValidationError(f"data must be numeric integer codes: {err}") from None
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            raise DataValidationError(
                f"variable {name!r} has NaN or inf in the data; expected integer codes "
                f"0..{size - 1}"
            )
        if np.any(arr != np.round(arr)):
            raise DataValidationError(
                f"variable {name!r} has non-integer values in the data; expected integer codes "
                f"0..{size - 1}"
            )
    elif arr.dtype.kind not in "iu":
        raise DataValidationError(f"data must be integer codes, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= size):  # in the data's own dtype
        raise DataValidationError(
            f"variable {name!r} has values in the data outside its domain 0..{size - 1}"
        )
    return arr.astype(np.int64)


def column_domain(col: pd.Series, name: Hashable) -> tuple[int, tuple | None]:
    """``(size, labels)`` of one column (see :meth:`pgm_dp.Domain.from_dataframe`)."""
    if col.isna().any():
        raise DataValidationError(f"column {name!r} has missing values")
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        labels = tuple(dtype.categories)
    elif dtype.kind == "b":
        labels = (False, True)
    elif dtype.kind in "iuf":
        values = col.to_numpy()
        if dtype.kind == "f" and np.any(values != np.round(values)):
            raise DataValidationError(f"column {name!r} has non-integer numbers")
        if values.size == 0 or values.min() < 0:
            raise DataValidationError(f"column {name!r}: integer codes must be >= 0")
        return int(values.max()) + 1, None
    else:
        uniq = list(pd.unique(col))
        try:
            labels = tuple(sorted(uniq))
        except TypeError:
            labels = tuple(sorted(uniq, key=str))
    if not labels:
        raise DataValidationError(f"column {name!r} has no values")
    return len(labels), labels
