"""Compare learners on one privacy budget (Bernstein et al. 2017, Sec. 4.1 / Fig. 2).

For each population (a data set of ``N`` records sampled from the true model) and each
``epsilon``, the clique tables are released once per replication with the Laplace mechanism
(``PureDP(epsilon)``, scale ``|C| / epsilon``), and Naive MLE and CGM-EM are fitted to the
same release; PSGD gets ``ApproxDP(epsilon, 1/N)`` on the records themselves (as the paper,
which sets ``delta = 1/N``). The random and non-private references are fitted once per
population. The score is ``KL(true || learned)``, exact, through the junction tree.

>>> result = run_compare(T=4, k=2, N=500, epsilons=(1.0,), learners=("naive", "nonprivate"),
...                      progress=False, out_dir=None)
>>> sorted(result.summary.columns)
['naive', 'nonprivate']
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from ..learners.baselines import NonPrivateMLE, RandomMarginals
from ..learners.cgm import CGMEM
from ..learners.naive_mle import NaiveMLE
from ..learners.psgd import PSGD
from ..metrics import kl_divergence
from ..models import erdos_renyi, third_order_chain
from ..privacy import ApproxDP, PureDP, release_marginals
from ..rng import derived_generator
from .mbi_baseline import MBI_COLUMNS, MBI_ITERS, fit_mbi
from .plotting import LABELS, median_errorbar

__all__ = ["LEARNERS", "CompareResult", "run_compare", "add_parser", "plot_compare"]

LEARNERS = ("random", "nonprivate", "naive", "cgm", "psgd")
#: Optional: mbi (Private-PGM) mirror descent, needs the ``bench`` extra; one row per count.
OPTIONAL = ("mbi",)
COLUMNS = LEARNERS + MBI_COLUMNS


@dataclass(frozen=True)
class CompareResult:
    """``runs``: one row per fit (graph, N, epsilon, population, replication, learner, kl,
    seconds); ``summary``: median KL per epsilon (rows) and learner (columns); ``plot``: the
    PNG written, if any."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    plot: Path | None


def _truth(graph: str, T: int, k: int, rng):
    if graph == "chain":
        return third_order_chain(T, k, rng)
    if graph == "er":
        return erdos_renyi(T, k, rng=rng)
    raise ValueError(f"graph must be 'chain' or 'er', got {graph!r}")


