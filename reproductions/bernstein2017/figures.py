"""Figures 1(a)-(c) and 3(a) of Bernstein et al. (ICML 2017), Sec. 3.1 and Sec. 4.1.

Each function draws the true model (Dirichlet(1) edge potentials, Sec. 4.1) from ``rng``,
samples populations of ``N`` records, releases their clique tables with the Laplace mechanism
(``PureDP(epsilon)``, scale ``|C| / epsilon``, Eq. 3) and returns a tidy
:class:`pandas.DataFrame`; given ``out_dir`` it also writes ``bernstein_<fig>.png`` there
(matplotlib's Agg canvas; the global backend is not touched). A *trial* is a fresh population
and release; the epsilons of one trial share the population.

* :func:`fig1a` — MSE of the learned marginals vs ``N`` (third-order chain, ``T = |X| = 10``),
  with the two terms of Eq. (4): ``O(1/N)`` sampling and ``O(1/N²)`` privacy error.
* :func:`fig1b` — KL vs ``N`` for Naive MLE with and without projection onto the simplex
  (ER graph, ``T = 10``, ``|X| = 20``, ``ε = 0.5``).
* :func:`fig1c` — KL vs ``λ`` learning from the true and from the noisy statistics
  (chain, ``T = |X| = 10``, ``ε = 0.1``).
* :func:`fig3a` — true vs inferred edge marginals of Naive MLE, CGM and Non-private MLE
  (one ER graph, ``T = 10``, ``|X| = 20``, one release).

The paper does not give the ``N`` grid of Fig. 1, the ``N`` of Fig. 1(c) and 3(a), the ``λ``
grid, the axis of Fig. 1(b) nor the ``ε`` of Fig. 3(a). Our defaults: ``N`` = 1e3, 3e3, ...,
1e6 (Fig. 1a, 1b), KL vs ``N`` in Fig. 1(b), ``N = 1e5`` and ``λ = 1e-7, 1e-6, ..., 1``
(Fig. 1c), ``N = 1e5`` and ``ε = 0.1`` (Fig. 3a), three trials per setting (the paper has 25
in Fig. 2): each default run takes a few minutes at most on one core. Learners use their own
defaults (Naive MLE: projection, ``λ = 1e-4``) unless the figure varies them. :func:`run_figure`
runs one figure for ``python -m reproductions bernstein2017 figures``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from pgm_dp.compare.metrics import kl_divergence, marginal_mse
from pgm_dp.errors import ConvergenceWarning
from pgm_dp.learners import labels
from pgm_dp.learners.baselines import NonPrivateMLE
from pgm_dp.learners.cgm import CGMEM
from pgm_dp.learners.naive_mle import NaiveMLE, noisy_pseudo_marginals
from pgm_dp.models import erdos_renyi, third_order_chain
from pgm_dp.models.mrf import MarkovRandomField
from pgm_dp.plotting import median_errorbar
from pgm_dp.privacy import PureDP, release_marginals
from pgm_dp.rng import RngLike, as_generator

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["fig1a", "fig1b", "fig1c", "fig3a", "run_figure", "FIGURES"]

#: Default population sizes of Fig. 1(a) and 1(b): half-decades from 1e3 to 1e6.
N_GRID = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
#: Default ``λ`` grid of Fig. 1(c) (per-record scale of :func:`~pgm_dp.learners.mle.fit_marginals`).
LAMBDA_GRID = (1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)

OutDir = str | Path | None


def _marginals(mrf: MarkovRandomField) -> dict:
    return {c: np.asarray(t, dtype=np.float64) for c, t in mrf.marginals().items()}


def _check(Ns: Sequence[int], trials: int) -> list[int]:
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if not Ns or any(int(n) != n or n < 1 for n in Ns):
        raise ValueError(f"population sizes must be positive integers, got {Ns!r}")
    return [int(n) for n in Ns]


def _figure(figsize: tuple[float, float]) -> Figure:
    """A matplotlib figure on the Agg canvas (matplotlib is imported only when plotting)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, out_dir: OutDir, name: str) -> None:
    if out_dir is None:
        return
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / f"bernstein_{name}.png", dpi=120)


def _log_axes(ax: Axes, xlabel: str, ylabel: str, title: str) -> None:
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=8)


