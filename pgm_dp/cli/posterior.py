"""``pgm-dp posterior``: a noise-aware posterior of a release, with its diagnostics.

Reads a release JSON (``pgm-dp release``), fits :func:`pgm_dp.bayes.posterior` over the
release's cliques (NUTS by default; a release over a few variables of a wide domain is fitted
on those variables' joint) and writes into ``--out``: the posterior as ArviZ netCDF
(``posterior.nc``, an ``xarray.DataTree``: ``xarray.open_datatree``), ``arviz_stats.summary``
of the clique marginals and of the data's tables (``summary.csv``, full precision: means, sd,
equal-tailed intervals at ``--level``, 90 % by default, R-hat, bulk / tail ESS, MCSE) and the
posterior predictive check (the sampled posterior p-value,
:func:`~pgm_dp.bayes.predictive_check`; p-values printed; ``ppc.png``, one panel per table,
where matplotlib, the ``plot`` extra, is installed). It prints an R-hat / ESS verdict
(R-hat <= 1.01 and bulk and tail ESS >= 400 on every cell) and which tables the check
flags (p < 0.01).
"""

from __future__ import annotations

from . import _args
from ._data import say

__all__ = ["add_parser", "verdict"]

#: The convergence targets of the verdict (Vehtari et al. 2021: R-hat below 1.01, ESS of a
#: few hundred per quantity).
RHAT_MAX = 1.01
ESS_MIN = 400


def verdict(summary, method: str) -> str:
    """One line on the draws' quality from ``arviz_stats.summary``'s columns ``r_hat``,
    ``ess_bulk`` and ``ess_tail``: for NUTS, converged or not against :data:`RHAT_MAX` and
    :data:`ESS_MIN`; for the Laplace method (independent draws, nothing to converge; over
    thousands of cells R-hat's maximum exceeds 1.01 by chance at a few hundred draws per
    chain) the numbers only."""
    rhat, bulk, tail = (
        float(summary[k].max() if k == "r_hat" else summary[k].min())
        for k in ("r_hat", "ess_bulk", "ess_tail")
    )
    numbers = f"max R-hat {rhat:.4f}, min bulk ESS {bulk:.0f}, min tail ESS {tail:.0f}"
    if method == "laplace":  # independent draws: R-hat's maximum over many cells is noise
        return f"diagnostics: {numbers}: independent draws of the Laplace approximation"
    ok = rhat <= RHAT_MAX and min(bulk, tail) >= ESS_MIN
    if ok:
        return f"diagnostics: {numbers}: converged (R-hat <= {RHAT_MAX}, ESS >= {ESS_MIN})"
    advice = ": run longer chains (--warmup, --draws)"
    return f"diagnostics: {numbers}: NOT converged (R-hat <= {RHAT_MAX}, ESS >= {ESS_MIN}){advice}"


def _run(args) -> None:
    from pathlib import Path

    import arviz_stats

    from .._progress import step
    from ..bayes import plot_check, posterior, predictive_check
    from ..models import MarkovRandomField
    from ..plotting import MISSING_MATPLOTLIB, have_matplotlib
    from ..privacy import NoisyMarginals

    with open(args.release) as fh:
        rel = NoisyMarginals.from_json(fh.read())
    mrf = MarkovRandomField(rel.domain, rel.cliques)
    how = f"{args.method}, covariance {args.covariance}"
    say(f"posterior ({how}) of {len(rel.cliques)} released tables ...")
    step(
        "posterior: the Laplace fit, then compiling the sampler (the first run of a model "
        "size compiles; minutes for a large model)"
    )
    idata = posterior(
        rel,
        mrf,
        method=args.method,
        num_warmup=args.warmup,
        num_samples=args.draws,
        num_chains=args.chains,
        rng=args.seed,
        covariance=args.covariance,
        laplace_noise=args.laplace_noise,
    )
    out = Path(args.out)
    step("posterior: writing the draws, the summary and the predictive check")
    idata.to_netcdf(out / "posterior.nc", engine="h5netcdf")
    sites = [v for v in idata.posterior.data_vars if v.startswith(("marginal:", "table:"))]
    summary = arviz_stats.summary(
        idata, var_names=sites, round_to="none", ci_prob=args.level, ci_kind="eti"
    )
    summary.to_csv(out / "summary.csv")
    check = predictive_check(rel, idata, rng=args.seed)  # the sampled posterior p-value
    written = ["posterior.nc", "summary.csv"]
    if have_matplotlib():
        plot_check(check, out / "ppc.png", title=f"posterior predictive check ({args.method})")
        written.append("ppc.png")
    else:
        say(f"note: no ppc.png ({MISSING_MATPLOTLIB})")
    for clique, p in check.p_values.items():
        say(f"predictive p-value {','.join(map(str, clique))}: {p:.3f}")
    flagged = check.flagged()
    say(f"tables with p < 0.01: {len(flagged)} of {len(check.p_values)}")
    say(verdict(summary, args.method))
    for name in written:
        say(f"written: {out / name}")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "posterior", help="noise-aware posterior of a release, diagnostics", description=__doc__
    )
    p.add_argument("--release", type=_args.release_file, required=True, help="a release JSON")
    p.add_argument(
        "--method",
        choices=["nuts", "laplace"],
        default="nuts",
        help="posterior method: NUTS (default, as the library) or the Laplace approximation",
    )
    p.add_argument(
        "--covariance",
        choices=["auto", "exact", "plugin"],
        default="auto",
        help="the counts' covariance: exact (small models), plug-in (frozen at the MAP; "
        "large models) or auto (exact up to 64 cells and 4096 joint states)",
    )
    p.add_argument(
        "--laplace-noise",
        choices=["auto", "exact", "gaussian"],
        default="auto",
        help="NUTS on the plug-in path: Laplace noise kept exact (latent counts) or a "
        "Gaussian of its variance (auto: exact up to 64 cells)",
    )
    p.add_argument("--draws", type=_args.int_at_least(10), default=1000, help="draws per chain")
    p.add_argument("--warmup", type=_args.int_at_least(0), default=500, help="NUTS warm-up")
    p.add_argument("--chains", type=_args.int_at_least(1), default=4, help="NUTS chains")
    p.add_argument("--seed", type=_args.int_at_least(0), default=0, help="seed of the sampler")
    p.add_argument(
        "--level",
        type=_args.probability,
        default=0.9,
        help="the level of summary.csv's equal-tailed intervals (default 0.9)",
    )
    p.add_argument(
        "--out", type=_args.output_dir, default="pgm_dp_results", help="folder for the outputs"
    )
    p.set_defaults(func=_run)
