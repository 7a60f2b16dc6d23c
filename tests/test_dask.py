"""Dask DataFrames and Parquet / CSV paths: the tables equal the in-memory ones exactly."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

from pgm_dp import Domain, sufficient_statistics
from pgm_dp.errors import DataValidationError

DOM = Domain.from_dict({"A": ["no", "yes"], "B": 3, "C": 4})
CLIQUES = [("A", "B"), ("B", "C"), ("C",)]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 5000
    return pd.DataFrame(
        {"A": rng.choice(["no", "yes"], n), "B": rng.integers(0, 3, n), "C": rng.integers(0, 4, n)}
    )


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as c:
            yield c


def _equal(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_dask_frame_and_paths_on_a_cluster(frame, client, tmp_path):
    ref = sufficient_statistics(frame, CLIQUES, DOM)
    ddf = dd.from_pandas(frame, npartitions=4)
    assert _equal(sufficient_statistics(ddf, CLIQUES, DOM, client=client), ref)
    assert _equal(sufficient_statistics(ddf, CLIQUES, DOM), ref)  # the current client
    frame.to_parquet(tmp_path / "d.parquet")
    assert _equal(sufficient_statistics(tmp_path / "d.parquet", CLIQUES, DOM), ref)
    frame.to_csv(tmp_path / "d.csv", index=False)
    assert _equal(sufficient_statistics(str(tmp_path / "d.csv"), CLIQUES, DOM), ref)
    assert ref[("A", "B")].dtype == np.int64 and ref[("A", "B")].sum() == len(frame)


def test_dask_errors_are_data_errors(frame, client):
    bad = dd.from_pandas(frame.assign(B=frame.B.where(frame.index != 4000, 7)), npartitions=4)
    with pytest.raises(DataValidationError, match="outside its domain"):
        sufficient_statistics(bad, CLIQUES, DOM, client=client)
    with pytest.raises(DataValidationError, match="lack variables"):
        sufficient_statistics(dd.from_pandas(frame[["A"]], npartitions=2), CLIQUES, DOM)
