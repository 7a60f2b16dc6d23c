"""PrIsing experiments (Chakraborty, Chatterjee & Dalal, AISTATS 2024, Sec. 4 and App. C).

Each function returns a :class:`pandas.DataFrame` of the numbers behind a figure and, given
``plot=path``, writes the figure as an image (matplotlib's Agg canvas; the global backend is
not touched). Every replicate is an independent Gibbs chain of
:func:`~pgm_dp.inference.gibbs.gibbs_ising` (PrIsing's convention ``exp(β/2 σᵀJσ)``, uniform
random start, ``n_sweeps`` blocked sweeps), all replicates of one setting in one call. The
non-private MPLE and the private estimates for every ``ε`` use the same simulated outcomes.

* :func:`fig1` — Fig. 1: mean ± sd of MPLE and PrIsing over β ∈ [0, 2], ER ``n = 2000``,
  ``p_n = n^{-1/3}``, ``J = A/(n p_n)``, ``ε = 5``, ``δ = 1/n``.
* :func:`mse_vs_n` — Fig. 2-3: MSE vs ``n`` at β = 0.5 and 1.5 for several ``ε``.
* :func:`mse_vs_density` — Fig. 4-5: MSE vs ``α`` with ``p_n = n^{-α}``, ``n = 2000``.
* :func:`real_networks` — Fig. 10-11 (polblogs) and the karate club in place of the HIV network
  (not public): ``J = D^{-1/2} A D^{-1/2}`` (Eq. 7), synthetic outcomes over a β grid, and the
  cost of privacy ``E[(β̂_priv - β̂)² | σ]`` on the real outcomes vs ``ε``.

The paper does not list the ``ε`` values of Fig. 2-5 and 11 nor the ``α`` grid; the defaults
(``ε ∈ {5, 7.5, 10}``, ``α ∈ {0.1, ..., 0.9}``, cost ``ε ∈ {5, ..., 100}``, β grid of polblogs
``0, 0.2, ..., 3.2``) are our choice. ``quick=True`` shrinks every
size for tests. :func:`run_experiment` runs one from ``python -m reproductions chakraborty2024``.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tqdm.auto import tqdm

from pgm_dp.errors import DomainError
from pgm_dp.ising.gibbs import gibbs_ising
from pgm_dp.ising.networks import (
    erdos_renyi_graph,
    karate_club,
    load_polblogs,
    scale_erdos_renyi,
    scale_symmetric,
)
from pgm_dp.ising.prising import mple, prising_batch
from pgm_dp.rng import RngLike, as_generator

__all__ = ["fig1", "mse_vs_n", "mse_vs_density", "real_networks", "run_experiment", "EXPERIMENTS"]

PathLike = str | os.PathLike | None


def _positive(x, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < 1:
        raise DomainError(f"{name} must be a positive integer, got {x!r}")
    return int(x)


def _er_coupling(n: int, p: float, gen: np.random.Generator):
    return scale_erdos_renyi(erdos_renyi_graph(n, p, gen), p)


def _mple(S: np.ndarray, J) -> np.ndarray:
    with warnings.catch_warnings():  # infinite MPLEs are counted in the tables instead
        warnings.simplefilter("ignore", RuntimeWarning)
        return mple(S, J)


def _summ(x: np.ndarray, prefix: str, truth: float | None = None) -> dict:
    fin = x[np.isfinite(x)]
    out = {
        f"{prefix}_mean": float(fin.mean()) if fin.size else np.nan,
        f"{prefix}_sd": float(fin.std(ddof=1)) if fin.size > 1 else np.nan,
        f"{prefix}_n_inf": int(x.size - fin.size),
    }
    if truth is not None:
        err = (fin - truth) ** 2
        out[f"{prefix}_mse"] = float(err.mean()) if fin.size else np.nan
        se = err.std(ddof=1) / np.sqrt(fin.size) if fin.size > 1 else 0.0
        out[f"{prefix}_mse_se"] = float(se)
    return out


def _save(fig: Figure, plot: PathLike) -> None:
    if plot is not None:
        FigureCanvasAgg(fig)
        fig.tight_layout()
        fig.savefig(Path(plot), dpi=120)


def fig1(
    *,
    n: int = 2000,
    betas=None,
    epsilon: float = 5.0,
    delta: float | None = None,
    reps: int = 500,
    n_sweeps: int = 100,
    rng: RngLike = 0,
    quick: bool = False,
    progress: bool = False,
    plot: PathLike = None,
) -> pd.DataFrame:
    """Fig. 1: private and non-private MPLE over β (one ER graph, ``reps`` outcomes per β).

    Default β grid ``0, 0.1, ..., 2``; ``delta`` defaults to ``1/n``. Columns: ``beta``,
    ``mple_mean/sd/mse/...``, ``priv_mean/sd/mse/...``, ``priv_at_zero`` (share of boundary 0).

    >>> df = fig1(quick=True, rng=0)
    >>> list(df["beta"])
    [0.0, 1.0, 2.0]
    """
    if quick:
        n, reps, n_sweeps, betas = 60, 20, 20, [0.0, 1.0, 2.0]
    n, reps = _positive(n, "n"), _positive(reps, "reps")
    betas = np.round(np.arange(0.0, 2.0001, 0.1), 10) if betas is None else np.asarray(betas)
    delta = 1.0 / n if delta is None else float(delta)
    gen = as_generator(rng)
    p = n ** (-1 / 3)
    J = _er_coupling(n, p, gen)
    rows = []
    for beta in tqdm(betas, disable=not progress, desc="fig1: beta"):
        S = gibbs_ising(J, n_chains=reps, n_sweeps=n_sweeps, rng=gen, beta=float(beta))
        priv = prising_batch(S, J, epsilon, delta, gen)
        rows.append(
            {
                "beta": float(beta),
                "n": n,
                "epsilon": epsilon,
                "delta": delta,
                "reps": reps,
                **_summ(_mple(S, J), "mple", float(beta)),
                **_summ(priv, "priv", float(beta)),
                "priv_at_zero": float(np.mean(priv == 0)),
            }
        )
    df = pd.DataFrame(rows)
    if plot is not None:
        fig = Figure(figsize=(5, 4))
        ax = fig.add_subplot()
        ax.plot([0, betas.max()], [0, betas.max()], "k--", lw=1, label="truth")
        _estimates_panel(ax, df, 0.01, f"PrIsing (ε={epsilon:g}, δ=1/n)")
        ax.set(xlabel="β", ylabel="estimate (mean ± sd)", title=f"ER n={n}, p=n^(-1/3)")
        ax.legend()
        _save(fig, plot)
    return df


def _estimates_panel(ax, df: pd.DataFrame, offset: float, private_label: str) -> None:
    """Mean ± sd of the non-private and private estimates against β, side by side."""
    ax.errorbar(
        df.beta - offset,
        df.mple_mean,
        df.mple_sd,
        fmt="o",
        ms=3,
        capsize=2,
        label="non-private MPLE",
    )
    ax.errorbar(
        df.beta + offset, df.priv_mean, df.priv_sd, fmt="s", ms=3, capsize=2, label=private_label
    )


def _mse_table(settings, betas, epsilons, reps, n_sweeps, gen, progress, label):
    """Rows (setting, beta, epsilon, mse) for ER settings given as (key, n, p_n)."""
    rows = []
    todo = [(s, b) for s in settings for b in betas]
    for (key, n, p), beta in tqdm(todo, disable=not progress, desc=label):
        J = _er_coupling(n, p, gen)
        S = gibbs_ising(J, n_chains=reps, n_sweeps=n_sweeps, rng=gen, beta=float(beta))
        base = {"key": key, "n": n, "p_n": p, "beta": float(beta), "reps": reps}
        rows.append({**base, "epsilon": np.inf, **_summ(_mple(S, J), "est", float(beta))})
        for eps in epsilons:
            priv = prising_batch(S, J, float(eps), 1.0 / n, gen)
            rows.append({**base, "epsilon": float(eps), **_summ(priv, "est", float(beta))})
    return pd.DataFrame(rows)


def _mse_plot(df: pd.DataFrame, xcol: str, xlabel: str, plot: PathLike, logx: bool) -> None:
    if plot is None:
        return
    betas = sorted(df.beta.unique())
    fig = Figure(figsize=(5 * len(betas), 4))
    for k, beta in enumerate(betas):
        ax = fig.add_subplot(1, len(betas), k + 1)
        sub = df[df.beta == beta]
        for eps in sorted(sub.epsilon.unique()):
            d = sub[sub.epsilon == eps].sort_values(xcol)
            lab = "non-private" if np.isinf(eps) else f"ε = {eps:g}"
            ax.errorbar(d[xcol], d.est_mse, d.est_mse_se, marker="o", ms=3, capsize=2, label=lab)
        ax.set_yscale("log")
        if logx:
            ax.set_xscale("log")
        ax.set(xlabel=xlabel, ylabel="MSE", title=f"β = {beta:g}")
        ax.legend()
    _save(fig, plot)


def mse_vs_n(
    *,
    ns=(250, 500, 1000, 2000),
    betas=(0.5, 1.5),
    epsilons=(5.0, 7.5, 10.0),
    reps: int = 500,
    n_sweeps: int = 100,
    rng: RngLike = 0,
    quick: bool = False,
    progress: bool = False,
    plot: PathLike = None,
) -> pd.DataFrame:
    """Fig. 2-3: MSE of MPLE (``epsilon = inf``) and PrIsing vs ``n``; ER ``p_n = n^{-1/3}``,
    ``δ = 1/n``, a fresh graph per ``(n, β)``. Columns ``n, beta, epsilon, est_mse, ...``.

    >>> df = mse_vs_n(quick=True, rng=0)
    >>> sorted(df["n"].unique().tolist())
    [40, 80]
    """
    if quick:
        ns, epsilons, reps, n_sweeps = (40, 80), (5.0,), 20, 20
    reps = _positive(reps, "reps")
    settings = [(int(n), _positive(int(n), "n"), n ** (-1 / 3)) for n in ns]
    df = _mse_table(
        settings, betas, epsilons, reps, n_sweeps, as_generator(rng), progress, "mse_vs_n"
    ).drop(columns="key")
    _mse_plot(df, "n", "n", plot, logx=True)
    return df


def mse_vs_density(
    *,
    n: int = 2000,
    alphas=None,
    betas=(0.5, 1.5),
    epsilons=(5.0, 7.5, 10.0),
    reps: int = 500,
    n_sweeps: int = 100,
    rng: RngLike = 0,
    quick: bool = False,
    progress: bool = False,
    plot: PathLike = None,
) -> pd.DataFrame:
    """Fig. 4-5: MSE vs ``α`` where ``p_n = n^{-α}`` (Sec. 4.1, item 3), ``δ = 1/n``;
    default ``α = 0.1, 0.2, ..., 0.9``.

    >>> df = mse_vs_density(quick=True, rng=0)
    >>> sorted(df["alpha"].unique().tolist())
    [0.2, 0.6]
    """
    if quick:
        n, alphas, epsilons, reps, n_sweeps = 60, (0.2, 0.6), (5.0,), 20, 20
    n, reps = _positive(n, "n"), _positive(reps, "reps")
    alphas = np.round(np.linspace(0.1, 0.9, 9), 10) if alphas is None else alphas
    settings = [(float(a), n, n ** (-float(a))) for a in alphas]
    df = _mse_table(
        settings, betas, epsilons, reps, n_sweeps, as_generator(rng), progress, "mse_vs_density"
    ).rename(columns={"key": "alpha"})
    _mse_plot(df, "alpha", "α  (p_n = n^-α)", plot, logx=False)
    return df


def _network(name: str):
    if name == "polblogs":
        A, s = load_polblogs(max_degree=50, drop_isolated=True)  # 816 blogs, cf. paper's 815
    elif name == "karate":
        A, s = karate_club()
    else:
        raise DomainError(f"unknown network {name!r}; use 'polblogs' or 'karate'")
    return scale_symmetric(A), s


def real_networks(
    *,
    networks=("polblogs", "karate"),
    betas=None,
    epsilon: float = 5.0,
    cost_epsilons=(5.0, 7.5, 10.0, 20.0, 50.0, 75.0, 100.0),
    reps: int = 500,
    n_sweeps: int = 100,
    rng: RngLike = 0,
    quick: bool = False,
    progress: bool = False,
    plot: PathLike = None,
) -> pd.DataFrame:
    """Sec. 4.2: real graphs with ``J = D^{-1/2} A D^{-1/2}`` (Eq. 7), ``δ = 1/n``.

    Rows with ``experiment == "synthetic"``: ``reps`` Ising outcomes per true ``beta`` (default
    ``0, 0.2, ..., 3.2``), MPLE and PrIsing at ``epsilon`` (Fig. 7 and 10). Rows with
    ``experiment == "cost"``: ``beta`` is the MPLE ``β̂`` of the real outcomes and ``cost`` the
    mean of ``(β̂_priv - β̂)²`` over ``reps`` noise draws, with its standard error (Fig. 8, 11).

    >>> df = real_networks(quick=True, rng=0)
    >>> sorted(df["experiment"].unique().tolist())
    ['cost', 'synthetic']
    """
    if quick:
        betas, cost_epsilons, reps, n_sweeps = [0.5, 2.0], (5.0, 100.0), 20, 20
    reps = _positive(reps, "reps")
    betas = np.round(np.arange(0.0, 3.2001, 0.2), 10) if betas is None else np.asarray(betas)
    gen = as_generator(rng)
    rows = []
    for name in networks:
        J, s = _network(name)
        n = J.shape[0]
        for beta in tqdm(betas, disable=not progress, desc=f"{name}: beta"):
            S = gibbs_ising(J, n_chains=reps, n_sweeps=n_sweeps, rng=gen, beta=float(beta))
            priv = prising_batch(S, J, epsilon, 1.0 / n, gen)
            rows.append(
                {
                    "network": name,
                    "n": n,
                    "experiment": "synthetic",
                    "beta": float(beta),
                    "epsilon": epsilon,
                    **_summ(_mple(S, J), "mple", float(beta)),
                    **_summ(priv, "priv", float(beta)),
                }
            )
        hat = float(_mple(s[None, :], J)[0])
        for eps in cost_epsilons:
            priv = prising_batch(np.tile(s, (reps, 1)), J, float(eps), 1.0 / n, gen)
            sq = (priv - hat) ** 2
            rows.append(
                {
                    "network": name,
                    "n": n,
                    "experiment": "cost",
                    "beta": hat,
                    "epsilon": float(eps),
                    "priv_mean": float(priv.mean()),
                    "priv_sd": float(priv.std(ddof=1)),
                    "cost": float(sq.mean()),
                    "cost_se": float(sq.std(ddof=1) / np.sqrt(reps)),
                }
            )
    df = pd.DataFrame(rows)
    if plot is not None:
        _plot_real(df, networks, epsilon, plot)
    return df


# -- command line -----------------------------------------------------------------------------

EXPERIMENTS = {
    "fig1": (fig1, "Fig. 1: estimates vs beta on an Erdos-Renyi graph"),
    "mse-n": (mse_vs_n, "Fig. 2-3: MSE vs n"),
    "mse-density": (mse_vs_density, "Fig. 4-5: MSE vs edge density alpha"),
    "real": (real_networks, "Sec. 4.2: polblogs and karate club"),
}


def run_experiment(name: str, args) -> pd.DataFrame:
    """Run ``python -m reproductions chakraborty2024 NAME`` (``args``: reps, sweeps, seed,
    quick, progress, out)."""
    fn = EXPERIMENTS[name][0]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kw = {"rng": args.seed, "quick": args.quick, "progress": args.progress}
    if args.reps is not None:
        kw["reps"] = args.reps
    if args.sweeps is not None:
        kw["n_sweeps"] = args.sweeps
    stem = out / f"prising_{name.replace('-', '_')}"
    start = time.perf_counter()
    df = fn(plot=stem.with_suffix(".png"), **kw)
    elapsed = time.perf_counter() - start
    df.to_csv(stem.with_suffix(".csv"), index=False)
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"[{name}] {elapsed:.1f} s; wrote {stem}.csv and {stem}.png")
    return df


def _plot_real(df: pd.DataFrame, networks, epsilon: float, plot: PathLike) -> None:
    """Fig. 7/8 (10/11) panels of :func:`real_networks`: estimates vs β, cost vs ε."""
    fig = Figure(figsize=(5 * len(networks), 8))
    for k, name in enumerate(networks):
        syn = df[(df.network == name) & (df.experiment == "synthetic")]
        cost = df[(df.network == name) & (df.experiment == "cost")]
        ax = fig.add_subplot(2, len(networks), k + 1)
        ax.plot(syn.beta, syn.beta, "k--", lw=1)
        _estimates_panel(ax, syn, 0.02, f"PrIsing (ε={epsilon:g})")
        ax.set(xlabel="β", ylabel="estimate", title=f"{name} (n={int(syn.n.iloc[0])})")
        ax.legend()
        ax = fig.add_subplot(2, len(networks), len(networks) + k + 1)
        ax.errorbar(cost.epsilon, cost.cost, cost.cost_se, marker="o", capsize=2)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="ε",
            ylabel="E[(β̂_priv − β̂)²]",
            title=f"{name}: cost of privacy, β̂ = {cost.beta.iloc[0]:.3g}",
        )
    _save(fig, plot)