def run_compare(
    graph: str = "chain",
    T: int = 10,
    k: int = 10,
    N: int = 100_000,
    epsilons: Sequence[float] = (0.1, 1.0),
    populations: int = 1,
    replications: int = 1,
    learners: Sequence[str] = LEARNERS,
    seed: int = 0,
    progress: bool = True,
    out_dir: str | Path | None = "pgm_dp_results",
) -> CompareResult:
    """Run the comparison; see the module docstring. Writes ``compare_<graph>.csv`` and
    ``.png`` to ``out_dir`` unless it is ``None``."""
    unknown = set(learners) - set(LEARNERS + OPTIONAL)
    if unknown:
        raise ValueError(f"unknown learners {sorted(unknown)}; choose from {LEARNERS + OPTIONAL}")
    truth = _truth(graph, T, k, derived_generator(seed, "truth"))
    rows = []
    per_pop = [lr for lr in learners if lr in ("random", "nonprivate")]
    per_eps = [lr for lr in learners if lr not in per_pop]
    total = populations * (len(per_pop) + len(epsilons) * replications * len(per_eps))
    bar = tqdm(total=total, desc=f"compare ({graph})", disable=not progress)

    def record(pop, eps, rep, name, model, seconds):
        rows.append(
            {
                "graph": graph,
                "N": N,
                "epsilon": eps,
                "population": pop,
                "replication": rep,
                "learner": name,
                "kl": kl_divergence(truth, model),
                "seconds": seconds,
            }
        )

    for pop in range(populations):
        data = truth.sample(N, derived_generator(seed, "population", N, pop))
        for name in per_pop:
            start = time.perf_counter()
            if name == "random":
                fit = RandomMarginals().fit(truth, derived_generator(seed, "random", N, pop))
            else:
                fit = NonPrivateMLE().fit(data, truth)
            seconds = time.perf_counter() - start
            for eps in epsilons:  # references do not depend on epsilon: one row per epsilon
                record(pop, eps, 0, name, fit.model, seconds)
            bar.update(1)
        for e, eps in enumerate(epsilons):
            for rep in range(replications):
                release = None
                if {"naive", "cgm", "mbi"} & set(per_eps):
                    gen = derived_generator(seed, "release", N, pop, e, rep)
                    release = release_marginals(data, truth, budget=PureDP(eps), rng=gen)
                for name in per_eps:
                    start = time.perf_counter()
                    if name == "mbi":  # same release; one row per iteration count
                        for f in fit_mbi(release, truth, MBI_ITERS):
                            record(pop, eps, rep, f"mbi{f.iterations}", f.model, f.seconds)
                        bar.update(1)
                        continue
                    if name == "naive":
                        fit = NaiveMLE().fit(release, truth)
                    elif name == "cgm":
                        fit = CGMEM().fit(release, truth)
                    else:
                        gen = derived_generator(seed, "psgd", N, pop, e, rep)
                        fit = PSGD(ApproxDP(eps, 1.0 / N)).fit(data, truth, rng=gen)
                    record(pop, eps, rep, name, fit.model, time.perf_counter() - start)
                    bar.update(1)
    bar.close()
    runs = pd.DataFrame(rows)
    summary = runs.pivot_table(index="epsilon", columns="learner", values="kl", aggfunc="median")
    summary = summary[[lr for lr in COLUMNS if lr in summary.columns]]
    summary.columns.name = None
    plot = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        runs.to_csv(out / f"compare_{graph}.csv", index=False)
        plot = plot_compare(
            runs, out / f"compare_{graph}.png", title=f"{graph}, T={T}, k={k}, N={N:,}"
        )
    return CompareResult(runs, summary, plot)


def plot_compare(runs: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """KL vs epsilon (log-log), median over trials with min-max bars, one line per learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name in COLUMNS:
        sub = runs[runs.learner == name]
        if sub.empty:
            continue
        median_errorbar(ax, sub, "epsilon", "kl", LABELS[name], marker="o")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("KL(true || learned)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def _print(result: CompareResult) -> None:
    print("Median KL(true || learned) by epsilon (rows) and learner (columns):")
    table = result.summary.rename(columns=LABELS)
    print(table.to_string(float_format=lambda x: f"{x:.4g}"))
    times = result.runs.groupby("learner")["seconds"].median()
    if "naive" in times:
        ratios = ", ".join(
            f"{LABELS[n]} {times[n] / times['naive']:.1f}x" for n in ("cgm", "psgd") if n in times
        )
        print(f"Median time per fit: Naive MLE {times['naive']:.2f} s; {ratios}")
    if result.plot is not None:
        print(f"Plot written to {result.plot}")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="compare Random / Non-private / Naive MLE / CGM / PSGD on one budget"
    )
    p.add_argument("--graph", choices=["chain", "er"], default="chain")
    p.add_argument("--T", type=int, default=10)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--N", type=int, default=100_000)
    p.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    p.add_argument("--populations", type=int, default=1)
    p.add_argument("--replications", type=int, default=1)
    p.add_argument(
        "--learners",
        nargs="+",
        default=list(LEARNERS),
        choices=LEARNERS + OPTIONAL,
        help="'mbi' (needs the bench extra) adds mbi mirror descent at 300/1000/3000 iterations",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="pgm_dp_results", help="folder for the CSV and the plot")
    p.set_defaults(
        func=lambda a: _print(
            run_compare(
                a.graph,
                a.T,
                a.k,
                a.N,
                a.eps,
                a.populations,
                a.replications,
                a.learners,
                a.seed,
                progress=True,
                out_dir=a.out,
            )
        )
    )
