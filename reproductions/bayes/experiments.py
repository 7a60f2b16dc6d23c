"""Bayesian posteriors from releases: calibration, SBC ranks and the default example.

``python -m reproductions bayes calibration``: over ``releases`` synthetic releases per
(mechanism, epsilon) of a small chain whose log-potentials are drawn from the prior (so
coverage is exact in expectation; Cook, Gelman & Rubin 2006), the share of edge-marginal
cells inside the central 80/90/95% credible intervals, noise-aware and naive; SBC rank
histograms (Talts et al. 2018) for the first setting. ``python -m reproductions bayes
example``: NUTS on the third-order chain, with R-hat, ESS, divergences, time, ESS/s and the
PPC, trace and rank plots.

>>> res = run_calibration(("gaussian",), (1.0,), releases=2, N=300, num_samples=200,
...                       progress=False, out_dir=None)
>>> sorted(res.summary.columns)[:2]
['aware', 'count']
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats
from tqdm.auto import tqdm

from pgm_dp.bayes import PRIOR_SCALE, posterior, site_name
from pgm_dp.bayes.batch import marginal_draws
from pgm_dp.bayes.checks import plot_check, predictive_check
from pgm_dp.domain import Domain
from pgm_dp.models import MarkovRandomField, third_order_chain
from pgm_dp.privacy import ZCDP, PureDP, release_marginals
from pgm_dp.rng import derived_generator

__all__ = [
    "run_calibration",
    "CalibrationResult",
    "run_example",
    "small_chain",
    "sbc_ranks",
    "run_sbc",
    "plot_sbc",
]

LEVELS = (0.8, 0.9, 0.95)


def small_chain(T: int, k: int, rng) -> MarkovRandomField:
    """A chain on ``T`` variables with ``k`` states, log-potentials drawn from the prior."""
    dom = Domain([f"X{i}" for i in range(T)], [k] * T)
    cliques = [(f"X{i}", f"X{i + 1}") for i in range(T - 1)]
    return MarkovRandomField(dom, cliques, [rng.normal(0, PRIOR_SCALE, (k, k)) for _ in cliques])


def budget_for(mechanism: str, epsilon: float):
    """``PureDP(eps)`` for the Laplace kinds, ``ZCDP(eps^2 / 2)`` for the Gaussian kinds."""
    return PureDP(epsilon) if mechanism.endswith("laplace") else ZCDP(epsilon**2 / 2)


@dataclass(frozen=True)
class CalibrationResult:
    """``runs``: one row per (mechanism, epsilon, release, aware, method, level) with the
    share of cells covered; ``summary``: mean coverage per setting; ``ranks``: SBC ranks
    (first setting, noise-aware), one row per release, one column per edge-marginal cell;
    ``plot``: the PNG, if written."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    ranks: np.ndarray
    plot: Path | None


def sbc_ranks(draws, true) -> np.ndarray:
    """Simulation-based calibration ranks (Talts et al. 2018, Algorithm 1): for each scalar,
    the number of the ``L`` posterior draws (axis 0 of ``draws``) below the true value, in
    ``0..L``; uniform over those ``L + 1`` values when the posterior is calibrated.

    >>> sbc_ranks(np.array([[0.1, 5.0], [0.3, 6.0], [0.2, 7.0]]), np.array([0.25, 1.0]))
    array([2, 0])
    """
    draws, true = np.asarray(draws), np.asarray(true)
    if draws.ndim < 1 or draws.shape[1:] != true.shape:
        raise ValueError(f"draws {draws.shape} must be (L, *{true.shape})")
    return np.sum(draws < true[None], axis=0)


def _coverage(draws: dict, truth: MarkovRandomField) -> tuple[dict, list]:
    """Per level the share of edge-marginal cells covered by ``draws`` (``{clique: (L,
    *shape)}``), and the truth's SBC ranks (every cell of every edge marginal, in clique
    order)."""
    covered, ranks = {lv: [] for lv in LEVELS}, []
    for c in truth.cliques:
        true = np.asarray(truth.marginal(c))
        for lv in LEVELS:
            lo, hi = np.quantile(draws[c], [(1 - lv) / 2, (1 + lv) / 2], axis=0)
            covered[lv].extend(((lo <= true) & (true <= hi)).ravel())
        ranks.extend(sbc_ranks(draws[c], true).ravel().tolist())
    return {lv: float(np.mean(v)) for lv, v in covered.items()}, ranks


