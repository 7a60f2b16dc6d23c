"""Experiments for Zhang, Kamath, Kulkarni & Wu (2020): ``python -m reproductions zhang2020 ...``.

* ``recovery``: ``max |A - A_hat|`` vs ``n`` for Ising models on random bounded-degree graphs,
  several ``rho``, with the non-private reference (Alg. 2 at ``rho = inf``) on the same data.
* ``separation``: the ``n`` needed for a fixed accuracy as ``p`` grows, for zCDP parameter
  learning (Alg. 2; theory ``sqrt(p)``) and ``(eps, delta)`` structure learning (Sec. 6;
  theory ``log p``), both curves on one plot with the fitted exponents printed.
* ``pairwise``: Alg. 3 on a pairwise model over ``[3]``, private and not.
* ``pmw``: PMW's max / mean error on all parities of order ``<= 2`` vs ``rho`` (and mbi's MWEM
  when it is installed and has one).

Every learner is built through the registry; results go to a CSV and a PNG in ``--out``.

>>> A, theta = random_ising(6, degree=2, rng=0)
>>> bool(np.allclose(A, A.T) and np.all((A != 0).sum(1) == 2))
True
"""

from __future__ import annotations

import importlib.metadata
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from pgm_dp.ising import gibbs_ising
from pgm_dp.learners import make
from pgm_dp.learners.zhang.pmw import parity_queries, pmw_release
from pgm_dp.learners.zhang.structure import learn_structure
from pgm_dp.models import ising, pairwise
from pgm_dp.privacy import ZCDP
from pgm_dp.rng import RngLike, as_generator

__all__ = [
    "fit_exponent",
    "random_ising",
    "run_pairwise",
    "run_pmw",
    "run_recovery",
    "run_separation",
    "run_tmrf",
    "sample_ising",
]