def _kl_plot(df: pd.DataFrame, by: str, lines, x: str, labels, out_dir: OutDir, name: str) -> None:
    """Median KL (with its range) against ``x``, one line per ``(value of by, style, label)``
    in ``lines``; ``labels``: the x-axis label and the title. Nothing without ``out_dir``."""
    if out_dir is None:
        return
    fig = _figure((5.5, 4.2))
    ax = fig.add_subplot()
    for value, style, label in lines:
        median_errorbar(ax, df[df[by] == value], x, "kl", label, fmt=style)
    _log_axes(ax, labels[0], "KL from true distribution", labels[1])
    _save(fig, out_dir, name)


def fig1a(
    *,
    T: int = 10,
    k: int = 10,
    Ns: Sequence[int] = N_GRID,
    epsilons: Sequence[float] = (0.1, 1.0),
    trials: int = 3,
    l2: float = 1e-4,
    rng: RngLike = 0,
    progress: bool = False,
    out_dir: OutDir = None,
) -> pd.DataFrame:
    """Fig. 1(a): MSE of marginals vs ``N`` on a third-order chain (Sec. 3.1, Prop. 4).

    Per row (``N``, ``epsilon``, ``trial``): ``mse_naive_mle``, the MSE over all edge-marginal
    cells of the model learned by ``NaiveMLE(project=True, l2=l2)``; ``mse_noisy``, that of
    the raw pseudo-marginals ``y / N``; ``eq4_sampling`` and ``eq4_privacy``, the two terms
    of Eq. (4) averaged over the cells (their sum is the expected ``mse_noisy``). At large
    ``N`` and ``ε`` the bias of the ``λ ||θ||²`` regulariser levels ``mse_naive_mle`` off
    above Eq. (4) while ``mse_noisy`` keeps falling.

    >>> df = fig1a(T=4, k=2, Ns=(100,), epsilons=(1.0,))
    >>> bool(df.mse_noisy.iloc[0] > 0)
    True
    """
    Ns = _check(Ns, trials)
    gen = as_generator(rng)
    truth = third_order_chain(T, k, gen)
    mu = _marginals(truth)
    mean_var = float(np.mean(np.concatenate([(m * (1 - m)).ravel() for m in mu.values()])))
    rows = []
    bar = tqdm(total=len(Ns) * trials * len(epsilons), desc="fig1a", disable=not progress)
    for N in Ns:
        for trial in range(trials):
            data = truth.sample(N, gen)
            for eps in epsilons:
                release = release_marginals(
                    data, truth, budget=PureDP(eps), rng=gen, total="public"
                )
                start = time.perf_counter()
                fit = NaiveMLE(project=True, l2=l2).fit(release, truth)
                seconds = time.perf_counter() - start
                scale = release.sensitivity / eps
                rows.append(
                    {
                        "T": T,
                        "k": k,
                        "N": N,
                        "epsilon": float(eps),
                        "trial": trial,
                        "mse_naive_mle": marginal_mse(_marginals(fit.model), mu),
                        "mse_noisy": marginal_mse(noisy_pseudo_marginals(release, False), mu),
                        "eq4_sampling": mean_var / N,
                        "eq4_privacy": 2 * scale**2 / N**2,
                        "seconds": seconds,
                    }
                )
                bar.update(1)
    bar.close()
    df = pd.DataFrame(rows)
    if out_dir is not None:
        fig = _figure((5.5, 4.2))
        ax = fig.add_subplot()
        mean = df.groupby(["epsilon", "N"]).mean(numeric_only=True).reset_index()
        for i, eps in enumerate(sorted(mean.epsilon.unique())):
            d, c = mean[mean.epsilon == eps], f"C{i}"
            ax.plot(d.N, d.mse_naive_mle, "o-", color=c, label=f"Naive MLE, ε={eps:g}")
            ax.plot(d.N, d.mse_noisy, "x--", color=c, alpha=0.7, label=f"y/N, ε={eps:g}")
            ax.plot(d.N, d.eq4_privacy, ":", color=c, label=f"2|C|²/(N²ε²) (slope −2), ε={eps:g}")
        ref = mean.drop_duplicates("N")
        ax.plot(ref.N, ref.eq4_sampling, "k-.", lw=1, label="μ(1−μ)/N (slope −1)")
        _log_axes(ax, "N (population size)", "MSE of marginals", f"chain T={T}, |X|={k}")
        _save(fig, out_dir, "fig1a")
    return df