def _setting(mech, eps, releases, N, T, k, seed, method, draws, nuts, covariance="auto"):
    """The coverage rows and SBC ranks (per release, noise-aware) of one (mechanism,
    epsilon): ``releases`` truths and releases, each posterior fitted to all of them at once
    (:func:`~pgm_dp.bayes.batch.marginal_draws`; ``draws``: warm-up and draws); with the
    Laplace method the first ``nuts`` releases are also fitted by NUTS."""
    num_warmup, num_samples = draws
    truths, rels = [], []
    for rep in range(releases):
        truth = small_chain(T, k, derived_generator(seed, "truth", mech, eps, rep))
        data = truth.sample(N, derived_generator(seed, "data", mech, eps, rep))
        rels.append(release_marginals(
            data, truth, budget=budget_for(mech, eps), mechanism=mech, rng=rep + 7919 * seed,
            total="public",
        ))  # fmt: skip
        truths.append(truth)
    extra = [("nuts", True, min(nuts, releases))] if nuts and method != "nuts" else []
    rows, ranks = [], []
    for how, aware, n in [(method, True, releases), (method, False, releases), *extra]:
        out = marginal_draws(
            rels[:n], truths[0], method=how, num_samples=num_samples, num_warmup=num_warmup,
            num_chains=1, rngs=range(n), noise_aware=aware, covariance=covariance,
        )  # fmt: skip
        for rep in range(n):
            cov, r = _coverage(out[rep], truths[rep])
            if aware and how == method:
                ranks.append(r)
            for lv, share in cov.items():
                row = {"mechanism": mech, "epsilon": eps, "release": rep, "aware": aware}
                rows.append({**row, "method": how, "level": lv, "coverage": share})
    return sorted(rows, key=lambda row: row["release"]), ranks


def run_calibration(
    mechanisms: Sequence[str] = ("laplace", "gaussian"),
    epsilons: Sequence[float] = (0.1, 0.5, 2.0),
    releases: int = 100,
    N: int = 1000,
    T: int = 4,
    k: int = 2,
    method: str = "nuts",
    nuts_releases: int = 0,
    num_samples: int = 1000,
    seed: int = 0,
    progress: bool = True,
    out_dir: str | Path | None = "pgm_dp_results",
    covariance: str = "auto",
    num_warmup: int = 300,
) -> CalibrationResult:
    """Coverage of credible intervals over synthetic releases (see the module docstring),
    by ``method`` (``"nuts"``: 1 chain, ``num_warmup`` warm-up steps, ``num_samples`` draws; or
    ``"laplace"``); with the Laplace method the first ``nuts_releases`` releases of each
    setting are also fitted by NUTS. ``covariance``: :func:`~pgm_dp.bayes.posterior`'s
    (``"plugin"`` checks the large-model path on the small model)."""
    if releases < 1 or N < 1 or not epsilons or not mechanisms:
        raise ValueError("releases, N, epsilons and mechanisms must be non-empty / positive")
    rows, ranks = [], []
    total = len(mechanisms) * len(epsilons)
    with tqdm(total=total, desc="calibration", disable=not progress) as bar:
        for mech in mechanisms:
            for eps in epsilons:
                draws = (num_warmup, num_samples)
                args = (N, T, k, seed, method, draws, nuts_releases, covariance)
                r, rk = _setting(mech, eps, releases, *args)
                rows += r
                if mech == mechanisms[0] and eps == epsilons[0]:
                    ranks = rk
                bar.update(1)
    runs = pd.DataFrame(rows)
    keys = ["mechanism", "epsilon", "method", "aware", "level"]
    summary = runs.groupby(keys)["coverage"].agg(["mean", "count"]).reset_index()
    plot = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        runs.to_csv(out / "bayes_calibration.csv", index=False)
        plot = _plot_calibration(summary, np.asarray(ranks), num_samples, out)
    return CalibrationResult(runs, summary, np.asarray(ranks), plot)


