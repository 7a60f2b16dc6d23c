"""Sufficient statistics: pgm_dp vs a hand-written NumPy bincount vs pandas groupby.

``python benchmarks/bench_stats.py --rows 1e6 3e6``: rows x 15 int64 columns (10 states
each), 20 pair cliques. Times are taken interleaved in one process (best of ``--repeat``);
peak memory is measured per contender in a fresh subprocess (the peak resident size ``VmHWM``, reset
once the input is built, minus the resident size then; Linux), as a multiple of the input's bytes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

COLS, K, CLIQUES = 15, 10, 20


def make(n: int) -> tuple[pd.DataFrame, list]:
    arr = np.random.default_rng(0).integers(0, K, size=(n, COLS))  # one block: no copy below
    df = pd.DataFrame(arr, columns=[f"c{j}" for j in range(COLS)], copy=False)
    pairs = list(itertools.combinations(df.columns, 2))[:: 105 // CLIQUES][:CLIQUES]
    return df, pairs


def run_pgm_dp(df, pairs):
    from pgm_dp import Domain, sufficient_statistics

    return sufficient_statistics(df, pairs, Domain(list(df.columns), [K] * COLS))


def run_numpy(df, pairs):
    out = {}
    for a, b in pairs:
        flat = df[a].to_numpy() * K + df[b].to_numpy()
        out[(a, b)] = np.bincount(flat, minlength=K * K).reshape(K, K)
    return out


def run_pandas(df, pairs):
    return {p: df.groupby(list(p)).size() for p in pairs}


CONTENDERS = {"pgm_dp": run_pgm_dp, "numpy": run_numpy, "pandas": run_pandas}


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def _peak() -> int:
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def memory(name: str, n: int) -> dict:
    df, pairs = make(n)
    from pgm_dp import Domain, sufficient_statistics  # noqa: F401  (imports: not measured)

    with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current
        fh.write("5")
    before = _rss()
    CONTENDERS[name](df, pairs)
    peak = _peak()
    return {"input": df.memory_usage(index=False).sum(), "extra": max(0, peak - before)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 3e6])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory-of", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory_of:
        print(
            json.dumps({k: int(v) for k, v in memory(a.memory_of[0], int(a.memory_of[1])).items()})
        )
        return
    for n in map(int, a.rows):
        df, pairs = make(n)
        ref = run_numpy(df, pairs)
        assert all(np.array_equal(run_pgm_dp(df, pairs)[p], ref[p]) for p in pairs)
        best = dict.fromkeys(CONTENDERS, np.inf)
        for _ in range(a.repeat):  # interleaved
            for name, fn in CONTENDERS.items():
                start = time.perf_counter()
                fn(df, pairs)
                best[name] = min(best[name], time.perf_counter() - start)
        del df
        mem = {}
        for name in CONTENDERS:
            cmd = [sys.executable, __file__, "--memory-of", name, str(n)]
            mem[name] = json.loads(
                subprocess.run(cmd, capture_output=True, check=True, text=True).stdout
            )
        size = mem["numpy"]["input"] / 1e6
        print(f"rows={n:.0e} x {COLS} cols, {CLIQUES} cliques; input {size:.0f} MB")
        for name in CONTENDERS:
            m = mem[name]
            print(
                f"  {name:7s} {best[name]:7.3f} s  ({best[name] / best['pgm_dp']:5.2f}x pgm_dp)  "
                f"extra peak {m['extra'] / 1e6:6.0f} MB = {m['extra'] / m['input']:.2f}x input"
            )


if __name__ == "__main__":
    main()
