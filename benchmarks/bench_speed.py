"""Benchmark: first and second fit of CGM-EM, naive MLE and mbi on Adult's releases.

``--release tree`` (default): the structure is fixed: the maximum spanning tree of the
pairwise mutual information of all 14 UCI Adult attributes (:data:`ADULT_TREE`, computed
once on the full table; 13 edge cliques, 29,016 cells, the largest 8,500). At each
``epsilon`` the same pure-DP Laplace release of its tables (seeded) is fitted.
``--release aim``: what ``pgm-dp fit --data``'s ``fit_table`` released at pure ``epsilon``
(seed 0, its defaults: the one-way tables and AIM's measurements, on its prepared domain),
built once per ``epsilon`` before any fit; the model's cliques are the tables measured.
Each release is fitted by each learner **in its own process**, twice: the first fit
includes compilation (a fresh process with an empty compilation cache, unless
``--warm-cache``), the second is the time per fit once compiled. mbi 2.0's mirror
descent runs ``--mbi-iters`` iterations (default 1,000); its first fit is its compile
warm-up plus the run, its second the run alone (``pgm_dp.learners.mbi.fit_mbi``). Prints
one row per (learner, epsilon) and the ratios to mbi; ``first_cpu_s`` and
``second_cpu_s`` are the fits' CPU time of the process (on a shared machine wall time
includes waiting for a core; mbi's second includes its 50-step warm-up run). The JSON rows
also give the second fit's L-BFGS iterations, CGM-EM's E-step passes and ``tvd2``: the mean
total variation distance to the data over all 91 pairs of attributes.

Learners: ``cgm`` (CGM-EM's default), ``cgm-direct`` (``CGMEM(solver="direct")``: no
E-steps), ``naive``, ``mbi``.

Run: ``python benchmarks/bench_speed.py [--release tree|aim] [--eps 0.3 1 3] [--learners
cgm naive mbi] [--mbi-iters 1000] [--warm-cache]``; ``--table FILE`` prints the table of a
saved run's output. Needs the ``bench`` extra (mbi).

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


def _release(eps: float, folder: str | None = None):
    """The model, its seeded release at ``eps`` and the data's codes on the model's domain:
    the fixed tree's tables, a pure-DP Laplace release; or, with ``folder``, the release
    :func:`save_aim_release` wrote there, the model's cliques those it measured."""
    from pgm_dp import MarkovRandomField
    from pgm_dp.datasets import load_adult
    from pgm_dp.privacy import PureDP, release_marginals
    from pgm_dp.rng import derived_generator

    if folder is not None:
        import numpy as np

        from pgm_dp.io import load

        release = load(os.path.join(folder, "release.json"))
        mrf = MarkovRandomField(release.domain, cliques=list(release.cliques))
        return mrf, release, np.load(os.path.join(folder, "codes.npy"))
    data, domain = load_adult()
    mrf = MarkovRandomField(domain, cliques=list(ADULT_TREE))
    gen = derived_generator(0, "bench_speed", eps)
    release = release_marginals(data, mrf, budget=PureDP(eps), rng=gen, total="public")
    return mrf, release, domain.encode(data)


def save_aim_release(eps: float, folder: str) -> None:
    """What ``fit_table`` (pure ``eps``, seed 0, its defaults: AIM after the one-way tables)
    released on Adult, merged (one table per clique), and the data's codes on its prepared
    domain, written to ``folder``."""
    import numpy as np

    from pgm_dp.datasets import load_adult
    from pgm_dp.io import save
    from pgm_dp.privacy import PureDP
    from pgm_dp.table.fit import fit_table

    data, domain = load_adult()
    spec = {a: {"categories": list(range(domain.size((a,)))), "missing": False}
            for a in domain.attributes}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = fit_table(data, spec, budget=PureDP(eps), rng=0)
    save(made.release.merged(), os.path.join(folder, "release.json"))
    np.save(os.path.join(folder, "codes.npy"), made.plan.encode(data).array)


def child(learner: str, eps: float, mbi_iters: int, folder: str | None = None) -> dict:
    """One learner's two fits in this process: seconds and what the fit reports."""
    import jax

    mrf, release, codes = _release(eps, folder)
    source = "tree" if folder is None else "aim"
    row = {"learner": learner, "eps": eps, "release": source, "device": str(jax.devices()[0])}
    if learner == "mbi":
        from pgm_dp.learners.mbi import fit_mbi

        cpu = time.process_time()
        first = fit_mbi(release, mrf, [mbi_iters])[-1]
        row["first_cpu_s"] = time.process_time() - cpu
        cpu = time.process_time()
        second = fit_mbi(release, mrf, [mbi_iters])[-1]
        row.update(first_s=first.compile_seconds + first.seconds, second_s=second.seconds)
        row["second_cpu_s"] = time.process_time() - cpu  # with mbi's 50-step warm-up
        row["tvd2"] = mean_tvd2(second.model, codes)
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
        row["first_cpu_s"] = time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        fit = make().fit(release, mrf)
        row["second_s"] = time.perf_counter() - start
        row["second_cpu_s"] = time.process_time() - cpu
    row.update(iterations=fit.info["iterations"], converged=bool(fit.info["converged"]))
    if "nlbp_iterations" in fit.info:  # CGM-EM's E-step passes (NLBP steps or Newton's)
        row["passes"] = int(fit.info["nlbp_iterations"])
    row["tvd2"] = mean_tvd2(fit.model, codes)
    return row