def _plot_calibration(summary: pd.DataFrame, ranks, num_samples: int, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mechs = list(dict.fromkeys(summary.mechanism))
    fig, axes = plt.subplots(1, len(mechs) + 1, figsize=(4 * (len(mechs) + 1), 3.5))
    for ax, mech in zip(axes, mechs, strict=False):
        sub = summary[(summary.mechanism == mech) & (summary.level == 0.9)]
        for (how, aware), g in sub.groupby(["method", "aware"]):
            label = f"{how}, {'noise-aware' if aware else 'naive'}"
            ax.plot(g.epsilon, g["mean"], marker="o", label=label)
        ax.axhspan(0.87, 0.93, color="0.9")
        ax.axhline(0.9, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("coverage of 90% intervals")
        ax.set_title(mech)
        ax.legend(fontsize=7)
    axes[-1].hist(np.ravel(ranks), bins=20, range=(0, num_samples), color="0.6")
    axes[-1].axhline(np.size(ranks) / 20, color="k", lw=0.8)
    axes[-1].set_title("SBC ranks (first setting)")
    fig.tight_layout()
    path = out / "bayes_calibration.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_sbc(
    mechanism: str = "gaussian",
    epsilon: float = 0.1,
    releases: int = 100,
    N: int = 1000,
    method: str = "nuts",
    draws: int = 999,
    seed: int = 0,
    progress: bool = True,
    out_dir: str | Path | None = "pgm_dp_results",
) -> tuple[np.ndarray, Path | None]:
    """SBC (Talts et al. 2018, Algorithm 1) on the calibration model: ``releases`` times,
    truth from the prior, ``N`` records, a release, the noise-aware posterior (``draws``
    independent Laplace-method draws, or NUTS draws); the ranks ``(releases, cells)`` and,
    with ``out_dir``, their histograms in ``bayes_sbc.png`` (ranks in ``bayes_sbc.csv``, the
    per-release coverage in ``bayes_sbc_coverage.csv``)."""
    res = run_calibration(
        (mechanism,), (epsilon,), releases, N, method=method, num_samples=draws, seed=seed,
        progress=progress, out_dir=None,
    )  # fmt: skip
    plot = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(res.ranks).to_csv(out / "bayes_sbc.csv", index=False)
        res.runs.to_csv(out / "bayes_sbc_coverage.csv", index=False)
        title = f"{mechanism}, epsilon={epsilon:g}, N={N}, {releases} releases, {method}"
        plot = plot_sbc(res.ranks, draws, out / "bayes_sbc.png", title)
    return res.ranks, plot


def plot_sbc(
    ranks, draws: int, path: str | Path, title: str = "", bins: int = 20, cells_per_edge: int = 4
) -> Path:
    """Rank histograms: one panel per edge (its ``cells_per_edge`` cells pooled, ``k^2``;
    the calibration model's ``k = 2`` by default) and all cells pooled, with the 99% band of
    a bin's count under uniform ranks (Binomial)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import binom

    ranks = np.asarray(ranks)
    step = cells_per_edge
    groups = [ranks[:, i : i + step] for i in range(0, ranks.shape[1], step)]
    fig, axes = plt.subplots(1, len(groups) + 1, figsize=(3.2 * (len(groups) + 1), 3))
    for i, (ax, g) in enumerate(zip(axes, [*groups, ranks], strict=True)):
        lo, hi = binom.ppf([0.005, 0.995], g.size, 1 / bins)
        ax.axhspan(lo, hi, color="0.88")
        ax.axhline(g.size / bins, color="k", lw=0.8)
        ax.hist(g.ravel(), bins=bins, range=(0, draws + 1), color="tab:blue", alpha=0.8)
        ax.set_title("all cells" if i == len(groups) else f"edge {i + 1} ({g.shape[1]} cells)")
        ax.set_xlabel(f"rank of the truth among {draws} draws")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def run_example(
    T: int = 10,
    k: int = 10,
    N: int = 10_000,
    epsilon: float = 1.0,
    mechanism: str = "gaussian",
    num_warmup: int = 300,
    num_samples: int = 300,
    num_chains: int = 4,
    seed: int = 0,
    out_dir: str | Path | None = "pgm_dp_results",
    pilot: int = 0,
) -> dict:
    """NUTS (whitened by the Laplace fit, widened by a pilot of ``pilot`` draws per chain if
    any; warm-up adapts the step size and a diagonal mass matrix) on the
    third-order chain: diagnostics, wall and CPU seconds, ESS/s and, with ``out_dir``, the
    PPC, trace and rank plots."""
    import arviz_stats

    truth = third_order_chain(T, k, derived_generator(seed, "truth"))
    data = truth.sample(N, derived_generator(seed, "data"))
    rel = release_marginals(
        data, truth, budget=budget_for(mechanism, epsilon), mechanism=mechanism, rng=seed,
        total="public",
    )  # fmt: skip
    start, cpu = time.perf_counter(), time.process_time()
    idata = posterior(
        rel, truth, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
        rng=seed, pilot=pilot,
    )  # fmt: skip
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    names = [site_name(c) for c in truth.cliques]
    summ = arviz_stats.summary(idata, var_names=names)
    out = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "mean_leapfrog_steps": float(idata.sample_stats.n_steps.mean()),
        "max_rhat": float(summ.r_hat.max()),
        "min_ess_bulk": float(summ.ess_bulk.min()),
        "min_ess_tail": float(summ.ess_tail.min()),
        "divergences": int(idata.sample_stats.diverging.sum()),
        "min_ess_per_s": float(summ.ess_bulk.min() / seconds),
    }
    if out_dir is not None:
        from pgm_dp.plotting import pyplot

        plt, path = pyplot(), Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        check = predictive_check(rel, idata)
        out["ppc_min_p"] = check.min_p
        plot_check(check, path / "bayes_ppc.png")
        _plot_chains(plt, idata.posterior[names[0]], path)
    return out


def _plot_chains(plt, site, path: Path) -> None:
    """Trace (``bayes_trace.png``) and rank histograms (``bayes_rank.png``, Vehtari et al.
    2021: near-uniform when the chains mix) of the first cell of ``site``, per chain."""
    draws = np.asarray(site).reshape(*site.shape[:2], -1)[..., 0]  # (chain, draw)
    ranks = scipy.stats.rankdata(draws, axis=None).reshape(draws.shape)
    fig, ax = plt.subplots(figsize=(7, 2.4))
    for c, trace in enumerate(draws):
        ax.plot(trace, lw=0.6, label=f"chain {c}")
    ax.set(xlabel="draw", ylabel=f"{site.name}, first cell", title="trace")
    fig.savefig(path / "bayes_trace.png", dpi=90)
    fig, axes = plt.subplots(1, len(draws), figsize=(2.6 * len(draws), 2.6), squeeze=False)
    for c, ax in enumerate(axes.ravel()):
        ax.hist(ranks[c], bins=20, range=(1, draws.size), color="0.6")
        ax.set(title=f"chain {c}", xticks=[], yticks=[])
    fig.suptitle(f"rank plot: {site.name}, first cell", fontsize=9)
    fig.tight_layout()
    fig.savefig(path / "bayes_rank.png", dpi=90)
    plt.close("all")


#: ``--quick``: at most this many releases per setting, warm-up steps and draws (1 chain).
QUICK = {"releases": 2, "num_warmup": 100, "num_samples": 200}


def _calibrate_cli(a) -> None:
    draws = {"num_warmup": 300, "num_samples": 1000}
    releases, nuts = a.releases, a.nuts_releases
    if a.quick:
        releases, nuts = min(releases, QUICK["releases"]), 0
        draws = {"num_warmup": QUICK["num_warmup"], "num_samples": QUICK["num_samples"]}
        print(
            f"quick: {releases} releases per setting, {draws['num_warmup']} warm-up steps and "
            f"{draws['num_samples']} draws (1 chain); coverage is a rough check at this size"
        )
    res = run_calibration(
        a.mechanisms, a.eps, releases, a.N, method=a.method, nuts_releases=nuts, seed=a.seed,
        out_dir=a.out, covariance=a.covariance, **draws,
    )  # fmt: skip
    table = res.summary.pivot_table(
        index=["mechanism", "epsilon"], columns=["method", "aware", "level"], values="mean"
    )
    print("Coverage of central credible intervals (edge-marginal cells):")
    print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    if res.plot is not None:
        print(f"Plot written to {res.plot}")


def _sbc_cli(a) -> None:
    releases = min(a.releases, 10) if a.quick else a.releases
    ranks, plot = run_sbc(
        a.mechanisms[0], a.eps[0], releases, a.N, method=a.method, seed=a.seed, out_dir=a.out
    )
    print(f"SBC ranks: {ranks.shape[0]} releases x {ranks.shape[1]} cells; plot: {plot}")


def _example_cli(a) -> None:
    kw = {"T": 6, "k": 3, "num_samples": 300} if a.quick else {}
    res = run_example(N=a.N, epsilon=a.eps[0], mechanism=a.mechanisms[0], out_dir=a.out, **kw)
    for key, value in res.items():
        print(f"{key}: {value:.4g}")
