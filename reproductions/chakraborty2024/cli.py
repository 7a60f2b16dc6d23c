"""``python -m reproductions chakraborty2024``: PrIsing's experiments (Chakraborty, Chatterjee
& Dalal, AISTATS 2024) and the coverage of the posterior of β.

``fig1 | mse-n | mse-density | real``: the paper's figures (:mod:`.prising`); ``coverage``:
the posterior's credible intervals on simulated releases (:mod:`.prising_posterior`).
Arguments only (checked while parsing); the experiments are imported to run.
"""

from __future__ import annotations

import argparse

from pgm_dp.cli._args import int_at_least, output_dir, output_file, positive_float
from pgm_dp.cli.prising import delta_value

__all__ = ["add_parser", "EXPERIMENTS"]

#: experiment -> help (the runs: :data:`.prising.EXPERIMENTS`, tested equal).
EXPERIMENTS = {
    "fig1": "Fig. 1: estimates vs beta on an Erdos-Renyi graph",
    "mse-n": "Fig. 2-3: MSE vs n",
    "mse-density": "Fig. 4-5: MSE vs edge density alpha",
    "real": "Sec. 4.2: polblogs and karate club",
}


def _coverage(a: argparse.Namespace) -> dict:
    from .prising_posterior import prising_coverage

    res = prising_coverage(
        a.n, a.p, a.epsilon, a.delta, a.releases, sweeps=a.sweeps, seed=a.seed,
        progress=a.progress,
    )  # fmt: skip
    print(
        ", ".join(
            f"{k}: {v:.3f}" if k != "releases" else f"{k}: {v}" for k, v in res.summary.items()
        )
    )
    if a.out:
        res.runs.to_csv(a.out, index=False)
        print(f"written: {a.out}")
    return res.summary


def _experiment(a: argparse.Namespace):
    from .prising import run_experiment

    return run_experiment(a.experiment, a)


def _add_coverage(sub) -> None:
    c = sub.add_parser("coverage", help="coverage of the posterior of beta (simulated)")
    c.add_argument("--n", type=int_at_least(2), default=100, help="nodes (Erdos-Renyi)")
    c.add_argument("--p", type=positive_float, default=0.1, help="edge probability")
    c.add_argument("--epsilon", type=positive_float, default=20.0, help="privacy epsilon")
    c.add_argument("--delta", type=delta_value, default=1e-3, help="delta (0: pure DP)")
    c.add_argument("--releases", type=int_at_least(1), default=200, help="simulated releases")
    c.add_argument("--sweeps", type=int_at_least(2), default=100, help="Gibbs sweeps")
    c.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
    c.add_argument("--progress", action="store_true", help="show a progress bar")
    c.add_argument("--out", type=output_file, default=None, help="CSV of the releases")
    c.set_defaults(func=_coverage)


def add_parser(subparsers) -> None:
    """``{fig1, mse-n, mse-density, real, coverage}`` (the paper's sub-parsers)."""
    for name, doc in EXPERIMENTS.items():
        q = subparsers.add_parser(name, help=doc)
        q.add_argument(
            "--reps", type=int_at_least(1), default=None, help="replicates (unset: paper's 500)"
        )
        q.add_argument(
            "--sweeps", type=int_at_least(1), default=None, help="Gibbs sweeps (unset: 100)"
        )
        q.add_argument("--seed", type=int_at_least(0), default=0, help="seed of every draw")
        q.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
        q.add_argument("--progress", action="store_true", help="show progress bars")
        q.add_argument("--out", type=output_dir, default=".", help="folder for csv and png")
        q.set_defaults(func=_experiment)
    _add_coverage(subparsers)
