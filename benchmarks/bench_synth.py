"""Synthetic records: ``pgm-dp sample``'s CPU time and peak memory against ``-n``, and how
close the records' 2-way marginals are to the model's.

``python benchmarks/bench_synth.py --out benchmarks/results/synth`` fits UCI Adult as shipped
at ε = 1 (``pgm-dp fit --data adult.csv.gz --domain adult-domain.json --epsilon 1 --seed
0``, or ``--model FIT.npz``), then:

* runs ``pgm-dp sample FIT.npz -n N --out synth.csv|.parquet --seed 0`` for each ``--n`` in
  a fresh process: its CPU time (user + system, ``os.wait4``), peak resident memory, wall
  time, and the CPU time the command itself reports (loading the fit, calibrating it,
  drawing and writing: the whole run less Python's start-up and imports);
* draws ``N`` records (``pgm_dp.table.synth``'s sampler) for each ``--tvd-n`` and scores the mean
  2-way total variation distance over all 91 pairs, against the data (``tvd2_data``) and
  against the model's own marginals (``tvd2_model``), beside the model's own distance to
  the data. Writes ``OUT/sampling.csv``, ``OUT/tvd.csv`` and prints both.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from bench_realdata import run_child  # noqa: E402

DATA = HERE.parent / "pgm_dp" / "data"


def fit(path: Path, work: Path) -> Path:
    cmd = [sys.executable, "-m", "pgm_dp.cli", "fit", "--data", str(DATA / "adult.csv.gz"),
           "--domain", str(DATA / "adult-domain.json"), "--epsilon", "1", "--seed", "0",
           "--out", str(path)]  # fmt: skip
    row = run_child(cmd, work / "fit.log", 3600)
    if row["status"] != "ok":
        raise SystemExit(f"the fit failed: {(work / 'fit.log').read_text()[-500:]}")
    return path


def time_sampling(model: Path, n: int, suffix: str, work: Path) -> dict:
    out = work / f"synth_{n}{suffix}"
    cmd = [sys.executable, "-m", "pgm_dp.cli", "sample", str(model), "-n", str(n),
           "--out", str(out), "--seed", "0"]  # fmt: skip
    log = work / f"sample_{n}{suffix}.log"
    row = run_child(cmd, log, 3600)
    own = re.search(r"([\d.]+) s CPU", log.read_text())
    size = out.stat().st_size / 2**20 if out.exists() else float("nan")
    out.unlink(missing_ok=True)
    return {"n": n, "format": suffix[1:], **row, "sample_cpu_s": float(own[1]) if own else "",
            "file_mb": size}  # fmt: skip


def tvd_rows(model: Path, sizes: list[int]) -> list[dict]:
    import pandas as pd

    from pgm_dp.io import load_fit
    from pgm_dp.table.synth import Synthesizer

    mrf = load_fit(model).model
    data = pd.read_csv(DATA / "adult.csv.gz")[list(mrf.domain.attributes)].to_numpy()
    names = list(mrf.domain.attributes)
    pairs = list(itertools.combinations(range(len(names)), 2))
    exact = mrf.marginals([tuple(names[i] for i in p) for p in pairs])

    def table(codes, p):
        shape = mrf.domain.sizes([names[i] for i in p])
        flat = np.ravel_multi_index((codes[:, p[0]], codes[:, p[1]]), shape)
        return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape) / len(codes)

    model_t = [np.asarray(exact[tuple(names[i] for i in p)]) for p in pairs]
    data_t = [table(data, p) for p in pairs]
    rows = [{"records": "model", "tvd2_data": _mean_tvd(model_t, data_t), "tvd2_model": 0.0}]
    synth = Synthesizer(model)
    for n in sizes:
        codes, _ = synth.codes(synth.entropy(0), 0, n)
        rec = [table(codes, p) for p in pairs]
        rows.append({"records": n, "tvd2_data": _mean_tvd(rec, data_t),
                     "tvd2_model": _mean_tvd(rec, model_t)})  # fmt: skip
    base = rows[0]["tvd2_data"]
    for r in rows:
        r["ratio_to_model"] = r["tvd2_data"] / base
    return rows


def _mean_tvd(a, b) -> float:
    return float(np.mean([0.5 * np.abs(x - y).sum() for x, y in zip(a, b, strict=True)]))


def write(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="a fit (default: fit Adult)")
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000, 4_000_000])
    ap.add_argument("--parquet-n", type=int, nargs="*", default=[1_000_000])
    ap.add_argument("--tvd-n", type=int, nargs="+", default=[48_842, 1_000_000])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/synth"))
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = a.model or fit(work / "adult.npz", work)
        runs = [time_sampling(model, n, ".csv", work) for n in a.n]
        runs += [time_sampling(model, n, ".parquet", work) for n in a.parquet_n]
        write(a.out / "sampling.csv", runs)
        tvd = tvd_rows(model, a.tvd_n)
        write(a.out / "tvd.csv", tvd)
    for r in runs:
        print(f"n={r['n']:>9,} {r['format']:<8} CPU {r['cpu_s']:6.1f} s (after the imports "
              f"{r['sample_cpu_s']} s), peak {r['maxrss_mb']:5.0f} MB, "
              f"wall {r['wall_s']:5.1f} s, {r['file_mb']:.0f} MB")  # fmt: skip
    for r in tvd:
        print(
            f"{r['records']!s:>9}: 2-way TVD to the data {r['tvd2_data']:.4f} "
            f"({r['ratio_to_model']:.3f}x the model's), to the model {r['tvd2_model']:.4f}"
        )


if __name__ == "__main__":
    main()
