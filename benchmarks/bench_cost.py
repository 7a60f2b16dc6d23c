"""Benchmark: the cost of ``fit_table`` (``pgm-dp fit --data``) against the table's size.

``python benchmarks/bench_cost.py`` fits generated numeric-heavy tables of growing records
(10k to 1e6), columns (5 to 20) and states (8 or 100 bins per numeric column), each in a
fresh process with an empty compilation cache, pinned to one CPU (``--core``, every thread
with it), on the pure path (``PureDP(ε)``) and the ``(ε, δ)`` path (zCDP, as ``--delta``),
and prints per fit the CPU seconds of the whole process (user + system of all its threads,
``os.wait4``: imports, the data's generation, every compile), those of ``fit_table``
alone, the longest single XLA compile and the number of compiles (``jax.monitoring``'s
``backend_compile`` events), AIM's rounds, its selected marginals and their largest, the
cells of the model's junction tree and the refinement's mirror-descent steps. Options:
``--cells`` picks cells of the grid (``N:d:bins``), ``--eps``, ``--delta``, ``--seed``,
``--core`` (``-1``: not pinned); ``--quick`` is one small cell. ``--real adult nass`` fits
``bench_realdata.py``'s tables instead (their training split, declared by their domain, as
``pgm-dp fit --data --domain``) and prints their 2-way TVD as that script's ``tvd2``.

The tables: ``d`` columns, two thirds numeric, declared by public ``bounds`` and binned into
``bins`` equal-width bins (``n_bins``), the rest categorical with 3 to 12 states; the
columns are noisy functions of three Gaussian factors, so that pairs carry structure. The
target (``issue``: no fit of a table of at most 1e6 records x 20 columns above 60 CPU s on
one core, no single compile above 20 s) is printed beside each row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: ``(records, columns, bins)`` of the default grid: growing records, width and states,
#: cheapest first (the 1e6-record cells last).
GRID = [
    (10_000, 5, 8),
    (10_000, 10, 8),
    (10_000, 20, 8),
    (10_000, 5, 100),
    (10_000, 20, 100),
    (100_000, 10, 100),
    (100_000, 20, 8),
    (100_000, 20, 100),
    (1_000_000, 5, 8),
    (1_000_000, 20, 8),
    (1_000_000, 20, 100),
]
#: The columns of the printed table.
HEADER = ["records", "columns", "bins", "path", "CPU s (process)", "CPU s (fit_table)",
          "longest compile s", "compiles", "rounds", "marginals", "largest", "model cells",
          "refine steps"]  # fmt: skip
TARGET_CPU_S = 60.0
TARGET_COMPILE_S = 20.0


def table(n: int, d: int, bins: int, seed: int):
    """A numeric-heavy ``n x d`` DataFrame and its declaration (module docstring)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 3))
    cols, spec = {}, {}
    numeric = (2 * d + 2) // 3
    for j in range(numeric):
        x = z[:, j % 3] * (1 + j % 2) + 0.7 * rng.standard_normal(n)
        cols[f"x{j}"] = x
        spec[f"x{j}"] = {"bounds": [-6.0, 6.0], "n_bins": bins}
    for j in range(d - numeric):
        k = 3 + (3 * j) % 10
        cols[f"c{j}"] = np.floor((z[:, j % 3] + 0.5 * rng.standard_normal(n) + 3) * k / 6).clip(
            0, k - 1
        ).astype(np.int64)  # fmt: skip
        spec[f"c{j}"] = {"categories": list(range(k)), "missing": False}
    return pd.DataFrame(cols), spec


def child(
    n: int, d: int, bins: int, eps: float, delta: float, seed: int, core: int, real=None
) -> None:
    """One fit (in this process, pinned to CPU ``core`` when ``core >= 0``, every thread
    with it) of a generated table, or of the real table ``real``; prints a JSON line."""
    if core >= 0:
        os.sched_setaffinity(0, {core})
    from jax import monitoring

    compiles: list[float] = []

    def listen(event: str, seconds: float, **kwargs) -> None:
        if event.endswith("backend_compile_duration"):
            compiles.append(seconds)

    monitoring.register_event_duration_secs_listener(listen)
    from pgm_dp.privacy import ApproxDP, PureDP
    from pgm_dp.table.fit import fit_table

    df, spec = table(n, d, bins, seed) if real is None else real_table(real)
    budget = PureDP(eps) if delta == 0 else ApproxDP(eps, delta)
    start = time.process_time()
    fit = fit_table(df, spec, budget=budget, rng=seed)
    seconds = time.process_time() - start
    model = getattr(fit.selection, "model", None) or fit.fit.model
    out = {"fit_cpu_s": seconds, "longest_compile_s": max(compiles, default=0.0),
           "compiles": len(compiles), "rounds": fit.report["rounds"],
           "selected": len(fit.report["selected"]),
           "largest_clique": max(len(c) for c in fit.report["selected"]),
           "model_cells": sum(model.domain.size(c) for c in model.junction_tree().cliques),
           "refine_steps": (fit.report.get("refined") or {}).get("iterations", 0)}  # fmt: skip
    if real is not None:
        out["tvd2"] = tvd2(fit.fit.model, df)
    print(json.dumps(out))