def fig1b(
    *,
    T: int = 10,
    k: int = 20,
    p: float = 0.3,
    Ns: Sequence[int] = N_GRID,
    epsilon: float = 0.5,
    trials: int = 3,
    l2: float = 1e-4,
    rng: RngLike = 0,
    progress: bool = False,
    out_dir: OutDir = None,
) -> pd.DataFrame:
    """Fig. 1(b): KL(true || learned) vs ``N`` for ``NaiveMLE(project=True)`` and
    ``NaiveMLE(project=False)`` on one connected ER graph ``G(T, p)`` (Sec. 3.1); both fit
    the same release. Columns ``N, epsilon, trial, project, kl, converged, seconds``.
    """
    Ns = _check(Ns, trials)
    gen = as_generator(rng)
    truth = erdos_renyi(T, k, p=p, rng=gen)
    rows = []
    bar = tqdm(total=len(Ns) * trials, desc="fig1b", disable=not progress)
    for N in Ns:
        for trial in range(trials):
            release = release_marginals(
                truth.sample(N, gen), truth, budget=PureDP(epsilon), rng=gen, total="public"
            )
            for project in (True, False):
                start = time.perf_counter()
                with warnings.catch_warnings():  # tabulated in the "converged" column
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    fit = NaiveMLE(project=project, l2=l2).fit(release, truth)
                rows.append(
                    {
                        "T": T,
                        "k": k,
                        "N": N,
                        "epsilon": float(epsilon),
                        "trial": trial,
                        "project": project,
                        "kl": kl_divergence(truth, fit.model),
                        "converged": bool(fit.info["converged"]),
                        "seconds": time.perf_counter() - start,
                    }
                )
            bar.update(1)
    bar.close()
    df = pd.DataFrame(rows)
    lines = [(True, "o-", "Naive MLE, projected"), (False, "s--", "Naive MLE, not projected")]
    title = f"ER T={T}, |X|={k}, ε={epsilon:g}"
    _kl_plot(df, "project", lines, "N", ("N (population size)", title), out_dir, "fig1b")
    return df


def fig1c(
    *,
    T: int = 10,
    k: int = 10,
    N: int = 100_000,
    epsilon: float = 0.1,
    lambdas: Sequence[float] = LAMBDA_GRID,
    trials: int = 3,
    rng: RngLike = 0,
    progress: bool = False,
    out_dir: OutDir = None,
) -> pd.DataFrame:
    """Fig. 1(c): KL(true || learned) vs the regulariser ``λ`` (Sec. 3.1), learning from the
    true statistics (``NonPrivateMLE(l2=λ, tol=1e-8)``) and from the projected noisy ones
    (``NaiveMLE(l2=λ)``), on a third-order chain. Columns ``lam, statistics`` (``"true"`` or
    ``"noisy"``), ``kl, converged, iterations, seconds, N, epsilon, trial``.
    """
    _check([N], trials)
    gen = as_generator(rng)
    truth = third_order_chain(T, k, gen)
    rows = []
    bar = tqdm(total=trials * len(lambdas), desc="fig1c", disable=not progress)
    for trial in range(trials):
        data = truth.sample(int(N), gen)
        release = release_marginals(data, truth, budget=PureDP(epsilon), rng=gen, total="public")
        for lam in lambdas:
            for stats in ("true", "noisy"):
                start = time.perf_counter()
                with warnings.catch_warnings():  # tabulated in the "converged" column
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    if stats == "true":
                        fit = NonPrivateMLE(l2=lam, tol=1e-8).fit(data, truth)
                    else:
                        fit = NaiveMLE(project=True, l2=lam).fit(release, truth)
                rows.append(
                    {
                        "lam": float(lam),
                        "statistics": stats,
                        "kl": kl_divergence(truth, fit.model),
                        "converged": bool(fit.info["converged"]),
                        "iterations": int(fit.info["iterations"]),
                        "seconds": time.perf_counter() - start,
                        "T": T,
                        "k": k,
                        "N": int(N),
                        "epsilon": float(epsilon),
                        "trial": trial,
                    }
                )
            bar.update(1)
    bar.close()
    df = pd.DataFrame(rows)
    lines = [
        ("true", "o-", "true statistics"),
        ("noisy", "s--", f"noisy statistics (ε={epsilon:g})"),
    ]
    labels = ("λ (regularisation, per record)", f"chain T={T}, |X|={k}, N={int(N):,}")
    _kl_plot(df, "statistics", lines, "lam", labels, out_dir, "fig1c")
    return df


