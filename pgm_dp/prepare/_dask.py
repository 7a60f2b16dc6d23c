"""Sufficient statistics of a Dask DataFrame (or a Parquet / CSV path read by Dask): one
task per partition counts its records (:func:`pgm_dp.stats.count_columns`) and the tables
are summed, so no worker holds more than one partition and the client only small tables.

Needs the ``dask`` extra (``dask[distributed]``, ``pyarrow``). Without a ``client`` the
current ``distributed`` client is used if there is one, else Dask's local scheduler.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..domain import Clique, Domain
from ..errors import DataValidationError

__all__ = ["dask_statistics", "read_dask"]


def read_dask(path: str | os.PathLike, columns: list | None = None):
    """A Dask DataFrame of a Parquet file / folder or a CSV file (glob patterns allowed)."""
    import dask.dataframe as dd

    p = os.fspath(path)
    if p.endswith((".parquet", ".pq")) or os.path.isdir(p):
        if not os.path.exists(p):
            raise DataValidationError(f"no such data file: {p}")
        return dd.read_parquet(p, columns=columns)
    return dd.read_csv(p, usecols=columns)


def _partition_tables(part, cliques, domain, count_columns):
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
    data: Any, cliques: tuple[Clique, ...], domain: Domain, count_columns, client: Any = None
) -> dict[Clique, np.ndarray]:
    """The clique tables of a Dask DataFrame or path, summed over partitions (exact);
    ``count_columns``: :func:`pgm_dp.stats.count_columns` (passed in: no import cycle).
    Record numbers in validation errors count from the start of the partition."""
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
    tasks = [count(p, cliques, domain, count_columns) for p in parts]
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
