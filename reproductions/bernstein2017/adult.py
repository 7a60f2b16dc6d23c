"""Held-out log-likelihood vs epsilon on UCI Adult (Bernstein et al. 2017, Sec. 4.2 / Fig. 3b).

The paper fits a chain model to private wifi data (not public) and scores each learner by the
held-out log-likelihood of a 25% test split of individuals. We run the same protocol on the
UCI Adult records shipped with the package (:func:`pgm_dp.datasets.load_adult`).

Model. A first-order chain (pairwise MRF, one table per adjacent pair) over the attributes in
``columns``, in that order. The default :data:`ADULT_CHAIN` was fixed **without looking at the
data** (a Chow-Liu tree on the private records would leak them): the eight attributes with at
most 16 values, ordered by textbook links — workclass - occupation (sector fixes the jobs),
occupation - education-num, education-num - income>50K, income>50K - marital-status,
marital-status - relationship (a husband or wife is married), relationship - sex (husband is
male, wife female), sex - race (a leaf). The five attributes with 85-100 values (age, fnlwgt,
capital-gain/-loss, hours-per-week) and native-country (42) are left out: with ``|C|`` tables
the Laplace scale is ``|C| / epsilon`` per cell, so at small ``epsilon`` a 100 x 100 table is
pure noise. The default has 7 tables and 485 cells (Laplace scale 140 per cell at
``epsilon = 0.05``, against 36,632 training records).

Protocol. One seeded random 75/25 split of the 48,842 records. The non-private MLE is fitted
once; for each ``epsilon`` and trial the clique tables of the training set are released once
(``PureDP(epsilon)``) and Naive MLE and CGM-EM are fitted to that release; PSGD gets
``ApproxDP(epsilon, 1/N_train)`` (as the paper) on the training records; an ``epsilon`` PSGD
cannot reach (a :class:`~pgm_dp.errors.PgmDpError`) is skipped and listed in ``skipped``.
Each split, release and PSGD run draws from its own generator derived from ``seed``, so a
run with fewer learners sees the same split and releases. The score is the mean per-record
log-likelihood of the test set (nats). Default grid
``epsilon in {0.05, 0.1, 0.5, 1, 2}`` (our choice; the paper's grid is not listed), 3 trials.

>>> res = run_adult(columns=("sex", "income>50K"), epsilons=(1.0,), trials=1,
...                 learners=("naive", "nonprivate"), progress=False, out_dir=None)
>>> sorted(res.summary.columns)
['naive', 'nonprivate']
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from pgm_dp import learners as registry
from pgm_dp.compare.graphs import budget_for, paper_learner
from pgm_dp.compare.metrics import log_likelihood
from pgm_dp.datasets import load_adult
from pgm_dp.domain import Domain
from pgm_dp.errors import DomainError, PgmDpError
from pgm_dp.learners import labels
from pgm_dp.models import MarkovRandomField
from pgm_dp.plotting import median_errorbar
from pgm_dp.privacy import PureDP, release_marginals
from pgm_dp.rng import RngLike, as_generator, derived_generator

__all__ = [
    "ADULT_CHAIN",
    "EPSILONS",
    "LEARNERS",
    "AdultResult",
    "run_adult",
    "chain_model",
    "split_records",
    "plot_adult",
    "print_result",
]

ADULT_CHAIN = (
    "workclass",
    "occupation",
    "education-num",
    "income>50K",
    "marital-status",
    "relationship",
    "sex",
    "race",
)
EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0)
LEARNERS = ("nonprivate", "naive", "cgm", "psgd")
_STEM = "adult_heldout"


@dataclass(frozen=True)
class AdultResult:
    """``runs``: one row per fit (epsilon, trial, learner, heldout_ll, seconds); ``summary``:
    median held-out log-likelihood per epsilon (rows) and learner (columns); ``uniform_ll``:
    held-out score of the all-zero model; ``skipped``: epsilons PSGD could not reach;
    ``csv``/``plot``: files written, if any."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    uniform_ll: float
    skipped: tuple[float, ...]
    csv: Path | None
    plot: Path | None


def chain_model(domain: Domain) -> MarkovRandomField:
    """The chain MRF over the variables of ``domain``, in its order (all potentials zero)."""
    names = list(domain.attributes)
    if len(names) < 2:
        raise DomainError("a chain needs at least two columns")
    return MarkovRandomField(domain, cliques=list(zip(names[:-1], names[1:], strict=True)))


