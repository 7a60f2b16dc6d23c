"""Benchmark: first and second fit of CGM-EM, naive MLE and mbi on a 13-edge Adult tree.

The structure is fixed: the maximum spanning tree of the pairwise mutual information of all
14 UCI Adult attributes (:data:`ADULT_TREE`, computed once on the full table; 13 edge
cliques, 29,016 cells, the largest 8,500). At each ``epsilon`` the same pure-DP Laplace
release of its tables (seeded) is fitted by each learner **in its own process**, twice:
the first fit includes compilation (a fresh process with an empty compilation cache,
unless ``--warm-cache``), the second is the time per fit once compiled. mbi 2.0's mirror
descent runs ``--mbi-iters`` iterations (default 1,000); its first fit is its compile
warm-up plus the run, its second the run alone (``pgm_dp.learners.mbi.fit_mbi``). Prints
one row per (learner, epsilon) and the ratios to mbi; ``second_cpu_s`` is the second
fit's CPU time of the process (on a shared machine wall time includes waiting for a core;
mbi's includes its 50-step warm-up run). The JSON rows also give the second fit's L-BFGS
iterations, CGM-EM's E-step passes and ``tvd2``: the mean total variation distance to the
data over all 91 pairs of attributes.

Learners: ``cgm`` (CGM-EM's default), ``cgm-direct`` (``CGMEM(solver="direct")``: no
E-steps), ``naive``, ``mbi``.

Run: ``python benchmarks/bench_speed.py [--eps 0.3 1 3] [--learners cgm naive mbi]
[--mbi-iters 1000] [--warm-cache]``; ``--table FILE`` prints the table of a saved run's
output. Needs the ``bench`` extra (mbi).

Device: the same script runs on a GPU when ``jax[cuda]`` is installed. Every child runs on
the CPU (``JAX_PLATFORMS=cpu``) and, when JAX finds an accelerator, once more on it, with
one table per device (``--devices default`` runs only on JAX's own pick); each JSON row
names the device its child ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import _repo  # noqa: F401  (the repository root on sys.path when run from a clone)

#: The fixed 13-edge tree over Adult's 14 attributes (see the module docstring).
ADULT_TREE = (
    ("age", "fnlwgt"),
    ("age", "marital-status"),
    ("age", "capital-loss"),
    ("age", "hours-per-week"),
    ("workclass", "occupation"),
    ("education-num", "occupation"),
    ("education-num", "native-country"),
    ("marital-status", "relationship"),
    ("occupation", "hours-per-week"),
    ("relationship", "sex"),
    ("relationship", "income>50K"),
    ("race", "native-country"),
    ("capital-gain", "income>50K"),
)


def _release(eps: float):
    """The tree model and its seeded Laplace release at ``eps``."""
    from pgm_dp import MarkovRandomField
    from pgm_dp.datasets import load_adult
    from pgm_dp.privacy import PureDP, release_marginals
    from pgm_dp.rng import derived_generator

    data, domain = load_adult()
    mrf = MarkovRandomField(domain, cliques=list(ADULT_TREE))
    gen = derived_generator(0, "bench_speed", eps)
    release = release_marginals(data, mrf, budget=PureDP(eps), rng=gen, total="public")
    return mrf, release


def child(learner: str, eps: float, mbi_iters: int) -> dict:
    """One learner's two fits in this process: seconds and what the fit reports."""
    import jax

    mrf, release = _release(eps)
    row = {"learner": learner, "eps": eps, "device": str(jax.devices()[0])}
    if learner == "mbi":
        from pgm_dp.learners.mbi import fit_mbi

        first = fit_mbi(release, mrf, [mbi_iters])[-1]
        cpu = time.process_time()
        second = fit_mbi(release, mrf, [mbi_iters])[-1]
        row.update(first_s=first.compile_seconds + first.seconds, second_s=second.seconds)
        row["second_cpu_s"] = time.process_time() - cpu  # with mbi's 50-step warm-up
        row["tvd2"] = mean_tvd2(second.model)
        return row
    import functools

    from pgm_dp.learners import CGMEM, NaiveMLE

    direct = functools.partial(CGMEM, solver="direct")
    make = {"cgm": CGMEM, "cgm-direct": direct, "naive": NaiveMLE}[learner]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is reported below
        start, cpu = time.perf_counter(), time.process_time()
        make().fit(release, mrf)
        row["first_s"] = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        fit = make().fit(release, mrf)
        row["second_s"] = time.perf_counter() - start
        row["second_cpu_s"] = time.process_time() - cpu
    row.update(iterations=fit.info["iterations"], converged=bool(fit.info["converged"]))
    if "nlbp_iterations" in fit.info:  # CGM-EM's E-step passes (NLBP steps or Newton's)
        row["passes"] = int(fit.info["nlbp_iterations"])
    row["tvd2"] = mean_tvd2(fit.model)
    return row


