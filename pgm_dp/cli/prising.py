"""``pgm-dp prising``: PrIsing (Chakraborty, Chatterjee & Dalal, AISTATS 2024).

``prising estimate``: the private estimate of the inverse temperature β of one observed
network (graph: edge-list CSV or GML; outcomes: CSV ``node,outcome`` of ±1 or 0/1), printed
and written as JSON: the estimate snapped to the public grid ``--resolution`` (the release of
:func:`pgm_dp.ising.prising`; the full-precision root is never written). ``prising posterior``:
the posterior of β given a release written by ``prising estimate``. Arguments only (checked
while parsing); the heavy modules are imported to run. The paper's experiments (Fig. 1-5, real
networks, the posterior's coverage) are reproductions: ``python -m reproductions
chakraborty2024 ...`` in the repository.
"""

from __future__ import annotations

import argparse
import json
import math

from . import HelpFormatter
from ._args import existing_file, int_at_least, output_file, positive_float

__all__ = ["add_parser", "delta_value", "SCALINGS"]

SCALINGS = ("symmetric", "regular", "none")
_HELP = HelpFormatter


def delta_value(text: str) -> float:
    """A number in ``[0, 1)`` (0: pure DP, the Laplace mechanism)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def _estimate(a: argparse.Namespace) -> dict:
    from ..ising import prising, scale_regular, scale_symmetric
    from ..ising.files import read_network_outcomes

    A, sigma, nodes = read_network_outcomes(a.graph, a.outcomes)
    J = {"symmetric": scale_symmetric, "regular": scale_regular, "none": lambda m: m}[a.scaling]
    res = prising(
        sigma, J(A), epsilon=a.epsilon, delta=a.delta, rng=a.seed, resolution=a.resolution
    )
    doc = {  # the release is the grid-snapped estimate; no full-precision root, no noise
        "beta_private": res.estimate,
        "boundary": res.boundary,
        "resolution": res.resolution,
        "epsilon": a.epsilon,
        "delta": a.delta,
        "mechanism": res.mechanism,
        "noise_scale": res.noise_scale,
        "Delta": res.Delta,
        "zeta": res.zeta,
        "nodes": len(nodes),
        "edges": int(A.nnz // 2),
        "scaling": a.scaling,
    }
    print(
        f"PrIsing estimate of beta: {res.estimate:.6g} (grid {res.resolution:g}, "
        f"{res.mechanism}, eps={a.epsilon:g})"
    )
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(doc, fh, indent=2)
        print(f"written: {a.out}")
    return doc


def _posterior(a: argparse.Namespace) -> dict:
    import numpy as np

    from ..bayes import prising_posterior, score_reference
    from ..ising import PrIsingResult, prising_calibration, scale_regular, scale_symmetric
    from ..ising.files import read_graph

    with open(a.estimate) as fh:
        doc = json.load(fh)
    A, _ = read_graph(a.graph)
    J = {"symmetric": scale_symmetric, "regular": scale_regular, "none": lambda m: m}[a.scaling]
    J = J(A)
    res = doc.get("resolution", 1e-3)  # files written before the grid release: the default
    cal = prising_calibration(J, doc["epsilon"], doc["delta"], Delta=doc["Delta"], resolution=res)
    release = PrIsingResult(float(doc["beta_private"]), bool(doc["boundary"]), cal)
    betas = np.linspace(0.0, a.beta_max, a.grid)
    ref = score_reference(J, betas=betas, draws=a.draws, sweeps=a.sweeps, rng=a.seed)
    idata = prising_posterior(release, ref, rng=a.seed)
    d = np.asarray(idata.posterior.beta).ravel()
    lo, hi = np.quantile(d, [0.05, 0.95])
    print(f"posterior of beta: mean {d.mean():.4g}, sd {d.std():.4g}, 90% [{lo:.4g}, {hi:.4g}]")
    if a.out:
        idata.to_netcdf(a.out, engine="h5netcdf")
        print(f"written: {a.out}")
    return {"mean": float(d.mean()), "sd": float(d.std()), "lo90": lo, "hi90": hi}


def _add_posterior(sub) -> None:
    q = sub.add_parser(
        "posterior", help="posterior of beta given a `prising estimate` JSON", formatter_class=_HELP
    )
    q.add_argument("--graph", type=existing_file, required=True, help="edge-list CSV or .gml")
    q.add_argument("--estimate", type=existing_file, required=True, help="its JSON output")
    q.add_argument("--scaling", choices=SCALINGS, default="symmetric", help="as for estimate")
    q.add_argument("--beta-max", type=positive_float, default=2.0, help="prior: U(0, beta-max)")
    q.add_argument("--grid", type=int_at_least(2), default=41, help="reference grid points")
    q.add_argument("--draws", type=int_at_least(2), default=200, help="Gibbs chains per point")
    q.add_argument("--sweeps", type=int_at_least(2), default=200, help="sweeps per chain")
    q.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the simulations")
    q.add_argument("--out", type=output_file, default=None, help="netCDF file (ArviZ)")
    q.set_defaults(func=_posterior)


def _add_estimate(sub) -> None:
    q = sub.add_parser(
        "estimate", help="private estimate of beta from a graph and outcomes", formatter_class=_HELP
    )
    q.add_argument("--graph", type=existing_file, required=True, help="edge-list CSV or .gml")
    q.add_argument(
        "--outcomes", type=existing_file, required=True, help="CSV node,outcome (±1 or 0/1)"
    )
    q.add_argument("--epsilon", type=positive_float, required=True, help="privacy epsilon")
    q.add_argument("--delta", type=delta_value, default=1e-6, help="delta (0: pure DP)")
    q.add_argument(
        "--scaling",
        choices=SCALINGS,
        default="symmetric",
        help="J from A: D^-1/2 A D^-1/2 (Eq. 7), A/D (regular graphs) or A itself",
    )
    q.add_argument(
        "--resolution",
        type=positive_float,
        default=1e-3,
        help="spacing of the public grid the estimate is released on",
    )
    q.add_argument("--seed", type=int_at_least(0), default=None, help="noise seed (unset: OS)")
    q.add_argument("--out", type=output_file, default=None, help="JSON file for the estimate")
    q.set_defaults(func=_estimate)


def add_parser(subparsers) -> None:
    """Register ``prising {estimate, posterior}``."""
    p = subparsers.add_parser("prising", help="PrIsing (AISTATS 2024): private beta of a network")
    sub = p.add_subparsers(dest="prising_command", required=True, parser_class=type(p))
    _add_estimate(sub)
    _add_posterior(sub)
