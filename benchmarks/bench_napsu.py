"""Benchmark: pgm_dp's noise-aware posterior vs NAPSU-MQ (twinify) on the same Gaussian releases.

The releases are those of the bayes calibration reproduction (same seeds): a chain of 4 binary
variables whose log-potentials are drawn from the prior, ``N`` records, a Gaussian release of
the 3 edge tables at ``ZCDP(eps^2 / 2)``. Each is saved to ``OUT/releases/*.npz`` and fitted,
one after the other (so a slow spell of the shared machine hits all contenders alike), by

* ``pgm_dp nuts``: :func:`pgm_dp.bayes.posterior`, NUTS whitened by its Laplace fit;
* ``pgm_dp laplace``: the same posterior, Laplace method (draws from ``N(MAP, H^-1)``);
* ``napsu-mq``: twinify's NAPSU-MQ inference (its Laplace approximation, then NUTS in the
  coordinates it whitens) on the release's cells that its canonical queries keep, run by
  ``napsu_driver.py`` in twinify's own virtual environment (its pins, pandas < 2 and
  numpy < 2, clash with ours), given by ``--napsu-python`` or ``$NAPSU_PYTHON``.

Both NUTS runs use the same chains, warm-up and draws. Reported per (epsilon, method): the
coverage of the central 80/90/95% intervals of the 12 edge-marginal cells (mean over
releases), the median wall time per release (compilation included, as each tool runs) and
the median of (min bulk ESS over the 12 cells) / wall time (ArviZ ESS, on the draws of the
marginals for both tools), and the median over releases of each method's time over the time
of ``pgm_dp nuts`` on the same release. Rows go to ``OUT/napsu_runs.csv`` as they finish.

Run: ``python benchmarks/bench_napsu.py --napsu-python PATH [--eps 0.1 0.5] [--releases 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: reproductions)
import arviz_stats
import numpy as np
import pandas as pd
from arviz_base import from_dict
from xarray import DataTree

from pgm_dp.bayes import posterior, site_name
from pgm_dp.privacy import release_marginals
from pgm_dp.rng import derived_generator
from reproductions.bayes.experiments import LEVELS, _coverage, budget_for, small_chain

_DRIVER = Path(__file__).with_name("napsu_driver.py")


def make_release(eps: float, rep: int, N: int, seed: int):
    """The calibration runner's truth and Gaussian release for ``(eps, rep)``."""
    truth = small_chain(4, 2, derived_generator(seed, "truth", "gaussian", eps, rep))
    data = truth.sample(N, derived_generator(seed, "data", "gaussian", eps, rep))
    budget = budget_for("gaussian", eps)
    rel = release_marginals(
        data, truth, budget=budget, mechanism="gaussian", rng=rep + 7919 * seed, total="public"
    )
    return truth, rel


def save_release(path: Path, truth, rel) -> None:
    scales = {rel.noise[c].scale for c in truth.cliques}
    if len(scales) != 1:
        raise ValueError("NAPSU-MQ takes one noise sd for all cells")
    y = np.concatenate([np.ravel(rel.noisy[c]) for c in truth.cliques])
    true = np.concatenate([np.ravel(truth.marginal(c)) for c in truth.cliques])
    np.savez(path, y=y, sigma=scales.pop(), total=rel.total, truth=true)


def _as_idata(draws: np.ndarray, truth) -> DataTree:
    """NAPSU-MQ's draws ``(chains, draws, cells)`` as the ``marginal:...`` sites."""
    out, start = {}, 0
    for c in truth.cliques:
        shape = truth.domain.sizes(c)
        size = int(np.prod(shape))
        out[site_name(c)] = draws[..., start : start + size].reshape(*draws.shape[:2], *shape)
        start += size
    return from_dict({"posterior": out})


def _row(method: str, eps: float, rep: int, idata, truth, seconds: float, nuts: bool) -> dict:
    cover, _ = _coverage(idata, truth)
    row = {"method": method, "epsilon": eps, "release": rep, "seconds": seconds}
    row.update({f"cov{round(100 * lv)}": cover[lv] for lv in LEVELS})
    if nuts:
        names = [site_name(c) for c in truth.cliques]
        ess = arviz_stats.ess(idata, var_names=names)
        row["min_ess"] = float(min(float(ess[n].min()) for n in names))
        row["ess_per_s"] = row["min_ess"] / seconds
    return row