def random_ising(
    p: int, degree: int = 3, rng: RngLike = None, low: float = 0.3, high: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """A random ``degree``-regular graph with couplings ``±U(low, high)`` and zero fields."""
    gen = as_generator(rng)
    g = nx.random_regular_graph(degree, p, seed=int(gen.integers(2**31)))
    A = np.zeros((p, p))
    for i, j in g.edges():
        A[i, j] = A[j, i] = gen.choice([-1.0, 1.0]) * gen.uniform(low, high)
    return A, np.zeros(p)


def sample_ising(A, theta, n: int, rng: RngLike = None, sweeps: int = 60) -> np.ndarray:
    """``n`` independent Gibbs chains after ``sweeps`` sweeps (Def. 2.1, ``A = beta J``)."""
    return gibbs_ising(A, theta, n_chains=n, n_sweeps=sweeps, rng=rng)


def _codes(z: np.ndarray) -> np.ndarray:
    return ((z + 1) // 2).astype(np.int64)


def run_recovery(ps, ns, rhos, *, lam=1.5, max_steps=500, seed=0, progress=False, out_dir=None):
    """Rows ``(p, n, rho, max_error)``; ``rho = inf`` is the non-private reference."""
    rows = []
    grid = [(p, n) for p in ps for n in ns]
    for p, n in tqdm(grid, desc="zhang recovery", disable=not progress):
        A, theta = random_ising(p, rng=seed + p)
        z = sample_ising(A, theta, n, rng=seed + n)
        mrf = ising(A, theta)
        for rho in [*rhos, math.inf]:
            name = "zhang_ising_np" if math.isinf(rho) else "zhang_ising"
            budget = None if math.isinf(rho) else ZCDP(rho)
            fit = make(name, lam=lam, max_steps=max_steps).fit(_codes(z), mrf, budget=budget,
                                                               rng=seed)  # fmt: skip
            err = float(np.max(np.abs(fit.info["A"] - A)))
            rows.append({"p": p, "n": n, "rho": rho, "max_error": err, "steps": fit.info["steps"]})
    df = pd.DataFrame(rows)
    if out_dir is not None:
        _save(df, out_dir, "zhang_recovery", lambda ax: _plot_recovery(ax, df))
    return df


def _plot_recovery(ax, df):
    for (p, rho), g in df.groupby(["p", "rho"]):
        style = "--" if math.isinf(rho) else "-"
        ax.plot(g["n"], g["max_error"], style, marker="o", label=f"p={p}, rho={rho:g}")
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="max |A - A_hat|",
           title="Alg. 2: parameter recovery (dashed: non-private)")  # fmt: skip
    ax.legend(fontsize=6)


def _smallest_n(ns, ok) -> float:
    """The first ``n`` of the grid for which ``ok(n)`` holds (``nan`` if none)."""
    for n in ns:
        if ok(n):
            return float(n)
    return float("nan")


def fit_exponent(ps, ns) -> tuple[float, float]:
    """Least-squares slopes of ``log n`` on ``log p`` (power) and of ``n`` on ``log p``.

    >>> [round(v, 3) for v in fit_exponent([4, 16, 64], [20, 40, 80])]
    [0.5, 21.64]
    """
    lp, ln = np.log(np.asarray(ps, float)), np.asarray(ns, float)
    return float(np.polyfit(lp, np.log(ln), 1)[0]), float(np.polyfit(lp, ln, 1)[0])


def _param_ok(p, n, *, rho, alpha, lam, trials, seed) -> bool:
    wins = 0
    for r in range(trials):
        A, theta = random_ising(p, degree=2, rng=seed + 97 * r + p, low=0.4, high=0.4)
        z = sample_ising(A, theta, n, rng=seed + r + n)
        fit = make("zhang_ising", lam=lam).fit(_codes(z), ising(A, theta), budget=ZCDP(rho),
                                               rng=seed + r)  # fmt: skip
        wins += np.max(np.abs(fit.info["A"] - A)) <= alpha
    return wins * 3 >= 2 * trials


def _structure_ok(p, n, *, eps, delta, lam, trials, seed) -> bool:
    wins = 0
    for r in range(trials):
        A, theta = random_ising(p, degree=2, rng=seed + 97 * r + p, low=0.4, high=0.4)
        z = sample_ising(A, theta, n, rng=seed + r + n)
        truth = frozenset((i, j) for i, j in zip(*np.nonzero(np.triu(A)), strict=True))
        res = learn_structure(z, eps, delta, eta=0.4, lam=lam, steps=60, rng=seed + r)
        wins += res.edges == truth
    return wins * 3 >= 2 * trials


def run_separation(ps, ns_param, ns_struct, *, rho=0.05, alpha=0.2, eps=1.0, delta=1e-3,
                   lam=1.2, trials=3, seed=0, progress=False, out_dir=None):  # fmt: skip
    """``n*`` (smallest ``n`` of the grid with success in ``>= 2/3`` of ``trials``) per ``p``:
    parameter learning (``max |A - A_hat| <= alpha`` at ``rho``) and structure learning (exact
    graph at ``(eps, delta)``); prints the fitted exponents."""
    rows = []
    for p in tqdm(ps, desc="zhang separation", disable=not progress):
        n_param = _smallest_n(ns_param, lambda n, p=p: _param_ok(
            p, n, rho=rho, alpha=alpha, lam=lam, trials=trials, seed=seed))  # fmt: skip
        n_struct = _smallest_n(ns_struct, lambda n, p=p: _structure_ok(
            p, n, eps=eps, delta=delta, lam=lam, trials=trials, seed=seed))  # fmt: skip
        rows.append({"p": p, "n_param_zcdp": n_param, "n_structure_approx": n_struct})
    df = pd.DataFrame(rows)
    for col in ("n_param_zcdp", "n_structure_approx"):
        ok = df[col].notna()
        power, per_log = fit_exponent(df["p"][ok], df[col][ok]) if ok.sum() > 1 else (np.nan,) * 2
        df.attrs[col] = {"power_exponent": power, "slope_per_log_p": per_log}
        print(f"{col}: n* ~ p^{power:.2f}; n* ~ {per_log:.0f} log p")
    if out_dir is not None:
        _save(df, out_dir, "zhang_separation", lambda ax: _plot_separation(ax, df))
    return df


def _plot_separation(ax, df):
    for col, label in (("n_param_zcdp", "zCDP parameters (Alg. 2)"),
                       ("n_structure_approx", "(eps, delta) structure (Sec. 6)")):  # fmt: skip
        e = df.attrs.get(col, {}).get("power_exponent", float("nan"))
        ax.plot(df["p"], df[col], marker="o", label=f"{label}: n* ~ p^{e:.2f}")
    ax.set(xscale="log", yscale="log", xlabel="p", ylabel="n for fixed accuracy",
           title="Table 1 separation, measured")  # fmt: skip
    ax.legend(fontsize=7)


def _centered(p: int, k: int, gen) -> np.ndarray:
    W = np.zeros((p, p, k, k))
    for i in range(p - 1):
        w = gen.uniform(-0.8, 0.8, (k, k))
        w = w - w.mean(0, keepdims=True) - w.mean(1, keepdims=True) + w.mean()
        W[i, i + 1], W[i + 1, i] = w, w.T
    return W


def run_pairwise(p=5, k=3, ns=(5000, 20000), rhos=(1.0, 10.0), *, lam=1.5, seed=0,
                 progress=False, out_dir=None):  # fmt: skip
    """Alg. 3 on a chain over ``[k]``: rows ``(n, rho, max_error)`` (``rho = inf``: reference)."""
    gen = as_generator(seed)
    W = _centered(p, k, gen)
    truth = pairwise(W, np.zeros((p, k)))
    rows = []
    for n in tqdm(ns, desc="zhang pairwise", disable=not progress):
        data = truth.sample(n, rng=gen)
        for rho in [*rhos, math.inf]:
            name = "zhang_pairwise_np" if math.isinf(rho) else "zhang_pairwise"
            budget = None if math.isinf(rho) else ZCDP(rho)
            fit = make(name, lam=lam, max_steps=300).fit(data, truth, budget=budget, rng=seed)
            rows.append({"n": n, "rho": rho, "max_error": float(np.max(np.abs(fit.info["W"] - W)))})
    df = pd.DataFrame(rows)
    if out_dir is not None:
        _save(df, out_dir, "zhang_pairwise", lambda ax: _plot_lines(ax, df, "Alg. 3, k=3"))
    return df


def _plot_lines(ax, df, title):
    for rho, g in df.groupby("rho"):
        ax.plot(g["n"], g["max_error"], marker="o", label=f"rho={rho:g}")
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="max error", title=title)
    ax.legend(fontsize=7)


