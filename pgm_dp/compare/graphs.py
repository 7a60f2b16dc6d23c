"""Compare learners on one privacy budget (Bernstein et al. 2017, Sec. 4.1 / Fig. 2), the
driver of ``pgm-dp compare`` and of the Fig. 2 reproduction.

For each population (a data set of ``N`` records sampled from the true model) and each
``epsilon``, the clique tables are released once per replication with the Laplace mechanism
(``PureDP(epsilon)``, scale ``|C| / epsilon``), and every release learner (Naive MLE, CGM-EM,
...) is fitted to the same release; PSGD gets ``ApproxDP(epsilon, 1/N)`` on the records
themselves (as the paper, which sets ``delta = 1/N``). The random and non-private references
are fitted once per population. The score is ``KL(true || learned)``, exact, through the
junction tree.

The comparison's policy (what budget each learner gets at ``epsilon``, which table columns
it fills) is this module's, not the registry's: :func:`budget_for`, :func:`columns_of`,
:func:`models_of`. Any registered learner can be compared (a plugin's too); a private one
gets the budget type its registry entry declares (default ``PureDP(epsilon)``).

>>> result = run_compare(T=4, k=2, N=500, epsilons=(1.0,), learners=("naive", "nonprivate"),
...                      progress=False, out_dir=None)
>>> sorted(result.summary.columns)
['naive', 'nonprivate']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import learners as registry
from .._progress import progress_hook, step, tqdm
from ..learners import Fit, LearnerSpec, zcdp_for_epsilon
from ..learners.mbi import MBI_COLUMNS
from ..models import MarkovRandomField, erdos_renyi, random_tree, third_order_chain
from ..plotting import have_matplotlib, median_errorbar, pyplot
from ..privacy import ApproxDP, Budget, PureDP, release_marginals
from ..rng import derived_generator
from .metrics import kl_divergence

__all__ = [
    "print_times",
    "LEARNERS",
    "CompareResult",
    "budget_for",
    "column_labels",
    "columns_of",
    "models_of",
    "run_compare",
    "print_result",
    "plot_compare",
]

#: The learners ``compare`` runs by default (any registered name may be asked for).
LEARNERS = ("random", "nonprivate", "naive", "cgm", "psgd")


def _delta_one_over_n(epsilon: float, n: int) -> ApproxDP:
    """Bernstein et al. (2017, Sec. 4.1) run PSGD at ``(epsilon, 1/N)``."""
    return ApproxDP(epsilon, 1.0 / n)


def _zhang_zcdp(epsilon: float, n: int):
    """zCDP learners at ``epsilon``: the largest ``rho`` that is ``(epsilon, 1/N)``-DP by
    Zhang et al. (2020) Lemma 2.14 (2)."""
    return zcdp_for_epsilon(epsilon, n)


#: The budget a comparison at ``(epsilon, N)`` gives a private learner, by the budget type
#: its registry entry declares (``PureDP(epsilon)``: the release learners, Bernstein et al.
#: 2017, Sec. 3.1).
_AT_EPSILON: dict[str, Callable[[float, int], Budget]] = {
    "PureDP": lambda epsilon, n: PureDP(epsilon),
    "ApproxDP": _delta_one_over_n,
    "ZCDP": _zhang_zcdp,
}
#: Learners that report several models from one run, one table column each: mbi at 300,
#: 1,000 and 3,000 mirror-descent iterations (``fit.info["snapshots"]``).
SNAPSHOTS: dict[str, Mapping[str, str]] = {"mbi": {c: f"mbi MD {c[3:]}" for c in MBI_COLUMNS}}


def budget_for(spec: LearnerSpec, epsilon: float, n: int) -> Budget | None:
    """The budget ``spec``'s learner gets at ``epsilon`` on ``n`` records (``None``: a
    non-private reference), by the budget type its registry entry declares: ``PureDP(epsilon)``,
    ``ApproxDP(epsilon, 1/N)`` or the largest ``ZCDP`` that is ``(epsilon, 1/N)``-DP."""
    if not spec.private:
        return None
    return _AT_EPSILON[spec.budget](epsilon, n)


def columns_of(spec: LearnerSpec) -> dict[str, str]:
    """``{column: label}`` of the table columns ``spec``'s learner fills (default: its name)."""
    return dict(SNAPSHOTS.get(spec.name, {spec.name: spec.label}))