class Napsu:
    """The long-lived NAPSU-MQ driver process (one JSON line per job)."""

    def __init__(self, python: str, truth, args, log: Path) -> None:
        head = {
            "variables": [str(v) for v in truth.domain.attributes],
            "levels": [int(k) for k in truth.domain.shape],
            "cliques": [list(c) for c in truth.cliques],
            "num_warmup": args.warmup,
            "num_samples": args.samples,
            "num_chains": args.chains,
        }
        self.log = open(log, "w")  # noqa: SIM115 (kept open for the driver's lifetime)
        cmd = [python, str(_DRIVER)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        self._send(head)

    def _send(self, msg: dict) -> dict:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the NAPSU-MQ driver stopped; see {self.log.name}")
        return json.loads(line)

    def fit(self, release: Path, output: Path, seed: int) -> tuple[np.ndarray | None, float]:
        """Draws and seconds; ``(None, nan)`` when NAPSU-MQ's Laplace step failed."""
        reply = self._send({"input": str(release), "output": str(output), "seed": seed})
        if "error" in reply:
            print(f"NAPSU-MQ failed on {release.name}: {reply['error']}", file=sys.stderr)
            return None, float("nan")
        return np.load(output)["draws"], float(reply["seconds"])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()


def run_one(eps: float, rep: int, args, napsu: Napsu | None, out: Path) -> list[dict]:
    """Fit one release with every contender; the rows of the results table."""
    truth, rel = make_release(eps, rep, args.N, args.seed)
    path = out / "releases" / f"gaussian_eps{eps:g}_rep{rep}.npz"
    save_release(path, truth, rel)
    rows = []
    kw = {"num_warmup": args.warmup, "num_samples": args.samples, "num_chains": args.chains}
    for method in ("nuts", "laplace"):
        start = time.perf_counter()
        idata = posterior(rel, truth, method=method, rng=rep, **kw)
        seconds = time.perf_counter() - start
        rows.append(_row(f"pgm_dp {method}", eps, rep, idata, truth, seconds, method == "nuts"))
    if napsu is not None:
        draws, seconds = napsu.fit(path, path.with_suffix(".napsu.npz"), seed=rep)
        if draws is None:
            rows.append({"method": "napsu-mq", "epsilon": eps, "release": rep, "failed": True})
        else:
            idata = _as_idata(draws, truth)
            rows.append(_row("napsu-mq", eps, rep, idata, truth, seconds, True))
    return rows


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean coverage (%), median seconds and median ESS/s per (epsilon, method), over the
    fits that did not fail (a release fitted twice counts once: the first)."""
    runs = runs.drop_duplicates(["method", "epsilon", "release"])
    runs = runs.assign(failed=runs.get("failed", False)).fillna({"failed": False})
    failed = runs.groupby(["epsilon", "method"])["failed"].sum()
    runs = runs[~runs.failed.astype(bool)]
    agg = {f"cov{round(100 * lv)}": "mean" for lv in LEVELS}
    agg.update({"seconds": "median", "min_ess": "median", "ess_per_s": "median"})
    agg["release"] = "count"
    table = runs.groupby(["epsilon", "method"]).agg(agg).reset_index()
    for lv in LEVELS:
        table[f"cov{round(100 * lv)}"] *= 100
    per = runs.pivot_table(index=["epsilon", "release"], columns="method", values="seconds")
    ratio = per.div(per["pgm_dp nuts"], axis=0).groupby("epsilon").median()
    pairs = list(zip(table.epsilon, table.method, strict=True))
    table["time / pgm_dp nuts"] = [ratio.loc[e, m] for e, m in pairs]
    table["failed"] = [int(failed.get(pair, 0)) for pair in pairs]
    return table.rename(columns={"release": "releases"})


def markdown(table: pd.DataFrame) -> str:
    """``table`` as a Markdown table (3 significant digits)."""
    cols = list(table.columns)
    fmt = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in table.to_numpy().ravel()]
    rows = [fmt[i : i + len(cols)] for i in range(0, len(fmt), len(cols))]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--napsu-python", default=os.environ.get("NAPSU_PYTHON"))
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.5])
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--start", type=int, default=0, help="first release index")
    parser.add_argument("--N", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="pgm_dp_results/napsu")
    parser.add_argument("--summarize", nargs="+", help="only print the table of runs CSVs")
    a = parser.parse_args()
    if a.summarize:
        print(markdown(summarize(pd.concat([pd.read_csv(f) for f in a.summarize]))))
        return
    out = Path(a.out)
    (out / "releases").mkdir(parents=True, exist_ok=True)
    if not a.napsu_python:
        print("no --napsu-python / $NAPSU_PYTHON: pgm_dp only", file=sys.stderr)
    truth, _ = make_release(a.eps[0], 0, a.N, a.seed)
    napsu = Napsu(a.napsu_python, truth, a, out / "napsu_driver.log") if a.napsu_python else None
    rows = []
    try:
        for rep in range(a.start, a.start + a.releases):  # releases outermost
            for eps in a.eps:
                rows += run_one(eps, rep, a, napsu, out)
                pd.DataFrame(rows).to_csv(out / "napsu_runs.csv", index=False)
                print(f"release {rep} eps {eps:g} done", flush=True)
    finally:
        if napsu is not None:
            napsu.close()
    table = summarize(pd.DataFrame(rows))
    print(markdown(table))


if __name__ == "__main__":
    main()
