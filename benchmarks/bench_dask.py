"""Dask vs pandas: sufficient statistics of rows x 15 columns read from Parquet.

``python benchmarks/bench_dask.py --rows 1e6 1e7``: writes a Parquet folder (files of
``--part`` rows, int64 codes, 10 states), then in a fresh subprocess per contender counts 20
pair cliques: *pandas* reads the whole file and calls ``sufficient_statistics``; *dask*
passes the path on a local cluster of 2 workers (threads, so one process holds everything
and its peak resident size ``VmHWM`` is the whole cost). Prints seconds and peak memory.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

COLS, K = 15, 10


def write(folder: Path, n: int, part: int) -> None:
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    for i, start in enumerate(range(0, n, part)):
        m = min(part, n - start)
        arr = rng.integers(0, K, size=(m, COLS))
        pd.DataFrame(arr, columns=[f"c{j}" for j in range(COLS)]).to_parquet(
            folder / f"part{i:05d}.parquet", index=False
        )


def _peak() -> int:
    with open("/proc/self/status") as fh:
        return int(next(x for x in fh if x.startswith("VmHWM:")).split()[1]) * 1024


def measure(name: str, folder: str) -> dict:
    from distributed import Client, LocalCluster

    from pgm_dp import Domain, sufficient_statistics

    names = [f"c{j}" for j in range(COLS)]
    dom = Domain(names, [K] * COLS)
    pairs = list(itertools.combinations(names, 2))[::5][:20]
    if name == "dask":
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False)
        client = Client(cluster)
    start = time.perf_counter()
    if name == "pandas":
        tabs = sufficient_statistics(pd.read_parquet(folder), pairs, dom)
    else:
        tabs = sufficient_statistics(folder, pairs, dom, client=client)
    seconds = time.perf_counter() - start
    total = int(tabs[pairs[0]].sum())
    return {"seconds": seconds, "peak": _peak(), "rows": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--part", type=int, default=500_000, help="rows per Parquet file")
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.measure:
        print(json.dumps(measure(*a.measure)))
        return
    for n in map(int, a.rows):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "data"
            write(folder, n, a.part)
            res = {}
            for name in ("pandas", "dask"):
                cmd = [sys.executable, __file__, "--measure", name, str(folder)]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                res[name] = json.loads(out.strip().splitlines()[-1])
        input_mb = n * COLS * 8 / 1e6
        print(f"rows={n:.0e} x {COLS} (int64 in memory: {input_mb:.0f} MB)")
        for name, r in res.items():
            assert r["rows"] == n
            print(f"  {name:6s} {r['seconds']:7.2f} s  peak RSS {r['peak'] / 1e6:7.0f} MB")


if __name__ == "__main__":
    main()