def models_of(spec: LearnerSpec, fit: Fit) -> dict[str, MarkovRandomField]:
    """``{column: model}`` of one fit of ``spec``'s learner."""
    if spec.name in SNAPSHOTS:
        return {f"{spec.name}{n}": model for n, model in fit.info["snapshots"].items()}
    return {spec.name: fit.model}


def column_labels() -> dict[str, str]:
    """Display label of every table column of every registered learner, in registration
    order (the tables' column order)."""
    return {
        c: label for n in registry.available() for c, label in columns_of(registry.get(n)).items()
    }


@dataclass(frozen=True)
class CompareResult:
    """``runs``: one row per fit (graph, N, epsilon, population, replication, learner, kl,
    seconds); ``summary``: median KL per epsilon (rows) and learner (columns); ``plot``: the
    PNG written, if any."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    plot: Path | None


#: Model families a comparison can draw its true model from (T variables, k states each).
GRAPHS = {"chain": third_order_chain, "er": erdos_renyi, "tree": random_tree}
#: Release mechanisms and the budget each is given at ``epsilon`` (Gaussian: delta = 1/N).
MECHANISMS = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian")


def _truth(graph: str, T: int, k: int, rng):
    return GRAPHS[graph](T, k, rng=rng)


def _release_budget(spec: LearnerSpec, mechanism: str | None, epsilon: float, n: int):
    """A release learner's budget: the spec's (pure DP) for the Laplace kinds, ``(epsilon,
    1/N)``-DP for the Gaussian kinds (which have no pure-DP guarantee)."""
    if mechanism is not None and "gaussian" in mechanism:
        return ApproxDP(epsilon, 1.0 / n)
    return budget_for(spec, epsilon, n)


def check_settings(
    graph, T, k, N, epsilons, populations, replications, learners, mechanism=None
) -> list:
    """The registered specs of ``learners``; a ``ValueError`` for any setting that cannot run
    (checked before any work), an ``ImportError`` for a learner whose optional dependency
    is missing (each learner is built once here)."""
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {sorted(GRAPHS)}, got {graph!r}")
    if mechanism is not None and mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    for name, value, least in (("T", T, 4), ("k", k, 2), ("N", N, 1)):
        if int(value) != value or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value}")
    for name, value in (("populations", populations), ("replications", replications)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value}")
    if not len(epsilons) or not all(0 < float(e) < float("inf") for e in epsilons):
        raise ValueError(f"epsilons must be positive and finite, got {list(epsilons)}")
    if not len(learners):
        raise ValueError("no learners given")
    specs = [registry.get(name) for name in dict.fromkeys(learners)]
    for spec in specs:
        spec.make()
    return specs


def _iteration_postfix(bar, every: float = 0.5):
    """A :func:`~pgm_dp._progress.progress_hook` that shows the running fit's solver
    iterations after the bar (``cgm 120 it``), refreshed at most every ``every`` seconds, so
    the bar moves within a fit that takes minutes."""
    state = {"n": -1, "counts": {}, "shown": 0.0}

    def hook(what: str, n: int) -> None:
        if bar.n != state["n"]:  # a new fit: start counting again
            state["n"], state["counts"] = bar.n, {}
        state["counts"][what] = state["counts"].get(what, 0) + n
        now = time.monotonic()
        if now - state["shown"] >= every:
            state["shown"] = now
            bar.set_postfix_str(" ".join(f"{k} {v} it" for k, v in state["counts"].items()))

    return hook


#: Options keeping a learner on its paper's conventions, so the reproductions' numbers do not
#: change: PSGD's ``N`` is public (``q = L / N``; Bernstein et al. 2017, Sec. 4, after Abadi
#: et al. 2016), as is every release's (``total="public"`` below). Both are outside the
#: privacy guarantee; the library's defaults keep ``N`` private.
PAPER_OPTIONS = {"psgd": {"total": "public"}}


def paper_learner(spec: LearnerSpec):
    """A new learner of ``spec`` with :data:`PAPER_OPTIONS`."""
    return spec.make(**PAPER_OPTIONS.get(spec.name, {}))


def _timed_fit(spec: LearnerSpec, *args, **kwargs) -> tuple[Fit, float]:
    """A new learner of ``spec`` fitted to ``args``, and the seconds the fit took."""
    start = time.perf_counter()
    fit = paper_learner(spec).fit(*args, **kwargs)
    return fit, time.perf_counter() - start


def _fits(specs, truth, data, N, pop, e, eps, rep, seed, mechanism=None):
    """``(spec, fit, seconds)`` of every private learner on one release / budget draw.
    Release learners sharing a budget share one release (Bernstein et al. 2017: every
    learner sees the same noisy tables)."""
    releases = {}
    how = {} if mechanism is None else {"mechanism": mechanism}
    for spec in specs:
        if spec.kind == "release":
            budget = _release_budget(spec, mechanism, eps, N)
            if budget not in releases:
                extra = () if not releases else (repr(budget),)
                extra += () if mechanism is None else (mechanism,)
                gen = derived_generator(seed, "release", N, pop, e, rep, *extra)
                releases[budget] = release_marginals(
                    data, truth, budget=budget, rng=gen, total="public", **how
                )
            yield (spec, *_timed_fit(spec, releases[budget], truth))
        else:
            gen = derived_generator(seed, spec.name, N, pop, e, rep)
            budget = budget_for(spec, eps, N)
            yield (spec, *_timed_fit(spec, data, truth, budget=budget, rng=gen))


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
    mechanism: str | None = None,
    plot: bool | None = None,
) -> CompareResult:
    """Run the comparison; see the module docstring. Writes ``compare_<graph>.csv`` and
    ``.png`` to ``out_dir`` unless it is ``None``. ``mechanism``: the release mechanism
    (default: :func:`~pgm_dp.privacy.release_marginals`'s); Gaussian kinds are given
    ``(epsilon, 1/N)``-DP. ``plot``: draw the PNG (``None``: where matplotlib is installed;
    ``True`` without it: an ``ImportError`` naming the ``plot`` extra, before any work)."""
    specs = check_settings(graph, T, k, N, epsilons, populations, replications, learners, mechanism)
    if plot is None:
        plot = have_matplotlib()
    elif plot and out_dir is not None:
        pyplot()  # refuse now rather than after the fits
    truth = _truth(graph, T, k, derived_generator(seed, "truth"))
    references = [s for s in specs if not s.private]
    private = [s for s in specs if s.private]
    total = populations * (len(references) + len(epsilons) * replications * len(private))
    bar = tqdm(total=total, desc=f"compare ({graph})", disable=not progress)
    rows = []
    seen: set = set()

    def record(pop, eps, rep, spec, fit, seconds):
        per_column = fit.info.get("seconds", {})
        for column, model in models_of(spec, fit).items():
            first = column not in seen or not spec.private  # a reference is fitted once
            seen.add(column)
            kl = kl_divergence(truth, model)
            rows.append(
                {
                    "graph": graph,
                    "N": N,
                    "epsilon": eps,
                    "population": pop,
                    "replication": rep,
                    "learner": column,
                    "kl": kl,
                    "seconds": per_column.get(column, seconds),
                    "first_fit": first,  # includes JAX's compilation
                    "converged": bool(fit.info.get("converged", True)),
                }
            )

    finished = [0]  # a disabled tqdm bar does not count

    def done(what: str) -> None:
        bar.update(1)
        finished[0] += 1
        step("compare: fits", finished[0], total, f"{what} done")

    step("compare: fits", 0, total)
    with progress_hook(_iteration_postfix(bar) if progress else None):
        for pop in range(populations):
            data = truth.sample(N, derived_generator(seed, "population", N, pop))
            for spec in references:
                gen = derived_generator(seed, spec.name, N, pop)
                fit, seconds = _timed_fit(spec, data, truth, rng=gen)
                for eps in epsilons:  # references do not depend on epsilon: one row per epsilon
                    record(pop, eps, 0, spec, fit, seconds)
                done(spec.name)
            for e, eps in enumerate(epsilons):
                for rep in range(replications):
                    fits = _fits(private, truth, data, N, pop, e, eps, rep, seed, mechanism)
                    for spec, fit, seconds in fits:
                        record(pop, eps, rep, spec, fit, seconds)
                        done(f"{spec.name} at epsilon {eps:g}")
    bar.close()
    return _finish(pd.DataFrame(rows), graph, T, k, N, out_dir if plot else None, out_dir)


def columns() -> list[str]:
    """Every registered table column, in registration order (the tables' column order)."""
    return list(column_labels())


def _finish(runs, graph, T, k, N, plot_dir, out_dir) -> CompareResult:
    summary = runs.pivot_table(index="epsilon", columns="learner", values="kl", aggfunc="median")
    summary = summary[[c for c in columns() if c in summary.columns]]
    summary.columns.name = None
    plot = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        runs.to_csv(out / f"compare_{graph}.csv", index=False)
    if plot_dir is not None:
        plot = plot_compare(
            runs, Path(plot_dir) / f"compare_{graph}.png", title=f"{graph}, T={T}, k={k}, N={N:,}"
        )
    return CompareResult(runs, summary, plot)


def plot_compare(runs: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """KL vs epsilon (log-log), median over trials with min-max bars, one line per learner
    (needs matplotlib: the ``plot`` extra)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, label in column_labels().items():
        sub = runs[runs.learner == name]
        if sub.empty:
            continue
        median_errorbar(ax, sub, "epsilon", "kl", label, marker="o")
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


def print_times(runs: pd.DataFrame, labels: dict) -> None:
    """Compile and per-fit time apart: a learner's first fit includes JAX's compilation
    (``first_fit``), the median of its later fits is the time of a fit (with ratios to naive
    MLE's); with one fit per learner, the times are said to include compilation."""
    specs = [registry.get(n) for n in registry.available()]
    private = [c for spec in specs if spec.private for c in columns_of(spec)]
    runs = runs[runs.learner.isin(private)]
    if runs.empty:
        return
    first = runs[runs.first_fit].groupby("learner")["seconds"].median()
    later = runs[~runs.first_fit].groupby("learner")["seconds"].median()
    print(
        "First fit, JAX's compilation included: "
        + ", ".join(f"{labels[n]} {s:.2f} s" for n, s in first.items())
    )
    if later.empty:
        print("(one fit per learner: run more epsilons or replications for the time of a fit)")
        return
    line = ", ".join(f"{labels[n]} {s:.3g} s" for n, s in later.items())
    if "naive" in later and later["naive"] > 0:
        line += "; relative to naive MLE: " + ", ".join(
            f"{labels[n]} {s / later['naive']:.1f}x" for n, s in later.items() if n != "naive"
        )
    print(f"Median time of a later fit (compiled): {line}")


def print_result(result: CompareResult) -> None:
    """Print the summary table, the time ratios and the plot written."""
    print("Median KL(true || learned) by epsilon (rows) and learner (columns):")
    labels = column_labels()
    table = result.summary.rename(columns=labels)
    print(table.to_string(float_format=lambda x: f"{x:.4g}"))
    print_times(result.runs, labels)
    if result.plot is not None:
        print(f"Plot written to {result.plot}")
