"""Sufficient statistics: contingency tables of data on cliques.

For an MRF with cliques ``C``, the sufficient statistics of a data set are the clique count
tables ``n_C(x_C) = #{records with X_C = x_C}`` (Bernstein et al. 2017, Sec. 2). They are
computed in chunks of rows: each chunk's columns are validated and encoded
(:func:`~pgm_dp.encoding.encode_column`), combined into flat cell indices and counted with
``np.bincount``; the tables are summed over chunks. No copy of the whole input is made
(peak memory: the input plus a few chunk-sized buffers), and the speed is that of a
hand-written bincount (``benchmarks/bench_stats.py``). A Dask DataFrame, or a Parquet / CSV
path, is counted one task per partition and the tables summed (:func:`dask_statistics`).

Example
-------
>>> import numpy as np
>>> from pgm_dp import Domain, sufficient_statistics
>>> dom = Domain(["A", "B"], [2, 3])
>>> tabs = sufficient_statistics(np.array([[0, 1], [1, 2], [0, 1]]), [("A", "B")], dom)
>>> tabs[("A", "B")].tolist()
[[0, 2, 0], [0, 0, 1]]
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from .domain import Clique, Codes, Domain, check_table_cells, normalize_cliques
from .encoding import encode_column, is_dask, split_columns
from .errors import DataValidationError

__all__ = ["sufficient_statistics", "dask_statistics", "read_dask", "CHUNK_ROWS"]

#: Rows per chunk: small enough for the chunk's buffers to stay in cache-friendly sizes.
CHUNK_ROWS = 1 << 16


def _check_weights(weights, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise DataValidationError(f"weights must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise DataValidationError("weights must be finite and non-negative")
    return w


def _rows(col: Any, start: int, stop: int) -> Any:
    return col.iloc[start:stop] if hasattr(col, "iloc") else col[start:stop]


def count_columns(
    columns: Sequence[Any],
    cliques: Sequence[Clique],
    domain: Domain,
    weights: np.ndarray | None = None,
    chunk_rows: int = CHUNK_ROWS,
    offset: int = 0,
) -> dict[Clique, np.ndarray]:
    """The tables of one block of records given as one 1-D column per variable (domain
    order; unused variables may be ``None``), counted ``chunk_rows`` records at a time:
    validation, encoding and counting touch one chunk at a time. ``offset``: the record
    number of the first row (for error messages)."""
    axes = {cl: [domain.index(v) for v in cl] for cl in cliques}
    used = sorted({j for ax in axes.values() for j in ax})
    dtype = np.int64 if weights is None else np.float64
    out = {cl: np.zeros(domain.size(cl), dtype=dtype) for cl in cliques}
    n = len(columns[used[0]]) if used else 0
    flat = np.empty(min(n, chunk_rows), dtype=np.int64)
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        codes = {
            j: encode_column(
                _rows(columns[j], start, stop),
                domain.attributes[j],
                domain.shape[j],
                domain.labels[j],
                offset + start,
            )
            for j in used
        }
        w = None if weights is None else weights[start:stop]
        buf = flat[: stop - start]
        for cl, ax in axes.items():
            np.copyto(buf, codes[ax[0]])
            for j in ax[1:]:
                buf *= domain.shape[j]
                buf += codes[j]
            out[cl] += np.bincount(buf, weights=w, minlength=out[cl].size).astype(dtype)
    return {cl: t.reshape(domain.sizes(cl)) for cl, t in out.items()}


def sufficient_statistics(
    data: Any,
    cliques: Iterable[Sequence[Hashable]],
    domain: Domain,
    weights: Sequence[float] | np.ndarray | None = None,
    *,
    client: Any = None,
) -> dict[Clique, np.ndarray]:
    """Count tables ``{clique: array}`` of ``data`` on each clique.

    Args:
        data (pandas.DataFrame, array of shape (n, d), :class:`~pgm_dp.domain.Codes`, Dask
            DataFrame, or Parquet / CSV path): Codes or labels, validated as
            :meth:`Domain.encode` does (chunk by chunk; only the cliques'
            variables are read). A Dask DataFrame or a path is counted partition by partition (one
            task each) on ``client`` (a ``distributed.Client``; default: the current client if one
            exists, else Dask's local scheduler) and the tables summed.
        cliques (iterable of variable tuples): Axis order of each table follows the clique's
            variable order.
        domain (Domain): The variables and their sizes.
        weights (array of shape (n,), optional): Per-record non-negative weights (e.g. ``1/K`` for a
            person with ``K`` records, Bernstein et al. Sec. 4.2); the tables are then float64
            weighted counts (not with Dask data).

    Raises :class:`~pgm_dp.errors.ModelTooLargeError` (before anything is allocated) when the
    tables would have more than :data:`~pgm_dp.domain.MAX_TABLE_CELLS` cells in all.
    """
    cliques = normalize_cliques(domain, cliques)
    check_table_cells(domain, cliques)  # ModelTooLargeError before reading or allocating
    if is_dask(data) or isinstance(data, str | os.PathLike):
        if weights is not None:
            raise DataValidationError("weights are not supported with Dask data or paths")
        return dask_statistics(data, cliques, domain, client=client)
    if isinstance(data, Codes):  # codes, never read by label
        data, domain = domain.encode(data), Domain(domain.attributes, domain.shape)
    columns = split_columns(data, domain)
    n = len(columns[0])
    if n == 0:
        raise DataValidationError("data are empty (0 records)")
    return count_columns(columns, cliques, domain, _check_weights(weights, n))


def read_dask(path: str | os.PathLike, columns: list | None = None):
    """A Dask DataFrame of a Parquet file / folder or a CSV file (glob patterns allowed)."""
    import dask.dataframe as dd

    p = os.fspath(path)
    if p.endswith((".parquet", ".pq")) or os.path.isdir(p):
        if not os.path.exists(p):
            raise DataValidationError(f"no such data file: {p}")
        return dd.read_parquet(p, columns=columns)
    return dd.read_csv(p, usecols=columns)


def _partition_tables(part, cliques, domain):
    if len(part) == 0:
        return {cl: np.zeros(domain.sizes(cl), dtype=np.int64) for cl in cliques}
    columns = [part[a] if a in part.columns else None for a in domain.attributes]
    return count_columns(columns, cliques, domain)


def _sum(tables: list[dict]) -> dict:
    out = {cl: t.copy() for cl, t in tables[0].items()}
    for tabs in tables[1:]:
        for cl, t in tabs.items():
            out[cl] += t
    return out


def dask_statistics(
    data: Any, cliques: tuple[Clique, ...], domain: Domain, client: Any = None
) -> dict[Clique, np.ndarray]:
    """The clique tables of a Dask DataFrame or path (a Parquet file or folder, or a CSV file:
    :func:`read_dask`), one task per partition counting its records (:func:`count_columns`),
    summed over partitions (exact). Needs the ``dask`` extra (``dask[distributed]``,
    ``pyarrow``). Without a ``client`` the current ``distributed`` client is used if there is
    one, else Dask's local scheduler. Record numbers in validation errors count from the
    start of the partition."""
    import dask

    used = [a for a in domain.attributes if any(a in cl for cl in cliques)]
    if isinstance(data, str | os.PathLike):
        data = read_dask(data, columns=used)
    missing = [a for a in used if a not in data.columns]
    if missing:
        raise DataValidationError(
            f"data lack variables {missing}; columns are {list(data.columns)}"
        )
    parts = data[used].to_delayed()
    count = dask.delayed(_partition_tables, pure=True)
    tasks = [count(p, cliques, domain) for p in parts]
    total = dask.delayed(_sum, pure=True)(tasks)
    if client is None:
        try:
            from distributed import get_client

            client = get_client()
        except (ImportError, ValueError):
            client = None
    tables = client.compute(total).result() if client is not None else total.compute()
    if cliques and not next(iter(tables.values())).sum():
        raise DataValidationError("data are empty (0 records)")
    return tables