def run_tmrf(ns=(5000, 20000), rhos=(1.0, 10.0), *, seed=0, progress=False, out_dir=None):
    """Alg. 4 (l1) and Alg. 5 (l-inf) on a 4-variable third-order model
    ``h = 0.6 z0 z1 z2 + 0.3 z0 z1 - 0.5 z2 z3``: max error over h's maximal monomials."""
    from pgm_dp.domain import Domain
    from pgm_dp.models import MarkovRandomField

    s = np.array([-1.0, 1.0])
    g = np.meshgrid(s, s, s, indexing="ij")
    truth = MarkovRandomField(Domain([f"X{i}" for i in range(4)], [2] * 4),
                              [("X0", "X1", "X2"), ("X2", "X3")],
                              [0.6 * g[0] * g[1] * g[2] + 0.3 * g[0] * g[1],
                               -0.5 * np.outer(s, s)])  # fmt: skip
    target = {(0, 1, 2): 0.6, (2, 3): -0.5}
    rows = []
    for n in tqdm(ns, desc="zhang tmrf", disable=not progress):
        data = truth.sample(n, rng=seed + n)
        for norm in ("l1", "linf"):
            for rho in [*rhos, math.inf]:
                name = "zhang_tmrf_np" if math.isinf(rho) else "zhang_tmrf"
                budget = None if math.isinf(rho) else ZCDP(rho)
                fit = make(name, t=3, lam=2.0, norm=norm, max_steps=300).fit(
                    data, truth, budget=budget, rng=seed
                )
                u = fit.info["coefficients"]
                err = max(abs(u.get(k, 0.0) - v) for k, v in target.items())
                rows.append({"n": n, "norm": norm, "rho": rho, "max_error": err})
    df = pd.DataFrame(rows)
    if out_dir is not None:
        _save(df, out_dir, "zhang_tmrf", lambda ax: _plot_lines(ax, df[df.norm == "linf"],
                                                                "Alg. 5, t = 3"))  # fmt: skip
    return df


def _mbi_mwem_error(z, qs, rho, seed):
    """mbi's MWEM+PGM on the parities, or the reason it cannot run (a string)."""
    try:
        import mbi  # noqa: F401
    except ImportError as err:
        return f"mbi not installed ({err})"
    import pkgutil

    if any("mwem" in m.name.lower() for m in pkgutil.walk_packages(mbi.__path__, "mbi.")):
        return "mbi has an MWEM module, but this experiment does not call it yet"
    return (
        f"mbi {importlib.metadata.version('mbi')} is installed but has no MWEM: the pip package "
        "holds the estimation side (marginal oracles, mirror descent); MWEM+PGM is only an "
        "example script in the private-pgm repository. Skipped."
    )


def run_pmw(p=8, t=2, n=5000, rhos=(0.01, 0.1, 1.0, 10.0), *, seed=0, out_dir=None):
    """PMW's max and mean parity error vs ``rho`` on a random Ising model's samples."""
    A, theta = random_ising(p, rng=seed)
    z = sample_ising(A, theta, n, rng=seed + 1)
    qs = parity_queries(p, t)
    truth = np.array([np.prod(z[:, list(q)], axis=1).mean() for q in qs])
    rows = []
    for rho in rhos:
        err = np.abs(pmw_release(z, qs, ZCDP(rho), rng=seed).answers - truth)
        rows.append({"rho": rho, "max_error": err.max(), "mean_error": err.mean()})
    df = pd.DataFrame(rows)
    df.attrs["mbi"] = _mbi_mwem_error(z, qs, rhos, seed)
    print(f"mbi MWEM: {df.attrs['mbi']}")
    if out_dir is not None:
        _save(df, out_dir, "zhang_pmw", lambda ax: _plot_pmw(ax, df))
    return df


def _plot_pmw(ax, df):
    ax.plot(df["rho"], df["max_error"], marker="o", label="PMW max")
    ax.plot(df["rho"], df["mean_error"], marker="s", label="PMW mean")
    ax.set(xscale="log", yscale="log", xlabel="rho", ylabel="parity error", title="PMW")
    ax.legend(fontsize=7)


def _save(df, out_dir, stem, draw):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{stem}.csv", index=False)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    draw(ax)
    for axis in (ax.xaxis, ax.yaxis):  # log axes: plain labels at 1, 2 and 5 per decade
        if axis.get_scale() == "log":
            axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    fig.tight_layout()
    fig.savefig(out / f"{stem}.png", dpi=120)
    plt.close(fig)