def platforms(choice: str) -> list[str | None]:
    """The JAX platforms to run on: the CPU and any accelerator (``"all"``), or ``[None]``
    (``"default"``: JAX's own pick)."""
    if choice == "default":
        return [None]
    import jax

    accelerator = jax.default_backend()
    return ["cpu"] + ([accelerator] if accelerator != "cpu" else [])


def mean_tvd2(model, codes) -> float:
    """The mean total variation distance between ``model``'s and the Adult data's
    marginals (``codes`` on the model's domain) over all 91 pairs of attributes (as
    ``bench_estimators.py``)."""
    import itertools

    from bench_estimators import data_tables, mean_tvd

    domain = model.domain
    pairs = itertools.combinations(domain.attributes, 2)
    return mean_tvd(model, data_tables(codes, domain, list(pairs)))


def _run_child(learner: str, eps: float, args, platform=None, folder=None) -> dict:
    env = dict(os.environ)
    if platform is not None:
        env["JAX_PLATFORMS"] = platform
    with tempfile.TemporaryDirectory() as cache:
        if not args.warm_cache:
            env["PGM_DP_CACHE_DIR"] = cache
        cmd = [sys.executable, __file__, "--child", learner, "--eps", str(eps)]
        cmd += ["--mbi-iters", str(args.mbi_iters)]
        cmd += [] if folder is None else ["--release-dir", folder]
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
    parser.add_argument("--release", choices=["tree", "aim"], default="tree",
                        help="the fixed tree's Laplace release or fit_table's (AIM's)")  # fmt: skip
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--release-dir", help=argparse.SUPPRESS)
    parser.add_argument("--table", help="print the table of a saved run's JSON lines")
    args = parser.parse_args()
    if args.table:  # the JSON rows a run printed, one per line
        with open(args.table) as lines:
            saved = [json.loads(x) for x in lines if x.startswith("{")]
        print(table({(r["learner"], r["eps"]): r for r in saved}, args.mbi_iters))
        return
    if args.child:
        print(json.dumps(child(args.child, args.eps[0], args.mbi_iters, args.release_dir)))
        return
    with tempfile.TemporaryDirectory() as releases:
        folders = {eps: None for eps in args.eps}
        if args.release == "aim":  # built once per eps, before any child
            for eps in args.eps:
                folders[eps] = os.path.join(releases, f"eps{eps:g}")
                os.makedirs(folders[eps])
                save_aim_release(eps, folders[eps])
        tables = []
        for platform in platforms(args.devices):
            rows = {}
            for eps in args.eps:
                for learner in args.learners:
                    row = _run_child(learner, eps, args, platform, folders[eps])
                    rows[learner, eps] = row
                    print(json.dumps(row), flush=True)
            tables.append(f"device: {platform or 'default'}\n\n" + table(rows, args.mbi_iters))
    print("\n\n".join(tables))


def table(rows: dict, mbi_iters: int) -> str:
    """The Markdown table of ``rows`` (``(learner, eps) -> row``) with the ratios to mbi's
    fits at the same ``eps``: first and second fit, wall and CPU seconds; the
    second fit's iterations (mbi's: ``mbi_iters``) and 2-way TVD."""
    lines = [
        "| learner | eps | first fit s | second fit s | first fit CPU s | second fit CPU s | "
        f"first / mbi | second / mbi{mbi_iters} | first CPU / mbi | "
        f"second CPU / mbi{mbi_iters} CPU | iterations | 2-way TVD |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (learner, eps), row in rows.items():
        mbi = rows.get(("mbi", eps))
        keys = ("first_s", "second_s", "first_cpu_s", "second_cpu_s")
        ratios = [f"{row[k] / mbi[k]:.2f}" if mbi else "-" for k in keys]
        cells = [f"{row[k]:.2f}" for k in keys]
        its = f"{row.get('iterations', mbi_iters):,}" + ("" if row.get("converged", True) else "*")
        rest = f"{its} | {row['tvd2']:.5f}"
        lines.append(
            f"| {learner} | {eps:g} | {' | '.join(cells)} | {' | '.join(ratios)} | {rest} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