def fig3a(
    *,
    T: int = 10,
    k: int = 20,
    p: float = 0.3,
    N: int = 100_000,
    epsilon: float = 0.1,
    rng: RngLike = 0,
    progress: bool = False,
    out_dir: OutDir = None,
) -> pd.DataFrame:
    """Fig. 3(a): true vs inferred edge marginals on one ER graph from one release (Sec. 4.1).

    One row per learner (``naive``, ``cgm``, ``nonprivate``; defaults of each learner), edge
    and cell: ``learner, clique, cell, true, inferred``, plus the learner's ``kl`` and
    ``seconds``. Naive MLE and CGM fit the same release; Non-private fits the records.
    """
    _check([N], 1)
    gen = as_generator(rng)
    truth = erdos_renyi(T, k, p=p, rng=gen)
    mu = _marginals(truth)
    data = truth.sample(int(N), gen)
    release = release_marginals(data, truth, budget=PureDP(epsilon), rng=gen, total="public")
    learners: dict[str, Callable[[], object]] = {
        "naive": lambda: NaiveMLE().fit(release, truth),
        "cgm": lambda: CGMEM().fit(release, truth),
        "nonprivate": lambda: NonPrivateMLE().fit(data, truth),
    }
    frames = []
    for name, fit_fn in tqdm(learners.items(), desc="fig3a", disable=not progress):
        start = time.perf_counter()
        model = fit_fn().model
        seconds = time.perf_counter() - start
        learned = _marginals(model)
        kl = kl_divergence(truth, model)
        for c in truth.cliques:
            frames.append(
                pd.DataFrame(
                    {
                        "learner": name,
                        "clique": "-".join(map(str, c)),
                        "cell": np.arange(mu[c].size),
                        "true": mu[c].ravel(),
                        "inferred": learned[c].ravel(),
                        "kl": kl,
                        "seconds": seconds,
                    }
                )
            )
    df = pd.concat(frames, ignore_index=True)
    df = df.assign(T=T, k=k, N=int(N), epsilon=float(epsilon))
    if out_dir is not None:
        fig = _figure((5, 5))
        ax = fig.add_subplot()
        for name, marker in (("naive", "o"), ("cgm", "^"), ("nonprivate", "s")):
            d = df[df.learner == name]
            label = f"{labels()[name]} (KL {d.kl.iloc[0]:.3g})"
            ax.scatter(d.true, d.inferred, s=6, marker=marker, alpha=0.5, label=label)
        hi = float(max(df.true.max(), df.inferred.max()))
        ax.plot([0, hi], [0, hi], "k-", lw=1, label="y = x")
        ax.set(xlim=(0, hi), ylim=(0, hi), xlabel="True marginals", ylabel="Inferred marginals")
        ax.set_title(f"ER T={T}, |X|={k}, N={int(N):,}, ε={epsilon:g}")
        ax.legend(fontsize=8, markerscale=2)
        _save(fig, out_dir, "fig3a")
    return df


# -- command line -----------------------------------------------------------------------------

_QUICK_N = {"T": 4, "k": 3, "Ns": (10**3, 10**5), "trials": 1}
FIGURES: dict[str, tuple[Callable[..., pd.DataFrame], str, dict]] = {
    "fig1a": (fig1a, "Fig. 1(a): MSE of marginals vs N", _QUICK_N),
    "fig1b": (fig1b, "Fig. 1(b): projection vs N", _QUICK_N),
    "fig1c": (
        fig1c,
        "Fig. 1(c): KL vs lambda",
        {"T": 4, "k": 3, "lambdas": (1e-3, 0.1), "trials": 1},
    ),
    "fig3a": (fig3a, "Fig. 3(a): true vs inferred marginals", {"T": 4, "k": 3, "N": 5_000}),
}


def run_figure(args: argparse.Namespace) -> pd.DataFrame:
    """Run ``python -m reproductions bernstein2017 figures`` (``args``: figure, quick,
    trials, seed, progress, out)."""
    fn, _, quick = FIGURES[args.figure]
    kw: dict = dict(quick) if args.quick else {}
    if args.trials is not None and args.figure != "fig3a":
        kw["trials"] = args.trials
    start = time.perf_counter()
    df = fn(rng=args.seed, progress=args.progress, out_dir=args.out, **kw)
    elapsed = time.perf_counter() - start
    stem = Path(args.out) / f"bernstein_{args.figure}"
    df.to_csv(stem.with_suffix(".csv"), index=False)
    if args.figure == "fig3a":
        df = df.groupby("learner")[["kl", "seconds"]].first()
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(df.to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"[{args.figure}] {elapsed:.1f} s; wrote {stem}.csv and {stem}.png")
    return df