def platforms(choice: str) -> list[str | None]:
    """The JAX platforms to run on: the CPU and any accelerator (``"all"``), or ``[None]``
    (``"default"``: JAX's own pick)."""
    if choice == "default":
        return [None]
    import jax

    accelerator = jax.default_backend()
    return ["cpu"] + ([accelerator] if accelerator != "cpu" else [])


def mean_tvd2(model) -> float:
    """The mean total variation distance between ``model``'s and the Adult data's
    marginals over all 91 pairs of attributes (as ``bench_estimators.py``)."""
    import itertools

    from bench_estimators import data_tables, mean_tvd

    from pgm_dp.datasets import load_adult

    data, domain = load_adult()
    pairs = itertools.combinations(domain.attributes, 2)
    return mean_tvd(model, data_tables(domain.encode(data), domain, list(pairs)))


def _run_child(learner: str, eps: float, args, platform: str | None = None) -> dict:
    env = dict(os.environ)
    if platform is not None:
        env["JAX_PLATFORMS"] = platform
    with tempfile.TemporaryDirectory() as cache:
        if not args.warm_cache:
            env["PGM_DP_CACHE_DIR"] = cache
        cmd = [sys.executable, __file__, "--child", learner, "--eps", str(eps)]
        cmd += ["--mbi-iters", str(args.mbi_iters)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{learner} at eps {eps} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument("--learners", nargs="+", default=["cgm", "naive", "mbi"])
    parser.add_argument("--mbi-iters", type=int, default=1000)
    parser.add_argument("--warm-cache", action="store_true")
    parser.add_argument("--devices", choices=["all", "default"], default="all",
                        help="the CPU and any accelerator, or JAX's own pick")  # fmt: skip
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--table", help="print the table of a saved run's JSON lines")
    args = parser.parse_args()
    if args.table:  # the JSON rows a run printed, one per line
        with open(args.table) as lines:
            saved = [json.loads(x) for x in lines if x.startswith("{")]
        print(table({(r["learner"], r["eps"]): r for r in saved}, args.mbi_iters))
        return
    if args.child:
        print(json.dumps(child(args.child, args.eps[0], args.mbi_iters)))
        return
    tables = []
    for platform in platforms(args.devices):
        rows = {}
        for eps in args.eps:
            for learner in args.learners:
                rows[learner, eps] = _run_child(learner, eps, args, platform)
                print(json.dumps(rows[learner, eps]), flush=True)
        tables.append(f"device: {platform or 'default'}\n\n" + table(rows, args.mbi_iters))
    print("\n\n".join(tables))


def table(rows: dict, mbi_iters: int) -> str:
    """The Markdown table of ``rows`` (``(learner, eps) -> row``) with the ratios to mbi's
    fits at the same ``eps``: first fit, second fit (wall) and second fit (CPU)."""
    lines = [
        f"| learner | eps | first fit s | second fit s | second fit CPU s | first / mbi | "
        f"second / mbi{mbi_iters} | second CPU / mbi{mbi_iters} CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (learner, eps), row in rows.items():
        mbi = rows.get(("mbi", eps))
        keys = ("first_s", "second_s", "second_cpu_s")
        ratios = [f"{row[k] / mbi[k]:.2f}" if mbi else "-" for k in keys]
        cells = [f"{row[k]:.2f}" for k in keys]
        lines.append(f"| {learner} | {eps:g} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