def real_table(name: str):
    """The training split of ``bench_realdata.py``'s table ``name`` and its declaration."""
    sys.path.insert(0, str(HERE))
    from _realdata_data import load, split

    codes, domain = load(name)
    train, _ = split(codes, seed=0)
    return train, {c: {"categories": list(range(k)), "missing": False} for c, k in domain.items()}


def tvd2(model, df) -> float:
    """``bench_realdata.py``'s ``tvd2``: the mean total variation distance between the
    model's and ``df``'s marginals over every pair of columns."""
    from itertools import combinations

    import numpy as np

    from pgm_dp.inference.queries import calibrated

    pairs = list(combinations(df.columns, 2))
    tree = calibrated(model.junction_tree(), model.log_potentials)
    gaps = []
    for pair, m in zip(pairs, tree.marginals(pairs), strict=True):
        counts = np.zeros(m.shape)
        np.add.at(counts, tuple(df[c].to_numpy() for c in pair), 1)
        gaps.append(0.5 * np.abs(np.asarray(m) - counts / counts.sum()).sum())
    return float(np.mean(gaps))


def run_cell(
    n: int | str, d: int, bins: int, eps: float, delta: float, seed: int, core: int
) -> dict:
    """:func:`child` in a fresh process (empty compilation cache) on the generated table
    ``n x d`` or the real table ``n`` (a name); its CPU from ``wait4``."""
    cell = n if isinstance(n, str) else f"{n}:{d}:{bins}"
    cmd = [sys.executable, __file__, "--child", cell, "--eps", str(eps),
           "--delta", str(delta), "--seed", str(seed), "--core", str(core)]  # fmt: skip
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryFile("w+") as log:
        path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        env = dict(os.environ, PGM_DP_CACHE_DIR=cache, PYTHONPATH=path)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        _, status, ru = os.wait4(proc.pid, 0)
        log.seek(0)
        text = log.read()
    row = {"records": n, "columns": d, "bins": bins, "path": "pure" if delta == 0 else "zcdp",
           "cpu_s": ru.ru_utime + ru.ru_stime}  # fmt: skip
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if os.waitstatus_to_exitcode(status) != 0 or not lines:
        row["error"] = (text.strip().splitlines() or ["no output"])[-1][:200]
        return row
    return {**row, **json.loads(lines[-1])}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", default=None, help="N:d:bins (default: the grid)")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, nargs="+", default=[0.0, 1e-9],
                    help="0: pure epsilon; > 0: the (epsilon, delta) path")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--core", type=int, default=0,
                    help="the CPU each fit is pinned to (-1: not pinned)")  # fmt: skip
    ap.add_argument("--real", nargs="+", default=None,
                    help="fit these tables of bench_realdata.py instead (adult, nass)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="one small cell")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        if not a.child[0].isdigit():
            return child(0, 0, 0, a.eps, a.delta[0], a.seed, a.core, real=a.child)
        n, d, bins = map(int, a.child.split(":"))
        return child(n, d, bins, a.eps, a.delta[0], a.seed, a.core)
    if a.real:
        return real_rows(a)
    cells = [tuple(map(int, c.split(":"))) for c in a.cells] if a.cells else GRID
    if a.quick:
        cells = [GRID[0]]
    print(f"epsilon = {a.eps:g}; target: CPU s <= {TARGET_CPU_S:g}, longest compile <= "
          f"{TARGET_COMPILE_S:g} s")  # fmt: skip
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for n, d, bins in cells:
        for delta in a.delta:
            r = run_cell(n, d, bins, a.eps, delta, a.seed, a.core)
            if "error" in r:
                print(f"| {n:,} | {d} | {bins} | {r['path']} | {r['cpu_s']:.1f} | failed: "
                      f"{r['error']!r} |")  # fmt: skip
                continue
            print(f"| {n:,} | {d} | {bins} | {r['path']} | {r['cpu_s']:.1f} | "
                  f"{r['fit_cpu_s']:.1f} | {r['longest_compile_s']:.2f} | {r['compiles']} | "
                  f"{r['rounds']} | {r['selected']} | {r['largest_clique']} | "
                  f"{r['model_cells']:,} | {r['refine_steps']} |",
                  flush=True)  # fmt: skip


def real_rows(a) -> None:
    """``--real``: each table at ``--eps`` and each ``--delta``, CPU s and ``tvd2``."""
    print("| data | ε | path | CPU s (process) | CPU s (fit_table) | rounds | model cells | "
          "refine steps | 2-way TVD |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.real:
        for delta in a.delta:
            r = run_cell(name, 0, 0, a.eps, delta, a.seed, a.core)
            if "error" in r:
                print(f"| {name} | {a.eps:g} | {r['path']} | failed: {r['error']!r} |")
                continue
            print(f"| {name} | {a.eps:g} | {r['path']} | {r['cpu_s']:.1f} | "
                  f"{r['fit_cpu_s']:.1f} | {r['rounds']} | {r['model_cells']:,} | "
                  f"{r['refine_steps']} | {r['tvd2']:.5f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