def split_records(
    data: pd.DataFrame, test_fraction: float, rng: RngLike
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random split of the records: ``(train, test)`` with ``round(test_fraction * n)`` test."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    perm = as_generator(rng).permutation(len(data))
    n_test = int(round(test_fraction * len(data)))
    test = data.iloc[np.sort(perm[:n_test])].reset_index(drop=True)
    return data.iloc[np.sort(perm[n_test:])].reset_index(drop=True), test


def _check(learners, trials, epsilons) -> list:
    """The registered specs of ``learners``, after checking every argument."""
    unknown = set(learners) - set(LEARNERS)
    if unknown:
        raise ValueError(f"unknown learners {sorted(unknown)}; choose from {LEARNERS}")
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    for eps in epsilons:
        PureDP(float(eps))  # validates before any data are touched
    return [registry.get(name) for name in LEARNERS if name in learners]


def _private_fits(specs, train, mrf, base, eps, trial):
    """``(spec, fit or None, seconds)`` for each private learner at ``eps``: release
    learners share one release (Bernstein et al. 2017's protocol); ``None`` where a learner
    refuses the budget."""
    release = None
    for spec in specs:
        budget = budget_for(spec, eps, len(train))
        if spec.kind == "release" and release is None:
            gen = derived_generator(base, "release", eps, trial)
            release = release_marginals(train, mrf, budget=budget, rng=gen, total="public")
        start = time.perf_counter()
        if spec.kind == "release":
            fit = spec.make().fit(release, mrf)
        else:
            gen = derived_generator(base, spec.name, eps, trial)
            try:
                fit = paper_learner(spec).fit(train, mrf, budget=budget, rng=gen)
            except PgmDpError:
                fit = None
        yield spec, fit, time.perf_counter() - start


def run_adult(
    columns: Sequence[str] = ADULT_CHAIN,
    epsilons: Sequence[float] = EPSILONS,
    trials: int = 3,
    learners: Sequence[str] = LEARNERS,
    test_fraction: float = 0.25,
    seed: RngLike = 0,
    progress: bool = True,
    out_dir: str | Path | None = "pgm_dp_results",
) -> AdultResult:
    """Run the Adult experiment; see the module docstring. Writes ``adult_heldout.csv`` and
    ``.png`` to ``out_dir`` unless it is ``None``."""
    specs = _check(learners, trials, epsilons)
    epsilons = [float(e) for e in epsilons]
    # Every random draw has its own generator under one base seed, so any subset of the
    # learners sees the same split and the same releases.
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        base = int(seed)
    else:  # a Generator (or anything as_generator takes, which validates it)
        base = int(as_generator(seed).integers(2**63))
    data, domain = load_adult(columns)
    mrf = chain_model(domain)
    train, test = split_records(data, test_fraction, derived_generator(base, "split"))
    n_train = len(train)
    references = [s for s in specs if not s.private]
    private = [s for s in specs if s.private]
    total = len(references) + len(epsilons) * int(trials) * len(private)
    bar = tqdm(total=total, desc="adult", disable=not progress)
    rows: list[dict[str, Any]] = []
    skipped: list[float] = []

    def record(eps: float, trial: int, name: str, model: MarkovRandomField, seconds: float):
        ll = log_likelihood(model, test)
        rows.append(
            {"epsilon": eps, "trial": trial, "learner": name, "heldout_ll": ll, "seconds": seconds}
        )

    for spec in references:
        start = time.perf_counter()
        fit = spec.make().fit(train, mrf)
        seconds = time.perf_counter() - start
        for eps in epsilons:  # the reference does not depend on epsilon: one row per epsilon
            record(eps, 0, spec.name, fit.model, seconds)
        bar.update(1)
    for eps in epsilons:
        for trial in range(int(trials)):
            for spec, fit, seconds in _private_fits(private, train, mrf, base, eps, trial):
                if fit is None and eps not in skipped:  # the learner cannot reach it (PSGD)
                    skipped.append(eps)
                elif fit is not None:
                    record(eps, trial, spec.name, fit.model, seconds)
                bar.update(1)
    bar.close()
    runs = pd.DataFrame(rows, columns=["epsilon", "trial", "learner", "heldout_ll", "seconds"])
    summary = runs.pivot_table(
        index="epsilon", columns="learner", values="heldout_ll", aggfunc="median"
    )
    summary = summary[[lr for lr in LEARNERS if lr in summary.columns]]
    summary.columns.name = None
    uniform = log_likelihood(mrf, test)
    csv = plot = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        csv = out / f"{_STEM}.csv"
        runs.to_csv(csv, index=False)
        title = f"Adult chain, {len(mrf.domain)} attributes, N_train={n_train:,}"
        plot = plot_adult(runs, out / f"{_STEM}.png", uniform_ll=uniform, title=title)
    return AdultResult(runs, summary, uniform, tuple(skipped), csv, plot)


def plot_adult(
    runs: pd.DataFrame, path: str | Path, uniform_ll: float | None = None, title: str = ""
) -> Path:
    """Held-out log-likelihood vs epsilon (log x), median over trials with min-max bars, one
    line per learner (Fig. 3b); the all-zero model's score as a note."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name in LEARNERS:
        sub = runs[runs.learner == name]
        if sub.empty:
            continue
        style = {"linestyle": "--", "marker": None} if name == "nonprivate" else {"marker": "o"}
        median_errorbar(ax, sub, "epsilon", "heldout_ll", labels()[name], **style)
    if uniform_ll is not None:  # far below the learners: a legend note, not a line
        ax.plot([], [], " ", label=f"(all-zero model: {uniform_ll:.2f})")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("held-out log-likelihood per record (nats)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return Path(path)


def print_result(result: AdultResult) -> None:
    """Print the summary table, the uniform baseline, the times and the files written."""
    print("Median held-out log-likelihood per record by epsilon (rows) and learner (columns):")
    table = result.summary.rename(columns=labels())
    print(table.to_string(float_format=lambda x: f"{x:.4f}"))
    print(f"All-zero (uniform) model: {result.uniform_ll:.4f}")
    if result.skipped:
        print(f"PSGD skipped (epsilon unreachable): {list(result.skipped)}")
    times = result.runs.groupby("learner")["seconds"].median()
    print(
        "Median time per fit: " + ", ".join(f"{labels()[n]} {times[n]:.2f} s" for n in times.index)
    )
    for path in (result.csv, result.plot):
        if path is not None:
            print(f"Written: {path}")
